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
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup
from pydantic_core import to_jsonable_python

from .errors import DependencyFailed, ResultNotStorable, TaskError
from .events import (
    EventBus,
    TaskCancelled,
    TaskFailed,
    TaskFinished,
    TaskPlanned,
    TaskSkipped,
    TaskStarted,
)
from .executor import Executor
from .plan import Ref, Task, Template, format_args, render_text
from .recovery import TaskRecoverer
from .tools import ToolRegistry

__all__ = ["Recorded", "Scheduler", "TaskRecord", "TaskStatus", "jsonable", "plan_json"]


class TaskStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


_ENDED = frozenset({TaskStatus.DONE, TaskStatus.FAILED, TaskStatus.SKIPPED, TaskStatus.CANCELLED})
_BROKEN = frozenset({TaskStatus.FAILED, TaskStatus.SKIPPED, TaskStatus.CANCELLED})


def plan_json(value: Any) -> Any:
    """A planned argument as JSON: references and templates read as they do in the plan."""
    if isinstance(value, Ref | Template):
        return str(value)
    if isinstance(value, list | tuple):
        return [plan_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plan_json(v) for k, v in value.items()}
    return jsonable(value)


def jsonable(value: Any) -> Any:
    """A JSON-ready copy of a tool result; objects JSON cannot hold become their `str()`."""
    return to_jsonable_python(value, fallback=str)


@dataclass(slots=True, eq=False)
class TaskRecord:
    """A task and everything that happened to it."""

    task: Task
    plan_round: int = 0
    status: TaskStatus = TaskStatus.PENDING
    start: float | None = None
    end: float | None = None
    result: Any = None
    error: TaskError | None = None
    attempts: int = 0
    reused: bool = False
    recovery: list[dict[str, Any]] = field(default_factory=list)
    waiting: int = 0
    dependents: list[TaskRecord] = field(default_factory=list)

    @property
    def ended(self) -> bool:
        return self.status in _ENDED

    def observation(self, limit: int = 2000) -> str:
        """What the joiner and replanner read about this task."""
        if self.status is TaskStatus.DONE:
            text = render_text(self.result)
        elif self.error is not None:
            text = f"ERROR: {self.error.message}"
        else:
            text = f"({self.status.value})"
        return (
            text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"
        )

    def to_dict(self) -> dict[str, Any]:
        task = self.task
        data: dict[str, Any] = {
            "id": task.id,
            "tool": task.tool,
            "args": {name: plan_json(value) for name, value in self.task.bound.items()},
            "call": task.call_text(),
            "dependencies": list(task.deps),
            "status": self.status.value,
            "start": self.start,
            "end": self.end,
            "plan_round": self.plan_round,
            "attempts": self.attempts,
        }
        if self.status is TaskStatus.DONE:
            data["result"] = jsonable(self.result)
        if self.error is not None:
            data["error"] = self.error.to_dict()
        if task.thought:
            data["thought"] = task.thought
        if self.recovery:
            data["recovery"] = self.recovery
        return data


@dataclass(frozen=True, slots=True)
class Recorded:
    """A task's outcome from an earlier session of a journaled run.  A task planned again with
    the same id and the same call takes this outcome instead of calling its tool."""

    call: str
    outcome: Literal["done", "failed"]
    result: Any = None
    stored: Any = None
    error: TaskError | None = None
    start: float | None = None
    end: float | None = None


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
        executor: Executor,
        bus: EventBus,
        *,
        max_concurrency: int = 64,
        store: Callable[[Any], Any] | None = None,
        recorded: Mapping[int, Recorded] | None = None,
        recoverer: TaskRecoverer | None = None,
    ) -> None:
        """`store` turns a result into its stored form (raising TypeError when it has none);
        `recorded` holds outcomes to reuse from an earlier session of the run."""
        self.tools = tools
        self.store = store
        self.recoverer = recoverer
        self.recorded = dict(recorded or {})
        self.executor = executor
        self.bus = bus
        self.records: dict[int, TaskRecord] = {}
        self.results: dict[int, Any] = {}
        self.plan_round = 0
        self._limiter = anyio.CapacityLimiter(max_concurrency)
        self._max_workers = max_concurrency
        self._tool_limiters: Mapping[str, anyio.CapacityLimiter] = {
            t.name: anyio.CapacityLimiter(t.max_concurrency)
            for t in tools.values()
            if t.max_concurrency is not None
        }
        self._tg: TaskGroup | None = None
        self._ready: deque[TaskRecord] = deque()
        # Ready tasks whose tool is at its own limit, by tool, until one of its calls ends.
        self._parked: defaultdict[str, deque[TaskRecord]] = defaultdict(deque)
        self._workers = 0
        self._busy = 0  # workers inside a task, between taking it and announcing its outcome

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Scheduler]:
        """A scope in which added tasks run; leaving it waits for every task that was added.

        If the scope is cancelled, every tool in flight is cancelled and recorded as such.
        """
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                yield self
        finally:
            self._tg = None
            self._ready.clear()
            self._parked.clear()
            for rec in self.records.values():
                if not rec.ended:
                    self._cancelled(rec)

    def add(self, task: Task) -> TaskRecord | None:
        """Accept a validated task; start it now if its inputs are ready."""
        if task.is_join:
            return None
        rec = TaskRecord(task, self.plan_round)
        self.records[task.id] = rec
        args = format_args(task.args, task.kwargs)
        self.bus.emit(
            TaskPlanned(
                task_id=task.id,
                tool=task.tool,
                args=args,
                deps=list(task.deps),
                thought=task.thought,
                plan_round=self.plan_round,
                bound={name: plan_json(value) for name, value in task.bound.items()},
                side_effects=self.tools[task.tool].side_effects,
            )
        )
        earlier = self.recorded.pop(task.id, None)
        if earlier is not None and earlier.call == f"{task.tool}({args})":
            self._reuse(rec, earlier)
            return rec
        for dep_id in task.deps:
            dep = self.records[dep_id]
            if dep.status is TaskStatus.DONE:
                continue
            if dep.status in _BROKEN:
                self._skip(rec, dep)
                return rec
            rec.waiting += 1
            dep.dependents.append(rec)
        if rec.waiting == 0:
            self._dispatch(rec)
        return rec

    def _dispatch(self, rec: TaskRecord) -> None:
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
                tool_limiter = self._tool_limiters.get(tool)
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

    def _reuse(self, rec: TaskRecord, earlier: Recorded) -> None:
        rec.reused = True
        rec.start, rec.end = earlier.start, earlier.end
        if earlier.outcome == "done":
            self._done(rec, earlier.result, earlier.stored)
        else:
            assert earlier.error is not None
            self._failed(rec, earlier.error)

    async def _call(self, rec: TaskRecord) -> Callable[[], None]:
        """Call the task's tool; return what announces the outcome (and starts dependents)."""
        task = rec.task
        tool = self.tools[task.tool]
        rec.status = TaskStatus.RUNNING
        rec.start = self.bus.now()
        rec.attempts += 1
        try:
            arguments = self.executor.resolve_arguments(task, task.bound, self.results)
            # Recorded before the tool is called (write-ahead): a crash from here on leaves
            # the task marked as in flight.
            self.bus.emit(TaskStarted(task_id=task.id, tool=task.tool, arguments=arguments))
            if self.recoverer is None:
                result = await self.executor.execute(task, tool, arguments)
            else:
                result = await self.recoverer.call(rec, tool, arguments)
            stored = self._stored(rec, arguments, result)
        except TaskError as err:
            rec.end = self.bus.now()
            return partial(self._failed, rec, err)
        rec.end = self.bus.now()
        return partial(self._done, rec, result, stored)

    def _stored(self, rec: TaskRecord, arguments: Mapping[str, Any], result: Any) -> Any:
        if self.store is None:
            return None
        try:
            return self.store(result)
        except TypeError as exc:
            raise ResultNotStorable(
                f"the tool returned {exc}, which the journal cannot store; return plain data "
                "(JSON types, tuples, sets, dates), a pydantic model or a dataclass",
                task_id=rec.task.id,
                tool=rec.task.tool,
                arguments=format_args((), dict(arguments)),
                cause=type(exc).__name__,
            ) from exc

    def _done(self, rec: TaskRecord, result: Any, stored: Any = None) -> None:
        rec.status = TaskStatus.DONE
        rec.result = result
        self.results[rec.task.id] = result
        end = rec.end if rec.end is not None else self.bus.now()
        # Subscribers (a journal) see the result before any dependent starts.
        self.bus.emit(
            TaskFinished(
                task_id=rec.task.id,
                tool=rec.task.tool,
                duration=end - (rec.start if rec.start is not None else end),
                result=result,
                stored=stored,
                reused=rec.reused,
            )
        )
        for dependent in rec.dependents:
            if dependent.status is TaskStatus.PENDING:
                dependent.waiting -= 1
                if dependent.waiting == 0:
                    self._dispatch(dependent)

    def _failed(self, rec: TaskRecord, err: TaskError) -> None:
        _locate(err, rec)
        rec.status = TaskStatus.FAILED
        rec.error = err
        end = rec.end if rec.end is not None else self.bus.now()
        self.bus.emit(
            TaskFailed(
                task_id=rec.task.id,
                tool=rec.task.tool,
                duration=end - (rec.start if rec.start is not None else end),
                error=err.to_dict(),
                reused=rec.reused,
            )
        )
        for dependent in rec.dependents:
            if dependent.status is TaskStatus.PENDING:
                self._skip(dependent, rec)

    def _skip(self, rec: TaskRecord, upstream: TaskRecord) -> None:
        task = rec.task
        rec.status = TaskStatus.SKIPPED
        rec.error = DependencyFailed(
            f"not run because task {upstream.task.id} ({upstream.task.tool}) "
            f"{upstream.status.value}",
            task_id=task.id,
            tool=task.tool,
            arguments=format_args(task.args, task.kwargs),
            cause=f"task {upstream.task.id}",
        )
        _locate(rec.error, rec)
        self.bus.emit(TaskSkipped(task_id=task.id, tool=task.tool, error=rec.error.to_dict()))
        for dependent in rec.dependents:
            if dependent.status is TaskStatus.PENDING:
                self._skip(dependent, rec)

    def _cancelled(self, rec: TaskRecord) -> None:
        if rec.start is not None:
            rec.end = self.bus.now()
        rec.status = TaskStatus.CANCELLED
        self.bus.emit(TaskCancelled(task_id=rec.task.id, tool=rec.task.tool))
