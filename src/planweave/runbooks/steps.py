"""A runbook compiled step by step: one planner request per numbered step, each shown the runbook,
the plan so far and that one step, answering with its one task.  A small model decides one
step's call and condition with the step's own words in front of it, instead of the whole plan in
one reply (the 1.5B model put a runbook's "otherwise" on the wrong side and left steps out);
where the backend takes grammars, each step's lines are numbered as asked and read only earlier
tasks' results (`step_grammar`).  Each step's lines are read and validated with the plan
so far before the next step is asked; a refused one goes back with the error, as a whole
compile's does."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import UserError
from ..llm.base import LLMRequest, Message
from ..plan import END_OF_PLAN
from ..prompts import step_messages
from ..returns import tool_fields
from ..step_grammar import END_OF_STEP, Earlier, step_grammar
from ..step_words import condition_focus, named_params, named_tools
from ..tools import Tool, ToolRegistry

if TYPE_CHECKING:
    from . import NamedPlans

__all__ = [
    "MAX_STEPS",
    "Step",
    "plan_of",
    "runbook_steps",
    "step_lines",
    "step_parts",
    "step_plan",
    "step_repaired",
    "step_request",
    "task_lines",
]

DECIDE = "decide"  # the built-in tool that asks the model to choose (`builtin.decide`)
MAX_QUESTION = 400  # a step's words longer than this are not taken as its question
MAX_STEPS = 30  # numbered steps compiled one by one; a longer runbook compiles in one request
# Tasks one step may become.  One: allowed three, the 1.5B model wrote the next steps' tasks
# under each step too (seventeen tasks for a six-step runbook).
MAX_STEP_LINES = 1
STEP_MAX_TOKENS = 384  # one step's reply, at most
_STEP_RE = re.compile(r"^ ?(\d{1,3})[.)][ \t]+(\S.*)$")
_TASK_RE = re.compile(r"^\s*\d{1,4}\s*[.:)]\s*\S")
_JOIN_RE = re.compile(r"^\s*\d{1,4}\s*[.:)]\s*join\(")
_ASIDE_RE = re.compile(r"\([^()\n]{0,200}\)")  # words in parentheses
_CONDITIONAL_RE = re.compile(r"\b(if|otherwise|unless|only|else|when)\b", re.IGNORECASE)
# A step (or the part of one) that is done in every case the ones just above it are not.
_OTHERWISE_RE = re.compile(
    r"^\W*(otherwise|else|if not\b|in (every|any|all) other cases?)\b", re.IGNORECASE
)
# Where a step's words go on with its "otherwise" (`If ..., rotate the logs; otherwise post`).
_OTHERWISE_SPLIT_RE = re.compile(r"(?<=[.;,])\s+(?=(otherwise|else)\b)", re.IGNORECASE)
# A condition's clause: from its word to the end of the clause (not a decimal point).
_CLAUSE_RE = re.compile(
    r"\b(if|unless|when|only)\b(.*?)(?:[,:;](?=\s|$)|\.(?!\d)|$)", re.IGNORECASE
)
# Words that join two conditions ("30 seconds or less" is one).
_JOINED_RE = re.compile(
    r"\b(and|or(?! (less|more|fewer|greater|lower|higher|above|below|over|under)\b))\b",
    re.IGNORECASE,
)
# A condition's list going on after a comma: a part that starts like a statement, not an action.
# ("meaning ..." says what the condition is).
_LIST_GOES_ON_RE = re.compile(
    r"\s*(?:(?:and|or)\s+)?(?:(?:the|its|their|it|they|there|no|all|both|each|every"
    r"|meaning|namely|that is)\b|<[^<>\n]{1,80}>)",
    re.IGNORECASE,
)
# A clause about several results at once ("if the three answers are not all the same").
_QUANTIFIED_RE = re.compile(r"\b(all|both|every|each|either|neither|none)\b", re.IGNORECASE)
# One about some of them: its comparisons are joined by "or".
_SOME_RE = re.compile(
    r"\bnot (all|both|every|each)\b|\b(any|some|either)\b|\bone of\b", re.IGNORECASE
)
_PART_RE = re.compile(r"(?:[^,.;:]|\.(?=\d)){0,300}")  # up to the next comma, at most 300
# A list's comma (not 10,000's, nor one before "and").
_LISTED_RE = re.compile(r",(?=\s)(?!\s*(?:and|or)\b)", re.IGNORECASE)
# A terse step's condition before a colon ("Forecast above 100% and the env is sandbox: stop
# it"): a clause that compares, then what to do.
# One sentence (not "Read the log. Steps 1-3 are independent: run them together").
_COLON_CLAUSE_RE = re.compile(r"^((?:[^:.]|\.(?=\d)){3,200}):\s+\S")
_COMPARES_RE = re.compile(
    r"\b(above|below|over|under|exceeds?|exceeding|more than|less than|fewer than|at least"
    r"|at most|greater than|higher than|lower than|equals?"
    r"|or (less|more|fewer|greater|lower|higher))\b|[<>≤≥]",
    re.IGNORECASE,
)
_PLACEHOLDER_RE = re.compile(r"<[^<>\n]{1,80}>")
# What a step says not to do, to the end of its clause ("do not restart it.").
_NEGATED_RE = re.compile(r"\b(do not|don't|don’t|never|without)\b[^.;:,]*", re.IGNORECASE)
# A step done after the one above it, when that one ran ("Once deregistered, terminate it").
_FOLLOWS_RE = re.compile(r"^\W*(once|after)\b", re.IGNORECASE)
# A step done in the case the one above it is done ("In that same case, also reset the MFA").
_SAME_CASE_RE = re.compile(
    r"\b(in (that|this|the|that same|this same) (\w+ )?case|if so)\b", re.IGNORECASE
)
_NUMBER_RE = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?![\w,])|(?<![\w.])\d+(?:\.\d+)?(?!\w)")
_NUMBER_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
_READ_RE = re.compile(r"\$\{?(\d{1,4})")  # the ids a task line reads
_TASK_TOOL_RE = re.compile(r"^\s*\d{1,4}\s*[.:)]\s*([A-Za-z_][A-Za-z0-9_]*)\(")
_CONDITION_WORD_RE = re.compile(r"[A-Za-z0-9](?:[\w.-]*\w)?")
MAX_CONDITION_WORDS = 2000
MAX_TERMS = 3  # comparisons in one condition, at most (`grammar._CONDITION`)


@dataclass(frozen=True, slots=True)
class Step:
    """One numbered step of a runbook: its number and its words (indented lines under it too)."""

    number: int
    text: str

    @property
    def conditional(self) -> bool:
        """Whether its words make it conditional ("if", "otherwise", "unless", "only", "else",
        "when", or a comparing clause before a colon): only then may its task have a
        condition.  Allowed one on every step, the 1.5B model gave one to steps that run always
        (`recent_deploys(...) if ${1} > 10.0`)."""
        said = _ASIDE_RE.sub(" ", self.text)  # not "(its key id, when it was last used)"
        return _CONDITIONAL_RE.search(said) is not None or self._colon_clause() is not None

    @property
    def clause(self) -> str:
        """The words of its condition: the clause after "if" ("unless", "when", "only") with
        the list it goes on with ("If production runs <version>, the smoke tests passed and
        the error rate is under 1 %, mark ..."), or the comparing clause before a colon; its
        whole text when it has neither."""
        span = _clause_span(self.text)
        if span is not None:
            return self.text[span[1] : span[2]]
        return self._colon_clause() or self.text

    @property
    def action(self) -> str:
        """Its words without its condition's clause (nor a leading "once ...," one) and what it
        says not to do: what it does, which names its tool (`step_words.named_tools`; "If the
        system status check is impaired, deregister <instance>" names no status check, "do not
        restart it" no restart)."""
        text = self.text
        span = _clause_span(text)
        colon = self._colon_clause()
        if span is not None:
            text = text[: span[0]] + text[span[3] :]
        elif colon is not None:
            text = text[len(colon) + 1 :]
        if _FOLLOWS_RE.match(text):
            text = text.split(",", 1)[1] if "," in text else text
        return _NEGATED_RE.sub(" ", text)

    def _colon_clause(self) -> str | None:
        m = _COLON_CLAUSE_RE.match(self.text)
        if m and _COMPARES_RE.search(_PLACEHOLDER_RE.sub(" ", m.group(1))):
            return m.group(1)
        return None

    @property
    def otherwise(self) -> bool:
        """Whether it is done in every case the conditional steps just above it are not
        ("Otherwise, post to #ops ...", "If not, ..."): its condition is theirs negated, written
        by the compiler (the 1.5B model wrote the other side's condition on the wrong side)."""
        return _OTHERWISE_RE.match(self.text) is not None

    @property
    def terms(self) -> int:
        """How many comparisons its condition may join: one more than the `and`s and `or`s of
        its condition's clause and the commas of its list (the 1.5B model padded `if $1 > 30`
        with `and $2 > 30 and $3 > 30`), at most `MAX_TERMS`; all of them where the clause
        speaks of all ("if the three answers are not all the same")."""
        clause = self.clause
        if _QUANTIFIED_RE.search(clause) or _SOME_RE.search(clause):  # `$1 == $2 and $2 == $3`
            return MAX_TERMS
        listed = len(_LISTED_RE.findall(clause)) if _clause_span(self.text) is not None else 0
        return min(MAX_TERMS, 1 + len(_JOINED_RE.findall(clause)) + listed)

    @property
    def joiner(self) -> str | None:
        """The one word its condition joins comparisons with where its clause speaks of all
        without joining words of its own: "or" for "not all" ("if the three answers are not
        all the same": some pair differs; the 1.5B model wrote `$2 != $3 and $3 != $1 and
        $1 != $2`, all of them differ), "any", "some" or "either"; "and" for "all", "both",
        "every", "each", "none"; None (either word) otherwise."""
        clause = self.clause
        if _JOINED_RE.search(clause):
            return None
        if _SOME_RE.search(clause):
            return "or"
        return "and" if _QUANTIFIED_RE.search(clause) else None


def _clause_span(text: str) -> tuple[int, int, int, int] | None:
    """Where the clause of a step's condition is (`Step.clause`): the start of its word, the
    start and end of its words, and the end of what it takes (its comma too); None without
    one.  It goes on over each comma a list of conditions goes on after ("..., the smoke
    tests passed and the error rate is under 1 %, mark ..."): a part that starts like a
    statement (`_LIST_GOES_ON_RE`) and ends at a comma, the action after it."""
    m = _CLAUSE_RE.search(text)
    if m is None:
        return None
    end = m.end(2)
    while text[end : end + 1] == ",":
        part = _PART_RE.match(text, end + 1)
        after = part.end() if part else end + 1
        if text[after : after + 1] != "," or not _LIST_GOES_ON_RE.match(text, end + 1):
            break
        end = after
    return m.start(), m.start(2), end, max(m.end(), end + 1)


def step_parts(step: Step) -> list[Step]:
    """`step`, split where its words go on with an "otherwise" (each part one task)."""
    parts = [p.strip() for p in _OTHERWISE_SPLIT_RE.split(step.text) if p and p.strip()]
    parts = [p for p in parts if p.lower() not in ("otherwise", "else")]
    return [Step(step.number, p) for p in parts] if len(parts) > 1 else [step]


def runbook_numbers(runbook: str) -> list[str]:
    """The numbers a runbook writes (`10,000` as 10000; "three" as 3), with 0 and 1: those a
    compiled condition may compare with."""
    found = ["0", "1"]
    for m in _NUMBER_RE.finditer(runbook):
        found.append(m.group().replace(",", ""))
    words = re.findall(r"[a-z]+", runbook.lower())
    found += [str(i) for i, w in enumerate(_NUMBER_WORDS) if w in words]
    return sorted(set(found), key=lambda n: (float(n), n))


def condition_words(runbook: str, tools: Iterable[Tool | None]) -> list[str]:
    """The words a compiled condition's texts may use: the runbook's and its earlier tasks'
    tools' descriptions' (`"confidential"`, `"timeout"`), as written, at most
    `MAX_CONDITION_WORDS`; the 1.5B model compared a log line with one it made up."""
    texts = [runbook, *(t.description for t in tools if t is not None)]
    words = dict.fromkeys(w for text in texts for w in _CONDITION_WORD_RE.findall(text))
    return list(words)[:MAX_CONDITION_WORDS]


def otherwise_condition(so_far: list[str]) -> str | None:
    """The condition of an "otherwise" step: none of the conditions of the tasks just above
    it (the conditional tasks at the end of the plan so far) holds; None when the last task
    has no condition (the model writes one itself then)."""
    conditions = []
    for line in reversed(so_far):
        written = condition_of(line)
        if written is None:
            break
        conditions.append(written)
    if not conditions:
        return None
    return " and ".join(f"not ({c})" for c in reversed(conditions))


def condition_of(line: str) -> str | None:
    """The condition a task line is written with (after its call's `if`), or None."""
    rest = line[call_end(line) :].strip()
    return rest[3:].strip() or None if rest.startswith("if ") else None


def earlier_tasks(tools: ToolRegistry, so_far: list[str]) -> Earlier:
    """The tasks of the plan so far, for a step's grammar: the tool each calls, by id (None:
    not a registered tool), and those a run may skip (a condition, or reading a task that a
    run may skip)."""
    called: dict[int, Tool | None] = {}
    skippable: set[int] = set()
    for i, line in enumerate(so_far, 1):
        m = _TASK_TOOL_RE.match(line)
        called[i] = tools.get(m.group(1)) if m else None
        read = {int(r) for r in _READ_RE.findall(line)}
        if condition_of(line) is not None or read & skippable:
            skippable.add(i)
    return Earlier(called, frozenset(skippable))


def call_end(line: str) -> int:
    """Where a task line's call ends: after the parenthesis that closes its first one (quotes
    minded); the whole line when it has none."""
    depth, quote, escaped = 0, False, False
    for i, c in enumerate(line):
        if quote:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                quote = False
        elif c == '"':
            quote = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(line)


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
    runbook's parameters, `NamedPlans.check_runbook`).  Its grammar reads each earlier result
    as its tool's declared type allows, compares with the runbook's numbers only and joins as
    many comparisons as the step's words do; an "otherwise" step's condition is written by
    the compiler (`fixed_condition`), so its grammar has none."""
    first_id = len(so_far) + 1
    fixed = fixed_condition(step, so_far)
    earlier = earlier_tasks(tools, so_far)
    earlier = dataclasses.replace(earlier, focus=_focus(step, earlier))
    if not step.conditional and fixed is None and set(earlier.tools) - earlier.skippable:
        # A step that always runs reads no task a run may skip: the 1.5B model wrote a
        # notice that always goes out with `${3}` of a stop that runs only over budget.
        earlier = dataclasses.replace(earlier, unread=earlier.skippable)
    rules = (
        step_grammar(
            _offered(tools, step),
            first_id=first_id,
            lines=MAX_STEP_LINES,
            params=names,
            conditional=step.conditional and fixed is None,
            earlier=earlier,
            numbers=runbook_numbers(runbook),
            words=condition_words(runbook, earlier.tools.values()),
            terms=step.terms,
            joiner=step.joiner,
            bound=_bound(tools, names, step, earlier),
        )
        if grammar
        else None
    )
    messages = step_messages(
        tools,
        runbook,
        names,
        so_far,
        step.number,
        step.text,
        first_id,
        plan_answers=plan_answers,
        condition=fixed,
    )
    return LLMRequest(
        messages,
        stop=[END_OF_STEP],
        grammar=rules,
        purpose="planner",
        max_tokens=STEP_MAX_TOKENS,
    )


def _offered(tools: ToolRegistry, step: Step) -> ToolRegistry:
    """The tools `step`'s grammar offers: the actions (tools with side effects) its words name
    where they name one, else all.  An action it names is the one it does (the 1.5B model read
    the failed sign-ins again for "open a ticket in the security queue"); a reading tool it
    names may be what it reports on ("post to #ops that the disk is at its usage" names
    `disk_usage`), so naming one keeps every tool offered."""
    named = [t for t in named_tools(step.action, tools.values()) if t.side_effects]
    return ToolRegistry(*named) if named else tools


def _focus(step: Step, earlier: Earlier) -> dict[int, tuple[str, ...] | None] | None:
    """The earlier tasks `step`'s condition reads (`step_words.condition_focus`), made wider
    where the clause says more than they give: every field of theirs where it names fewer
    fields than it has comparisons ("tried 3 times or more" is `attempts`: the 1.5B model was
    held to `exit_code`), every task where it writes a number that none of them holds ("24
    hours old or less and its checksum matches" named only the checksum).  Where it writes a
    number, not those a run may skip while others remain (a skipped task is only tested
    against None; the 1.5B model wrote `$4 != None` for "if the lag is 30 seconds or less"
    where task 4 read the lag again after a restart)."""
    focus = condition_focus(step.clause, earlier.tools)
    if not focus:
        return focus
    named = [f for f in focus.values() if f is not None]
    if named and sum(len(f) for f in named) < step.terms:
        focus = dict.fromkeys(focus)
    if _NUMBER_RE.search(step.clause):
        if not any(_numeric(earlier.tools.get(i)) for i in focus):
            return None
        return {i: f for i, f in focus.items() if i not in earlier.skippable} or focus
    return focus


def _numeric(tool: Tool | None) -> bool:
    """Whether a task calling `tool` may give a number to compare: a number, or a record."""
    if tool is None or tool.returns in (int, float):
        return True
    return tool.returns not in (str, bool) and tool_fields(tool) is not None


def _bound(
    tools: ToolRegistry, names: list[str], step: Step, earlier: Earlier
) -> dict[str, list[str]]:
    """By argument name, the values an argument of that name takes, as a plan writes them:
    the runbook parameters it stands for (`step_words.named_params`: `username=` takes
    `{user}`), else the earlier results' fields of its name (`resource_id=` takes
    `$2.resource_id`, a result that is no record, or a value), and for a step that says to
    decide, `decide`'s question as the step words it (the 1.5B model asked "What is the most
    frequent error line...?" for "Decide from the log line whether the failure is a timeout
    or a crash", and the decision read the crash as a timeout)."""
    arguments = {p.name for t in tools.values() for p in t.params}
    readable = earlier.readable
    fields = [(i, f) for i, t in readable.items() if t is not None for f in tool_fields(t) or ()]
    # A whole result that is no record may stand for it too (`key_id=$3`, the new key's id,
    # beside the old one's `$1.key_id`), where it is of the argument's type (not a leak
    # scan's true or false for a key id).
    whole = [(i, t.returns) for i, t in readable.items() if t is not None and not tool_fields(t)]
    bound: dict[str, list[str]] = {}
    for a in sorted(arguments):
        if found := named_params(a, names):
            bound[a] = ["{" + p + "}" for p in found]
        elif read := [f"${i}.{f}" for i, f in fields if f == a]:
            types = {p.annotation for t in tools.values() for p in t.params if p.name == a}
            bound[a] = read + [f"${i}" for i, returns in whole if returns in types]
    asks = tools.get(DECIDE)
    if asks is not None and named_tools(step.action, [asks]) and len(step.text) <= MAX_QUESTION:
        question = _PLACEHOLDER_RE.sub(lambda m: _param(m, names), step.text)
        bound["question"] = [json.dumps(question, ensure_ascii=False)]
    return bound


def _param(m: re.Match[str], names: list[str]) -> str:
    """`<service>` as the parameter `{service}` where it is one, else as written."""
    name = m.group()[1:-1]
    return "{" + name + "}" if name in names else m.group()


def fixed_condition(step: Step, so_far: list[str]) -> str | None:
    """The condition the compiler writes for `step`: for an "otherwise" step, that none of the
    conditions just above it holds (`otherwise_condition`); for one done "once"/"after" the
    task above it when that task has a condition, that it ran (`$N != None`); for one done "in
    that case" ("if so"), the condition of the task above it; else None (the model writes it).
    The 1.5B model wrote "Once deregistered, terminate the instance" with no condition."""
    if step.otherwise:
        return otherwise_condition(so_far)
    above = condition_of(so_far[-1]) if so_far else None
    if above is None:
        return None
    if _FOLLOWS_RE.match(step.text):
        return f"${len(so_far)} != None"
    if _SAME_CASE_RE.search(step.text):
        return above
    return None


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
    lines = step_lines(reply, step)
    fixed = fixed_condition(step, so_far)
    if fixed is not None:  # the call as the model wrote it, with the compiler's condition
        lines = [f"{ln[: call_end(ln)]} if {fixed}" for ln in lines]
    plan, types = plans.read(runbook, plan_of([*so_far, *lines]))
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
