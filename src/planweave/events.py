"""The event stream every view is built from: the CLI, `--json`, and later the journal and server.

Events are plain dataclasses with a `kind` discriminator and `t`, monotonic seconds since the run
began.  Subscribers are called synchronously, in order, the moment an event is emitted: a task's
`task_finished` reaches every subscriber before any dependent task starts, which is what a
write-ahead journal needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

__all__ = [
    "AnswerEvent",
    "Event",
    "EventBus",
    "LLMCallFinished",
    "LLMCallStarted",
    "PlanInvalid",
    "ReplanEvent",
    "RunFinished",
    "RunStarted",
    "TaskCancelled",
    "TaskFailed",
    "TaskFinished",
    "TaskPlanned",
    "TaskSkipped",
    "TaskStarted",
]

Purpose = Literal["planner", "repair", "joiner", "react"]


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
class LLMCallStarted(Event):
    kind: ClassVar[str] = "llm_call_started"
    call: int
    purpose: Purpose
    model: str


@dataclass(slots=True, kw_only=True)
class LLMCallFinished(Event):
    kind: ClassVar[str] = "llm_call_finished"
    call: int
    purpose: Purpose
    model: str
    prompt_tokens: int
    completion_tokens: int
    duration: float
    text: str
    error: dict[str, Any] | None = None


@dataclass(slots=True, kw_only=True)
class TaskPlanned(Event):
    kind: ClassVar[str] = "task_planned"
    task_id: int
    tool: str
    args: str
    deps: list[int]
    thought: str | None = None
    plan_round: int = 0


@dataclass(slots=True, kw_only=True)
class TaskStarted(Event):
    kind: ClassVar[str] = "task_started"
    task_id: int
    tool: str
    arguments: dict[str, Any] = field(repr=False)


@dataclass(slots=True, kw_only=True)
class TaskFinished(Event):
    kind: ClassVar[str] = "task_finished"
    task_id: int
    tool: str
    duration: float
    result: Any = field(repr=False)


@dataclass(slots=True, kw_only=True)
class TaskFailed(Event):
    kind: ClassVar[str] = "task_failed"
    task_id: int
    tool: str
    duration: float
    error: dict[str, Any]


@dataclass(slots=True, kw_only=True)
class TaskSkipped(Event):
    kind: ClassVar[str] = "task_skipped"
    task_id: int
    tool: str
    error: dict[str, Any]


@dataclass(slots=True, kw_only=True)
class TaskCancelled(Event):
    kind: ClassVar[str] = "task_cancelled"
    task_id: int
    tool: str


@dataclass(slots=True, kw_only=True)
class PlanInvalid(Event):
    kind: ClassVar[str] = "plan_invalid"
    error: dict[str, Any]
    repair: int
    will_repair: bool


@dataclass(slots=True, kw_only=True)
class ReplanEvent(Event):
    kind: ClassVar[str] = "replan"
    reason: str
    plan_round: int


@dataclass(slots=True, kw_only=True)
class AnswerEvent(Event):
    kind: ClassVar[str] = "answer"
    answer: str


@dataclass(slots=True, kw_only=True)
class RunFinished(Event):
    kind: ClassVar[str] = "run_finished"
    status: Literal["finished", "failed", "cancelled"]
    answer: str | None
    error: dict[str, Any] | None = None


Subscriber = Callable[[Event], None]


class EventBus:
    """Stamps events with the run's clock and hands them to every subscriber, in order."""

    def __init__(self, subscribers: list[Subscriber] | None = None) -> None:
        self.start = time.monotonic()
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
