"""Whose a run is: the process that runs it, and whether that process still holds it.

A process that starts or resumes a run takes a lease on it: the run's row names the process
(`holder`: its host, its pid and a word drawn when it started, so a pid used again is another
holder) and how long the lease lasts (`lease_until`, wall clock).  The process renews it while
the run goes (`RunRecorder`), every third of `lease_s()`.  Another process may take the run over
once its holder is gone:

- on the same host, when the holder's pid is no longer alive (known at once, exactly);
- on another host (a replica on another machine), when the lease has run out: that machine
  died, or lost the database, or stalled for longer than the lease.

A holder that finds its lease taken stops writing (`Journal.record` refuses it: `LeaseLost`), so
two processes never both go on with one run.  Rows from before leases (no `lease_until`) are
judged by the pid alone, as they always were: another host's are assumed alive.
"""

from __future__ import annotations

import math
import os
import socket
import time
import uuid
from collections.abc import Mapping
from typing import Any

from ..errors import JournalError, UserError

__all__ = ["LEASE_ENV", "LeaseLost", "alive", "here", "holder", "holds", "lease_s"]

LEASE_ENV = "PLANWEAVE_LEASE_S"
DEFAULT_LEASE_S = 30.0
_WORD = uuid.uuid4().hex[:8]  # drawn once per process: with the pid, this process alone
_WORD_PID = os.getpid()


class LeaseLost(JournalError):
    """Another process took over the run this one was writing: this one must stop."""


def here() -> tuple[int, str]:
    """This process, as a run's row names it: (pid, host)."""
    return os.getpid(), socket.gethostname()


def holder() -> str:
    """This process as a lease names it: `host:pid:word` (a child made by fork draws anew)."""
    global _WORD, _WORD_PID
    if os.getpid() != _WORD_PID:
        _WORD, _WORD_PID = uuid.uuid4().hex[:8], os.getpid()
    pid, host = here()
    return f"{host}:{pid}:{_WORD}"


def lease_s() -> float:
    """How long a lease lasts, seconds: env PLANWEAVE_LEASE_S, else 30."""
    text = os.environ.get(LEASE_ENV)
    if text is None:
        return DEFAULT_LEASE_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.1 <= value <= 3600:
        raise UserError(f"{LEASE_ENV} must be a number of seconds from 0.1 to 3600, not {text!r}")
    return value


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


def holds(row: Mapping[str, Any], now: float | None = None) -> bool:
    """Whether the process a run's row names still holds the run: on this host, whether its
    pid is alive; on another, whether its lease (if it has one) has not run out."""
    pid, host, until = row.get("pid"), row.get("host"), row.get("lease_until")
    if pid is None:
        return False
    if host == socket.gethostname() or until is None:
        return alive(pid, host)
    return float(until) > (time.time() if now is None else now)
