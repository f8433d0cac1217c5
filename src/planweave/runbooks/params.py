"""A named plan's parameters: `{host}` in its text, typed, bound to a run's values as data.

A parameter is written `{name}` in the plan: as a whole value (`disk_usage({host})`,
`... if $1.disk_pct > {limit}`) or inside a string (`notify("{host} is full")`).  Binding
writes each value as a literal in the place it stands (a JSON literal as a whole value; escaped
for its quotes inside a string), and the bound plan must have the structure of the plan with
placeholders (the same tasks, tools, dependencies and conditions' references), so no value can
add a call, a reference or a line.  A text value holding a result reference (`$1`, `${...}`)
is refused: inside a string it would read a result.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import UserError
from ..plan import Task
from ..tools import ToolRegistry

__all__ = [
    "RUNBOOK_PARAM_RE",
    "TYPES",
    "ParamType",
    "Placeholder",
    "bind",
    "coerce",
    "infer_types",
    "placeholders",
    "runbook_params",
    "sample_values",
    "structure",
]

ParamType = Literal["str", "int", "float", "bool"]
TYPES: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool}
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]{0,63})\}")
_REFERENCE_RE = re.compile(r"\$\s*(\d|\{)")
_NUMERIC_OP_RE = re.compile(r"(<=|>=|<|>)\s*$")
_NUMERIC_AFTER_RE = re.compile(r"^\s*(<=|>=|<|>)")
_TASK_LINE_RE = re.compile(r"^\s*(\d+)\s*[.:)]\s*([A-Za-z_][\w.]*)\s*\(")
_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


@dataclass(frozen=True, slots=True)
class Placeholder:
    """One `{name}` in a plan: where it starts and ends, the quote of the string it stands in
    (None: a whole value), and its line."""

    name: str
    start: int
    end: int
    quote: str | None
    line: str


def placeholders(text: str, names: Mapping[str, Any] | None = None) -> list[Placeholder]:
    """The `{name}`s of `text` (only those in `names`, when given): outside strings, and inside
    them where not part of a result reference (`${1}`)."""
    found: list[Placeholder] = []
    for line_start, line in _lines(text):
        for start, end, name, quote in _scan(line):
            if names is None or name in names:
                found.append(Placeholder(name, line_start + start, line_start + end, quote, line))
    return found


def _lines(text: str) -> Iterator[tuple[int, str]]:
    pos = 0
    for line in text.splitlines(keepends=True):
        yield pos, line
        pos += len(line)


def _scan(line: str) -> Iterator[tuple[int, int, str, str | None]]:
    """Each `{name}` of one plan line, with the quote it stands inside (or None)."""
    i, n, quote = 0, len(line), None
    while i < n:
        ch = line[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
        elif ch in "'\"":
            quote = line[i : i + 3] if line[i : i + 3] in ("'''", '"""') else ch
            i += len(quote)
            continue
        m = _PLACEHOLDER_RE.match(line, i) if ch == "{" else None
        if m is not None and not (i > 0 and line[i - 1] == "$"):
            yield i, m.end(), m.group(1), quote
            i = m.end()
            continue
        i += 1


def infer_types(
    text: str, names: list[str], tools: ToolRegistry, declared: Mapping[str, str] | None = None
) -> dict[str, ParamType]:
    """Each parameter's type: as `declared` (the runbook's `<limit:int>`), else from where the
    plan uses it: a whole argument of a tool takes the argument's type, an operand of `<`,
    `>`, `<=`, `>=` in a condition is a float, anything else is text."""
    declared = declared or {}
    types: dict[str, ParamType] = {}
    for name in names:
        if name in declared:
            types[name] = check_type(name, declared[name])
    for ph in placeholders(text, {n: None for n in names}):
        if ph.name in types or ph.quote is not None:
            continue
        found = _typed_by_use(ph, text, tools)
        if found is not None:
            types[ph.name] = found
    return {name: types.get(name, "str") for name in names}


def _typed_by_use(ph: Placeholder, text: str, tools: ToolRegistry) -> ParamType | None:
    line_start = text.rfind("\n", 0, ph.start) + 1
    before, after = text[line_start : ph.start], text[ph.end :].split("\n", 1)[0]
    if " if " in before:
        numeric = _NUMERIC_OP_RE.search(before) or _NUMERIC_AFTER_RE.match(after)
        return "float" if numeric else None
    task = _TASK_LINE_RE.match(before)
    if task is None or task.group(2) not in tools:
        return None
    keyword = re.search(r"([A-Za-z_]\w*)\s*=\s*$", before)
    params = tools[task.group(2)].params
    if keyword is not None:
        chosen = next((p for p in params if p.name == keyword.group(1)), None)
    else:
        position = before[task.end() :].count(",")  # a whole value's place among the arguments
        chosen = params[position] if position < len(params) else None
    annotation = None if chosen is None else chosen.annotation
    for label, kind in TYPES.items():
        if annotation is kind:
            return label  # type: ignore[return-value]
    return None


def check_type(name: str, label: Any) -> ParamType:
    if label not in TYPES:
        raise UserError(f"parameter {name}: type {label!r} is none of {', '.join(TYPES)}")
    return label  # type: ignore[no-any-return]


def check_name(name: Any) -> str:
    if not isinstance(name, str) or NAME_RE.fullmatch(name) is None:
        raise UserError(f"parameter name {name!r}: letters, digits and _ (not first), at most 64")
    return name


def coerce(name: str, label: ParamType, value: Any) -> Any:
    """`value` as a parameter of type `label`: the type itself, or text that reads as it (from
    a command line); a precise UserError otherwise."""
    kind = TYPES[label]
    if isinstance(value, str) and kind is not str:
        return coerce(name, label, _read(name, label, value))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if type(value) is not kind:
        raise UserError(f"parameter {name} is {label}: got {type(value).__name__} {_shown(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError(f"parameter {name} is {label}: got {value}, not a finite number")
    if isinstance(value, str) and _REFERENCE_RE.search(value):
        raise UserError(
            f"parameter {name}: a value may not hold a result reference ($N or ${{...}}): "
            f"it is data, never part of the plan; got {_shown(value)}"
        )
    return value


def _read(name: str, label: ParamType, text: str) -> Any:
    word = text.strip()
    try:
        if label == "int":
            return int(word)
        if label == "float":
            return float(word)
    except ValueError:
        pass
    if label == "bool" and word.lower() in _TRUE | _FALSE:
        return word.lower() in _TRUE
    raise UserError(f"parameter {name} is {label}: {_shown(text)} does not read as one")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def sample_values(types: Mapping[str, ParamType]) -> dict[str, Any]:
    """A value of each type, to check a plan with placeholders before any run; no two alike
    (two calls of a pure tool with two parameters are not one call twice)."""
    samples: dict[str, Any] = {}
    for i, (name, label) in enumerate(types.items()):
        samples[name] = {
            "str": f"sample-{name}",
            "int": 100_003 + i,
            "float": 100_003.5 + i,
            "bool": True,
        }[label]
    return samples


def bind(text: str, values: Mapping[str, Any]) -> str:
    """The plan with each parameter's value written in its place, as data."""
    out: list[str] = []
    pos = 0
    for ph in placeholders(text, values):
        out.append(text[pos : ph.start])
        out.append(_literal(values[ph.name], ph.quote))
        pos = ph.end
    out.append(text[pos:])
    return "".join(out)


def _literal(value: Any, quote: str | None) -> str:
    """`value` as a literal (`quote` None) or inside a string quoted with `quote`: JSON's
    escapes, and `<` escaped too, so no value holds a plan's end mark."""
    if quote is None:
        return repr(value) if isinstance(value, bool) else _escaped(json.dumps(value))
    inner = _escaped(json.dumps(value if isinstance(value, str) else _as_text(value))[1:-1])
    return inner.replace("'", "\\'") if "'" in quote else inner


def _escaped(text: str) -> str:
    return text.replace("<", "\\u003c")


def _as_text(value: Any) -> str:
    return "true" if value is True else "false" if value is False else str(value)


def structure(tasks: list[Task]) -> list[tuple[Any, ...]]:
    """What a value must not change: each task's id, tool, dependencies and whether it has a
    condition, and its fan-out."""
    return [
        (t.id, t.tool, tuple(sorted(t.deps)), t.condition is not None, repr(t.fan_out))
        for t in tasks
    ]


RUNBOOK_PARAM_RE = re.compile(r"<([A-Za-z_][A-Za-z0-9_]{0,63})(?:\s*:\s*(str|int|float|bool))?>")


def runbook_params(text: str) -> dict[str, str | None]:
    """The parameters a runbook names, `<host>` or `<limit:int>` (a declared type), in order."""
    found: dict[str, str | None] = {}
    for m in RUNBOOK_PARAM_RE.finditer(text):
        if found.get(m.group(1)) is None:
            found[m.group(1)] = m.group(2)
    return found
