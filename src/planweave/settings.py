"""How a run is set up: `RunSettings`, the typed record the journal keeps with every run, and
building a run's tools, LLM and recovery policy from it (what `planweave runs resume` needs to
continue a run the way it started).

`to_dict()`/`from_dict()` are its one serialized form.  It never holds an API key: endpoints
read theirs from the environment, and a credential written into a URL is masked before it is
stored (`redaction.redact_endpoints`).

A journal is untrusted, so what a recorded run *did* may be replayed but where it may *reach*
may not be read from it: the `REACH` settings (an endpoint, MCP servers, tool modules, a
folder; a Ray address is never even stored) come from the resuming process's own
configuration, and `reach_differences` says how the recorded ones differ from those.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypedDict, get_args

from .approval import APPROVE_MODES, ApproveMode
from .errors import UserError
from .executors import EXECUTORS, ExecutorName
from .invoker import DEFAULT_TIMEOUT
from .llm import registry as llm_backends
from .llm.base import LLM, Deadlines, PromptStyle, require_tool_calling
from .mcp_tools import MAX_TOOLS, OPEN_TIMEOUT
from .plan import MAX_ARGUMENT_CHARS, MAX_FANOUT, MAX_FANOUT_TOTAL
from .records import Price
from .recovery import Budget, Decompose, Escalate, EscalationHandler, Pattern, Recovery
from .redaction import redact_endpoints, redact_url
from .similar import MAX_SIMILAR, SIMILAR
from .tools import ToolRegistry, load_tools

__all__ = [
    "REACH",
    "LoadProgress",
    "Mode",
    "RecoveryName",
    "RunOptions",
    "RunSettings",
    "SettingsKeywords",
    "load_tool_sets",
    "make_llm",
    "reach_differences",
    "recovery_policy",
]

Mode = Literal["compiled", "react", "native"]
# "custom": a Recovery object built in Python, which settings cannot rebuild.
RecoveryName = Literal["default", "none", "custom"]
# The embedded model reports assembling and loading as (stage, done, total).
LoadProgress = Callable[[str, int, int], None]

_DEADLINES = Deadlines()

# The settings that name a place or code a run reaches: where its LLM is (and so where the API
# key is sent), commands started as MCP servers, modules imported for tools, the folder
# search_files reads.  `model` reaches a place only as the embedded model's GGUF file (see
# `reach_differences`); `ray_address` is never stored.  The rest say how a run behaves.
REACH = ("llm_backend", "base_url", "mcp", "tools", "files")

# Where a failed tool call goes after the policy's own patterns (its retries).
_FAILED_CALL = ("tool.permanent", "tool.crash", "tool.wrong_type", "tool.transient", "tool.timeout")


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Everything needed to rebuild a run's runtime: its mode and limits, where its LLM is,
    which tool sets it loaded, and how it recovers.

    `tools` are tool set specs: `builtin` or MODULE:ATTR (empty, the default: tools given in
    Python, which settings cannot name; `planweave run` gives `builtin`); `mcp` are MCP
    servers whose tools join them, each a command line (stdio) or an http(s) URL (streamable
    HTTP); `files` is the folder the built-in
    `search_files` reads; `base_url` is an OpenAI-compatible endpoint (none: the embedded
    model, or env PLANWEAVE_BASE_URL); `llm_backend` names the LLM backend (`llm.registry`:
    "endpoint", "embedded", or "auto", the default: the endpoint when there is a base_url);
    `recovery` is `default` or `none` (`custom`: a policy built in Python); `decompose` and
    `ask` add the Decompose and Escalate patterns for failed tool calls; `llm_first_token_timeout`,
    `llm_chunk_timeout` and `llm_call_timeout` are an endpoint's deadlines in seconds (null: no
    limit; see `Deadlines`); `prompt_style` is "full" or "compact" (null: the backend's own,
    compact for an endpoint, full for the embedded model; a runtime records the one it used);
    `join_replan` lets a joiner that replans write the next plan in the same reply (null: on
    for endpoints, off for the embedded model; a journal from before the option reads false);
    `grounding` withdraws an answer stating numbers no result gives and asks the joiner again
    (null: on for the embedded model, off for endpoints; a journal from before reads false);
    `plan_answers` lets a plan whose answer is its results in set words end with it and skip
    the joiner (null: on; a journal from before reads false);
    `cache` uses and feeds the plan cache (in the journal's file; nothing without a journal);
    `cache_adapt` plans a question that only resembles a cached one with that one as example;
    `approve` makes tasks wait for a person's yes: "plan" (the whole first plan) or
    "side_effects" (tasks of tools with side effects), null for none;
    `executor` is where sync tools run, "thread", "process" or "ray" (a journal from before the
    option reads "thread"), `ray_address` the Ray cluster (null: env RAY_ADDRESS, else local);
    the address is never stored: a journal is untrusted, and a Ray cluster is sent the tools'
    arguments and answers with pickles, so a resumed run joins the cluster its process names.
    `max_fanout` bounds the elements of one fan-out (`$N[*]`), `max_fanout_total` those of
    every fan-out of a run together; `max_argument_chars` one argument once its references are
    filled in (a ToolArgumentError past it).
    `similar_examples` is how many worked plans of the tools' bank the planner shows a
    question, those worded most like it (`planweave.similar`; 0: none, at most 8; a journal from
    before the option reads 0).
    `max_concurrency` is how many tasks of a run run at once; `react_max_steps` how many
    actions a ReAct run takes before it gives up; `examples` the planner's worked examples
    (null: the tools' own, `ToolRegistry.examples`).
    `output_schema` is a JSON Schema, as JSON text, the answer is written as a value of (a
    typed answer, `typed`; null: the answer in words); `thread` the conversation the run is a
    turn of (`threads`; null: none); `user` who the run answers, as its tools' `RunContext`
    sees it (null: nobody named; at most 200 characters, no control characters); `price` the
    model's price in dollars per million prompt/completion tokens, `0.15/0.60` (`Price`;
    null: calls are not priced).
    `mcp_timeout` is the seconds an MCP server has for each step of being reached (its
    handshake, its tool listing, a run's own handshake; the wall budget when shorter), and
    `mcp_max_tools` how many MCP tools a run takes at most (the rest are left out).
    Invalid values raise UserError naming the field.
    """

    mode: Mode = "compiled"
    llm_backend: str = llm_backends.AUTO
    model: str | None = None
    base_url: str | None = None
    grammar: bool = True
    grammar_field: str | None = None
    prompt_style: PromptStyle | None = None
    tools: tuple[str, ...] = ()
    mcp: tuple[str, ...] = ()
    mcp_timeout: float = OPEN_TIMEOUT
    mcp_max_tools: int = MAX_TOOLS
    files: str | None = None
    max_replans: int = 2
    max_repairs: int = 2
    tool_timeout: float = DEFAULT_TIMEOUT
    max_argument_chars: int = MAX_ARGUMENT_CHARS
    max_fanout: int = MAX_FANOUT
    max_fanout_total: int = MAX_FANOUT_TOTAL
    max_concurrency: int = 64
    react_max_steps: int = 10
    examples: str | None = None
    similar_examples: int = SIMILAR
    streaming: bool = True
    join_replan: bool | None = None
    grounding: bool | None = None
    plan_answers: bool | None = None
    cache: bool = True
    cache_adapt: bool = False
    recovery: RecoveryName = "default"
    decompose: bool = False
    ask: bool = False
    budget: Budget = field(default_factory=Budget)
    llm_first_token_timeout: float | None = _DEADLINES.first_token
    llm_chunk_timeout: float | None = _DEADLINES.between_chunks
    llm_call_timeout: float | None = _DEADLINES.call
    approve: ApproveMode | None = None
    executor: ExecutorName = "thread"
    ray_address: str | None = None
    output_schema: str | None = None
    thread: str | None = None
    user: str | None = None
    price: str | None = None

    def __post_init__(self) -> None:
        _choice("mode", self.mode, get_args(Mode))
        _choice("llm_backend", self.llm_backend, llm_backends.backend_names())
        _choice("executor", self.executor, EXECUTORS)
        _choice("recovery", self.recovery, get_args(RecoveryName))
        if self.approve is not None:
            _choice("approve", self.approve, APPROVE_MODES)
        if self.prompt_style is not None:
            _choice("prompt_style", self.prompt_style, get_args(PromptStyle))
        names = ("model", "base_url", "grammar_field", "files", "ray_address", "examples")
        for name in (*names, "output_schema", "thread", "user", "price"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise _invalid(name, "a string or null", value)
        for name in ("join_replan", "grounding", "plan_answers"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), bool):
                raise _invalid(name, "true, false or null", getattr(self, name))
        for name in ("grammar", "streaming", "cache", "cache_adapt", "decompose", "ask"):
            if not isinstance(getattr(self, name), bool):
                raise _invalid(name, "true or false", getattr(self, name))
        if not isinstance(self.tools, tuple) or not all(isinstance(s, str) for s in self.tools):
            raise _invalid("tools", "a tuple of tool set specs (strings)", self.tools)
        if not isinstance(self.mcp, tuple) or not all(isinstance(s, str) for s in self.mcp):
            raise _invalid("mcp", "a tuple of MCP server specs (strings)", self.mcp)
        for name in ("max_replans", "max_repairs"):
            _count(name, getattr(self, name), at_least=0)
        _count("max_argument_chars", self.max_argument_chars, at_least=1)
        _count("max_fanout", self.max_fanout, at_least=0)
        _count("max_fanout_total", self.max_fanout_total, at_least=0)
        _count("max_concurrency", self.max_concurrency, at_least=1)
        _count("react_max_steps", self.react_max_steps, at_least=1)
        _count("similar_examples", self.similar_examples, at_least=0)
        if self.similar_examples > MAX_SIMILAR:
            raise _invalid("similar_examples", f"at most {MAX_SIMILAR}", self.similar_examples)
        if not _is_number(self.mcp_timeout) or not self.mcp_timeout > 0:
            raise _invalid("mcp_timeout", "a number of seconds > 0", self.mcp_timeout)
        _count("mcp_max_tools", self.mcp_max_tools, at_least=1)
        if not _is_number(self.tool_timeout) or not self.tool_timeout > 0:
            raise _invalid("tool_timeout", "a number of seconds > 0", self.tool_timeout)
        for name in ("llm_first_token_timeout", "llm_chunk_timeout", "llm_call_timeout"):
            value = getattr(self, name)
            if value is not None and (not _is_number(value) or not value > 0):
                raise _invalid(name, "a number of seconds > 0 or null", value)
        if not isinstance(self.budget, Budget):
            raise _invalid("budget", "a Budget", self.budget)
        for name in ("llm_calls", "tokens"):
            if getattr(self.budget, name) is not None:
                _count(f"budget.{name}", getattr(self.budget, name), at_least=0)
        wall = self.budget.wall_s
        if wall is not None and (not _is_number(wall) or not wall >= 0):
            raise _invalid("budget.wall_s", "a number of seconds >= 0 or null", wall)
        _count("budget.decomposition_depth", self.budget.decomposition_depth, at_least=0)
        self._check_texts()

    def _check_texts(self) -> None:
        """The settings whose text is a language of its own: a thread id, a JSON Schema, a
        user's name, a price."""
        if self.price is not None:
            Price.parse(self.price)
        user = self.user
        if user is not None and (len(user) > 200 or not user.isprintable() or not user.strip()):
            raise _invalid("user", "a name of 1 to 200 printable characters or null", user)
        if self.thread is not None:
            from .threads import check_thread

            try:
                check_thread(self.thread)
            except UserError as exc:
                raise UserError(f"run settings: thread: {exc}") from exc
        if self.output_schema is not None:
            from .typed import OutputShape

            try:
                OutputShape.from_text(self.output_schema)
            except UserError as exc:
                raise UserError(f"run settings: output_schema: {exc}") from exc

    def priced(self) -> Price | None:
        """The model's price these settings give (`price`), None when not given."""
        return None if self.price is None else Price.parse(self.price)

    def deadlines(self) -> Deadlines:
        """The endpoint's deadlines these settings give."""
        return Deadlines(
            first_token=self.llm_first_token_timeout,
            between_chunks=self.llm_chunk_timeout,
            call=self.llm_call_timeout,
        )

    def mcp_open_timeout(self) -> float:
        """The deadline of each step of reaching an MCP server: `mcp_timeout`, or the run's
        wall budget when that is shorter (the budget bounds the whole run)."""
        wall = self.budget.wall_s
        return self.mcp_timeout if not wall else min(self.mcp_timeout, wall)

    def with_keywords(self, **keywords: Any) -> RunSettings:
        """These settings with `Runtime`'s keyword arguments of the same names (`mode=`,
        `budget=`, ...: `SettingsKeywords`) in their place; an unknown name is a UserError."""
        unknown = sorted(set(keywords) - set(SettingsKeywords.__annotations__))
        if unknown:
            raise UserError(f"Runtime() got unknown settings: {', '.join(unknown)}")
        return dataclasses.replace(self, **keywords) if keywords else self

    def resolved(
        self, llm: LLM, *, recovery: RecoveryName, cache: bool, cache_adapt: bool
    ) -> RunSettings:
        """What a runtime with `llm` runs these settings as, and so records: the model's name,
        the backend's own prompt style, `join_replan`, `grounding` and `plan_answers` decided
        (none left to the backend), the recovery it was given (`custom`: a policy object) and
        whether it has a plan cache (none without a journal).  Native mode on a backend
        without function calling is a UserError."""
        if self.mode == "native":
            require_tool_calling(llm)
        return dataclasses.replace(
            self,
            model=self.model or llm.model,
            prompt_style=self.prompt_style or llm.prompt_style,
            join_replan=not llm.embedded if self.join_replan is None else self.join_replan,
            grounding=llm.embedded if self.grounding is None else self.grounding,
            plan_answers=True if self.plan_answers is None else self.plan_answers,
            recovery=recovery,
            cache=cache,
            cache_adapt=cache and cache_adapt,
        )

    def for_run(
        self,
        *,
        mode: Mode,
        approve: ApproveMode | None,
        output_schema: str | None = None,
        thread: str | None = None,
        user: str | None = None,
        recorded: bool = False,
    ) -> RunSettings:
        """The settings of one run: these, in the mode and with the approval it asked for, its
        answer typed by `output_schema`, its turn in `thread` and its `user` where given (else
        these settings' own).  `recorded`: a resumed run's own, taken as they are (a run that
        had no thread or user gets none from the runtime that resumes it)."""
        if not recorded:
            output_schema = output_schema or self.output_schema
            thread, user = thread or self.thread, user or self.user
        schema = output_schema
        asked = (mode, approve, schema, thread, user)
        if asked == (self.mode, self.approve, self.output_schema, self.thread, self.user):
            return self
        return dataclasses.replace(
            self, mode=mode, approve=approve, output_schema=schema, thread=thread, user=user
        )

    def tool_sets(self) -> ToolRegistry:
        """The tools `tools` and `mcp` name, loaded (`load_tool_sets`)."""
        return load_tool_sets(
            self.tools,
            self.files,
            mcp=self.mcp,
            mcp_timeout=self.mcp_open_timeout(),
            mcp_max_tools=self.mcp_max_tools,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object the journal stores with the run (a credential in a URL masked)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["tools"] = list(self.tools)
        data["mcp"] = list(self.mcp)
        data["budget"] = {f.name: getattr(self.budget, f.name) for f in fields(self.budget)}
        del data["ray_address"]
        return redact_endpoints(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSettings:
        """Read `to_dict()`'s object, or the settings an older journal holds (the same keys,
        any of them missing).  Unknown keys are ignored; a value of the wrong type raises
        UserError naming the field."""
        if not isinstance(data, Mapping):
            raise UserError(f"run settings must be a JSON object, not {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known and k != "ray_address"}
        # Journals from before prompt styles ran with the full prompts, whatever the backend.
        values.setdefault("prompt_style", "full")
        # Runs recorded before the option existed joined and planned in separate calls.
        values.setdefault("join_replan", False)
        values.setdefault("grounding", False)  # nor checked answers
        values.setdefault("plan_answers", False)  # nor answered from the plan
        values.setdefault("similar_examples", 0)  # nor shown the bank's examples
        for name in ("tools", "mcp"):
            specs = values.get(name)
            if isinstance(specs, list):
                values[name] = tuple(specs)
            elif specs is None:
                values.pop(name, None)
        if "budget" in values:
            budget = values["budget"]
            if budget is None:
                del values["budget"]
            elif isinstance(budget, Mapping):
                limits = {f.name for f in fields(Budget)}
                values["budget"] = Budget(**{k: v for k, v in budget.items() if k in limits})
            else:
                raise _invalid("budget", "an object of limits", budget)
        return cls(**values)


class RunOptions(TypedDict, total=False):
    """What one run may ask beyond its runtime's settings (`Runtime.run(question, ...)`): its
    `mode`, its `approve`al, an `output_type` its answer is a value of (`typed`), the `thread`
    it is a turn of (`threads`), the `user` it answers (`RunContext.user`).  None: the
    settings' own."""

    mode: Mode | None
    approve: ApproveMode | None
    output_type: Any
    thread: str | None
    user: str | None


class SettingsKeywords(TypedDict, total=False):
    """The settings `Runtime(...)` also takes as keyword arguments (what its callers gave it
    before it took a RunSettings): each sets the RunSettings field of the same name."""

    mode: Mode
    max_replans: int
    max_repairs: int
    max_concurrency: int
    tool_timeout: float
    max_argument_chars: int
    max_fanout: int
    max_fanout_total: int
    streaming: bool
    react_max_steps: int
    examples: str | None
    similar_examples: int
    grammar: bool
    prompt_style: PromptStyle | None
    join_replan: bool | None
    grounding: bool | None
    plan_answers: bool | None
    budget: Budget
    approve: ApproveMode | None
    executor: ExecutorName
    ray_address: str | None


def reach_differences(recorded: RunSettings, own: RunSettings) -> dict[str, str]:
    """How the `REACH` settings of `recorded` (a journal's, untrusted) differ from `own` (what
    the resuming process was given: its options, its environment, the defaults), by setting,
    each a line that shows both (URLs compared and shown as stored, `redact_url`).  `model`
    counts when neither uses an endpoint and the recorded one is not a registry name: a file
    the embedded backend would open.  Empty: the recorded run reaches nothing this process
    was not told to."""
    lines = {}
    for name in REACH:
        was, now = getattr(recorded, name), getattr(own, name)
        if name == "base_url":
            was, now = _url(was), _url(now)
        elif name == "llm_backend":  # by the backend each would pick, not by its spelling
            was, now = _backend(recorded), _backend(own)
        elif name == "mcp":
            was, now = tuple(map(redact_url, was)), tuple(map(redact_url, now))
        if was != now:
            lines[name] = f"{name}: recorded {_shown(was)}, given {_shown(now)}"
    embedded = _backend(own) == _backend(recorded) == "embedded"
    if embedded and recorded.model != own.model:
        from .llm.models import MODELS

        if recorded.model is not None and recorded.model not in MODELS:
            lines["model"] = f"model: recorded {_shown(recorded.model)}, given {_shown(own.model)}"
    return lines


def _backend(settings: RunSettings) -> str:
    choice = llm_backends.LLMChoice(backend=settings.llm_backend, base_url=settings.base_url)
    return llm_backends.pick(choice)


def _url(url: str | None) -> str | None:
    return None if url is None else redact_url(url)


def _shown(value: object) -> str:
    if value is None or value == ():
        return "none"
    if isinstance(value, tuple):
        return ", ".join(repr(v) for v in value)
    return repr(value)


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise _invalid(name, " or ".join(repr(a) for a in allowed), value)


def _count(name: str, value: object, *, at_least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < at_least:
        raise _invalid(name, f"an integer >= {at_least}", value)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _invalid(name: str, wanted: str, value: object) -> UserError:
    return UserError(f"run settings: {name} must be {wanted}, not {value!r}")


# ---------------------------------------------------------------------- building from settings


def load_tool_sets(
    specs: tuple[str, ...] | list[str],
    files: str | Path | None,
    *,
    mcp: tuple[str, ...] | list[str] = (),
    mcp_timeout: float = OPEN_TIMEOUT,
    mcp_max_tools: int = MAX_TOOLS,
) -> ToolRegistry:
    """One registry of the named tool sets: `builtin` is planweave's own tools (`search_files`
    reads `files`), anything else is MODULE:ATTR naming a tool, a list or a registry; then the
    tools of the `mcp` servers (connected to list them; a name the others have already is
    prefixed with the server's name; each step of reaching one within `mcp_timeout` seconds,
    at most `mcp_max_tools` of their tools)."""
    if not specs and not mcp:
        raise UserError(
            "the run's tools were given in Python, so its settings cannot name them: "
            "give the tool sets (--tools)"
        )
    registry = ToolRegistry()
    for spec in specs:
        if spec == "builtin":
            from .builtin import builtin_tools

            registry.add(builtin_tools(None if files is None else Path(files)))
        else:
            registry.add(load_tools(spec))
    if mcp:
        from .mcp_tools import MCPTools

        registry.add(
            MCPTools.load(
                *mcp,
                reserved=registry.keys(),
                open_timeout=mcp_timeout,
                max_tools=mcp_max_tools,
            )
        )
    return registry


def make_llm(settings: RunSettings, *, progress: LoadProgress | None = None) -> LLM:
    """The LLM backend `settings.llm_backend` names (`llm.registry`; auto: the endpoint when
    one is configured, `base_url` or env PLANWEAVE_BASE_URL, else the embedded model), not yet
    loaded; `progress` hears how loading an embedded model goes."""
    return llm_backends.make(
        llm_backends.LLMChoice(
            backend=settings.llm_backend,
            model=settings.model,
            base_url=settings.base_url,
            grammar=settings.grammar,
            grammar_field=settings.grammar_field,
            deadlines=settings.deadlines(),
            progress=progress,
        )
    )


def recovery_policy(
    settings: RunSettings, *, escalate: EscalationHandler | None = None
) -> Recovery:
    """The policy `settings.recovery` names, with Decompose (`decompose`) and Escalate (`ask`,
    only when there is an `escalate` handler to ask through) tried last for a failed tool
    call, after the policy's own retries."""
    if settings.recovery == "custom":
        raise UserError(
            "the run's recovery policy was built in Python, so its settings cannot rebuild it: "
            "construct the Runtime with recovery="
        )
    recovery = Recovery.default() if settings.recovery == "default" else Recovery.none()
    last: list[Pattern] = []
    if settings.decompose:
        last.append(Decompose())
    if settings.ask and escalate is not None:
        last.append(Escalate())
    if last:
        for category in _FAILED_CALL:
            recovery.on(category, *recovery.patterns(category), *last)
    return recovery
