"""`planweave mcp`: planweave itself as an MCP server (a tool `ask`, the runs as resources),
over stdio or streamable HTTP, for the runtime the run options describe."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import PlanweaveError
from ..settings import RunSettings
from ..users import Users
from .app import DbOption, app, open_journal
from .options import choose, settings_options
from .run import build_runtime
from .serve import auth_line
from .view import labelled, plain_console


@app.command("mcp")
@settings_options
def mcp(
    transport: Annotated[
        str, typer.Option(help="`stdio` (the client starts this command) or `http` (streamable).")
    ] = "stdio",
    host: Annotated[
        str,
        typer.Option(help="HTTP: the address to listen on; anything but loopback needs a token."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP: the port to listen on.")] = 8000,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="PLANWEAVE_TOKEN",
            show_default=False,
            help="HTTP: every request must carry `Authorization: Bearer TOKEN` (env "
            "PLANWEAVE_TOKEN; at least 16 characters).",
        ),
    ] = None,
    users_file: Annotated[
        Path | None,
        typer.Option(
            "--users",
            envvar="PLANWEAVE_USERS",
            show_default=False,
            help="HTTP: a users file (`planweave users add`; env PLANWEAVE_USERS): each request "
            "carries one of its tokens, and each user sees only their own runs.",
        ),
    ] = None,
    db: DbOption = None,
    max_body_bytes: Annotated[
        int, typer.Option(help="HTTP: the largest request body, bytes (413 past it).")
    ] = 1_000_000,
    max_question_chars: Annotated[
        int, typer.Option(help="The longest question `ask` takes, characters.")
    ] = 20_000,
    log_level: Annotated[str, typer.Option(help="HTTP: uvicorn's log level.")] = "info",
    allow_side_effects: Annotated[
        bool,
        typer.Option(
            "--allow-side-effects",
            help="Let `ask` call tools with side effects without approval (by default a run "
            "pauses before them for `planweave runs approve`).",
        ),
    ] = False,
    *,
    settings: RunSettings,
) -> None:
    """Serve planweave over MCP: a tool `ask(question)` that answers with a parallel plan over
    the tools the options name, and the recorded runs as resources (planweave://runs,
    planweave://runs/ID).  Every run is journaled."""
    err = plain_console(stderr=True)
    choose("--transport", transport, ("stdio", "http"))
    try:
        from ..mcp_server import serve_http, serve_stdio
    except ImportError as exc:
        err.print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None
    try:
        users = None
        if transport == "http":
            from ..server import check_bind

            users = None if users_file is None else Users.load(users_file)
            check_bind(host, token or None, users)
        journal = open_journal(db, err)
        # stdout is the protocol's under stdio: nothing else may be written there.
        runtime, _ = build_runtime(settings, journal=journal, console=err, quiet=True)
    except (ImportError, PlanweaveError) as exc:
        err.print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None
    try:
        if transport == "stdio":
            serve_stdio(
                runtime,
                max_question_chars=max_question_chars,
                allow_side_effects=allow_side_effects,
            )
            return
    except PlanweaveError as exc:
        err.print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None
    auth = auth_line(token or None, users, users_file)
    err.print(
        f"planweave mcp: http://{host}:{port}/mcp; journal {journal.path}; {auth}", style="dim"
    )
    try:
        serve_http(
            runtime,
            host=host,
            port=port,
            token=token or None,
            users=users,
            max_body_bytes=max_body_bytes,
            max_question_chars=max_question_chars,
            log_level=log_level,
            allow_side_effects=allow_side_effects,
        )
    except PlanweaveError as exc:
        err.print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None
