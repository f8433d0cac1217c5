"""Whose a run is: the process that runs it (its id and host), kept on the run's row, and
whether that process is still alive."""

from __future__ import annotations

import os
import socket

__all__ = ["alive", "here"]


def here() -> tuple[int, str]:
    """This process, as a run's row names it: (pid, host)."""
    return os.getpid(), socket.gethostname()


def alive(pid: int | None, host: str | None) -> bool:
    """Whether the process `pid` on `host` still runs (one on another machine is assumed to)."""
    if pid is None or host != socket.gethostname():
        return pid is not None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
