"""The recovery engine: applies the configured patterns to each failure, for a task's tool
(`TaskRecoverer`) and for the run's LLM requests (`LLMRecoverer`).

The policy (classes, patterns, the registry) is `recovery`; this module only runs it.  Each
action a pattern takes on a task is recorded once, in the task's record and as a `TaskRecovery`
event, with everything known at that moment, so the journal and `--json` hold the same entries;
each LLM request sent again is an `LLMRetry` event.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import anyio

from .errors import LLMError, LLMRateLimitError, TaskError, UserError
from .events import EventBus, LLMRetry, TaskRecovery
from .invoker import Invoker
from .llm.base import Purpose
from .records import TaskRecord
from .recovery import (
    Action,
    CallAgain,
    EscalationHandler,
    Fail,
    Failure,
    Pattern,
    Recovery,
    Retry,
    SubplanAnswer,
    UseResult,
    Vote,
    classify,
)
from .tools import Tool, ToolRegistry

__all__ = ["Decomposer", "LLMRecoverer", "TaskRecoverer"]

# Runs the sub-plan for a failed task at the given depth.
Decomposer = Callable[[TaskRecord, TaskError, int], Awaitable[SubplanAnswer]]


@dataclass(slots=True)
class TaskRecoverer:
    """Calls a task's tool and applies the configured patterns to each failure, emitting a
    `TaskRecovery` event for every action, until a result or a failure no pattern takes."""

    recovery: Recovery
    tools: ToolRegistry
    invoker: Invoker
    bus: EventBus
    decompose: Decomposer | None = None
    escalate: EscalationHandler | None = None
    run_id: str = ""
    depth: int = 0
    decomposition_depth: int = 2
    _rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self._rng = self.recovery.rng()

    async def call(self, rec: TaskRecord, tool: Tool, arguments: Mapping[str, Any]) -> Any:
        vote = self.recovery.votes.get(tool.name)
        if vote is None or vote.k == 1 or tool.side_effects:
            return await self._call(rec, tool, arguments)
        return await self._vote(rec, tool, arguments, vote)

    async def _vote(
        self, rec: TaskRecord, tool: Tool, arguments: Mapping[str, Any], vote: Vote
    ) -> Any:
        answers: list[Any] = []
        errors: list[TaskError] = []

        async def one() -> None:
            try:
                answers.append(await self._call(rec, tool, arguments))
            except TaskError as err:
                errors.append(err)

        async with anyio.create_task_group() as tg:
            for _ in range(vote.k):
                tg.start_soon(one)
        if not answers:
            raise errors[0]
        tally = Counter(_ballot(a) for a in answers)
        winner, agreeing = tally.most_common(1)[0]
        errors_text = "; ".join(e.message for e in errors)
        self._acted(
            rec, tool, vote, "vote", errors_text, k=vote.k, agreeing=agreeing, answers=len(answers)
        )
        return next(a for a in answers if _ballot(a) == winner)

    async def _call(self, rec: TaskRecord, tool: Tool, arguments: Mapping[str, Any]) -> Any:
        state: Failure | None = None
        while True:
            try:
                return await self.invoker.execute(rec.task, tool, arguments)
            except TaskError as err:
                state = self._failure(rec, tool, arguments, err, state)
                pattern, action = await self._decide(state)
                if pattern is None or action is None:
                    raise
                if isinstance(action, CallAgain) and rec.attempts >= self.recovery.max_calls:
                    raise  # the bound holds whatever the patterns say
                self._acted(rec, tool, pattern, state.category, err.message, **action.detail)
                state.acted.add(pattern.name)
                if isinstance(action, UseResult):
                    return self._supplied(rec, tool, arguments, action.value)
                if isinstance(action, Fail):
                    if action.error is not None:
                        raise action.error from err
                    raise
                if action.tool is not None and action.tool != tool.name:
                    tool = self.tools[action.tool]
                    state.tried.add(tool.name)
                    state.retries = 0
                else:
                    state.retries += 1
                rec.attempts += 1
                if action.delay > 0:
                    await anyio.sleep(action.delay)

    def _supplied(
        self, rec: TaskRecord, tool: Tool, arguments: Mapping[str, Any], value: Any
    ) -> Any:
        """A result a pattern supplies, held to the rules for the task's own tool's results."""
        return self.invoker.checked(rec.task, self.tools[rec.task.tool], arguments, value)

    def _failure(
        self,
        rec: TaskRecord,
        tool: Tool,
        arguments: Mapping[str, Any],
        err: TaskError,
        previous: Failure | None,
    ) -> Failure:
        """The failure as patterns see it; what earlier failures of this task taught carries on."""
        decompose = self.decompose

        async def decompose_at(depth: int) -> SubplanAnswer:
            assert decompose is not None
            return await decompose(rec, err, depth)

        def report(pattern: Pattern, **detail: Any) -> None:
            self._acted(rec, tool, pattern, classify(err), err.message, **detail)

        return Failure(
            run_id=self.run_id,
            task_id=rec.task.id,
            call=rec.call or rec.task.call_text(),  # a fan-out element: its own call
            tool=tool,
            arguments=arguments,
            error=err,
            category=classify(err),
            attempts=rec.attempts,
            tools=self.tools,
            rng=self._rng,
            report=report,
            retries=previous.retries if previous else 0,
            tried=previous.tried if previous else {tool.name},
            acted=previous.acted if previous else set(),
            depth=self.depth,
            decomposition_depth=self.decomposition_depth,
            decompose=decompose_at if decompose is not None else None,
            escalate=self.escalate,
        )

    async def _decide(self, failure: Failure) -> tuple[Pattern | None, Action | None]:
        """The first configured pattern that acts on `failure`, and what it decided.  A pattern
        that fails or answers nonsense is a bug in it: a UserError naming it."""
        for pattern in self.recovery.patterns(failure.category, failure.tool.name):
            try:
                action = await pattern.handle(failure)
            except (TaskError, anyio.get_cancelled_exc_class()):
                raise
            except Exception as exc:
                raise UserError(
                    f"the recovery pattern {pattern!r} failed on task {failure.task_id}: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            if action is None:
                continue
            _check_action(pattern, action, self.tools)
            return pattern, action
        return None, None

    def _acted(
        self,
        rec: TaskRecord,
        tool: Tool,
        pattern: Pattern,
        category: str,
        error: str,
        **detail: Any,
    ) -> None:
        event = TaskRecovery(
            task_id=rec.task.id,
            tool=tool.name,
            pattern=pattern.name,
            category=category,
            error=error,
            attempt=rec.attempts,
            detail=detail,
            item=rec.item,
        )
        rec.recovery.append(event.record())
        self.bus.emit(event)


class LLMRecoverer:
    """Sends an LLM request again after a failure the policy retries (only `Retry` applies to
    `llm.*` classes), while the response has produced no text: text already given to the
    caller cannot be taken back.  Each resend is an `LLMRetry` event."""

    def __init__(self, recovery: Recovery | None, bus: EventBus) -> None:
        self.recovery = recovery
        self.bus = bus
        self._rng = recovery.rng() if recovery is not None else None

    async def stream(
        self, send: Callable[[], AsyncGenerator[str, None]], call: int, purpose: Purpose
    ) -> AsyncGenerator[str, None]:
        """The text of `send()`'s response, sending it again as the policy says."""
        retries = 0
        while True:
            produced = False
            try:
                async with aclosing(send()) as texts:
                    async for text in texts:
                        produced = True
                        yield text
                return
            except LLMError as exc:
                wait = None if produced else self._delay(exc, retries)
                if wait is None:
                    raise
                retries += 1
                self.bus.emit(
                    LLMRetry(
                        call=call,
                        purpose=purpose,
                        category=classify(exc),
                        error=exc.message,
                        attempt=retries,
                        delay=round(wait, 3),
                    )
                )
                await anyio.sleep(wait)

    def _delay(self, error: LLMError, retries: int) -> float | None:
        """How long to wait before sending the request again, or None to give up."""
        if self.recovery is None or self._rng is None:
            return None
        at_least = error.retry_after if isinstance(error, LLMRateLimitError) else None
        for pattern in self.recovery.patterns(classify(error)):
            if isinstance(pattern, Retry):
                wait = pattern.wait(retries, self._rng, at_least)
                if wait is not None:
                    return wait
        return None


def _check_action(pattern: Pattern, action: object, tools: ToolRegistry) -> None:
    if not isinstance(action, CallAgain | UseResult | Fail):
        raise UserError(
            f"the recovery pattern {pattern!r} returned {action!r}; handle() returns None, "
            "CallAgain, UseResult or Fail"
        )
    if not isinstance(action.detail, dict):
        raise UserError(f"the recovery pattern {pattern!r} gave a detail that is not a dict")
    if isinstance(action, CallAgain):
        if action.tool is not None and action.tool not in tools:
            raise UserError(
                f"the recovery pattern {pattern!r} asked to call {action.tool!r}, which is not "
                f"a tool of this runtime ({', '.join(sorted(tools))})"
            )
        if not action.delay >= 0:
            raise UserError(f"the recovery pattern {pattern!r} asked for a delay of {action.delay}")
    if isinstance(action, Fail) and not isinstance(action.error, TaskError | None):
        raise UserError(
            f"the recovery pattern {pattern!r} failed the task with {action.error!r}; "
            "Fail(error=...) takes a planweave TaskError"
        )


def _ballot(value: Any) -> str:
    """A canonical form of an answer, so equal answers count as one choice."""
    return json.dumps(value, sort_keys=True, default=repr)
