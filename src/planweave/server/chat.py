"""The OpenAI-compatible endpoint: `/v1/chat/completions` answers the last user message by
running a plan with the server's tools; `/v1/models` names the two ways it can.

Standard clients (the `openai` SDKs, curl) work unchanged; planweave's own detail (the run's
id, its tasks) rides in a `planweave` field they ignore.  Errors are in OpenAI's shape
(`{"error": {"message", "type", "param", "code"}}`, see `security.error_body`).  A run that ends
without an answer is an error (422, `server_error`/`run_failed`: a status SDKs do not retry,
since each retry would be a new run; in a stream, an `error` event), never an empty answer.  A
client that hangs up before its answer cancels the run (which keeps what it found, for a
resume).  Its runs are admitted like the API's (503 with `Retry-After` when the server holds
all it may).  Refused (400, naming the parameter) before any run starts: an empty question, a
malformed field, and what a run cannot do (the client's `tools`, `logprobs`, `n` other than
1, audio), rather than ignored.  `response_format` `json_schema` (or `json_object`) types the
answer (`typed`): the content is the schema's value as JSON, sent whole when streamed.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ..errors import UserError
from ..settings import Mode
from ..threads import check_thread, from_messages
from ..typed import OutputShape
from .api import Caller, check_question
from .security import error_body
from .service import RunService

__all__ = ["MODELS", "openai_router"]

MODELS: dict[str, Mode] = {"planweave": "compiled", "planweave-react": "react"}
# Streamed when the grounding check withdraws an answer already partly sent.
WITHDRAWN = "[withdrawn: that answer stated numbers no result gives; the answer again:]"


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    # Sampling options (temperature, max_tokens, ...) are the server's LLM's business.
    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    # Choices to make: one run gives one answer, so only 1.
    n: int | None = None


class InvalidParam(UserError):
    """A request this endpoint cannot answer because of its parameter `param` (named as the
    request writes it: `messages`, `tools`); `code` says how (OpenAI's error codes)."""

    def __init__(self, message: str, *, param: str, code: str = "invalid_value") -> None:
        super().__init__(message)
        self.param = param
        self.code = code


class UnknownModel(InvalidParam):
    """A model this endpoint does not serve (404)."""

    def __init__(self, model: str) -> None:
        shown = repr(model if len(model) <= 80 else model[:80] + "…")
        served = ", ".join(MODELS)
        super().__init__(
            f"no model {shown}; this server has {served}", param="model", code="model_not_found"
        )


def _text(message: ChatMessage) -> str:
    """A message's text; InvalidParam (400) for parts that are not text."""
    if isinstance(message.content, str):
        return message.content
    parts = message.content or []
    if any(part.get("type") != "text" for part in parts):
        raise InvalidParam("only text parts can be answered", param="messages")
    return "".join(str(part.get("text", "")) for part in parts)


def _history(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    """The conversation before the last user message, as (question, answer) pairs: each user
    message with the assistant's reply after it (`threads.from_messages`)."""
    last = max(i for i, m in enumerate(messages) if m.role == "user")
    pairs: list[tuple[str, str]] = []
    for i, message in enumerate(messages[:last]):
        if message.role == "user":
            reply = messages[i + 1] if messages[i + 1].role == "assistant" else None
            pairs.append((_text(message), "" if reply is None else _text(reply)))
    return pairs


def _thread(body: ChatRequest) -> str | None:
    """The thread `metadata.thread` names, whose recorded results a run may reuse."""
    metadata = (body.model_extra or {}).get("metadata")
    thread = metadata.get("thread") if isinstance(metadata, dict) else None
    if thread is None:
        return None
    try:
        return check_thread(thread)
    except UserError as exc:
        raise InvalidParam(str(exc), param="metadata") from None


def _question(messages: list[ChatMessage]) -> str:
    """The last user message's text; InvalidParam (400) when there is none, or nothing in it."""
    for message in reversed(messages):
        if message.role != "user":
            continue
        question = _text(message)
        if not question.strip():
            raise InvalidParam(
                "the last user message is empty: there is no question to answer", param="messages"
            )
        return question
    raise InvalidParam("there is no user message to answer", param="messages")


# What a run cannot do, by parameter: the values that ask for nothing beyond one answer in
# text, why others cannot be, and OpenAI's code for the refusal.  A parameter that asks for
# more is refused by name, never ignored (the client would trust its answer to honour it).
_THEIR_TOOLS = "planweave answers with its own tools; it cannot call the client's"
_TEXT = "the answer is text"
_NO_LOGPROBS = "an answer is made of several model calls; it has no log probabilities"
_SUPPORTED: dict[str, tuple[tuple[Any, ...], str, str]] = {
    "tools": ((None, []), _THEIR_TOOLS, "unsupported_parameter"),
    "functions": ((None, []), _THEIR_TOOLS, "unsupported_parameter"),
    "tool_choice": ((None, "none"), _THEIR_TOOLS, "unsupported_parameter"),
    "function_call": ((None, "none"), _THEIR_TOOLS, "unsupported_parameter"),
    "audio": ((None,), _TEXT, "unsupported_parameter"),
    "modalities": ((None, ["text"]), _TEXT, "unsupported_value"),
    "logprobs": ((None, False), _NO_LOGPROBS, "unsupported_value"),
    "top_logprobs": ((None, 0), _NO_LOGPROBS, "unsupported_value"),
    "n": ((None, 1), "this endpoint makes one choice per request (n=1)", "unsupported_value"),
}


def _check_supported(body: ChatRequest) -> None:
    """InvalidParam (400) naming the first parameter that asks for what a run cannot do."""
    given = body.model_dump(include={"n"}) | (body.model_extra or {})
    for name, (fine, why, code) in _SUPPORTED.items():
        value = given.get(name)
        # By type too: `0 == False`, and `n: true` is no `n: 1`.
        if any(value == f and type(value) is type(f) for f in fine):
            continue
        shown = json.dumps(value, ensure_ascii=False)
        shown = shown if len(shown) <= 80 else shown[:80] + "…"
        raise InvalidParam(f"{name}={shown} is not supported: {why}", param=name, code=code)


def _output(body: ChatRequest) -> OutputShape | None:
    """The typed answer `response_format` asks for: a `json_schema`'s value, or (`json_object`)
    any JSON object; None: text."""
    value = (body.model_extra or {}).get("response_format")
    if value is None or value == {"type": "text"}:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    spec = value.get("json_schema") if isinstance(value, dict) else None
    try:
        if kind == "json_object":
            return OutputShape.from_schema({"type": "object"}, patterns=False)
        if kind == "json_schema" and isinstance(spec, dict):
            return OutputShape.from_schema(spec.get("schema", {}), patterns=False)
    except UserError as exc:
        raise InvalidParam(str(exc), param="response_format") from None
    raise InvalidParam(
        "response_format must be {type: text}, {type: json_object} or "
        "{type: json_schema, json_schema: {name, schema}}",
        param="response_format",
        code="unsupported_value",
    )


def openai_router(service: RunService, *, max_question_chars: int) -> APIRouter:
    journal = service.journal
    router = APIRouter(prefix="/v1")

    # The models are as old as the server: the list and each model agree.
    created = int(time.time())

    def model(name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": created, "owned_by": "planweave"}

    @router.get("/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [model(name) for name in MODELS]}

    @router.get("/models/{name:path}")
    async def one_model(name: str) -> dict[str, Any]:
        if name not in MODELS:
            raise UnknownModel(name)
        return model(name)

    @router.post("/chat/completions", response_model=None)
    async def chat(
        body: ChatRequest, request: Request, user: Caller
    ) -> JSONResponse | StreamingResponse:
        if body.model not in MODELS:
            raise UnknownModel(body.model)
        _check_supported(body)
        output = _output(body)
        question = check_question(_question(body.messages), max_question_chars, param="messages")
        # Earlier messages are the conversation the question follows: read with it (a thread
        # the journal keeps, `metadata.thread`, holds them already, with their results).
        mode, thread = MODELS[body.model], _thread(body)
        if thread is None:
            question = from_messages(_history(body.messages)).context(question)
        # The run is the caller's; OpenAI's own `user` field (an end-user tag for abuse
        # monitoring) names nobody here and is not read.
        run_id = await service.start(question, mode, output=output, thread=thread, user=user.name)
        shape = _Shape(run_id, body.model)
        if body.stream:
            usage = bool((body.stream_options or {}).get("include_usage"))
            chunks = _stream(service, shape, usage, typed=output is not None)
            return StreamingResponse(chunks, media_type="text/event-stream")
        final: dict[str, Any] = {}
        async with anyio.create_task_group() as group:
            group.start_soon(_cancel_on_hang_up, service, request, run_id)
            async for event in service.live.follow(run_id):
                final = event
            group.cancel_scope.cancel()
        run = journal.show(run_id)
        if final.get("kind") != "run_finished" or run["status"] != "finished":
            return JSONResponse(_failed(run), status_code=422)
        return JSONResponse(shape.completion(run))

    return router


async def _cancel_on_hang_up(service: RunService, request: Request, run_id: str) -> None:
    """Waits for the client to hang up before its answer, then cancels the run: nobody
    waits for that answer any more (an SDK that timed out asks again, as a new run)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    service.cancel(run_id)


async def _stream(
    service: RunService, shape: _Shape, include_usage: bool, *, typed: bool = False
) -> AsyncIterator[bytes]:
    """The chat completion chunks of `shape`'s run, as it answers, as Server-Sent Events.  A
    `typed` answer (`response_format`) comes whole at the end: its words are not its JSON."""
    over = False
    try:
        yield _sse(shape.chunk({"role": "assistant", "content": ""}, extra={"run_id": shape.id}))
        sent = ""
        async for event in service.live.follow(shape.id):
            if event["kind"] == "answer_delta" and not typed:
                sent += event["text"]
                yield _sse(shape.chunk({"content": event["text"]}))
            elif event["kind"] == "answer_ungrounded" and sent:
                # A stream cannot take back what it sent: say so, then the new answer.
                yield _sse(shape.chunk({"content": f"\n\n{WITHDRAWN}\n\n"}))
                sent = ""
        over = True
    finally:
        # Left before the run ended: the client hung up (the response was cancelled) and
        # nobody else asked for this answer.  The run stops; what it found stays recorded.
        if not over:
            service.cancel(shape.id)
    run = service.journal.show(shape.id)
    if run["status"] != "finished":
        yield _sse(_failed(run))
        return
    answer = run["answer"] or ""
    # The pieces add up to the answer; a ReAct run (or an answer made of what was found
    # after a withdrawn one) sends none, so it comes whole here.
    if answer.startswith(sent) and answer != sent:
        yield _sse(shape.chunk({"content": answer[len(sent) :]}))
    yield _sse(shape.chunk({}, "stop", extra=_detail(run)))
    if include_usage:
        yield _sse(shape.chunk(None) | {"usage": _usage(run)})
    yield b"data: [DONE]\n\n"


class _Shape:
    """What every response about one run shares."""

    def __init__(self, run_id: str, model: str) -> None:
        self.id = run_id
        self.model = model
        self.created = int(time.time())

    def completion(self, run: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{self.id}",
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": run["answer"]},
                    "finish_reason": "stop",
                }
            ],
            "usage": _usage(run),
            "planweave": _detail(run),
        }

    def chunk(
        self,
        delta: dict[str, Any] | None,
        finish: str | None = None,
        *,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        data = {
            "id": f"chatcmpl-{self.id}",
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        return data if extra is None else data | {"planweave": extra}


def _usage(run: dict[str, Any]) -> dict[str, int]:
    llm = run.get("llm") or {}
    prompt, completion = int(llm.get("prompt_tokens", 0)), int(llm.get("completion_tokens", 0))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _detail(run: dict[str, Any]) -> dict[str, Any]:
    """planweave's extension field: the run, without what standard clients already have."""
    keys = ("status", "mode", "tasks", "timings", "wall_s", "replans", "cache")
    return {"run_id": run["id"], **{k: run.get(k) for k in keys}}


def _failed(run: dict[str, Any]) -> dict[str, Any]:
    error = run.get("error") or {}
    message = error.get("message") if isinstance(error, dict) else str(error)
    return error_body(
        422,
        f"the run ended without an answer ({run['status']}): {message or 'no reason recorded'}",
        "run_failed",
        openai=True,
        planweave=_detail(run) | {"error": error, "partial": run.get("partial")},
    )


def _sse(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
