"""The options every command that answers questions shares (`run`, `serve`), read into the one
typed record of a run's setup, `RunSettings`.

`@settings_options` adds them to a command: typer sees the command's own parameters followed
by these, and the command receives `settings` instead of them.  `--otel` comes with them but is
not a run's setting: traces are the process's own business, and a resumed run behaves the same
with them or without.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any, get_args

import typer

from ..approval import APPROVE_MODES
from ..errors import PlanweaveError, UserError
from ..executors import EXECUTORS
from ..llm import registry as llm_backends
from ..llm.base import Deadlines, PromptStyle
from ..mcp_tools import MAX_TOOLS, OPEN_TIMEOUT
from ..plan import MAX_ARGUMENT_CHARS, MAX_FANOUT, MAX_FANOUT_TOTAL
from ..recovery import Budget
from ..settings import Mode, RunSettings
from ..similar import MAX_SIMILAR
from ..typed import MAX_SCHEMA_CHARS
from .view import labelled, plain_console

__all__ = ["OtelOption", "settings_options", "start_tracing"]

_DEADLINES = Deadlines()


# The options' defaults are the settings' own.
_DEFAULT = RunSettings()


def _settings(
    tools: Annotated[
        list[str] | None,
        typer.Option(
            "--tools",
            "-t",
            help="`builtin` (the default) or MODULE:ATTR naming a tool, a list or a registry; "
            "repeatable.",
        ),
    ] = None,
    mcp: Annotated[
        list[str] | None,
        typer.Option(
            "--mcp",
            help="An MCP server whose tools join the others: a command line (stdio, e.g. "
            '"mcp-server-time") or an http(s) URL (streamable HTTP); repeatable.',
        ),
    ] = None,
    mcp_timeout: Annotated[
        float,
        typer.Option(
            help="Seconds an MCP server has for each step of being reached: its handshake, "
            "its tool listing, and a run's own handshake (--max-wall when shorter).",
        ),
    ] = OPEN_TIMEOUT,
    mcp_max_tools: Annotated[
        int,
        typer.Option(
            help="At most this many MCP tools join a run (shown to the planner); the rest "
            "are left out with a warning.",
        ),
    ] = MAX_TOOLS,
    llm_backend: Annotated[
        str,
        typer.Option(
            help="The LLM backend: endpoint, embedded, or auto (the endpoint when there is a "
            "--base-url, else the embedded model).",
        ),
    ] = "auto",
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
    prompt_style: Annotated[
        str | None,
        typer.Option(
            help="`full` (worked examples, a thought before every answer) or `compact` (no "
            "examples, the answer first).  Default: compact for an endpoint, full for the "
            "embedded model."
        ),
    ] = None,
    max_replans: Annotated[
        int, typer.Option(help="How many times the joiner may ask for a new plan.")
    ] = _DEFAULT.max_replans,
    tool_timeout: Annotated[
        float,
        typer.Option(
            "--tool-timeout", "--timeout", help="Default timeout of one tool call, seconds."
        ),
    ] = _DEFAULT.tool_timeout,
    max_argument_chars: Annotated[
        int,
        typer.Option(help="Largest argument of one tool call once references are filled in."),
    ] = MAX_ARGUMENT_CHARS,
    max_fanout: Annotated[
        int, typer.Option(help="Most elements one fan-out ($N[*]) runs; a longer list fails it.")
    ] = MAX_FANOUT,
    max_fanout_total: Annotated[
        int,
        typer.Option(
            help="Most elements all the fan-outs of one run run together; a fan-out that would "
            "pass it fails."
        ),
    ] = MAX_FANOUT_TOTAL,
    max_concurrency: Annotated[
        int, typer.Option(help="Most tasks of one run running at once.")
    ] = _DEFAULT.max_concurrency,
    react_max_steps: Annotated[
        int, typer.Option(help="Most actions a ReAct run (--mode react) takes before it stops.")
    ] = _DEFAULT.react_max_steps,
    output_schema: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="A JSON Schema file: the answer is written as a value of it (printed as JSON; "
            "--json shows it as `output`).",
        ),
    ] = None,
    examples: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="A file of worked examples for the planner, in place of the tools' own: each a "
            "`Question: ...` line followed by a plan, blank lines between them.",
        ),
    ] = None,
    similar_examples: Annotated[
        int,
        typer.Option(
            help="How many worked plans of the tools' bank the planner is shown besides its "
            "own examples: those worded most like the question (0: none; at most "
            f"{MAX_SIMILAR}; the full prompt style only, compact shows no examples).",
        ),
    ] = _DEFAULT.similar_examples,
    stream_dispatch: Annotated[
        bool, typer.Option(help="Start tasks while the plan is still streaming.")
    ] = True,
    join_replan: Annotated[
        bool | None,
        typer.Option(
            "--join-replan/--no-join-replan",
            help="A joiner that replans writes the next plan in the same reply "
            "(default: on for endpoints, off for the embedded model).",
        ),
    ] = None,
    grounding: Annotated[
        bool | None,
        typer.Option(
            "--grounding/--no-grounding",
            help="Withdraw an answer that states numbers no result gives, ask again once "
            "(default: on for the embedded model, off for endpoints).",
        ),
    ] = None,
    plan_answers: Annotated[
        bool | None,
        typer.Option(
            "--plan-answers/--no-plan-answers",
            help="A plan whose answer is its results in set words may end with it "
            '(join("... ${3} ...")) and skip the joiner call (default: on for endpoints, '
            "off for the embedded model).",
        ),
    ] = None,
    cache: Annotated[
        bool,
        typer.Option(
            help="Reuse the plan of an earlier run for a question of the same shape, and keep "
            "this run's plan for later ones (the plan cache, in the journal's file)."
        ),
    ] = True,
    cache_adapt: Annotated[
        bool,
        typer.Option(
            help="Plan a question that only resembles a cached one with that one's plan as the "
            "worked example (one planner call with a shorter prompt)."
        ),
    ] = False,
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
    max_llm_calls: Annotated[
        int | None, typer.Option(help="Budget: end the run after this many LLM calls.")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option(help="Budget: end the run after this many tokens.")
    ] = None,
    max_wall: Annotated[
        float | None, typer.Option(help="Budget: end the run after this many seconds.")
    ] = None,
    decomposition_depth: Annotated[
        int,
        typer.Option(
            "--max-decomposition-depth",
            "--max-depth",
            help="Budget: how deep decomposition may nest.",
        ),
    ] = 2,
    llm_first_token_timeout: Annotated[
        float, typer.Option(help="Seconds an endpoint may take to send its first token.")
    ] = _DEADLINES.first_token or 0.0,
    llm_chunk_timeout: Annotated[
        float, typer.Option(help="Seconds an endpoint may go without sending more text.")
    ] = _DEADLINES.between_chunks or 0.0,
    llm_call_timeout: Annotated[
        float, typer.Option(help="Seconds one LLM call to an endpoint may take in all.")
    ] = _DEADLINES.call or 0.0,
    executor: Annotated[
        str,
        typer.Option(
            help="Where sync tools run: `thread` (this process), `process` (a pool of worker "
            "processes: a crash or hang fails one task) or `ray` (Ray tasks; planweave[ray])."
        ),
    ] = "thread",
    ray_address: Annotated[
        str | None,
        typer.Option(
            help="The Ray cluster for --executor ray (env RAY_ADDRESS); without one, a local "
            "Ray on loopback."
        ),
    ] = None,
    price: Annotated[
        str | None,
        typer.Option(
            envvar="PLANWEAVE_PRICE",
            help="The model's price, dollars per million prompt/completion tokens (0.15/0.60): "
            "each LLM call and each run then shows its cost.",
        ),
    ] = None,
    **command: Any,
) -> RunSettings:
    """The settings the options give, and `command`: the command's own options that are
    settings (`run --mode`, `--ask`, `--approve`); a bad value is the error on stderr and exit
    status 2."""
    if "mode" in command:
        choose("--mode", command["mode"], get_args(Mode))
    if command.get("approve") is not None:
        choose("--approve", command["approve"], APPROVE_MODES)
    choose("--recovery", recovery, ("default", "none"))
    choose("--prompt-style", prompt_style or "full", ("full", "compact"))
    choose("--executor", executor, EXECUTORS)
    choose("--llm-backend", llm_backend, llm_backends.backend_names())
    style: PromptStyle | None = None
    if prompt_style is not None:
        style = "compact" if prompt_style == "compact" else "full"
    return RunSettings(
        llm_backend=llm_backend,
        model=model,
        base_url=base_url or os.environ.get("PLANWEAVE_BASE_URL"),
        grammar=grammar,
        grammar_field=grammar_field,
        prompt_style=style,
        tools=tuple(tools or ["builtin"]),
        mcp=tuple(mcp or ()),
        mcp_timeout=mcp_timeout,
        mcp_max_tools=mcp_max_tools,
        files=None if files is None else str(files.resolve()),
        max_replans=max_replans,
        tool_timeout=tool_timeout,
        max_argument_chars=max_argument_chars,
        max_fanout=max_fanout,
        max_fanout_total=max_fanout_total,
        max_concurrency=max_concurrency,
        react_max_steps=react_max_steps,
        examples=None if examples is None else _read(examples),
        similar_examples=similar_examples,
        output_schema=None if output_schema is None else _read(output_schema, MAX_SCHEMA_CHARS),
        streaming=stream_dispatch,
        join_replan=join_replan,
        grounding=grounding,
        plan_answers=plan_answers,
        cache=cache,
        cache_adapt=cache_adapt,
        recovery="none" if recovery == "none" else "default",
        decompose=decompose,
        budget=Budget(
            llm_calls=max_llm_calls,
            tokens=max_tokens,
            wall_s=max_wall,
            decomposition_depth=decomposition_depth,
        ),
        llm_first_token_timeout=llm_first_token_timeout,
        llm_chunk_timeout=llm_chunk_timeout,
        llm_call_timeout=llm_call_timeout,
        executor=executor,  # one of EXECUTORS: checked above
        ray_address=ray_address,
        price=price,
        **command,
    )


def _read(path: Path, limit: int = 10_000_000) -> str:
    """The file's text, at most `limit` characters and one more (so a bound can see it is past)."""
    try:
        with path.open(encoding="utf-8") as file:
            return file.read(limit + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path}: {exc}") from None


OtelOption = Annotated[
    str | None,
    typer.Option(
        "--otel",
        help="Send OpenTelemetry traces of each run: `console` (stderr) or `otlp` (OTLP/HTTP to "
        "OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318).  Service name: "
        "OTEL_SERVICE_NAME or planweave.",
    ),
]


def start_tracing(otel: str | None) -> None:
    """Set this process's tracer provider as `--otel` says (nothing without it); a bad value or
    a missing extra is the error on stderr and exit status 2."""
    if otel is None:
        return
    choose("--otel", otel, ("console", "otlp"))
    try:
        from ..otel import configure

        configure("console" if otel == "console" else "otlp")
    except (ImportError, PlanweaveError) as exc:
        plain_console(stderr=True).print(labelled("error:", "red", exc))
        raise typer.Exit(2) from None


def _process(otel: OtelOption = None) -> None:
    """What the process sets up besides the run's settings."""
    start_tracing(otel)


def choose(option: str, value: str, allowed: tuple[str, ...]) -> None:
    """Exit with status 2 and a clear error unless `value` is one of `allowed`."""
    if value not in allowed:
        plain_console(stderr=True).print(
            labelled("error:", "red", f"{option} must be {' or '.join(allowed)}, not {value!r}")
        )
        raise typer.Exit(2)


_SHARED = {
    name: p
    for name, p in inspect.signature(_settings, eval_str=True).parameters.items()
    if p.kind is not p.VAR_KEYWORD
}
_FIELDS = frozenset(f.name for f in fields(RunSettings))
_PROCESS = inspect.signature(_process, eval_str=True).parameters


def settings_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give `command` the shared options; it takes `settings: RunSettings` in their place.
    Its own options named as a RunSettings field (`run`'s `mode`, `ask`, `approve`) go into
    the settings too, and not to it.  Values RunSettings refuses are the error on stderr and
    exit status 2."""
    own = [
        p
        for p in inspect.signature(command, eval_str=True).parameters.values()
        if p.name != "settings"
    ]
    clash = {p.name for p in own} & (_SHARED.keys() | _PROCESS.keys())
    if clash:
        raise TypeError(f"{command.__name__} repeats shared options: {sorted(clash)}")

    @functools.wraps(command)
    def wrapper(**values: Any) -> None:
        shared = {name: values.pop(name) for name in _SHARED}
        process = {name: values.pop(name) for name in _PROCESS}
        own_settings = {name: values.pop(name) for name in _FIELDS & values.keys()}
        try:
            settings = _settings(**shared, **own_settings)
        except PlanweaveError as exc:
            plain_console(stderr=True).print(labelled("error:", "red", exc))
            raise typer.Exit(2) from None
        _process(**process)
        command(**values, settings=settings)

    # typer reads the signature: the command's own parameters, then the shared ones.
    parameters = [*own, *_SHARED.values(), *_PROCESS.values()]
    wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {}
    return wrapper
