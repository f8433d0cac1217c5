"""The contract every LLM backend meets: stream text deltas for a chat request, report usage."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import anyio

from ..errors import LLMTimeout, UserError

__all__ = [
    "LLM",
    "PURPOSE_HEADER",
    "Deadlines",
    "Delta",
    "LLMRequest",
    "Message",
    "PromptStyle",
    "Purpose",
    "ToolCall",
    "Usage",
    "estimate_tokens",
    "estimate_usage",
    "require_tool_calling",
    "within_deadlines",
]

Role = Literal["system", "user", "assistant", "tool"]

Purpose = Literal[
    "planner", "repair", "joiner", "react", "native", "decompose", "tool", "output", "other"
]
"""What a request is for: each call's events and journal entry carry it, and fakes route by it
(`tool`: the `llm` built-in tool's calls; `output`: writing a typed answer, `typed`; `native`:
a turn of native function calling, `native`)."""

PromptStyle = Literal["full", "compact"]
"""How much the planner's and joiner's prompts spell out: `full` (worked examples, a thought
before every answer) is what small models need; `compact` is for capable endpoints."""

PURPOSE_HEADER = "X-Planweave-Purpose"
"""The HTTP header that carries a request's purpose; servers that do not know it ignore it."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A function call a model asks for in native function calling: its `id`, the tool's
    `name` and the `arguments` as the JSON text the model wrote (not yet read)."""

    id: str
    name: str
    arguments: str

    def to_dict(self) -> dict[str, Any]:
        """The call in OpenAI's wire format."""
        function = {"name": self.name, "arguments": self.arguments}
        return {"id": self.id, "type": "function", "function": function}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """A call from OpenAI's wire format; missing parts are empty."""
        function = data.get("function") or {}
        return cls(
            str(data.get("id") or ""),
            str(function.get("name") or ""),
            str(function.get("arguments") or ""),
        )


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message.  An assistant's may carry the `tool_calls` it asked for, a tool
    result (role `tool`) the `tool_call_id` it answers; other messages have neither."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The message in OpenAI's wire format (role and content only, unless it has tool
        calls or answers one)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["content"] = self.content or None
            out["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """A message from OpenAI's wire format (text content only)."""
        calls = tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ())
        call_id = data.get("tool_call_id")
        return cls(
            data["role"],
            data.get("content") or "",
            calls,
            None if call_id is None else str(call_id),
        )


@dataclass(slots=True)
class LLMRequest:
    """One chat completion.  `grammar` is a GBNF grammar for backends that take one; `json_schema`
    likewise for backends with structured output.  Backends ignore what they cannot use.
    `tools` are OpenAI function schemas offered for native function calling (backends with
    `LLM.tool_calling` send them).  `purpose` says which part of planweave asks; it is not
    part of the request's fingerprint."""

    messages: list[Message]
    stop: list[str] = field(default_factory=list)
    max_tokens: int | None = None
    temperature: float = 0.0
    grammar: str | None = None
    json_schema: dict[str, Any] | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    purpose: Purpose = "other"


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    estimated: bool = False


@dataclass(frozen=True, slots=True)
class Delta:
    """A piece of streamed text; the last deltas of a response may carry only `usage`, or
    `finish_reason`, why the model stopped ("stop", "length", ...), where the backend says.
    A delta may also name the response (`response_id`) and the model that answered
    (`response_model`, which an endpoint may spell otherwise than the one asked for), and
    the model's `tool_calls`, each whole (native function calling)."""

    text: str = ""
    usage: Usage | None = None
    finish_reason: str | None = None
    response_id: str | None = None
    response_model: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


class LLM(ABC):
    """A chat model that streams.

    `stream()` yields text deltas as the model produces them and, where the backend knows it, a
    final delta with token usage.  Backends translate their own errors into `LLMError`s once,
    here at the boundary; nothing from a provider SDK leaks past `stream()`.
    """

    model: str
    # Who serves the model, as traces name it (`gen_ai.provider.name`): "openai" for whatever
    # speaks OpenAI's API, as OpenTelemetry's conventions ask; "" where nothing fits.
    provider: ClassVar[str] = ""
    # The URL requests go to, for backends that send them over the network (traces show its
    # host and port; credentials in it are never shown).
    endpoint: str | None = None
    # The prompts a runtime uses with this backend unless told otherwise: small models keep the
    # full ones (their accuracy was measured with them), capable endpoints get the compact ones.
    prompt_style: ClassVar[PromptStyle] = "full"
    # The embedded model: its prompts and defaults are the ones its accuracy was measured with.
    embedded: bool = False
    # Native function calling: `stream()` offers a request's `tools` to the model and delivers
    # the calls it asks for (`Delta.tool_calls`).  Native mode needs it.
    tool_calling: ClassVar[bool] = False

    @abstractmethod
    def stream(self, request: LLMRequest) -> AsyncGenerator[Delta, None]:
        """Stream one response."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release connections; the default has none."""

    async def warm(self) -> None:  # noqa: B027 - optional hook, most backends have nothing to do
        """Do now the one-time work the first request would otherwise do (a server calls this
        before it listens, so that no request waits behind it); the default has none."""


def require_tool_calling(llm: LLM) -> None:
    """Refuse native mode (`planweave.native`) on a backend without native function calling
    (`LLM.tool_calling`: a backend of your own that leaves it False): a UserError saying so.
    The embedded model calls tools in its chat template's tags (`llm.tool_calls`)."""
    if llm.tool_calling:
        return
    what = "the embedded model" if llm.embedded else f"the {type(llm).__name__} backend"
    raise UserError(
        f"native mode calls tools through an endpoint's function calling, which {what} does "
        "not have: give an endpoint (--base-url), or use mode compiled or react"
    )


def estimate_usage(messages: Sequence[Message], completion: str) -> Usage:
    """Rough usage of a call, for backends and fakes that report none."""
    prompt = sum(estimate_tokens(m.content) + 4 for m in messages)
    return Usage(prompt, estimate_tokens(completion), estimated=True)


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters a token) for backends that report none."""
    return max(1, (len(text) + 3) // 4) if text else 0


@dataclass(frozen=True, slots=True)
class Deadlines:
    """How long a streamed response may take, in seconds: until its first text (`first_token`,
    sending the request included), between two pieces of text (`between_chunks`: keep-alives and
    empty chunks do not count as progress), and in all (`call`).  None: no limit."""

    first_token: float | None = 120.0
    between_chunks: float | None = 60.0
    call: float | None = 600.0

    def __post_init__(self) -> None:
        for name in ("first_token", "between_chunks", "call"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float) or not value > 0
            ):
                raise UserError(f"the LLM's {name} deadline must be seconds > 0, not {value!r}")


async def within_deadlines(
    deltas: AsyncGenerator[Delta, None], deadlines: Deadlines, source: str = "the endpoint"
) -> AsyncGenerator[Delta, None]:
    """`deltas`, cut with LLMTimeout when a deadline passes (the stream is closed first)."""
    started = anyio.current_time()
    whole = math.inf if deadlines.call is None else started + deadlines.call
    progress = started
    received = False
    async with aclosing(deltas):
        while True:
            gap = deadlines.between_chunks if received else deadlines.first_token
            limit = "between_chunks" if received else "first_token"
            end = math.inf if gap is None else progress + gap
            if whole <= end:
                end, limit, gap = whole, "call", deadlines.call
            delta: Delta | None = None
            with anyio.CancelScope(deadline=end) as scope:
                try:
                    delta = await anext(deltas)
                except StopAsyncIteration:
                    return
            if scope.cancelled_caught or delta is None:
                raise LLMTimeout(_overdue(limit, gap or 0.0, source), limit=limit, seconds=gap)
            if delta.text or delta.tool_calls:
                received = True
                progress = anyio.current_time()
            yield delta


def _overdue(limit: str, seconds: float, source: str) -> str:
    if limit == "first_token":
        return f"no text from {source} within {seconds:g} s of the request"
    if limit == "between_chunks":
        return f"{source} sent no more text for {seconds:g} s mid-response"
    return f"the response from {source} took longer than {seconds:g} s in all"
