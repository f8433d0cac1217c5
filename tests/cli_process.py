"""The `planweave` command in a real subprocess, as the CLI tests run it: the tests' folder on
PYTHONPATH (their tools), none of the caller's PLANWEAVE_* settings, then `env` on top; with
`fault` ("KIND:N"), the process is killed right after the N-th event of KIND is recorded
(`fault.py`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
