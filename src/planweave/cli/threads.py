"""`planweave threads list|show`: the conversations in the journal (`run --thread`)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from .app import DbOption, print_json, read_journal, threads_app, when
from .view import plain_console, run_status


@threads_app.command("list")
def threads_list(
    db: DbOption = None,
    limit: Annotated[int, typer.Option(help="How many, the latest spoken in first.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """The conversations, the one spoken in last first."""
    err = plain_console(stderr=True)
    threads = read_journal(db, err, lambda journal: journal.threads(limit))
    if as_json:
        print_json(threads)
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("thread", "turns", "last", "first question"):
        table.add_column(column)
    for t in threads:
        first = t["first_question"] or ""
        table.add_row(t["thread"], str(t["runs"]), when(t["updated"]), first[:60])
    plain_console().print(table)


@threads_app.command("show")
def threads_show(
    thread: Annotated[str, typer.Argument(help="The thread's id.")],
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """One conversation: its turns in order, each run's question, status and answer."""
    err = plain_console(stderr=True)
    turns = read_journal(db, err, lambda journal: journal.thread_runs(thread))
    if as_json:
        print_json({"thread": thread, "turns": turns})
        return
    out = plain_console()
    if not turns:
        out.print(f"no runs in thread {thread}")
        return
    for number, turn in enumerate(turns, 1):
        out.print(f"{number}. [{turn['id']}] {turn['question']}", markup=False, highlight=False)
        out.print("   ", run_status(turn["status"], 0), " ", turn["answer"] or "", markup=False)
