"""`planweave cache list|show|clear`: the plan cache's templates in the journal's file."""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from ..cache import PlanCache
from .app import DbOption, cache_app, print_json, read_journal, when
from .view import labelled, plain_console


@cache_app.command("list")
def cache_list(
    db: DbOption = None,
    limit: Annotated[int, typer.Option(help="How many templates, most recently used first.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """The templates, most recently used first."""
    err = plain_console(stderr=True)
    templates = read_journal(db, err, lambda journal: PlanCache(journal).templates(limit))
    if as_json:
        print_json(templates)
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    # The short columns keep their words whole on a narrow terminal; the tool set and the
    # shape wrap.  An id's first 12 characters name it for `cache show` and `cache clear`.
    for column in ("id", "tools", "seal", "used", "hits", "good", "bad", "tasks", "shape"):
        wraps = column in ("tools", "shape")
        table.add_column(column, no_wrap=not wraps, overflow="fold" if wraps else "ellipsis")
    for t in templates:
        table.add_row(
            t["id"][:12],
            _tool_set(t),
            "ok" if t["verified"] else Text("unverified", style="red"),
            when(t["used"]),
            str(t["hits"]),
            str(t["good"]),
            str(t["bad"]),
            str(t["plan"].count("\n") - 1),
            _shape(t)[:70],
        )
    plain_console().print(table)


@cache_app.command("show")
def cache_show(
    template_id: Annotated[str, typer.Argument(help="The template's id (a unique prefix).")],
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """One template: its question shape, its slots and its plan."""
    err = plain_console(stderr=True)
    found = read_journal(db, err, lambda journal: PlanCache(journal).find(template_id))
    if len({t["id"] for t in found}) != 1:
        what = "no template" if not found else "more than one template"
        err.print(labelled("error:", "red", f"{what} has an id starting with {template_id!r}"))
        raise typer.Exit(2)
    template = found[0]
    if as_json:
        print_json(template)
        return
    out = plain_console()
    if not template["verified"]:
        out.print(_UNVERIFIED, style="red")
    out.print(f"template {template['id']}: {_shape(template)}")
    out.print(f"made from: {template['question']} (run {template['source_run'] or '?'})")
    out.print(f"tool set: {_tool_set(template)}")
    for i, slot in enumerate(template["slots"]):
        out.print(f"  {{{i}}} {slot['kind']}, e.g. {slot['example']!r}")
    out.print(template["plan"])
    out.print(
        f"{template['hits']} hits · {template['good']} went well · {template['bad']} failed "
        f"in a row · planning it took {template['tokens']} tokens",
        style="dim",
    )


@cache_app.command("clear")
def cache_clear(
    template_id: Annotated[
        str | None, typer.Argument(help="One template's id; without it, every template.")
    ] = None,
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print how many were removed.")] = False,
) -> None:
    """Remove one template, or all of them."""
    err = plain_console(stderr=True)
    removed = read_journal(
        db, err, lambda journal: PlanCache(journal).clear(template_id), reading=False
    )
    if template_id is not None and not removed:
        err.print(
            labelled("error:", "red", f"no template has the id {template_id!r} (see cache list)")
        )
        raise typer.Exit(2)
    if as_json:
        print_json({"removed": removed})
        return
    plain_console().print(f"removed {removed} template{'s' if removed != 1 else ''}")


_UNVERIFIED = (
    "not verified: this template's seal does not check under your journal key (the journal's "
    "file was edited, or the template was stored before templates were sealed, or by another "
    "user), so the cache does not use it; a good run of its shape replaces it"
)


def _shape(template: dict[str, Any]) -> str:
    """The key with slots as {0}, {1}, ... (the markers as a person types them)."""
    return str(template["key"]).replace("⟦", "{").replace("⟧", "}")


def _tool_set(template: dict[str, Any]) -> str:
    """Which tool set a template is for: its signature's first 8 characters (a run's cache
    miss names its own), and the tools its plan calls."""
    signature = str(template["tools"])[:8]
    called = sorted(set(_CALLED.findall(template["plan"])) - {"join"})
    return f"{signature} ({', '.join(called)})" if called else signature


_CALLED = re.compile(r"^\s*\d+\.\s*(?:\w+\s*=\s*)?([A-Za-z_]\w*)\(", re.MULTILINE)
