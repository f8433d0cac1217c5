"""The `planweave` command: answer a question with a live view of the plan as it runs."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer
from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .errors import PlanweaveError
from .events import (
    Event,
    LLMCallFinished,
    LLMCallStarted,
    PlanInvalid,
    ReplanEvent,
    TaskCancelled,
    TaskFailed,
    TaskFinished,
    TaskPlanned,
    TaskSkipped,
    TaskStarted,
)
from .llm.base import LLM
from .runtime import Mode, RunResult, Runtime
from .tools import ToolRegistry, load_tools

app = typer.Typer(
    name="planweave",
    help="Compile a question into a parallel plan of tool calls, run it, and answer.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_STYLE = {
    "pending": "dim",
    "running": "yellow",
    "done": "green",
    "failed": "red",
    "skipped": "magenta",
    "cancelled": "red dim",
}


@dataclass
class _Row:
    task_id: int
    tool: str
    args: str
    deps: list[int]
    status: str = "pending"
    start: float | None = None
    end: float | None = None
    note: str = ""


@dataclass
class DagView:
    """The live terminal view, built from nothing but the event stream."""

    rows: dict[int, _Row] = field(default_factory=dict)
    llm_state: str = ""
    notes: list[str] = field(default_factory=list)
    now: float = 0.0

    def __call__(self, event: Event) -> None:
        self.now = event.t
        match event:
            case TaskPlanned():
                self.rows[event.task_id] = _Row(event.task_id, event.tool, event.args, event.deps)
            case TaskStarted():
                row = self.rows[event.task_id]
                row.status, row.start = "running", event.t
            case TaskFinished():
                row = self.rows[event.task_id]
                row.status, row.end = "done", event.t
            case TaskFailed():
                row = self.rows[event.task_id]
                row.status, row.end, row.note = (
                    "failed",
                    event.t,
                    str(event.error.get("message", "")),
                )
            case TaskSkipped():
                row = self.rows[event.task_id]
                row.status, row.note = "skipped", str(event.error.get("message", ""))
            case TaskCancelled():
                row = self.rows[event.task_id]
                row.status, row.end = "cancelled", event.t if row.start is not None else None
            case LLMCallStarted():
                self.llm_state = f"{event.purpose} ({event.model}) streaming…"
            case LLMCallFinished():
                self.llm_state = ""
            case PlanInvalid():
                self.notes.append(f"invalid plan: {event.error.get('text')}")
            case ReplanEvent():
                self.notes.append(f"replan {event.plan_round}: {event.reason}")
            case _:
                pass

    def render(self) -> Group:
        table = Table(box=None, pad_edge=False, header_style="bold")
        table.add_column("id", justify="right")
        table.add_column("task")
        table.add_column("needs")
        table.add_column("status")
        table.add_column("time", justify="right")
        for row in self.rows.values():
            if row.start is None:
                took = ""
            else:
                took = f"{(row.end if row.end is not None else self.now) - row.start:.2f}s"
            call = f"{row.tool}({row.args})"
            if len(call) > 70:
                call = call[:67] + "..."
            status = Text(row.status, style=_STYLE.get(row.status, ""))
            if row.note:
                status.append(f"  {row.note[:80]}", style="dim")
            table.add_row(str(row.task_id), call, ",".join(f"${d}" for d in row.deps), status, took)
        parts: list[Any] = [table]
        parts.extend(Text(note, style="yellow") for note in self.notes[-3:])
        if self.llm_state:
            parts.append(Text(self.llm_state, style="cyan"))
        return Group(*parts)


def _load_tool_sets(specs: list[str], files: Path | None) -> ToolRegistry:
    """`builtin` (the default) names planweave's own tools; anything else is MODULE:ATTR."""
    registry = ToolRegistry()
    for spec in specs or ["builtin"]:
        if spec == "builtin":
            from .builtin import builtin_tools

            registry.add(builtin_tools(files))
        else:
            registry.add(load_tools(spec))
    return registry


def _make_llm(
    base_url: str | None,
    model: str | None,
    *,
    grammar: bool,
    grammar_field: str | None,
    console: Console,
    quiet: bool,
) -> tuple[LLM, float]:
    """An endpoint when one is configured, else the embedded model (loaded now, with progress).
    Returns the backend and the seconds spent assembling and loading it."""
    if base_url or os.environ.get("PLANWEAVE_BASE_URL"):
        from .llm.openai_compat import OpenAICompatible

        return OpenAICompatible(base_url=base_url, model=model, grammar_field=grammar_field), 0.0
    from .llm.local import LocalLLM
    from .llm.models import DEFAULT_MODEL

    name = model or os.environ.get("PLANWEAVE_MODEL") or DEFAULT_MODEL
    if quiet:
        llm = LocalLLM(name, grammar=grammar)
        report = llm.load()
        return llm, report.assemble_s + report.load_s
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(stage: str, done: int, total: int) -> None:
            label = f"{stage} {name}"
            if stage not in tasks:
                tasks[stage] = bar.add_task(label, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        llm = LocalLLM(name, grammar=grammar, progress=progress)
        report = llm.load()
    took = report.assemble_s + report.load_s
    console.print(
        f"[dim]model {name}: assembled and verified in {report.assemble_s:.1f} s, "
        f"loaded in {report.load_s:.1f} s ({report.path})[/dim]"
    )
    return llm, took


def _summary(result: RunResult, load_s: float) -> str:
    usage = result.llm
    failed = sum(1 for r in result.tasks if r.status != "done")
    spent = result.timings()
    phases = ", ".join(f"{k} {v:.2f} s" for k, v in spent.items() if v or k != "reasoning")
    parts = [
        (f"load {load_s:.2f} s · " if load_s else "") + f"run {result.wall_s:.2f} s ({phases})",
        f"{len(result.tasks)} tasks" + (f" ({failed} not done)" if failed else ""),
        f"{usage.calls} LLM calls",
        f"{usage.prompt_tokens}+{usage.completion_tokens} tokens",
    ]
    if result.replans:
        parts.append(f"{result.replans} replans")
    return " · ".join(parts)


@app.callback()
def _root() -> None:
    """planweave: parallel plans of tool calls, compiled from a question."""


@app.command()
def run(
    question: Annotated[str, typer.Argument(help="The question to answer.")],
    tools: Annotated[
        list[str] | None,
        typer.Option(
            "--tools",
            "-t",
            help="`builtin` (the default) or MODULE:ATTR naming a tool, a list or a registry; "
            "repeatable.",
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            help="OpenAI-compatible endpoint (env PLANWEAVE_BASE_URL); without one, the "
            "embedded local model answers."
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="Endpoint model name, or for the embedded backend a registry name "
            "(qwen2.5-coder-0.5b, qwen2.5-coder-1.5b) or a GGUF path (env PLANWEAVE_MODEL)."
        ),
    ] = None,
    files: Annotated[
        Path | None,
        typer.Option(help="A folder of .txt/.md files the built-in search_files tool may read."),
    ] = None,
    grammar: Annotated[
        bool, typer.Option(help="Constrain decoding with grammars where the backend can.")
    ] = True,
    grammar_field: Annotated[
        str | None,
        typer.Option(
            help="Send grammars to the endpoint in this request field: `grammar` for llama.cpp "
            "server, `guided_grammar` for vLLM."
        ),
    ] = None,
    mode: Annotated[
        str, typer.Option(help="compiled (parallel plan) or react (baseline).")
    ] = "compiled",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object and nothing else.")
    ] = False,
    max_replans: Annotated[
        int, typer.Option(help="How many times the joiner may ask for a new plan.")
    ] = 2,
    timeout: Annotated[
        float, typer.Option(help="Default timeout of one tool call, seconds.")
    ] = 60.0,
    stream_dispatch: Annotated[
        bool, typer.Option(help="Start tasks while the plan is still streaming.")
    ] = True,
) -> None:
    """Answer QUESTION: plan tool calls, run them in parallel, and join their results."""
    err = Console(stderr=True)
    if mode not in ("compiled", "react"):
        err.print(f"[red]error:[/red] --mode must be compiled or react, not {mode!r}")
        raise typer.Exit(2)
    try:
        registry = _load_tool_sets(tools or [], files)
        llm, load_s = _make_llm(
            base_url,
            model,
            grammar=grammar,
            grammar_field=grammar_field if grammar else None,
            console=err,
            quiet=as_json or not err.is_terminal,
        )
        runtime = Runtime(
            registry,
            llm,
            mode="react" if mode == "react" else "compiled",
            max_replans=max_replans,
            tool_timeout=timeout,
            streaming=stream_dispatch,
            grammar=grammar,
        )
    except PlanweaveError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None

    view = DagView()
    result = _execute(
        runtime, question, mode, view, live=not as_json and err.is_terminal, console=err
    )

    if as_json:
        sys.stdout.write(json.dumps(result.to_dict(), ensure_ascii=False, default=str) + "\n")
        raise typer.Exit(0 if result.error is None else 1)
    if not err.is_terminal:
        err.print(view.render())
    for rec in result.tasks:
        if rec.error is not None and rec.status == "failed":
            err.print(f"[red]task {rec.task.id} failed:[/red] {rec.error}")
    err.print(f"[dim]{_summary(result, load_s)}[/dim]")
    if result.error is not None:
        err.print(f"[red]error:[/red] {result.error}")
        raise typer.Exit(1)
    Console().print(result.answer or "", markup=False, highlight=False)


def _execute(
    runtime: Runtime, question: str, mode: str, view: DagView, *, live: bool, console: Console
) -> RunResult:
    run_mode: Mode = "react" if mode == "react" else "compiled"

    async def go() -> RunResult:
        try:
            return await runtime.arun(question, mode=run_mode, subscribers=[view], check=False)
        finally:
            await runtime.llm.aclose()

    async def go_live() -> RunResult:
        with Live(view.render(), console=console, refresh_per_second=10, transient=False) as screen:

            def refresh(event: Event) -> None:
                screen.update(view.render())

            try:
                result = await runtime.arun(
                    question, mode=run_mode, subscribers=[view, refresh], check=False
                )
            finally:
                await runtime.llm.aclose()
            screen.update(view.render())
            return result

    return anyio.run(go_live if live else go)


def main() -> None:
    app()
