"""The plan model: tasks, references into earlier results, and resolving them at run time.

A plan is LLMCompiler's format, one task per line (the language itself, its incremental parser
and validation live in `parser`):

    Thought: I need both populations.
    1. country_facts("France")
    2. country_facts(name="Belgium")
    3. calculator("${1.population} / ${2.population}")
    4. join()
    <END_OF_PLAN>

`$N` / `${N}` used as a whole argument passes task N's result object unchanged; inside a string it
is interpolated as text.  Projections `$2.population` and `$2[0]` reach into structured results:
mapping keys, list/tuple/str indices and the public fields of dataclasses, pydantic models and
named tuples, nothing else.

`$N[*]` fans out: the task runs once per element of task N's list result (`$N.cities[*].name`
projects each element), all elements at once; its result is the list of their results in
order.  Starred references to different lists in one task go through them pairwise (`zip`).

`N. tool(...) if $2.disk_pct > 90` runs task N only when the condition holds (`branches`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from .errors import ProjectionError, ToolArgumentError
from .tools import JOIN

__all__ = [
    "END_OF_PLAN",
    "MAX_ARGUMENT_CHARS",
    "MAX_FANOUT",
    "MAX_FANOUT_TOTAL",
    "NO_ITEM",
    "Condition",
    "Ref",
    "Task",
    "Template",
    "fan_outs",
    "format_args",
    "project",
    "render_text",
    "resolve",
]

END_OF_PLAN = "<END_OF_PLAN>"
# One argument once its references are filled in: `"${1}${1}${1}..."` over a chain of tasks
# would otherwise grow the text exponentially with the plan's length.
MAX_ARGUMENT_CHARS = 1_000_000
# Elements one fan-out (`$N[*]`) may run by default: a list result is untrusted input too.
MAX_FANOUT = 64
# Elements every fan-out of one run may run together: 20 fan-outs of 64 would be 1,280 calls.
MAX_FANOUT_TOTAL = 256


def _path_text(path: tuple[str | int, ...]) -> str:
    return "".join(
        f".{p}" if isinstance(p, str) and p.isidentifier() else f"[{json.dumps(p)}]" for p in path
    )


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to task `task_id`'s result, optionally projected by `path`.  With `each`
    (a fan-out, `$N.path[*].each`), the list at `path` is mapped: the reference stands for
    one element at a time, projected by `each`."""

    task_id: int
    path: tuple[str | int, ...] = ()
    each: tuple[str | int, ...] | None = None

    @property
    def listed(self) -> Ref:
        """The list a fan-out reference maps over."""
        return Ref(self.task_id, self.path)

    def __str__(self) -> str:
        star = "" if self.each is None else f"[*]{_path_text(self.each)}"
        return f"${self.task_id}{_path_text(self.path)}{star}"


@dataclass(frozen=True, slots=True)
class Template:
    """A string argument with references inside, interpolated as text when the task runs."""

    parts: tuple[str | Ref, ...]

    def __str__(self) -> str:
        out = []
        for part in self.parts:
            if isinstance(part, Ref):
                out.append(f"${{{str(part)[1:]}}}")
            else:
                out.append(part)
        return "".join(out)


@dataclass(frozen=True, slots=True)
class Condition:
    """`if <expression>` after a task's call: the task runs only when it holds (`branches`).
    `expression` is what is evaluated, each reference in it a name that `refs` binds to the
    reference; `text` is how it reads in the plan (`$2.disk_pct > 90`)."""

    expression: str
    refs: tuple[tuple[str, Ref], ...]
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(slots=True)
class Task:
    """One tool call of a plan.  `deps` are the ids of the tasks whose results it needs."""

    id: int
    tool: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    deps: tuple[int, ...] = ()
    thought: str | None = None
    line: str = ""
    lineno: int | None = None
    bound: dict[str, Any] = field(default_factory=dict)  # arguments by parameter, set by validation
    condition: Condition | None = None  # `... if <condition>`: run only when it holds

    @property
    def is_join(self) -> bool:
        return self.tool == JOIN

    @property
    def answer(self) -> Any:
        """A join's answer (`join("... ${3} ...")`: a string, a Template or a Ref), or None."""
        return self.args[0] if self.is_join and self.args else None

    @property
    def fan_out(self) -> Ref | None:
        """The list this task maps over (`$N[*]` in an argument), or None."""
        return next(iter(fan_outs([*self.args, *self.kwargs.values()])), None)

    def call_text(self) -> str:
        """The call as the plan writes it, with its condition: a task's identity in the
        journal (a conditioned call is another step than the same call unconditioned)."""
        call = f"{self.tool}({format_args(self.args, self.kwargs)})"
        return call if self.condition is None else f"{call} if {self.condition}"

    def __str__(self) -> str:
        return f"{self.id}. {self.call_text()}"


def _format_value(value: Any) -> str:
    if isinstance(value, Ref):
        return str(value)
    if isinstance(value, Template):
        return json.dumps(str(value), ensure_ascii=False)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_format_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"{_format_value(k)}: {_format_value(v)}" for k, v in value.items())
            + "}"
        )
    return repr(value)


def format_args(args: Iterable[Any], kwargs: Mapping[str, Any]) -> str:
    parts = [_format_value(a) for a in args]
    parts.extend(f"{k}={_format_value(v)}" for k, v in kwargs.items())
    return ", ".join(parts)


def render_text(value: Any) -> str:
    """How a result reads when interpolated into a string or shown to the LLM."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Mapping | list | tuple):
        try:
            return json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return str(value)
        except RecursionError:
            # A hostile or broken result (a list in a list, 100,000 deep): say so, do not crash.
            return f"[a {type(value).__name__} nested too deeply to show]"
    return str(value)


def _public_fields(value: Any) -> tuple[str, ...]:
    """The names a projection may take from an object that is not a mapping: the public
    fields of a dataclass, a pydantic model or a named tuple, and nothing else."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names: Iterable[str] = (f.name for f in dataclasses.fields(value))
    elif isinstance(value, BaseModel):
        names = type(value).model_fields
    elif isinstance(value, tuple) and isinstance(getattr(type(value), "_fields", None), tuple):
        names = type(value)._fields  # type: ignore[attr-defined]
    else:
        return ()
    return tuple(n for n in names if isinstance(n, str) and not n.startswith("_"))


def _step(cur: Any, key: str | int) -> Any:
    """One step of a projection.  Only data is reachable: a mapping's keys, a sequence's
    indices and public fields; never another attribute (`__class__` leads to module globals
    and from there to `os.environ`)."""
    if isinstance(cur, Mapping):
        return cur[key]
    if isinstance(key, int):
        if isinstance(cur, list | tuple | str):
            return cur[key]
        raise TypeError(key)
    if key not in _public_fields(cur):
        raise AttributeError(key)
    return getattr(cur, key)


def project(value: Any, ref: Ref) -> Any:
    """Follow `ref.path` into `value`; raises ProjectionError naming the failing step."""
    cur = value
    for i, key in enumerate(ref.path):
        try:
            cur = _step(cur, key)
        except (KeyError, IndexError, AttributeError, TypeError) as exc:
            done = Ref(ref.task_id, ref.path[:i])
            if isinstance(cur, Mapping):
                keys = ", ".join(map(str, list(cur)[:20]))
                hint = f"; it has keys: {keys}"
            elif isinstance(cur, list | tuple) and not _public_fields(cur):
                hint = f"; it has {len(cur)} items"
            elif fields := _public_fields(cur):
                hint = f"; it is a {type(cur).__name__} with fields: {', '.join(fields[:20])}"
            else:
                hint = f"; it is a {type(cur).__name__}"
            raise ProjectionError(
                f"cannot take {key!r} of {done}{hint}", cause=type(exc).__name__
            ) from None
    return cur


def _size(value: Any, limit: int) -> int:
    """About how many characters `value` takes as text (JSON-like); counting stops soon after
    `limit` is passed, so a huge or cyclic value costs no more than the limit."""
    total, stack = 0, [value]
    while stack and total <= limit:
        v = stack.pop()
        if isinstance(v, str | bytes | bytearray):
            total += len(v)
        elif isinstance(v, bool) or v is None or isinstance(v, float):
            total += 5
        elif isinstance(v, int):
            total += v.bit_length() // 3 + 1
        elif isinstance(v, Mapping):
            total += 2 + 2 * len(v)
            if total <= limit:
                stack.extend(v.keys())
                stack.extend(v.values())
        elif isinstance(v, list | tuple | set | frozenset):
            total += 2 + len(v)
            if total <= limit:
                stack.extend(v)
        elif isinstance(v, BaseModel):
            total += 2
            stack.extend(v.__dict__.values())
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            total += 2
            stack.extend(getattr(v, f.name, None) for f in dataclasses.fields(v))
        else:
            total += 1
    return total


def _too_large(limit: int) -> ToolArgumentError:
    return ToolArgumentError(
        f"an argument is more than {limit:,} characters once its references are filled in "
        f"(at most {limit:,})",
        cause="argument_too_large",
    )


def references(values: Iterable[Any]) -> list[Ref]:
    """Every reference in `values` (inside templates, lists and dicts too), each once, in
    order."""
    found: dict[Ref, None] = {}
    stack = list(values)[::-1]
    while stack:
        v = stack.pop()
        if isinstance(v, Ref):
            found.setdefault(v)
        elif isinstance(v, Template):
            stack.extend(reversed(v.parts))
        elif isinstance(v, list | tuple):
            stack.extend(reversed(v))
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
    return list(found)


def fan_outs(values: Iterable[Any]) -> list[Ref]:
    """The lists that fan-out references in `values` map over, each once, in order."""
    return list(dict.fromkeys(r.listed for r in references(values) if r.each is not None))


NO_ITEM: Any = object()  # `resolve` outside a fan-out


def resolve(
    value: Any,
    results: Mapping[int, Any],
    max_chars: int = MAX_ARGUMENT_CHARS,
    item: Any = NO_ITEM,
    *,
    expression: bool = False,
) -> Any:
    """Substitute references in an argument value with the results they name; a fan-out
    reference (`$N[*]`) takes its element of this call from `item`, by the list it names
    (`Ref.listed`).  In an `expression` (a calculator's), a text that is not a number is
    filled in as a quoted literal unless the plan quoted it ("${1}" == "${2}"): a small model
    writes `${1} == ${2}` for two regions as it does for two numbers.

    Raises ProjectionError when a projection does not resolve, and ToolArgumentError when the
    argument would be more than `max_chars` characters (checked while it is built).
    """
    if expression and isinstance(value, Template):
        value = Template(_quoted(value.parts, results, item, max_chars))
    resolved = _resolve(value, results, max_chars, item)
    if _size(resolved, max_chars) > max_chars:
        raise _too_large(max_chars)
    return resolved


def _value(ref: Ref, results: Mapping[int, Any], item: Any) -> Any:
    if ref.each is None:
        return project(results[ref.task_id], ref)
    if item is NO_ITEM:
        raise ProjectionError(f"{ref} names one element of a list outside a fan-out")
    return project(item[ref.listed], Ref(ref.task_id, ref.each))


def _quoted(
    parts: tuple[str | Ref, ...], results: Mapping[int, Any], item: Any, max_chars: int
) -> tuple[str | Ref, ...]:
    """`parts` with each reference to a text filled in as an expression reads it: inside a text
    the plan opened (`"${1}"`), escaped for that text's quote; outside one, a plain number or
    True, False or None as it is (stripped), any other text as a quoted text.  A value too
    large for the argument is refused before it is written out."""
    out: list[str | Ref] = []
    quote: str | None = None  # the quote of the text the plan has open here, if any
    total = 0  # characters written out so far (a value left as a reference counted too)
    for part in parts:
        if isinstance(part, str):
            quote = _open_quote(part, quote)
            out.append(part)
            total += len(part)
            continue
        value = _value(part, results, item)
        # Escaped or quoted, a text may take twice its length.
        total += 2 * _size(value, max_chars - total) + 2
        if total > max_chars:
            raise _too_large(max_chars)
        if quote is not None:
            out.append(_escaped(render_text(value), quote))
        elif not isinstance(value, str):
            out.append(part)
        elif _NUMBER.fullmatch(value.strip()) or value.strip() in _AS_IS:
            out.append(value.strip())
        else:
            out.append(json.dumps(value, ensure_ascii=False))
    return tuple(out)


_NUMBER = re.compile(r"[+-]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_AS_IS = frozenset({"True", "False", "None"})


def _open_quote(text: str, quote: str | None) -> str | None:
    """The quote still open after `text` (a backslash escapes the next character in a text),
    given `quote` open before it."""
    escaped = False
    for c in text:
        if escaped:
            escaped = False
        elif quote is not None and c == "\\":
            escaped = True
        elif quote is None and c in "'\"":
            quote = c
        elif c == quote:
            quote = None
    return quote


def _escaped(text: str, quote: str) -> str:
    """`text` written inside a text the plan opened with `quote`."""
    text = text.replace("\\", "\\\\").replace(quote, "\\" + quote)
    return text.replace("\n", "\\n").replace("\r", "\\r")


def _render(template: Template, results: Mapping[int, Any], max_chars: int, item: Any) -> str:
    out: list[str] = []
    total = 0
    for part in template.parts:
        if isinstance(part, Ref):
            value = _value(part, results, item)
            if not isinstance(value, str) and _size(value, max_chars - total) > max_chars - total:
                raise _too_large(max_chars)
            part = render_text(value)
        total += len(part)
        if total > max_chars:
            raise _too_large(max_chars)
        out.append(part)
    return "".join(out)


def _resolve(value: Any, results: Mapping[int, Any], max_chars: int, item: Any) -> Any:
    if isinstance(value, Ref):
        return _value(value, results, item)
    if isinstance(value, Template):
        return _render(value, results, max_chars, item)
    if isinstance(value, list):
        return [_resolve(v, results, max_chars, item) for v in value]
    if isinstance(value, tuple):
        return tuple(_resolve(v, results, max_chars, item) for v in value)
    if isinstance(value, dict):
        return {k: _resolve(v, results, max_chars, item) for k, v in value.items()}
    return value
