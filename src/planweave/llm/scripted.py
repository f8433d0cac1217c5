"""A scripted LLM for tests and benchmarks.

`Script` decides each reply (in order, by a function, or by the request's purpose);
`ScriptedLLM` plays it in-process, and `ScriptedServer` serves it as a real OpenAI-compatible
HTTP endpoint on loopback (real SSE chunks, real usage numbers), so the real client path of
`OpenAICompatible` is exercised.  Replies can stream slowly, wait before the first token, break off
mid-stream, or answer with an HTTP error such as 429 with `Retry-After`.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, get_args

import anyio

from ..errors import LLMError, LLMRateLimitError, LLMStreamError, UserError
from .base import (
    LLM,
    PURPOSE_HEADER,
    Delta,
    LLMRequest,
    Message,
    Purpose,
    ToolCall,
    Usage,
    estimate_usage,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["Reply", "Script", "ScriptedLLM", "ScriptedServer"]


@dataclass(slots=True)
class Reply:
    """One scripted response.

    `chunk_size` characters per streamed chunk, `delay` seconds between chunks, `ttft` seconds
    before the first; `cut_after` breaks the stream after that many characters; a `status` other
    than 200 answers with an error body (and `retry_after` for 429).  `tool_calls` (name and
    arguments each: an object, or JSON text sent as it is, malformed or not) answer the way
    native function calling does, streamed (each call's arguments in `chunk_size` pieces after
    its text) or not; a non-streaming reply waits as long as streaming it would have taken.
    """

    text: str = ""
    chunk_size: int = 4
    delay: float = 0.0
    ttft: float = 0.0
    cut_after: int | None = None
    status: int = 200
    retry_after: float | None = None
    tool_calls: list[tuple[str, dict[str, Any] | str]] | None = None

    def duration(self) -> float:
        """How long streaming this reply takes."""
        size = len(self.text) + sum(len(c.arguments) + len(c.name) for c in self.calls())
        chunks = max(1, -(-size // max(1, self.chunk_size)))
        return self.ttft + (chunks - 1) * self.delay

    def calls(self) -> list[ToolCall]:
        """The reply's tool calls as the wire carries them (ids `call_0`, `call_1`, ...)."""
        return [
            ToolCall(f"call_{i}", name, args if isinstance(args, str) else json.dumps(args))
            for i, (name, args) in enumerate(self.tool_calls or [])
        ]

    def chunks(self) -> list[str]:
        text = self.text if self.cut_after is None else self.text[: self.cut_after]
        size = max(1, self.chunk_size)
        return [text[i : i + size] for i in range(0, len(text), size)]


ReplySource = Reply | str
Responder = Callable[[list[Message]], ReplySource]
Route = Callable[[list[Message], Purpose], ReplySource]

_PURPOSES: dict[str, Purpose] = {p: p for p in get_args(Purpose)}


class Script:
    """Decides the reply to each request and records every request it saw, with its purpose.

    Build it from a list of replies (served in order), a function of the messages, a function
    of the messages and the purpose with `Script.routed(fn)`, or per purpose with
    `Script.by_purpose(planner=[...], joiner=[...])`.  The purpose is the one the request
    carries (`LLMRequest.purpose`, or the `X-Planweave-Purpose` header over HTTP).
    """

    def __init__(self, replies: Iterable[ReplySource] | Responder) -> None:
        self.requests: list[list[Message]] = []
        self.purposes: list[Purpose] = []
        self._lock = threading.Lock()
        if callable(replies):
            responder = replies
            self._route: Route = lambda messages, purpose: responder(messages)
        else:
            queue = list(replies)

            def in_order(messages: list[Message], purpose: Purpose) -> ReplySource:
                if not queue:
                    raise UserError("the script has no reply left for this request")
                return queue.pop(0)

            self._route = in_order

    @classmethod
    def routed(cls, route: Route) -> Script:
        """Replies from a function of the messages and the request's purpose."""
        script = cls(())
        script._route = route
        return script

    @classmethod
    def by_purpose(cls, **replies: Iterable[ReplySource]) -> Script:
        """Replies per purpose (planner, repair, joiner, react, ...), each served in order."""
        unknown = sorted(replies.keys() - _PURPOSES.keys())
        if unknown:
            raise UserError(f"no such purpose: {', '.join(unknown)}")
        queues = {purpose: list(items) for purpose, items in replies.items()}

        def route(messages: list[Message], purpose: Purpose) -> ReplySource:
            queue = queues.get(purpose)
            if not queue:
                raise UserError(f"the script has no {purpose} reply left")
            return queue.pop(0)

        return cls.routed(route)

    def reply(self, messages: list[Message], purpose: Purpose) -> Reply:
        with self._lock:
            self.requests.append(list(messages))
            self.purposes.append(purpose)
            source = self._route(list(messages), purpose)
        return Reply(source) if isinstance(source, str) else source


class ScriptedLLM(LLM):
    """Plays a `Script` in-process (no HTTP); the fast path for scheduler and runtime tests."""

    provider: ClassVar[str] = "planweave.scripted"
    tool_calling: ClassVar[bool] = True

    def __init__(
        self, script: Script | Iterable[ReplySource] | Responder, *, model: str = "scripted"
    ) -> None:
        self.script = script if isinstance(script, Script) else Script(script)
        self.model = model

    async def stream(self, request: LLMRequest) -> AsyncGenerator[Delta, None]:
        reply = self.script.reply(request.messages, request.purpose)
        if reply.status == 429:
            raise LLMRateLimitError("rate limited (scripted)", retry_after=reply.retry_after)
        if reply.status != 200:
            raise LLMError(f"the endpoint answered {reply.status} (scripted)")
        if reply.ttft:
            await anyio.sleep(reply.ttft)
        sent = []
        for i, chunk in enumerate(reply.chunks()):
            if i and reply.delay:
                await anyio.sleep(reply.delay)
            sent.append(chunk)
            yield Delta(text=chunk)
        if reply.cut_after is not None:
            raise LLMStreamError("the response stream broke off (scripted)")
        calls = tuple(reply.calls())
        yield Delta(finish_reason="tool_calls" if calls else "stop", tool_calls=calls)
        yield Delta(usage=estimate_usage(request.messages, "".join(sent)))


def _no_guess(messages: list[Message]) -> Purpose:
    return "other"


@dataclass(frozen=True, slots=True)
class _Shape:
    """The parts every response to one request shares, and the two forms of that response."""

    ident: str
    created: int
    model: str
    usage: Usage

    def _usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "total_tokens": self.usage.prompt_tokens + self.usage.completion_tokens,
        }

    def completion(self, reply: Reply) -> dict[str, Any]:
        """A whole `chat.completion`, with native tool calls when the reply has them."""
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [call.to_dict() for call in reply.calls()]
        finish = "tool_calls" if reply.tool_calls else "stop"
        return {
            "id": self.ident,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": self._usage(),
        }

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": self.ident,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    async def stream(self, reply: Reply, include_usage: bool) -> AsyncIterator[bytes]:
        """The reply as server-sent `chat.completion.chunk` events, paced as scripted."""
        if reply.ttft:
            await asyncio.sleep(reply.ttft)
        yield _sse(self._chunk({"role": "assistant", "content": ""}))
        for i, piece in enumerate(reply.chunks()):
            if i and reply.delay:
                await asyncio.sleep(reply.delay)
            yield _sse(self._chunk({"content": piece}))
        if reply.cut_after is not None:
            # Drop the connection mid-response, as a crashed server would.
            raise ConnectionAbortedError("scripted cut-off")
        for index, call in enumerate(reply.calls()):
            head = call.to_dict() | {"index": index}
            head["function"] = {"name": call.name, "arguments": ""}
            yield _sse(self._chunk({"tool_calls": [head]}))
            size = max(1, reply.chunk_size)
            for start in range(0, len(call.arguments), size):
                if reply.delay:
                    await asyncio.sleep(reply.delay)
                arguments = {"arguments": call.arguments[start : start + size]}
                yield _sse(self._chunk({"tool_calls": [{"index": index, "function": arguments}]}))
        yield _sse(self._chunk({}, "tool_calls" if reply.tool_calls else "stop"))
        if include_usage:
            yield _sse(self._chunk({}) | {"choices": [], "usage": self._usage()})
        yield _sse("[DONE]")


def _sse(data: dict[str, Any] | str) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {payload}\n\n".encode()


class ScriptedServer:
    """A real OpenAI-compatible chat completions server on loopback, replying from a `Script`.

    Use as a context manager; `base_url` is ready inside it.  `bodies` and `headers` hold each
    request as it arrived.  Needs `planweave[testing]`.
    """

    def __init__(
        self,
        script: Script | Iterable[ReplySource] | Responder,
        *,
        model: str = "scripted",
        host: str = "127.0.0.1",
        guess: Callable[[list[Message]], Purpose] = _no_guess,
    ) -> None:
        """`guess` tells a request's purpose from its messages for clients that send no
        purpose header (other runtimes pointed at the same server; planweave's own requests
        carry it): `planweave.prompts.purpose_of` knows planweave's prompts."""
        try:
            import uvicorn
            from starlette.applications import Starlette
            from starlette.routing import Route
        except ImportError as exc:
            raise UserError(
                "ScriptedServer needs the testing extra: pip install 'planweave[testing]'"
            ) from exc
        self.script = script if isinstance(script, Script) else Script(script)
        self.model = model
        self.guess = guess
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        app = Starlette(routes=[Route("/v1/chat/completions", self._completions, methods=["POST"])])
        config = uvicorn.Config(
            app, host=host, port=0, log_level="critical", lifespan="off", ws="none", http="h11"
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None
        self.base_url = ""

    async def _completions(self, request: Request) -> Response:
        from starlette.responses import JSONResponse, StreamingResponse

        body = await request.json()
        self.bodies.append(body)
        self.headers.append(dict(request.headers))
        messages = [Message.from_dict(m) for m in body["messages"]]
        try:
            purpose = _PURPOSES.get(request.headers.get(PURPOSE_HEADER) or "")
            purpose = purpose or self.guess(messages)
            reply = self.script.reply(messages, purpose)
        except UserError as exc:
            return JSONResponse({"error": {"message": str(exc), "type": "script"}}, 500)
        if reply.status != 200:
            headers = {}
            if reply.retry_after is not None:
                headers["retry-after"] = str(reply.retry_after)
            return JSONResponse(
                {"error": {"message": f"scripted error {reply.status}", "type": "scripted"}},
                reply.status,
                headers=headers,
            )
        shape = _Shape(
            ident=f"chatcmpl-scripted-{len(self.script.requests)}",
            created=int(time.time()),
            model=body.get("model", self.model),
            usage=estimate_usage(messages, reply.text),
        )
        if not body.get("stream"):
            await asyncio.sleep(reply.duration())
            return JSONResponse(shape.completion(reply))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(shape.stream(reply, include_usage), media_type="text/event-stream")

    @property
    def requests(self) -> list[list[Message]]:
        return self.script.requests

    def start(self) -> ScriptedServer:
        self._thread = threading.Thread(target=self._server.run, name="scripted-llm", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the scripted LLM server did not start")
            time.sleep(0.005)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
