"""The application: the routes, the guard in front of them, errors as JSON, and serving it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from ..errors import (
    DecisionNeeded,
    InvalidApproval,
    PlanweaveError,
    ResumeError,
    RunNotFound,
    UserError,
)
from ..redaction import redact
from ..runtime import Runtime
from .api import QuestionTooLong, runs_router
from .chat import UnknownModel, openai_router
from .page import PAGE_FILES, page_router
from .security import Guard, check_bind, error_body
from .service import RunService

__all__ = ["ServerConfig", "create_app", "serve"]

log = logging.getLogger("planweave.server")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """`token`: what every request must carry (`Authorization: Bearer`), None for none (then
    only loopback); `max_body_bytes`: the largest request body; `max_question_chars`: the
    longest question (`POST /runs`, the last user message of a chat completion)."""

    token: str | None = None
    max_body_bytes: int = 1_000_000
    max_question_chars: int = 20_000

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_question_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"ServerConfig.{name} must be an integer >= 1, not {value!r}")


def create_app(runtime: Runtime, config: ServerConfig | None = None) -> FastAPI:
    """The server for `runtime` (which must have a journal).  Its runs live while the app
    does (its lifespan); the runtime's LLM is closed with it."""
    config = config or ServerConfig()
    service = RunService(runtime)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            async with service.running():
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
    app.include_router(page_router())
    app.add_middleware(
        Guard,
        token=config.token,
        max_body_bytes=config.max_body_bytes,
        public=frozenset(PAGE_FILES),
    )
    _errors(app)
    app.state.service = service
    return app


def _errors(app: FastAPI) -> None:
    """Every error as `{"error": {"message", "type", "code"}}`, with no secret in it."""

    def answer(status: int, message: str, kind: str, **extra: object) -> JSONResponse:
        return JSONResponse(error_body(status, redact(message), kind, **extra), status)

    @app.exception_handler(PlanweaveError)
    async def planweave_error(request: Request, exc: PlanweaveError) -> JSONResponse:
        match exc:
            case RunNotFound():
                return answer(404, str(exc), "not_found")
            case UnknownModel():
                return answer(404, str(exc), "model_not_found")
            case DecisionNeeded():
                return answer(409, str(exc), "decision_needed", tasks=exc.tasks)
            case ResumeError():
                return answer(409, str(exc), "conflict")
            case QuestionTooLong():
                return answer(422, str(exc), "question_too_long")
            case InvalidApproval():
                return answer(422, str(exc), "invalid_approval")
            case UserError():
                return answer(400, str(exc), "invalid_request")
        log.error("request %s failed: %s", request.url.path, redact(str(exc)))
        return answer(500, str(exc), "server_error")

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors()
        )
        return answer(422, f"invalid request: {problems}", "invalid_request")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return answer(exc.status_code, str(exc.detail), "http_error")


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
    check_bind(host, config.token)
    uvicorn.run(
        create_app(runtime, config),
        host=host,
        port=port,
        log_level=log_level,
        server_header=False,
        # Open event streams end when the server does; give them a moment, not forever.
        timeout_graceful_shutdown=5,
    )
