"""A runbook's tools for the branch tests: each call is written to a ledger file (env
PLANWEAVE_TEST_LEDGER), so a test counts how often each one really ran, across processes.  The
disk's fill comes from PLANWEAVE_TEST_DISK_PCT (default 95); `rotate_logs` takes
PLANWEAVE_TEST_DELAY seconds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio

from planweave import ToolRegistry, tool
from planweave.builtin import DECIDE


def _ledger(line: str) -> None:
    with Path(os.environ["PLANWEAVE_TEST_LEDGER"]).open("a") as f:
        f.write(line + "\n")


def ledger() -> list[str]:
    path = Path(os.environ["PLANWEAVE_TEST_LEDGER"])
    return path.read_text().splitlines() if path.exists() else []


@tool
def disk_usage(host: str) -> dict[str, Any]:
    """How full a host's disk is: host and disk_pct (percent used).

    Args:
        host: the host's name
    """
    _ledger(f"disk_usage {host}")
    return {"host": host, "disk_pct": int(os.environ.get("PLANWEAVE_TEST_DISK_PCT", "95"))}


@tool
async def rotate_logs(host: str) -> str:
    """Rotate a host's logs.

    Args:
        host: the host's name
    """
    _ledger(f"rotate_logs {host}")
    await anyio.sleep(float(os.environ.get("PLANWEAVE_TEST_DELAY", "0")))
    return f"rotated {host}"


@tool
def notify(message: str) -> str:
    """Tell the on-call person.

    Args:
        message: what to say
    """
    _ledger(f"notify {message}")
    return "notified"


@tool
def report(text: str) -> str:
    """Write the run's report.

    Args:
        text: the report
    """
    _ledger(f"report {text}")
    return text


@tool
def restart(host: str) -> str:
    """Restart a host's service.

    Args:
        host: the host's name
    """
    _ledger(f"restart {host}")
    return f"restarted {host}"


TOOLS = ToolRegistry([disk_usage, rotate_logs, notify, report, restart], DECIDE)

DISK_PLAN = """Thought: Rotate the logs only when the disk is over 90 %.
1. disk_usage("db-3")
2. rotate_logs("db-3") if ${1.disk_pct} > 90
3. notify("db-3 disk ok") if ${1.disk_pct} <= 90
4. report("db-3: ${2}") if $2 != None
5. join()
<END_OF_PLAN>"""
FINISH = "Thought: done.\nAction: Finish(The runbook ran.)"
