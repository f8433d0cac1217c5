"""The typer apps the commands register on, and options they share."""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from ..errors import PlanweaveError
from ..store import Journal
from .view import labelled

T = TypeVar("T")

app = typer.Typer(
    name="planweave",
    help="Compile a question into a parallel plan of tool calls, run it, and answer.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
runs_app = typer.Typer(
    help="Recorded runs: list, show, cancel, resume.", no_args_is_help=True, add_completion=False
)
app.add_typer(runs_app, name="runs")
cache_app = typer.Typer(
    help="The plan cache's templates: list, show, clear.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(cache_app, name="cache")
threads_app = typer.Typer(
    help="Conversations (`run --thread`): list, show.", no_args_is_help=True, add_completion=False
)
app.add_typer(threads_app, name="threads")
plans_app = typer.Typer(
    help="Named plans (runbooks compiled ahead of time): compile, list, show, edit; "
    "run one with `planweave run --plan NAME --param KEY=VALUE`.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(plans_app, name="plans")

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="The journal: a file, or a PostgreSQL URL postgresql://... (the postgres extra) "
        "(env PLANWEAVE_DB; default: runs.db in the user data dir).",
    ),
]


def open_journal(db: str | None, console: Console, *, reading: bool = False) -> Journal:
    try:
        return Journal.for_reading(db) if reading else Journal(db)
    except PlanweaveError as exc:
        console.print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None


def read_journal(
    db: str | None, console: Console, read: Callable[[Journal], T], *, reading: bool = True
) -> T:
    """`read(journal)`, or the error on the console and exit status 2.  History is read from
    a journal that cannot be written too (`reading`)."""
    with open_journal(db, console, reading=reading) as journal:
        try:
            return read(journal)
        except PlanweaveError as exc:
            console.print(labelled("error:", "red", exc))
            raise typer.Exit(2) from None


def when(epoch: float | None) -> str:
    if epoch is None:
        return ""
    return dt.datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M:%S")


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")


@app.callback()
def _root() -> None:
    """planweave: parallel plans of tool calls, compiled from a question."""
