"""Recovery: every failure is classified, then handled by the patterns configured for its class.

Classes (`classify`):

    tool.transient  tool.permanent  tool.crash  tool.timeout  tool.invalid_arguments
    tool.output_too_large  tool.wrong_type  tool.dependency
    plan.syntax  plan.unknown_tool  plan.invalid_reference  plan.invalid_arguments
    plan.duplicate_id  plan.missing_join  joiner
    llm.connection  llm.rate_limit  llm.context_overflow  llm.timeout  llm.malformed
    llm.stream_cut  llm.error
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

This module is the policy: the classes, the patterns and what each decides, the registry and the
budgets.  `recoverer` is the engine that applies it: `TaskRecoverer` to a task's calls,
`LLMRecoverer` to the run's LLM requests.  Your own
pattern is a `Pattern` subclass with an async `handle(failure)`; see `Pattern`.
"""

from __future__ import annotations

import fnmatch
import inspect
import random
import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

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
    LLMMalformedStream,
    LLMRateLimitError,
    LLMStreamError,
    LLMTimeout,
    MissingJoinError,
    OutputInvalid,
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
    UserError,
)

if TYPE_CHECKING:
    from .tools import Tool, ToolRegistry

__all__ = [
    "Action",
    "Budget",
    "CallAgain",
    "Decompose",
    "Escalate",
    "Escalation",
    "Fail",
    "Failure",
    "Fallback",
    "Pattern",
    "Recovery",
    "Retry",
    "SubplanAnswer",
    "UseResult",
    "Vote",
    "classify",
    "classify_type",
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
    (OutputInvalid, "joiner"),
    (LLMConnectionError, "llm.connection"),
    (LLMRateLimitError, "llm.rate_limit"),
    (LLMContextOverflow, "llm.context_overflow"),
    (LLMTimeout, "llm.timeout"),
    (LLMMalformedStream, "llm.malformed"),
    (LLMStreamError, "llm.stream_cut"),
    (LLMError, "llm.error"),
    (BudgetExceeded, "budget"),
    (JournalError, "journal"),
    (RunCancelled, "cancelled"),
]


def classify(error: PlanweaveError) -> str:
    """The failure class of `error` (see the module docstring)."""
    return classify_type(type(error))


def classify_type(error_type: type[BaseException]) -> str:
    """The failure class of errors of type `error_type` ("error" for one planweave does not
    classify)."""
    for cls, name in _CLASSES:
        if issubclass(error_type, cls):
            return name
    return "error"


# ---------------------------------------------------------------------- what a pattern decides


@dataclass(frozen=True, slots=True)
class SubplanAnswer:
    """What a decomposition's sub-plan came to: its answer (None when it found none, with the
    joiner's reason in `text`) and each of its tasks as {call, status, result}."""

    answer: str | None
    text: str
    subplan: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class CallAgain:
    """Call the tool again (or `tool` instead) after `delay` seconds."""

    tool: str | None = None
    delay: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UseResult:
    """End the task with `value` as its result."""

    value: Any
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Fail:
    """End the task failed, with `error` in place of the failure when given."""

    error: TaskError | None = None
    detail: dict[str, Any] = field(default_factory=dict)


Action = CallAgain | UseResult | Fail


@dataclass(slots=True)
class Failure:
    """A failed call of a task's tool, as a pattern sees it, with what the run offers to handle it.

    `retries` counts the calls of the current tool since the first (or since a fallback),
    `tried` the tools called so far, `acted` the names of the patterns that acted on this task;
    `depth` is how many decompositions deep the task is, `decomposition_depth` the budget's bound.
    `report(pattern, **detail)` adds an entry to the task's recovery list (and an event) for a
    step a pattern takes before deciding; the engine records each decision itself.
    """

    run_id: str
    task_id: int
    call: str
    tool: Tool
    arguments: Mapping[str, Any]
    error: TaskError
    category: str
    attempts: int
    tools: ToolRegistry
    rng: random.Random
    report: Callable[..., None]
    retries: int = 0
    tried: set[str] = field(default_factory=set)
    acted: set[str] = field(default_factory=set)
    depth: int = 0
    decomposition_depth: int = 0
    decompose: Callable[[int], Awaitable[SubplanAnswer]] | None = None
    escalate: EscalationHandler | None = None


# ---------------------------------------------------------------------- patterns


@dataclass(frozen=True, slots=True)
class Pattern(ABC):
    """A way of handling a failed tool call.

    Write your own by subclassing and defining `async def handle(self, failure: Failure)`: look
    at the failure (its `category`, `error`, `tool`, `arguments`, `attempts`, `retries`...) and
    return `None` when the pattern does not apply (the next one is tried), or an action:
    `CallAgain(tool=None, delay=0)`, `UseResult(value)` or `Fail(error=None)`, each with the
    `detail` to record.  Every action is a `task_recovery` event and an entry in the task's
    `recovery` list, named by the pattern's `name`.

        @dataclass(frozen=True)
        class CachedCopy(Pattern):
            async def handle(self, failure):
                value = CACHE.get(failure.call)
                return None if value is None else UseResult(value, {"source": "cache"})

        Recovery().on("tool.transient", Retry(2), CachedCopy())
    """

    @property
    def name(self) -> str:
        return type(self).__name__.lower()

    @abstractmethod
    async def handle(self, failure: Failure) -> Action | None:
        """What to do about `failure`: an action, or None when the pattern does not apply."""


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

    def __post_init__(self) -> None:
        if self.attempts < 2:
            raise UserError(
                f"Retry(attempts={self.attempts}) never retries: attempts counts "
                "every call, the first included, so it must be at least 2"
            )
        if self.base < 0 or self.max_delay < 0 or not 0 <= self.jitter <= 1:
            raise UserError("Retry needs base >= 0, max_delay >= 0 and 0 <= jitter <= 1")

    def delay(self, retry: int, rng: random.Random, at_least: float | None = None) -> float:
        """Seconds before retry number `retry` (0-based); a server's Retry-After (`at_least`)
        replaces the backoff, plus up to `jitter` of it so that clients do not return at once."""
        if at_least is not None:
            return at_least * (1 + rng.uniform(0, self.jitter))
        wait = min(self.max_delay, self.base * self.factor**retry)
        return wait * (1 + rng.uniform(-self.jitter, self.jitter))

    def wait(self, retries: int, rng: random.Random, at_least: float | None = None) -> float | None:
        """Seconds before the next call after `retries` retries, or None when the calls are
        spent.  The one decision for a tool's call (`handle`) and an LLM request
        (`recoverer.LLMRecoverer`)."""
        if retries + 1 >= self.attempts:
            return None
        return self.delay(retries, rng, at_least)

    async def handle(self, failure: Failure) -> Action | None:
        if failure.tool.side_effects and not self.side_effects:
            return None
        wait = self.wait(failure.retries, failure.rng)
        if wait is None:
            return None
        return CallAgain(delay=wait, detail={"delay": round(wait, 3)})


@dataclass(frozen=True, slots=True)
class Fallback(Pattern):
    """Call `tool` with the same arguments instead."""

    tool: str

    def __post_init__(self) -> None:
        if not self.tool:
            raise UserError("Fallback needs the name of the tool to call instead")

    async def handle(self, failure: Failure) -> Action | None:
        if self.tool in failure.tried or self.tool not in failure.tools:
            return None
        return CallAgain(tool=self.tool, detail={"to": self.tool})


@dataclass(frozen=True, slots=True)
class Decompose(Pattern):
    """Give the failed call to the planner as a sub-goal; the sub-plan's answer is the result."""

    async def handle(self, failure: Failure) -> Action | None:
        if self.name in failure.acted or failure.decompose is None:
            return None
        if failure.depth >= failure.decomposition_depth:
            return None
        depth = failure.depth + 1
        failure.report(self, depth=depth)
        sub = await failure.decompose(depth)
        detail = {"depth": depth, "subplan": sub.subplan, "answer": sub.answer}
        err = failure.error
        if sub.answer is None:
            return Fail(
                type(err)(
                    f"{err.message}; decomposing it (depth {depth}) gave no answer: {sub.text}",
                    task_id=failure.task_id,
                    tool=err.tool,
                    arguments=err.arguments,
                    cause=err.cause,
                ),
                detail,
            )
        try:
            return UseResult(as_return_type(sub.answer, failure.tool.returns, failure), detail)
        except ToolOutputError as exc:
            return Fail(exc, detail)


@dataclass(frozen=True, slots=True)
class Escalate(Pattern):
    """Ask a person (the runtime's `escalate` handler): a result, a retry, or let it fail."""

    async def handle(self, failure: Failure) -> Action | None:
        if self.name in failure.acted or failure.escalate is None:
            return None
        question = Escalation(
            failure.run_id,
            failure.task_id,
            failure.tool.name,
            failure.call,
            str(failure.error),
            failure.category,
        )
        verdict, value = await failure.escalate(question)
        if verdict == "result":
            return UseResult(value, {"answer": verdict})
        if verdict == "retry":
            return CallAgain(detail={"answer": verdict})
        return Fail(detail={"answer": verdict})


@dataclass(frozen=True, slots=True)
class Vote(Pattern):
    """For a tool whose answers vary (one backed by an LLM): call it `k` times at once and take
    the answer most calls agree on (MAKER-style voting).  Not a failure handler: set it per tool
    with `Recovery.vote`."""

    k: int = 3

    async def handle(self, failure: Failure) -> Action | None:
        """Never acts on a failed call: the votes are the calls themselves."""
        return None


@dataclass(frozen=True, slots=True)
class Escalation:
    """What the escalation handler is asked about."""

    run_id: str
    task_id: int
    tool: str
    call: str
    error: str
    category: str


EscalationAnswer = tuple[Literal["result", "retry", "fail"], Any]
EscalationHandler = Callable[[Escalation], Awaitable[EscalationAnswer]]


def as_return_type(text: str, returns: Any, failure: Failure) -> Any:
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
        task_id=failure.task_id,
        tool=failure.error.tool,
        cause="decomposition",
    )


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits on a run; reaching one ends the run with what it has, naming the limit."""

    llm_calls: int | None = None
    tokens: int | None = None
    wall_s: float | None = None
    decomposition_depth: int = 2


# ---------------------------------------------------------------------- the registry

# A task whose dependency failed is skipped, never called: no pattern can act on it.
TOOL_CLASSES = sorted(
    {name for _, name in _CLASSES if name.startswith("tool.")} - {"tool.dependency"}
)
LLM_CLASSES = sorted({name for _, name in _CLASSES if name.startswith("llm.")})


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
    ("llm.timeout", (Retry(2),)),
]


def _check_rule(category: str, patterns: tuple[Pattern, ...]) -> None:
    """Refuse a rule that could never act, instead of skipping it silently at run time."""
    for p in patterns:
        if isinstance(p, Vote):
            raise UserError("Vote is not a failure handler: use Recovery().vote(tool, k)")
        if not isinstance(p, Pattern):
            raise UserError(f"{p!r} is not a recovery Pattern")
    tool_match = any(fnmatch.fnmatchcase(c, category) for c in TOOL_CLASSES)
    llm_match = any(fnmatch.fnmatchcase(c, category) for c in LLM_CLASSES)
    if not (tool_match or llm_match):
        raise UserError(
            f"no failure class {category!r} is handled by patterns; tool classes: "
            f"{', '.join(TOOL_CLASSES)}; LLM classes (Retry only): {', '.join(LLM_CLASSES)}"
        )
    if llm_match and any(not isinstance(p, Retry) for p in patterns):
        raise UserError(
            f"{category!r} matches LLM failure classes, which can only be retried: use "
            "Retry(...) for them, and a pattern such as 'tool.*' for the others"
        )


@dataclass(slots=True)
class Recovery:
    """Which patterns handle which failure class, per tool.  The most recently added matching
    rule wins, and a rule naming the tool wins over one that does not."""

    rules: list[_Rule] = field(default_factory=list)
    seed: int | None = None
    votes: dict[str, Vote] = field(default_factory=dict)
    # However the patterns decide, a task's tool is called at most this often.
    max_calls: int = 20

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
        `patterns`, tried in order; only for `tool` if given.  No patterns: let it fail.
        Raises UserError for a class no pattern handles or a pattern that is no failure handler."""
        _check_rule(category, patterns)
        self.rules.append(_Rule(category, tool, tuple(patterns)))
        return self

    def vote(self, tool: str, k: int = 3) -> Recovery:
        """Call `tool` `k` times for every task and keep the majority answer."""
        if k < 1:
            raise UserError("k must be at least 1")
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
