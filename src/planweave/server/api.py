"""The REST API: start, list, show, cancel and resume runs, and follow a run's events (SSE).
Every route sees only the caller's runs (an admin's: all): a run is found through `find_run`
and listed through `runs_of`, with the caller the guard found (`security.caller`)."""

# No `from __future__ import annotations`: FastAPI reads the handlers' annotations, some of
# which are local to `_add_run_routes`.

from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, ConfigDict, Field

from ..errors import UserError
from ..store import Journal
from ..threads import THREAD_PATTERN
from ..typed import OutputShape
from ..users import User, find_run, runs_of
from .security import caller
from .service import RunService

__all__ = [
    "RETRY_MS",
    "Caller",
    "InvalidEventId",
    "QuestionTooLong",
    "RunRequest",
    "runs_router",
]

# Who the request comes from: every route that starts or reads runs depends on it.
Caller = Annotated[User, Depends(caller)]

# Runs one page of `GET /runs` may hold.
MAX_PAGE = 100
# How long an event stream's client waits before it reconnects (the SSE `retry:` field).
RETRY_MS = 1000


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    mode: Literal["compiled", "react", "native"] | None = None
    approve: Literal["plan", "side_effects"] | None = None
    # The conversation the run is a turn of (`threads`), and a JSON Schema its answer is a
    # value of (`typed`).
    thread: str | None = Field(default=None, pattern=f"^{THREAD_PATTERN}$")
    output_schema: dict[str, Any] | None = None


class ApproveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # New arguments by name for some waiting tasks (JSON plan form: "$1" is task 1's result).
    edits: dict[int, dict[str, Any]] = Field(default_factory=dict)
    drop: list[int] = Field(default_factory=list)


class RejectRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=2000)


class ResumeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decisions: dict[int, Literal["rerun", "fail"]] = Field(default_factory=dict)


class QuestionTooLong(UserError):
    """A question longer than the server takes; `param`: the request field that held it."""

    def __init__(self, message: str, *, param: str = "question") -> None:
        super().__init__(message)
        self.param = param


class InvalidEventId(UserError):
    """A `Last-Event-ID` (or `?after=`) that is no event of the run."""


def check_question(question: str, limit: int, *, param: str = "question") -> str:
    if len(question) > limit:
        raise QuestionTooLong(
            f"the question has {len(question)} characters; this server takes at most {limit}",
            param=param,
        )
    return question


def runs_router(service: RunService, *, max_question_chars: int) -> APIRouter:
    journal = service.journal
    router = APIRouter()

    def known_run(run_id: str, user: Caller) -> str:
        """The full id of the run `run_id` names among the caller's; RunNotFound (404) before
        any response, for another user's run too."""
        return find_run(journal, user, run_id)

    _add_runs_routes(router, service, max_question_chars=max_question_chars)
    _add_run_routes(router, service, known_run)
    return router


def _with_wait(service: RunService, run: dict[str, Any]) -> dict[str, Any]:
    """The run, with `queued` (`{"ahead": N}`) while it waits for its turn to answer, and
    `model_wait` (the same) while it waits for the model."""
    waits = {
        "queued": service.queued(run["id"]),
        "model_wait": service.live.model_wait(run["id"]),
    }
    return run | {k: v for k, v in waits.items() if v is not None}


def _resume_point(
    journal: Journal, run_id: str, last_event_id: str | None, after: str | None
) -> int:
    """Where run `run_id`'s event stream resumes: after the event `last_event_id` (or `after`)
    names, which must be one the stream could have sent (InvalidEventId)."""
    given = last_event_id if last_event_id is not None else after
    if given is None:
        return 0
    last = journal.last_seq(run_id)
    text = given.strip()
    if text.isascii() and text.isdigit() and len(text) <= 19 and int(text) <= last:
        return int(text)
    shown = repr(given if len(given) <= 40 else given[:40] + "…")
    name = "Last-Event-ID" if last_event_id is not None else "after"
    raise InvalidEventId(
        f"{name} must be the id of an event of this run, a whole number from 0 to {last}; "
        f"got {shown}"
    )


def _add_runs_routes(router: APIRouter, service: RunService, *, max_question_chars: int) -> None:
    """`/healthz`, and `/runs`: start a run, list runs."""
    journal = service.journal

    @router.get("/healthz")
    async def healthz() -> dict[str, Any]:
        """Whether the server answers, and (`runs`) how many runs answer and wait now.
        (`planweave serve` answers it in its protocol: see `door`.)"""
        return service.health()

    @router.get("/me")
    async def me(user: Caller) -> dict[str, Any]:
        """Who the token is: `user` (null: the operator) and `role`."""
        return {"user": user.name, "role": user.role}

    @router.post("/runs", status_code=202)
    async def start_run(request: RunRequest, user: Caller) -> dict[str, Any]:
        """Start a run in the background, the caller's; its id comes back once the journal
        has it, with `queued` (`{"ahead": N}`) when it waits for its turn.  503
        (`Retry-After`) when the server holds as many runs as it may."""
        question = check_question(request.question, max_question_chars)
        schema = request.output_schema
        run_id = await service.start(
            question,
            request.mode,
            approve=request.approve,
            output=None if schema is None else OutputShape.from_schema(schema, patterns=False),
            thread=request.thread,
            user=user.name,
        )
        return _with_wait(service, {"id": run_id, "status": "running"})

    @router.get("/runs")
    async def list_runs(
        user: Caller,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20,
        before: str | None = None,
    ) -> dict[str, Any]:
        """The caller's runs (an admin's: all), newest first; `before` (the `next` of the
        previous page) pages on.  A run that waits for the model (which answers one call at a
        time) has `model_wait`."""
        runs = [_with_wait(service, run) for run in runs_of(journal, user, limit, before=before)]
        return {"runs": runs, "next": runs[-1]["id"] if len(runs) == limit else None}


def _add_run_routes(
    router: APIRouter, service: RunService, known_run: Callable[[str, User], str]
) -> None:
    """The routes of one run (`/runs/{run_id}`, its id checked by `known_run`): show, cancel,
    resume, approve, reject and follow its events."""
    journal = service.journal
    KnownRun = Annotated[str, Depends(known_run)]

    def resume_point(
        run_id: KnownRun,
        last_event_id: Annotated[str | None, Header()] = None,
        after: Annotated[str | None, Query()] = None,
    ) -> int:
        """Where a run's event stream resumes: after the event `Last-Event-ID` (or `?after=`)
        names, which must be one the stream could have sent (InvalidEventId, 400, before any
        response)."""
        return _resume_point(journal, run_id, last_event_id, after)

    @router.get("/runs/{run_id}")
    async def show_run(run_id: KnownRun) -> dict[str, Any]:
        """The run as `planweave runs show --json` has it (and `model_wait`, as in the list)."""
        return _with_wait(service, journal.show(run_id))

    @router.post("/runs/{run_id}/cancel")
    async def cancel_run(run_id: KnownRun) -> dict[str, str]:
        return {"id": run_id, "status": service.cancel(run_id)}

    @router.post("/runs/{run_id}/resume", status_code=202)
    async def resume_run(run_id: KnownRun, request: ResumeRequest | None = None) -> dict[str, str]:
        decisions = dict(request.decisions) if request is not None else {}
        return {"id": await service.resume(run_id, decisions), "status": "running"}

    @router.post("/runs/{run_id}/approve", status_code=202)
    async def approve_run(
        run_id: KnownRun, request: ApproveRequest | None = None
    ) -> dict[str, str]:
        """Run the waiting tasks, as they are or with `edits` and without `drop`."""
        request = request or ApproveRequest()
        await service.approve(run_id, request.edits, request.drop)
        return {"id": run_id, "status": "running"}

    @router.post("/runs/{run_id}/reject")
    async def reject_run(run_id: KnownRun, request: RejectRequest | None = None) -> dict[str, Any]:
        """End a run that awaits approval without running its waiting tasks."""
        reason = (request or RejectRequest()).reason
        error = service.runtime.reject(run_id, reason)
        return {"id": run_id, "status": "failed", "error": error}

    @router.get("/runs/{run_id}/events", response_class=EventSourceResponse)
    async def run_events(
        run_id: KnownRun, start: Annotated[int, Depends(resume_point)]
    ) -> AsyncIterator[ServerSentEvent]:
        """The run's events as Server-Sent Events, `id:` their sequence numbers; from the
        start, or after `Last-Event-ID` (or `?after=`).  Ends after `run_finished`."""
        yield ServerSentEvent(retry=RETRY_MS)
        async for event in service.live.follow(run_id, after=start):
            seq = event.get("seq")
            yield ServerSentEvent(data=event, id=None if seq is None else str(seq))
