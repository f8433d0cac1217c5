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
"""

from __future__ import annotations

import inspect
import keyword
import operator
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import reduce
from typing import Any, Literal, NotRequired, Required

from pydantic import ConfigDict
from typing_extensions import TypedDict

from .errors import UserError
from .tools import Param, Tool

__all__ = [
    "identifier",
    "one_line",
    "schema_annotation",
    "schema_params",
    "schema_returns",
    "sentence",
    "tool_from_schema",
]

MAX_DESCRIPTION = 1_000
_MAX_DEPTH = 16
_NOT_IDENTIFIER = re.compile(r"\W+")
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


def schema_annotation(
    schema: Any, defs: Mapping[str, Any] | None = None, depth: int = 0, name: str = "Object"
) -> Any:
    """The Python type a JSON Schema describes, as far as planning needs it (the tool
    validates the rest); Any where it cannot say.  `name` names a nested object's type."""
    defs = defs or {}
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return Any
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rpartition("/")[2]
        target = defs.get(name) if ref.startswith(("#/$defs/", "#/definitions/")) else None
        return schema_annotation(target, defs, depth + 1)
    for key in ("enum", "const"):
        if key in schema:
            values = schema[key] if key == "enum" else [schema[key]]
            if (
                isinstance(values, list)
                and values
                and all(isinstance(v, str | int | bool) or v is None for v in values)
            ):
                return Literal[tuple(values)]
            return Any
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return _union([schema_annotation(s, defs, depth + 1) for s in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([schema_annotation({**schema, "type": k}, defs, depth + 1) for k in kind])
    if kind in _ARRAY:
        item = schema_annotation(schema.get("items"), defs, depth + 1)
        return list if item is Any else list[item]  # type: ignore[valid-type]
    if kind in _OBJECT:
        return _object(schema, defs, depth, name)
    return _SIMPLE.get(kind, Any) if isinstance(kind, str) else Any


def _object(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int, name: str) -> Any:
    """An object with named properties as a typed dict (its fields validated, unknown keys
    refused); any other object as a dict."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return dict[str, Any]
    required = set(schema.get("required") or ())
    fields: dict[str, Any] = {}
    for key, prop in properties.items():
        annotation = schema_annotation(prop, defs, depth + 1, f"{name}_{identifier(str(key))}")
        fields[str(key)] = Required[annotation] if key in required else NotRequired[annotation]
    title = schema.get("title")
    make: Any = TypedDict  # built at run time from the schema, which mypy cannot follow
    typed: Any = make(identifier(title) if isinstance(title, str) and title else name, fields)
    typed.__pydantic_config__ = ConfigDict(extra="forbid")
    return typed


def _union(options: list[Any]) -> Any:
    if not options or any(o is Any for o in options):
        return Any
    return reduce(operator.or_, options)


def identifier(name: str) -> str:
    """`name` made a Python identifier (a plan calls tools and names arguments by them)."""
    text = _NOT_IDENTIFIER.sub("_", name).strip("_") or "_"
    if text[0].isdigit() or keyword.iskeyword(text):
        text += "_"
    return text


def one_line(text: str | None, limit: int = MAX_DESCRIPTION) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def sentence(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text + "." if text and text[-1].isalnum() else text


def schema_params(schema: Mapping[str, Any]) -> tuple[tuple[Param, ...], dict[str, str]]:
    """The parameters of an arguments schema, required first; and our names for the
    schema's (where a name had to be made an identifier)."""
    defs = schema.get("$defs") or schema.get("definitions") or {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    params: list[Param] = []
    names: dict[str, str] = {}
    for original, prop in properties.items():
        name = identifier(str(original))
        while name in names:
            name += "_"
        names[name] = str(original)
        prop = prop if isinstance(prop, Mapping) else {}
        annotation = schema_annotation(prop, defs, name=name)
        if original in required:
            default: Any = inspect.Parameter.empty
        elif "default" in prop:
            default = prop["default"]
        else:
            default = None
            if annotation is not Any:
                annotation = annotation | None
        params.append(
            Param(
                name=name,
                annotation=annotation,
                default=default,
                description=one_line(prop.get("description"), 300),
                positional_only=False,
            )
        )
    params.sort(key=lambda p: not p.required)
    return tuple(params), {k: v for k, v in names.items() if k != v}


def schema_returns(schema: Mapping[str, Any] | None) -> tuple[Any, bool, str]:
    """The declared return type, whether results are `{"result": x}` to unwrap, and a line
    for the description naming the fields (so the planner can write `$1.field`)."""
    if not isinstance(schema, Mapping):
        return inspect.Parameter.empty, False, ""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return inspect.Parameter.empty, False, ""
    if set(properties) == {"result"}:
        # The MCP SDK's server wraps a plain return value so: the planner sees the value.
        inner = schema_annotation(properties["result"], schema.get("$defs") or {})
        return (inspect.Parameter.empty if inner is Any else inner), True, ""
    return dict[str, Any], False, f"Returns {{{', '.join(map(str, properties))}}}."


@dataclass(frozen=True)
class SchemaCall:
    """The function behind a schema-built tool: `fn` called with the schema's own argument
    names (our identifiers renamed back)."""

    fn: Callable[..., Any]
    names: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, **arguments: Any) -> Any | Awaitable[Any]:
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
    params, names = schema_params(parameters)
    result, _, fields = schema_returns(returns)
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
