"""The event stream projected on a run's rows: each event appended to the run's event log, and
the run's, tasks', fan-out elements' and LLM calls' rows brought up to date with it, in the
writer's transaction.  The values written are the event's own; every row written is sealed
(`seal`), so that a resume can check what it replays.
"""

from __future__ import annotations

import time
from dataclasses import fields
from typing import Any

from ..errors import PlanDiverged
from ..events import (
    CacheAdapted,
    CacheHit,
    CacheMiss,
    Event,
    LLMCallFinished,
    LLMCallStarted,
    PlanApproved,
    PlanAwaitingApproval,
    ReplanEvent,
    RunFinished,
    TaskCancelled,
    TaskFailed,
    TaskFinished,
    TaskPlanned,
    TaskRecovery,
    TaskSkipped,
    TaskStarted,
)
from ..records import item_call, jsonable
from .codec import Unstorable, dumps, encode, loads
from .dbapi import Connection
from .schema import KEYS, key_where
from .seal import Sealer, seal_rows, unseal_rows

__all__ = ["append"]

# Held by the tasks' and fan-out elements' rows; the event log keeps the rest of each event.
_HEAVY = frozenset({"result", "stored", "arguments", "text", "args"})


def append(conn: Connection, sealer: Sealer, run_id: str, session: int, event: Event) -> None:
    """Append `event` to the run's event log and bring its rows up to date with it, in the
    transaction of `conn`; every row written is sealed with `sealer`."""
    # Not event.to_dict(): that deep-copies results, which the tasks table already holds.
    data = {f.name: getattr(event, f.name) for f in fields(event) if f.name not in _HEAVY}
    (seq,) = conn.execute(
        "SELECT coalesce(max(seq), 0) + 1 FROM events WHERE run_id = ?", (run_id,)
    ).fetchone()
    conn.execute(
        "INSERT INTO events (run_id, seq, session, t, kind, data) VALUES (?, ?, ?, ?, ?, ?)",
        (run_id, seq, session, event.t, event.kind, dumps(data)),
    )
    seal_rows(conn, sealer, "events", "run_id = ? AND seq = ?", (run_id, seq))
    _apply(conn, sealer, run_id, session, event)


def _apply(conn: Connection, sealer: Sealer, run_id: str, session: int, event: Event) -> None:
    """Bring the run's rows up to date with `event`: the values are the event's own."""
    if isinstance(event, LLMCallStarted | LLMCallFinished):
        _apply_llm(conn, sealer, run_id, session, event)
    elif isinstance(event, PlanAwaitingApproval | PlanApproved):
        _apply_approval(conn, sealer, run_id, event)
    elif isinstance(event, ReplanEvent | RunFinished | CacheHit | CacheAdapted | CacheMiss):
        _apply_run(conn, sealer, run_id, event)
    else:
        _apply_task(conn, sealer, run_id, event)


def _apply_task(conn: Connection, sealer: Sealer, run_id: str, event: Event) -> None:
    task_id, item = getattr(event, "task_id", None), getattr(event, "item", None)
    if task_id is None:
        return
    if item is not None:
        _item_row(conn, run_id, event)
        where = "run_id = ? AND task_id = ? AND item = ?"
        seal_rows(conn, sealer, "task_items", where, (run_id, task_id, item))
        return
    _task_row(conn, run_id, event)
    seal_rows(conn, sealer, "tasks", "run_id = ? AND id = ?", (run_id, task_id))


def _apply_llm(
    conn: Connection,
    sealer: Sealer,
    run_id: str,
    session: int,
    event: LLMCallStarted | LLMCallFinished,
) -> None:
    match event:
        case LLMCallStarted(replayed=False):
            where = "run_id = ? AND session = ? AND call = ?"
            unseal_rows(conn, sealer, "llm_calls", where, (run_id, session, event.call))
            conn.execute(
                "INSERT INTO llm_calls (run_id, session, call, purpose, model, request_hash, "
                "status, started) VALUES (?, ?, ?, ?, ?, ?, 'streaming', ?) "
                "ON CONFLICT (run_id, session, call) DO UPDATE SET purpose = excluded.purpose, "
                "model = excluded.model, request_hash = excluded.request_hash, "
                "status = 'streaming', started = excluded.started, prompt_tokens = NULL, "
                "completion_tokens = NULL, duration = NULL, text = NULL, error = NULL, "
                "mac = NULL",
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
                    None if event.error is None else dumps(event.error),
                    run_id,
                    session,
                    event.call,
                ),
            )
        case _:
            return
    where = "run_id = ? AND session = ? AND call = ?"
    seal_rows(conn, sealer, "llm_calls", where, (run_id, session, event.call))


def _apply_approval(
    conn: Connection,
    sealer: Sealer,
    run_id: str,
    event: PlanAwaitingApproval | PlanApproved,
) -> None:
    if isinstance(event, PlanAwaitingApproval):
        conn.execute(
            "UPDATE runs SET status = 'awaiting_approval', updated = ?, llm = ?, wall_s = ? "
            "WHERE id = ?",
            (time.time(), dumps(event.llm), event.wall_s, run_id),
        )
        return
    # A dropped task is no longer part of the plan (its event says it was there).
    for task_id in event.dropped:
        where = "run_id = ? AND id = ? AND started IS NULL"
        unseal_rows(conn, sealer, "tasks", where, (run_id, task_id))
        conn.execute(f"DELETE FROM tasks WHERE {where}", (run_id, task_id))


def _apply_run(
    conn: Connection,
    sealer: Sealer,
    run_id: str,
    event: ReplanEvent | RunFinished | CacheHit | CacheAdapted | CacheMiss,
) -> None:
    match event:
        case CacheHit() | CacheAdapted() | CacheMiss():
            conn.execute("UPDATE runs SET cache = ? WHERE id = ?", (dumps(event.summary()), run_id))
        case ReplanEvent():
            conn.execute("UPDATE runs SET replans = replans + 1 WHERE id = ?", (run_id,))
        case RunFinished():
            conn.execute(
                "UPDATE runs SET status = ?, answer = ?, error = ?, wall_s = ?, updated = ?, "
                "llm = ?, replans = ?, partial = ? WHERE id = ?",
                (
                    event.status,
                    event.answer,
                    None if event.error is None else dumps(event.error),
                    event.wall_s,
                    time.time(),
                    dumps(event.llm),
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
                keys, where = KEYS[table], key_where(table)
                rows = conn.execute(
                    f"SELECT {', '.join(keys)} FROM {table} WHERE run_id = ? AND status IN "
                    f"({left})",
                    (run_id,),
                ).fetchall()
                for row in rows:
                    conn.execute(f"UPDATE {table} SET status = 'cancelled' WHERE {where}", (*row,))
                    seal_rows(conn, sealer, table, where, (*row,))


def _keep_step(conn: Connection, run_id: str, event: TaskPlanned) -> None:
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


def _task_row(conn: Connection, run_id: str, event: Event) -> None:
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
                    dumps(event.args),
                    event.call,
                    dumps(event.deps),
                    event.thought,
                    event.side_effects,
                ),
            )
        case TaskStarted():
            conn.execute(
                "UPDATE tasks SET status = 'running', attempts = ?, arguments = ?,"
                " started = ?, ended = NULL WHERE run_id = ? AND id = ?",
                (event.attempt, dumps(_storable(event.arguments)), event.start, *key),
            )
        case TaskFinished(reused=False):
            conn.execute(
                "UPDATE tasks SET status = 'done', result = ?, error = NULL, started = ?, "
                "ended = ?, attempts = ? WHERE run_id = ? AND id = ?",
                (dumps(event.stored), event.start, event.end, event.attempts, *key),
            )
        case TaskFailed(reused=False) | TaskSkipped():
            status = "failed" if isinstance(event, TaskFailed) else "skipped"
            conn.execute(
                "UPDATE tasks SET status = ?, error = ?, started = ?, ended = ?, attempts = ? "
                "WHERE run_id = ? AND id = ?",
                (status, dumps(event.error), event.start, event.end, event.attempts, *key),
            )
        case TaskCancelled():
            conn.execute(
                "UPDATE tasks SET status = 'cancelled', started = ?, ended = ?, attempts = ? "
                "WHERE run_id = ? AND id = ?",
                (event.start, event.end, event.attempts, *key),
            )
        case TaskRecovery():
            _add_recovery(conn, "tasks", "run_id = ? AND id = ?", key, event)


def _item_row(conn: Connection, run_id: str, event: Event) -> None:
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
                (*key, call, event.attempt, dumps(_storable(event.arguments)), event.start),
            )
        case TaskFinished(reused=False):
            conn.execute(
                "UPDATE task_items SET status = 'done', result = ?, error = NULL, ended = ?, "
                "attempts = ? WHERE run_id = ? AND task_id = ? AND item = ?",
                (dumps(event.stored), event.end, event.attempts, *key),
            )
        case TaskFailed(reused=False) | TaskCancelled():
            status = "failed" if isinstance(event, TaskFailed) else "cancelled"
            error = dumps(event.error) if isinstance(event, TaskFailed) else None
            conn.execute(
                "UPDATE task_items SET status = ?, error = ?, ended = ?, attempts = ? "
                "WHERE run_id = ? AND task_id = ? AND item = ?",
                (status, error, event.end, event.attempts, *key),
            )
        case TaskRecovery():
            where = "run_id = ? AND task_id = ? AND item = ?"
            _add_recovery(conn, "task_items", where, key, event)


def _add_recovery(
    conn: Connection, table: str, where: str, key: tuple[Any, ...], event: TaskRecovery
) -> None:
    """Append what recovery did to the row's `recovery` list (a JSON list; one that does not
    read as one starts again)."""
    found = conn.execute(f"SELECT recovery FROM {table} WHERE {where}", key).fetchone()
    if found is None:
        return
    try:
        done = loads(found[0]) or []
    except ValueError:
        done = []
    done = done if isinstance(done, list) else []
    conn.execute(
        f"UPDATE {table} SET recovery = ? WHERE {where}", (dumps([*done, event.record()]), *key)
    )


def _storable(value: Any) -> Any:
    try:
        return encode(value)
    except Unstorable:
        return jsonable(value)
