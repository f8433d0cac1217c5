"""`planweave runs list|show|cancel|resume`: the journal's run history."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from textwrap import indent
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import DecisionNeeded, PlanweaveError, ResumeError, UserError
from ..events import (
    Event,
)
from ..records import Price, dollars
from ..resume import ResumeDecision
from ..runtime import RunResult, Runtime
from ..settings import RunSettings, reach_differences
from ..store import Journal
from .app import DbOption, open_journal, print_json, read_journal, runs_app, when
from .options import OtelOption, start_tracing
from .run import build_runtime, execute_and_report
from .view import DagView, labelled, plain_console, run_status

T = TypeVar("T")

# Where a resumed run may reach comes from these options (and the environment), never from the
# journal, which is untrusted: see `_recorded_settings`.
ToolsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tools",
        "-t",
        help="The tool sets (as for `run`; default: builtin); the recorded ones are not used "
        "unless given again or accepted.",
    ),
]
McpOption = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp",
        help="An MCP server (as for `run`); repeatable.  The recorded ones are not started unless "
        "given again or accepted.",
    ),
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        help="The endpoint (env PLANWEAVE_BASE_URL); the recorded one is not used unless given "
        "again or accepted."
    ),
]
IgnoreOption = Annotated[
    bool,
    typer.Option(
        "--ignore-recorded-settings",
        help="Reach only what this command gives (or the defaults: the built-in tools, no MCP "
        "server, no folder), whatever endpoint, MCP servers, tool sets or folder the journal "
        "records.",
    ),
]
TrustOption = Annotated[
    bool,
    typer.Option(
        "--trust-journal",
        help="Seal the run's records with your journal key before resuming, though their seals "
        "do not check (a journal from before seals, or from another user or machine): only "
        "for a file you trust, since a forged record would then be replayed. The plan cache's "
        "templates are not sealed by it: one that does not verify is not used, and the next "
        "good run of its shape replaces it.",
    ),
]
ModelOption = Annotated[str | None, typer.Option(help="Override the recorded model.")]
LlmBackendOption = Annotated[
    str | None,
    typer.Option(
        help="The LLM backend (endpoint, embedded, auto); the recorded one is not used unless "
        "given or accepted.",
    ),
]
FilesOption = Annotated[
    Path | None,
    typer.Option(
        help="The folder search_files reads; the recorded one is not used unless given again "
        "or accepted."
    ),
]
AcceptOption = Annotated[
    bool,
    typer.Option(
        "--accept-recorded-settings",
        help="Use the endpoint, MCP servers, tool sets, folder and model file the journal "
        "records where this command gives none (the journal is untrusted: only for a journal "
        "you trust).",
    ),
]


@runs_app.command("list")
def runs_list(
    db: DbOption = None,
    limit: Annotated[int, typer.Option(help="How many runs, newest first.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """The recorded runs, newest first."""
    err = plain_console(stderr=True)
    runs = read_journal(db, err, lambda journal: journal.runs(limit))
    if as_json:
        print_json(runs)
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("id", "started", "status", "mode", "tasks", "wall", "question"):
        table.add_column(column)
    for r in runs:
        done = r["tasks"].get("done", 0)
        table.add_row(
            r["id"],
            when(r["created"]),
            run_status(r["status"], r["tasks"].get("failed", 0)),
            r["mode"],
            f"{done}/{sum(r['tasks'].values())}",
            "" if r["wall_s"] is None else f"{r['wall_s']:.1f}s",
            r["question"][:60],
        )
    plain_console().print(table)


@runs_app.command("show")
def runs_show(
    run_id: Annotated[str, typer.Argument(help="The run's id (a unique prefix will do).")],
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """One run: its DAG with timings, errors and the answer."""
    err = plain_console(stderr=True)
    run = read_journal(db, err, lambda journal: journal.show(run_id))
    if as_json:
        print_json(run)
        return
    out = plain_console()
    out.print(
        Text.assemble(
            (run["id"], "bold"),
            "  ",
            run_status(run["status"], sum(t["status"] == "failed" for t in run["tasks"])),
            f"  {when(run['created'])}  {run['mode']}",
        )
    )
    out.print(f"question: {run['question']}")
    out.print(DagView.from_tasks(run["tasks"], now=run["wall_s"] or 0.0).render())
    for t in run["tasks"]:
        if t["status"] == "done" and t["tool"] != "join":
            out.print(labelled(f"task {t['id']} result:", "green", _shown(t["result"])))
        elif t["status"] == "failed":
            out.print(labelled(f"task {t['id']} failed:", "red", _error_text(t["error"])))
    price = _price(run.get("settings"))
    for c in run["llm_calls"]:
        used = (c["prompt_tokens"] or 0, c["completion_tokens"] or 0)
        out.print(
            Text.assemble(
                (f"LLM call {c['call']} ({c['purpose']})", "bold cyan"),
                f"  {c['model']} · {used[0]}+{used[1]} tokens"
                + ("" if price is None else f" · {dollars(price.cost(*used))}")
                + ("" if c["duration"] is None else f" · {c['duration']:.2f} s")
                + ("" if c["status"] == "done" else f" · {c['status']}"),
                style="dim",
            )
        )
        if c.get("error"):
            out.print(labelled("  error:", "red", _error_text(c["error"])))
        if c["text"]:
            out.print(Text(indent(c["text"].rstrip(), "  ")))
    llm = run["llm"]
    used = (llm.get("prompt_tokens", 0), llm.get("completion_tokens", 0))
    out.print(
        f"{llm.get('calls', 0)} LLM calls · {used[0]}+{used[1]} tokens"
        + ("" if price is None else f" · {dollars(price.cost(*used))}")
        + f" · sessions {run['sessions']}"
        + ("" if run["wall_s"] is None else f" · {run['wall_s']:.2f} s since start"),
        style="dim",
    )
    if "error" in run:
        out.print(labelled("error:", "red", _error_text(run["error"])))
    if run["answer"] is not None:
        out.print(f"answer: {run['answer']}")


def _price(settings: Any) -> Price | None:
    """The model's price a run's stored settings give (none where they give none, or one a
    journal's editor made unreadable)."""
    text = settings.get("price") if isinstance(settings, dict) else None
    try:
        return Price.parse(text) if isinstance(text, str) else None
    except UserError:
        return None


_RESULT_CHARS = 300  # a task's result in `runs show`; `--json` has it whole


def _shown(result: Any) -> str:
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    return text if len(text) <= _RESULT_CHARS else text[: _RESULT_CHARS - 1] + "…"


def _error_text(error: Any) -> str:
    """A recorded error as a person reads it: the rendered text, else the message."""
    if isinstance(error, dict):
        return str(error.get("text") or error.get("message") or error)
    return str(error)


@runs_app.command("cancel")
def runs_cancel(
    run_id: Annotated[str, typer.Argument(help="The run's id (a unique prefix will do).")],
    db: DbOption = None,
) -> None:
    """Stop a run: a live one within a second, a stopped one is marked cancelled."""
    err = plain_console(stderr=True)
    state = read_journal(db, err, lambda journal: journal.request_cancel(run_id), reading=False)
    plain_console().print(f"{run_id}: {state}")


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
    tools: ToolsOption = None,
    mcp: McpOption = None,
    llm_backend: LlmBackendOption = None,
    base_url: BaseUrlOption = None,
    model: ModelOption = None,
    files: FilesOption = None,
    accept_recorded_settings: AcceptOption = False,
    ignore_recorded_settings: IgnoreOption = False,
    trust_journal: TrustOption = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object and nothing else.")
    ] = False,
    otel: OtelOption = None,
) -> None:
    """Continue a run that stopped: recorded LLM responses are replayed, finished tasks are not
    run again, and a side-effecting task that was in flight is re-run only if you say so.
    Where the run may reach (endpoint, MCP servers, tool sets, folder) is what this command is
    given, as `run` takes it: a journal that records others is refused unless you accept them."""
    err = plain_console(stderr=True)
    start_tracing(otel)
    journal = open_journal(db, err)
    decisions: dict[int, ResumeDecision] = {i: "rerun" for i in rerun or ()}
    decisions.update({i: "fail" for i in fail or ()})

    def decide(task: dict[str, Any]) -> ResumeDecision | None:
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

    reach = _Reach(
        tools,
        mcp,
        llm_backend,
        base_url,
        model,
        files,
        accept_recorded_settings,
        ignore_recorded_settings,
    )
    settings = _recorded_settings(journal, run_id, err, reach, trust=trust_journal)

    def build() -> tuple[Runtime, float]:
        quiet = as_json or not err.is_terminal
        return build_runtime(settings, journal=journal, console=err, quiet=quiet)

    def start(runtime: Runtime, subs: list[Callable[[Event], None]]) -> Awaitable[RunResult]:
        return runtime.aresume(run_id, decisions=decide, subscribers=subs, check=False)

    try:
        execute_and_report(build, start, as_json=as_json, console=err, mcp=settings)
    except DecisionNeeded as exc:
        if as_json:
            print_json({"id": run_id, "status": "paused", "error": exc.report()})
        else:
            err.print(labelled("paused:", "yellow", exc))
            err.print("resume with --rerun ID or --fail ID for each of these tasks")
        raise typer.Exit(3) from None
    except PlanweaveError as exc:
        err.print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None


@dataclasses.dataclass(frozen=True, slots=True)
class _Reach:
    """What `runs resume`/`runs approve` were told about where the run may reach."""

    tools: list[str] | None
    mcp: list[str] | None
    llm_backend: str | None
    base_url: str | None
    model: str | None
    files: Path | None
    accept: bool
    ignore: bool

    def given(self) -> dict[str, Any]:
        """The settings given by option (or, for the endpoint, the environment)."""
        given: dict[str, Any] = {
            "tools": tuple(self.tools) if self.tools else None,
            "mcp": tuple(self.mcp) if self.mcp else None,
            "llm_backend": self.llm_backend,
            "base_url": self.base_url or os.environ.get("PLANWEAVE_BASE_URL") or None,
            "model": self.model,
            "files": None if self.files is None else str(self.files.resolve()),
        }
        return {name: value for name, value in given.items() if value is not None}


def _recorded_settings(
    journal: Journal, run_id: str, err: Console, reach: _Reach, *, trust: bool
) -> RunSettings:
    """The settings a recorded run was started with: its behaviour from the journal's settings,
    where it reaches (`REACH`) from this command, as `run` would take it.  A recorded place
    this command does not give is refused, showing the difference, unless `reach.accept` (use
    the recorded) or `reach.ignore` (use this command's, defaults included); a
    setting that cannot be rebuilt is the error, and exit status 2.  `trust`: seal the run's
    records first (`Journal.seal`), whatever their seals say."""
    try:
        if trust:
            journal.seal(run_id)
        shown = journal.show(run_id)
        if shown["status"] == "finished":  # said before any difference in its settings
            raise ResumeError(f"run {shown['id']} already finished; nothing to resume")
        recorded = RunSettings.from_dict(shown["settings"])
        given = reach.given()
        own = dataclasses.replace(
            recorded,
            tools=("builtin",),
            mcp=(),
            llm_backend="auto",
            base_url=None,
            files=None,
            model=None,
        )
        own = dataclasses.replace(own, **given)
        differences = reach_differences(recorded, own)
        if reach.accept and reach.ignore:
            raise ResumeError(
                "--accept-recorded-settings and --ignore-recorded-settings contradict each other"
            )
        unasked = [line for name, line in differences.items() if name not in given]
        if unasked and not (reach.accept or reach.ignore):
            raise ResumeError(
                f"run {run_id} was recorded reaching other places than this command gives, and "
                "a journal is untrusted, so they are not used unless you say so: "
                + "; ".join(unasked)
                + ". Give them again (--tools, --mcp, --llm-backend, --base-url, --files, "
                "--model), accept the recorded ones (--accept-recorded-settings), or reach only "
                "what this command gives (--ignore-recorded-settings)"
            )
        used = differences.keys() if reach.ignore else differences.keys() & given.keys()
        for name in sorted(used):
            err.print(
                f"note: {differences[name]} (this command's is used)", markup=False, highlight=False
            )
        if reach.accept:
            settings = dataclasses.replace(recorded, **given)
        else:
            settings = dataclasses.replace(
                own, model=reach.model or (None if "model" in differences else recorded.model)
            )
        return settings
    except PlanweaveError as exc:
        err.print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None


@runs_app.command("approve")
def runs_approve(
    run_id: Annotated[str, typer.Argument(help="The run's id (a unique prefix will do).")],
    db: DbOption = None,
    drop: Annotated[
        list[int] | None, typer.Option(help="Leave this waiting task out; repeatable.")
    ] = None,
    edit: Annotated[
        list[str] | None,
        typer.Option(
            help='New arguments for a waiting task: ID=\'{"name": value}\' (JSON; "$1" is task '
            "1's result); repeatable."
        ),
    ] = None,
    tools: ToolsOption = None,
    mcp: McpOption = None,
    llm_backend: LlmBackendOption = None,
    base_url: BaseUrlOption = None,
    model: ModelOption = None,
    files: FilesOption = None,
    accept_recorded_settings: AcceptOption = False,
    ignore_recorded_settings: IgnoreOption = False,
    trust_journal: TrustOption = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object and nothing else.")
    ] = False,
    otel: OtelOption = None,
) -> None:
    """Run a run that waits for approval: its waiting tasks as planned, or edited, or some
    left out."""
    err = plain_console(stderr=True)
    start_tracing(otel)
    edits = _edits(edit or [], err)
    journal = open_journal(db, err)
    reach = _Reach(
        tools,
        mcp,
        llm_backend,
        base_url,
        model,
        files,
        accept_recorded_settings,
        ignore_recorded_settings,
    )
    settings = _recorded_settings(journal, run_id, err, reach, trust=trust_journal)

    def build() -> tuple[Runtime, float]:
        quiet = as_json or not err.is_terminal
        return build_runtime(settings, journal=journal, console=err, quiet=quiet)

    def start(runtime: Runtime, subs: list[Callable[[Event], None]]) -> Awaitable[RunResult]:
        return runtime.aapprove(run_id, edits=edits, drop=drop or (), subscribers=subs, check=False)

    try:
        execute_and_report(build, start, as_json=as_json, console=err, mcp=settings)
    except PlanweaveError as exc:
        err.print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None


@runs_app.command("reject")
def runs_reject(
    run_id: Annotated[str, typer.Argument(help="The run's id (a unique prefix will do).")],
    db: DbOption = None,
    reason: Annotated[str, typer.Option(help="Why, kept in the run's error.")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print the run's error as JSON.")] = False,
) -> None:
    """End a run that waits for approval without running its waiting tasks."""
    err = plain_console(stderr=True)

    def reject(journal: Journal) -> dict[str, Any]:
        return journal.reject(run_id, reason or "no reason given")

    error = read_journal(db, err, reject, reading=False)
    if as_json:
        print_json({"id": run_id, "status": "failed", "error": error})
        return
    plain_console().print(f"rejected: {error.get('message', error)}")


def _edits(given: list[str], err: Console) -> dict[int, dict[str, Any]]:
    """`ID={json}` options as edits by task id; a malformed one is the error and exit 2."""
    edits: dict[int, dict[str, Any]] = {}
    for item in given:
        task, _, args = item.partition("=")
        try:
            value = json.loads(args)
            if not task.strip().isdigit() or not isinstance(value, dict):
                raise ValueError("expected ID={...}")
        except ValueError as exc:
            err.print(labelled("error:", "red", f"--edit {item!r}: {exc}"))
            raise typer.Exit(2) from None
        edits[int(task)] = value
    return edits
