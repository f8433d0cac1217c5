"""The `planweave` command: answer a question with a live view of the plan as it runs."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from collections.abc import Awaitable, Callable
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

from .errors import DecisionNeeded, PlanweaveError, UserError
from .events import (
    Event,
    LLMCallFinished,
    LLMCallStarted,
    LLMRetry,
    PlanInvalid,
    ReplanEvent,
    TaskCancelled,
    TaskFailed,
    TaskFinished,
    TaskPlanned,
    TaskRecovery,
    TaskSkipped,
    TaskStarted,
)
from .llm.base import LLM
from .recovery import (
    DEFAULT_RULES,
    Budget,
    Decompose,
    Escalate,
    Escalation,
    EscalationAnswer,
    EscalationHandler,
    Pattern,
    Recovery,
)
from .runtime import Mode, RunResult, Runtime
from .store import Decision, Journal
from .tools import ToolRegistry, load_tools

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
            case TaskRecovery():
                row = self.rows[event.task_id]
                row.note = f"{event.pattern} after {event.category}: {event.error}"
            case LLMRetry():
                self.notes.append(
                    f"{event.purpose} call {event.call}: {event.category}, retry in "
                    f"{event.delay:.1f} s"
                )
            case ReplanEvent():
                self.notes.append(f"replan {event.plan_round}: {event.reason}")
            case _:
                pass

    @classmethod
    def from_tasks(cls, tasks: list[dict[str, Any]], now: float = 0.0) -> DagView:
        """The view of a recorded run, from its task objects (as `--json` has them)."""
        view = cls(now=now)
        for t in tasks:
            view.rows[t["id"]] = _Row(
                t["id"],
                t["tool"],
                t["call"][len(t["tool"]) + 1 : -1],
                t["dependencies"],
                t["status"],
                t["start"],
                t["end"],
                str(t.get("error", {}).get("message", "")),
            )
        return view

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
    db: DbOption = None,
    journal: Annotated[
        bool, typer.Option(help="Record the run in the journal, so it can be resumed.")
    ] = True,
    recovery: Annotated[
        str,
        typer.Option(
            help="`default` (retry transient failures, timeouts and LLM connection trouble) "
            "or `none` (every failure goes straight to the joiner)."
        ),
    ] = "default",
    decompose: Annotated[
        bool,
        typer.Option(
            help="Give a call that fails for good to the planner as a sub-goal (costs LLM calls)."
        ),
    ] = False,
    ask: Annotated[
        bool,
        typer.Option(
            help="When a task fails for good, ask here for a result, a retry, or to let it fail."
        ),
    ] = False,
    max_llm_calls: Annotated[
        int | None, typer.Option(help="Budget: end the run after this many LLM calls.")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option(help="Budget: end the run after this many tokens.")
    ] = None,
    max_wall: Annotated[
        float | None, typer.Option(help="Budget: end the run after this many seconds.")
    ] = None,
    max_depth: Annotated[int, typer.Option(help="Budget: how deep decomposition may nest.")] = 2,
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
        settings: dict[str, Any] = {
            "tools": tools or ["builtin"],
            "files": None if files is None else str(files.resolve()),
            "base_url": base_url or os.environ.get("PLANWEAVE_BASE_URL"),
            "grammar_field": grammar_field,
            "recovery": recovery,
            "decompose": decompose,
            "ask": ask,
            "budget": {
                "llm_calls": max_llm_calls,
                "tokens": max_tokens,
                "wall_s": max_wall,
                "decomposition_depth": max_depth,
            },
        }
        if model:
            settings["model"] = model
        runtime = Runtime(
            registry,
            llm,
            mode="react" if mode == "react" else "compiled",
            max_replans=max_replans,
            tool_timeout=timeout,
            streaming=stream_dispatch,
            grammar=grammar,
            journal=Journal(db) if journal else None,
            settings=settings,
            **_recovery_options(settings, err),
        )
    except PlanweaveError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None

    run_mode: Mode = "react" if mode == "react" else "compiled"
    _execute_and_report(
        runtime,
        lambda subs: runtime.arun(question, mode=run_mode, subscribers=subs, check=False),
        as_json=as_json,
        console=err,
        load_s=load_s,
    )


def _recovery_options(settings: dict[str, Any], console: Console) -> dict[str, Any]:
    """Runtime keyword arguments for the CLI's recovery and budget options (kept in the run's
    settings, so a resumed run recovers the same way)."""
    name = settings.get("recovery", "default")
    if name not in ("default", "none"):
        raise UserError(f"--recovery must be default or none, not {name!r}")
    recovery = Recovery.default() if name == "default" else Recovery.none()
    last: list[Pattern] = []
    if settings.get("decompose"):
        last.append(Decompose())
    escalate = None
    if settings.get("ask") and sys.stdin.isatty():
        last.append(Escalate())
        escalate = _ask_on_terminal(console)
    if last:
        for category in ("tool.permanent", "tool.crash", "tool.wrong_type"):
            recovery.on(category, *last)
        for category, patterns in DEFAULT_RULES if name == "default" else []:
            if category.startswith("tool."):
                recovery.on(category, *patterns, *last)
    budget = Budget(**(settings.get("budget") or {}))
    return {"recovery": recovery, "budget": budget, "escalate": escalate}


def _ask_on_terminal(console: Console) -> EscalationHandler:
    async def ask(question: Escalation) -> EscalationAnswer:
        def prompt() -> str:
            console.print(
                f"[yellow]task {question.task_id} {question.call} failed "
                f"({question.category}):[/yellow] {question.error}"
            )
            answer: str = typer.prompt(
                "Type a result to use (JSON or text), r to retry, or press Enter to let it fail",
                default="",
                show_default=False,
                err=True,
            )
            return answer

        answer = (await anyio.to_thread.run_sync(prompt)).strip()
        if not answer:
            return ("fail", None)
        if answer.lower() == "r":
            return ("retry", None)
        try:
            return ("result", json.loads(answer))
        except json.JSONDecodeError:
            return ("result", answer)

    return ask


def _execute_and_report(
    runtime: Runtime,
    start: Callable[[list[Callable[[Event], None]]], Awaitable[RunResult]],
    *,
    as_json: bool,
    console: Console,
    load_s: float,
) -> None:
    """Run with the live view (or quietly), print the outcome, exit 1 on a failed run."""
    err = console
    view = DagView()
    result = _execute(runtime, start, view, live=not as_json and err.is_terminal, console=err)
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
    runtime: Runtime,
    start: Callable[[list[Callable[[Event], None]]], Awaitable[RunResult]],
    view: DagView,
    *,
    live: bool,
    console: Console,
) -> RunResult:
    async def go() -> RunResult:
        try:
            return await start([view])
        finally:
            await runtime.llm.aclose()

    async def go_live() -> RunResult:
        with Live(view.render(), console=console, refresh_per_second=10, transient=False) as screen:

            def refresh(event: Event) -> None:
                screen.update(view.render())

            try:
                result = await start([view, refresh])
            finally:
                await runtime.llm.aclose()
            screen.update(view.render())
            return result

    return anyio.run(go_live if live else go)


# ---------------------------------------------------------------------- planweave runs ...


def _open(db: Path | None, console: Console) -> Journal:
    try:
        return Journal(db)
    except PlanweaveError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None


def _when(epoch: float | None) -> str:
    if epoch is None:
        return ""
    return dt.datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M:%S")


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")


@runs_app.command("list")
def runs_list(
    db: DbOption = None,
    limit: Annotated[int, typer.Option(help="How many runs, newest first.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """The recorded runs, newest first."""
    err = Console(stderr=True)
    with _open(db, err) as journal:
        runs = journal.runs(limit)
    if as_json:
        _print_json(runs)
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("id", "started", "status", "mode", "tasks", "wall", "question"):
        table.add_column(column)
    for r in runs:
        done = r["tasks"].get("done", 0)
        table.add_row(
            r["id"],
            _when(r["created"]),
            Text(r["status"], style=_STYLE.get(r["status"], "")),
            r["mode"],
            f"{done}/{sum(r['tasks'].values())}",
            "" if r["wall_s"] is None else f"{r['wall_s']:.1f}s",
            r["question"][:60],
        )
    Console().print(table)


@runs_app.command("show")
def runs_show(
    run_id: Annotated[str, typer.Argument(help="The run's id (a unique prefix will do).")],
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """One run: its DAG with timings, errors and the answer."""
    err = Console(stderr=True)
    with _open(db, err) as journal:
        try:
            run = journal.show(run_id)
        except PlanweaveError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from None
    if as_json:
        _print_json(run)
        return
    out = Console()
    out.print(f"[bold]{run['id']}[/bold]  {run['status']}  {_when(run['created'])}  {run['mode']}")
    out.print(f"question: {run['question']}", markup=False)
    out.print(DagView.from_tasks(run["tasks"], now=run["wall_s"] or 0.0).render())
    for t in run["tasks"]:
        if t["status"] == "failed":
            out.print(f"[red]task {t['id']} failed:[/red] {t['error'].get('text') or t['error']}")
    llm = run["llm"]
    out.print(
        f"[dim]{llm.get('calls', 0)} LLM calls · {llm.get('prompt_tokens', 0)}+"
        f"{llm.get('completion_tokens', 0)} tokens · sessions {run['sessions']}"
        + ("" if run["wall_s"] is None else f" · {run['wall_s']:.2f} s since start")
        + "[/dim]"
    )
    if "error" in run:
        out.print(f"[red]error:[/red] {run['error'].get('text') or run['error']}", markup=True)
    if run["answer"] is not None:
        out.print(f"answer: {run['answer']}", markup=False)


@runs_app.command("cancel")
def runs_cancel(
    run_id: Annotated[str, typer.Argument(help="The run's id (a unique prefix will do).")],
    db: DbOption = None,
) -> None:
    """Stop a run: a live one within a second, a stopped one is marked cancelled."""
    err = Console(stderr=True)
    with _open(db, err) as journal:
        try:
            state = journal.request_cancel(run_id)
        except PlanweaveError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from None
    Console().print(f"{run_id}: {state}")


@runs_app.command("resume")
def runs_resume(
    run_id: Annotated[str, typer.Argument(help="The run's id (a unique prefix will do).")],
    db: DbOption = None,
    rerun: Annotated[
        list[int] | None,
        typer.Option(help="Re-run this side-effecting task that was in flight; repeatable."),
    ] = None,
    fail: Annotated[
        list[int] | None,
        typer.Option(help="Mark this side-effecting task that was in flight failed; repeatable."),
    ] = None,
    tools: Annotated[
        list[str] | None, typer.Option("--tools", "-t", help="Override the recorded tool sets.")
    ] = None,
    base_url: Annotated[str | None, typer.Option(help="Override the recorded endpoint.")] = None,
    model: Annotated[str | None, typer.Option(help="Override the recorded model.")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object and nothing else.")
    ] = False,
) -> None:
    """Continue a run that stopped: recorded LLM responses are replayed, finished tasks are not
    run again, and a side-effecting task that was in flight is re-run only if you say so."""
    err = Console(stderr=True)
    journal = _open(db, err)
    decisions: dict[int, Decision] = {i: "rerun" for i in rerun or ()}
    decisions.update({i: "fail" for i in fail or ()})

    def decide(task: dict[str, Any]) -> Decision | None:
        if task["id"] in decisions:
            return decisions[task["id"]]
        if as_json or not sys.stdin.isatty():
            return None
        again = typer.confirm(
            f"task {task['id']} {task['call']} has side effects and was in flight when the "
            "run stopped; it may or may not have taken effect. Run it again?",
            err=True,
        )
        return "rerun" if again else "fail"

    try:
        settings = journal.show(run_id)["settings"]
        files = settings.get("files")
        registry = _load_tool_sets(tools or settings.get("tools") or [], files and Path(files))
        llm, load_s = _make_llm(
            base_url or settings.get("base_url"),
            model or settings.get("model"),
            grammar=settings.get("grammar", True),
            grammar_field=settings.get("grammar_field"),
            console=err,
            quiet=as_json or not err.is_terminal,
        )
        runtime = Runtime(
            registry,
            llm,
            mode="react" if settings.get("mode") == "react" else "compiled",
            max_replans=settings.get("max_replans", 2),
            max_repairs=settings.get("max_repairs", 2),
            tool_timeout=settings.get("tool_timeout", 60.0),
            streaming=settings.get("streaming", True),
            grammar=settings.get("grammar", True),
            journal=journal,
            settings=settings,
            **_recovery_options(settings, err),
        )
    except PlanweaveError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None

    def start(subs: list[Callable[[Event], None]]) -> Awaitable[RunResult]:
        return runtime.aresume(run_id, decisions=decide, subscribers=subs, check=False)

    try:
        _execute_and_report(runtime, start, as_json=as_json, console=err, load_s=load_s)
    except DecisionNeeded as exc:
        if as_json:
            _print_json({"id": run_id, "status": "paused", "error": exc.report()})
        else:
            err.print(f"[yellow]paused:[/yellow] {exc}")
            err.print("resume with --rerun ID or --fail ID for each of these tasks")
        raise typer.Exit(3) from None
    except PlanweaveError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None


def main() -> None:
    app()
