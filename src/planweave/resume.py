"""Preparing a journaled run to continue: what to reuse, what to replay, what to ask about."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .approval import ApproveMode
from .errors import (
    BranchNotTaken,
    DecisionNeeded,
    PlanError,
    ResumeError,
    TaskError,
    ToolCrashed,
    error_from_dict,
)
from .events import PlanApproved
from .parser import PlanParser, parse_call
from .plan import Task
from .records import Recorded, RecordedItem, RecordedTask, Replay
from .store import Journal, Unstorable, decode
from .tools import ToolRegistry

__all__ = ["Decisions", "ResumeDecision", "ResumeState", "prepare"]

ResumeDecision = Literal["rerun", "fail"]
# Either a decision per task id, or a function asked about each task ({id, tool, call}); None
# (or a missing id) leaves the task undecided, and the run paused.
Decisions = Mapping[int, ResumeDecision] | Callable[[dict[str, Any]], ResumeDecision | None]


@dataclass(slots=True)
class ResumeState:
    run_id: str
    question: str
    mode: str
    session: int
    created: float
    # How long it ran before it stopped (its clock goes on from there: `Journal.elapsed`).
    elapsed: float = 0.0
    recorded: dict[int, Recorded] = field(default_factory=dict)
    # The fan-out elements that finished, by task id and item: only the others run again.
    items: dict[int, dict[int, RecordedItem]] = field(default_factory=dict)
    replay: dict[int, Replay] = field(default_factory=dict)
    rerun: list[int] = field(default_factory=list)
    cache: dict[str, Any] | None = None  # what the plan cache did when the run began
    # The plan it gave (a hit), or the example it gave the planner (adapted): the run goes on
    # with the same, so that the recorded planner call replays.
    cached: dict[str, Any] | None = None
    # Its approval mode (None: none) and the approvals it got (`plan_approved` events' data).
    approve: ApproveMode | None = None
    approvals: list[dict[str, Any]] = field(default_factory=list)
    # The output schema its answer is typed by (None: an answer in words), and the thread it
    # is a turn of (None: none).
    output_schema: str | None = None
    thread: str | None = None
    user: str | None = None
    # An approval given just now, recorded as the session begins.
    approved_now: PlanApproved | None = None


def prepare(
    journal: Journal,
    run_id: str,
    tools: ToolRegistry,
    decisions: Decisions | None = None,
    *,
    approving: bool = False,
) -> ResumeState:
    """Claim run `run_id` for this process and work out how it continues (`approving`: a run
    that awaits approval, which only that resumes).

    Raises ResumeError when it cannot (unknown, finished or still running elsewhere, or the
    recorded plan does not fit `tools`), JournalUnverified when a record of it is not sealed by
    this user's journal key (`Journal.verify`), and DecisionNeeded, leaving the run paused,
    when a task with side effects was in flight and `decisions` says nothing about it.
    """
    row = journal.claim(run_id, approving=approving)
    run_id = row["id"]
    try:
        # Nothing recorded is replayed, nor read to decide what runs, unless it is sealed.
        journal.verify(run_id)
        tasks = journal.recorded_tasks(run_id)
        planned = _check_plan(run_id, tasks, tools)
        elements = journal.items(run_id)
        state = _state(journal, row)
        undecided = []
        for task in tasks.values():
            if not _in_flight(task):
                continue
            running = _running_elements(task, planned[task.id], elements)
            if running == [] or not (task.side_effects or tools[task.tool].side_effects):
                state.rerun.append(task.id)
                continue
            decision = _decide(decisions, task)
            if decision is None:
                asked: dict[str, Any] = {"id": task.id, "tool": task.tool, "call": task.call}
                if running is not None:
                    asked["items"] = running
                undecided.append(asked)
            elif decision == "rerun":
                state.rerun.append(task.id)
            else:
                tasks[task.id] = _mark_failed(journal, run_id, task)
        if undecided:
            raise _decision_needed(run_id, undecided)
        state.recorded = {t.id: r for t in tasks.values() if (r := _outcome(run_id, t))}
        state.items = _items(run_id, journal.recorded_items(run_id))
    except BaseException:
        journal.pause(run_id, "awaiting_approval" if approving else "paused")
        raise
    return state


def _state(journal: Journal, row: Mapping[str, Any]) -> ResumeState:
    """The run as its row and journal record it, before anything in flight is settled."""
    run_id = row["id"]
    return ResumeState(
        run_id=run_id,
        question=row["question"],
        mode=row["mode"],
        session=row["sessions"] + 1,
        created=row["created"],
        elapsed=journal.elapsed(run_id),
        replay=journal.recorded_calls(run_id),
        cache=_cache(row.get("cache")),
        cached=journal.cache_decision(run_id),
        approve=_approve(row.get("settings")),
        output_schema=_recorded_text(row.get("settings"), "output_schema"),
        thread=_recorded_text(row.get("settings"), "thread"),
        user=_recorded_text(row.get("settings"), "user"),
        approvals=journal.approvals(run_id),
    )


def _in_flight(task: RecordedTask) -> bool:
    """Running when the run stopped, or cancelled after it had started: it may have acted."""
    return task.status == "running" or (task.status == "cancelled" and task.started is not None)


def _running_elements(
    task: RecordedTask, planned: Task, elements: Mapping[int, list[dict[str, Any]]]
) -> list[Any] | None:
    """A fan-out is in flight where its elements were: those recorded running (each once it
    held its slot).  With none, nothing of it can have taken effect unseen: its finished
    elements are reused and the others run.  None for a task that is no fan-out."""
    if planned.fan_out is None:
        return None
    return [i["item"] for i in elements.get(task.id, ()) if _element_in_flight(i)]


def _mark_failed(journal: Journal, run_id: str, task: RecordedTask) -> RecordedTask:
    """Fail a task that was in flight, as its resume decision says: recorded, and returned."""
    error = ToolCrashed(
        "was in flight when the run stopped; marked failed on resume",
        task_id=task.id,
        tool=task.tool,
        arguments=task.call[len(task.tool) + 1 : -1],
        cause="interrupted",
    ).to_dict()
    journal.mark_failed(run_id, task.id, error)
    return dataclasses.replace(task, status="failed", error=error)


def _decision_needed(run_id: str, undecided: list[dict[str, Any]]) -> DecisionNeeded:
    listed = "; ".join(f"task {t['id']} {t['call']}{_elements(t)}" for t in undecided)
    return DecisionNeeded(
        f"run {run_id} paused: these tasks have side effects and were in flight when "
        f"it stopped, so they may or may not have taken effect: {listed}. Resume with a "
        "decision for each: re-run it, or mark it failed",
        tasks=undecided,
    )


def _cache(text: str | None) -> dict[str, Any] | None:
    try:
        cache = json.loads(text) if text else None
    except ValueError:
        return None
    return cache if isinstance(cache, dict) else None


def _approve(settings: str | None) -> ApproveMode | None:
    approve = _recorded_text(settings, "approve")
    return "plan" if approve == "plan" else "side_effects" if approve == "side_effects" else None


def _recorded_text(settings: str | None, name: str) -> str | None:
    """The text setting `name` the run was recorded with (checked when its settings are
    made, as any setting)."""
    try:
        data = json.loads(settings) if settings else None
    except ValueError:
        return None
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def _decide(decisions: Decisions | None, task: RecordedTask) -> ResumeDecision | None:
    if decisions is None:
        return None
    if callable(decisions):
        return decisions({"id": task.id, "tool": task.tool, "call": task.call})
    return decisions.get(task.id)


def _element_in_flight(item: Mapping[str, Any]) -> bool:
    status = item.get("status")
    return status == "running" or (status == "cancelled" and item.get("start") is not None)


def _elements(task: Mapping[str, Any]) -> str:
    items = task.get("items")
    if not items:
        return ""
    return f" (element{'s' if len(items) > 1 else ''} {', '.join(map(str, items))} in flight)"


def _check_plan(
    run_id: str, tasks: Mapping[int, RecordedTask], tools: ToolRegistry
) -> dict[int, Task]:
    """Every recorded line must still parse and validate against the current tools; the
    tasks they make, by id."""
    parser = PlanParser(tools)
    for task in tasks.values():
        try:
            parser.add(parse_call(task.call, task.id, parser.known_ids))
        except PlanError as err:
            raise ResumeError(
                f"run {run_id} cannot be resumed with the current tools: its recorded task "
                f"{task.id} `{task.call}` no longer fits: {err.message} (tools now: "
                f"{', '.join(sorted(tools)) or 'none'})"
            ) from err
    return dict(parser.tasks)


def _items(
    run_id: str, recorded: dict[int, dict[int, RecordedItem]]
) -> dict[int, dict[int, RecordedItem]]:
    """The finished fan-out elements with their results read back."""
    out: dict[int, dict[int, RecordedItem]] = {}
    for task_id, items in recorded.items():
        for item, rec in items.items():
            try:
                value = decode(rec.stored)
            except Unstorable as exc:
                raise ResumeError(
                    f"run {run_id} cannot be resumed: the recorded result of task "
                    f"{task_id}.{item} `{rec.call}` cannot be read back: {exc}"
                ) from exc
            out.setdefault(task_id, {})[item] = dataclasses.replace(rec, result=value)
    return out


def _outcome(run_id: str, task: RecordedTask) -> Recorded | None:
    if task.status == "done":
        try:
            value = decode(task.result)
        except Unstorable as exc:
            raise ResumeError(
                f"run {run_id} cannot be resumed: the recorded result of task {task.id} "
                f"`{task.call}` cannot be read back: {exc}"
            ) from exc
        return Recorded(
            task.call,
            "done",
            value,
            task.result,
            start=task.started,
            end=task.ended,
            attempts=task.attempts,
        )
    if task.status == "skipped" and task.error is not None:
        skipped = error_from_dict(task.error)
        if isinstance(skipped, BranchNotTaken):  # decided: the branch stays not taken
            return Recorded(task.call, "skipped", error=skipped, attempts=task.attempts)
        return None
    if task.status == "failed" and task.error is not None:
        error = error_from_dict(task.error)
        if not isinstance(error, TaskError):
            error = ToolCrashed(error.message, task_id=task.id, tool=task.tool)
        return Recorded(
            task.call,
            "failed",
            error=error,
            start=task.started,
            end=task.ended,
            attempts=task.attempts,
        )
    return None
