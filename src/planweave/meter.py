"""Counting LLM use per run and reporting each call on the event stream."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from contextlib import aclosing, contextmanager
from contextvars import ContextVar
from typing import Any

import anyio

from .errors import BudgetExceeded, LLMError, RunCancelled, UserError
from .events import (
    PROGRESS_EVERY,
    EventBus,
    LLMCallFinished,
    LLMCallStarted,
    LLMProgress,
    LLMReplayDiverged,
    ModelAcquired,
    ModelWaiting,
)
from .llm.base import (
    LLM,
    LLMRequest,
    Purpose,
    ToolCall,
    Usage,
    estimate_tokens,
    estimate_usage,
)
from .llm.queue import Listener, listening
from .records import LLMUsage, Price, Replay
from .recoverer import LLMRecoverer
from .recovery import Budget, Recovery
from .redaction import encodable, redact

__all__ = ["MeteredLLM", "current_llm", "read_tool_turn", "request_hash", "tool_turn"]

# The run's meter while it answers, for tools that call the run's LLM (the `llm` built-in):
# their calls are counted, budgeted, retried and journaled like the planner's.
_CURRENT: ContextVar[MeteredLLM | None] = ContextVar("planweave_run_llm", default=None)


def current_llm() -> MeteredLLM:
    """The LLM of the run this code is part of; UserError outside a run."""
    llm = _CURRENT.get()
    if llm is None:
        raise UserError("this tool calls the run's LLM, so it only runs inside a planweave run")
    return llm


def request_hash(request: LLMRequest) -> str:
    """A fingerprint of everything that shapes a response to `request` (a request without
    tools, tool calls or tool results has the fingerprint it had before native mode)."""
    fields: list[Any] = [
        [
            [m.role, m.content] if not (m.tool_calls or m.tool_call_id) else m.to_dict()
            for m in request.messages
        ],
        request.stop,
        request.max_tokens,
        request.temperature,
        request.grammar,
        request.json_schema,
    ]
    if request.tools:
        fields.append(request.tools)
    body = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def tool_turn(text: str, calls: Sequence[ToolCall]) -> str:
    """How a response to a request with tools is journaled (and replayed): its text and the
    tool calls the model asked for, as one JSON object."""
    listed = [call.to_dict() for call in calls]
    return json.dumps({"text": text, "tool_calls": listed}, ensure_ascii=False)


def read_tool_turn(recorded: str) -> tuple[str, list[ToolCall]]:
    """The text and tool calls of a journaled response to a request with tools (`tool_turn`);
    a text of another form is all text."""
    try:
        data = json.loads(recorded)
        return str(data["text"]), [ToolCall.from_dict(c) for c in data["tool_calls"]]
    except (ValueError, TypeError, KeyError, AttributeError):
        return recorded, []


class MeteredLLM:
    """Wraps a backend for one run: streams text, adds up usage, emits call events, and
    replays recorded responses when the run is resumed."""

    def __init__(
        self,
        llm: LLM,
        bus: EventBus,
        replay: Mapping[int, Replay] | None = None,
        *,
        recovery: Recovery | None = None,
        budget: Budget | None = None,
        price: Price | None = None,
    ):
        self.llm = llm
        self.bus = bus
        self.usage = LLMUsage(cost=None if price is None else 0.0)
        self.price = price
        self.replay = dict(replay or {})
        self.budget = budget
        # Which failed requests are sent again is the recovery policy's, applied by its engine.
        self._resend = LLMRecoverer(recovery, bus)

    def _check_budget(self) -> None:
        budget = self.budget
        if budget is None:
            return
        if budget.llm_calls is not None and self.usage.calls >= budget.llm_calls:
            raise BudgetExceeded(
                f"the run's budget of {budget.llm_calls} LLM calls is spent", limit="llm_calls"
            )
        spent = self.usage.prompt_tokens + self.usage.completion_tokens
        if budget.tokens is not None and spent >= budget.tokens:
            raise BudgetExceeded(
                f"the run's budget of {budget.tokens} tokens is spent ({spent} used)",
                limit="tokens",
            )

    async def stream(
        self, request: LLMRequest, *, calls: list[ToolCall] | None = None
    ) -> AsyncGenerator[str, None]:
        """Yield the response's text as it streams.  The call is counted even when the
        consumer stops early (the planner drops the rest of the stream after `join()`).  The
        tool calls the model asks for (a request with `tools`) are added to `calls`."""
        calls = calls if calls is not None else []
        purpose = request.purpose
        self._check_budget()
        self.usage.calls += 1
        call = self.usage.calls
        fingerprint = request_hash(request)
        recorded = self._recorded(call, purpose, fingerprint)
        prompt = [{"role": m.role, "content": redact(m.content)} for m in request.messages]
        if recorded is not None:
            yield self._replayed(call, request, recorded, prompt, calls)
            return
        self._started(call, request, fingerprint, prompt)
        started = time.monotonic()
        parts: list[str] = []
        usage: list[Usage] = []
        finish: list[str] = []
        named: dict[str, str] = {}
        error: dict[str, Any] | None = None
        try:
            sent = self._sent(request, call, parts, usage, finish, named, calls)
            async with aclosing(sent) as texts:
                told = started
                async for text in texts:
                    now = time.monotonic()
                    if now - told >= PROGRESS_EVERY:
                        told = now
                        self._progress(call, purpose, parts, now - started)
                    yield text
        except LLMError as exc:
            error = exc.to_dict()
            raise
        except anyio.get_cancelled_exc_class():
            # Cut short by the run's cancellation: not a response to replay on resume.
            error = RunCancelled("the call was cancelled with its run").to_dict()
            raise
        finally:
            text = "".join(parts)
            if request.tools:
                text = tool_turn(text, calls)
            used = usage[-1] if usage else estimate_usage(request.messages, text)
            self._finished(
                call,
                purpose,
                used,
                time.monotonic() - started,
                text,
                error=error,
                finish_reason=finish[-1] if finish else None,
                response_id=named.get("id"),
                response_model=named.get("model"),
            )

    def _started(
        self, call: int, request: LLMRequest, fingerprint: str, prompt: list[dict[str, str]]
    ) -> None:
        """Report call `call` as sent to the model: its request's fingerprint, (redacted)
        messages and settings."""
        self.bus.emit(
            LLMCallStarted(
                call=call,
                purpose=request.purpose,
                model=self.llm.model,
                request_hash=fingerprint,
                messages=prompt,
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                stop=list(request.stop),
            )
        )

    async def _sent(
        self,
        request: LLMRequest,
        call: int,
        parts: list[str],
        usage: list[Usage],
        finish: list[str],
        named: dict[str, str],
        calls: list[ToolCall],
    ) -> AsyncGenerator[str, None]:
        """Send `request` (again after a failure the recovery policy retries); collect the
        text in `parts`, the backend's usage report in `usage`, why the model stopped in
        `finish`, the response's id and model in `named` and its tool calls in `calls` as they
        arrive."""
        heard = self._waits(call, request.purpose)

        async def once() -> AsyncGenerator[str, None]:
            text = _Text()
            calls.clear()
            async with aclosing(self.llm.stream(request)) as deltas:
                while True:
                    # Only the backend's own steps hear of a wait for the model.
                    with listening(heard):
                        delta = await anext(deltas, None)
                    if delta is None:
                        break
                    if delta.usage is not None:
                        usage.append(delta.usage)
                    if delta.finish_reason is not None:
                        finish.append(delta.finish_reason)
                    if delta.response_id is not None:
                        named["id"] = delta.response_id
                    if delta.response_model is not None:
                        named["model"] = delta.response_model
                    calls.extend(delta.tool_calls)
                    piece = text.feed(delta.text)
                    if piece:
                        parts.append(piece)
                        yield piece
            rest = text.close()
            if rest:
                parts.append(rest)
                yield rest

        async with aclosing(self._resend.stream(once, call, request.purpose)) as texts:
            async for piece in texts:
                yield piece

    def _progress(self, call: int, purpose: Purpose, parts: list[str], elapsed: float) -> None:
        tokens = estimate_tokens("".join(parts))
        self.bus.emit(LLMProgress(call=call, purpose=purpose, tokens=tokens, elapsed=elapsed))

    def _waits(self, call: int, purpose: Purpose) -> Listener:
        """What the backend tells of call `call`'s wait for the model, as events."""

        def heard(ahead: int, waited: float) -> None:
            if ahead:
                self.bus.emit(ModelWaiting(call=call, purpose=purpose, ahead=ahead))
            else:
                self.bus.emit(ModelAcquired(call=call, purpose=purpose, waited=round(waited, 3)))

        return heard

    def _recorded(self, call: int, purpose: Purpose, fingerprint: str) -> Replay | None:
        """The recorded response to replay for call `call`, if it answered this very request.
        One recorded for another request is a divergence: reported, and the call is asked
        again (see `LLMReplayDiverged`)."""
        recorded = self.replay.pop(call, None)
        if recorded is None or (recorded.purpose, recorded.request_hash) == (purpose, fingerprint):
            return recorded
        self.bus.emit(
            LLMReplayDiverged(
                call=call,
                purpose=purpose,
                request_hash=fingerprint,
                recorded_purpose=recorded.purpose,
                recorded_hash=recorded.request_hash,
            )
        )
        return None

    def _replayed(
        self,
        call: int,
        request: LLMRequest,
        recorded: Replay,
        prompt: list[dict[str, str]],
        calls: list[ToolCall],
    ) -> str:
        """Report call `call` as answered by its `recorded` response; its text (and, for a
        request with tools, its tool calls added to `calls`)."""
        purpose, model = request.purpose, self.llm.model
        self.bus.emit(
            LLMCallStarted(call=call, purpose=purpose, model=model, replayed=True, messages=prompt)
        )
        used = Usage(recorded.prompt_tokens, recorded.completion_tokens)
        self._finished(call, purpose, used, recorded.duration, recorded.text, replayed=True)
        if not request.tools:
            return recorded.text
        text, replayed = read_tool_turn(recorded.text)
        calls.extend(replayed)
        return text

    def _finished(
        self,
        call: int,
        purpose: Purpose,
        used: Usage,
        duration: float,
        text: str,
        *,
        error: dict[str, Any] | None = None,
        replayed: bool = False,
        finish_reason: str | None = None,
        response_id: str | None = None,
        response_model: str | None = None,
    ) -> None:
        """Count a call's tokens (and their cost, where priced) into the run's usage and
        report the call as finished."""
        self.usage.prompt_tokens += used.prompt_tokens
        self.usage.completion_tokens += used.completion_tokens
        cost = None
        if self.price is not None:
            cost = self.price.cost(used.prompt_tokens, used.completion_tokens)
            self.usage.cost = (self.usage.cost or 0.0) + cost
        self.bus.emit(
            LLMCallFinished(
                call=call,
                purpose=purpose,
                model=self.llm.model,
                prompt_tokens=used.prompt_tokens,
                completion_tokens=used.completion_tokens,
                duration=duration,
                text=text,
                error=error,
                replayed=replayed,
                finish_reason=finish_reason,
                response_id=response_id,
                response_model=response_model,
                cost=cost,
            )
        )

    @contextmanager
    def serving(self) -> Iterator[MeteredLLM]:
        """A scope in which `current_llm()` is this meter (tasks started inside inherit it)."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)

    async def complete(self, request: LLMRequest, *, calls: list[ToolCall] | None = None) -> str:
        """The response's whole text; its tool calls added to `calls` (see `stream`)."""
        parts = []
        async with aclosing(self.stream(request, calls=calls)) as stream:
            async for text in stream:
                parts.append(text)
        return "".join(parts)


class _Text:
    """A response's text made storable as it streams.  A model's output is untrusted and a lone
    surrogate (JSON's "\\ud800") cannot be encoded, so it would fail the journal, the terminal
    and `--json` far from its cause; it becomes U+FFFD here, once for every backend, before the
    parser, tools, prompts or views see it.  A pair split across two chunks is joined."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        piece, self._held = self._held + piece, ""
        if piece and "\ud800" <= piece[-1] <= "\udbff":
            piece, self._held = piece[:-1], piece[-1]
        return encodable(piece)

    def close(self) -> str:
        held, self._held = self._held, ""
        return encodable(held)
