"""planweave itself as an MCP server (`planweave mcp`): a tool `ask` that answers a question
with a compiled plan over the runtime's tools, and the journal's runs as resources.  Built on
the official SDK's `MCPServer`; over stdio, or streamable HTTP behind the HTTP server's guard
(token, loopback only without one, no cross-origin, bounded bodies).  Needs the `mcp` extra
(and `server` for HTTP).

Whoever may call `ask` is trusted to ask questions, not to act: unless the operator opts in
(`allow_side_effects`, `--allow-side-effects`), a run that would call a tool with side effects
pauses before those calls for the operator's approval (`planweave runs approve ID`), and `ask`
says so instead of answering."""

from __future__ import annotations

import json
from typing import Any, cast

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError
    from mcp.types import ToolAnnotations
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError("`planweave mcp` needs its extra: pip install 'planweave[mcp]'") from exc
from pydantic import BaseModel

from .approval import ApproveMode
from .errors import PlanweaveError, UserError
from .redaction import redact
from .runtime import Runtime

__all__ = ["RUNS_URI", "Answer", "create_server", "serve_http", "serve_stdio"]

RUNS_URI = "planweave://runs"
MAX_RUNS = 100


class Answer(BaseModel):
    """What `ask` returns: the answer and the id of the run in the journal (`planweave runs
    show ID`, the resource planweave://runs/ID)."""

    answer: str
    run_id: str
    status: str
    tasks: int
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
    acting = sorted(name for name, spec in runtime.tools.items() if spec.side_effects)
    approve: ApproveMode | None = runtime.approve_mode
    if acting and not allow_side_effects:
        if runtime.mode != "compiled":
            raise UserError(
                f"tools with side effects ({', '.join(acting)}) cannot wait for approval in "
                "ReAct mode: serve them in compiled mode, leave them out, or allow their calls "
                "without approval (--allow-side-effects)"
            )
        approve = approve or "side_effects"
    from . import __version__

    tools = ", ".join(sorted(runtime.tools))
    server: MCPServer = MCPServer(
        "planweave",
        version=__version__,
        instructions=(
            "Ask planweave a question: it plans the tool calls it needs as a parallel DAG, runs "
            f"them and answers. Its tools: {tools}. Recorded runs are resources ({RUNS_URI})."
        ),
    )

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, open_world_hint=True))
    async def ask(question: str) -> Answer:
        """Answer a question: plan the tool calls it needs, run them in parallel, join their
        results.  Returns the answer and the run's id (the resource planweave://runs/ID has
        every call, its timing and result)."""
        if len(question) > max_question_chars:
            raise ToolError(f"the question is longer than {max_question_chars} characters")
        result = await runtime.arun(question, check=False, approve=approve)
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
            tasks=len(result.tasks),
            llm_calls=result.llm.calls,
            wall_s=round(result.wall_s, 3),
        )

    @server.resource(
        RUNS_URI,
        name="runs",
        description=f"The {MAX_RUNS} newest recorded runs: id, status, tasks done, question.",
        mime_type="application/json",
    )
    def runs() -> str:
        return _json(journal.runs(MAX_RUNS))

    @server.resource(
        RUNS_URI + "/{run_id}",
        name="run",
        description="One run, as `planweave runs show --json`: the DAG with timings, results, "
        "errors, LLM calls and the answer (a unique id prefix will do).",
        mime_type="application/json",
    )
    def run(run_id: str) -> str:
        try:
            return _json(journal.show(run_id))
        except PlanweaveError as exc:
            raise ResourceError(str(exc)) from exc

    return server


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


def serve_http(
    runtime: Runtime,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    max_body_bytes: int = 1_000_000,
    max_question_chars: int = 20_000,
    log_level: str = "info",
    allow_side_effects: bool = False,
    request_timeout_s: float = 30.0,
) -> None:
    """Serve streamable HTTP at /mcp until interrupted, behind the HTTP server's guard: a
    non-loopback `host` is refused without a `token`, which every request must then carry; a
    request must arrive whole within `request_timeout_s`; the access log masks the token."""
    try:
        import anyio
        import uvicorn
        from mcp.server.transport_security import TransportSecuritySettings

        from .server.security import ASGIApp, Guard, check_bind
        from .server.transport import masked_access_log, uvicorn_config
    except ImportError as exc:
        raise UserError(
            f"`planweave mcp --transport http` needs the server extra: pip install "
            f"'planweave[mcp,server]' ({exc})"
        ) from exc
    check_bind(host, token)
    server = create_server(
        runtime, max_question_chars=max_question_chars, allow_side_effects=allow_side_effects
    )
    # The guard checks Host and Origin itself, with or without a token; the SDK's own check
    # would refuse the names a token lets in.
    app = server.streamable_http_app(
        host=host,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    guarded = Guard(cast(ASGIApp, app), token=token, max_body_bytes=max_body_bytes)
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
