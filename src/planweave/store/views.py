"""The journal's records read back: as records for a resume (`recorded_tasks`, `recorded_calls`
...) and as the dicts the CLI and the HTTP API show (`runs`, `show`, `events`), in the shapes of
`records` (one serializer for every view).  Each takes the journal to read (`Journal` delegates
its reading methods here).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from ..errors import ResumeError, RunNotFound
from ..events import timings
from ..records import (
    RecordedItem,
    RecordedTask,
    Replay,
    item_dict,
    jsonable,
    run_dict,
    task_dict,
)
from ..redaction import redact_endpoints
from .base import Dialect
from .codec import Unstorable, decode, loads
from .dbapi import Row
from .owner import holds

__all__ = [
    "Source",
    "approvals",
    "awaiting",
    "cache_decision",
    "elapsed",
    "events",
    "find",
    "items",
    "last_seq",
    "recorded_calls",
    "recorded_items",
    "recorded_tasks",
    "runs",
    "show",
]


class Source(Protocol):
    """What the views read: a journal."""

    @property
    def path(self) -> Path | str: ...

    @property
    def dialect(self) -> Dialect: ...

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Row]: ...

    def clock(self) -> float: ...


def find(journal: Source, run_id: str) -> str:
    """The full id of the run `run_id` names (a unique prefix is enough)."""
    rows = journal.read(
        "SELECT id FROM runs WHERE id >= ? AND id < ? LIMIT 2", (run_id, run_id + "\uffff")
    )
    if not rows:
        raise RunNotFound(f"no run {run_id!r} in the journal {journal.path}", run_id=run_id)
    if len(rows) > 1:
        raise ResumeError(f"{run_id!r} names more than one run; give more of the id")
    return str(rows[0]["id"])


def recorded_tasks(journal: Source, run_id: str) -> dict[int, RecordedTask]:
    """The run's tasks as recorded, by id; `result` is the stored form, left to the caller to
    decode."""
    rows = journal.read("SELECT * FROM tasks WHERE run_id = ? ORDER BY id", (run_id,))
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
            result=loads(r["result"]),
            error=loads(r["error"]),
        )
        for r in rows
    }


def recorded_items(journal: Source, run_id: str) -> dict[int, dict[int, RecordedItem]]:
    """The fan-out elements that finished, by task id and item; `result` is left to the
    caller to decode from `stored`."""
    rows = journal.read(
        "SELECT * FROM task_items WHERE run_id = ? AND status = 'done' ORDER BY task_id, item",
        (run_id,),
    )
    found: dict[int, dict[int, RecordedItem]] = {}
    for r in rows:
        found.setdefault(r["task_id"], {})[r["item"]] = RecordedItem(
            call=r["call"],
            stored=loads(r["result"]),
            start=r["started"],
            end=r["ended"],
            attempts=r["attempts"],
        )
    return found


def recorded_calls(journal: Source, run_id: str) -> dict[int, Replay]:
    """Each call number's latest finished response, to replay."""
    rows = journal.read(
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


def cache_decision(journal: Source, run_id: str) -> dict[str, Any] | None:
    """What run `run_id` began its first plan from: the plan cache's `cache_hit` or
    `cache_adapted` event's data, or a named plan's `named_plan`; or None."""
    rows = journal.read(
        "SELECT kind, data FROM events WHERE run_id = ? AND kind IN ('cache_hit', "
        "'cache_adapted', 'named_plan') ORDER BY seq LIMIT 1",
        (run_id,),
    )
    try:
        data = json.loads(rows[0]["data"]) if rows else None
    except ValueError:
        return None
    return {"kind": rows[0]["kind"], **data} if isinstance(data, dict) else None


def awaiting(journal: Source, run_id: str) -> dict[str, Any]:
    """What run `run_id` waits for (its last `plan_awaiting_approval` event's data: the
    mode and the waiting tasks) and every task it planned, with the tasks each uses
    (`planned`); ResumeError unless it awaits approval."""
    run_id = find(journal, run_id)
    status = journal.read("SELECT status FROM runs WHERE id = ?", (run_id,))[0][0]
    rows = journal.read(
        "SELECT data FROM events WHERE run_id = ? AND kind = 'plan_awaiting_approval' "
        "ORDER BY seq DESC LIMIT 1",
        (run_id,),
    )
    if status != "awaiting_approval" or not rows:
        raise ResumeError(f"run {run_id} is not awaiting approval (it is {status})")
    planned = {
        r["id"]: loads(r["deps"]) or []
        for r in journal.read("SELECT id, deps FROM tasks WHERE run_id = ?", (run_id,))
    }
    return {"id": run_id, **json.loads(rows[0]["data"]), "planned": planned}


def approvals(journal: Source, run_id: str) -> list[dict[str, Any]]:
    """The approvals run `run_id` got (`plan_approved` events' data), oldest first."""
    rows = journal.read(
        "SELECT data FROM events WHERE run_id = ? AND kind = 'plan_approved' ORDER BY seq",
        (run_id,),
    )
    return [json.loads(r["data"]) for r in rows]


def items(journal: Source, run_id: str) -> dict[int, list[dict[str, Any]]]:
    """Each fan-out task's elements as `--json` shows them, by task id."""
    rows = journal.read(
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
                error=loads(r["error"]),
                recovery=loads(r["recovery"]),
            )
        )
    return found


def runs(
    journal: Source, limit: int = 20, *, before: str | None = None, user: str | None = None
) -> list[dict[str, Any]]:
    """The newest runs first, as summaries; `before` (a run's id) pages on: the runs that
    began before that one; `user`: only that user's runs (`RunSettings.user`), read through
    their index (migration 11), not everyone's."""
    where: list[str] = []
    params: list[Any] = []
    if user is not None:
        where.append(f"{journal.dialect.user_of} = ?")
        params.append(user)
    if before is not None:
        where.append("(created, id) < (SELECT created, id FROM runs WHERE id = ?)")
        params.append(find(journal, before))
    rows = journal.read(
        "SELECT * FROM runs"
        + "".join(f" {'AND' if n else 'WHERE'} {w}" for n, w in enumerate(where))
        + " ORDER BY created DESC, id DESC LIMIT ?",
        (*params, limit),
    )
    if not rows:
        return []
    ids = [r["id"] for r in rows]
    counts = {
        (r["run_id"], r["status"]): r["n"]
        for r in journal.read(
            "SELECT run_id, status, count(*) AS n FROM tasks WHERE run_id IN "
            f"({', '.join('?' * len(ids))}) GROUP BY run_id, status",
            tuple(ids),
        )
    }
    out = []
    now = journal.clock()
    for r in rows:
        tasks = {status: n for (rid, status), n in counts.items() if rid == r["id"]}
        summary = _run_dict(r, tasks, {}, now)
        del summary["timings"]
        out.append(summary)
    return out


def thread_runs(journal: Source, thread: str) -> list[dict[str, Any]]:
    """The runs of conversation `thread`, oldest first: id, question, answer, status, created,
    user (`RunSettings.user`, null when none or not text)."""
    sql = journal.dialect
    rows = journal.read(
        f"SELECT id, question, answer, status, created, {sql.user_of} AS user "
        f"FROM runs WHERE {sql.thread_of} = ? ORDER BY created, id",
        (thread,),
    )
    return [dict(r) for r in rows]


def threads(journal: Source, limit: int = 20) -> list[dict[str, Any]]:
    """The conversations, the one spoken in last first: id, runs, first question, last time."""
    thread_of = journal.dialect.thread_of
    rows = journal.read(
        f"SELECT {thread_of} AS thread, count(*) AS runs, min(created) AS started, "
        f"max(created) AS updated FROM runs WHERE {thread_of} IS NOT NULL "
        f"GROUP BY {thread_of} ORDER BY updated DESC LIMIT ?",
        (limit,),
    )
    out = []
    for r in rows:
        first = journal.read(
            f"SELECT question FROM runs WHERE {thread_of} = ? ORDER BY created, id LIMIT 1",
            (r["thread"],),
        )
        out.append({**dict(r), "first_question": first[0]["question"] if first else None})
    return out


def show(journal: Source, run_id: str) -> dict[str, Any]:
    """Run `run_id` in the shape of `planweave run --json`, plus its LLM calls (and, while
    it awaits approval, `awaiting`: the mode and the waiting tasks)."""
    run_id = find(journal, run_id)
    run = journal.read("SELECT * FROM runs WHERE id = ?", (run_id,))[0]
    elements = items(journal, run_id)
    tasks = [
        _task_dict(r, elements.get(r["id"]))
        for r in journal.read("SELECT * FROM tasks WHERE run_id = ? ORDER BY id", (run_id,))
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
            **({"error": loads(r["error"])} if r["error"] else {}),
        }
        for r in journal.read(
            "SELECT * FROM llm_calls WHERE run_id = ? ORDER BY session, call", (run_id,)
        )
    ]
    spent = timings(
        ((c["purpose"], c["duration"] or 0.0) for c in calls),
        ((t["start"], t["end"]) for t in tasks),
    )
    shown = _run_dict(run, tasks, spent, journal.clock()) | {"llm_calls": calls}
    if run["status"] == "awaiting_approval":
        waiting = awaiting(journal, run_id)
        shown["awaiting"] = {"approve": waiting["approve"], "tasks": waiting["tasks"]}
    return shown


def state(journal: Source, run_id: str) -> str:
    """Run `run_id`'s status as the views show it (a running one whose holder is gone:
    `interrupted`), read from its row alone."""
    rows = journal.read(
        "SELECT status, pid, host, holder, lease_until FROM runs WHERE id = ?",
        (find(journal, run_id),),
    )
    status = str(rows[0]["status"])
    gone = status == "running" and not holds(dict(rows[0]), journal.clock())
    return "interrupted" if gone else status


def elapsed(journal: Source, run_id: str) -> float:
    """How long run `run_id` has run, on its own clock: its latest recorded event's time
    (0.0: none yet).  Time between a crash or a pause and a resume is not in it."""
    rows = journal.read("SELECT coalesce(max(t), 0.0) FROM events WHERE run_id = ?", (run_id,))
    return float(rows[0][0])


def last_seq(journal: Source, run_id: str) -> int:
    """The sequence number of the run's latest recorded event (0: none yet)."""
    rows = journal.read("SELECT coalesce(max(seq), 0) FROM events WHERE run_id = ?", (run_id,))
    return int(rows[0][0])


def events(
    journal: Source, run_id: str, *, after: int = 0, limit: int | None = None
) -> list[dict[str, Any]]:
    """The run's recorded events in order, each with its `seq`; `after` a sequence number,
    only the events that came after it (at most `limit`)."""
    run_id = find(journal, run_id)
    return [
        {
            "seq": r["seq"],
            "session": r["session"],
            "t": r["t"],
            "kind": r["kind"],
            **json.loads(r["data"]),
        }
        for r in journal.read(
            "SELECT * FROM events WHERE run_id = ? AND seq > ? ORDER BY seq"
            + ("" if limit is None else " LIMIT ?"),
            (run_id, after) if limit is None else (run_id, after, limit),
        )
    ]


def _run_dict(r: Row, tasks: Any, timings: dict[str, float], now: float) -> dict[str, Any]:
    """The run row in `run_dict`'s shape, plus the journal's own bookkeeping (`now`: the
    journal's clock, for whether its holder still holds a running one)."""
    status = r["status"]
    if status == "running" and not holds(dict(r), now):
        status = "interrupted"
    return run_dict(
        id=r["id"],
        question=r["question"],
        answer=r["answer"],
        mode=r["mode"],
        status=status,
        tasks=tasks,
        llm=loads(r["llm"]),
        wall_s=r["wall_s"],
        replans=r["replans"],
        timings=timings,
        error=loads(r["error"]),
        partial=r["partial"],
        cache=loads(r["cache"]),
    ) | {
        "created": r["created"],
        "updated": r["updated"],
        "sessions": r["sessions"],
        "settings": _shown_settings(r["settings"]),
    }


def _shown_settings(text: str) -> Any:
    """The stored settings, their URLs masked again (a journal from before that was done)."""
    settings = loads(text)
    return redact_endpoints(settings) if isinstance(settings, dict) else settings


def _shown_result(status: str, text: str | None) -> Any:
    if status != "done":
        return None
    try:
        return jsonable(decode(loads(text)))
    except Unstorable:
        return loads(text)


def _task_dict(r: Row, items: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return task_dict(
        id=r["id"],
        tool=r["tool"],
        args=loads(r["args"]),
        call=r["call"],
        dependencies=loads(r["deps"]),
        status=r["status"],
        start=r["started"],
        end=r["ended"],
        plan_round=r["plan_round"],
        attempts=r["attempts"],
        result=_shown_result(r["status"], r["result"]),
        error=loads(r["error"]),
        thought=r["thought"],
        recovery=loads(r["recovery"]),
        items=items,
    )
