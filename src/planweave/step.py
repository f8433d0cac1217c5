"""One tool call as a step of a run: the life cycle a scheduled task and a fan-out's element share.

A step takes the outcome an earlier session recorded for it when its call is the same (resume),
or is recorded as running (`TaskStarted`, write-ahead: before its tool is called), goes through
the recoverer (or the invoker alone), and has its result put in the journal's form; it ends in
one event (`TaskFinished`, `TaskFailed` or `TaskCancelled`) that carries its record's times and
attempts.  The tools' own concurrency limits (`@tool(max_concurrency=)`) live here too: the
scheduler's workers take a slot without waiting, a fan-out's elements wait for one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from .errors import ResultNotStorable, TaskError
from .events import EventBus, TaskCancelled, TaskFailed, TaskFinished, TaskStarted
from .invoker import Invoker
from .plan import format_args
from .records import Recorded, RecordedItem, TaskRecord, TaskStatus
from .redaction import redact_value
from .tools import Tool, ToolRegistry

if TYPE_CHECKING:
    from .recoverer import TaskRecoverer

__all__ = ["Outcome", "StepRunner"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a step ended: its result and the result's stored form, or its error."""

    result: Any = None
    stored: Any = None
    error: TaskError | None = None


class StepRunner:
    """Runs the steps of one scheduler (its tasks, and its fan-outs' elements).  `store` turns
    a result into its journal form (raising TypeError when it has none); `released(tool)` is
    called each time an element gives a slot of `tool` back, so that a task parked on that
    limit can run."""

    def __init__(
        self,
        tools: ToolRegistry,
        invoker: Invoker,
        bus: EventBus,
        *,
        recoverer: TaskRecoverer | None = None,
        store: Callable[[Any], Any] | None = None,
        released: Callable[[str], None] = lambda tool: None,
    ) -> None:
        self.invoker = invoker
        self.bus = bus
        self.recoverer = recoverer
        self.store = store
        self.released = released
        self.limiters: Mapping[str, anyio.CapacityLimiter] = {
            t.name: anyio.CapacityLimiter(t.max_concurrency)
            for t in tools.values()
            if t.max_concurrency is not None
        }

    def reuse(self, rec: TaskRecord, earlier: Recorded | RecordedItem) -> Outcome:
        """The outcome an earlier session recorded for the step, taken instead of a call."""
        rec.reused = True
        rec.start, rec.end, rec.attempts = earlier.start, earlier.end, earlier.attempts
        if isinstance(earlier, Recorded) and earlier.outcome == "failed":
            assert earlier.error is not None
            return Outcome(error=earlier.error)
        return Outcome(earlier.result, earlier.stored)

    def recall(self, rec: TaskRecord, earlier: Recorded) -> Outcome:
        """The outcome an earlier turn of the run's thread recorded for the same call of a pure
        tool, taken instead of a call (`threads`)."""
        rec.recalled = earlier.run_id
        rec.start = rec.end = self.bus.now()
        return Outcome(earlier.result, earlier.stored)

    def begin(self, rec: TaskRecord) -> None:
        """The step's attempt begins now (its arguments may still fail to resolve)."""
        rec.status = TaskStatus.RUNNING
        rec.start = self.bus.now()
        rec.attempts += 1

    def started(
        self, rec: TaskRecord, arguments: dict[str, Any], *, items: int | None = None
    ) -> None:
        """Record the step as running: before its tool is called (write-ahead), so that a crash
        from here on leaves it in flight.  A fan-out task starts with its `items`."""
        self.bus.emit(
            TaskStarted(
                task_id=rec.task.id,
                tool=rec.task.tool,
                arguments=arguments,
                start=rec.start or 0.0,
                attempt=rec.attempts,
                item=rec.item,
                items=items,
            )
        )

    async def run(self, rec: TaskRecord, tool: Tool, arguments: dict[str, Any]) -> Outcome:
        """Call `tool` as the begun step `rec`, through the recoverer when there is one; the
        outcome, with the step's end time set."""
        self.started(rec, arguments)
        try:
            if self.recoverer is None:
                result = await self.invoker.execute(rec.task, tool, arguments)
            else:
                result = await self.recoverer.call(rec, tool, arguments)
        except TaskError as err:
            return self.failure(rec, err)
        return self.success(rec, arguments, result)

    def success(self, rec: TaskRecord, arguments: Mapping[str, Any], result: Any) -> Outcome:
        """The step's result with its stored form (a result the journal cannot store fails the
        step); its end time set."""
        try:
            stored = self._stored(rec, arguments, result)
        except TaskError as err:
            return self.failure(rec, err)
        rec.end = self.bus.now()
        return Outcome(result, stored)

    def failure(self, rec: TaskRecord, err: TaskError) -> Outcome:
        rec.end = self.bus.now()
        return Outcome(error=err)

    def _stored(self, rec: TaskRecord, arguments: Mapping[str, Any], result: Any) -> Any:
        if self.store is None:
            return None
        try:
            # Journaled with known secrets masked (a tool may return a token): a resumed run
            # reads the masked text where this one had the value.
            return redact_value(self.store(result))
        except TypeError as exc:
            raise ResultNotStorable(
                f"the tool returned {exc}, which the journal cannot store; return plain data "
                "(JSON types, tuples, sets, dates), a pydantic model or a dataclass",
                task_id=rec.task.id,
                tool=rec.task.tool,
                arguments=format_args((), dict(arguments)),
                cause=type(exc).__name__,
            ) from exc

    def ended(self, rec: TaskRecord, outcome: Outcome) -> None:
        """The step's end, on its record and as its event."""
        if outcome.error is not None:
            rec.status, rec.error = TaskStatus.FAILED, outcome.error
            self.bus.emit(
                TaskFailed(
                    **_ended(rec),
                    duration=rec.duration,
                    error=outcome.error.to_dict(),
                    reused=rec.reused,
                )
            )
            return
        rec.status, rec.result = TaskStatus.DONE, outcome.result
        self.bus.emit(
            TaskFinished(
                **_ended(rec),
                duration=rec.duration,
                result=outcome.result,
                stored=outcome.stored,
                reused=rec.reused,
                recalled=rec.recalled,
            )
        )

    def cancelled(self, rec: TaskRecord) -> None:
        if rec.start is not None:
            rec.end = self.bus.now()
        rec.status = TaskStatus.CANCELLED
        self.bus.emit(TaskCancelled(**_ended(rec)))

    @asynccontextmanager
    async def slot(self, tool: Tool) -> AsyncIterator[None]:
        """Hold one of the tool's own concurrency slots (when it has a limit), waiting for one;
        then hand it on to a task parked on it (`released`)."""
        limiter = self.limiters.get(tool.name)
        if limiter is None:
            yield
            return
        await limiter.acquire()
        try:
            yield
        finally:
            limiter.release()
            self.released(tool.name)


def _ended(rec: TaskRecord) -> dict[str, Any]:
    """The fields every step-ending event copies from the step's record."""
    return {
        "task_id": rec.task.id,
        "tool": rec.task.tool,
        "start": rec.start,
        "end": rec.end,
        "attempts": rec.attempts,
        "item": rec.item,
    }
