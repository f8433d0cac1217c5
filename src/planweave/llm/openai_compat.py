"""Any OpenAI-compatible chat completions endpoint (OpenAI, vLLM, llama.cpp server, Ollama),
through the official `openai` SDK, streaming."""

from __future__ import annotations

import importlib
import json
import os
import ssl
from collections.abc import AsyncGenerator
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

import openai
from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, ValidationError

from ..errors import (
    LLMConnectionError,
    LLMContextOverflow,
    LLMError,
    LLMMalformedStream,
    LLMRateLimitError,
    LLMStreamError,
    UserError,
)
from ..redaction import add_secret, redact_url
from .base import (
    LLM,
    PURPOSE_HEADER,
    Deadlines,
    Delta,
    LLMRequest,
    PromptStyle,
    ToolCall,
    Usage,
    within_deadlines,
)

if TYPE_CHECKING:
    from .registry import LLMChoice

__all__ = ["OpenAICompatible", "from_choice"]

_CONTEXT_HINTS = (
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
    "context window",
)


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP library's transport errors, which surface raw when a stream breaks mid-way.

    Releases of the openai SDK ride on `httpx` or its successor `httpx2`; catch whichever is
    installed, without depending on either by name."""
    found: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        error = getattr(module, "TransportError", None)
        if isinstance(error, type) and issubclass(error, BaseException):
            found.append(error)
    return tuple(found)


@cache
def _tls_context() -> ssl.SSLContext | None:
    """The HTTP library's default TLS context, built once per process and shared by every
    client: building it loads the CA bundle (about 20 ms), which each run's new client would
    otherwise pay before its first request.  None where the library offers no builder (then
    each client builds its own, as before)."""
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        build = getattr(module, "create_ssl_context", None)
        if callable(build):
            context = build()
            return context if isinstance(context, ssl.SSLContext) else None
    return None


_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    openai.APIConnectionError,
    *_transport_errors(),
)

# What a response stream raises that `OpenAICompatible._error` translates.
_STREAM_ERRORS: tuple[type[BaseException], ...] = (
    json.JSONDecodeError,
    UnicodeDecodeError,
    ValidationError,
    openai.APIError,
    *_CONNECTION_ERRORS,
)


class _Wire(BaseModel):
    # Read from the SDK's parsed chunk, which keeps whatever the server sent where it could not
    # build its own type (a string for a list, a list for an object).
    model_config = ConfigDict(from_attributes=True)


class _FunctionPiece(_Wire):
    name: str | None = None
    arguments: str | None = None


class _CallPiece(_Wire):
    index: NonNegativeInt = 0
    id: str | None = None
    function: _FunctionPiece | None = None


class _ChunkDelta(_Wire):
    content: str | None = None
    tool_calls: list[_CallPiece] | None = None


class _Choice(_Wire):
    delta: _ChunkDelta | None = None
    finish_reason: str | None = None


class _ChunkUsage(_Wire):
    prompt_tokens: NonNegativeInt | None = None
    completion_tokens: NonNegativeInt | None = None


class _Chunk(_Wire):
    """The fields of a `chat.completion.chunk` planweave reads, checked before use."""

    id: str | None = None
    model: str | None = None
    choices: list[_Choice] = Field(default_factory=list)
    usage: _ChunkUsage | None = None


class _Calls:
    """The tool calls of a streamed response, assembled from the pieces its chunks carry by
    index: the id and name first, the arguments' JSON text in pieces."""

    def __init__(self) -> None:
        self._parts: dict[int, list[str]] = {}

    def feed(self, pieces: list[_CallPiece]) -> None:
        for piece in pieces:
            part = self._parts.setdefault(piece.index, ["", "", ""])
            part[0] = piece.id or part[0]
            if piece.function is not None:
                part[1] = piece.function.name or part[1]
                part[2] += piece.function.arguments or ""

    def take(self) -> tuple[ToolCall, ...]:
        """The calls assembled so far, in index order (an id the server left out made up)."""
        calls = tuple(
            ToolCall(ident or f"call_{index}", name, arguments)
            for index, (ident, name, arguments) in sorted(self._parts.items())
        )
        self._parts.clear()
        return calls


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "the top level"


def _retry_after(exc: openai.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class OpenAICompatible(LLM):
    """Streams chat completions from an OpenAI-compatible server.

    Settings fall back to the environment: `PLANWEAVE_BASE_URL`, `PLANWEAVE_MODEL`, and
    `PLANWEAVE_API_KEY` then `OPENAI_API_KEY`.  `grammar_field` names the request field that
    carries a GBNF grammar where the server takes one (`"grammar"` for llama.cpp server,
    `"guided_grammar"` for vLLM); None sends no grammar.  A request with a JSON Schema (a typed
    answer) is sent it as `response_format` instead.  A request's `tools` are sent as they are;
    the calls the model streams back come whole with the finishing delta.  `deadlines` bound
    the wait for the first token, between chunks and for the whole call (LLMTimeout; a
    response of tool calls only counts as no text until they are whole); `timeout` is the HTTP
    client's own limit on each network operation.  The key is masked in every error text.

    Runtimes use the compact prompts with it by default (`PromptStyle`): an endpoint is taken
    to serve a capable model.
    """

    prompt_style: ClassVar[PromptStyle] = "compact"
    provider: ClassVar[str] = "openai"
    tool_calling: ClassVar[bool] = True

    def __init__(
        self,
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 0,
        grammar_field: str | None = None,
        extra_body: dict[str, Any] | None = None,
        deadlines: Deadlines | None = None,
    ) -> None:
        base_url = base_url or os.environ.get("PLANWEAVE_BASE_URL") or None
        model = model or os.environ.get("PLANWEAVE_MODEL")
        api_key = api_key or os.environ.get("PLANWEAVE_API_KEY") or os.environ.get("OPENAI_API_KEY")
        if not model:
            raise UserError("no model given: pass --model or set PLANWEAVE_MODEL")
        self.model = model
        self.base_url = base_url
        # Where the SDK sends requests: OPENAI_BASE_URL is its own fallback.
        self.endpoint = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        # As errors and logs name it: a credential in the URL masked.
        self._where = None if base_url is None else redact_url(base_url)
        self.grammar_field = grammar_field
        self.extra_body = dict(extra_body or {})
        self.deadlines = deadlines if deadlines is not None else Deadlines()
        add_secret(api_key)
        # Local servers (llama.cpp, vLLM, Ollama) accept any key; the SDK insists on one.
        self._settings: dict[str, Any] = {
            "base_url": base_url,
            "api_key": api_key or "not-needed",
            "timeout": timeout,
            "max_retries": max_retries,
        }
        self._client: openai.AsyncOpenAI | None = None

    def __repr__(self) -> str:
        # Never show the key.
        return f"OpenAICompatible(base_url={self._where!r}, model={self.model!r})"

    async def aclose(self) -> None:
        """Close pooled connections; the next call opens a new client."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def warm(self) -> None:
        """Build the client now: the TLS context (the CA bundle, about 20 ms) and the HTTP
        library's and the SDK's lazily imported modules (about 150 ms more)."""
        _ = self._opened().chat.completions

    def _opened(self) -> openai.AsyncOpenAI:
        """The client, built on first use: one per event loop (each CLI run has its own, a server
        one for all its runs), all sharing one TLS context."""
        if self._client is None:
            context = _tls_context()
            http = None if context is None else openai.DefaultAsyncHttpxClient(verify=context)
            self._client = openai.AsyncOpenAI(**self._settings, http_client=http)
        return self._client

    def _arguments(self, request: LLMRequest) -> dict[str, Any]:
        """The SDK's `chat.completions.create` arguments for `request`, streaming."""
        body = dict(self.extra_body)
        if request.grammar is not None and self.grammar_field and request.json_schema is None:
            body[self.grammar_field] = request.grammar
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in request.messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": request.temperature,
            # Servers ignore headers they do not know; planweave's scripted server routes by it.
            "extra_headers": {PURPOSE_HEADER: request.purpose},
        }
        if request.stop:
            kwargs["stop"] = request.stop[:4]
        if request.max_tokens is not None:
            kwargs["max_tokens"] = request.max_tokens
        if request.tools:
            kwargs["tools"] = request.tools
        if request.json_schema is not None:  # structured output: the schema, not a grammar
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": request.json_schema},
            }
        if body:
            kwargs["extra_body"] = body
        return kwargs

    def stream(self, request: LLMRequest) -> AsyncGenerator[Delta, None]:
        return within_deadlines(self._deltas(request), self.deadlines, self._where or "the API")

    async def _deltas(self, request: LLMRequest) -> AsyncGenerator[Delta, None]:
        """The response's text and usage as the endpoint streams them, its errors translated."""
        kwargs = self._arguments(request)
        received = False
        finished = False
        named = False
        calls = _Calls()
        try:
            response = await self._opened().chat.completions.create(**kwargs)
            async with response:
                async for event in response:
                    chunk = _Chunk.model_validate(event)
                    if not named and (chunk.id or chunk.model):
                        named = True
                        yield Delta(
                            response_id=chunk.id or None, response_model=chunk.model or None
                        )
                    if chunk.choices:
                        choice = chunk.choices[0]
                        delta = choice.delta or _ChunkDelta()
                        if delta.content:
                            received = True
                            yield Delta(text=delta.content)
                        if delta.tool_calls:
                            received = True
                            calls.feed(delta.tool_calls)
                        if choice.finish_reason is not None:
                            finished = True
                            yield Delta(finish_reason=choice.finish_reason, tool_calls=calls.take())
                    used = chunk.usage
                    if used is not None:
                        prompt, completion = used.prompt_tokens, used.completion_tokens
                        # A server that counts only one side reports nothing usable.
                        if prompt is not None and completion is not None:
                            yield Delta(usage=Usage(prompt, completion))
        except _STREAM_ERRORS as exc:
            raise self._error(exc, received) from exc
        if not finished:
            raise LLMStreamError("the response stream ended before the model finished")

    def _error(self, exc: BaseException, received: bool) -> LLMError:
        """The LLMError that `exc`, raised by the SDK, the HTTP library or a chunk's reading,
        stands for; a broken connection after text was `received` is a broken stream."""
        if isinstance(exc, json.JSONDecodeError):
            return LLMMalformedStream(
                f"the endpoint sent a stream event that is not JSON ({exc.msg})"
            )
        if isinstance(exc, UnicodeDecodeError):
            return LLMMalformedStream(
                f"the endpoint sent bytes that are not UTF-8 ({exc.reason} at byte {exc.start})"
            )
        if isinstance(exc, ValidationError):
            where = ", ".join(_location(e["loc"]) for e in exc.errors()[:3])
            return LLMMalformedStream(
                f"the endpoint sent a chunk that is not a chat completion chunk (at {where})"
            )
        if isinstance(exc, openai.RateLimitError):
            return LLMRateLimitError(
                f"rate limited by {self._where or 'the API'}: {exc.message}",
                retry_after=_retry_after(exc),
            )
        if isinstance(exc, openai.BadRequestError):
            if any(hint in exc.message.lower() for hint in _CONTEXT_HINTS):
                return LLMContextOverflow(f"prompt too long for {self.model}: {exc.message}")
            return LLMError(f"the endpoint rejected the request (400): {exc.message}")
        if isinstance(exc, openai.APIStatusError):
            return LLMError(f"the endpoint answered {exc.status_code}: {exc.message}")
        if isinstance(exc, _CONNECTION_ERRORS):
            if received:
                return LLMStreamError(f"the response stream broke off: {exc}")
            return LLMConnectionError(f"cannot reach {self._where or 'the OpenAI API'}: {exc}")
        assert isinstance(exc, openai.APIError)
        return LLMStreamError(f"the response stream broke off: {exc.message}")


def from_choice(choice: LLMChoice) -> OpenAICompatible:
    """The endpoint `choice` names (`base_url`, else env PLANWEAVE_BASE_URL or the SDK's own; the
    key from the environment), its grammar field only when plans are constrained (the
    `llm.registry` entry "endpoint")."""
    return OpenAICompatible(
        base_url=choice.base_url,
        model=choice.model,
        grammar_field=choice.grammar_field if choice.grammar else None,
        deadlines=choice.deadlines,
    )
