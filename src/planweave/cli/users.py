"""`planweave users`: the users file of `planweave serve --users` and `planweave mcp --users`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import PlanweaveError
from ..users import USERS_ENV, add_user, read_users
from .app import app, print_json
from .view import labelled, plain_console

users_app = typer.Typer(
    help="Users of `serve` and `mcp --transport http` (a users file): add, list.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(users_app, name="users")

UsersFile = Annotated[
    Path,
    typer.Option(
        "--file",
        envvar=USERS_ENV,
        help=f"The users file (TOML; env {USERS_ENV}).",
    ),
]


@users_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="The user's name: their runs carry it.")],
    file: UsersFile,
    admin: Annotated[
        bool, typer.Option("--admin", help="An admin sees and acts on every user's runs.")
    ] = False,
) -> None:
    """Add a user with a new token: the token is printed once, on stdout, and only its hash
    is written to the file (made, readable by you only, when there is none)."""
    err = plain_console(stderr=True)
    try:
        token = add_user(file, name, "admin" if admin else "user")
    except PlanweaveError as exc:
        err.print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None
    role = "admin" if admin else "user"
    err.print(f"added {role} {name!r} to {file}; their token (shown only now):", style="dim")
    typer.echo(token)


@users_app.command("list")
def list_users(
    file: UsersFile,
    json: Annotated[bool, typer.Option("--json", help="As JSON.")] = False,
) -> None:
    """The users of the file: name, role, how many tokens."""
    err = plain_console(stderr=True)
    try:
        users = read_users(file)
    except PlanweaveError as exc:
        err.print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None
    rows = [{"name": u.name, "role": u.role, "tokens": len(hashes)} for u, hashes in users]
    if json:
        print_json(rows)
        return
    out = plain_console()
    for row in rows:
        out.print(f"{row['name']}\t{row['role']}\t{row['tokens']} token(s)")
