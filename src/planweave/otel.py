"""OpenTelemetry traces of runs, built from the event stream alone: one more subscriber, like
the journal and the live view, never a hook in the scheduler.

Spans follow the GenAI semantic conventions:

    invoke_agent planweave          one per run (per session of a resumed run)
    ├── chat MODEL                  one per LLM call; `planweave.llm.purpose` says what for
    ├── execute_tool TOOL           one per call of a task's tool (a retry is another span),
    │                               linked to the spans of the tasks whose results it used ($N)
    └── ...

A chat span has the provider, the endpoint's `server.address` and `server.port`, the request's
parameters, the response's model, id and finish reason, and its token usage; a tool span the
tool's name, description and call id.  Recovery and plan-cache decisions are span events;
failures set the span's status and `error.type` to planweave's failure class (`tool.timeout`,
`llm.rate_limit`, ...).

The same spans carry OpenInference's attributes too (`openinference.span.kind` AGENT, LLM or
TOOL, `llm.*`, `tool.*`, `input.value`, `output.value`), which Arize Phoenix reads; set
`PLANWEAVE_OTEL_OPENINFERENCE=false` to leave them out.

Content (the prompts and the models' replies, tool arguments and results, the question, the
answer, error messages: a tool's error often quotes its arguments) is recorded only when
content capture is asked for (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`), in
both conventions' attributes, known secrets masked: without it a failure's status says its
error's type and `exception.message` is left out.

Timestamps are the events' own: the run's clock (seconds since the run began) is anchored to
the wall clock once, at the run's first event, so spans keep the order and the overlaps the run
had.  Only `opentelemetry-api` is needed here; `configure` (for `--otel`) needs the SDK.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

try:
    from opentelemetry import trace
    from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError("planweave's traces need its extra: pip install 'planweave[otel]'") from exc

from . import errors
from .events import (
    AnswerEvent,
    CacheAdapted,
    CacheHit,
    CacheMiss,
    Event,
    LLMCallFinished,
    LLMCallStarted,
    LLMRetry,
    ModelAcquired,
    ModelWaiting,
    PlanApproved,
    PlanAwaitingApproval,
    PlanInvalid,
    ReplanEvent,
    RunFinished,
    RunResumed,
    RunStarted,
    TaskCancelled,
    TaskFailed,
    TaskFinished,
    TaskPlanned,
    TaskRecovery,
    TaskSkipped,
    TaskStarted,
)
from .recovery import classify_type
from .redaction import redact, redact_value
from .tools import Tool

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "OPENINFERENCE_ENV",
    "Exporter",
    "RunTrace",
    "capture_content",
    "configure",
    "openinference_attributes",
    "tracer",
]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
OPENINFERENCE_ENV = "PLANWEAVE_OTEL_OPENINFERENCE"
AGENT = "planweave"

Exporter = Literal["console", "otlp"]


def capture_content() -> bool:
    """Whether content capture is asked for (the GenAI instrumentations' switch)."""
    value = os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower()
    return value in ("1", "true", "yes", "span_only", "span_and_event")


def openinference_attributes() -> bool:
    """Whether spans carry OpenInference's attributes beside the GenAI ones: yes unless
    `PLANWEAVE_OTEL_OPENINFERENCE` says 0, false, no or off."""
    value = os.environ.get(OPENINFERENCE_ENV, "").strip().lower()
    return value not in ("0", "false", "no", "off")


def tracer(provider: trace.TracerProvider | None = None) -> trace.Tracer | None:
    """planweave's tracer from `provider`, or from the global provider when one is set (None
    when none is: nothing is traced then)."""
    if provider is None:
        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return None
    from . import __version__

    return provider.get_tracer("planweave", __version__)


def configure(exporter: Exporter) -> trace.TracerProvider:
    """Set the global tracer provider for this process: spans printed on stderr (`console`) or
    sent over OTLP/HTTP (`otlp`, to `OTEL_EXPORTER_OTLP_ENDPOINT` or
    `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, by default http://localhost:4318).  The service is
    `OTEL_SERVICE_NAME`, else "planweave".  Spans still queued are sent when the process ends."""
    try:
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
    except ImportError as exc:
        raise errors.UserError(
            "--otel needs the OpenTelemetry SDK: pip install 'planweave[otel]'"
        ) from exc
    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; what it is given wins.
    named = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: AGENT}
    provider = TracerProvider(resource=Resource.create(named))
    if exporter == "console":
        # stderr: stdout is the answer's (or `--json`'s).
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


@dataclass(slots=True)
class _Task:
    tool: str
    deps: list[int]
    span: Span | None = None  # the call in flight
    attempt: int = 0  # the call `span` is, or the last one was
    resumed_at: float | None = None  # when the call after a recovery began
    calling: str = ""  # the tool of the call in flight, or of the last one
    last: SpanContext | None = None  # the last call's span: what dependents link to
    arguments: dict[str, Any] = field(default_factory=dict)


class RunTrace:
    """The spans of one run session, from its events.  Make one per run: events carry no run
    id, so one instance must not see two runs' events.

    `model`, `provider` and `endpoint` describe the run's LLM (`LLM.model`, `LLM.provider`,
    `LLM.endpoint`), `tools` its tools (for their descriptions and parameters).  `content` and
    `openinference` default to what the environment says (`capture_content`,
    `openinference_attributes`).
    """

    def __init__(
        self,
        tracer: trace.Tracer,
        *,
        model: str = "",
        provider: str = "",
        endpoint: str | None = None,
        tools: Mapping[str, Tool] | None = None,
        content: bool | None = None,
        openinference: bool | None = None,
    ) -> None:
        self.tracer = tracer
        self.model = model
        self.content = capture_content() if content is None else content
        self.openinference = openinference_attributes() if openinference is None else openinference
        self._llm = _served(provider, endpoint, self.openinference)
        self._tools = tools or {}
        self._described: dict[str, dict[str, Any]] = {}
        self._epoch_ns = 0
        self._run: Span | None = None
        self._calls: dict[int, Span] = {}
        # By task id; a fan-out's elements are calls of their own, keyed "3.1", "3.2"...
        self._tasks: dict[int | str, _Task] = {}

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted | RunResumed):
            self._open(event)
            return
        if self._run is None:
            return
        handle = self._handlers.get(type(event))
        if handle is not None:
            handle(self, event)

    # ------------------------------------------------------------------ the run

    def _open(self, event: RunStarted | RunResumed) -> None:
        # The run's clock to the wall clock: the event was stamped a moment ago.
        self._epoch_ns = time.time_ns() - round(event.t * 1e9)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT,
            "gen_ai.conversation.id": event.run_id,
            "planweave.run.id": event.run_id,
        }
        if self.model:
            attributes["gen_ai.request.model"] = self.model
        if self.openinference:
            attributes |= {
                "openinference.span.kind": "AGENT",
                "agent.name": AGENT,
                "session.id": event.run_id,
            }
        if isinstance(event, RunStarted):
            attributes["planweave.mode"] = event.mode
            if self.content:
                question = redact(event.question)
                attributes["gen_ai.input.messages"] = _messages([("user", question)])
                if self.openinference:
                    attributes |= {"input.value": question, "input.mime_type": "text/plain"}
        else:
            attributes["planweave.run.session"] = event.session
            attributes["planweave.run.reused_tasks"] = event.reused
        self._run = self.tracer.start_span(
            f"invoke_agent {AGENT}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=self._ns(event.t),
        )

    def _finished(self, event: RunFinished) -> None:
        assert self._run is not None
        for span in self._calls.values():
            _fail(span, "cancelled", "the run ended first", self._ns(event.t))
        for task in self._tasks.values():
            if task.span is not None:
                _fail(task.span, "cancelled", "the run ended first", self._ns(event.t))
        self._run.set_attributes(
            {
                "planweave.run.status": event.status,
                "planweave.replans": event.replans,
                "gen_ai.usage.input_tokens": event.llm.get("prompt_tokens", 0),
                "gen_ai.usage.output_tokens": event.llm.get("completion_tokens", 0),
                "planweave.llm.calls": event.llm.get("calls", 0),
            }
        )
        if isinstance(event.llm.get("cost"), float):
            self._run.set_attribute("gen_ai.usage.cost", event.llm["cost"])
        if event.status == "cancelled":
            _fail(self._run, "cancelled", "the run was cancelled")
        elif event.error is not None:
            _fail(self._run, _error_type(event.error), self._told(event.error))
        self._run.end(self._ns(event.t))
        self._run = None

    def _paused(self, event: PlanAwaitingApproval) -> None:
        """The session ends waiting for a person's approval: so does its span (the session
        that goes on once approved has its own)."""
        assert self._run is not None
        self._run.set_attributes(
            {
                "planweave.run.status": "awaiting_approval",
                "planweave.approval.waiting": [int(t["id"]) for t in event.tasks],
            }
        )
        self._run.end(self._ns(event.t))
        self._run = None

    def _answer(self, event: AnswerEvent) -> None:
        if self.content and self._run is not None:
            answer = redact(event.answer)
            self._run.set_attribute(
                "gen_ai.output.messages", _messages([("assistant", answer)], "stop")
            )
            if self.openinference:
                self._run.set_attributes({"output.value": answer, "output.mime_type": "text/plain"})

    def _note(self, event: Event) -> None:
        """A decision of the run's (plan cache, invalid plan, replan, skipped task) as an event
        of its span."""
        assert self._run is not None
        attributes: dict[str, Any] = {}
        match event:
            case CacheHit():
                attributes = {
                    "planweave.cache.template_id": event.template_id,
                    "planweave.cache.tokens_saved": event.tokens_saved,
                }
            case CacheAdapted():
                attributes = {
                    "planweave.cache.template_id": event.template_id,
                    "planweave.cache.tokens_saved": event.tokens_saved,
                }
            case CacheMiss():
                attributes = {"planweave.cache.reason": event.reason}
                if event.template_id is not None:
                    attributes["planweave.cache.template_id"] = event.template_id
            case PlanInvalid():
                attributes = {
                    "error.type": event.category,
                    "planweave.plan.repair": event.repair,
                    "planweave.plan.will_repair": event.will_repair,
                }
            case ReplanEvent():
                attributes = {"planweave.plan.round": event.plan_round}
                if self.content:
                    attributes["planweave.replan.reason"] = redact(event.reason)
            case TaskSkipped():
                attributes = {
                    "gen_ai.tool.call.id": str(event.task_id),
                    "gen_ai.tool.name": event.tool,
                    "error.type": _error_type(event.error),
                }
        self._run.add_event(event.kind, attributes, self._ns(event.t))

    # ------------------------------------------------------------------ LLM calls

    def _call_started(self, event: LLMCallStarted) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": event.model,
            "gen_ai.output.type": "text",
            **self._llm,
            "planweave.llm.purpose": event.purpose,
            "planweave.llm.call": event.call,
        }
        parameters: dict[str, Any] = {}
        if event.max_tokens is not None:
            parameters["max_tokens"] = event.max_tokens
        if event.temperature is not None:
            parameters["temperature"] = event.temperature
        if event.stop:
            parameters["stop"] = list(event.stop)
        attributes |= {
            f"gen_ai.request.{'stop_sequences' if name == 'stop' else name}": value
            for name, value in parameters.items()
        }
        if event.replayed:
            attributes["planweave.llm.replayed"] = True
        # The prompt is masked where the event is made; masking again costs little.
        messages = [(m.get("role", ""), redact(m.get("content", ""))) for m in event.messages]
        if self.content:
            attributes["gen_ai.input.messages"] = _messages(messages)
        if self.openinference:
            attributes |= {"openinference.span.kind": "LLM", "llm.model_name": event.model}
            if parameters:
                attributes["llm.invocation_parameters"] = _json(parameters)
            if self.content:
                attributes |= _flat("llm.input_messages", messages)
                attributes |= {
                    "input.value": _json([{"role": r, "content": c} for r, c in messages]),
                    "input.mime_type": "application/json",
                }
        self._calls[event.call] = self.tracer.start_span(
            f"chat {event.model}",
            context=self._parent(),
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=self._ns(event.t),
        )

    def _call_retried(self, event: LLMRetry) -> None:
        span = self._calls.get(event.call)
        if span is not None:
            span.add_event(
                "llm_retry",
                {
                    "error.type": event.category,
                    "planweave.retry.attempt": event.attempt,
                    "planweave.retry.delay": event.delay,
                },
                self._ns(event.t),
            )

    def _call_waited(self, event: ModelWaiting | ModelAcquired) -> None:
        span = self._calls.get(event.call)
        if span is not None:
            attributes = (
                {"planweave.model.ahead": event.ahead}
                if isinstance(event, ModelWaiting)
                else {"planweave.model.waited": event.waited}
            )
            span.add_event(event.kind, attributes, self._ns(event.t))

    def _call_finished(self, event: LLMCallFinished) -> None:
        span = self._calls.pop(event.call, None)
        if span is None:
            return
        attributes: dict[str, Any] = {
            "gen_ai.usage.input_tokens": event.prompt_tokens,
            "gen_ai.usage.output_tokens": event.completion_tokens,
        }
        if event.response_id:
            attributes["gen_ai.response.id"] = event.response_id
        if event.response_model:
            attributes["gen_ai.response.model"] = event.response_model
        if event.finish_reason is not None:
            attributes["gen_ai.response.finish_reasons"] = [event.finish_reason]
        if event.cost is not None:  # not a GenAI convention (yet): Langfuse reads it
            attributes["gen_ai.usage.cost"] = event.cost
        text = redact(event.text) if self.content else ""
        if self.content:
            attributes["gen_ai.output.messages"] = _messages(
                [("assistant", text)], event.finish_reason or ""
            )
        if self.openinference:
            attributes |= {
                "llm.token_count.prompt": event.prompt_tokens,
                "llm.token_count.completion": event.completion_tokens,
                "llm.token_count.total": event.prompt_tokens + event.completion_tokens,
            }
            if event.response_model:
                attributes["llm.model_name"] = event.response_model
            if event.finish_reason is not None:
                attributes["llm.finish_reason"] = event.finish_reason
            if event.cost is not None:
                attributes["llm.cost.total"] = event.cost
            if self.content:
                attributes |= _flat("llm.output_messages", [("assistant", text)])
                attributes |= {"output.value": text, "output.mime_type": "text/plain"}
        span.set_attributes(attributes)
        if event.error is not None:
            _fail(span, _error_type(event.error), self._told(event.error))
        span.end(self._ns(event.t))

    # ------------------------------------------------------------------ tool calls

    def _planned(self, event: TaskPlanned) -> None:
        self._tasks[event.task_id] = _Task(event.tool, list(event.deps))

    def _started(self, event: TaskStarted) -> None:
        task = self._tasks.setdefault(_key(event), _Task(event.tool, []))
        task.arguments = event.arguments
        self._call(_key(event), task, event.tool, event.attempt, event.start)

    def _recovery(self, event: TaskRecovery) -> None:
        task = self._tasks.get(_key(event))
        if task is None:
            return
        span = self._in_flight(_key(event), task, event.attempt)
        if span is None:
            return
        attributes: dict[str, Any] = {
            "planweave.recovery.pattern": event.pattern,
            "error.type": event.category,
            "planweave.recovery.attempt": event.attempt,
        }
        # A decomposition's sub-plan and answer, a person's answer: content, like the error.
        attributes |= {
            f"planweave.recovery.{k}": redact(v) if isinstance(v, str) else v
            for k, v in event.detail.items()
            if _scalar(v) and (self.content or not isinstance(v, str) or k == "to")
        }
        span.add_event("task_recovery", attributes, self._ns(event.t))
        if event.pattern == "vote":
            return  # the votes are this call's; the task's end ends it
        # The call failed; a pattern acted.  Another call, if there is one, begins after the
        # pattern's delay, with the tool it names.
        _fail(
            span, event.category, event.error if self.content else event.category, self._ns(event.t)
        )
        task.span = None
        task.resumed_at = event.t + float(event.detail.get("delay") or 0.0)
        task.calling = str(event.detail.get("to") or task.calling)

    def _ended(self, event: TaskFinished | TaskFailed | TaskCancelled) -> None:
        task = self._tasks.setdefault(_key(event), _Task(event.tool, []))
        end = event.end if event.end is not None else event.t
        if getattr(event, "reused", False):
            start = event.start if event.start is not None else end
            span = self._call(_key(event), task, event.tool, event.attempts, start)
            span.set_attribute("planweave.task.reused", True)
        else:
            found = self._in_flight(_key(event), task, event.attempts)
            if found is None:
                return  # a pattern's result, or its failure, without another call
            span = found
        match event:
            case TaskFinished():
                if self.content:
                    result = _json(redact_value(event.result))
                    span.set_attribute("gen_ai.tool.call.result", result)
                    if self.openinference:
                        span.set_attributes(
                            {"output.value": result, "output.mime_type": "application/json"}
                        )
            case TaskFailed():
                kind = _error_type(event.error)
                raised: dict[str, Any] = {"exception.type": str(event.error.get("type", kind))}
                if self.content:
                    raised["exception.message"] = str(event.error.get("message", ""))
                span.add_event("exception", raised, self._ns(end))
                _fail(span, kind, self._told(event.error))
            case TaskCancelled():
                _fail(span, "cancelled", "the task was cancelled")
        span.end(self._ns(end))
        task.span = None

    def _call(self, task_id: int | str, task: _Task, tool: str, attempt: int, start: float) -> Span:
        """Open the span of one call of a task's tool, linked to the calls whose results it
        takes (`$N`)."""
        links = [
            Link(dep.last, {"planweave.task.id": dep_id})
            for dep_id in task.deps
            if (dep := self._tasks.get(dep_id)) is not None and dep.last is not None
        ]
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": str(task_id),
            "gen_ai.tool.type": "function",
            **self._described_tool(tool),
            "planweave.task.attempt": attempt,
        }
        if self.content:
            arguments = _json(redact_value(task.arguments))
            attributes["gen_ai.tool.call.arguments"] = arguments
            if self.openinference:
                attributes |= {"input.value": arguments, "input.mime_type": "application/json"}
        span = self.tracer.start_span(
            f"execute_tool {tool}",
            context=self._parent(),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
            start_time=self._ns(start),
        )
        task.span, task.attempt, task.calling = span, attempt, tool
        task.last = span.get_span_context()
        return span

    def _in_flight(self, task_id: int | str, task: _Task, attempt: int) -> Span | None:
        """The span of the task's call numbered `attempt`: the one open, or the call made
        after a recovery (opened from when it began); None when no further call was made."""
        if task.span is not None:
            return task.span
        if attempt > task.attempt and task.resumed_at is not None:
            return self._call(task_id, task, task.calling, attempt, task.resumed_at)
        return None

    def _described_tool(self, name: str) -> dict[str, Any]:
        """The attributes that describe tool `name` (none for a tool the run's registry does
        not hold), made once per tool."""
        found = self._described.get(name)
        if found is None:
            found = {}
            known = self._tools.get(name)
            if known is not None:
                if known.description:
                    found["gen_ai.tool.description"] = known.description
                if self.openinference:
                    found |= {"openinference.span.kind": "TOOL", "tool.name": name}
                    if known.description:
                        found["tool.description"] = known.description
                    found["tool.parameters"] = _json(known.json_schema())
            elif self.openinference:
                found = {"openinference.span.kind": "TOOL", "tool.name": name}
            self._described[name] = found
        return found

    # ------------------------------------------------------------------ helpers

    def _told(self, error: dict[str, Any]) -> str:
        """What a failed span's status says of `error`: its message with content capture on,
        else only its type (the message may quote arguments, a result or a prompt)."""
        if self.content:
            return str(error.get("message", ""))
        return str(error.get("type") or _error_type(error))

    def _ns(self, t: float) -> int:
        return self._epoch_ns + round(t * 1e9)

    def _parent(self) -> Any:
        assert self._run is not None
        return trace.set_span_in_context(self._run)

    _handlers: ClassVar[dict[type[Event], Callable[[RunTrace, Any], None]]] = {
        RunFinished: _finished,
        PlanAwaitingApproval: _paused,
        PlanApproved: _note,
        AnswerEvent: _answer,
        CacheHit: _note,
        CacheAdapted: _note,
        CacheMiss: _note,
        PlanInvalid: _note,
        ReplanEvent: _note,
        TaskSkipped: _note,
        LLMCallStarted: _call_started,
        LLMRetry: _call_retried,
        ModelWaiting: _call_waited,
        ModelAcquired: _call_waited,
        LLMCallFinished: _call_finished,
        TaskPlanned: _planned,
        TaskStarted: _started,
        TaskRecovery: _recovery,
        TaskFinished: _ended,
        TaskFailed: _ended,
        TaskCancelled: _ended,
    }


def _key(
    event: TaskStarted | TaskRecovery | TaskFinished | TaskFailed | TaskCancelled,
) -> int | str:
    """The call an event is about: its task, or one element of a fan-out task ("3.1")."""
    return event.task_id if event.item is None else f"{event.task_id}.{event.item}"


def _fail(span: Span, kind: str, message: str, end_ns: int | None = None) -> None:
    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, message))
    if end_ns is not None:
        span.end(end_ns)


def _error_type(error: dict[str, Any]) -> str:
    """planweave's failure class of a reported error, else its type's name."""
    name = str(error.get("type", ""))
    cls = getattr(errors, name, None)
    if isinstance(cls, type) and issubclass(cls, errors.PlanweaveError):
        category = classify_type(cls)
        if category != "error":
            return category
    return name or "_OTHER"


def _served(provider: str, endpoint: str | None, openinference: bool) -> dict[str, Any]:
    """The attributes every chat span of a run shares: who serves the model, and where."""
    attributes: dict[str, Any] = {}
    if provider:
        attributes["gen_ai.provider.name"] = provider
        if openinference:
            attributes |= {"llm.provider": provider, "llm.system": provider}
    if endpoint:
        try:
            parts = urlsplit(endpoint)
            host, port = parts.hostname, parts.port
        except ValueError:
            host, port = None, None
        # The host alone: a user and password before it never reach an attribute.
        if host:
            attributes["server.address"] = host
            port = port or {"https": 443, "http": 80}.get(parts.scheme)
            if port:
                attributes["server.port"] = port
    return attributes


def _messages(messages: Sequence[tuple[str, str]], finish: str = "") -> str:
    """Messages in the GenAI conventions' JSON form (`gen_ai.input.messages`); `finish` is the
    last one's finish reason."""
    shown: list[dict[str, Any]] = [
        {"role": role, "parts": [{"type": "text", "content": text}]} for role, text in messages
    ]
    if finish and shown:
        shown[-1]["finish_reason"] = finish
    return json.dumps(shown, ensure_ascii=False)


def _flat(prefix: str, messages: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Messages as OpenInference spells them: one attribute per field of each message."""
    attributes: dict[str, str] = {}
    for i, (role, text) in enumerate(messages):
        attributes[f"{prefix}.{i}.message.role"] = role
        attributes[f"{prefix}.{i}.message.content"] = text
    return attributes


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _scalar(value: Any) -> bool:
    return isinstance(value, str | bool | int | float)
