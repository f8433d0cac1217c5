"""The durable journal: every run, plan line, task, LLM call and event, in one SQLite file (the
default) or one PostgreSQL database (`postgresql://...`): the backends are `sqlite` and
`postgres`, the same tables and the same SQL above them.

Writes happen synchronously on the event stream (see `RunRecorder`), one transaction per event,
so a task's start is committed before its tool is called and its result before any dependent
starts.  Starts of tasks whose tool has side effects are also fsynced (a durable commit);
everything else relies on the database's write-ahead log, which survives a killed process.

Every row a resume reads is sealed as it is written (`seal`: an HMAC under this user's key,
which the file does not hold), and `verify` checks the seals before a resume replays anything.

This module keeps the runs' life cycle over a backend (`base.Backend`); `projection` writes an
event onto the run's rows, `views` reads them back.  `Journal`'s public methods, with
`base.Storage`'s, are the whole of what planweave asks of a journal.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ..errors import JournalError, JournalUnverified, PlanRejected, ResumeError
from ..events import Event, PlanRejectedEvent, RunFinished
from ..records import RecordedItem, RecordedTask, Replay
from . import postgres, views
from .base import Backend, Dialect
from .codec import dumps, loads
from .dbapi import Connection, Row
from .owner import REVOKED, LeaseLost, here, holder, holds, lease_s
from .projection import append
from .seal import KEY_ENV, SEALED, Sealer, run_column, seal_rows, seal_run, unsealed
from .sqlite import SQLite

__all__ = ["Journal", "RecordHook", "default_path", "record_hooks"]

RecordHook = Callable[[str, Event], None]
# Each is called with (run id, event) once `Journal.record` has committed the event.  Empty in
# production: it is a test's injection point (tests/fault.py kills the process there).
record_hooks: list[RecordHook] = []

# A step that may have taken effect when its run stopped: running, or cancelled once started.
_IN_FLIGHT = "(status = 'running' OR (status = 'cancelled' AND started IS NOT NULL))"


def default_path() -> Path | str:
    """PLANWEAVE_DB (a file, or a `postgresql://` URL), or runs.db in the user data directory."""
    env = os.environ.get("PLANWEAVE_DB")
    if env:
        return env if postgres.is_url(env) else Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("planweave") / "runs.db"


class Journal:
    """One journal: a file, or a PostgreSQL database.  Safe to share between runs, threads and
    processes.

    Its public methods are all planweave asks of a journal, the same on either database (the
    backend, `base.Backend`, is its only part that differs; `dialect` spells the SQL that
    does):

    - storage (`base.Storage`): `read`, `transaction`, `sealer`, for a table kept beside the
      runs (the plan cache's);
    - a run's life cycle: `create_run`, `claim`, `pause`, `reject`, `request_cancel`,
      `cancel_requested`, `mark_failed`, and `record` (one event, `projection`);
    - seals: `seal`, `verify`;
    - reading back (`views`): `find`, `state`; for a resume `recorded_tasks`, `recorded_items`,
      `recorded_calls`, `cache_decision`, `approvals`, `awaiting`, `elapsed`; for the CLI and
      the HTTP API `runs`, `show`, `items`, `events`, `last_seq`.
    """

    def __init__(self, path: str | Path | None = None, *, read_only: bool = False) -> None:
        """Open (creating it if needed) the journal at `path`: a file, or a database's URL
        (`postgresql://...`); `read_only` opens an existing one for reading only, and every
        write then raises JournalError."""
        target = path if path is not None else default_path()
        backend: Backend
        # The file, or the URL with its credentials masked: what messages name.
        self.path: Path | str
        if postgres.is_url(target):
            backend = postgres.Postgres(str(target), read_only=read_only)
            self.path = backend.location
        else:
            self.path = Path(target).expanduser()
            backend = SQLite(self.path, read_only=read_only)
        self.read_only = read_only
        self.dialect: Dialect = backend.dialect
        self._backend = backend
        # Leases are timed by the database server's clock where there is one (replicas on
        # several machines then agree on it), else by this machine's.
        self._server_clock = isinstance(backend, postgres.Postgres)
        self._sealer: Sealer | None = None  # the key is read when first needed

    @classmethod
    def for_reading(cls, path: str | Path | None = None) -> Journal:
        """The journal at `path` to read history from: opened for writing where it can be
        (creating it, migrating it), else read-only, so history stays readable from a
        read-only folder or someone else's file."""
        try:
            return cls(path)
        except JournalError as exc:
            try:
                return cls(path, read_only=True)
            except JournalError:
                raise exc from None

    def close(self) -> None:
        self._backend.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ storage (`base.Storage`)

    def transaction(
        self, *, durable: bool = False, run_id: str | None = None
    ) -> AbstractContextManager[Connection]:
        """One write transaction (`base.Storage.transaction`)."""
        return self._backend.transaction(durable=durable, run_id=run_id)

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
        """The rows `sql` selects."""
        return self._backend.read(sql, params)

    def sealer(self) -> Sealer:
        """This user's sealer, its key read (or made) when first needed."""
        if self._sealer is None:
            self._sealer = Sealer.load()
        return self._sealer

    # ------------------------------------------------------------------ seals

    def seal(self, run_id: str) -> None:
        """Seal every record of run `run_id` as it is now, with this user's key: a person
        vouches for the file (`runs resume --trust-journal`), and `verify` then passes."""
        run_id = self.find(run_id)
        with self.transaction(run_id=run_id) as conn:
            seal_run(conn, self.sealer(), run_id)

    def verify(self, run_id: str) -> None:
        """Check the seal of every record of run `run_id` (`seal`): JournalUnverified names
        those edited since they were written, or never sealed (written before journals were
        sealed, or by another user's key)."""
        run_id = self.find(run_id)
        sealer = self.sealer()
        records = [
            (table, dict(row))
            for table in SEALED
            for row in self.read(f"SELECT * FROM {table} WHERE {run_column(table)} = ?", (run_id,))
        ]
        bad = unsealed(sealer, run_id, records)
        if not bad:
            return
        shown = ", ".join(bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
        raise JournalUnverified(
            f"run {run_id} cannot be resumed: records of it are not sealed by this user's "
            f"journal key (its file: {KEY_ENV}), so nothing of it is replayed: {shown}. The "
            "journal was edited since they were written, or they were written before planweave "
            "sealed its journals, or with another key. Only if you trust this file: resume with "
            "--trust-journal (Journal.seal), which seals them with your key",
            records=bad,
            run_id=run_id,
        )

    # ------------------------------------------------------------------ runs

    def clock(self) -> float:
        """The time leases are measured by, seconds since the epoch: the database server's
        (PostgreSQL), or this machine's (SQLite, one machine)."""
        if not self._server_clock:
            return time.time()
        return float(self.read("SELECT EXTRACT(EPOCH FROM clock_timestamp())")[0][0])

    def create_run(self, run_id: str, question: str, mode: str, settings: dict[str, Any]) -> float:
        """Record a new run as running in this process, which holds its lease (`owner`);
        returns its creation time."""
        now, until = time.time(), self.clock() + lease_s()  # the clock: before the lock
        with self.transaction(run_id=run_id) as conn:
            conn.execute(
                "INSERT INTO runs (id, question, mode, status, created, updated, settings, pid, "
                "host, holder, lease_until) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    question,
                    mode,
                    now,
                    now,
                    dumps(settings),
                    *here(),
                    holder(),
                    until,
                ),
            )
            seal_rows(conn, self.sealer(), "runs", "id = ?", (run_id,))
        return now

    def find(self, run_id: str) -> str:
        """The full id of the run `run_id` names (a unique prefix is enough)."""
        return views.find(self, run_id)

    def claim(self, run_id: str, *, approving: bool = False) -> dict[str, Any]:
        """Take over run `run_id` for resuming in this process, which then holds its lease;
        returns its run row.  A run awaiting approval is taken only `approving` it, and only
        such a run is; a running one only once its holder is gone (`owner.holds`)."""
        run_id = self.find(run_id)
        clock = self.clock()  # before the transaction: reading it takes the connection
        with self.transaction(run_id=run_id) as conn:
            row = dict(conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone())
            awaiting = row["status"] == "awaiting_approval"
            if approving and not awaiting:
                raise ResumeError(f"run {run_id} is not awaiting approval (it is {row['status']})")
            if awaiting and not approving:
                raise ResumeError(f"run {run_id} is awaiting approval: approve or reject it")
            if row["status"] == "finished":
                raise ResumeError(f"run {run_id} already finished; nothing to resume")
            if row["status"] == "running" and holds(row, clock):
                raise ResumeError(
                    f"run {run_id} is still running (process {row['pid']} on {row['host']})"
                )
            conn.execute(
                "UPDATE runs SET status = 'running', pid = ?, host = ?, sessions = sessions + 1,"
                " cancel_requested = 0, updated = ?, holder = ?, lease_until = ? WHERE id = ?",
                (*here(), time.time(), holder(), clock + lease_s(), run_id),
            )
        return row

    def renew(self, run_id: str) -> bool:
        """Extend this process's lease on run `run_id` by `lease_s()`; False when another
        process holds it now (it took the run over: this one must stop)."""
        until = self.clock() + lease_s()
        with self.transaction(run_id=run_id) as conn:
            found = conn.execute("SELECT holder FROM runs WHERE id = ?", (run_id,)).fetchone()
            if found is None or found[0] not in (None, holder()):
                return False
            conn.execute("UPDATE runs SET lease_until = ? WHERE id = ?", (until, run_id))
        return True

    def orphans(self, limit: int = 100) -> list[str]:
        """Runs recorded as running whose holder is gone (`owner.holds`), the longest
        untouched first: those another process may take over (`claim`).  One whose stop was
        asked for is not one of them: it is recorded cancelled here, as its holder would have."""
        now = self.clock()
        rows = self.read(
            "SELECT id, pid, host, holder, lease_until, cancel_requested FROM runs "
            "WHERE status = 'running' AND (host = ? OR lease_until < ?) ORDER BY updated LIMIT ?",
            (here()[1], now, 10 * limit),
        )
        gone = [r for r in rows if not holds(dict(r), now)]
        for row in gone:
            if row["cancel_requested"]:
                self._cancel_orphan(str(row["id"]))
        return [str(r["id"]) for r in gone if not r["cancel_requested"]][:limit]

    def _cancel_orphan(self, run_id: str) -> None:
        with self.transaction(run_id=run_id) as conn:
            conn.execute(
                "UPDATE runs SET status = 'cancelled', updated = ? WHERE id = ? "
                "AND status = 'running'",
                (time.time(), run_id),
            )

    def running_count(self) -> int:
        """How many runs are running now: recorded as running by a process that still holds
        them."""
        now = self.clock()
        rows = self.read("SELECT pid, host, holder, lease_until FROM runs WHERE status = 'running'")
        return sum(holds(dict(r), now) for r in rows)

    def pause(self, run_id: str, status: str = "paused") -> None:
        """Leave run `run_id`, which this process holds, waiting (`status`) for a person."""
        with self.transaction(run_id=run_id) as conn:
            conn.execute(
                "UPDATE runs SET status = ?, updated = ? WHERE id = ? "
                "AND (holder IS NULL OR holder = ?)",
                (status, time.time(), run_id, holder()),
            )

    def reject(self, run_id: str, reason: str) -> dict[str, Any]:
        """End run `run_id`, which awaits approval, as failed (`PlanRejected`): its waiting
        tasks never run.  Returns the error."""
        run_id = self.find(run_id)
        error = PlanRejected(f"the plan was rejected: {reason}", run_id=run_id).report()
        with self.transaction(run_id=run_id) as conn:
            status, created, sessions, llm, wall_s = conn.execute(
                "SELECT status, created, sessions, llm, wall_s FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            if status != "awaiting_approval":
                raise ResumeError(f"run {run_id} is not awaiting approval (it is {status})")
            t = round(time.time() - created, 6)
            finished = RunFinished(
                t=t,
                status="failed",
                answer=None,
                error=error,
                wall_s=wall_s or 0.0,
                llm=loads(llm) or {},
            )
            for event in (PlanRejectedEvent(t=t, reason=reason), finished):
                append(conn, self.sealer(), run_id, sessions, event)
            conn.execute(
                "UPDATE tasks SET status = 'cancelled' WHERE run_id = ? AND status = 'pending'",
                (run_id,),
            )
            seal_rows(conn, self.sealer(), "tasks", "run_id = ?", (run_id,))
        return error

    def request_cancel(self, run_id: str) -> str:
        """Ask run `run_id` to stop.  A run no process is running is marked cancelled at once;
        a live one is cancelled by its own process within a second.  Returns its state."""
        run_id = self.find(run_id)
        clock = self.clock()
        with self.transaction(run_id=run_id) as conn:
            row = conn.execute(
                "SELECT status, pid, host, holder, lease_until FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            status = row["status"]
            if status in ("finished", "failed", "cancelled"):
                return str(status)
            if status == "running" and holds(dict(row), clock):
                conn.execute("UPDATE runs SET cancel_requested = 1 WHERE id = ?", (run_id,))
                return "cancelling"
            # Nobody holds it, as far as anyone can tell: cancelled now, and a holder that is
            # only late (stalled past its lease) finds its lease revoked and writes no more.
            conn.execute(
                "UPDATE runs SET status = 'cancelled', updated = ?, cancel_requested = 1, "
                "holder = ? WHERE id = ?",
                (time.time(), REVOKED, run_id),
            )
            return "cancelled"

    def cancel_requested(self, run_id: str) -> bool:
        rows = self.read("SELECT cancel_requested FROM runs WHERE id = ?", (run_id,))
        return bool(rows and rows[0][0])

    def mark_failed(self, run_id: str, task_id: int, error: dict[str, Any]) -> None:
        """Mark task `task_id`, which was in flight, failed with `error`, and so the elements
        of it (a fan-out) that were in flight."""
        with self.transaction(run_id=run_id) as conn:
            conn.execute(
                "UPDATE tasks SET status = 'failed', error = ? WHERE run_id = ? AND id = ?",
                (dumps(error), run_id, task_id),
            )
            seal_rows(conn, self.sealer(), "tasks", "run_id = ? AND id = ?", (run_id, task_id))
            conn.execute(
                "UPDATE task_items SET status = 'failed', error = ? WHERE run_id = ? AND "
                f"task_id = ? AND {_IN_FLIGHT}",
                (dumps(error), run_id, task_id),
            )
            where = "run_id = ? AND task_id = ? AND status = 'failed'"
            seal_rows(conn, self.sealer(), "task_items", where, (run_id, task_id))

    # ------------------------------------------------------------------ the event stream

    def record(self, run_id: str, session: int, event: Event, *, durable: bool = False) -> bool:
        """Apply one event to the run's rows and append it to its event log, atomically
        (`projection`).  Returns whether a stop of the run has been asked for
        (`request_cancel`)."""
        with self.transaction(durable=durable, run_id=run_id) as conn:
            row = conn.execute(
                "SELECT cancel_requested, holder FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            if row is not None and row[1] not in (None, holder()):
                raise LeaseLost(
                    f"run {run_id} was taken over by {row[1]}: this process no longer writes it",
                    path=str(self.path),
                    run_id=run_id,
                )
            append(conn, self.sealer(), run_id, session, event)
            flag = row
        for hook in record_hooks:
            hook(run_id, event)
        return bool(flag and flag[0])

    # ------------------------------------------------------------------ reading (`views`)

    def recorded_tasks(self, run_id: str) -> dict[int, RecordedTask]:
        return views.recorded_tasks(self, run_id)

    def recorded_items(self, run_id: str) -> dict[int, dict[int, RecordedItem]]:
        return views.recorded_items(self, run_id)

    def recorded_calls(self, run_id: str) -> dict[int, Replay]:
        return views.recorded_calls(self, run_id)

    def cache_decision(self, run_id: str) -> dict[str, Any] | None:
        return views.cache_decision(self, run_id)

    def approvals(self, run_id: str) -> list[dict[str, Any]]:
        return views.approvals(self, run_id)

    def awaiting(self, run_id: str) -> dict[str, Any]:
        return views.awaiting(self, run_id)

    def state(self, run_id: str) -> str:
        return views.state(self, run_id)

    def elapsed(self, run_id: str) -> float:
        return views.elapsed(self, run_id)

    def last_seq(self, run_id: str) -> int:
        return views.last_seq(self, run_id)

    def items(self, run_id: str) -> dict[int, list[dict[str, Any]]]:
        return views.items(self, run_id)

    def runs(self, limit: int = 20, *, before: str | None = None) -> list[dict[str, Any]]:
        return views.runs(self, limit, before=before)

    def thread_runs(self, thread: str) -> list[dict[str, Any]]:
        """The runs of conversation `thread`, oldest first (`views.thread_runs`)."""
        return views.thread_runs(self, thread)

    def threads(self, limit: int = 20) -> list[dict[str, Any]]:
        """The conversations, the latest spoken in first (`views.threads`)."""
        return views.threads(self, limit)

    def show(self, run_id: str) -> dict[str, Any]:
        return views.show(self, run_id)

    def events(
        self, run_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[dict[str, Any]]:
        return views.events(self, run_id, after=after, limit=limit)
