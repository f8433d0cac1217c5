"""Every prompt planweave sends and every reply it reads back.

The planner, the joiner and ReAct mode build their messages here and parse the model's output
here; they import this module and not each other.  The text is load-bearing: recorded responses
are replayed by request fingerprint and the benchmark oracle recognises the heads, so a change
of one character is a change of behaviour.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .errors import JoinerError
from .llm.base import Message, PromptStyle, Purpose
from .plan import END_OF_PLAN

if TYPE_CHECKING:
    from .errors import PlanError
    from .plan import Task
    from .tools import Tool, ToolRegistry

__all__ = [
    "ANSWER_FIRST",
    "BARE_ANSWER",
    "JOINER_HEAD",
    "JOINER_PLAN_HEAD",
    "PLANNER_HEAD",
    "PLAN_ANSWER",
    "REACT_HEAD",
    "REPAIR_HEAD",
    "THOUGHT_BEFORE_REPLAN",
    "AnswerStream",
    "JoinDecision",
    "JoinReplyStream",
    "TaskOutcome",
    "format_observations",
    "joiner_messages",
    "one_shot_messages",
    "parse_action",
    "parse_decision",
    "planner_system_prompt",
    "purpose_of",
    "question_messages",
    "react_system_prompt",
    "react_turn",
    "repair_messages",
    "replan_messages",
    "synthesized_example",
]


class _PlannedTask(Protocol):
    @property
    def thought(self) -> str | None: ...


class TaskOutcome(Protocol):
    """A task and what came of it, as the prompts read it (the scheduler's `TaskRecord`).
    `str(task)` is the task's plan line."""

    @property
    def task(self) -> _PlannedTask: ...

    def observation(self, limit: int = 2000) -> str: ...


def format_observations(
    records: Sequence[TaskOutcome], limit: int = 2000, *, thoughts: bool = True
) -> str:
    """Each task of a plan with what came of it, as the joiner and the replanner read it."""
    lines = []
    for rec in records:
        if thoughts and rec.task.thought:
            lines.append(f"Thought: {rec.task.thought}")
        lines.append(str(rec.task))
        lines.append(f"Observation: {rec.observation(limit)}")
    return "\n".join(lines)


def question_messages(system: str, question: str) -> list[Message]:
    """The opening of a planner or ReAct conversation."""
    return [Message("system", system), Message("user", f"Question: {question}")]


def one_shot_messages(system: str, example: tuple[str, str], question: str) -> list[Message]:
    """A planner conversation whose one worked example is an earlier question and its plan."""
    asked, plan = example
    return [
        Message("system", system),
        Message("user", f"Question: {asked}"),
        Message("assistant", plan),
        Message("user", f"Question: {question}"),
    ]


# The planner.

PLANNER_HEAD = (
    "You are a planner: you turn a question into a plan of tool calls that run in parallel."
)
REPAIR_HEAD = "Your plan was rejected at this line:"

_RULES = """\
Rules:
- One task per line: `<id>. <tool>(<arguments>)`, optionally after a line `Thought: <reason>`.
- Arguments are literals or results of earlier tasks: $<id> is the result of task <id>,
  $<id>.field a part of it; inside a string write "${<id>}".
- $<id>[*] calls the tool once per item of task <id>'s list, all at once (the result is a list).
- Ids count up from {first_id}; a task may only use results of earlier tasks.
- Tasks that do not need each other's results run at the same time.
{compute}- End with `<id>. join()` and {end}; the answer is written after the plan has run."""

# With plan answers on: the plan may end with its answer, and then no joiner call is made.
PLAN_ANSWER = "If the answer is results in set words"

_PLAN_ANSWER_RULE = (
    PLAN_ANSWER
    + """, end with `<id>. join("<the answer, ${<id>} where
  a result goes>")`: it is the answer.  Not when the words depend on the results (which is
  larger, yes or no)."""
)

_SAMPLES: dict[Any, str] = {str: '"text"', int: "3", float: "2.5", bool: "True"}


def synthesized_example(tools: ToolRegistry) -> str:
    """A worked example of the plan form built from the registry's own tools, for tool sets
    that bring no examples: two independent calls, one that uses their results, and join."""
    chosen = list(tools.values())[:2]
    if not chosen:
        return ""

    def call(t: Tool, refs: list[str]) -> str:
        args = []
        for p in t.params:
            if not p.required:
                continue
            args.append(refs.pop(0) if refs else _SAMPLES.get(p.annotation, '"text"'))
        return f"{t.name}({', '.join(args)})"

    first, last = chosen[0], chosen[-1]
    lines = [
        "Question: (an illustration of the form only)",
        "Thought: The first two calls do not depend on each other, so they run at once.",
        f"1. {call(first, [])}",
        f"2. {call(first, [])}",
        f"3. {call(last, ['$1', '$2'])}",
        "4. join()",
        END_OF_PLAN,
    ]
    return "\n".join(lines)


def _compute_rule(tools: ToolRegistry) -> str:
    """The rule that numbers and comparisons are tasks, for registries that have the tools
    (a small model left to compare or add in prose gets it wrong)."""
    if "calculator" not in tools:
        return ""
    rule = (
        "- Every number the answer needs (a sum, difference, ratio, percentage, average or count)\n"
        "  is a calculator task"
    )
    if "convert_units" in tools:
        rule += ", a change of units a convert_units task"
    if "rank" in tools:
        rule += ', "which is largest/smallest" a rank task'
    return rule + ": the answer only quotes them.\n"


def planner_system_prompt(
    tools: ToolRegistry,
    examples: str,
    first_id: int = 1,
    style: PromptStyle = "full",
    *,
    answers: bool = False,
) -> str:
    """The planner's instructions: the tools, the plan language's rules and, in the full style,
    worked examples (the compact style leaves them out: they teach small models the form).
    With `answers`, a plan whose answer is its results in set words may end with it."""
    join_n = len(tools) + 1
    rules = (
        _RULES.replace("{first_id}", str(first_id))
        .replace("{end}", END_OF_PLAN)
        .replace("{compute}", _compute_rule(tools))
    )
    parts = [
        PLANNER_HEAD,
        "",
        "Tools:",
        tools.render(),
        f"{join_n}. join(): collects the results of the plan; always the last task.",
        "",
        rules + ("\n- " + _PLAN_ANSWER_RULE if answers else ""),
    ]
    if style == "full":
        parts += ["", "Examples:", examples]
    return "\n".join(parts)


def replan_messages(
    system: str, question: str, records: Sequence[TaskOutcome], reason: str, next_id: int
) -> list[Message]:
    """Ask for a new plan after the joiner found the first one's results not enough; `system`
    is the planner prompt with ids counting from `next_id`."""
    user = (
        f"Question: {question}\n\n"
        "A plan already ran; its tasks and results:\n"
        f"{format_observations(records)}\n\n"
        f"Why that was not enough: {reason}\n\n"
        f"Write a new plan for what is still missing.  Start at id {next_id}; you may use "
        "$<id> of the tasks above.  End with join() and " + END_OF_PLAN + "."
    )
    return [Message("system", system), Message("user", user)]


def repair_messages(
    messages: Sequence[Message], accepted: Sequence[Task], error: PlanError, next_id: int
) -> list[Message]:
    """Ask the planner to continue after the line that was rejected; an earlier repair request
    in `messages` is replaced, not stacked."""
    plan_so_far = "\n".join(str(t) for t in accepted) or "(no task was accepted)"
    line = error.line.strip() if error.line else "(end of plan)"
    fix = (
        f"{REPAIR_HEAD} {line}\n"
        f"Error: {error.message}\n"
        f"Tasks accepted so far (they are running; do not repeat them):\n{plan_so_far}\n"
        f"Continue the plan from id {next_id} with valid lines only, "
        "and end with join() and " + END_OF_PLAN + "."
    )
    base = [m for m in messages if not m.content.startswith(REPAIR_HEAD)]
    return [*base, Message("user", fix)]


# The joiner.

JOINER_HEAD = "You answer a question from the results of a plan of tool calls that has already run."

# What both forms of the joiner's reply share: when to replan, and what an answer says.
# {replan} is the Replan form, with a thought before it or without.
THOUGHT_BEFORE_REPLAN = "Thought: <what is missing>\n"
_REPLAN = "Action: Replan(<what to find out next>)"
_JOINER_RULES = """\
Only if the results cannot answer the question and another plan of tool calls could get what
is missing, reply instead:
{replan}

The answer is one or two complete sentences that answer every part of the question, using
the numbers in the results (rounded sensibly) with their units.  For a comparison, name the
winner and give the difference or ratio."""

_JOINER_FORMAT = (
    """\
Reply in exactly this form:
Thought: <brief reasoning over the results>
Action: Finish(<the answer to the question>)

"""
    + _JOINER_RULES
)

_JOINER_EXAMPLE = (
    Message(
        "user",
        "Question: Which river is longer, the Amur or the Lena, and by how much?\n\n"
        "Plan and results:\n"
        '1. river_length("Amur")\nObservation: 4444\n'
        '2. river_length("Lena")\nObservation: 4400\n'
        '3. calculator("${1} - ${2}")\nObservation: 44',
    ),
    Message(
        "assistant",
        "Thought: The Amur is 4444 km and the Lena 4400 km; the difference is 44 km.\n"
        "Action: Finish(The Amur is longer than the Lena, by 44 km (4,444 km against 4,400 km).)",
    ),
)

# The compact forms: the answer first, a thought only where it earns its tokens (a Replan's).
# The answer comes bare, as plain text: no `Action: Finish(` wrapper to decode before it (as
# native function calling's final answer has none).  The wrapped form stays for comparison
# (`Joiner(bare_answers=False)`); replies in either form are read in both.
ANSWER_FIRST = "Reply with the answer first"
BARE_ANSWER = ANSWER_FIRST + ", as plain text"

_JOINER_BARE_FORMAT = (
    BARE_ANSWER
    + """: the answer to the question itself, with no label or
`Action:` before it.  Write no thought before it, unless the answer needs reasoning the
results do not show: then one line `Thought: <brief reasoning>` before the answer.  When the
answer is a task's result as it stands (the list of texts the question asked for), write
${<id>} alone: it is filled in.

"""
    + _JOINER_RULES
)

_JOINER_COMPACT_FORMAT = (
    ANSWER_FIRST
    + """, in this form:
Action: Finish(<the answer to the question>)
Write no thought before it, unless the answer needs reasoning the results do not show: then
one line `Thought: <brief reasoning>` before the Action.  When the answer is a task's result as
it stands (the list of texts the question asked for), write Finish(${<id>}): it is filled in.

"""
    + _JOINER_RULES
)

_LAST_ROUND = (
    "This is the last round: no more plans can run.  You must reply with {finish}, "
    "saying plainly what could not be found if the results are incomplete."
)


JOINER_PLAN_HEAD = "When you reply Replan, write the new plan in the same reply"

_JOINER_PLAN = (
    JOINER_PLAN_HEAD
    + """, right after the Action line:
{replan}
{first}. <tool>(<arguments>)
<id>. join()
{end}
One task per line, ids counting up from {first}.  Arguments are literals or $<id>, the result of
a task above or of an earlier line ("${<id>}" inside a string); $<id>[*] calls the tool once per
item of a list result.  Tasks that do not need each other's results run at the same time.

Tools:
{tools}"""
)


def joiner_messages(
    question: str,
    records: Sequence[TaskOutcome],
    *,
    last_round: bool,
    notes: Sequence[str] = (),
    observation_limit: int = 2000,
    style: PromptStyle = "full",
    plan_tools: ToolRegistry | None = None,
    next_id: int = 1,
    plan_answers: bool = False,
    replan_thought: bool | None = None,
    bare_answers: bool | None = None,
) -> list[Message]:
    """The joiner's request.  The full style asks for a thought before every action and shows
    one worked exchange; the compact style asks for the answer first, bare (as plain text, no
    `Action: Finish(`; `bare_answers=False`: wrapped), and shows none.  With
    `plan_tools` (and rounds left), a Replan reply is asked to carry the next plan, ids counting
    from `next_id`, written with those tools (with `plan_answers`, ending with its answer
    where that answer is its results in set words).  A Replan comes after a thought in the full
    style and alone in the compact one (`replan_thought` overrides)."""
    compact = style == "compact"
    if replan_thought is None:
        replan_thought = not compact
    bare = compact if bare_answers is None else compact and bare_answers
    replan = (THOUGHT_BEFORE_REPLAN if replan_thought else "") + _REPLAN
    form = _JOINER_BARE_FORMAT if bare else _JOINER_COMPACT_FORMAT if compact else _JOINER_FORMAT
    system = f"{JOINER_HEAD}\n\n{form}".replace("{replan}", replan)
    if last_round:
        finish = "the answer" if bare else "Action: Finish(...)"
        system += "\n\n" + _LAST_ROUND.replace("{finish}", finish)
    elif plan_tools is not None:
        plan = _JOINER_PLAN.replace("{replan}", replan).replace("{first}", str(next_id))
        plan = plan.replace("{end}", END_OF_PLAN)
        if plan_answers:
            rule = _PLAN_ANSWER_RULE.replace("\n  ", "\n")
            plan = plan.replace("\n\nTools:", f"\n{rule}\n\nTools:")
        system += "\n\n" + plan.replace("{tools}", plan_tools.render())
    # Without the planner's thoughts: small models copy them instead of reasoning afresh.
    body = format_observations(records, observation_limit, thoughts=False) or "(no task ran)"
    extra = "".join(f"\nNote: {n}" for n in notes)
    user = f"Question: {question}\n\nPlan and results:\n{body}{extra}"
    # One worked exchange, as chat history: small models follow a shown answer's form.
    example = () if compact else _JOINER_EXAMPLE
    return [Message("system", system), *example, Message("user", user)]


_THOUGHT_RE = re.compile(
    r"Thought\s*:\s*(.*?)(?:\n\s*(?:Action\s*:|Finish\s*\(|Replan\s*\()|$)", re.S | re.I
)
_DECISION_RE = re.compile(r"(?:^|\n)\s*(?:Action\s*:\s*)?(Finish|Replan)\s*\(", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class JoinDecision:
    """What the joiner (or a finishing ReAct step) decided: the answer, or what to plan next."""

    action: Literal["finish", "replan"]
    text: str
    thought: str | None = None
    plan: str | None = None  # a Replan reply's plan lines, when it carries them


def _unquote(text: str) -> str:
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
        try:
            value = ast.literal_eval(stripped)
        except (ValueError, SyntaxError):
            return stripped
        if isinstance(value, str):
            return value
    return stripped


# A Replan line ends at a closing parenthesis and the end of the line; a plan that follows it
# starts with a task line, a thought or the JSON form.
_HEAD_END_RE = re.compile(r"\)[ \t\r]*\n")
_PLAN_START_RE = re.compile(r"\s*(?:\d+\s*\.|Thought\s*:|\[|```)", re.I)


def _replan_head_end(output: str) -> int | None:
    """Where the plan of a Replan reply may start (after its Action line), or None when the
    reply is no Replan or its Action line has not ended yet."""
    match = _DECISION_RE.search(output)
    if match is None or match.group(1).lower() != "replan":
        return None
    end = _HEAD_END_RE.search(output, match.end())
    return end.end() if end else None


def _plan_after(output: str, head_end: int) -> str | None:
    """The plan lines after a Replan line: None unless its first non-blank line starts a plan."""
    rest = output[head_end:]
    return rest if rest.strip() and _PLAN_START_RE.match(rest) else None


# A reply to the bare-answer prompt: an optional one-line thought, then the answer as plain text,
# unless its first words are an action (`Action:`, `Finish(`, `Replan(`): then it is read in the
# action form, as every reply is without bare answers.
# ASCII rules (letters, whitespace), which the compact joiner grammar's bare answer mirrors.
_LEADING_THOUGHT_RE = re.compile(r"\s*Thought\s*:", re.I | re.A)
_ACTION_START_RE = re.compile(r"\s*(?:Action\s*:|(?:Finish|Replan)\s*\()", re.I | re.A)
_FIRST_WORD_RE = re.compile(r"\s*([A-Za-z]*)(\s*)", re.A)
_HEAD_WORDS = ("action", "finish", "replan", "thought")

_Form = Literal["bare", "action", "open"]


def _reply_form(text: str, *, final: bool) -> tuple[_Form, int]:
    """How a reply to the bare-answer prompt answers, told from its first characters: "bare"
    (the answer is the text from the offset on, after a thought line if there is one) or
    "action"; while it streams (`final` False), "open" as long as more characters could still
    make its start an action, so that a Replan is never taken for an answer."""
    start = 0
    thought = _LEADING_THOUGHT_RE.match(text)
    if thought is not None:
        newline = text.find("\n", thought.end())
        if newline < 0:
            return ("bare", len(text)) if final else ("open", 0)  # a thought and no answer
        start = newline + 1
    rest = text[start:]
    if _ACTION_START_RE.match(rest):
        return "action", 0
    if not final and _may_become_action(rest):
        return "open", 0
    return "bare", start


def _may_become_action(text: str) -> bool:
    """Whether more characters could still make `text` the start of an action (`Act`,
    `Replan `, blank so far)."""
    match = _FIRST_WORD_RE.fullmatch(text)
    if match is None:
        return False
    word, space = match.group(1).lower(), match.group(2)
    if word in _HEAD_WORDS:
        return True
    return not space and any(head.startswith(word) for head in _HEAD_WORDS)


def _bare_decision(output: str, start: int) -> JoinDecision:
    """A bare answer from `start` on; the thought line before it, if any."""
    thought = None
    if start > 0 and (head := _LEADING_THOUGHT_RE.match(output)) is not None:
        thought = output[head.end() : start].strip() or None
    return _answered(JoinDecision("finish", output[start:].strip(), thought), output)


def _answered(decision: JoinDecision, output: str) -> JoinDecision:
    """`decision`, unless it finishes with no answer (an empty reply, a thought or an `Action:`
    with nothing after it): that reply cannot be understood."""
    if decision.action == "finish" and not decision.text:
        shown = output if len(output) <= 200 else output[:200] + "..."
        raise JoinerError(f"the joiner's reply gives no answer: {shown!r}")
    return decision


def parse_decision(output: str, *, bare: bool = False) -> JoinDecision:
    """Read the joiner's output.  The answer inside `Finish(...)` comes through whole:
    parentheses, quotes and newlines included, up to the last closing parenthesis.  A
    `Replan(...)` line followed by plan lines ends at its line; the lines are `plan`.
    With `bare` (the compact prompt's bare answers), a reply whose first words (after a
    thought line) are no action is the answer as it stands, and a reply that gives no answer
    raises `JoinerError`."""
    if bare:
        form, start = _reply_form(output, final=True)
        if form == "bare":
            return _bare_decision(output, start)
    head_end = _replan_head_end(output)
    plan = _plan_after(output, head_end) if head_end is not None else None
    if plan is not None and head_end is not None:
        return replace(parse_decision(output[:head_end], bare=bare), plan=plan)
    matches = list(_DECISION_RE.finditer(output))
    thought_match = _THOUGHT_RE.search(output)
    thought = thought_match.group(1).strip() if thought_match else None
    if not matches:
        # No action at all: a small model that simply answered.  Take its text as the answer.
        text = re.sub(r"^\s*Thought\s*:.*?(?:\n|$)", "", output, flags=re.I).strip()
        if bare:  # `Action: <the answer>`, or nothing after the label
            text = re.sub(r"^Action\s*:\s*", "", text, flags=re.I)
            return _answered(JoinDecision("finish", text, thought), output)
        return JoinDecision("finish", text or output.strip(), thought)
    match = matches[0]
    body = output[match.end() :]
    close = body.rfind(")")
    if close >= 0:
        body = body[:close]
    action: Literal["finish", "replan"] = (
        "finish" if match.group(1).lower() == "finish" else "replan"
    )
    decision = JoinDecision(action, _unquote(body), thought)
    return _answered(decision, output) if bare else decision


class AnswerStream:
    """The answer of a joiner reply as it streams: `feed` each piece of the reply and get the
    answer text that piece adds, once the reply has said `Finish(`, or, with `bare`, once its
    first words are known to be no action (until then it holds back only those few
    characters: an `Action: Replan(...)` is never given as an answer).

    What it gives is always a prefix of what `parse_decision` reads from the whole reply, so the
    pieces, with `close()`'s rest, add up to the answer exactly: it holds back leading and
    trailing whitespace, in a `Finish(` everything from the last `)` on (the answer ends at
    the last one) and all of an answer in quotes (read whole, as a literal, at the end).  A
    Replan, or a reply without an action, gives nothing until `close()`.
    """

    def __init__(self, *, bare: bool = False) -> None:
        self.bare = bare
        self._text = ""
        self._body: int | None = None  # where the answer starts, once that is known
        self._wrapped = True  # the answer is inside `Finish(...)` (not a bare one)
        self._given = ""
        self._decided = False

    def feed(self, piece: str) -> str:
        self._text += piece
        if not self._decided:
            self._decide()
        if self._body is None:
            return ""
        body = self._text[self._body :].lstrip()
        if not self._wrapped:
            return self._give(body.rstrip())
        if body[:1] in ("'", '"'):
            return ""
        close = body.rfind(")")
        ready = (body[:close] if close >= 0 else body).rstrip()
        return self._give(ready)

    def _decide(self) -> None:
        if self.bare:
            form, start = _reply_form(self._text, final=False)
            if form == "open":
                return
            if form == "bare":
                self._decided, self._body, self._wrapped = True, start, False
                return
        match = _DECISION_RE.search(self._text)
        if match is None:
            return
        self._decided = True
        if match.group(1).lower() == "finish":
            self._body = match.end()

    def close(self) -> tuple[JoinDecision, str]:
        """The whole reply's decision and, if it finishes, the answer's rest not yet given."""
        decision = parse_decision(self._text, bare=self.bare)
        if decision.action != "finish":
            return decision, ""
        return decision, self._give(decision.text)

    def _give(self, ready: str) -> str:
        if len(ready) <= len(self._given) or not ready.startswith(self._given):
            return ""
        piece, self._given = ready[len(self._given) :], ready
        return piece


class JoinReplyStream:
    """Reads the joiner's reply as it streams, to start the next plan's tasks before it ends.

    `feed` returns the text that belongs to a plan: nothing until a `Replan(...)` line has
    ended and the first non-blank line after it starts a plan (a task line, a thought), then
    everything from there on.  A reply that finishes, or replans without a plan, gives none;
    with `bare`, neither does a bare answer (whatever lines it has)."""

    def __init__(self, *, bare: bool = False) -> None:
        self.bare = bare
        self.text = ""
        self.planning = False
        self._settled = False  # no plan can follow any more (a Finish, or prose after Replan)

    def feed(self, chunk: str) -> str:
        self.text += chunk
        if self.planning:
            return chunk
        if self._settled:
            return ""
        if self.bare:
            form, _ = _reply_form(self.text, final=False)
            self._settled = form == "bare"
            if form != "action":
                return ""
        head_end = _replan_head_end(self.text)
        if head_end is None:
            match = _DECISION_RE.search(self.text)
            self._settled = match is not None and match.group(1).lower() == "finish"
            return ""
        rest = self.text[head_end:]
        if _PLAN_START_RE.match(rest) is None:
            # Prose after the Replan line: no plan.  A first line still streaming may yet be one.
            self._settled = "\n" in rest.lstrip()
            return ""
        self.planning = True
        return rest

    def decision(self) -> JoinDecision:
        """The decision: while planning, the Replan line's (its plan still streaming)."""
        if self.planning:
            head_end = _replan_head_end(self.text)
            assert head_end is not None
            head = parse_decision(self.text[:head_end], bare=self.bare)
            return replace(head, plan=self.text[head_end:])
        return parse_decision(self.text, bare=self.bare)


# ReAct mode.

REACT_HEAD = "You answer a question by calling tools one at a time and reading each result."

_REACT_FORMAT = """\
Each turn, reply in exactly this form, then stop and wait for the observation:
Thought: <what you need next>
Action: <tool>(<arguments>)

Arguments are literals (strings in quotes, numbers, lists); $<id> passes the result of an
earlier action, where ids count the actions from 1.  When you can answer, reply:
Thought: <brief reasoning>
Action: Finish(<the answer>)"""

_REACT_ACTION_RE = re.compile(r"Action\s*:\s*(.*)", re.S | re.I)


def react_system_prompt(tools: ToolRegistry) -> str:
    prompt = f"{REACT_HEAD}\n\nTools:\n{tools.render()}\n\n{_REACT_FORMAT}"
    examples = tools.usable_examples("react")
    if examples:
        prompt += "\n\nExamples:\n" + "\n\n".join(examples)
    return prompt


def react_turn(messages: Sequence[Message], output: str, observation: str) -> list[Message]:
    """The conversation after one ReAct step: the model's turn, then what its action returned."""
    return [
        *messages,
        Message("assistant", output.strip()),
        Message("user", f"Observation: {observation}"),
    ]


def parse_action(output: str) -> str | None:
    """The tool call a ReAct step asks for (the first line of its action), or None when the
    step finishes: then `parse_decision` reads the answer."""
    match = _REACT_ACTION_RE.search(output)
    action = match.group(1).strip() if match else ""
    if not action or re.match(r"Finish\s*\(", action, re.I):
        return None
    return action.splitlines()[0]


def purpose_of(messages: Sequence[Message]) -> Purpose:
    """What a request is for, told from its text: for servers that receive requests without
    the purpose header (other clients' prompts come out as "other")."""
    system = messages[0].content if messages and messages[0].role == "system" else ""
    if system.startswith(PLANNER_HEAD):
        last = messages[-1].content if messages else ""
        return "repair" if last.startswith(REPAIR_HEAD) else "planner"
    if system.startswith(JOINER_HEAD):
        return "joiner"
    if system.startswith(REACT_HEAD):
        return "react"
    return "other"
