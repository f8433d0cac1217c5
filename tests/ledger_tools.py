"""Tools that write every call to a ledger file (env PLANWEAVE_TEST_LEDGER), so tests can count
how often each one really ran, across processes.  `send` has side effects."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from planweave import ToolRegistry, tool

VALUES = {"a": 2, "b": 3}


def _ledger(line: str) -> None:
    with Path(os.environ["PLANWEAVE_TEST_LEDGER"]).open("a") as f:
        f.write(line + "\n")


@tool
async def lookup(key: str) -> int:
    """Look up the number stored under a key.

    Args:
        key: a or b.
    """
    _ledger(f"lookup {key}")
    await anyio.sleep(float(os.environ.get("PLANWEAVE_TEST_DELAY", "0.3")))
    return VALUES[key]


@tool
def add(x: int, y: int) -> int:
    """Add two numbers."""
    _ledger(f"add {x} {y}")
    return x + y


@tool(side_effects=True)
def send(message: str) -> str:
    """Send a message (a side effect: it must never be sent twice)."""
    _ledger(f"send {message}")
    return "sent"


TOOLS = ToolRegistry([lookup, add, send])

PLAN = (
    '1. lookup("a")\n2. lookup("b")\n3. add($1, $2)\n4. send("total ${3}")\n5. join()\n'
    "<END_OF_PLAN>"
)
FINISH = "Thought: sent.\nAction: Finish(The total is 5, and it was sent.)"


def ledger() -> list[str]:
    path = Path(os.environ["PLANWEAVE_TEST_LEDGER"])
    return path.read_text().splitlines() if path.exists() else []
