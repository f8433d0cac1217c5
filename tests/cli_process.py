"""The `planweave` command as the CLI tests run it: the tests' folder on PYTHONPATH (their
tools), none of the caller's PLANWEAVE_* settings, then `env` on top.

`run_cli` starts a real subprocess, for what only a process shows (signals, kills, stdio MCP,
worker processes); with `fault` ("KIND:N"), the process is killed right after the N-th event
of KIND is recorded (`fault.py`).  `invoke_cli` runs the same typer app in this process, for
what is the CLI's logic (options, output, exit status): no 2-3 s interpreter start-up.  Both
answer a `CompletedProcess`.  The user data directory (the default journal, the seal key) is
the test's own (`conftest.py` points XDG_DATA_HOME at a temporary folder)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

TESTS = Path(__file__).parent


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60, fault: str | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PLANWEAVE_")}
    environ["PYTHONPATH"] = os.pathsep.join([str(TESTS), environ.get("PYTHONPATH", "")])
    environ.update(env or {})
    main = ["fault", fault] if fault else ["planweave"]
    return subprocess.run(
        [sys.executable, "-m", *main, *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=timeout,
    )


def invoke_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`planweave ARGS...` in this process (typer's runner: stdin empty and not a terminal,
    stdout and stderr captured apart); an exception the CLI does not handle propagates."""
    from planweave.cli import app

    environ: dict[str, str | None] = {k: None for k in os.environ if k.startswith("PLANWEAVE_")}
    environ.update(env or {})
    result = CliRunner().invoke(app, list(args), env=environ, catch_exceptions=False)
    return subprocess.CompletedProcess(
        ["planweave", *args], result.exit_code, result.stdout, result.stderr
    )
