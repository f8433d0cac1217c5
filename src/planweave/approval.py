"""Human approval: tasks that wait for a person's yes before they run, and what the person
changed.

`approve="plan"`: every task of the first plan waits, so the plan is shown whole before anything
runs; `approve="side_effects"`: only tasks of tools marked `side_effects=True` wait, the others
run.  The scheduler holds each task the `Gate` says waits; once nothing else can run, the run
pauses (`AwaitingApproval`) and the journal says which tasks wait.  A person approves them as
they are or with edits (other arguments for a task, tasks dropped), checked here like any plan
(`review`) and journaled (`PlanApproved`); the run then goes on as a resumed session: the same
plan is read again (its LLM calls replayed, or the plan cache's plan), and the gate applies the
approval to its tasks as they come.  A run may pause more than once (a replan's tasks with side
effects wait too); every approval it got applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import InvalidApproval, PlanError
from .events import PlanApproved
from .parser import parse_call, parse_task
from .plan import Condition, Task
from .records import TaskRecord, plan_json
from .tools import ToolRegistry

__all__ = ["APPROVE_MODES", "ApproveMode", "Gate", "review", "waiting_task"]

ApproveMode = Literal["plan", "side_effects"]
APPROVE_MODES: tuple[ApproveMode, ...] = ("plan", "side_effects")


@dataclass(slots=True)
class Gate:
    """Which tasks wait for approval, and the approvals a run got so far (from its journal)."""

    mode: ApproveMode
    tools: ToolRegistry
    approved: set[int] = field(default_factory=set)
    edits: dict[int, str] = field(default_factory=dict)
    dropped: set[int] = field(default_factory=set)

    @classmethod
    def of(
        cls, mode: ApproveMode, tools: ToolRegistry, approvals: Iterable[Mapping[str, Any]] = ()
    ) -> Gate:
        """The gate for a run in `mode` that got `approvals` (`plan_approved` events' data)."""
        gate = cls(mode, tools)
        for approval in approvals:
            gate.approved.update(int(i) for i in approval.get("approved", ()))
            gate.edits.update({int(k): str(v) for k, v in approval.get("edits", {}).items()})
            gate.dropped.update(int(i) for i in approval.get("dropped", ()))
        return gate

    def holds(self, task: Task, plan_round: int) -> bool:
        """Whether `task` (of plan round `plan_round`) must wait for a yes before it runs."""
        if task.id in self.approved:
            return False
        if self.mode == "plan":
            return plan_round == 0
        tool = self.tools.get(task.tool)
        return tool is not None and tool.side_effects

    def review(self, task: Task, known: Iterable[int]) -> Task | None:
        """`task` as approved: as it is, with the approved call instead, or None (dropped).
        `known` are the tasks whose results the approved call may use."""
        if task.id in self.dropped:
            return None
        call = self.edits.get(task.id)
        if call is None:
            return task
        edited = parse_task(call, task.id, self.tools, known)
        edited.thought, edited.line = task.thought, f"{task.id}. {call}"
        return edited


def waiting_task(rec: TaskRecord, tools: ToolRegistry) -> dict[str, Any]:
    """A waiting task as the pause shows it (what a person approves or edits)."""
    task = rec.task
    return {
        "id": task.id,
        "tool": task.tool,
        "call": task.call_text(),
        "args": {name: plan_json(value) for name, value in task.bound.items()},
        "deps": list(task.deps),
        "side_effects": tools[task.tool].side_effects,
    }


def review(
    waiting: list[dict[str, Any]],
    planned: Mapping[int, list[int]],
    tools: ToolRegistry,
    *,
    edits: Mapping[int, Mapping[str, Any]] | None = None,
    drop: Iterable[int] = (),
    calls: Mapping[int, str] | None = None,
) -> PlanApproved:
    """The approval of the `waiting` tasks with `edits` (arguments by name, in the JSON plan
    form: `"$1"` is task 1's result) and the tasks in `drop` left out.  `planned` gives every
    task of the run so far with the tasks it uses, `calls` their calls as planned, so that an
    edit is validated the way the plan parser validates a plan (`"$1[*]"` over a task whose
    tool returns no list is refused now, not when it runs).  Raises InvalidApproval when the
    result would not be a valid plan."""
    by_id = {int(t["id"]): t for t in waiting}
    edits = {int(k): v for k, v in (edits or {}).items()}
    dropped = sorted({int(i) for i in drop})
    for what, ids in (("edit", edits), ("drop", dropped)):
        strangers = sorted(set(ids) - set(by_id))
        if strangers:
            raise InvalidApproval(
                f"cannot {what} task {strangers[0]}: only the waiting tasks "
                f"({', '.join(map(str, sorted(by_id))) or 'none'}) can be edited or dropped"
            )
    for task_id, deps in sorted(planned.items()):
        used = sorted(set(deps) & set(dropped))
        if task_id not in dropped and used:
            raise InvalidApproval(
                f"task {task_id} uses the result of task {used[0]} (${used[0]}), which would be "
                f"dropped: drop task {task_id} too, or keep task {used[0]}"
            )
    known = [i for i in planned if i not in dropped]
    earlier = _planned_tasks(calls or {}, known)
    approved: dict[str, str] = {}
    for task_id, args in sorted(edits.items()):
        if task_id in dropped:
            continue
        task = by_id[task_id]
        merged = {**task["args"], **dict(args)}
        try:
            edited = parse_task(
                {"tool": task["tool"], "args": merged},
                task_id,
                tools,
                [i for i in known if i < task_id],
                earlier={i: t for i, t in earlier.items() if i < task_id},
            )
        except PlanError as exc:
            raise InvalidApproval(f"task {task_id} as edited is not valid: {exc.message}") from exc
        # An edit changes the arguments, never the condition the call runs under (`branches`).
        edited.condition = _condition(task["call"], task_id, known)
        approved[str(task_id)] = edited.call_text()
    return PlanApproved(approved=sorted(by_id), edits=approved, dropped=dropped)


def _planned_tasks(calls: Mapping[int, str], known: Iterable[int]) -> dict[int, Task]:
    """The `known` tasks as planned (`calls`), read back; a call that no longer reads is left
    out (what it returns is then not known, as in a plan)."""
    tasks = {}
    for task_id in known:
        call = calls.get(task_id)
        if call is None:
            continue
        try:
            tasks[task_id] = parse_call(call, task_id, [i for i in known if i < task_id])
        except PlanError:
            continue
    return tasks


def _condition(call: str, task_id: int, known: Iterable[int]) -> Condition | None:
    """The condition of a waiting task's `call` as planned (None: it has none)."""
    try:
        return parse_call(call, task_id, [i for i in known if i < task_id]).condition
    except PlanError:
        return None
