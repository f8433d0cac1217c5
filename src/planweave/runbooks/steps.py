"""A runbook compiled step by step: one planner request per numbered step, each shown the runbook,
the plan so far and that one step, answering with its one task.  A small model decides one
step's call and condition with the step's own words in front of it, instead of the whole plan in
one reply (the 1.5B model put a runbook's "otherwise" on the wrong side and left steps out);
where the backend takes grammars, each step's lines are numbered as asked and read only earlier
tasks' results (`grammar.step_grammar`).  Each step's lines are read and validated with the plan
so far before the next step is asked; a refused one goes back with the error, as a whole
compile's does."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import UserError
from ..grammar import END_OF_STEP, step_grammar
from ..llm.base import LLMRequest, Message
from ..plan import END_OF_PLAN
from ..prompts import step_messages
from ..tools import ToolRegistry

if TYPE_CHECKING:
    from . import NamedPlans

__all__ = [
    "MAX_STEPS",
    "Step",
    "plan_of",
    "runbook_steps",
    "step_lines",
    "step_plan",
    "step_repaired",
    "step_request",
    "task_lines",
]

MAX_STEPS = 30  # numbered steps compiled one by one; a longer runbook compiles in one request
# Tasks one step may become.  One: allowed three, the 1.5B model wrote the next steps' tasks
# under each step too (seventeen tasks for a six-step runbook).
MAX_STEP_LINES = 1
STEP_MAX_TOKENS = 384  # one step's reply, at most
_STEP_RE = re.compile(r"^ ?(\d{1,3})[.)][ \t]+(\S.*)$")
_TASK_RE = re.compile(r"^\s*\d{1,4}\s*[.:)]\s*\S")
_JOIN_RE = re.compile(r"^\s*\d{1,4}\s*[.:)]\s*join\(")
_CONDITIONAL_RE = re.compile(r"\b(if|otherwise|unless|only|else|when|whether)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Step:
    """One numbered step of a runbook: its number and its words (indented lines under it too)."""

    number: int
    text: str

    @property
    def conditional(self) -> bool:
        """Whether its words make it conditional ("if", "otherwise", "unless", "only", "else",
        "when"): only then may its task have a condition.  Allowed one on every step, the 1.5B
        model gave one to steps that run always (`recent_deploys(...) if ${1} > 10.0`)."""
        return _CONDITIONAL_RE.search(self.text) is not None


def runbook_steps(runbook: str) -> list[Step]:
    """The runbook's numbered steps: its first top-level numbered list (an indented one is
    part of the step above it), each step with the indented lines that follow it; the list
    ends at the first line after it that is neither blank, indented nor a step."""
    steps: list[Step] = []
    for line in runbook.splitlines():
        m = _STEP_RE.match(line)
        if m:
            steps.append(Step(int(m.group(1)), m.group(2).strip()))
        elif steps and line[:1] in (" ", "\t") and line.strip():
            steps[-1] = Step(steps[-1].number, f"{steps[-1].text} {line.strip()}")
        elif steps and line.strip():
            break
    return steps


def step_request(
    tools: ToolRegistry,
    runbook: str,
    names: list[str],
    so_far: list[str],
    step: Step,
    *,
    grammar: bool,
    plan_answers: bool,
) -> LLMRequest:
    """The planner request for `step`'s task, numbered after the plan so far (`names`: the
    runbook's parameters, `NamedPlans.check_runbook`)."""
    first_id = len(so_far) + 1
    rules = (
        step_grammar(
            tools,
            first_id=first_id,
            lines=MAX_STEP_LINES,
            params=names,
            conditional=step.conditional,
        )
        if grammar
        else None
    )
    messages = step_messages(
        tools, runbook, names, so_far, step.number, step.text, first_id, plan_answers=plan_answers
    )
    return LLMRequest(
        messages,
        stop=[END_OF_STEP],
        grammar=rules,
        purpose="planner",
        max_tokens=STEP_MAX_TOKENS,
    )


def step_lines(reply: str, step: Step) -> list[str]:
    """The task lines of a step's reply (up to its end mark, no join, at most
    `MAX_STEP_LINES`); a UserError when there is none."""
    text = reply.split(END_OF_STEP, 1)[0].split(END_OF_PLAN, 1)[0]
    lines = [ln.strip() for ln in text.splitlines() if _TASK_RE.match(ln)]
    lines = [ln for ln in lines if not _JOIN_RE.match(ln)][:MAX_STEP_LINES]
    if not lines:
        raise UserError(
            f"the plan does not validate: no task for step {step.number}: write it as a "
            "numbered task, `N. tool(...)`"
        )
    return lines


def step_plan(
    plans: NamedPlans, runbook: str, so_far: list[str], step: Step, reply: str, last: bool = False
) -> str:
    """The plan so far with `step`'s task from `reply`, read as meant and validated (a
    UserError naming what is wrong)."""
    plan, types = plans.read(runbook, plan_of([*so_far, *step_lines(reply, step)]))
    plans.validated(plan, types)
    return plan


def plan_of(lines: list[str]) -> str:
    """A plan of these task lines, ending with its join."""
    body = "\n".join(lines)
    return f"{body}\n{len(lines) + 1}. join()\n{END_OF_PLAN}\n" if lines else END_OF_PLAN


def task_lines(plan: str) -> list[str]:
    """A plan's task lines, without its thought, join and end mark."""
    return [ln.strip() for ln in plan.splitlines() if _TASK_RE.match(ln) and not _JOIN_RE.match(ln)]


def step_repaired(request: LLMRequest, reply: str, error: str, step: Step) -> LLMRequest:
    """`request` asked again after its `reply` was refused with `error`."""
    fix = (
        f"That was refused: {error}\n"
        f"Write the task for step {step.number} again, fixed, then {END_OF_STEP}."
    )
    messages = [*request.messages[:2], Message("assistant", reply), Message("user", fix)]
    return dataclasses.replace(request, messages=messages)
