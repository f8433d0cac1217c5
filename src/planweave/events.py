"""The event stream every view is built from: the CLI, `--json`, and later the journal and server.

Events are plain dataclasses with a `kind` discriminator and `t`, monotonic seconds since the run
began.  Subscribers are called synchronously, in order, the moment an event is emitted: a task's
`task_finished` reaches every subscriber before any dependent task starts, which is what a
write-ahead journal needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    # Only for annotations: importing planweave.llm at run time would import this module again
    # (through the meter) before it is complete.
    from .llm.base import Purpose

__all__ = [
    "AnswerDelta",
    "AnswerEvent",
    "CacheAdapted",
    "CacheHit",
    "CacheMiss",
    "Event",
    "EventBus",
    "LLMCallFinished",
    "LLMCallStarted",
    "LLMProgress",
    "LLMReplayDiverged",
    "LLMRetry",
    "ModelAcquired",
    "ModelWaiting",
    "NamedPlanStarted",
    "PlanApproved",
    "PlanAwaitingApproval",
    "PlanInvalid",
    "PlanRejectedEvent",
    "ReplanEvent",
    "RunAdmitted",
    "RunFinished",
    "RunQueued",
    "RunResumed",
    "RunStarted",
    "TaskCancelled",
    "TaskEnded",
    "TaskFailed",
    "TaskFinished",
    "TaskPlanned",
    "TaskRecovery",
    "TaskSkipped",
    "TaskStarted",
    "timings",
]


@dataclass(slots=True, kw_only=True)
class Event:
    kind: ClassVar[str] = "event"
    t: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["kind"] = self.kind
        return data


@dataclass(slots=True, kw_only=True)
class RunStarted(Event):
    kind: ClassVar[str] = "run_started"
    run_id: str
    question: str
    mode: str


@dataclass(slots=True, kw_only=True)
class RunResumed(Event):
    """A journaled run continues in a new session: `reused` tasks keep their recorded outcome."""

    kind: ClassVar[str] = "run_resumed"
    run_id: str
    session: int
    reused: list[int]
    rerun: list[int]


@dataclass(slots=True, kw_only=True)
class RunQueued(Event):
    """The run waits for its turn (`Admission`: as many runs as may answer at once are
    answering); `ahead` is its place in line, 1 when it is next.  `RunAdmitted` once it has it
    (a run cancelled while it waits ends with its `run_finished`)."""

    kind: ClassVar[str] = "run_queued"
    ahead: int


@dataclass(slots=True, kw_only=True)
class RunAdmitted(Event):
    """The run, which waited (`RunQueued`), has its turn after `waited` seconds."""

    kind: ClassVar[str] = "run_admitted"
    waited: float


@dataclass(slots=True, kw_only=True)
class LLMCallStarted(Event):
    """An LLM call begins; `messages` is its prompt ({role, content} each, known secrets
    masked), which the journal keeps with the event (the page shows it).  `max_tokens`,
    `temperature` and `stop` are the request's parameters (None: not known, as for a replay)."""

    kind: ClassVar[str] = "llm_call_started"
    call: int
    purpose: Purpose
    model: str
    request_hash: str = ""
    replayed: bool = False
    messages: list[dict[str, str]] = field(default_factory=list, repr=False)
    max_tokens: int | None = None
    temperature: float | None = None
    stop: list[str] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class LLMCallFinished(Event):
    """An LLM call ends.  `response_id` and `response_model` are what the backend said of its
    response (its id, the model that answered), where it said; `cost` what its tokens cost in
    dollars, where the run's settings give the model's price."""

    kind: ClassVar[str] = "llm_call_finished"
    call: int
    purpose: Purpose
    model: str
    prompt_tokens: int
    completion_tokens: int
    duration: float
    text: str
    error: dict[str, Any] | None = None
    replayed: bool = False
    finish_reason: str | None = None
    response_id: str | None = None
    response_model: str | None = None
    cost: float | None = None


@dataclass(slots=True, kw_only=True)
class LLMProgress(Event):
    """A streaming call's progress, at most every `PROGRESS_EVERY` seconds while text arrives:
    the tokens of its text so far (estimated, about four characters a token: backends report
    usage only at the end) and the seconds since it began.  For live views; the journal does
    not keep it (the call's `llm_call_finished` has the counts)."""

    kind: ClassVar[str] = "llm_progress"
    call: int
    purpose: Purpose
    tokens: int
    elapsed: float


PROGRESS_EVERY = 0.25


@dataclass(slots=True, kw_only=True)
class LLMReplayDiverged(Event):
    """On resume, call `call` sends another request than the one its recorded response answered
    (`recorded_purpose`, `recorded_hash`): the tools, the prompts or what came before changed.
    The recorded response is not used; `decision` says what is done instead: "ask_again" (an
    LLM call has no side effects, so it is asked again, as a resumed step without side effects
    runs again).  What the new response plans is still held to the steps that ran
    (`PlanDiverged`)."""

    kind: ClassVar[str] = "llm_replay_diverged"
    call: int
    purpose: Purpose
    request_hash: str
    recorded_purpose: str
    recorded_hash: str
    decision: Literal["ask_again"] = "ask_again"


@dataclass(slots=True, kw_only=True)
class LLMRetry(Event):
    """A failed LLM request is sent again after `delay` seconds."""

    kind: ClassVar[str] = "llm_retry"
    call: int
    purpose: Purpose
    category: str
    error: str
    attempt: int
    delay: float


@dataclass(slots=True, kw_only=True)
class ModelWaiting(Event):
    """LLM call `call` waits for the model, which answers one call at a time (the embedded
    model, shared by every run in the process): `ahead` calls are before it, the one the model
    is answering included.  Sent again as that number goes down; `ModelAcquired` once the
    call has the model (a call cancelled while it waits ends with its `llm_call_finished`)."""

    kind: ClassVar[str] = "model_waiting"
    call: int
    purpose: Purpose
    ahead: int


@dataclass(slots=True, kw_only=True)
class ModelAcquired(Event):
    """LLM call `call`, which waited (`ModelWaiting`), has the model after `waited` seconds.
    The call's `llm_call_finished` duration includes the wait."""

    kind: ClassVar[str] = "model_acquired"
    call: int
    purpose: Purpose
    waited: float


@dataclass(slots=True, kw_only=True)
class TaskRecovery(Event):
    """A recovery pattern acted on a failed task: `pattern` is retry, fallback, decompose or
    escalate; `category` the failure's class; `detail` what was done (delay, tool, depth...)."""

    kind: ClassVar[str] = "task_recovery"
    task_id: int
    tool: str
    pattern: str
    category: str
    error: str
    attempt: int
    detail: dict[str, Any] = field(default_factory=dict)
    item: int | None = None  # the element of a fan-out it acted on (see TaskStarted)

    def record(self) -> dict[str, Any]:
        """The entry in the task's `recovery` list."""
        return {
            "pattern": self.pattern,
            "category": self.category,
            "error": self.error,
            "attempt": self.attempt,
            **self.detail,
        }


@dataclass(slots=True, kw_only=True)
class TaskPlanned(Event):
    """A plan line was accepted.  `call` is the call as the plan wrote it, `args` the arguments
    by parameter name as JSON (references kept as `$N`)."""

    kind: ClassVar[str] = "task_planned"
    task_id: int
    tool: str
    call: str
    deps: list[int]
    thought: str | None = None
    plan_round: int = 0
    args: dict[str, Any] = field(default_factory=dict, repr=False)
    side_effects: bool = False


@dataclass(slots=True, kw_only=True)
class TaskStarted(Event):
    """A tool call begins (`attempt` counts this task's calls so far, this one included).

    A fan-out task (`$N[*]`) starts with `items`, how many elements its list has, then each
    element is a call of its own: its events carry `item` (1, 2, ...; shown as `3.1`, `3.2`),
    and its own arguments, attempts and outcome.  The task ends once every element has."""

    kind: ClassVar[str] = "task_started"
    task_id: int
    tool: str
    arguments: dict[str, Any] = field(repr=False)
    start: float = 0.0
    attempt: int = 1
    item: int | None = None
    items: int | None = None


@dataclass(slots=True, kw_only=True)
class TaskEnded(Event):
    """A task reached its final state; `start`, `end` and `attempts` are its record's, so that
    every subscriber stores the same values the run reports."""

    kind: ClassVar[str] = "task_ended"
    task_id: int
    tool: str
    start: float | None = None
    end: float | None = None
    attempts: int = 0
    item: int | None = None  # an element of a fan-out (see TaskStarted)


@dataclass(slots=True, kw_only=True)
class TaskFinished(TaskEnded):
    kind: ClassVar[str] = "task_finished"
    duration: float
    result: Any = field(repr=False)
    # The journal's stored form of `result` (journaled runs only), and whether the result was
    # taken from an earlier session of the run instead of calling the tool; `recalled` names
    # the earlier run of the run's thread it was taken from instead (`threads`).
    stored: Any = field(default=None, repr=False)
    reused: bool = False
    recalled: str | None = None


@dataclass(slots=True, kw_only=True)
class TaskFailed(TaskEnded):
    kind: ClassVar[str] = "task_failed"
    duration: float
    error: dict[str, Any]
    reused: bool = False


@dataclass(slots=True, kw_only=True)
class TaskSkipped(TaskEnded):
    kind: ClassVar[str] = "task_skipped"
    error: dict[str, Any]


@dataclass(slots=True, kw_only=True)
class TaskCancelled(TaskEnded):
    kind: ClassVar[str] = "task_cancelled"


@dataclass(slots=True, kw_only=True)
class PlanInvalid(Event):
    kind: ClassVar[str] = "plan_invalid"
    error: dict[str, Any]
    repair: int
    will_repair: bool
    category: str = "plan.syntax"


@dataclass(slots=True, kw_only=True)
class PlanAwaitingApproval(Event):
    """The run paused: `tasks` ({id, tool, call, args, deps, side_effects}) wait for a person's
    yes (`approve` is "plan": the whole first plan; "side_effects": tasks of tools with side
    effects).  The tasks that could run have ended; `llm` is the LLM use so far."""

    kind: ClassVar[str] = "plan_awaiting_approval"
    approve: str
    tasks: list[dict[str, Any]]
    llm: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0


@dataclass(slots=True, kw_only=True)
class PlanApproved(Event):
    """A person approved the waiting tasks `approved`: `edits` gives the call to run instead
    for some (by task id, as text), `dropped` those that are not to run at all."""

    kind: ClassVar[str] = "plan_approved"
    approved: list[int]
    edits: dict[str, str] = field(default_factory=dict)
    dropped: list[int] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class PlanRejectedEvent(Event):
    """A person rejected the waiting tasks; the run ends (failed, `PlanRejected`)."""

    kind: ClassVar[str] = "plan_rejected"
    reason: str


@dataclass(slots=True, kw_only=True)
class CacheHit(Event):
    """The first plan comes from the plan cache: `template_id`'s plan with this question's
    values in its slots (`plan`, already validated); no planner call is made.
    `tokens_saved` is what planning took in the run the template was made from."""

    kind: ClassVar[str] = "cache_hit"
    template_id: str
    plan: str
    tokens_saved: int = 0
    adapted: bool = False

    def summary(self) -> dict[str, Any]:
        """The run's `cache` entry (`--json`)."""
        return _cache_summary(True, self.template_id, self.adapted, self.tokens_saved)


@dataclass(slots=True, kw_only=True)
class NamedPlanStarted(Event):
    """The first plan is version `version` of the named plan `name` (`runbooks`), its
    parameters bound to `params` (`plan`, already validated); no planner call is made.  A
    resumed run goes on with this plan."""

    kind: ClassVar[str] = "named_plan"
    name: str
    version: int
    params: dict[str, Any]
    plan: str


@dataclass(slots=True, kw_only=True)
class CacheAdapted(Event):
    """No template fits the question, but `template_id`'s question is worded much like it: the
    planner is asked with that template as the one worked example (`question`, `plan`: its
    slots as placeholders, and no word of the question it was made from that this question does
    not say) in place of the generic ones.  `tokens_saved` estimates the prompt tokens this
    saves over planning with the generic examples (0 when it saves none)."""

    kind: ClassVar[str] = "cache_adapted"
    template_id: str
    question: str
    plan: str
    tokens_saved: int = 0

    def summary(self) -> dict[str, Any]:
        return _cache_summary(False, self.template_id, True, self.tokens_saved)


@dataclass(slots=True, kw_only=True)
class CacheMiss(Event):
    """The plan cache had no plan for this question; `template_id` names a template the
    question read as, when its values were refused (`reason` says why)."""

    kind: ClassVar[str] = "cache_miss"
    reason: str
    template_id: str | None = None

    def summary(self) -> dict[str, Any]:
        return _cache_summary(False, self.template_id, False, 0) | {"reason": self.reason}


def _cache_summary(
    hit: bool, template_id: str | None, adapted: bool, tokens_saved: int
) -> dict[str, Any]:
    return {
        "hit": hit,
        "template_id": template_id,
        "adapted": adapted,
        "tokens_saved": tokens_saved,
    }


@dataclass(slots=True, kw_only=True)
class ReplanEvent(Event):
    kind: ClassVar[str] = "replan"
    reason: str
    plan_round: int


@dataclass(slots=True, kw_only=True)
class AnswerUngrounded(Event):
    """The joiner's answer stated numbers or names no result and not the question gives, or named
    another than the one a ranking result puts where the question asks (the grounding check,
    `planweave.grounding`): it is withdrawn.  `retry`: the joiner is asked once more;
    otherwise the run answers with what was found and what was not.  The answer's pieces
    streamed so far (`AnswerDelta`) are void; the next ones start a new answer."""

    kind: ClassVar[str] = "answer_ungrounded"
    answer: str
    numbers: list[str]
    retry: bool
    # Where a ranking's answer was misnamed: what the check found ("it names X where ...").
    misnamed: str | None = None
    # Names (capitalized words, codes) no result and not the question gives.
    names: list[str] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class AnswerDelta(Event):
    """A piece of the answer as the joiner decodes it.  The pieces of a run, in order, add up
    to its answer (`AnswerEvent` and `RunFinished` still carry it whole), but for a `${N}` the
    joiner wrote to quote a result, filled in only in the whole answer; they are not
    journaled.  A run whose answer comes from ReAct mode sends none."""

    kind: ClassVar[str] = "answer_delta"
    text: str


@dataclass(slots=True, kw_only=True)
class AnswerEvent(Event):
    kind: ClassVar[str] = "answer"
    answer: str


@dataclass(slots=True, kw_only=True)
class RunFinished(Event):
    """The run ended; carries the run's own totals so that every subscriber stores the same."""

    kind: ClassVar[str] = "run_finished"
    status: Literal["finished", "failed", "cancelled"]
    answer: str | None
    error: dict[str, Any] | None = None
    wall_s: float = 0.0
    llm: dict[str, int] = field(default_factory=dict)
    replans: int = 0
    partial: str | None = None


Subscriber = Callable[[Event], None]


def timings(
    llm_calls: Iterable[tuple[str, float]], spans: Iterable[tuple[float | None, float | None]]
) -> dict[str, float]:
    """Seconds spent in LLM calls by purpose (`planning`, `joining`, writing a typed answer
    counted in, `reasoning`) and
    `executing`: the time during which at least one tool was running (planning and executing
    overlap when dispatch streams).  Takes (purpose, duration) pairs and task (start, end) spans."""
    spent: dict[str, float] = {"planning": 0.0, "executing": 0.0, "joining": 0.0}
    for purpose, duration in llm_calls:
        key = {
            "planner": "planning",
            "repair": "planning",
            "joiner": "joining",
            "output": "joining",
        }.get(purpose, "reasoning")
        spent[key] = spent.get(key, 0.0) + duration
    busy, until = 0.0, float("-inf")
    for start, end in sorted((s, e) for s, e in spans if s is not None and e is not None):
        if end > until:
            busy += end - max(start, until)
            until = end
    spent["executing"] = busy
    return {k: round(v, 6) for k, v in spent.items()}


class EventBus:
    """Stamps events with the run's clock and hands them to every subscriber, in order.

    The clock reads seconds since the run began; `offset` carries it over when a journaled run
    resumes in a later session.
    """

    def __init__(self, subscribers: list[Subscriber] | None = None, *, offset: float = 0.0) -> None:
        self.start = time.monotonic() - offset
        self.events: list[Event] = []
        self._subscribers: list[Subscriber] = list(subscribers or ())

    def now(self) -> float:
        return time.monotonic() - self.start

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    def emit(self, event: Event) -> None:
        event.t = self.now()
        self.events.append(event)
        for subscriber in self._subscribers:
            subscriber(event)
