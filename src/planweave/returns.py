"""What a tool's declared return type says its results have: their fields by name, whether
one may be a list, and for a plain dict the words its description uses (the fields a runbook's
plan may read, `step_grammar`)."""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import re
import types
import typing
from typing import Any

from pydantic import BaseModel

if typing.TYPE_CHECKING:
    from .tools import Tool

__all__ = ["declared_fields", "described_fields", "has_fields", "may_be_list", "tool_fields"]

# A word of a description that may name a field: lower case, a letter first, not part of a
# longer word, a possessive or a dotted name ("disk_pct", "ready"; not "group's", "Stable").
_WORD_RE = re.compile(r"(?<![\w.'’\"-])[a-z][a-z0-9_]+(?![\w'’\"-])")
_PARENTHESIS_RE = re.compile(r"\([^()]*\)")
_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "or",
        "of",
        "the",
        "its",
        "it",
        "is",
        "are",
        "was",
        "has",
        "have",
        "been",
        "how",
        "many",
        "much",
        "when",
        "so",
        "far",
        "to",
        "in",
        "on",
        "for",
        "with",
        "by",
        "from",
        "as",
        "at",
        "be",
        "this",
        "that",
        "which",
        "what",
        "true",
        "false",
        "none",
        "not",
        "no",
        "per",
        "each",
    ]
)


def declared_fields(annotation: Any) -> tuple[str, ...] | None:
    """The fields a result of type `annotation` may have, by name; None when that is not
    known (a dict, Any, an unknown type, a union with any of those)."""
    if annotation is None or annotation is inspect.Parameter.empty or annotation is Any:
        return None
    if typing.get_origin(annotation) is typing.Annotated:
        return declared_fields(typing.get_args(annotation)[0])
    if _is_union(annotation):
        found: dict[str, None] = {}
        for option in typing.get_args(annotation):
            fields = declared_fields(option)
            if fields is None:
                return None
            found.update(dict.fromkeys(fields))
        return tuple(found)
    if annotation is type(None) or annotation in (int, float, bool, str, bytes):
        return ()
    origin = typing.get_origin(annotation) or annotation
    if typing.is_typeddict(annotation):
        # Its keys, without evaluating their types (a name imported only for type checking).
        return tuple(getattr(annotation, "__annotations__", {}))
    if isinstance(origin, type) and issubclass(origin, BaseModel):
        return tuple(origin.model_fields)
    if dataclasses.is_dataclass(origin):
        return tuple(f.name for f in dataclasses.fields(origin))
    if isinstance(origin, type) and issubclass(origin, list | tuple | set | frozenset):
        named = getattr(origin, "_fields", None)  # a named tuple's fields are its own
        return tuple(named) if isinstance(named, tuple) else ()
    return None


def may_be_list(annotation: Any) -> bool:
    """Whether a result of a tool's return annotation may be a list (of an unknown type: yes)."""
    if annotation is None or annotation is inspect.Parameter.empty or annotation is Any:
        return True
    options = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    return any(_may_be_list(a) for a in options)


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _may_be_list(annotation: Any) -> bool:
    if annotation is Any or isinstance(annotation, typing.TypeVar | str):
        return True
    origin = typing.get_origin(annotation) or annotation
    if not isinstance(origin, type):
        return True  # Annotated, NewType, aliases: not worth guessing
    return issubclass(origin, list | tuple | collections.abc.Sequence) and not issubclass(
        origin, str | bytes
    )


def described_fields(annotation: Any, description: str) -> tuple[str, ...] | None:
    """For a result declared a plain dict (`dict[str, Any]`, a Mapping), the words of its tool's
    `description` (its docstring's Returns section where it has one) that may name its fields,
    in order, outside parentheses and after a colon where there is one ("disk usage of a host:
    disk_pct (percent used) and largest_dir" names disk_pct and largest_dir); None for any other
    type, or when the description has no such word."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    origin = typing.get_origin(annotation) or annotation
    if not (isinstance(origin, type) and issubclass(origin, collections.abc.Mapping)):
        return None
    if typing.is_typeddict(annotation):
        return None
    # A parenthesis explains the field before it: its words are no field ("ready (replicas
    # ready)": the 1.5B model read `$1.replicas`).
    named = _PARENTHESIS_RE.sub(" ", description)
    # What follows the first colon lists them ("stats of a queue: messages, owner"): the words
    # before it say what the tool does (the 1.5B model read `${1.target}` of "Health of one
    # target in a target group: state, reason").
    listed = named.split(":", 1)[1] if ":" in named else ""
    for text in (listed, named):
        words = [w for w in _WORD_RE.findall(text) if w not in _FUNCTION_WORDS]
        if words:
            return tuple(dict.fromkeys(words))
    return None


def tool_fields(tool: Tool | None) -> tuple[str, ...] | None:
    """The fields `tool`'s results have: its declared type's, or for a plain dict those its
    docstring's Returns section (else its description) names; None when not known."""
    if tool is None:
        return None
    fields = declared_fields(tool.returns)
    if fields is None:
        fields = described_fields(tool.returns, tool.returns_doc or tool.description)
    return fields


def has_fields(annotation: Any) -> bool:
    """Whether a result of this declared type is read by its fields (a dict, a model)."""
    if declared_fields(annotation):
        return True
    origin = typing.get_origin(annotation) or annotation
    return isinstance(origin, type) and issubclass(origin, collections.abc.Mapping)
