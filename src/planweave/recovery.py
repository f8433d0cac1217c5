"""Recovery: every failure is classified, then handled by the patterns configured for its class.

Classes (`classify`):

    tool.transient  tool.permanent  tool.crash  tool.timeout  tool.invalid_arguments
    tool.output_too_large  tool.wrong_type  tool.dependency
    plan.syntax  plan.unknown_tool  plan.invalid_reference  plan.invalid_arguments
    plan.duplicate_id  plan.missing_join  joiner
    llm.connection  llm.rate_limit  llm.context_overflow  llm.stream_cut  llm.error
    budget  journal  cancelled

Patterns for a failed task are tried in the order configured, each while it still applies:
`Retry` (exponential backoff with jitter; never for a tool with side effects unless told),
`Fallback` (the same arguments to another tool), `Decompose` (the planner writes a sub-plan
for the failed call, whose answer becomes the task's result, recursively to the budget's depth),
`Escalate` (a person gives a result, asks for a retry, or lets it fail).  When none applies the
failure becomes an observation: the joiner sees it and may replan (bounded by `max_replans`).
Plan errors go back to the planner (repair, bounded by `max_repairs`); `Retry` on `llm.*`
classes re-sends a failed LLM request (honouring Retry-After).

    recovery = Recovery().on("tool.timeout", Retry(2), Fallback("search_mirror"), tool="search")
"""

from __future__ import annotations

import fnmatch
import inspect
import json
import random
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import TypeAdapter

from .errors import (
    ArgumentError,
    BudgetExceeded,
    DependencyFailed,
    DuplicateTaskError,
    InvalidReferenceError,
    JoinerError,
    JournalError,
    LLMConnectionError,
    LLMContextOverflow,
    LLMError,
    LLMRateLimitError,
    LLMStreamError,
    MissingJoinError,
    PlanError,
    PlanweaveError,
    ProjectionError,
    RunCancelled,
    TaskError,
    ToolArgumentError,
    ToolOutputError,
    ToolOutputTooLarge,
    ToolRejected,
    ToolTimeout,
    ToolTransient,
    UnknownToolError,
)
from .events import EventBus, TaskRecovery

if TYPE_CHECKING:
    from .executor import Executor
    from .scheduler import TaskRecord
    from .tools import Tool, ToolRegistry

__all__ = [
    "Budget",
    "Decompose",
    "Escalate",
    "Escalation",
    "Fallback",
    "Pattern",
    "Recovery",
    "Retry",
    "SubplanAnswer",
    "TaskRecoverer",
    "Vote",
    "classify",
]

_CLASSES: list[tuple[type[PlanweaveError], str]] = [
    (ToolTransient, "tool.transient"),
    (ToolRejected, "tool.permanent"),
    (ToolTimeout, "tool.timeout"),
    (ToolArgumentError, "tool.invalid_arguments"),
    (ProjectionError, "tool.invalid_arguments"),
    (ToolOutputTooLarge, "tool.output_too_large"),
    (ToolOutputError, "tool.wrong_type"),
    (DependencyFailed, "tool.dependency"),
    (TaskError, "tool.crash"),
    (UnknownToolError, "plan.unknown_tool"),
    (InvalidReferenceError, "plan.invalid_reference"),
    (ArgumentError, "plan.invalid_arguments"),
    (DuplicateTaskError, "plan.duplicate_id"),
    (MissingJoinError, "plan.missing_join"),
    (PlanError, "plan.syntax"),
    (JoinerError, "joiner"),
    (LLMConnectionError, "llm.connection"),
    (LLMRateLimitError, "llm.rate_limit"),
    (LLMContextOverflow, "llm.context_overflow"),
    (LLMStreamError, "llm.stream_cut"),
    (LLMError, "llm.error"),
    (BudgetExceeded, "budget"),
    (JournalError, "journal"),
    (RunCancelled, "cancelled"),
]


def classify(error: PlanweaveError) -> str:
    """The failure class of `error` (see the module docstring)."""
    for cls, name in _CLASSES:
        if isinstance(error, cls):
            return name
    return "error"


# ---------------------------------------------------------------------- patterns


@dataclass(frozen=True, slots=True)
class Pattern:
    """A way of handling a failure.  Subclass to add your own (see `Recovery.on`)."""

    @property
    def name(self) -> str:
        return type(self).__name__.lower()


@dataclass(frozen=True, slots=True)
class Retry(Pattern):
    """Call again, up to `attempts` calls in all, waiting base·factor^k seconds (capped at
    `max_delay`, ±`jitter` of it), or as long as the server's Retry-After says.  Tools with side
    effects are only retried with `side_effects=True`."""

    attempts: int = 3
    base: float = 0.2
    factor: float = 2.0
    max_delay: float = 10.0
    jitter: float = 0.25
    side_effects: bool = False

    def delay(self, retry: int, rng: random.Random, at_least: float | None = None) -> float:
        """Seconds before retry number `retry` (0-based); a server's Retry-After (`at_least`)
        replaces the backoff, plus up to `jitter` of it so that clients do not return at once."""
        if at_least is not None:
            return at_least * (1 + rng.uniform(0, self.jitter))
        wait = min(self.max_delay, self.base * self.factor**retry)
        return wait * (1 + rng.uniform(-self.jitter, self.jitter))


@dataclass(frozen=True, slots=True)
class Fallback(Pattern):
    """Call `tool` with the same arguments instead."""

    tool: str


@dataclass(frozen=True, slots=True)
class Decompose(Pattern):
    """Give the failed call to the planner as a sub-goal; the sub-plan's answer is the result."""


@dataclass(frozen=True, slots=True)
class Vote(Pattern):
    """For a tool whose answers vary (one backed by an LLM): call it `k` times at once and take
    the answer most calls agree on (MAKER-style voting).  Set per tool with `Recovery.vote`."""

    k: int = 3


@dataclass(frozen=True, slots=True)
class Escalate(Pattern):
    """Ask a person (the runtime's `escalate` handler): a result, a retry, or let it fail."""


@dataclass(frozen=True, slots=True)
class Escalation:
    """What the escalation handler is asked about, and (`decide`) how it answers."""

    run_id: str
    task_id: int
    tool: str
    call: str
    error: str
    category: str


EscalationAnswer = tuple[Literal["result", "retry", "fail"], Any]
EscalationHandler = Callable[[Escalation], Awaitable[EscalationAnswer]]


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits on a run; reaching one ends the run with what it has, naming the limit."""

    llm_calls: int | None = None
    tokens: int | None = None
    wall_s: float | None = None
    decomposition_depth: int = 2


# ---------------------------------------------------------------------- the registry


@dataclass(slots=True)
class _Rule:
    category: str  # an fnmatch pattern: "tool.*"
    tool: str | None
    patterns: tuple[Pattern, ...]


DEFAULT_RULES: list[tuple[str, tuple[Pattern, ...]]] = [
    ("tool.transient", (Retry(3),)),
    ("tool.timeout", (Retry(2),)),
    ("llm.rate_limit", (Retry(4, base=1.0),)),
    ("llm.connection", (Retry(3, base=0.5),)),
    ("llm.stream_cut", (Retry(2),)),
]


@dataclass(slots=True)
class Recovery:
    """Which patterns handle which failure class, per tool.  The most recently added matching
    rule wins, and a rule naming the tool wins over one that does not."""

    rules: list[_Rule] = field(default_factory=list)
    seed: int | None = None
    votes: dict[str, Vote] = field(default_factory=dict)

    @classmethod
    def default(cls) -> Recovery:
        """Retries for transient tool failures, timeouts and LLM connection trouble."""
        recovery = cls()
        for category, patterns in DEFAULT_RULES:
            recovery.on(category, *patterns)
        return recovery

    @classmethod
    def none(cls) -> Recovery:
        """No recovery: every failure becomes an observation at once."""
        return cls()

    def on(self, category: str, *patterns: Pattern, tool: str | None = None) -> Recovery:
        """Handle failures of class `category` ("tool.timeout", or a wildcard: "tool.*") with
        `patterns`, tried in order; only for `tool` if given.  No patterns: let it fail."""
        for p in patterns:
            if not isinstance(p, Pattern):
                raise TypeError(f"{p!r} is not a recovery Pattern")
        self.rules.append(_Rule(category, tool, tuple(patterns)))
        return self

    def vote(self, tool: str, k: int = 3) -> Recovery:
        """Call `tool` `k` times for every task and keep the majority answer."""
        if k < 1:
            raise ValueError("k must be at least 1")
        self.votes[tool] = Vote(k)
        return self

    def patterns(self, category: str, tool: str | None = None) -> tuple[Pattern, ...]:
        best: _Rule | None = None
        for rule in self.rules:
            if not fnmatch.fnmatchcase(category, rule.category):
                continue
            if rule.tool is not None and rule.tool != tool:
                continue
            if best is None or rule.tool is not None or best.tool is None:
                best = rule
        return best.patterns if best is not None else ()

    def rng(self) -> random.Random:
        return random.Random(self.seed)


# ---------------------------------------------------------------------- handling a task's failures


@dataclass(frozen=True, slots=True)
class SubplanAnswer:
    """What a decomposition's sub-plan came to: its answer (None when it found none, with the
    joiner's reason in `text`) and each of its tasks as {call, status, result}."""

    answer: str | None
    text: str
    subplan: list[dict[str, Any]]


# Runs the sub-plan for a failed task at the given depth.
Decomposer = Callable[["TaskRecord", TaskError, int], Awaitable[SubplanAnswer]]


@dataclass(slots=True)
class TaskRecoverer:
    """Calls a task's tool and applies the configured patterns to each failure, emitting a
    `TaskRecovery` event for every action, until a result or a failure no pattern takes."""

    recovery: Recovery
    tools: ToolRegistry
    executor: Executor
    bus: EventBus
    decompose: Decomposer | None = None
    escalate: EscalationHandler | None = None
    run_id: str = ""
    depth: int = 0
    max_depth: int = 2
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
        task = rec.task
        retries = 0
        tried = {tool.name}
        used: set[str] = set()
        while True:
            try:
                return await self.executor.execute(task, tool, arguments)
            except TaskError as err:
                category = classify(err)
                acted = False
                for pattern in self.recovery.patterns(category, tool.name):
                    if isinstance(pattern, Retry):
                        if retries + 1 >= pattern.attempts:
                            continue
                        if tool.side_effects and not pattern.side_effects:
                            continue
                        wait = pattern.delay(retries, self._rng)
                        retries += 1
                        self._acted(rec, tool, pattern, category, err.message, delay=round(wait, 3))
                        await anyio.sleep(wait)
                    elif isinstance(pattern, Fallback):
                        if pattern.tool in tried or pattern.tool not in self.tools:
                            continue
                        tried.add(pattern.tool)
                        self._acted(rec, tool, pattern, category, err.message, to=pattern.tool)
                        tool, retries = self.tools[pattern.tool], 0
                    elif isinstance(pattern, Decompose):
                        if "decompose" in used or self.decompose is None:
                            continue
                        if self.depth >= self.max_depth:
                            continue
                        used.add("decompose")
                        return await self._decompose(rec, tool, pattern, category, err)
                    elif isinstance(pattern, Escalate):
                        if "escalate" in used or self.escalate is None:
                            continue
                        used.add("escalate")
                        self._acted(rec, tool, pattern, category, err.message)
                        verdict, value = await self.escalate(
                            Escalation(
                                self.run_id,
                                task.id,
                                tool.name,
                                task.call_text(),
                                str(err),
                                category,
                            )
                        )
                        rec.recovery[-1]["answer"] = verdict
                        if verdict == "result":
                            return value
                        if verdict != "retry":
                            raise
                    else:
                        continue
                    acted = True
                    break
                if not acted:
                    raise
                rec.attempts += 1

    async def _decompose(
        self, rec: TaskRecord, tool: Tool, pattern: Pattern, category: str, err: TaskError
    ) -> Any:
        """Splice the answer of a sub-plan for the failed call in as the task's result."""
        assert self.decompose is not None
        depth = self.depth + 1
        self._acted(rec, tool, pattern, category, err.message, depth=depth)
        sub = await self.decompose(rec, err, depth)
        self._acted(
            rec,
            tool,
            pattern,
            category,
            err.message,
            depth=depth,
            subplan=sub.subplan,
            answer=sub.answer,
        )
        if sub.answer is None:
            raise type(err)(
                f"{err.message}; decomposing it (depth {depth}) gave no answer: {sub.text}",
                task_id=rec.task.id,
                tool=rec.task.tool,
                arguments=err.arguments,
                cause=err.cause,
            )
        return as_return_type(sub.answer, tool.returns, rec)

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
        )
        rec.recovery.append(event.record())
        self.bus.emit(event)


def _ballot(value: Any) -> str:
    """A canonical form of an answer, so equal answers count as one choice."""
    return json.dumps(value, sort_keys=True, default=repr)


def as_return_type(text: str, returns: Any, rec: TaskRecord) -> Any:
    """A sub-plan's text answer as the value the tool would have returned."""
    if returns in (inspect.Parameter.empty, Any, str, object):
        return text
    adapter: TypeAdapter[Any] = TypeAdapter(returns)
    candidates = [text, text.strip().rstrip(".")]
    if returns in (int, float):
        candidates += [n.replace(",", "") for n in re.findall(r"-?\d[\d,]*\.?\d*", text)]
    for candidate in candidates:
        try:
            return adapter.validate_python(candidate)
        except ValueError:
            pass
        try:
            return adapter.validate_json(candidate)
        except ValueError:
            pass
    raise ToolOutputError(
        f"the sub-plan answered {text[:200]!r}, which is not a "
        f"{getattr(returns, '__name__', returns)}",
        task_id=rec.task.id,
        tool=rec.task.tool,
        cause="decomposition",
    )
