"""The durable journal: every run, plan line, task, LLM call and event, in one SQLite file.

Writes happen synchronously on the event stream (see `RunRecorder`), one transaction per event,
so a task's start is committed before its tool is called and its result before any dependent
starts.  Starts of tasks whose tool has side effects are also fsynced (`synchronous=FULL` for that
commit); everything else relies on WAL's ordering, which survives a killed process.

Every row a resume reads is sealed as it is written (`seal`: an HMAC under this user's key,
which the file does not hold), and `verify` checks the seals before a resume replays anything.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import fields as _fields
from pathlib import Path
from typing import Any

from ..errors import (
    JournalError,
    JournalUnverified,
    PlanDiverged,
    PlanRejected,
    ResumeError,
    RunNotFound,
)
from ..events import (
    CacheAdapted,
    CacheHit,
    CacheMiss,
    Event,
    LLMCallFinished,
    LLMCallStarted,
    PlanApproved,
    PlanAwaitingApproval,
    PlanRejectedEvent,
    ReplanEvent,
    RunFinished,
    TaskCancelled,
    TaskFailed,
    TaskFinished,
    TaskPlanned,
    TaskRecovery,
    TaskSkipped,
    TaskStarted,
    timings,
)
from ..records import (
    RecordedItem,
    RecordedTask,
    Replay,
    item_call,
    item_dict,
    jsonable,
    run_dict,
    task_dict,
)
from ..redaction import redact_endpoints
from .codec import Unstorable, decode, encode
from .schema import connect
from .seal import KEY_ENV, SEALED, Sealer, fold

__all__ = ["Journal", "RecordHook", "default_path", "record_hooks"]

RecordHook = Callable[[str, Event], None]
# Each is called with (run id, event) once `Journal.record` has committed the event.  Empty in
# production: it is a test's injection point (tests/fault.py kills the process there).
record_hooks: list[RecordHook] = []

# A step that may have taken effect when its run stopped: running, or cancelled once started.
_IN_FLIGHT = "(status = 'running' OR (status = 'cancelled' AND started IS NOT NULL))"
_HEAVY = frozenset({"result", "stored", "arguments", "text", "args"})


def default_path() -> Path:
    """PLANWEAVE_DB, or runs.db in the user data directory."""
    env = os.environ.get("PLANWEAVE_DB")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("planweave") / "runs.db"


def _dumps(value: Any) -> str:
    # ASCII with escapes: valid JSON whatever the text holds (a lone surrogate included).
    return json.dumps(value, default=str)


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _alive(pid: int | None, host: str | None) -> bool:
    if pid is None or host != socket.gethostname():
        return pid is not None  # another machine's run: assume it is alive
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Journal:
    """One journal file.  Safe to share between runs, threads and processes."""

    def __init__(self, path: str | Path | None = None, *, read_only: bool = False) -> None:
        """Open (creating it if needed) the journal at `path`; `read_only` opens an existing
        one for reading only, and every write then raises JournalError."""
        self.path = Path(path).expanduser() if path is not None else default_path()
        self.read_only = read_only
        self._conn = connect(self.path, read_only=read_only)
        self._lock = threading.Lock()
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
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ low level

    @contextlib.contextmanager
    def _sqlite_errors(self, run_id: str | None = None, *, doing: str = "write") -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            code = getattr(exc, "sqlite_errorcode", None)
            if code == sqlite3.SQLITE_FULL:
                why = "the disk (or the journal's size limit) is full"
            elif code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                why = "the database stayed locked by another process for too long"
            elif code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
                why = f"the file is damaged ({exc}); copy what can be read with sqlite3's .recover"
            elif code == sqlite3.SQLITE_READONLY or self.read_only:
                why = f"it is open read-only here ({exc})"
            else:
                why = f"SQLite failed: {exc}"
            raise JournalError(
                f"cannot {doing} the journal {self.path}: {why}",
                path=str(self.path),
                run_id=run_id,
            ) from exc

    @contextlib.contextmanager
    def _write(
        self, *, durable: bool = False, run_id: str | None = None
    ) -> Iterator[sqlite3.Connection]:
        with self._lock, self._sqlite_errors(run_id):
            conn = self._conn
            if durable:
                conn.execute("PRAGMA synchronous=FULL")
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            finally:
                if durable:
                    conn.execute("PRAGMA synchronous=NORMAL")

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock, self._sqlite_errors(doing="read"):
            cursor = self._conn.execute(sql, params)
            cursor.row_factory = sqlite3.Row
            return cursor.fetchall()

    def _sealing(self) -> Sealer:
        if self._sealer is None:
            self._sealer = Sealer.load()
        return self._sealer

    def _seal(
        self, conn: sqlite3.Connection, table: str, where: str, params: tuple[Any, ...]
    ) -> None:
        """Seal the rows of `table` that `where` selects, as they now are, and keep their runs'
        tallies (`seal.fold`) in step: each old seal out, each new one in."""
        sealer = self._sealing()
        cursor = conn.execute(f"SELECT rowid AS rowid_, * FROM {table} WHERE {where}", params)
        names = [d[0] for d in cursor.description]
        changed: dict[str, int] = {}
        for values in cursor.fetchall():
            row = dict(zip(names, values, strict=True))
            rowid = row.pop("rowid_")
            mac = sealer.seal(table, row)
            conn.execute(f"UPDATE {table} SET mac = ? WHERE rowid = ?", (mac, rowid))
            run_id = row["id"] if table == "runs" else row["run_id"]
            changed[run_id] = changed.get(run_id, 0) ^ fold([row.get("mac"), mac])
        for run_id, delta in changed.items():
            self._retally(conn, run_id, delta, new_run=table == "runs")

    def _unseal(
        self, conn: sqlite3.Connection, table: str, where: str, params: tuple[Any, ...]
    ) -> None:
        """Take the seals of the rows `where` selects out of their runs' tallies: call it just
        before those rows are deleted or replaced."""
        changed: dict[str, int] = {}
        for run_id, mac in conn.execute(f"SELECT run_id, mac FROM {table} WHERE {where}", params):
            changed[run_id] = changed.get(run_id, 0) ^ fold([mac])
        for run_id, delta in changed.items():
            self._retally(conn, run_id, delta, new_run=False)

    def _retally(self, conn: sqlite3.Connection, run_id: str, delta: int, *, new_run: bool) -> None:
        """Apply `delta` to the run's tally.  A tally that is missing (a run from before seals;
        only a new run or `seal` starts one) or not this key's is left as it is, so `verify`
        still refuses the run: a write never launders an edited tally."""
        sealer = self._sealing()
        found = conn.execute("SELECT tally FROM runs WHERE id = ?", (run_id,)).fetchone()
        if found is None:
            return
        folded = sealer.read_tally(run_id, found[0])
        if folded is None:
            if found[0] is not None or not new_run:
                return
            folded = 0
        conn.execute(
            "UPDATE runs SET tally = ? WHERE id = ?", (sealer.tally(run_id, folded ^ delta), run_id)
        )

    def seal(self, run_id: str) -> None:
        """Seal every record of run `run_id` as it is now, with this user's key: a person
        vouches for the file (`runs resume --trust-journal`), and `verify` then passes."""
        run_id = self.find(run_id)
        with self._write(run_id=run_id) as conn:
            self._seal(conn, "runs", "id = ?", (run_id,))
            for table in ("tasks", "task_items", "llm_calls", "events"):
                self._seal(conn, table, "run_id = ?", (run_id,))
            conn.execute(
                "UPDATE runs SET tally = ? WHERE id = ?",
                (self._sealing().tally(run_id, self._fold(conn, run_id)), run_id),
            )

    @staticmethod
    def _fold(conn: sqlite3.Connection, run_id: str) -> int:
        """The fold of the seals of every row of the run as the file holds them now."""
        macs: list[object] = []
        for table in SEALED:
            column = "id" if table == "runs" else "run_id"
            macs += [
                r[0] for r in conn.execute(f"SELECT mac FROM {table} WHERE {column} = ?", (run_id,))
            ]
        return fold(macs)

    def verify(self, run_id: str) -> None:
        """Check the seal of every record of run `run_id` (`seal`): JournalUnverified names
        those edited since they were written, or never sealed (written before journals were
        sealed, or by another user's key)."""
        run_id = self.find(run_id)
        sealer = self._sealing()
        bad: list[str] = []
        macs: list[object] = []
        tally: object = None
        for table in SEALED:
            column = "id" if table == "runs" else "run_id"
            for row in self._read(f"SELECT * FROM {table} WHERE {column} = ?", (run_id,)):
                found = dict(row)
                macs.append(found.get("mac"))
                if table == "runs":
                    tally = found.get("tally")
                if not sealer.verify(table, found):
                    bad.append(_record_name(table, found))
        if not bad and sealer.read_tally(run_id, tally) != fold(macs):
            bad.append("the run's set of records (some were removed, or put back as older copies)")
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

    def create_run(self, run_id: str, question: str, mode: str, settings: dict[str, Any]) -> float:
        """Record a new run as running in this process; returns its creation time."""
        now = time.time()
        with self._write(run_id=run_id) as conn:
            conn.execute(
                "INSERT INTO runs (id, question, mode, status, created, updated, settings, pid, "
                "host) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)",
                (
                    run_id,
                    question,
                    mode,
                    now,
                    now,
                    _dumps(settings),
                    os.getpid(),
                    socket.gethostname(),
                ),
            )
            self._seal(conn, "runs", "id = ?", (run_id,))
        return now

    def find(self, run_id: str) -> str:
        """The full id of the run `run_id` names (a unique prefix is enough)."""
        rows = self._read(
            "SELECT id FROM runs WHERE id >= ? AND id < ? LIMIT 2", (run_id, run_id + "\uffff")
        )
        if not rows:
            raise RunNotFound(f"no run {run_id!r} in the journal {self.path}", run_id=run_id)
        if len(rows) > 1:
            raise ResumeError(f"{run_id!r} names more than one run; give more of the id")
        return str(rows[0]["id"])

    def claim(self, run_id: str, *, approving: bool = False) -> dict[str, Any]:
        """Take over run `run_id` for resuming in this process; returns its run row.  A run
        awaiting approval is taken only `approving` it, and only such a run is."""
        run_id = self.find(run_id)
        with self._write(run_id=run_id) as conn:
            cursor = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,))
            cursor.row_factory = sqlite3.Row
            row = dict(cursor.fetchone())
            awaiting = row["status"] == "awaiting_approval"
            if approving and not awaiting:
                raise ResumeError(f"run {run_id} is not awaiting approval (it is {row['status']})")
            if awaiting and not approving:
                raise ResumeError(f"run {run_id} is awaiting approval: approve or reject it")
            if row["status"] == "finished":
                raise ResumeError(f"run {run_id} already finished; nothing to resume")
            if row["status"] == "running" and _alive(row["pid"], row["host"]):
                raise ResumeError(
                    f"run {run_id} is still running (process {row['pid']} on {row['host']})"
                )
            conn.execute(
                "UPDATE runs SET status = 'running', pid = ?, host = ?, sessions = sessions + 1,"
                " cancel_requested = 0, updated = ? WHERE id = ?",
                (os.getpid(), socket.gethostname(), time.time(), run_id),
            )
        return row

    def pause(self, run_id: str, status: str = "paused") -> None:
        with self._write(run_id=run_id) as conn:
            conn.execute(
                "UPDATE runs SET status = ?, updated = ? WHERE id = ?",
                (status, time.time(), run_id),
            )

    def reject(self, run_id: str, reason: str) -> dict[str, Any]:
        """End run `run_id`, which awaits approval, as failed (`PlanRejected`): its waiting
        tasks never run.  Returns the error."""
        run_id = self.find(run_id)
        error = PlanRejected(f"the plan was rejected: {reason}", run_id=run_id).report()
        with self._write(run_id=run_id) as conn:
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
                llm=_loads(llm) or {},
            )
            for event in (PlanRejectedEvent(t=t, reason=reason), finished):
                self._append(conn, run_id, sessions, event)
            conn.execute(
                "UPDATE tasks SET status = 'cancelled' WHERE run_id = ? AND status = 'pending'",
                (run_id,),
            )
            self._seal(conn, "tasks", "run_id = ?", (run_id,))
        return error

    def request_cancel(self, run_id: str) -> str:
        """Ask run `run_id` to stop.  A run no process is running is marked cancelled at once;
        a live one is cancelled by its own process within a second.  Returns its state."""
        run_id = self.find(run_id)
        with self._write(run_id=run_id) as conn:
            cursor = conn.execute("SELECT status, pid, host FROM runs WHERE id = ?", (run_id,))
            status, pid, host = cursor.fetchone()
            if status in ("finished", "failed", "cancelled"):
                return str(status)
            if status == "running" and _alive(pid, host):
                conn.execute("UPDATE runs SET cancel_requested = 1 WHERE id = ?", (run_id,))
                return "cancelling"
            conn.execute(
                "UPDATE runs SET status = 'cancelled', updated = ? WHERE id = ?",
                (time.time(), run_id),
            )
            return "cancelled"

    def cancel_requested(self, run_id: str) -> bool:
        rows = self._read("SELECT cancel_requested FROM runs WHERE id = ?", (run_id,))
        return bool(rows and rows[0][0])

    def mark_failed(self, run_id: str, task_id: int, error: dict[str, Any]) -> None:
        """Mark task `task_id`, which was in flight, failed with `error`, and so the elements
        of it (a fan-out) that were in flight."""
        with self._write(run_id=run_id) as conn:
            conn.execute(
                "UPDATE tasks SET status = 'failed', error = ? WHERE run_id = ? AND id = ?",
                (_dumps(error), run_id, task_id),
            )
            self._seal(conn, "tasks", "run_id = ? AND id = ?", (run_id, task_id))
            conn.execute(
                "UPDATE task_items SET status = 'failed', error = ? WHERE run_id = ? AND "
                f"task_id = ? AND {_IN_FLIGHT}",
                (_dumps(error), run_id, task_id),
            )
            where = "run_id = ? AND task_id = ? AND status = 'failed'"
            self._seal(conn, "task_items", where, (run_id, task_id))

    # ------------------------------------------------------------------ the event stream

    def record(self, run_id: str, session: int, event: Event, *, durable: bool = False) -> bool:
        """Apply one event to the run's state and append it to its event log, atomically.
        Returns whether a stop of the run has been asked for (`request_cancel`)."""
        # Not event.to_dict(): that deep-copies results, which the tasks table already holds.
        with self._write(durable=durable, run_id=run_id) as conn:
            self._append(conn, run_id, session, event)
            row = conn.execute("SELECT cancel_requested FROM runs WHERE id = ?", (run_id,))
            flag = row.fetchone()
        for hook in record_hooks:
            hook(run_id, event)
        return bool(flag and flag[0])

    def _append(self, conn: sqlite3.Connection, run_id: str, session: int, event: Event) -> None:
        data = {f.name: getattr(event, f.name) for f in _fields(event) if f.name not in _HEAVY}
        cursor = conn.execute(
            "INSERT INTO events (run_id, seq, session, t, kind, data) VALUES (?, (SELECT "
            "coalesce(max(seq), 0) + 1 FROM events WHERE run_id = ?), ?, ?, ?, ?)",
            (run_id, run_id, session, event.t, event.kind, _dumps(data)),
        )
        self._seal(conn, "events", "rowid = ?", (cursor.lastrowid,))
        self._apply(conn, run_id, session, event)

    def _apply(self, conn: sqlite3.Connection, run_id: str, session: int, event: Event) -> None:
        """Bring the run's rows up to date with `event`: the values are the event's own."""
        if isinstance(event, LLMCallStarted | LLMCallFinished):
            self._apply_llm(conn, run_id, session, event)
        elif isinstance(event, PlanAwaitingApproval | PlanApproved):
            self._apply_approval(conn, run_id, event)
        elif isinstance(event, ReplanEvent | RunFinished | CacheHit | CacheAdapted | CacheMiss):
            self._apply_run(conn, run_id, event)
        else:
            self._apply_task(conn, run_id, event)

    def _apply_task(self, conn: sqlite3.Connection, run_id: str, event: Event) -> None:
        task_id, item = getattr(event, "task_id", None), getattr(event, "item", None)
        if task_id is None:
            return
        if item is not None:
            _apply_item(conn, run_id, event)
            where = "run_id = ? AND task_id = ? AND item = ?"
            self._seal(conn, "task_items", where, (run_id, task_id, item))
            return
        _apply_task(conn, run_id, event)
        self._seal(conn, "tasks", "run_id = ? AND id = ?", (run_id, task_id))

    def _apply_llm(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        session: int,
        event: LLMCallStarted | LLMCallFinished,
    ) -> None:
        match event:
            case LLMCallStarted(replayed=False):
                where = "run_id = ? AND session = ? AND call = ?"
                self._unseal(conn, "llm_calls", where, (run_id, session, event.call))
                conn.execute(
                    "INSERT OR REPLACE INTO llm_calls (run_id, session, call, purpose, model, "
                    "request_hash, status, started) VALUES (?, ?, ?, ?, ?, ?, 'streaming', ?)",
                    (
                        run_id,
                        session,
                        event.call,
                        event.purpose,
                        event.model,
                        event.request_hash,
                        event.t,
                    ),
                )
            case LLMCallFinished(replayed=False):
                conn.execute(
                    "UPDATE llm_calls SET status = ?, prompt_tokens = ?, completion_tokens = ?, "
                    "duration = ?, text = ?, error = ? WHERE run_id = ? AND session = ? AND "
                    "call = ?",
                    (
                        "failed" if event.error else "done",
                        event.prompt_tokens,
                        event.completion_tokens,
                        event.duration,
                        event.text,
                        None if event.error is None else _dumps(event.error),
                        run_id,
                        session,
                        event.call,
                    ),
                )
            case _:
                return
        where = "run_id = ? AND session = ? AND call = ?"
        self._seal(conn, "llm_calls", where, (run_id, session, event.call))

    def _apply_approval(
        self, conn: sqlite3.Connection, run_id: str, event: PlanAwaitingApproval | PlanApproved
    ) -> None:
        if isinstance(event, PlanAwaitingApproval):
            conn.execute(
                "UPDATE runs SET status = 'awaiting_approval', updated = ?, llm = ?, wall_s = ? "
                "WHERE id = ?",
                (time.time(), _dumps(event.llm), event.wall_s, run_id),
            )
            return
        # A dropped task is no longer part of the plan (its event says it was there).
        for task_id in event.dropped:
            where = "run_id = ? AND id = ? AND started IS NULL"
            self._unseal(conn, "tasks", where, (run_id, task_id))
            conn.execute(f"DELETE FROM tasks WHERE {where}", (run_id, task_id))

    def _apply_run(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        event: ReplanEvent | RunFinished | CacheHit | CacheAdapted | CacheMiss,
    ) -> None:
        match event:
            case CacheHit() | CacheAdapted() | CacheMiss():
                conn.execute(
                    "UPDATE runs SET cache = ? WHERE id = ?", (_dumps(event.summary()), run_id)
                )
            case ReplanEvent():
                conn.execute("UPDATE runs SET replans = replans + 1 WHERE id = ?", (run_id,))
            case RunFinished():
                conn.execute(
                    "UPDATE runs SET status = ?, answer = ?, error = ?, wall_s = ?, updated = ?, "
                    "llm = ?, replans = ?, partial = ? WHERE id = ?",
                    (
                        event.status,
                        event.answer,
                        None if event.error is None else _dumps(event.error),
                        event.wall_s,
                        time.time(),
                        _dumps(event.llm),
                        event.replans,
                        event.partial,
                        run_id,
                    ),
                )
                # Whatever an earlier session left in flight or waiting and this one did not
                # reach (a task marked failed, a replan that dropped it, a shorter list) ended
                # with the run: none of it stays `running` or `pending` under an ended run.
                # `cancelled` with its start kept: a later resume still asks about it.
                for table, left in (("tasks", "'running', 'pending'"), ("task_items", "'running'")):
                    rows = conn.execute(
                        f"SELECT rowid FROM {table} WHERE run_id = ? AND status IN ({left})",
                        (run_id,),
                    ).fetchall()
                    for (rowid,) in rows:
                        conn.execute(
                            f"UPDATE {table} SET status = 'cancelled' WHERE rowid = ?", (rowid,)
                        )
                        self._seal(conn, table, "rowid = ?", (rowid,))

    # ------------------------------------------------------------------ reading

    def recorded_tasks(self, run_id: str) -> dict[int, RecordedTask]:
        rows = self._read("SELECT * FROM tasks WHERE run_id = ? ORDER BY id", (run_id,))
        return {
            r["id"]: RecordedTask(
                id=r["id"],
                tool=r["tool"],
                call=r["call"],
                status=r["status"],
                side_effects=bool(r["side_effects"]),
                started=r["started"],
                ended=r["ended"],
                attempts=r["attempts"],
                result=_loads(r["result"]),
                error=_loads(r["error"]),
            )
            for r in rows
        }

    def recorded_items(self, run_id: str) -> dict[int, dict[int, RecordedItem]]:
        """The fan-out elements that finished, by task id and item; `result` is left to the
        caller to decode from `stored`."""
        rows = self._read(
            "SELECT * FROM task_items WHERE run_id = ? AND status = 'done' ORDER BY task_id, item",
            (run_id,),
        )
        found: dict[int, dict[int, RecordedItem]] = {}
        for r in rows:
            found.setdefault(r["task_id"], {})[r["item"]] = RecordedItem(
                call=r["call"],
                stored=_loads(r["result"]),
                start=r["started"],
                end=r["ended"],
                attempts=r["attempts"],
            )
        return found

    def items(self, run_id: str) -> dict[int, list[dict[str, Any]]]:
        """Each fan-out task's elements as `--json` shows them, by task id."""
        rows = self._read(
            "SELECT * FROM task_items WHERE run_id = ? ORDER BY task_id, item", (run_id,)
        )
        found: dict[int, list[dict[str, Any]]] = {}
        for r in rows:
            found.setdefault(r["task_id"], []).append(
                item_dict(
                    item=r["item"],
                    call=r["call"],
                    status=r["status"],
                    start=r["started"],
                    end=r["ended"],
                    attempts=r["attempts"],
                    result=_shown_result(r["status"], r["result"]),
                    error=_loads(r["error"]),
                    recovery=_loads(r["recovery"]),
                )
            )
        return found

    def recorded_calls(self, run_id: str) -> dict[int, Replay]:
        """Each call number's latest finished response, to replay."""
        rows = self._read(
            "SELECT * FROM llm_calls WHERE run_id = ? AND status = 'done' ORDER BY session",
            (run_id,),
        )
        return {
            r["call"]: Replay(
                purpose=r["purpose"],
                request_hash=r["request_hash"],
                text=r["text"] or "",
                prompt_tokens=r["prompt_tokens"] or 0,
                completion_tokens=r["completion_tokens"] or 0,
                duration=r["duration"] or 0.0,
            )
            for r in rows
        }

    def cache_decision(self, run_id: str) -> dict[str, Any] | None:
        """What the plan cache gave run `run_id` when it began: the `cache_hit` or
        `cache_adapted` event's data, or None."""
        rows = self._read(
            "SELECT kind, data FROM events WHERE run_id = ? AND kind IN ('cache_hit', "
            "'cache_adapted') ORDER BY seq LIMIT 1",
            (run_id,),
        )
        try:
            data = json.loads(rows[0]["data"]) if rows else None
        except ValueError:
            return None
        return {"kind": rows[0]["kind"], **data} if isinstance(data, dict) else None

    def awaiting(self, run_id: str) -> dict[str, Any]:
        """What run `run_id` waits for (its last `plan_awaiting_approval` event's data: the
        mode and the waiting tasks) and every task it planned, with the tasks each uses
        (`planned`); ResumeError unless it awaits approval."""
        run_id = self.find(run_id)
        status = self._read("SELECT status FROM runs WHERE id = ?", (run_id,))[0][0]
        rows = self._read(
            "SELECT data FROM events WHERE run_id = ? AND kind = 'plan_awaiting_approval' "
            "ORDER BY seq DESC LIMIT 1",
            (run_id,),
        )
        if status != "awaiting_approval" or not rows:
            raise ResumeError(f"run {run_id} is not awaiting approval (it is {status})")
        planned = {
            r["id"]: _loads(r["deps"]) or []
            for r in self._read("SELECT id, deps FROM tasks WHERE run_id = ?", (run_id,))
        }
        return {"id": run_id, **json.loads(rows[0]["data"]), "planned": planned}

    def approvals(self, run_id: str) -> list[dict[str, Any]]:
        """The approvals run `run_id` got (`plan_approved` events' data), oldest first."""
        rows = self._read(
            "SELECT data FROM events WHERE run_id = ? AND kind = 'plan_approved' ORDER BY seq",
            (run_id,),
        )
        return [json.loads(r["data"]) for r in rows]

    def runs(self, limit: int = 20, *, before: str | None = None) -> list[dict[str, Any]]:
        """The newest runs first, as summaries; `before` (a run's id) pages on: the runs that
        began before that one."""
        if before is None:
            rows = self._read("SELECT * FROM runs ORDER BY created DESC, id DESC LIMIT ?", (limit,))
        else:
            rows = self._read(
                "SELECT * FROM runs WHERE (created, id) < (SELECT created, id FROM runs WHERE "
                "id = ?) ORDER BY created DESC, id DESC LIMIT ?",
                (self.find(before), limit),
            )
        ids = [r["id"] for r in rows]
        counts = {
            (r["run_id"], r["status"]): r["n"]
            for r in self._read(
                "SELECT run_id, status, count(*) AS n FROM tasks WHERE run_id IN "
                f"({', '.join('?' * len(ids))}) GROUP BY run_id, status",
                tuple(ids),
            )
        }
        out = []
        for r in rows:
            tasks = {status: n for (rid, status), n in counts.items() if rid == r["id"]}
            summary = _run_dict(r, tasks, {})
            del summary["timings"]
            out.append(summary)
        return out

    def show(self, run_id: str) -> dict[str, Any]:
        """Run `run_id` in the shape of `planweave run --json`, plus its LLM calls (and, while
        it awaits approval, `awaiting`: the mode and the waiting tasks)."""
        run_id = self.find(run_id)
        run = self._read("SELECT * FROM runs WHERE id = ?", (run_id,))[0]
        items = self.items(run_id)
        tasks = [
            _task_dict(r, items.get(r["id"]))
            for r in self._read("SELECT * FROM tasks WHERE run_id = ? ORDER BY id", (run_id,))
        ]
        calls = [
            {
                "call": r["call"],
                "session": r["session"],
                "purpose": r["purpose"],
                "model": r["model"],
                "status": r["status"],
                "prompt_tokens": r["prompt_tokens"],
                "completion_tokens": r["completion_tokens"],
                "duration": r["duration"],
                "text": r["text"],
                **({"error": _loads(r["error"])} if r["error"] else {}),
            }
            for r in self._read(
                "SELECT * FROM llm_calls WHERE run_id = ? ORDER BY session, call", (run_id,)
            )
        ]
        spent = timings(
            ((c["purpose"], c["duration"] or 0.0) for c in calls),
            ((t["start"], t["end"]) for t in tasks),
        )
        shown = _run_dict(run, tasks, spent) | {"llm_calls": calls}
        if run["status"] == "awaiting_approval":
            waiting = self.awaiting(run_id)
            shown["awaiting"] = {"approve": waiting["approve"], "tasks": waiting["tasks"]}
        return shown

    def elapsed(self, run_id: str) -> float:
        """How long run `run_id` has run, on its own clock: its latest recorded event's time
        (0.0: none yet).  Time between a crash or a pause and a resume is not in it."""
        rows = self._read("SELECT coalesce(max(t), 0.0) FROM events WHERE run_id = ?", (run_id,))
        return float(rows[0][0])

    def last_seq(self, run_id: str) -> int:
        """The sequence number of the run's latest recorded event (0: none yet)."""
        rows = self._read("SELECT coalesce(max(seq), 0) FROM events WHERE run_id = ?", (run_id,))
        return int(rows[0][0])

    def events(
        self, run_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """The run's recorded events in order, each with its `seq`; `after` a sequence number,
        only the events that came after it (at most `limit`)."""
        run_id = self.find(run_id)
        return [
            {
                "seq": r["seq"],
                "session": r["session"],
                "t": r["t"],
                "kind": r["kind"],
                **json.loads(r["data"]),
            }
            for r in self._read(
                "SELECT * FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (run_id, after, -1 if limit is None else limit),
            )
        ]


def _keep_step(conn: sqlite3.Connection, run_id: str, event: TaskPlanned) -> None:
    """A step is keyed by (run id, task id): once its tool was called, the call under that key
    is fixed.  A resumed plan that writes another call there is refused (DBOS does the same),
    never recorded over the step that ran."""
    row = conn.execute(
        "SELECT call, status FROM tasks WHERE run_id = ? AND id = ? AND started IS NOT NULL",
        (run_id, event.task_id),
    ).fetchone()
    if row is None or row[0] == event.call:
        return
    recorded, status = row
    raise PlanDiverged(
        f"the plan diverged from the recorded run: task {event.task_id} is recorded as "
        f"`{recorded}` ({status}), but the plan now has `{event.call}` under that id. A step "
        "that ran keeps its call, so the run stopped here; resume it again, or start a new run",
        task_id=event.task_id,
        recorded=recorded,
        call=event.call,
        run_id=run_id,
    )


def _apply_task(conn: sqlite3.Connection, run_id: str, event: Event) -> None:
    """A task's event on its row: the values are the event's own."""
    key = (run_id, getattr(event, "task_id", None))
    match event:
        case TaskPlanned():
            _keep_step(conn, run_id, event)
            conn.execute(
                "INSERT INTO tasks (run_id, id, plan_round, tool, args, call, deps, thought, "
                "side_effects, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending') "
                "ON CONFLICT (run_id, id) DO UPDATE SET plan_round = excluded.plan_round, "
                "tool = excluded.tool, args = excluded.args, call = excluded.call, "
                "deps = excluded.deps, thought = excluded.thought, "
                "side_effects = excluded.side_effects, status = 'pending', attempts = 0, "
                "arguments = NULL, result = NULL, error = NULL, started = NULL, ended = NULL "
                "WHERE tasks.call != excluded.call AND tasks.started IS NULL",
                (
                    run_id,
                    event.task_id,
                    event.plan_round,
                    event.tool,
                    _dumps(event.args),
                    event.call,
                    _dumps(event.deps),
                    event.thought,
                    event.side_effects,
                ),
            )
        case TaskStarted():
            conn.execute(
                "UPDATE tasks SET status = 'running', attempts = ?, arguments = ?,"
                " started = ?, ended = NULL WHERE run_id = ? AND id = ?",
                (event.attempt, _dumps(_storable(event.arguments)), event.start, *key),
            )
        case TaskFinished(reused=False):
            conn.execute(
                "UPDATE tasks SET status = 'done', result = ?, error = NULL, started = ?, "
                "ended = ?, attempts = ? WHERE run_id = ? AND id = ?",
                (_dumps(event.stored), event.start, event.end, event.attempts, *key),
            )
        case TaskFailed(reused=False) | TaskSkipped():
            status = "failed" if isinstance(event, TaskFailed) else "skipped"
            conn.execute(
                "UPDATE tasks SET status = ?, error = ?, started = ?, ended = ?, attempts = ? "
                "WHERE run_id = ? AND id = ?",
                (status, _dumps(event.error), event.start, event.end, event.attempts, *key),
            )
        case TaskCancelled():
            conn.execute(
                "UPDATE tasks SET status = 'cancelled', started = ?, ended = ?, attempts = ? "
                "WHERE run_id = ? AND id = ?",
                (event.start, event.end, event.attempts, *key),
            )
        case TaskRecovery():
            conn.execute(
                "UPDATE tasks SET recovery = json_insert(coalesce(recovery, '[]'), '$[#]', "
                "json(?)) WHERE run_id = ? AND id = ?",
                (_dumps(event.record()), *key),
            )


def _apply_item(conn: sqlite3.Connection, run_id: str, event: Event) -> None:
    """A fan-out element's event, on its own row: the task's row is the whole fan-out's."""
    key = (run_id, getattr(event, "task_id", None), getattr(event, "item", None))
    match event:
        case TaskStarted():
            call = item_call(event.tool, event.arguments)
            conn.execute(
                "INSERT INTO task_items (run_id, task_id, item, call, status, attempts, "
                "arguments, started) VALUES (?, ?, ?, ?, 'running', ?, ?, ?) "
                "ON CONFLICT (run_id, task_id, item) DO UPDATE SET call = excluded.call, "
                "status = 'running', attempts = excluded.attempts, arguments = "
                "excluded.arguments, started = excluded.started, ended = NULL, result = NULL, "
                "error = NULL",
                (*key, call, event.attempt, _dumps(_storable(event.arguments)), event.start),
            )
        case TaskFinished(reused=False):
            conn.execute(
                "UPDATE task_items SET status = 'done', result = ?, error = NULL, ended = ?, "
                "attempts = ? WHERE run_id = ? AND task_id = ? AND item = ?",
                (_dumps(event.stored), event.end, event.attempts, *key),
            )
        case TaskFailed(reused=False) | TaskCancelled():
            status = "failed" if isinstance(event, TaskFailed) else "cancelled"
            error = _dumps(event.error) if isinstance(event, TaskFailed) else None
            conn.execute(
                "UPDATE task_items SET status = ?, error = ?, ended = ?, attempts = ? "
                "WHERE run_id = ? AND task_id = ? AND item = ?",
                (status, error, event.end, event.attempts, *key),
            )
        case TaskRecovery():
            conn.execute(
                "UPDATE task_items SET recovery = json_insert(coalesce(recovery, '[]'), '$[#]', "
                "json(?)) WHERE run_id = ? AND task_id = ? AND item = ?",
                (_dumps(event.record()), *key),
            )


def _storable(value: Any) -> Any:
    try:
        return encode(value)
    except Unstorable:
        return jsonable(value)


def _run_dict(r: sqlite3.Row, tasks: Any, timings: dict[str, float]) -> dict[str, Any]:
    """The run row in `run_dict`'s shape, plus the journal's own bookkeeping."""
    status = r["status"]
    if status == "running" and not _alive(r["pid"], r["host"]):
        status = "interrupted"
    return run_dict(
        id=r["id"],
        question=r["question"],
        answer=r["answer"],
        mode=r["mode"],
        status=status,
        tasks=tasks,
        llm=_loads(r["llm"]),
        wall_s=r["wall_s"],
        replans=r["replans"],
        timings=timings,
        error=_loads(r["error"]),
        partial=r["partial"],
        cache=_loads(r["cache"]),
    ) | {
        "created": r["created"],
        "updated": r["updated"],
        "sessions": r["sessions"],
        "settings": _shown_settings(r["settings"]),
    }


def _shown_settings(text: str) -> Any:
    """The stored settings, their URLs masked again (a journal from before that was done)."""
    settings = _loads(text)
    return redact_endpoints(settings) if isinstance(settings, dict) else settings


def _shown_result(status: str, text: str | None) -> Any:
    if status != "done":
        return None
    try:
        return jsonable(decode(_loads(text)))
    except Unstorable:
        return _loads(text)


def _task_dict(r: sqlite3.Row, items: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return task_dict(
        id=r["id"],
        tool=r["tool"],
        args=_loads(r["args"]),
        call=r["call"],
        dependencies=_loads(r["deps"]),
        status=r["status"],
        start=r["started"],
        end=r["ended"],
        plan_round=r["plan_round"],
        attempts=r["attempts"],
        result=_shown_result(r["status"], r["result"]),
        error=_loads(r["error"]),
        thought=r["thought"],
        recovery=_loads(r["recovery"]),
        items=items,
    )


def _record_name(table: str, row: dict[str, Any]) -> str:
    """How a person finds a record of a run: `task 3`, `LLM call 2 (planner)`..."""
    match table:
        case "runs":
            return "the run's question and settings"
        case "tasks":
            return f"task {row['id']}"
        case "task_items":
            return f"fan-out element {row['task_id']}.{row['item']}"
        case "llm_calls":
            return f"LLM call {row['call']} of session {row['session']} ({row['purpose']})"
    return f"event {row['seq']} ({row['kind']})"
