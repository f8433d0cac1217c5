"""`planweave serve`: the HTTP API and the OpenAI-compatible endpoint for the runtime the run
options describe."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import PlanweaveError
from ..settings import RunSettings
from ..store.owner import lease_s
from ..users import Users
from .app import DbOption, app, open_journal
from .options import settings_options
from .run import build_runtime
from .view import labelled, plain_console


@app.command()
@settings_options
def serve(
    host: Annotated[
        str, typer.Option(help="The address to listen on; anything but loopback needs a token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port to listen on (0: any free one).")] = 8000,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="PLANWEAVE_TOKEN",
            show_default=False,
            help="Every request must carry `Authorization: Bearer TOKEN` (env PLANWEAVE_TOKEN; "
            "at least 16 characters).",
        ),
    ] = None,
    users_file: Annotated[
        Path | None,
        typer.Option(
            "--users",
            envvar="PLANWEAVE_USERS",
            show_default=False,
            help="A users file (`planweave users add`; env PLANWEAVE_USERS): each request "
            "carries one of its tokens, and each user sees only their own runs.",
        ),
    ] = None,
    db: DbOption = None,
    max_body_bytes: Annotated[
        int, typer.Option(help="The largest request body, bytes (413 past it).")
    ] = 1_000_000,
    max_question_chars: Annotated[
        int, typer.Option(help="The longest question, characters (422 past it).")
    ] = 20_000,
    max_running: Annotated[
        int, typer.Option(help="Runs answering at once; the next ones wait their turn.")
    ] = 8,
    max_queued: Annotated[
        int,
        typer.Option(
            help="Runs that may wait for their turn besides; past them 503 with Retry-After."
        ),
    ] = 64,
    request_timeout: Annotated[
        float,
        typer.Option(
            help="Seconds a connection has to send a whole request (head and body) before it "
            "is closed."
        ),
    ] = 30.0,
    take_over: Annotated[
        float,
        typer.Option(
            help="Replicas: every so many seconds, resume the journal's runs whose process is "
            "gone (a replica killed, a machine lost); 0: never.",
        ),
    ] = 0.0,
    max_running_total: Annotated[
        int,
        typer.Option(
            help="Replicas: runs that may run across every server of the journal; past them "
            "503 with Retry-After.  0: no bound beyond --max-running each.",
        ),
    ] = 0,
    log_level: Annotated[str, typer.Option(help="uvicorn's log level.")] = "info",
    *,
    settings: RunSettings,
) -> None:
    """Serve runs over HTTP: a REST API with live events (SSE) and an OpenAI-compatible
    /v1/chat/completions, with the tools and LLM the options name.  Every run is journaled."""
    err = plain_console(stderr=True)
    try:
        from ..server import ServerConfig, check_bind
        from ..server import serve as run_server
    except ImportError as exc:
        err.print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None
    try:
        users = None if users_file is None else Users.load(users_file)
        config = ServerConfig(
            token=token or None,
            users=users,
            max_body_bytes=max_body_bytes,
            max_question_chars=max_question_chars,
            max_running=max_running,
            max_queued=max_queued,
            request_timeout_s=request_timeout,
            take_over_every=take_over or None,
            max_running_total=max_running_total or None,
        )
        check_bind(host, config.token, users)
        lease_s()  # a bad PLANWEAVE_LEASE_S stops the server here, not each run later
        journal = open_journal(db, err)
        runtime, _ = build_runtime(settings, journal=journal, console=err, quiet=False)
    except PlanweaveError as exc:
        err.print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None
    auth = auth_line(config.token, users, users_file)
    load = f"{max_running} runs at once, {max_queued} queued"
    if take_over:
        load += f"; taking over runs whose process is gone every {take_over:g} s"
    err.print(
        f"planweave: journal {journal.path}; model {runtime.llm.model}; {auth}; {load}",
        style="dim",
    )
    run_server(runtime, host=host, port=port, config=config, log_level=log_level)


def auth_line(token: str | None, users: Users | None, path: Path | None) -> str:
    """Who may call the server, in a few words (its start-up line)."""
    if users is not None:
        also = " and the operator's token" if token else ""
        return f"{len(users.names)} users from {path}{also}"
    return "a token required" if token else "no token: loopback only"
