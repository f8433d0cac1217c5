"""The typer apps the commands register on, and options they share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

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

DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db", help="The journal file (env PLANWEAVE_DB; default: runs.db in the user data dir)."
    ),
]


@app.callback()
def _root() -> None:
    """planweave: parallel plans of tool calls, compiled from a question."""
