"""The application: the routes, the guard in front of them, errors as JSON, and serving it."""

from __future__ import annotations

import gc
import logging
import math
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from ..admission import Admission
from ..errors import (
    DecisionNeeded,
    InvalidApproval,
    Overloaded,
    PlanweaveError,
    ResumeError,
    RunNotFound,
    UserError,
)
from ..redaction import add_secret, redact
from ..runtime import Runtime
from ..users import Users
from .api import InvalidEventId, QuestionTooLong, runs_router
from .chat import InvalidParam, UnknownModel, openai_router
from .door import Door
from .page import PAGE_FILES, page_router
from .plans import plans_router
from .security import (
    ASGIApp,
    Guard,
    Message,
    Receive,
    Scope,
    Send,
    check_bind,
    error_body,
    is_openai_path,
    send_error,
)
from .service import RunService
from .transport import masked_access_log, uvicorn_config

__all__ = ["ServerConfig", "create_app", "serve"]

log = logging.getLogger("planweave.server")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """`token`: what every request must carry (`Authorization: Bearer`), None for none (then
    only loopback); `max_body_bytes`: the largest request body; `max_question_chars`: the
    longest question (`POST /runs`, the last user message of a chat completion);
    `max_running`: runs that answer at once, `max_queued`: runs that may wait for their turn
    besides (past both, 503 with `Retry-After`); `request_timeout_s`: how long a connection
    has to send a whole request (head and body) before it is closed (`serve` only: it is
    uvicorn's protocol); `users`: the users of a users file (`users.Users.load`), each with
    their tokens and seeing only their own runs (`token` is then the operator's, an admin).
    For replicas on one journal: `take_over_every` is how often (seconds) the server resumes
    the runs whose process is gone (None: never; `RunService.take_over`), and
    `max_running_total` how many runs may run across all the journal's servers (None: no
    bound beyond each one's own).
    """

    token: str | None = None
    users: Users | None = None
    max_body_bytes: int = 1_000_000
    max_question_chars: int = 20_000
    max_running: int = 8
    max_queued: int = 64
    request_timeout_s: float = 30.0
    take_over_every: float | None = None
    max_running_total: int | None = None

    def __post_init__(self) -> None:
        for name, least in (
            ("max_body_bytes", 1),
            ("max_question_chars", 1),
            ("max_running", 1),
            ("max_queued", 0),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise UserError(f"ServerConfig.{name} must be an integer >= {least}, not {value!r}")
        for name in ("request_timeout_s", "take_over_every"):
            value = getattr(self, name)
            if value is None and name == "take_over_every":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise UserError(f"ServerConfig.{name} must be > 0, not {value!r}")
        total = self.max_running_total
        if total is not None and (
            isinstance(total, bool) or not isinstance(total, int) or total < 1
        ):
            raise UserError(
                f"ServerConfig.max_running_total must be an integer >= 1, not {total!r}"
            )


def create_app(runtime: Runtime, config: ServerConfig | None = None) -> FastAPI:
    """The server for `runtime` (which must have a journal).  Its runs live while the app
    does (its lifespan); the runtime's LLM is closed with it."""
    config = config or ServerConfig()
    add_secret(config.token)
    service = RunService(
        runtime,
        Admission(config.max_running, config.max_queued),
        max_running_total=config.max_running_total,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            await runtime.warm()
            # What was built to start lives as long as the server: the collector need not walk it
            # again (a full collection over it paused the event loop ~100 ms under a flood).
            gc.freeze()
            with masked_access_log():
                async with service.running(take_over_every=config.take_over_every):
                    yield
        finally:
            await runtime.llm.aclose()

    from .. import __version__

    # No interactive docs: they load scripts from a CDN.  /openapi.json describes the API.
    app = FastAPI(
        title="planweave", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None
    )
    app.include_router(runs_router(service, max_question_chars=config.max_question_chars))
    app.include_router(openai_router(service, max_question_chars=config.max_question_chars))
    app.include_router(plans_router(service))
    app.include_router(page_router())
    door = Door(service)

    def guarded(inner: ASGIApp) -> Guard:
        door.guard = Guard(
            inner,
            token=config.token,
            max_body_bytes=config.max_body_bytes,
            public=frozenset(PAGE_FILES),
            users=config.users,
        )
        return door.guard

    app.add_middleware(_Failures)
    app.add_middleware(guarded)
    app.add_middleware(door.middleware)
    _errors(app)
    app.state.service = service
    app.state.door = door
    return app


# What a client hears of a failure of the server itself.
FAILED = "the server failed to answer this request; its log says why"
# The longest message an error answer carries (a hostile request can make one echo a lot).
MAX_MESSAGE_CHARS = 2000


def _errors(app: FastAPI) -> None:
    """Every error as `{"error": {"message", "type", "code"}}` (on the OpenAI routes in OpenAI's
    shape, with `param`, and a request that cannot be taken is a 400, not a 422: see
    `error_body`), with no secret, no file path and no stack trace in it: a failure of the
    server itself is logged, and answered with a 500 that says only that."""
    app.exception_handler(PlanweaveError)(_planweave_error)
    app.exception_handler(RequestValidationError)(_invalid)
    app.exception_handler(HTTPException)(_http_error)


def _answer(
    request: Request,
    status: int,
    message: str,
    kind: str,
    headers: dict[str, str] | None = None,
    *,
    param: str | None = None,
    **extra: object,
) -> JSONResponse:
    """The error answer: `message` cut to MAX_MESSAGE_CHARS and redacted, in the shape of the
    request's route."""
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    openai = is_openai_path(request.url.path)
    if openai and status == 422:
        status = 400
    body = error_body(status, redact(message), kind, openai=openai, param=param, **extra)
    return JSONResponse(body, status, headers)


def _failed(request: Request, exc: BaseException) -> JSONResponse:
    _log_failure(request.method, request.url.path, exc)
    return _answer(request, 500, FAILED, "server_error")


async def _planweave_error(request: Request, exc: PlanweaveError) -> JSONResponse:
    param = getattr(exc, "param", None)
    match exc:
        case RunNotFound():
            # The message names the journal's file: not for the client.
            asked = exc.run_id if exc.run_id is not None else ""
            shown = repr(asked if len(asked) <= 80 else asked[:80] + "…")
            return _answer(request, 404, f"no run {shown}", "not_found")
        case UnknownModel():
            return _answer(request, 404, str(exc), "model_not_found", param=param)
        case Overloaded():
            after = str(math.ceil(exc.retry_after))
            return _answer(request, 503, str(exc), "overloaded", {"retry-after": after})
        case DecisionNeeded():
            return _answer(request, 409, str(exc), "decision_needed", tasks=exc.tasks)
        case ResumeError():
            return _answer(request, 409, str(exc), "conflict")
        case InvalidEventId():
            return _answer(request, 400, str(exc), "invalid_event_id")
        case QuestionTooLong():
            return _answer(request, 422, str(exc), "question_too_long", param=param)
        case InvalidApproval():
            return _answer(request, 422, str(exc), "invalid_approval")
        case InvalidParam():
            return _answer(request, 400, str(exc), exc.code, param=param)
        case UserError():
            return _answer(request, 400, str(exc), "invalid_request")
    return _failed(request, exc)


async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    if not is_openai_path(request.url.path):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in errors
        )
        return _answer(request, 422, f"invalid request: {problems}", "invalid_request")
    # OpenAI's way: the first field at fault named as the request writes it.
    params = [_param(e.get("loc", ())) for e in errors]
    problems = "; ".join(
        f"{p or 'body'}: {e.get('msg')}" for p, e in zip(params, errors, strict=True)
    )
    missing = bool(errors) and errors[0].get("type") == "missing"
    kind = "missing_required_parameter" if missing else "invalid_value"
    param = params[0] if params else None
    return _answer(request, 400, f"invalid request: {problems}", kind, param=param)


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    return _answer(request, exc.status_code, str(exc.detail), "http_error")


def _param(loc: tuple[int | str, ...] | list[int | str]) -> str | None:
    """A validation error's location as OpenAI names a parameter: `messages[0].role`."""
    parts = list(loc)[1:] if loc and loc[0] == "body" else list(loc)
    name = ""
    for part in parts:
        name += f"[{part}]" if isinstance(part, int) else f".{part}" if name else str(part)
    return name or None


class _Failures:
    """ASGI middleware, the last word on a request the server itself failed (a bug, a damaged
    journal): logged with its trace, answered with a bare 500, and not raised on to uvicorn,
    which would drop the connection.  (Starlette's handler for `Exception` raises it on.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            _log_failure(scope["method"], scope["path"], exc)
            if started:  # too late for an answer: the connection ends
                raise
            await send_error(scope, send, 500, FAILED, "server_error")


def _log_failure(method: str, path: str, exc: BaseException) -> None:
    log.error("%s %s failed:\n%s", method, path, redact("".join(traceback.format_exception(exc))))


def serve(
    runtime: Runtime,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    config: ServerConfig | None = None,
    log_level: str = "info",
) -> None:
    """Serve `runtime` until interrupted.  Refuses a non-loopback `host` without a token."""
    config = config or ServerConfig()
    check_bind(host, config.token, config.users)
    app = create_app(runtime, config)
    settings = uvicorn_config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        request_timeout_s=config.request_timeout_s,
        early=app.state.door.early,
    )
    uvicorn.Server(settings).run()
