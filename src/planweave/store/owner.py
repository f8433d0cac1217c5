"""Whose a run is: the process that runs it, and whether that process still holds it.

A process that starts or resumes a run takes a lease on it: the run's row names the process
(`holder`: its host, its pid, a word drawn when it started, so a pid used again is another
holder, and its pid namespace) and how long the lease lasts (`lease_until`, on the journal's
clock: the database server's for PostgreSQL, so the machines' clocks need not agree).  The
process renews it while the run goes (`RunRecorder`), every third of `lease_s()`.  Another
process may take the run over once its holder is gone:

- on the same host and in the same pid namespace, as soon as the holder's pid is dead;
- otherwise (another machine, another container), once the lease has run out: that holder
  died, lost the database, or stalled for longer than the lease.  A live local pid whose lease
  ran out counts as gone too (it stalled, or the pid is another process's now).

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

__all__ = ["LEASE_ENV", "REVOKED", "LeaseLost", "alive", "here", "holder", "holds", "lease_s"]

LEASE_ENV = "PLANWEAVE_LEASE_S"
# The holder of a run cancelled while its holder seemed gone: no process is it.
REVOKED = "revoked"
DEFAULT_LEASE_S = 30.0
_WORD = uuid.uuid4().hex[:8]  # drawn once per process: with the pid, this process alone
_WORD_PID = os.getpid()


def _namespace() -> str:
    """This process's pid namespace (`pid:[4026531836]` on Linux; "" where unknown): two
    containers on one host name may number their processes alike."""
    try:
        return os.readlink("/proc/self/ns/pid").removeprefix("pid:").strip("[]")
    except OSError:
        return ""


_NAMESPACE = _namespace()


class LeaseLost(JournalError):
    """Another process took over the run this one was writing: this one must stop."""


def here() -> tuple[int, str]:
    """This process, as a run's row names it: (pid, host)."""
    return os.getpid(), socket.gethostname()


def holder() -> str:
    """This process as a lease names it: `host:pid:word:namespace` (a child made by fork draws
    anew)."""
    global _WORD, _WORD_PID
    if os.getpid() != _WORD_PID:
        _WORD, _WORD_PID = uuid.uuid4().hex[:8], os.getpid()
    pid, host = here()
    return f"{host}:{pid}:{_WORD}:{_NAMESPACE}"


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
        raise UserError(
            f"{LEASE_ENV} must be a number of seconds from 0.1 to 3600, not {text[:40]!r}"
        )
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


def _local(row: Mapping[str, Any]) -> bool:
    """Whether the row's holder ran on this host, in this pid namespace (a holder from before
    namespaces were named counts as local)."""
    if row.get("host") != socket.gethostname():
        return False
    parts = str(row.get("holder") or "").split(":")
    return len(parts) < 4 or parts[-1] == _NAMESPACE


def holds(row: Mapping[str, Any], now: float | None = None) -> bool:
    """Whether the process a run's row names still holds the run (`now`: the journal's clock,
    default this machine's): a local holder's pid must be alive, and any holder's lease (where
    it has one) must not have run out.  A row from before leases: its pid alone, on this host
    (another host's is assumed alive, as it always was)."""
    pid, host, until = row.get("pid"), row.get("host"), row.get("lease_until")
    if pid is None:
        return False
    if until is None:
        return alive(pid, host)
    if _local(row) and not alive(pid, host):
        return False
    return float(until) > (time.time() if now is None else now)
