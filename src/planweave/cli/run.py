"""`planweave run`: answer a question with the live view; what `runs resume` shares with it."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import anyio
import typer
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from ..errors import JournalError, PlanweaveError, UserError
from ..events import Event
from ..mcp_tools import MCPTools, mcp_sessions
from ..recovery import Escalation, EscalationAnswer, EscalationHandler
from ..runtime import RunResult, Runtime
from ..settings import RunSettings, make_llm
from ..store import Journal
from .app import DbOption, app
from .options import settings_options
from .plans import parse_params
from .view import DagView, labelled, plain_console

if TYPE_CHECKING:
    from ..llm.local import LocalLLM

T = TypeVar("T")


def build_runtime(
    settings: RunSettings, *, journal: Journal | None, console: Console, quiet: bool
) -> tuple[Runtime, float]:
    """The runtime for `planweave run` and `runs resume`: the library builds it from the
    settings; the CLI adds the model's loading bar and asking on this terminal (`--ask`).
    Returns it with the seconds spent loading the embedded model."""
    from ..llm.local import LocalLLM

    loading = _Loading(console, quiet=quiet)
    llm = make_llm(settings, progress=loading.progress)
    escalate = _ask_on_terminal(console) if settings.ask and sys.stdin.isatty() else None
    runtime = Runtime.from_settings(settings, llm=llm, journal=journal, escalate=escalate)
    return runtime, loading.load(llm) if isinstance(llm, LocalLLM) else 0.0


class _Loading:
    """Loads the embedded model before the run (so the run's timings are its own), with a
    transient bar per stage on a terminal."""

    def __init__(self, console: Console, *, quiet: bool) -> None:
        self.console = console
        self.quiet = quiet
        self.bar: Progress | None = None
        self.stages: dict[str, TaskID] = {}
        self.name = ""

    def progress(self, stage: str, done: int, total: int) -> None:
        if self.bar is None:
            return
        if stage not in self.stages:
            self.stages[stage] = self.bar.add_task(f"{stage} {self.name}", total=total)
        self.bar.update(self.stages[stage], completed=done, total=total)

    def load(self, llm: LocalLLM) -> float:
        self.name = llm.model
        if self.quiet:
            report = llm.load()
            return report.assemble_s + report.load_s
        columns = (TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn())
        with Progress(*columns, TimeElapsedColumn(), console=self.console, transient=True) as bar:
            self.bar = bar
            try:
                report = llm.load()
            finally:
                self.bar = None
        self.console.print(
            f"model {llm.model}: assembled and verified in {report.assemble_s:.1f} s, "
            f"loaded in {report.load_s:.1f} s ({report.path})",
            style="dim",
        )
        return report.assemble_s + report.load_s


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
    if result.cache and result.cache.get("hit"):
        parts.append(f"plan from the cache (template {result.cache.get('template_id')})")
    return " · ".join(parts)


@app.command()
@settings_options
def run(
    question: Annotated[
        str | None, typer.Argument(help="The question to answer (none with --plan).")
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            help="compiled (parallel plan), react (baseline) or native (the endpoint's own "
            "parallel function calling)."
        ),
    ] = "compiled",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object and nothing else.")
    ] = False,
    db: DbOption = None,
    journal: Annotated[
        bool, typer.Option(help="Record the run in the journal, so it can be resumed.")
    ] = True,
    ask: Annotated[
        bool,
        typer.Option(
            help="When a task fails for good, ask here for a result, a retry, or to let it fail."
        ),
    ] = False,
    approve: Annotated[
        str | None,
        typer.Option(
            help="Wait for a yes before running: `plan` (the whole first plan) or "
            "`side_effects` (tasks of tools with side effects); then `planweave runs approve`."
        ),
    ] = None,
    thread: Annotated[
        str | None,
        typer.Option(
            help="Answer as the next turn of this conversation: the earlier turns' questions, "
            "answers and results are read, a pure tool's same call is not made again "
            "(`planweave threads`)."
        ),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(help="Who the run answers, as tools that take a RunContext see it."),
    ] = None,
    plan: Annotated[
        str | None,
        typer.Option(
            "--plan",
            help="Run this named plan (`planweave plans`) instead of planning: no planner call.",
        ),
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", help="A named plan's parameter, KEY=VALUE (repeat it)."),
    ] = None,
    plan_version: Annotated[
        int | None, typer.Option(help="The named plan's version (default: the latest).")
    ] = None,
    *,
    settings: RunSettings,
) -> None:
    """Answer QUESTION: plan tool calls, run them in parallel, and join their results; or run
    a named plan (`--plan NAME --param KEY=VALUE`)."""
    # --mode, --ask, --approve, --thread and --user are settings: `settings` holds them
    # (`settings_options`).
    err = plain_console(stderr=True)

    def build() -> tuple[Runtime, float]:
        built = build_runtime(
            settings,
            journal=_journal(db, err) if journal else None,
            console=err,
            quiet=as_json or not err.is_terminal,
        )
        if "builtin" in settings.tools:
            from ..builtin import left_out

            if missing := left_out():
                err.print(
                    f"note: {', '.join(missing)} left out of the built-in tools: "
                    "pip install 'planweave[tools]'",
                    markup=False,
                    highlight=False,
                )
        return built

    try:
        execute_and_report(
            build,
            _start(question, plan, param or [], plan_version, settings.user),
            as_json=as_json,
            console=err,
            mcp=settings,
        )
    except PlanweaveError as exc:  # no runtime (a bad setting), or its journal cannot be written
        err.print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None


def _start(
    question: str | None,
    plan: str | None,
    params: list[str],
    version: int | None,
    user: str | None,
) -> Start:
    """How `run` starts: answering the question, or running the named plan with its values."""
    if (question is None) == (plan is None):
        raise UserError("give a question, or --plan NAME (and --param KEY=VALUE), not both")
    if plan is None:
        if params or version is not None:
            raise UserError("--param and --plan-version go with --plan NAME")
        asked = str(question)
        return lambda runtime, subs: runtime.arun(asked, subscribers=subs, check=False)
    values = parse_params(params)
    return lambda runtime, subs: runtime.arun_plan(
        plan, plan_version=version, params=values, subscribers=subs, check=False, user=user
    )


def _journal(db: str | None, console: Console) -> Journal | None:
    """The journal to record in.  The default one is a convenience: if it cannot be opened
    (a read-only home, a foreign file), say so and run without it; an asked-for one must work."""
    try:
        return Journal(db)
    except JournalError as exc:
        if db is not None or os.environ.get("PLANWEAVE_DB"):
            raise
        console.print(labelled("warning:", "yellow", f"{exc}; this run is not recorded"))
        return None


def _ask_on_terminal(console: Console) -> EscalationHandler:
    async def ask(question: Escalation) -> EscalationAnswer:
        def prompt() -> str:
            console.print(
                labelled(
                    f"task {question.task_id} {question.call} failed ({question.category}):",
                    "yellow",
                    question.error,
                )
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


Start = Callable[[Runtime, list[Callable[[Event], None]]], Awaitable[RunResult]]


def execute_and_report(
    build: Callable[[], tuple[Runtime, float]],
    start: Start,
    *,
    as_json: bool,
    console: Console,
    mcp: RunSettings | None = None,
) -> None:
    """Build the runtime (`build`: it and the seconds spent loading a model), run with the
    live view (or quietly), print the outcome; exit 1 on a failed run, 3 on one that waits
    for approval.  With `mcp` (settings naming MCP servers), the servers' tools are listed
    in the run's own sessions: one session per server lists the tools and serves the calls."""
    err = console
    view = DagView()
    result, load_s = _execute(
        build, start, view, live=not as_json and err.is_terminal, console=err, mcp=mcp
    )
    waits = result.status == "awaiting_approval"
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict(), ensure_ascii=False, default=str) + "\n")
        raise typer.Exit(3 if waits else 0 if result.error is None else 1)
    if not err.is_terminal:
        err.print(view.render())
    for rec in result.tasks:
        if rec.error is not None and rec.status == "failed":
            err.print(labelled(f"task {rec.task.id} failed:", "red", rec.error))
    err.print(_summary(result, load_s), style="dim")
    if waits:
        for task in result.waiting:
            err.print(labelled(f"task {task['id']} waits:", "yellow", task["call"]))
        err.print(
            f"approve with `planweave runs approve {result.run_id}` (--drop ID, --edit "
            f"ID='{{\"arg\": value}}'), or end it with `planweave runs reject {result.run_id}`"
        )
        raise typer.Exit(3)
    if result.error is not None:
        err.print(labelled("error:", "red", result.error))
        raise typer.Exit(1)
    plain_console().print(result.answer or "")


def _execute(
    build: Callable[[], tuple[Runtime, float]],
    start: Start,
    view: DagView,
    *,
    live: bool,
    console: Console,
    mcp: RunSettings | None,
) -> tuple[RunResult, float]:
    async def main() -> tuple[RunResult, float]:
        if mcp is None or not mcp.mcp:
            runtime, load_s = build()
            return await (go_live if live else go)(runtime), load_s
        failure: Exception | None = None
        async with mcp_sessions():
            try:
                # Listed here, in this scope: the runtime's registry is built from that
                # listing (`MCPTools.load`), and the run calls on the same sessions.
                await MCPTools.aload(
                    *mcp.mcp, open_timeout=mcp.mcp_open_timeout(), max_tools=mcp.mcp_max_tools
                )
                runtime, load_s = build()
                return await (go_live if live else go)(runtime), load_s
            except Exception as exc:  # raised as it is, not in the scope's ExceptionGroup
                failure = exc
        assert failure is not None
        raise failure

    async def go(runtime: Runtime) -> RunResult:
        try:
            return await start(runtime, [view])
        finally:
            await _close(runtime)

    async def go_live(runtime: Runtime) -> RunResult:
        view.ticking = True
        with Live(view.render(), console=console, refresh_per_second=10, transient=False) as screen:

            def refresh(event: Event | None) -> None:
                screen.update(view.render())

            try:
                result = await _ticking(start(runtime, [view, refresh]), lambda: refresh(None))
            finally:
                await _close(runtime)
            view.ticking = False
            screen.update(view.render())
            return result

    return anyio.run(main)


async def _close(runtime: Runtime) -> None:
    # The command's journal is closed with its run, not left to the process's exit: its WAL
    # is folded back into the file now, and a CLI run inside a program leaks no connection.
    try:
        await runtime.llm.aclose()
    finally:
        if runtime.journal is not None:
            runtime.journal.close()


async def _ticking(work: Awaitable[T], tick: Callable[[], None]) -> T:
    """`work`'s outcome; meanwhile `tick` is called every 0.1 s, so that a live view's times
    run on while nothing happens (a model thinking before its first token)."""
    failure: Exception | None = None
    async with anyio.create_task_group() as group:

        async def ticks() -> None:
            while True:
                await anyio.sleep(0.1)
                tick()

        group.start_soon(ticks)
        try:
            result = await work
        except Exception as exc:  # raised as it is, not in the task group's ExceptionGroup
            failure = exc
        finally:
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result
