"""The task fetching unit: dependency counting, dispatch, concurrency limits, cancellation.

Event-driven, never polling: each task holds the number of its unfinished dependencies; when the
last one lands, the task joins the ready queue at once, even while the planner is still streaming
the rest of the plan.  Ready tasks are run by a pool of workers in the run's task group: one
worker per free concurrency slot at most, each taking task after task from the queue and ending
when the queue is empty.  Spawning a task per tool call would cost more than most calls.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from .approval import Gate, waiting_task
from .branches import holds, why_not
from .errors import AwaitingApproval, BranchNotTaken, DependencyFailed, TaskError
from .events import EventBus, TaskPlanned, TaskSkipped
from .fanout import FanOut, FanOutTally
from .invoker import Invoker
from .plan import MAX_FANOUT, MAX_FANOUT_TOTAL, Task, format_args
from .records import BROKEN, Recorded, RecordedItem, TaskRecord, TaskStatus, plan_json
from .step import Outcome, StepRunner
from .tools import ToolRegistry

if TYPE_CHECKING:
    from .recoverer import TaskRecoverer

__all__ = ["Scheduler"]


def _locate(err: TaskError, rec: TaskRecord) -> None:
    """Name where in the plan a failure comes from."""
    task = rec.task
    if err.line is None and task.line:
        err.line = task.line.strip()
    if err.plan_round is None:
        err.plan_round = rec.plan_round
    if err.upstream is None:
        err.upstream = list(task.deps)


# Tasks a worker runs back to back before it lets the rest of the event loop run: a task whose
# tool returns without waiting never yields on its own.
_YIELD_EVERY = 16


class Scheduler:
    """Dispatches every task the moment its inputs are ready, within concurrency limits."""

    def __init__(
        self,
        tools: ToolRegistry,
        invoker: Invoker,
        bus: EventBus,
        *,
        max_concurrency: int = 64,
        store: Callable[[Any], Any] | None = None,
        recorded: Mapping[int, Recorded] | None = None,
        recoverer: TaskRecoverer | None = None,
        gate: Gate | None = None,
        items: Mapping[int, Mapping[int, RecordedItem]] | None = None,
        max_fanout: int = MAX_FANOUT,
        max_fanout_total: int = MAX_FANOUT_TOTAL,
        fanout_tally: FanOutTally | None = None,
        remembered: Mapping[str, Recorded] | None = None,
    ) -> None:
        """`store` turns a result into its stored form (raising TypeError when it has none);
        `recorded` holds outcomes to reuse from an earlier session of the run, `items` the
        fan-out elements it finished; `gate` says which tasks wait for a person's approval,
        and applies the approvals given; `max_fanout` bounds the elements of one fan-out,
        `max_fanout_total` those of all the fan-outs the scheduler runs (or `fanout_tally`,
        a count shared with other schedulers of the run, its sub-plans').  `remembered` holds,
        by call, outcomes of pure tools' calls from earlier turns of the run's thread: a task
        with the same call takes one instead of calling its tool (`threads`)."""
        self.tools = tools
        self.gate = gate
        self.recorded = dict(recorded or {})
        self.remembered = dict(remembered or {})
        self.invoker = invoker
        self.bus = bus
        self.records: dict[int, TaskRecord] = {}
        self.join: Task | None = None  # the last plan's join
        self.results: dict[int, Any] = {}
        self.plan_round = 0
        self._limiter = anyio.CapacityLimiter(max_concurrency)
        self._max_workers = max_concurrency
        self._steps = StepRunner(
            tools, invoker, bus, recoverer=recoverer, store=store, released=self._tool_released
        )
        self._fan_out = FanOut(
            self._steps,
            recorded=items,
            max_items=max_fanout,
            tally=fanout_tally if fanout_tally is not None else FanOutTally(max_fanout_total),
        )
        self._tg: TaskGroup | None = None
        self._ready: deque[TaskRecord] = deque()
        # Ready tasks whose tool is at its own limit, by tool, until one of its calls ends.
        self._parked: defaultdict[str, deque[TaskRecord]] = defaultdict(deque)
        self._workers = 0
        self._busy = 0  # workers inside a task, between taking it and announcing its outcome
        # Tasks waiting for approval: never dispatched in this session.
        self._held: dict[int, TaskRecord] = {}

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Scheduler]:
        """A scope in which added tasks run; leaving it waits for every task that was added.

        If the scope is cancelled, every tool in flight is cancelled and recorded as such.
        If tasks wait for approval once every other task has ended, raises AwaitingApproval
        (the waiting tasks, and those that need their results, stay pending).
        """
        waiting: list[TaskRecord] = []
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                yield self
            waiting = [r for r in self._held.values() if r.status is TaskStatus.PENDING]
        finally:
            self._tg = None
            self._ready.clear()
            self._parked.clear()
            for rec in self.records.values():
                if not rec.ended and not waiting:
                    self._steps.cancelled(rec)
        if waiting:
            raise AwaitingApproval(
                f"{len(waiting)} task(s) wait for approval",
                tasks=[waiting_task(rec, self.tools) for rec in waiting],
            )

    def add(self, task: Task) -> TaskRecord | None:
        """Accept a validated task; start it now if its inputs are ready."""
        if task.is_join:
            self.join = task  # the plan's end, and the answer it may name
            return None
        if self.gate is not None:
            reviewed = self.gate.review(task, self.records)
            if reviewed is None:
                return None  # dropped when the plan was approved
            task = reviewed
        rec = TaskRecord(task, self.plan_round)
        call = task.call_text()
        # Announced before it is registered: a journal that refuses the task (PlanDiverged on
        # resume) leaves nothing behind for the scheduler to cancel over the recorded step.
        self.bus.emit(
            TaskPlanned(
                task_id=task.id,
                tool=task.tool,
                call=call,
                deps=list(task.deps),
                thought=task.thought,
                plan_round=self.plan_round,
                args={name: plan_json(value) for name, value in task.bound.items()},
                side_effects=self.tools[task.tool].side_effects,
            )
        )
        self.records[task.id] = rec
        earlier = self.recorded.pop(task.id, None)
        if earlier is not None and earlier.call == call:
            if earlier.outcome == "skipped":  # a branch not taken: decided, not evaluated again
                assert earlier.error is not None
                self._skip(rec, rec, earlier.error)
                return rec
            self._ended(rec, self._steps.reuse(rec, earlier))
            return rec
        # A call recalled from an earlier turn would skip its condition, whose `$N` meant
        # other tasks there.
        memo = self.remembered.get(call) if task.condition is None else None
        if earlier is None and memo is not None and self.tools[task.tool].pure:
            self._ended(rec, self._steps.recall(rec, memo))
            return rec
        for dep_id in task.deps:
            dep = self.records[dep_id]
            if dep.status is TaskStatus.DONE or _gathers(dep, rec):
                continue
            if dep.status in BROKEN:
                self._skip(rec, dep)
                return rec
            rec.waiting += 1
            dep.dependents.append(rec)
        if self.gate is not None and self.gate.holds(task, self.plan_round):
            self._held[task.id] = rec
        if rec.waiting == 0:
            self._dispatch(rec)
        return rec

    def _dispatch(self, rec: TaskRecord) -> None:
        if rec.task.id in self._held:
            return
        if self._tg is None:
            raise RuntimeError("Scheduler.add() called outside Scheduler.running()")
        self._ready.append(rec)
        # A worker that is not busy takes the task without help; a new one is started only
        # when the queue outgrows those, and never beyond the concurrency limit.
        if len(self._ready) > self._workers - self._busy and self._workers < self._max_workers:
            self._workers += 1
            self._tg.start_soon(self._work, name="planweave worker")

    async def _work(self) -> None:
        """Run ready tasks one after another until none is left, holding one global slot."""
        # There are never more workers than slots, so this takes a free one without waiting.
        self._limiter.acquire_nowait()
        try:
            ran = 0
            while self._ready:
                rec = self._ready.popleft()
                tool = rec.task.tool
                # A fan-out's elements take the tool's slots one by one (StepRunner.slot).
                fan_out = rec.task.fan_out is not None
                tool_limiter = None if fan_out else self._steps.limiters.get(tool)
                if tool_limiter is not None:
                    try:
                        tool_limiter.acquire_nowait()
                    except anyio.WouldBlock:
                        # The worker whose call of this tool ends next puts it back in line.
                        self._parked[tool].append(rec)
                        continue
                self._busy += 1
                try:
                    announce = await self._call(rec)
                finally:
                    self._busy -= 1
                    if tool_limiter is not None:
                        tool_limiter.release()
                        parked = self._parked.get(tool)
                        if parked:
                            self._ready.appendleft(parked.popleft())
                # Announced once this worker counts as free, so that it runs the first of the
                # dependents this releases itself instead of starting a worker for it.
                announce()
                ran += 1
                if ran % _YIELD_EVERY == 0:
                    await anyio.lowlevel.checkpoint()
        finally:
            self._workers -= 1
            self._limiter.release()

    def _tool_released(self, tool: str) -> None:
        """A fan-out's element gave a slot of `tool` back: the first task parked on it runs."""
        parked = self._parked.get(tool)
        if parked:
            self._dispatch(parked.popleft())

    async def _call(self, rec: TaskRecord) -> Callable[[], None]:
        """Call the task's tool, if its condition holds; return what announces the outcome
        (and starts or skips dependents)."""
        task = rec.task
        tool = self.tools[task.tool]
        inputs = self._inputs(rec)
        try:
            if task.condition is not None and not holds(task.condition, inputs):
                not_taken = BranchNotTaken(why_not(task.condition, inputs), cause="condition")
                return partial(self._skip, rec, rec, not_taken)
        except TaskError as err:
            self._steps.begin(rec)
            return partial(self._ended, rec, self._steps.failure(rec, err))
        self._steps.begin(rec)
        try:
            if task.fan_out is not None:
                result = await self._fan_out.run(rec, tool, inputs)
                outcome = self._steps.success(rec, {}, result)
            else:
                arguments = self.invoker.resolve_arguments(task, tool, task.bound, inputs)
                outcome = await self._steps.run(rec, tool, arguments)
        except TaskError as err:
            outcome = self._steps.failure(rec, err)
        return partial(self._ended, rec, outcome)

    def _inputs(self, rec: TaskRecord) -> Mapping[int, Any]:
        """The results the task reads: a branch not taken reads as None in a task that gathers
        branches (one with a condition of its own)."""
        skipped = [
            dep
            for dep in rec.task.deps
            if dep not in self.results and _gathers(self.records[dep], rec)
        ]
        return {**self.results, **dict.fromkeys(skipped)} if skipped else self.results

    def _ended(self, rec: TaskRecord, outcome: Outcome) -> None:
        """Announce how the task ended, then start or skip its dependents."""
        if outcome.error is not None:
            _locate(outcome.error, rec)
        else:
            self.results[rec.task.id] = outcome.result
        # Subscribers (a journal) see the result before any dependent starts.
        self._steps.ended(rec, outcome)
        for dependent in rec.dependents:
            if dependent.status is not TaskStatus.PENDING:
                continue
            if outcome.error is not None:
                self._skip(dependent, rec)
            else:
                self._ready_one(dependent)

    def _ready_one(self, rec: TaskRecord) -> None:
        """One of the task's inputs has ended as the task can use it."""
        rec.waiting -= 1
        if rec.waiting == 0:
            self._dispatch(rec)

    def _skip(self, rec: TaskRecord, upstream: TaskRecord, why: TaskError | None = None) -> None:
        """Skip `rec` (`why`: its own reason, a branch not taken; else `upstream` ended
        without a result) and, transitively, every pending task that depends on it, but for a
        task that gathers branches (iteratively: a chain of thousands of tasks must not
        exhaust the stack)."""
        stack = [(rec, upstream)]
        while stack:
            rec, upstream = stack.pop()
            if rec.status is not TaskStatus.PENDING:
                continue  # reached twice (a diamond), or ended before it was reached
            if upstream is not rec and _gathers(upstream, rec):
                self._ready_one(rec)
                continue
            task = rec.task
            rec.status = TaskStatus.SKIPPED
            rec.error = why if upstream is rec and why is not None else _skipped(upstream)
            rec.error.task_id, rec.error.tool = task.id, task.tool
            rec.error.arguments = format_args(task.args, task.kwargs)
            _locate(rec.error, rec)
            self.bus.emit(
                TaskSkipped(
                    task_id=task.id,
                    tool=task.tool,
                    attempts=rec.attempts,
                    error=rec.error.to_dict(),
                )
            )
            # Reversed, so that dependents are skipped in the order they were added.
            stack.extend(
                (dependent, rec)
                for dependent in reversed(rec.dependents)
                if dependent.status is TaskStatus.PENDING
            )


def _gathers(upstream: TaskRecord, rec: TaskRecord) -> bool:
    """Whether `rec` runs although `upstream` was skipped: `upstream` is a branch not taken
    and `rec` has a condition of its own (it gathers branches; see `branches`)."""
    return rec.task.condition is not None and upstream.not_taken


def _skipped(upstream: TaskRecord) -> DependencyFailed:
    """Why a task is skipped for its input `upstream`: a branch not taken, or a failure."""
    up = upstream.task
    if upstream.not_taken:
        return BranchNotTaken(
            f"not run: it reads task {up.id} ({up.tool}), a branch not taken", cause=f"task {up.id}"
        )
    return DependencyFailed(
        f"not run because task {up.id} ({up.tool}) {upstream.status.value}", cause=f"task {up.id}"
    )
