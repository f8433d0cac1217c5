"""Named plans: a runbook compiled ahead of time into a plan with typed parameters, stored in the
journal with a version, reviewed, edited as text, and run without a planner call.

`NamedPlans.request` is the one planner request that compiles a runbook (its `<host>`s become
parameters `{host}`, its conditions in words branches); `NamedPlans.compiled` reads the reply.
Every version, compiled or written by hand (`save`), is validated the same way before it is
stored (`table`), and `start` binds a run's values into it as data (`params`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import PlanError, UserError
from ..events import NamedPlanStarted
from ..grammar import plan_grammar
from ..llm.base import LLMRequest, Message
from ..parser import PlanParser
from ..plan import END_OF_PLAN, Task
from ..prompts import runbook_messages
from ..store.base import Storage
from ..tools import ToolRegistry
from .params import (
    ParamType,
    bind,
    check_name,
    check_type,
    coerce,
    infer_types,
    placeholders,
    runbook_params,
    sample_values,
    structure,
)
from .reading import (
    check_complete,
    examples_as_params,
    placeholders_spelled,
    references_unquoted,
    values_for_fields,
)
from .table import NamedPlanTable

__all__ = ["NamedPlan", "NamedPlans", "plan_text", "repaired", "runbook_params"]

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_HEADING_RE = re.compile(r"^\s*#+\s*(.+?)\s*#*\s*$", re.MULTILINE)
MAX_RUNBOOK_CHARS = 20_000
MAX_PLAN_CHARS = 20_000
# A compile's reply, at most (the planner's own bound): a small model can write conditions on
# and on (one compile decoded for minutes).
COMPILE_MAX_TOKENS = 1024


@dataclass(frozen=True, slots=True)
class NamedPlan:
    """One version of a named plan: its text with `{param}` placeholders, each parameter's type
    (str, int, float or bool), the runbook it was compiled from (`source`; empty for a plan
    written by hand) and when it was stored."""

    name: str
    version: int
    plan: str
    params: dict[str, ParamType]
    source: str
    created: float
    tasks: list[Task] = field(default_factory=list, repr=False, compare=False)

    @property
    def title(self) -> str:
        """The runbook's first heading, else the plan's name."""
        heading = _HEADING_RE.search(self.source)
        return heading.group(1)[:200] if heading else self.name

    def question(self, values: Mapping[str, Any]) -> str:
        """What a run of it is recorded as asking (the joiner reads it too)."""
        given = ", ".join(f"{k}={json.dumps(v)}" for k, v in values.items())
        plan = f"plan {self.name} v{self.version}{'; ' + given if given else ''}"
        return f"{self.title} ({plan}): what was found, and what was done?"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "plan": self.plan,
            "params": dict(self.params),
            "source": self.source,
            "created": self.created,
        }


class NamedPlans:
    """The named plans in a journal, checked against `tools` (as runs parse plans: with
    `plan_answers` when the runtime's plans may end with their answer)."""

    def __init__(self, storage: Storage, tools: ToolRegistry, *, plan_answers: bool) -> None:
        self.table = NamedPlanTable(storage)
        self.tools = tools
        self.plan_answers = plan_answers

    # ------------------------------------------------------------------ compiling, saving

    def request(self, runbook: str, *, grammar: bool) -> LLMRequest:
        """The planner request that compiles `runbook`; with `grammar`, the branch grammar
        with the runbook's parameters (for backends that take grammars)."""
        names = self.check_runbook(runbook)
        rules = (
            plan_grammar(self.tools, plan_answers=self.plan_answers, branches=True, params=names)
            if grammar
            else None
        )
        messages = runbook_messages(self.tools, runbook, names, plan_answers=self.plan_answers)
        return LLMRequest(
            messages,
            stop=[END_OF_PLAN],
            grammar=rules,
            purpose="planner",
            max_tokens=COMPILE_MAX_TOKENS,
        )

    def check_runbook(self, runbook: str) -> list[str]:
        """The runbook's parameters; a UserError when it is empty, too long or names a
        parameter no plan can."""
        if not runbook.strip():
            raise UserError("the runbook is empty")
        if len(runbook) > MAX_RUNBOOK_CHARS:
            raise UserError(f"the runbook is over {MAX_RUNBOOK_CHARS:,} characters")
        return [check_name(n) for n in runbook_params(runbook)]

    def compiled(self, name: str, runbook: str, reply: str, *, strict: bool = False) -> NamedPlan:
        """Store the planner's `reply` to `request(runbook)` as the next version of `name`.
        `strict` (while the planner may still be asked again): a plan that leaves out one of
        the runbook's parameters, or has fewer tasks than the runbook numbered steps, does not
        validate either (a runbook may mention a parameter it needs no step for, or a step no
        tool does: the last attempt is stored for review as it is)."""
        text, types = self.read(runbook, reply)
        tasks = self.validated(text, types)
        if strict:
            check_complete(runbook, text, tasks, list(types))
        return self.save(name, text, params=types, source=runbook)

    def read(self, runbook: str, reply: str) -> tuple[str, dict[str, ParamType]]:
        """The plan in a compile's `reply` as the model meant it (its `<host>`, example values,
        references in quotes and fields of plain values read as `{host}`, `$3` and whole
        results), with its parameters' types; not validated."""
        declared = runbook_params(runbook)
        names = list(declared)
        given = {k: v for k, v in declared.items() if v is not None}
        text = references_unquoted(placeholders_spelled(plan_text(reply), declared))
        text = values_for_fields(text, lambda t: self._sampled(t, names, given))
        text = examples_as_params(text, names, lambda t: self._sampled(t, names, given))
        return text, infer_types(text, names, self.tools, given)

    def _sampled(self, text: str, names: list[str], given: Mapping[str, str]) -> list[Task]:
        """`text`'s tasks with sample values bound (a UserError that names what is wrong,
        its cause the parser's error)."""
        types = infer_types(text, names, self.tools, given)
        return self._parse(bind(text, sample_values(types)), "the plan")

    def save(
        self,
        name: str,
        plan: str,
        *,
        params: Mapping[str, str] | None = None,
        source: str | None = None,
    ) -> NamedPlan:
        """Store `plan` (the text form, `{param}` where a parameter goes) as the next version
        of `name`, validated as a compiled one is.  `params` (name -> str, int, float or bool)
        default to the latest version's (with its runbook), else to the plan's placeholders
        with types from where they stand."""
        check_plan_name(name)
        if len(plan) > MAX_PLAN_CHARS:
            raise UserError(f"the plan is over {MAX_PLAN_CHARS:,} characters")
        earlier = self.table.get(name)
        if params is None:
            params = self._default_params(name, plan, earlier)
        types = {check_name(k): check_type(k, v) for k, v in params.items()}
        if source is None:
            source = str(earlier["source"]) if earlier is not None else ""
        self.validated(plan, types)
        return self._plan(self.table.add(name, plan, types, source))

    def _default_params(
        self, name: str, plan: str, earlier: dict[str, Any] | None
    ) -> dict[str, ParamType]:
        if earlier is not None:
            return self._plan(earlier).params
        names = list(dict.fromkeys(ph.name for ph in placeholders(plan)))
        return infer_types(plan, names, self.tools)

    def validated(self, text: str, types: Mapping[str, ParamType]) -> list[Task]:
        """The plan's tasks with sample values bound; a UserError naming what is wrong."""
        for ph in placeholders(text):
            if ph.quote is None and ph.name not in types:
                raise UserError(
                    f"{{{ph.name}}} is not a parameter of this plan (its parameters: "
                    f"{_listed(types)}): {ph.line.strip()}"
                )
        return self._parse(bind(text, sample_values(types)), "the plan", shown=text)

    def _parse(self, text: str, what: str, shown: str | None = None) -> list[Task]:
        """`text` parsed; a UserError naming what is wrong, on the line of `shown` (the plan
        before its values were bound: samples in an error were copied into the next attempt)."""
        parser = PlanParser(self.tools, plan_answers=self.plan_answers)
        try:
            tasks = parser.feed(text)
            tasks.extend(parser.close())
        except PlanError as exc:
            lines = (shown or "").splitlines()
            if shown is not None and exc.lineno is not None and 0 < exc.lineno <= len(lines):
                exc.line = lines[exc.lineno - 1]
            where = f" (line {exc.lineno}: {exc.line})" if exc.line else ""
            raise UserError(f"{what} does not validate: {exc}{where}") from exc
        return tasks

    # ------------------------------------------------------------------ reading, running

    def get(self, name: str, version: int | None = None) -> NamedPlan:
        """Version `version` of `name` (default: its latest); a UserError when there is none or
        its seal does not check (the journal's rows are not trusted)."""
        row = self.table.get(name, version)
        if row is None:
            which = f"{name} version {version}" if version is not None else name
            raise UserError(f"no named plan {which}")
        if not self.table.verified(row):
            raise UserError(
                f"named plan {name} version {row['version']} failed verification: it is not "
                "sealed by this user's journal key (the journal was edited, or another user "
                "stored it); it is not run"
            )
        return self._plan(row)

    def all(self) -> list[NamedPlan]:
        """The latest version of each named plan whose seal checks, by name."""
        return [self._plan(r) for r in self.table.latest() if self.table.verified(r)]

    def outline(self, plan: NamedPlan) -> list[dict[str, Any]]:
        """Its tasks as a run's `--json` has them (`DagView.from_tasks`, the page), pending:
        each call as the plan writes it, placeholders and condition included."""
        lines = plan.plan.splitlines()
        tasks = self.validated(plan.plan, plan.params)
        return [
            {
                "id": t.id,
                "tool": t.tool,
                "call": _written(lines, t),
                "dependencies": list(t.deps),
                "status": "pending",
                "start": None,
                "end": None,
            }
            for t in tasks
        ]

    def start(self, plan: NamedPlan, values: Mapping[str, Any]) -> NamedPlanStarted:
        """`plan` with `values` bound, checked: every parameter given once with a value of its
        type, and the bound plan the same plan as with any other values."""
        unknown = sorted(set(values) - set(plan.params))
        if unknown:
            raise UserError(
                f"plan {plan.name} has no parameter {', '.join(unknown)} (its parameters: "
                f"{_listed(plan.params)})"
            )
        missing = [k for k in plan.params if k not in values]
        if missing:
            raise UserError(
                f"plan {plan.name} needs {', '.join(f'{k} ({plan.params[k]})' for k in missing)}"
            )
        bound = {k: coerce(k, t, values[k]) for k, t in plan.params.items()}
        text = bind(plan.plan, bound)
        tasks = self._parse(text, f"plan {plan.name} with these values")
        if structure(tasks) != structure(self.validated(plan.plan, plan.params)):
            raise UserError(
                f"the values given change plan {plan.name}'s calls or references: a value is "
                "data, never part of the plan"
            )
        return NamedPlanStarted(name=plan.name, version=plan.version, params=bound, plan=text)

    def _plan(self, row: Mapping[str, Any]) -> NamedPlan:
        try:
            params = json.loads(str(row["params"]))
        except ValueError:
            params = {}
        return NamedPlan(
            name=str(row["name"]),
            version=int(row["version"]),
            plan=str(row["plan"]),
            params=params if isinstance(params, dict) else {},
            source=str(row["source"]),
            created=float(row["created"]),
        )


def plan_text(reply: str) -> str:
    """The plan in a planner's reply: without a code fence, up to its end mark."""
    text = reply.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    text = text.split(END_OF_PLAN, 1)[0].rstrip()
    return text + "\n" + END_OF_PLAN + "\n"


def check_plan_name(name: Any) -> str:
    if not isinstance(name, str) or NAME_RE.fullmatch(name) is None:
        raise UserError(
            f"plan name {name!r}: letters, digits, '.', '_' and '-' (a letter or digit "
            "first), at most 64"
        )
    return name


def _written(lines: list[str], task: Task) -> str:
    """Task `task`'s line as the plan writes it, without its number."""
    if task.lineno is None or not 0 < task.lineno <= len(lines):
        return task.call_text()
    line = lines[task.lineno - 1].strip()
    return re.sub(r"^\d+\s*[.:)]\s*", "", line)


def _listed(params: Mapping[str, str]) -> str:
    return ", ".join(f"{k} ({v})" for k, v in params.items()) or "none"


def repaired(request: LLMRequest, reply: str, error: str) -> LLMRequest:
    """`request` asked again after its `reply` was refused with `error`: the refused plan and
    the error are shown, and the whole plan is asked for again (an earlier round's are
    replaced, not stacked)."""
    base = list(request.messages[:2])
    fix = (
        f"That plan was refused: {error}\n"
        "Write the whole plan again, fixed, and end with " + END_OF_PLAN + "."
    )
    messages = [*base, Message("assistant", reply), Message("user", fix)]
    return dataclasses.replace(request, messages=messages)
