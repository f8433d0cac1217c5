"""Tools: the `@tool` decorator, schemas from type hints and docstrings, and registries."""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, is_dataclass
from types import UnionType
from typing import (
    Any,
    Literal,
    TypeAlias,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from typing_extensions import is_typeddict

from .context import RunContext, is_context
from .errors import UserError

__all__ = [
    "ExecutorName",
    "Param",
    "Placement",
    "Tool",
    "ToolRegistry",
    "load_tools",
    "tool",
]

ExecutorName = str
"""Where a sync tool's calls run: a name in `executors.EXECUTORS` ("thread": threads of the
runtime's process, "process": a pool of worker processes on this machine, "ray": Ray tasks on a
cluster); `executors.SHARED` is the registry a new backend joins."""

JOIN = "join"
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECTION_RE = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_RETURNS_SECTION_RE = re.compile(r"^\s*Returns?\s*:\s*$")
_OTHER_SECTION_RE = re.compile(r"^\s*(Raises|Yields|Examples?|Notes?)\s*:\s*$")
MAX_RETURNS_DOC = 500  # characters of a docstring's Returns section kept (`Tool.returns_doc`)
_ARG_LINE_RE = re.compile(r"^\s*\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str], str]:
    """Split a Google-style docstring into its description, per-argument descriptions and
    its Returns section (one line, at most `MAX_RETURNS_DOC` characters)."""
    if not doc:
        return "", {}, ""
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    returns: list[str] = []
    section = "description"
    current: str | None = None
    for line in lines:
        if _SECTION_RE.match(line):
            section, current = "args", None
            continue
        if _RETURNS_SECTION_RE.match(line) or _OTHER_SECTION_RE.match(line):
            section = "returns" if _RETURNS_SECTION_RE.match(line) else "other"
            current = None
            continue
        if section == "description":
            description.append(line)
        elif section == "returns":
            returns.append(line)
        elif section == "args":
            match = _ARG_LINE_RE.match(line)
            indent = len(line) - len(line.lstrip())
            if match and (current is None or indent <= 4):
                current = match.group(1)
                params[current] = match.group(2).strip()
            elif current is not None and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
    text = " ".join(
        part.strip() for part in "\n".join(description).strip().split("\n\n")[0].split()
    )
    return text, params, " ".join(" ".join(returns).split())[:MAX_RETURNS_DOC]


def _has_own_config(annotation: Any) -> bool:
    """Whether pydantic reads `annotation`'s config from the type itself."""
    return (
        is_typeddict(annotation)
        or is_dataclass(annotation)
        or (isinstance(annotation, type) and issubclass(annotation, BaseModel))
    )


def _type_name(annotation: Any) -> str:
    """A short type name for the planner prompt: `dict[str, Any] | None` reads `dict | None`,
    a `Literal` lists its values."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return "any"
    if annotation is type(None):
        return "None"
    origin = get_origin(annotation)
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(annotation))
    if origin in (Union, UnionType):
        return " | ".join(_type_name(a) for a in get_args(annotation))
    if origin in (list, tuple, set, frozenset):
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        inner = _type_name(args[0]) if len(args) == 1 else ""
        return f"{origin.__name__}[{inner}]" if inner and inner != "any" else origin.__name__
    if origin is not None:
        return getattr(origin, "__name__", str(origin))
    if is_typeddict(annotation):
        # A nested object of a JSON Schema: the planner sees its fields.
        try:
            fields = get_type_hints(annotation)
        except Exception:  # a name imported only for type checking: the keys, types unknown
            fields = dict.fromkeys(getattr(annotation, "__annotations__", {}), Any)
        return "{" + ", ".join(f"{k}: {_type_name(v)}" for k, v in fields.items()) + "}"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a tool, as the planner sees it."""

    name: str
    annotation: Any
    default: Any
    description: str
    positional_only: bool
    keyword_only: bool = False

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


@dataclass(frozen=True, slots=True)
class Placement:
    """What one call of a tool needs from the executor it runs on: `cpus` and `gpus` (Ray's
    `num_cpus`/`num_gpus`; the process pool counts `cpus` against its workers and has no GPUs),
    `memory` in bytes (Ray's `memory`; in the process pool the worker's address-space limit for
    the call) and custom Ray `resources` (a node must offer them)."""

    cpus: float = 1.0
    gpus: float = 0.0
    memory: int | None = None
    resources: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("cpus", "gpus"):
            value = getattr(self, name)
            if not _is_number(value) or value < 0:
                raise UserError(f"{name} must be a number >= 0, not {value!r}")
        if self.memory is not None and (
            isinstance(self.memory, bool) or not isinstance(self.memory, int) or self.memory < 1
        ):
            raise UserError(f"memory must be a number of bytes >= 1, not {self.memory!r}")
        if not isinstance(self.resources, Mapping) or not all(
            isinstance(k, str) and _is_number(v) and v > 0 for k, v in self.resources.items()
        ):
            raise UserError(f"resources must map names to amounts > 0, not {self.resources!r}")


def _check_limits(timeout: float | None, max_concurrency: int | None) -> None:
    if max_concurrency is not None and max_concurrency < 1:
        raise UserError("max_concurrency must be at least 1")
    if timeout is not None and (
        not isinstance(timeout, int | float) or isinstance(timeout, bool) or not timeout > 0
    ):
        raise UserError(f"timeout must be a number of seconds > 0 (or inf), not {timeout!r}")


def _check_expressions(t: Tool) -> None:
    unknown = set(t.expressions) - {p.name for p in t.params}
    if unknown or isinstance(t.expressions, str):
        raise UserError(
            f"tool {t.name!r}: expressions must name its parameters, not {t.expressions!r}"
        )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(eq=False)
class Tool:
    """A function the planner may call.

    Build one with `@tool`.  `timeout` bounds every call (seconds; None uses the run's default),
    `max_concurrency` caps how many calls of this tool run at once, and `side_effects` says the
    tool changes the world, so it must never be re-run on a guess (retries and resume read it).
    `isolate` runs each call outside the runtime's process, in a worker that is killed when
    the call times out (the process pool, unless the run's executor isolates already): for
    CPU-bound tools, whose thread a timeout could not stop (a thread that never yields the GIL
    stops the whole process).  `executor` names where its calls run whatever the run's executor
    (None: the run's), `placement` what each call needs there.  A tool run outside the process
    must be a sync function at the top level of a module, so that the worker can import it; its
    arguments and result must pickle.
    `pure` says the same arguments always give the same result and change nothing: a plan may
    then not call it twice with the same arguments (a small model copying a line by mistake);
    the first call's result is there to use.
    `returns_doc` is the docstring's Returns section, shown to the planner with the tool: a
    plain dict's fields named there are those a compiled runbook reads (`returns`).
    `expressions` names the parameters that take an expression (the calculator's): a text
    result a plan fills into one is written as a quoted literal (`plan.resolve`).
    `context` names the parameter that takes the calling run's `RunContext` (`planweave.context`):
    never planned, shown or journaled, filled in at each call; such a tool runs in the
    runtime's process.
    """

    fn: Callable[..., Any]
    name: str
    description: str
    params: tuple[Param, ...]
    returns: Any = inspect.Parameter.empty
    returns_doc: str = ""
    timeout: float | None = None
    max_concurrency: int | None = None
    side_effects: bool = False
    is_async: bool = False
    isolate: bool = False
    executor: ExecutorName | None = None
    placement: Placement = field(default_factory=Placement)
    pure: bool = False
    context: str | None = None
    expressions: tuple[str, ...] = ()
    _model: type[BaseModel] = field(init=False, repr=False)
    _signature: inspect.Signature = field(init=False, repr=False)
    _adapters: dict[str, TypeAdapter[Any]] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name) or self.name == JOIN:
            raise UserError(f"tool name {self.name!r} is not a valid identifier or is reserved")
        if self.executor is not None:
            from .executors import EXECUTORS  # the registry is above the tools it runs

            if self.executor not in EXECUTORS:
                raise UserError(
                    f"tool {self.name!r}: executor must be one of {', '.join(EXECUTORS)}, "
                    f"not {self.executor!r}"
                )
        if self.isolate and self.executor == "thread":
            raise UserError(f"tool {self.name!r}: isolate=True cannot run on executor='thread'")
        _check_expressions(self)
        elsewhere = self.isolate or self.executor not in (None, "thread")
        if elsewhere and self.context is not None:
            raise UserError(
                f"tool {self.name!r} takes the run's context (its deps are this process's "
                "handles), so it runs in the runtime's process: not isolated, on no other executor"
            )
        if elsewhere and (self.is_async or "<" in self.fn.__qualname__):
            raise UserError(
                f"tool {self.name!r} cannot be isolated: only a sync function defined at the top "
                "level of a module can be imported again in a worker process"
            )
        # Fields get neutral names and the parameters' names as aliases, so that a parameter
        # may be called anything pydantic reserves (`model_config`, `json`, `_private`).
        fields: dict[str, Any] = {}
        for i, p in enumerate(self.params):
            annotation = Any if p.annotation is inspect.Parameter.empty else p.annotation
            default = ... if p.required else p.default
            fields[f"p{i}"] = (
                annotation,
                Field(default, alias=p.name, description=p.description or None),
            )
        try:
            self._model = create_model(
                f"{self.name}_arguments",
                __config__=ConfigDict(arbitrary_types_allowed=True, extra="forbid"),
                **fields,
            )
        except Exception as exc:
            raise UserError(
                f"tool {self.name!r}: its parameters cannot be described: {exc}"
            ) from exc
        self._signature = inspect.Signature(
            [
                inspect.Parameter(
                    p.name,
                    inspect.Parameter.POSITIONAL_ONLY
                    if p.positional_only
                    else inspect.Parameter.KEYWORD_ONLY
                    if p.keyword_only
                    else inspect.Parameter.POSITIONAL_OR_KEYWORD,
                    default=p.default,
                )
                for p in self.params
            ]
        )

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        max_concurrency: int | None = None,
        side_effects: bool = False,
        isolate: bool = False,
        executor: ExecutorName | None = None,
        placement: Placement | None = None,
        pure: bool = False,
        expressions: Sequence[str] = (),
    ) -> Tool:
        signature = inspect.signature(fn)
        try:
            hints = get_type_hints(fn)
        except Exception as exc:
            raise UserError(f"cannot read the type hints of {fn!r}: {exc}") from exc
        doc_text, doc_params, returns_doc = _parse_docstring(fn.__doc__)
        params: list[Param] = []
        context: str | None = None
        for p in signature.parameters.values():
            if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise UserError(f"tool {fn.__name__!r}: *args and **kwargs cannot be planned")
            if is_context(hints.get(p.name)):
                context = _context_param(fn.__name__, p, context)
                continue  # filled in at each call, never planned
            params.append(
                Param(
                    name=p.name,
                    annotation=hints.get(p.name, inspect.Parameter.empty),
                    default=p.default,
                    description=doc_params.get(p.name, ""),
                    positional_only=p.kind is inspect.Parameter.POSITIONAL_ONLY,
                    keyword_only=p.kind is inspect.Parameter.KEYWORD_ONLY,
                )
            )
        _check_limits(timeout, max_concurrency)
        return cls(
            fn=fn,
            name=name or fn.__name__,
            description=description if description is not None else doc_text,
            params=tuple(params),
            returns=hints.get("return", inspect.Parameter.empty),
            returns_doc=returns_doc,
            timeout=timeout,
            max_concurrency=max_concurrency,
            side_effects=side_effects,
            is_async=inspect.iscoroutinefunction(fn),
            isolate=isolate,
            executor=executor,
            placement=placement or Placement(),
            pure=pure and not side_effects,
            context=context,
            expressions=tuple(expressions),
        )

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        fn: Callable[..., Any],
        *,
        returns: Mapping[str, Any] | None = None,
        side_effects: bool = True,
        timeout: float | None = None,
        max_concurrency: int | None = None,
        pure: bool = False,
    ) -> Tool:
        """A tool from a name, a description and the JSON Schema of its arguments (an OpenAI
        function definition's `parameters`, an MCP tool's `inputSchema`); `fn` is called with
        the arguments as keywords under the schema's names.  See `planweave.tool_schema`."""
        from .tool_schema import tool_from_schema

        return tool_from_schema(
            name,
            description,
            parameters,
            fn,
            returns=returns,
            side_effects=side_effects,
            timeout=timeout,
            max_concurrency=max_concurrency,
            pure=pure,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def check_result(self, value: Any) -> str | None:
        """None if `value` fits the declared return type; else a description of that type."""
        if self.returns in (inspect.Parameter.empty, Any, None, type(None)) and value is None:
            return None
        if self.returns in (inspect.Parameter.empty, Any, object):
            return None
        adapter = self._adapters.get("return")
        if adapter is None:
            try:
                adapter = self._adapters["return"] = TypeAdapter(self.returns)
            except Exception:  # an annotation pydantic cannot check: trust the tool
                self._adapters["return"] = adapter = TypeAdapter(Any)
        try:
            adapter.validate_python(value, strict=True)
        except ValueError:
            return _type_name(self.returns)
        return None

    def signature_text(self) -> str:
        """`name(a: str, b: int = 3) -> float`, as shown to the planner."""
        parts = []
        for i, p in enumerate(self.params):
            if p.keyword_only and not (i and self.params[i - 1].keyword_only):
                parts.append("*")  # what follows is given by name
            text = f"{p.name}: {_type_name(p.annotation)}"
            if not p.required:
                text += f" = {p.default!r}"
            parts.append(text)
        ret = ""
        wide_union = (
            get_origin(self.returns) in (Union, UnionType) and len(get_args(self.returns)) > 2
        )
        if self.returns is not inspect.Parameter.empty and not wide_union:
            # A wide union ("dict or one of its values") tells a planner nothing; leave it out.
            ret = f" -> {_type_name(self.returns)}"
        return f"{self.name}({', '.join(parts)}){ret}"

    def render(self) -> str:
        """The tool's entry in the planner prompt."""
        lines = [f"{self.signature_text()}: {self.description}".rstrip(": ")]
        lines.extend(f"  - {p.name}: {p.description}" for p in self.params if p.description)
        if self.returns_doc:
            lines.append(f"  Returns: {self.returns_doc}")
        return "\n".join(lines)

    def json_schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema of this tool."""
        schema = self._model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": schema},
        }

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Map a call's positional and keyword arguments to parameter names.

        Raises TypeError with a readable message when they do not fit the signature.
        """
        bound = self._signature.bind(*args, **kwargs)
        return dict(bound.arguments)

    def check_value(self, name: str, value: Any) -> None:
        """Check one literal argument against its parameter's type; raises ValueError."""
        adapter = self._adapters.get(name)
        if adapter is None:
            annotation = next(p.annotation for p in self.params if p.name == name)
            if annotation is inspect.Parameter.empty:
                return
            # A typed dict, model or dataclass (a schema's nested object) brings its own config,
            # and pydantic refuses a second one.
            config = (
                None if _has_own_config(annotation) else ConfigDict(arbitrary_types_allowed=True)
            )
            adapter = TypeAdapter(annotation, config=config)
            self._adapters[name] = adapter
        try:
            adapter.validate_python(value)
        except ValidationError as exc:
            raise ValueError(_first_error(exc)) from None

    def validate(self, arguments: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Validate resolved arguments and split them into call positionals and keywords.

        Raises ValueError with the first validation problem.
        """
        try:
            model = self._model.model_validate(dict(arguments))
        except ValidationError as exc:
            raise ValueError(_first_error(exc)) from None
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        for i, p in enumerate(self.params):
            if p.name not in arguments and not p.required and not p.positional_only:
                continue
            value = getattr(model, f"p{i}")
            # Hand the caller's own object through when validation did not change it.
            original = arguments.get(p.name, value)
            if value is not original and type(value) is type(original) and value == original:
                value = original
            if p.positional_only:
                positional.append(value)
            else:
                keywords[p.name] = value
        return positional, keywords

    def invoke(
        self, arguments: Mapping[str, Any], context: RunContext[Any] | None = None
    ) -> Any | Awaitable[Any]:
        positional, keywords = self.validate(arguments)
        if self.context is not None:
            keywords[self.context] = context
        return self.fn(*positional, **keywords)


def _context_param(tool: str, p: inspect.Parameter, found: str | None) -> str:
    """The name of the parameter that takes the run's context, checked: one, by keyword."""
    if found is not None:
        raise UserError(f"tool {tool!r}: one parameter may take the RunContext, not two")
    if p.kind is inspect.Parameter.POSITIONAL_ONLY:
        raise UserError(f"tool {tool!r}: the RunContext parameter cannot be positional-only")
    return p.name


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(part) for part in err.get("loc", ()))
    return f"{loc}: {err['msg']}" if loc else str(err["msg"])


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    max_concurrency: int | None = None,
    side_effects: bool = False,
    isolate: bool = False,
    executor: ExecutorName | None = None,
    cpus: float | None = None,
    gpus: float | None = None,
    memory: int | None = None,
    resources: Mapping[str, float] | None = None,
    pure: bool = False,
    expressions: Sequence[str] = (),
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    max_concurrency: int | None = None,
    side_effects: bool = False,
    isolate: bool = False,
    executor: ExecutorName | None = None,
    cpus: float | None = None,
    gpus: float | None = None,
    memory: int | None = None,
    resources: Mapping[str, float] | None = None,
    pure: bool = False,
    expressions: Sequence[str] = (),
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a sync or async function into a planner-callable tool.

    The schema comes from the type hints, the description from the docstring's first paragraph
    and each parameter's description from its `Args:` section.  Use bare (`@tool`) or with options
    (`@tool(timeout=5, max_concurrency=2, side_effects=True, isolate=True, pure=True)`; see
    `Tool`).  `executor` ("thread", "process" or "ray") pins where its calls run; `cpus`, `gpus`,
    `memory` (bytes) and `resources` (custom Ray resources) are what each call needs there
    (`Placement`).
    """
    placement = Placement(
        cpus=1.0 if cpus is None else cpus,
        gpus=gpus or 0.0,
        memory=memory,
        resources=dict(resources or {}),
    )

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool.from_function(
            f,
            name=name,
            description=description,
            timeout=timeout,
            max_concurrency=max_concurrency,
            side_effects=side_effects,
            isolate=isolate,
            executor=executor,
            placement=placement,
            pure=pure,
            expressions=expressions,
        )

    if fn is not None:
        return wrap(fn)
    return wrap


_PLAN_CALL = re.compile(r"^\s*\d+\.\s*([A-Za-z_]\w*)\(", re.M)
_REACT_CALL = re.compile(r"^Action:\s*([A-Za-z_]\w*)\(", re.M)

ToolSource: TypeAlias = "Tool | Callable[..., Any] | Iterable[Any] | ToolRegistry"


class ToolRegistry(Mapping[str, Tool]):
    """An ordered set of tools by name.  Combine registries with `+` or by passing several.

    `examples` are worked examples for the prompts, each a `Question: ...` line followed by a
    plan (numbered task lines, for the planner) or a ReAct transcript (`Thought:`, `Action:`,
    `Observation:` lines ending in `Action: Finish(...)`, for ReAct mode); each prompt shows
    the examples of its form whose tools are all present.  `bank` holds more worked plans of
    the same form, of which the planner shows each question the ones worded most like it
    (`planweave.similar`), after the examples every prompt shows."""

    def __init__(
        self, *sources: ToolSource, examples: Iterable[str] = (), bank: Iterable[str] = ()
    ) -> None:
        self._tools: dict[str, Tool] = {}
        self.examples: list[str] = []
        self.bank: list[str] = []
        for source in sources:
            self.add(source)
        self.examples.extend(examples)
        plans = [] if isinstance(bank, str | bytes) else list(bank)
        if isinstance(bank, str | bytes) or not all(isinstance(e, str) for e in plans):
            raise UserError("bank must be a list of worked plans, each a text")
        self.bank.extend(plans)

    def add(self, source: ToolSource) -> None:
        if isinstance(source, ToolRegistry):
            for t in source.values():
                self._add_one(t)
            self.examples.extend(e for e in source.examples if e not in self.examples)
            banked = set(self.bank)
            self.bank.extend(e for e in dict.fromkeys(source.bank) if e not in banked)
        elif isinstance(source, Tool):
            self._add_one(source)
        elif callable(source):
            self._add_one(Tool.from_function(source))
        elif isinstance(source, Iterable) and not isinstance(source, str | bytes | Mapping):
            for item in source:
                self.add(cast(ToolSource, item))
        else:
            raise UserError(f"not a tool, a list of tools or a registry: {source!r}")

    def _add_one(self, t: Tool) -> None:
        existing = self._tools.get(t.name)
        if existing is not None and existing is not t and existing.fn is not t.fn:
            raise UserError(f"two different tools are named {t.name!r}")
        self._tools[t.name] = t

    def __add__(self, other: ToolSource) -> ToolRegistry:
        return ToolRegistry(self, other)

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({', '.join(self._tools)})"

    def usable_examples(self, form: Literal["plan", "react"] = "plan") -> list[str]:
        """The examples of `form` whose every tool is in this registry."""
        return self._usable(self.examples, _PLAN_CALL if form == "plan" else _REACT_CALL)

    def usable_bank(self) -> list[str]:
        """The bank's plans whose every tool is in this registry."""
        return self._usable(self.bank, _PLAN_CALL)

    def _usable(self, examples: list[str], call: re.Pattern[str]) -> list[str]:
        usable = []
        for example in examples:
            names = set(call.findall(example)) - {JOIN, "Finish"}
            if names and names <= self._tools.keys():
                usable.append(example.strip())
        return usable

    def render(self) -> str:
        """The tool section of the planner prompt, numbered like LLMCompiler's."""
        return "\n".join(f"{i}. {t.render()}" for i, t in enumerate(self._tools.values(), 1))


def load_tools(spec: str) -> ToolRegistry:
    """Resolve `package.module:attr` to a registry; attr may be a tool, a list or a registry."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UserError(f"--tools expects MODULE:ATTR, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise UserError(f"cannot import {module_name!r} for --tools {spec}: {exc}") from exc
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise UserError(f"module {module_name!r} has no attribute {attr!r}") from None
    return ToolRegistry(obj)
