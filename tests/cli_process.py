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
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

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


class Announced:
    """A server process started with `--port 0`: the port is the one it bound itself, read from
    the line uvicorn writes once it listens ("Uvicorn running on http://HOST:PORT"), so no other
    process can take it between a probe and the bind.  Every line of its stderr is kept
    (`lines`) by a reader thread, to the end."""

    def __init__(self, proc: subprocess.Popen[str], *, timeout: float = 30) -> None:
        assert proc.stderr is not None
        self.proc = proc
        self.lines: list[str] = []
        self._url: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(proc.stderr,), daemon=True)
        self._reader.start()
        try:
            url = self._url.get(timeout=timeout)
        except queue.Empty:
            url = None
        if url is None:
            raise AssertionError("the server never said where it listens:\n" + self.stderr)
        self.url = url

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.append(line)
            if found := re.search(r"Uvicorn running on (http://\S+)", line):
                self._url.put(found[1])
        self._url.put(None)  # the process ended (or closed stderr) without saying

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def stop(self, timeout: float = 15) -> str:
        """Terminate the process; its whole stderr."""
        self.proc.terminate()
        self.proc.wait(timeout=timeout)
        self._reader.join(timeout=timeout)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        return self.stderr
