"""`planweave plans compile|list|show|edit`: named plans, runbooks compiled ahead of time
(`runbooks`); `planweave run --plan NAME --param KEY=VALUE` runs one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console

from ..errors import PlanweaveError, UserError
from ..runbooks import NamedPlan, NamedPlans
from ..runtime import Runtime
from ..settings import RunSettings, make_llm
from ..store import Journal
from .app import DbOption, open_journal, plans_app, print_json, when
from .options import settings_options
from .view import DagView, labelled, plain_console

__all__ = ["parse_params"]

FileArgument = Annotated[Path, typer.Argument(help="The runbook: markdown, numbered steps.")]
NameOption = Annotated[str, typer.Option("--name", help="The plan's name.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def parse_params(pairs: list[str]) -> dict[str, str]:
    """`--param KEY=VALUE`s as a mapping (each value read as its parameter's type later)."""
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--param {pair!r}: write KEY=VALUE")
        if key.strip() in values:
            raise UserError(f"--param {key.strip()} is given twice")
        values[key.strip()] = value
    return values


def _plans(journal: Journal, settings: RunSettings) -> NamedPlans:
    return NamedPlans(
        journal, settings.tool_sets(), plan_answers=settings.plan_answers is not False
    )


def _read(text_of: Path, err: Console) -> str:
    try:
        return text_of.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        err.print(labelled("error:", "red", f"cannot read {text_of}: {exc}"))
        raise typer.Exit(2) from None


def _summary(plan: NamedPlan) -> str:
    params = ", ".join(f"{k} ({v})" for k, v in plan.params.items()) or "no parameters"
    return f"{plan.name} v{plan.version}: {plan.title} · {params}"


@plans_app.command("compile")
@settings_options
def plans_compile(
    runbook: FileArgument,
    name: NameOption,
    db: DbOption = None,
    as_json: AsJson = False,
    by_step: Annotated[
        bool | None,
        typer.Option(
            "--by-step/--in-one",
            help="one planner call per numbered step, or one for the whole runbook "
            "(default: by step with the embedded model)",
        ),
    ] = None,
    *,
    settings: RunSettings,
) -> None:
    """Compile RUNBOOK into the next version of the named plan NAME (one planner call, or one
    per numbered step)."""
    err = plain_console(stderr=True)
    text = _read(runbook, err)
    with open_journal(db, err) as journal:
        try:
            llm = make_llm(settings)
            runtime = Runtime.from_settings(settings, llm=llm, journal=journal)
            plan = anyio.run(_compiled, runtime, text, name, by_step)
        except PlanweaveError as exc:
            err.print(labelled("error:", "red", exc))
            raise typer.Exit(2) from None
    if as_json:
        print_json(plan.to_dict())
        return
    plain_console().print(_summary(plan))
    plain_console().print(plan.plan, markup=False, highlight=False)


async def _compiled(runtime: Runtime, text: str, name: str, by_step: bool | None) -> NamedPlan:
    try:
        return await runtime.acompile_runbook(text, name=name, by_step=by_step)
    finally:
        await runtime.llm.aclose()


@plans_app.command("list")
@settings_options
def plans_list(db: DbOption = None, as_json: AsJson = False, *, settings: RunSettings) -> None:
    """The named plans, each at its latest version."""
    err = plain_console(stderr=True)
    with open_journal(db, err) as journal:
        plans = _plans(journal, settings).all()
    if as_json:
        print_json([p.to_dict() for p in plans])
        return
    out = plain_console()
    for p in plans:
        out.print(f"{_summary(p)} · {when(p.created)}", markup=False, highlight=False)
    if not plans:
        out.print("no named plans: `planweave plans compile RUNBOOK.md --name NAME`")


@plans_app.command("show")
@settings_options
def plans_show(
    name: Annotated[str, typer.Argument(help="The plan's name.")],
    version: Annotated[
        int | None, typer.Option(help="Which version (default: the latest).")
    ] = None,
    db: DbOption = None,
    as_json: AsJson = False,
    *,
    settings: RunSettings,
) -> None:
    """One named plan for review: its parameters, its DAG, its text and its runbook."""
    err = plain_console(stderr=True)
    with open_journal(db, err) as journal:
        try:
            store = _plans(journal, settings)
            plan = store.get(name, version)
            tasks = store.outline(plan)
        except PlanweaveError as exc:
            err.print(labelled("error:", "red", exc))
            raise typer.Exit(2) from None
    if as_json:
        print_json(plan.to_dict() | {"tasks": tasks})
        return
    out = plain_console()
    out.print(_summary(plan), markup=False, highlight=False)
    out.print(DagView.from_tasks(tasks).render())
    out.print(plan.plan, markup=False, highlight=False)
    if plan.source:
        out.print("runbook:", style="dim")
        out.print(plan.source, markup=False, highlight=False)


@plans_app.command("edit")
@settings_options
def plans_edit(
    name: Annotated[str, typer.Argument(help="The plan's name.")],
    file: Annotated[Path, typer.Option("--file", help="The new plan's text.")],
    db: DbOption = None,
    as_json: AsJson = False,
    *,
    settings: RunSettings,
) -> None:
    """A new version of NAME from the plan text in FILE (`{param}` where a parameter goes),
    validated as a compiled one; its parameters stay the latest version's."""
    err = plain_console(stderr=True)
    text = _read(file, err)
    with open_journal(db, err) as journal:
        try:
            plan = _plans(journal, settings).save(name, text)
        except PlanweaveError as exc:
            err.print(labelled("error:", "red", exc))
            raise typer.Exit(2) from None
    if as_json:
        print_json(plan.to_dict())
        return
    plain_console().print(_summary(plan), markup=False, highlight=False)
