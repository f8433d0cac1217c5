"""Killing a run's process at an exact point, for the crash tests: a test-only hook on the
journal's write path (`store.journal.record_hooks`, empty in production).

`install("KIND:N")` kills this process with SIGKILL right after the N-th event of KIND (e.g.
`task_started:2`) has been committed.  A test's child process installs it itself, or runs the
CLI under it: `python -m fault KIND:N ARGS...` is `planweave ARGS...` with the hook installed
(`cli_process.run_cli(..., fault=...)`).
"""

from __future__ import annotations

import os
import signal
import sys

from planweave.events import Event
from planweave.store.journal import record_hooks


def install(spec: str) -> None:
    kind, _, count = spec.partition(":")
    left = int(count or 1)

    def kill(run_id: str, event: Event) -> None:
        nonlocal left
        if event.kind == kind:
            left -= 1
            if left == 0:
                os.kill(os.getpid(), signal.SIGKILL)

    record_hooks.append(kill)


def main() -> None:
    spec, *args = sys.argv[1:]
    install(spec)
    sys.argv = ["planweave", *args]
    from planweave.cli import main as planweave

    planweave()


# Guarded: isolated tools' worker processes load the parent's main module again.
if __name__ == "__main__":
    main()
