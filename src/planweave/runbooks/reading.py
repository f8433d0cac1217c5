"""Reading a runbook compile's reply as the model meant it, before it is validated, and what a
compile must cover.  A small model writes the runbook's own `<host>`, an example value where a
parameter goes, `${1.lag}` for the one number `replica_lag` gives; each is read as the plan
language means it (`{host}`, the parameter, `${1}`), and anything else is left for validation
to refuse.  `parse` reads a plan's text with sample values bound: a UserError whose cause is
the parser's error."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence

from ..errors import NoSuchField, UserError
from ..plan import Task
from .params import RUNBOOK_PARAM_RE, placeholders
from .steps import call_end, runbook_steps

__all__ = ["check_complete", "examples_as_params", "placeholders_spelled", "values_for_fields"]

Parse = Callable[[str], list[Task]]


def examples_as_params(text: str, names: Sequence[str], parse: Parse) -> str:
    """A compiled plan that never uses a parameter but passes one text as the argument
    of that name to its calls (`latest_backup(database="production_db")` for the runbook's
    `<database>`) with the parameter there instead, and in the plan's texts: the 1.5B
    model writes an example value where the parameter goes."""
    used = {ph.name for ph in placeholders(text)}
    unused = [p for p in names if p not in used]
    if not unused:
        return text
    try:
        tasks = parse(text)
    except UserError:
        return text
    for name in unused:
        values = {v for t in tasks for k, v in t.bound.items() if k == name}
        if len(values) != 1:
            continue
        (value,) = values
        if not isinstance(value, str) or len(value) < 2 or not value.strip():
            continue
        text = "".join(_call_part(line, value, name) for line in text.splitlines(True))
    return text


def values_for_fields(text: str, parse: Parse) -> str:
    """A compiled plan's `${N.lag}`, where task N's tool returns a number, a text or a
    bool (no fields) and the field repeats a word of the tool's name (`replica_lag`), read
    as the value itself, `${N}`: what the 1.5B model writes for the one value such a tool
    gives.  Any other field that is not there stays, for validation to refuse."""
    for _ in range(64):
        try:
            parse(text)
            return text
        except UserError as exc:
            cause = exc.__cause__
            if not isinstance(cause, NoSuchField) or cause.fields or cause.lineno is None:
                return text
            field = str(cause.ref.path[0])
            if len(cause.ref.path) != 1 or not _names_its_value(field, cause.tool):
                return text
            lines = text.splitlines(keepends=True)
            if not 0 < cause.lineno <= len(lines):
                return text
            n = cause.ref.task_id
            line = lines[cause.lineno - 1]
            line = line.replace(f"${{{n}.{field}}}", f"${{{n}}}")
            line = re.sub(rf"\${n}\.{re.escape(field)}(?![\w.\[])", f"${n}", line)
            if line == lines[cause.lineno - 1]:
                return text
            lines[cause.lineno - 1] = line
            text = "".join(lines)
    return text


# A whole argument that is a reference put in quotes: `"$3"`, `"$<3>"` (never `"${3}"`, the
# result's text, as the plan language spells it).
_QUOTED_REF_RE = re.compile(r'(?<=[(,=])(\s?)"\$(?:(\d{1,4})|<(\d{1,4})>)"(?=\s*[,)])')


def references_unquoted(text: str) -> str:
    """A compiled plan with each argument that is only a reference in quotes (`input="$3"`,
    `"$<3>"`) passed as that reference, `$3`: what the 1.5B model writes for the result of
    task 3 (`decide` read the text "$<3>" and always answered "timeout")."""

    def unquoted(m: re.Match[str]) -> str:
        return f"{m.group(1)}${m.group(2) or m.group(3)}"

    out = []
    for line in text.splitlines(keepends=True):
        end = call_end(line)
        out.append(_QUOTED_REF_RE.sub(unquoted, line[:end]) + line[end:])
    return "".join(out)


def placeholders_spelled(text: str, declared: Mapping[str, str | None]) -> str:
    """A compiled plan with each parameter the runbook writes `<host>` (or `<limit:int>`)
    written as the plan writes it, `{host}`: the 1.5B model copies the runbook's spelling into
    its messages (`"The <service> cache is healthy"`)."""

    def spelled(m: re.Match[str]) -> str:
        return "{" + m.group(1) + "}" if m.group(1) in declared else m.group()

    return RUNBOOK_PARAM_RE.sub(spelled, text)


def check_complete(runbook: str, plan: str, tasks: list[Task], params: list[str]) -> None:
    """UserError ("does not validate", so the planner is asked again) when the plan uses none
    of some parameter the runbook names, or has fewer tasks than the runbook has numbered
    steps: the 1.5B model wrote `latest_backup(database="production_db")` for `<database>` and
    stopped a five-step runbook after its three lookups."""
    used = {ph.name for ph in placeholders(plan)}
    unused = [p for p in params if p not in used]
    if unused:
        named = ", ".join("{" + p + "}" for p in unused)
        raise UserError(
            f"the plan does not validate: it never uses the runbook's parameter {named}: write "
            f"{named} where the runbook says {', '.join('<' + p + '>' for p in unused)}, never "
            "an example value"
        )
    steps = len(runbook_steps(runbook))
    calls = [t for t in tasks if not t.is_join]
    if len(calls) < steps:
        raise UserError(
            f"the plan does not validate: the runbook has {steps} numbered steps and the plan "
            f"{len(calls)} tasks: each step is a task (or a few); a step done only under a "
            "condition is a task ending with `if <condition>`"
        )


_VALUE_WORDS = {"value", "result", "output"}
_TEXT_RE = re.compile(r'"(?:\\.|[^"\\\n])*"')


def _call_part(line: str, value: str, name: str) -> str:
    """One plan line with `value` written `{name}` in its call, not its condition: as a whole
    argument (`"db-3"` after `(`, `,` or `=`, before `,` or `)`) and as a word inside the
    call's texts (never a keyword argument or a placeholder spelled the same)."""
    end = call_end(line)
    call, rest = line[:end], line[end:]
    whole = re.compile(rf"(?<=[(,=])(\s?){re.escape(json.dumps(value))}(?=\s*[,)])")
    call = whole.sub(lambda m: m.group(1) + "{" + name + "}", call)
    word = re.compile(rf"(?<![\w.{{-]){re.escape(value)}(?![\w}}-])")
    return _TEXT_RE.sub(lambda m: word.sub("{" + name + "}", m.group()), call) + rest


def _names_its_value(field: str, tool: str) -> bool:
    """Whether `field` names the one value `tool` gives: a word of the tool's name, or
    `value`/`result`/`output`."""
    words = set(field.lower().split("_"))
    return bool(words & (set(tool.lower().split("_")) | _VALUE_WORDS))
