"""JSON Schema → Tool: a tool described by its name, a description and the JSON Schema of its
arguments, as MCP servers, OpenAI function definitions and BFCL's function documents describe
them.

    weather = Tool.from_schema(
        "get_weather",
        "The weather in a city.",
        {"type": "object",
         "properties": {"city": {"type": "string"},
                        "where": {"type": "object",
                                  "properties": {"lat": {"type": "number"}}}},
         "required": ["city"]},
        fn=fetch_weather,   # called with the schema's own argument names, as keywords
    )

A nested object with properties becomes a typed dict: its fields are validated and shown to
the planner (`where: {lat: float}`).  The loose type names some function documents use
(`dict`, `float`, `tuple`, `any`) read as their JSON Schema kin.

Schemas may come from servers nobody vetted, so reading one is bounded: each `$ref` is read
once (a reference met inside itself reads as Any), one tool's schemas take at most
`MAX_SCHEMA_NODES` steps (SchemaTooLarge past them), and an enum of more than `MAX_ENUM`
values is shown as its values' type.  Names become ASCII identifiers (`identifier`); the
function is called with the schema's own.
"""

from __future__ import annotations

import inspect
import keyword
import operator
import re
import unicodedata
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import reduce
from typing import Any, Literal, NotRequired, Required

from pydantic import ConfigDict
from typing_extensions import TypedDict

from .errors import UserError
from .tools import Param, Tool

__all__ = [
    "MAX_ENUM",
    "MAX_SCHEMA_NODES",
    "SchemaTooLarge",
    "identifier",
    "one_line",
    "schema_annotation",
    "schema_params",
    "schema_returns",
    "sentence",
    "tool_from_schema",
]

MAX_DESCRIPTION = 1_000
# Reading one tool's schemas visits at most this many nodes: a legible tool needs a few dozen,
# and a schema made to explode (an `anyOf` of references to itself) is refused quickly.
MAX_SCHEMA_NODES = 2_000
# An enum longer than this is shown to the planner as its values' type, not listed.
MAX_ENUM = 64
_MAX_DEPTH = 16
_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]+")
# JSON Schema's type names, and the loose ones function documents write for them.
_SIMPLE: dict[str, Any] = {
    "string": str,
    "str": str,
    "integer": int,
    "int": int,
    "number": float,
    "float": float,
    "boolean": bool,
    "bool": bool,
    "null": type(None),
}
_OBJECT = frozenset({"object", "dict"})
_ARRAY = frozenset({"array", "list", "tuple"})


class SchemaTooLarge(UserError):
    """A JSON Schema takes more than `MAX_SCHEMA_NODES` steps to read (a schema built to make
    reading it explode: wide `anyOf`s of references to themselves)."""


class _Reader:
    """Reads one tool's schemas: at most `budget` nodes visited in all, each `$ref` read once
    (a reference met again inside itself reads as Any, so recursion costs nothing)."""

    def __init__(self, defs: Any, budget: int) -> None:
        self.defs: Mapping[str, Any] = defs if isinstance(defs, Mapping) else {}
        self.left = budget
        self.budget = budget
        self.refs: dict[str, Any] = {}

    def annotation(self, schema: Any, depth: int = 0, name: str = "Object") -> Any:
        self.left -= 1
        if self.left < 0:
            raise SchemaTooLarge(f"its JSON Schema takes more than {self.budget:,} steps to read")
        if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
            return Any
        ref = schema.get("$ref")
        if isinstance(ref, str):
            if ref not in self.refs:
                self.refs[ref] = Any  # while it is being read: a reference to itself is Any
                name = ref.rpartition("/")[2]
                local = ref.startswith(("#/$defs/", "#/definitions/"))
                self.refs[ref] = self.annotation(self.defs.get(name) if local else None, depth + 1)
            return self.refs[ref]
        for key in ("enum", "const"):
            if key in schema:
                return _literal(schema[key] if key == "enum" else [schema[key]])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                return _union([self.annotation(s, depth + 1) for s in schema[key]])
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union([self.annotation({**schema, "type": k}, depth + 1) for k in kind])
        if kind in _ARRAY:
            item = self.annotation(schema.get("items"), depth + 1)
            return list if item is Any else list[item]  # type: ignore[valid-type]
        if kind in _OBJECT:
            return self.object(schema, depth, name)
        return _SIMPLE.get(kind, Any) if isinstance(kind, str) else Any

    def object(self, schema: Mapping[str, Any], depth: int, name: str) -> Any:
        """An object with named properties as a typed dict (its fields validated, unknown keys
        refused); any other object as a dict."""
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            return dict[str, Any]
        required = _names(schema.get("required"))
        fields: dict[str, Any] = {}
        for key, prop in properties.items():
            annotation = self.annotation(prop, depth + 1, f"{name}_{identifier(str(key))}")
            fields[str(key)] = Required[annotation] if key in required else NotRequired[annotation]
        title = schema.get("title")
        make: Any = TypedDict  # built at run time from the schema, which mypy cannot follow
        typed: Any = make(identifier(title) if isinstance(title, str) and title else name, fields)
        typed.__pydantic_config__ = ConfigDict(extra="forbid")
        return typed


def schema_annotation(
    schema: Any,
    defs: Mapping[str, Any] | None = None,
    depth: int = 0,
    name: str = "Object",
    *,
    max_nodes: int = MAX_SCHEMA_NODES,
) -> Any:
    """The Python type a JSON Schema describes, as far as planning needs it (the tool
    validates the rest); Any where it cannot say.  `name` names a nested object's type.  An
    `enum` of more than `MAX_ENUM` values reads as its values' type (the tool still checks
    them); a schema that takes more than `max_nodes` steps to read raises SchemaTooLarge."""
    return _Reader(defs, max_nodes).annotation(schema, depth, name)


def _literal(values: Any) -> Any:
    """An enum as a Literal; past `MAX_ENUM` values, or of values a Literal cannot hold, the
    one type they all have (Any if none)."""
    if not isinstance(values, list) or not values:
        return Any
    if len(values) <= MAX_ENUM and all(
        isinstance(v, str | int | bool) or v is None for v in values
    ):
        return Literal[tuple(values)]
    kinds = {type(v) for v in values}
    only = kinds.pop() if len(kinds) == 1 else None
    return only if only in (str, int, float, bool) else Any


def _names(value: Any) -> set[str]:
    return {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()


def _union(options: list[Any]) -> Any:
    if not options or any(o is Any for o in options):
        return Any
    return reduce(operator.or_, options)


def identifier(name: str) -> str:
    """`name` made an ASCII Python identifier (a plan calls tools and names arguments by them):
    accents dropped (`évaluer` → `evaluer`), other characters `_`, a leading digit given a
    `_` before it, a keyword one after it."""
    ascii_text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    text = _NOT_IDENTIFIER.sub("_", ascii_text).strip("_") or "_"
    if text[0].isdigit():
        text = "_" + text
    if keyword.iskeyword(text):
        text += "_"
    return text


def one_line(text: str | None, limit: int = MAX_DESCRIPTION) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def sentence(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text + "." if text and text[-1].isalnum() else text


def schema_params(
    schema: Mapping[str, Any], *, max_nodes: int = MAX_SCHEMA_NODES
) -> tuple[tuple[Param, ...], dict[str, str]]:
    """The parameters of an arguments schema, required first; and our names for the
    schema's (where a name had to be made an identifier).  Reading all of it may take
    `max_nodes` steps; past them, SchemaTooLarge."""
    reader = _Reader(schema.get("$defs") or schema.get("definitions"), max_nodes)
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        properties = {}
    required = _names(schema.get("required"))
    params: list[Param] = []
    names: dict[str, str] = {}
    for original, prop in properties.items():
        name = identifier(str(original))
        while name in names:
            name += "_"
        names[name] = str(original)
        prop = prop if isinstance(prop, Mapping) else {}
        annotation = reader.annotation(prop, name=name)
        if original in required:
            default: Any = inspect.Parameter.empty
        elif "default" in prop:
            default = prop["default"]
        else:
            default = None
            if annotation is not Any:
                annotation = annotation | None
        description = prop.get("description")
        params.append(
            Param(
                name=name,
                annotation=annotation,
                default=default,
                description=one_line(description if isinstance(description, str) else "", 300),
                positional_only=False,
            )
        )
    params.sort(key=lambda p: not p.required)
    return tuple(params), {k: v for k, v in names.items() if k != v}


def schema_returns(
    schema: Mapping[str, Any] | None, *, max_nodes: int = MAX_SCHEMA_NODES
) -> tuple[Any, bool, str]:
    """The declared return type, whether results are `{"result": x}` to unwrap, and a line
    for the description naming the fields (so the planner can write `$1.field`)."""
    if not isinstance(schema, Mapping):
        return inspect.Parameter.empty, False, ""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return inspect.Parameter.empty, False, ""
    if set(properties) == {"result"}:
        # The MCP SDK's server wraps a plain return value so: the planner sees the value.
        reader = _Reader(schema.get("$defs") or schema.get("definitions"), max_nodes)
        inner = reader.annotation(properties["result"])
        return (inspect.Parameter.empty if inner is Any else inner), True, ""
    return dict[str, Any], False, f"Returns {{{', '.join(map(str, properties))}}}."


@dataclass(frozen=True)
class SchemaCall:
    """The function behind a schema-built tool: `fn` called with the schema's own argument
    names (our identifiers renamed back)."""

    fn: Callable[..., Any]
    names: Mapping[str, str] = field(default_factory=dict)

    # `self` positional-only: a schema may name an argument `self`.
    def __call__(self, /, **arguments: Any) -> Any | Awaitable[Any]:
        return self.fn(**{self.names.get(k, k): v for k, v in arguments.items()})


def tool_from_schema(
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
    """A tool from its name, description and arguments' JSON Schema (`parameters`, an object
    schema); `fn` is called with the arguments as keywords, under the schema's names, and may
    be async.  `returns` is the result's JSON Schema, if known.  Like an MCP tool, it may
    change the world unless told otherwise (`side_effects=False`)."""
    if not isinstance(parameters, Mapping):
        raise UserError(f"tool {name!r}: parameters must be a JSON Schema object")
    kind = parameters.get("type", "object")
    if kind not in _OBJECT:
        raise UserError(f"tool {name!r}: parameters must be an object schema, not {kind!r}")
    if not callable(fn):
        raise UserError(f"tool {name!r}: fn must be callable")
    try:
        params, names = schema_params(parameters)
        result, _, fields = schema_returns(returns)
    except SchemaTooLarge as exc:
        raise SchemaTooLarge(f"tool {name!r}: {exc}") from None
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - a callable object's own __call__
    )
    if max_concurrency is not None and max_concurrency < 1:
        raise UserError("max_concurrency must be at least 1")
    return Tool(
        fn=_async_call(fn, names) if is_async else SchemaCall(fn, names),
        name=identifier(name),
        description=one_line(sentence(description) + (" " + fields if fields else "")),
        params=params,
        returns=result,
        timeout=timeout,
        max_concurrency=max_concurrency,
        side_effects=side_effects,
        is_async=is_async,
        pure=pure and not side_effects,
    )


def _async_call(fn: Callable[..., Any], names: Mapping[str, str]) -> Callable[..., Any]:
    call = SchemaCall(fn, names)

    async def run(**arguments: Any) -> Any:
        return await call(**arguments)

    return run
