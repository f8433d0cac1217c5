"""The benchmark's side of the peers: which virtualenvs exist, and a long-lived runner process
per peer that answers one question at a time, so peers interleave with planweave per question.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from ..native import Outcome

ROOT = Path(__file__).resolve().parents[2]
VENVS = ROOT / "benchmarks" / ".peers"


@dataclass(frozen=True)
class Peer:
    contestant: str
    venv: str
    package: str

    def python(self, venvs: Path = VENVS) -> Path:
        return venvs / self.venv / "bin" / "python"


PEERS = (
    Peer("llamaindex-port", "llamaindex", "llama-index-packs-agents-llm-compiler 0.3.1"),
    Peer("llmcompiler-port", "llmcompiler", "llmcompiler 2.0.1"),
    Peer("llmcompiler-original", "original", "SqueezeAILab/LLMCompiler a00c9d3"),
)


def available(venvs: Path = VENVS) -> tuple[list[Peer], list[str]]:
    """The peers whose virtualenv exists, and a line for each one skipped."""
    present = [p for p in PEERS if p.python(venvs).exists()]
    skipped = [
        f"skipping {p.contestant} ({p.package}): no {p.python(venvs)}; "
        f"build it with benchmarks/peers/setup.sh {p.venv}"
        for p in PEERS
        if p not in present
    ]
    return present, skipped


class PeerRunner:
    """`benchmarks/peers/<venv>_runner.py` running in the peer's virtualenv.  Its stderr (the
    framework's own printing) goes to `benchmarks/.peers/<venv>.log`.  A question that gets
    no answer within `timeout` seconds ends the process; the next question starts a new one."""

    def __init__(self, peer: Peer, base_url: str, profile: str, *, timeout: float = 120.0) -> None:
        self.peer = peer
        self.command = [
            str(peer.python()),
            "-m",
            f"benchmarks.peers.{peer.venv}_runner",
            "--base-url",
            base_url,
            "--profile",
            profile,
        ]
        self.timeout = timeout
        self.log_path = VENVS / f"{peer.venv}.log"
        self._log: IO[str] | None = None
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> PeerRunner:
        try:
            self._start()
        except BaseException:
            self.close()  # its log too: __exit__ is not called when __enter__ raises
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _start(self) -> subprocess.Popen[str]:
        self._log = self._log or self.log_path.open("w")
        env = os.environ | {"OPENAI_API_KEY": "oracle", "PYTHONUNBUFFERED": "1"}
        process = subprocess.Popen(
            self.command,
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
        )
        if self._read(process, 120.0) is None:  # "ready", after the framework's imports
            raise RuntimeError(f"{self.peer.contestant} did not start; see {self.log_path}")
        self._process = process
        return process

    def _read(self, process: subprocess.Popen[str], timeout: float) -> dict[str, Any] | None:
        """The runner's next line, or None (and the runner ended) if none came in time."""
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], timeout)
        line = process.stdout.readline() if ready else ""
        if line:
            reply: dict[str, Any] = json.loads(line)
            return reply
        self._end(process, grace=0.0)
        return None

    def ask(self, question: str) -> Outcome:
        """The runner's answer; a runner that crashed or hung is a failed answer that took as
        long as the benchmark waited."""
        process = self._process or self._start()
        assert process.stdin is not None
        began = time.monotonic()
        try:
            process.stdin.write(json.dumps({"question": question}) + "\n")
            process.stdin.flush()
        except BrokenPipeError:  # it ended after its last answer: a new one takes the next
            self._end(process, grace=0.0)
            return Outcome(None, 0.0, 0, 0)
        reply = self._read(process, self.timeout)
        if reply is None:
            return Outcome(None, time.monotonic() - began, 0, 0)
        answer = None if reply["error"] else reply["answer"]
        return Outcome(
            answer,
            float(reply["wall_s"]),
            int(reply["calls"]),
            int(reply["tokens"]),
            reply.get("began"),
        )

    def _end(self, process: subprocess.Popen[str], *, grace: float) -> None:
        """Let the runner finish (closing its stdin ends its loop) for `grace` seconds, then
        kill it; close the pipes either way."""
        assert process.stdin is not None
        assert process.stdout is not None
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
        if process is self._process:
            self._process = None

    def close(self) -> None:
        if self._process is not None:
            self._end(self._process, grace=10.0)
        if self._log is not None:
            self._log.close()
            self._log = None
