"""planweave itself as an MCP server (`planweave mcp`): a tool `ask` that answers a question
with a compiled plan over the runtime's tools, and the journal's runs as resources.  Built on
the official SDK's `MCPServer`; over stdio, or streamable HTTP behind the HTTP server's guard
(token, loopback only without one, no cross-origin, bounded bodies).  Needs the `mcp` extra
(and `server` for HTTP).

`ask`'s description lists the tools behind it, so that a client's model can tell which
questions it answers; while a run goes, a client that asks for progress (a progress token) gets
a notification each time a task ends: tasks done of tasks planned so far.

Over streamable HTTP with users (`users.Users`), each request's token says whose it is: `ask`
starts that user's run, and the resources list and show only their runs (an admin's: all;
another user's run is "no run").  Over stdio the caller is the operator who started it.

Whoever may call `ask` is trusted to ask questions, not to act: unless the operator opts in
(`allow_side_effects`, `--allow-side-effects`), a run that would call a tool with side effects
pauses before those calls for the operator's approval (`planweave runs approve ID`), and `ask`
says so instead of answering."""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Annotated, Any, cast

import anyio

try:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError
    from mcp.shared.exceptions import MCPError
    from mcp.types import ToolAnnotations
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError("`planweave mcp` needs its extra: pip install 'planweave[mcp]'") from exc
from pydantic import BaseModel, Field

from .approval import ApproveMode
from .errors import PlanweaveError, UserError
from .events import Event, TaskEnded, TaskFailed, TaskPlanned
from .redaction import redact
from .runtime import Runtime
from .store import Journal
from .tools import Tool
from .users import OPERATOR, User, Users, find_run, runs_of

__all__ = [
    "RUNS_URI",
    "Answer",
    "AskedTask",
    "ask_description",
    "create_server",
    "http_app",
    "serve_http",
    "serve_stdio",
]

RUNS_URI = "planweave://runs"
MAX_RUNS = 100
# The longest line `ask`'s description gives one tool, and all of them together (past that,
# the rest by name only); a client sends the description to its model with every request.
MAX_TOOL_LINE = 120
MAX_TOOL_LINES = 2000
ASK = (
    "Answer a question with planweave: it plans the calls of its tools that the question "
    "needs, runs them in parallel and joins their results into one answer. Ask the whole "
    "question at once, in plain words (it splits it itself); use it for questions its tools "
    "can answer. Returns the answer and the run's id (the resource planweave://runs/ID has "
    "every call, its timing and result)."
)


# A task's result in `ask`'s answer, as JSON; a longer one is cut (the run's resource has it).
MAX_RESULT_CHARS = 4000


class AskedTask(BaseModel):
    """One tool call of the run: `result` when it finished (cut to MAX_RESULT_CHARS of JSON,
    then a string, with `truncated`), `error` when it failed."""

    id: int
    tool: str
    call: str
    status: str
    result: Any = None
    truncated: bool = False
    error: str | None = None
    seconds: float | None = None


class Answer(BaseModel):
    """What `ask` returns: the answer, the id of the run in the journal (`planweave runs show
    ID`, the resource planweave://runs/ID) and the tool calls it made."""

    answer: str
    run_id: str
    status: str
    tasks: list[AskedTask]
    llm_calls: int
    wall_s: float


def create_server(
    runtime: Runtime, *, max_question_chars: int = 20_000, allow_side_effects: bool = False
) -> MCPServer:
    """The MCP server for `runtime`, which must have a journal (the resources read it).
    Without `allow_side_effects`, `ask`'s runs pause before any call of a tool with side
    effects (the runtime's own approval mode, if it has one, still holds); UserError when the
    runtime's mode (ReAct) cannot pause and it has such tools."""
    if runtime.journal is None:
        raise UserError("the MCP server records every run: give the runtime a journal")
    journal = runtime.journal
    approve, waits = _approval(runtime, allow_side_effects)
    from . import __version__

    tools = ", ".join(sorted(runtime.tools))
    server: MCPServer = MCPServer(
        "planweave",
        version=__version__,
        instructions=(
            "Ask planweave a question: it plans the tool calls it needs as a parallel DAG, runs "
            f"them and answers. Its tools: {tools}. Recorded runs are resources ({RUNS_URI})."
        ),
        middleware=[_identify],
    )

    @server.tool(
        description=ask_description(runtime.tools, waits),
        annotations=ToolAnnotations(read_only_hint=False, open_world_hint=True),
    )
    async def ask(
        question: Annotated[str, Field(description="The question, in plain words.")],
        ctx: Context,
    ) -> Answer:
        return await _ask(
            runtime,
            question,
            ctx,
            approve=approve,
            max_question_chars=max_question_chars,
            user=_caller(),
        )

    _add_resources(server, journal)
    return server


def _add_resources(server: MCPServer, journal: Journal) -> None:
    """The runs as resources: the caller's (an admin's: all), each by its id."""

    @server.resource(
        RUNS_URI,
        name="runs",
        description=f"The {MAX_RUNS} newest recorded runs: id, status, tasks done, question.",
        mime_type="application/json",
    )
    async def runs() -> str:
        return _json(runs_of(journal, _caller(), MAX_RUNS))

    @server.resource(
        RUNS_URI + "/{run_id}",
        name="run",
        description="One run, as `planweave runs show --json`: the DAG with timings, results, "
        "errors, LLM calls and the answer (a unique id prefix will do).",
        mime_type="application/json",
    )
    async def run(run_id: str) -> str:
        try:
            return _json(journal.show(find_run(journal, _caller(), run_id)))
        except PlanweaveError as exc:
            raise ResourceError(str(exc)) from exc


# Who the request being handled comes from (`_identify` sets it for each one).
_CALLER: ContextVar[User | None] = ContextVar("planweave_mcp_caller", default=None)


async def _identify(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: the request's caller, for its handler.  Over HTTP, the user the guard found
    for the POST that carried it (`security.CALLER`); with no HTTP request (stdio, a client in
    the process), the operator.  An HTTP request without one is refused, never let in."""
    request = ctx.request
    if request is None:
        user: User | None = OPERATOR
    else:
        from .server.security import CALLER

        scope = getattr(request, "scope", None)
        found = scope.get(CALLER) if isinstance(scope, Mapping) else None
        user = found if isinstance(found, User) else None
        if user is None:
            raise MCPError(code=-32001, message="unauthorized: no valid token came with it")
    reset = _CALLER.set(user)
    try:
        return await call_next(ctx)
    finally:
        _CALLER.reset(reset)


def _caller() -> User:
    user = _CALLER.get()
    if user is None:  # a handler reached without `_identify`: refuse, never assume
        raise ToolError("unauthorized: this request has no caller")
    return user


def _approval(
    runtime: Runtime, allow_side_effects: bool
) -> tuple[ApproveMode | None, frozenset[str]]:
    """The approval mode of `ask`'s runs, and the tools whose calls wait for the operator's
    approval; UserError when the runtime's mode (ReAct) cannot pause and it has such tools."""
    acting = sorted(name for name, spec in runtime.tools.items() if spec.side_effects)
    approve: ApproveMode | None = runtime.settings.approve
    if acting and not allow_side_effects:
        if runtime.settings.mode != "compiled":
            raise UserError(
                f"tools with side effects ({', '.join(acting)}) cannot wait for approval in "
                "ReAct mode: serve them in compiled mode, leave them out, or allow their calls "
                "without approval (--allow-side-effects)"
            )
        approve = approve or "side_effects"
    waits = frozenset() if allow_side_effects else frozenset(acting)
    return approve, waits


async def _ask(
    runtime: Runtime,
    question: str,
    ctx: Context,
    *,
    approve: ApproveMode | None,
    max_question_chars: int,
    user: User,
) -> Answer:
    """`ask`: the answer to `question`, with progress reported to `ctx`; ToolError when the
    question is too long, or the run waits for approval or ends without an answer."""
    if len(question) > max_question_chars:
        raise ToolError(f"the question is longer than {max_question_chars} characters")
    progress = _Progress()
    async with anyio.create_task_group() as group:
        group.start_soon(progress.report, ctx)
        try:
            result = await runtime.arun(
                question,
                check=False,
                approve=approve,
                subscribers=[progress.heard],
                user=user.name,
            )
        finally:
            progress.close()
    if result.status == "awaiting_approval":
        calls = ", ".join(str(task.get("call") or task.get("tool")) for task in result.waiting)
        raise ToolError(
            redact(
                f"run {result.run_id} waits for the operator's approval before it calls "
                f"{calls}: `planweave runs approve {result.run_id}` runs them (or `planweave "
                f"runs reject {result.run_id}`); the run's resource has its answer after"
            )
        )
    if result.answer is None:
        found = f" Found before it stopped: {result.partial}" if result.partial else ""
        raise ToolError(
            redact(f"run {result.run_id} ended without an answer: {result.error}.{found}")
        )
    return Answer(
        answer=result.answer,
        run_id=result.run_id,
        status=result.status,
        tasks=[_asked(record.to_dict()) for record in result.tasks],
        llm_calls=result.llm.calls,
        wall_s=round(result.wall_s, 3),
    )


def ask_description(tools: Mapping[str, Tool], waits: frozenset[str] = frozenset()) -> str:
    """`ask`'s description: what it does, then the tools behind it, a line each (name and the
    first sentence of its description, at most MAX_TOOL_LINE characters; `waits`: those whose
    calls wait for the operator's approval), at most MAX_TOOL_LINES characters of them; the
    rest by name."""
    lines: list[str] = []
    size = 0
    names = list(tools)
    for n, name in enumerate(names):
        what = _first_sentence(tools[name].description)
        line = f"- {name}: {what}" if what else f"- {name}"
        mark = " (waits for the operator's approval)" if name in waits else ""
        if len(line) + len(mark) > MAX_TOOL_LINE:
            line = line[: MAX_TOOL_LINE - len(mark) - 1] + "…"
        line += mark
        if size + len(line) > MAX_TOOL_LINES:
            rest = names[n:]
            listed = ", ".join(rest)
            if len(listed) > MAX_TOOL_LINE * 4:
                listed = listed[: MAX_TOOL_LINE * 4 - 1] + "…"
            lines.append(f"- and {len(rest)} more: {listed}")
            break
        lines.append(line)
        size += len(line) + 1
    return f"{ASK}\n\nIts tools:\n" + "\n".join(lines) if lines else ASK


def _asked(task: dict[str, Any]) -> AskedTask:
    """A task (as `--json` shows it) as `ask` returns it."""
    result, truncated = task.get("result"), False
    shown = json.dumps(result, ensure_ascii=False, default=str)
    if len(shown) > MAX_RESULT_CHARS:
        result, truncated = shown[: MAX_RESULT_CHARS - 1] + "…", True
    error = task.get("error")
    start, end = task.get("start"), task.get("end")
    return AskedTask(
        id=task["id"],
        tool=task["tool"],
        call=task["call"],
        status=task["status"],
        result=result,
        truncated=truncated,
        error=None if not error else str(error.get("text") or error.get("message") or error),
        seconds=None if start is None or end is None else round(end - start, 3),
    )


def _first_sentence(text: str) -> str:
    """A description's first sentence (or paragraph), on one line."""
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[: end + 1]


class _Progress:
    """A run's progress as MCP progress notifications: tasks ended (done, failed, skipped) of
    tasks planned so far (the total grows while the plan streams in, and on a replan).  Heard
    from the run's events; `report` sends a notification each time the count grows (the
    progress of one request may only grow) until `close`."""

    def __init__(self) -> None:
        self.planned = 0
        self.ended = 0
        self._send, self._receive = anyio.create_memory_object_stream[tuple[int, int, str]](
            max_buffer_size=float("inf")
        )

    def heard(self, event: Event) -> None:
        if isinstance(event, TaskPlanned):
            self.planned += 1
        elif isinstance(event, TaskEnded) and event.item is None:  # not a fan-out's element
            self.ended += 1
            how = "failed" if isinstance(event, TaskFailed) else event.kind.removeprefix("task_")
            message = f"{self.ended}/{self.planned} tasks done; task {event.task_id} "
            message += f"({event.tool}) {how}"
            self._send.send_nowait((self.ended, max(self.planned, self.ended), message))

    def close(self) -> None:
        self._send.close()

    async def report(self, ctx: Context) -> None:
        async with self._receive:
            async for done, total, message in self._receive:
                await ctx.report_progress(done, total, message)


def serve_stdio(
    runtime: Runtime, *, max_question_chars: int = 20_000, allow_side_effects: bool = False
) -> None:
    """Serve over stdin/stdout until the client closes them (see `create_server`)."""
    import anyio

    server = create_server(
        runtime, max_question_chars=max_question_chars, allow_side_effects=allow_side_effects
    )

    async def main() -> None:
        try:
            await server.run_stdio_async()
        finally:
            await runtime.llm.aclose()

    anyio.run(main)


def http_app(
    runtime: Runtime,
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    users: Users | None = None,
    max_body_bytes: int = 1_000_000,
    max_question_chars: int = 20_000,
    allow_side_effects: bool = False,
) -> Any:
    """The streamable HTTP app (at /mcp) behind the HTTP server's guard: with a `token` (the
    operator's) or `users` every request must carry one of theirs, and each user sees only
    their own runs; with neither, loopback only.  Refuses a non-loopback `host` without
    either."""
    try:
        from mcp.server.transport_security import TransportSecuritySettings

        from .server.security import ASGIApp, Guard, check_bind
    except ImportError as exc:
        raise UserError(
            f"`planweave mcp --transport http` needs the server extra: pip install "
            f"'planweave[mcp,server]' ({exc})"
        ) from exc
    check_bind(host, token, users)
    server = create_server(
        runtime, max_question_chars=max_question_chars, allow_side_effects=allow_side_effects
    )
    # The guard checks Host and Origin itself, with or without a token; the SDK's own check
    # would refuse the names a token lets in.
    app = server.streamable_http_app(
        host=host,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return Guard(cast(ASGIApp, app), token=token, max_body_bytes=max_body_bytes, users=users)


def serve_http(
    runtime: Runtime,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    users: Users | None = None,
    max_body_bytes: int = 1_000_000,
    max_question_chars: int = 20_000,
    log_level: str = "info",
    allow_side_effects: bool = False,
    request_timeout_s: float = 30.0,
) -> None:
    """Serve streamable HTTP at /mcp until interrupted (`http_app`): a request must arrive
    whole within `request_timeout_s`; the access log masks the token."""
    guarded = http_app(
        runtime,
        host=host,
        token=token,
        users=users,
        max_body_bytes=max_body_bytes,
        max_question_chars=max_question_chars,
        allow_side_effects=allow_side_effects,
    )
    import uvicorn

    from .server.transport import masked_access_log, uvicorn_config

    config = uvicorn_config(
        guarded, host=host, port=port, log_level=log_level, request_timeout_s=request_timeout_s
    )

    async def main() -> None:
        try:
            with masked_access_log():
                await uvicorn.Server(config).serve()
        finally:
            await runtime.llm.aclose()

    anyio.run(main)


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)
