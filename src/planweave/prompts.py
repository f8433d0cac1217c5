"""Every prompt planweave sends (the replies are read back in `replies`).

The planner, the joiner and ReAct mode build their messages here; they import this module and
not each other.  The text is load-bearing: recorded responses
are replayed by request fingerprint and the benchmark oracle recognises the heads, so a change
of one character is a change of behaviour.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

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
    "TaskOutcome",
    "format_observations",
    "joiner_messages",
    "one_shot_messages",
    "other_tools_examples",
    "planner_system_prompt",
    "purpose_of",
    "question_messages",
    "react_system_prompt",
    "react_turn",
    "repair_messages",
    "replan_messages",
    "runbook_messages",
    "step_messages",
    "synthesized_example",
]


class _PlannedTask(Protocol):
    @property
    def id(self) -> int: ...

    @property
    def tool(self) -> str: ...

    @property
    def thought(self) -> str | None: ...

    @property
    def condition(self) -> object: ...


class TaskOutcome(Protocol):
    """A task and what came of it, as the prompts read it (the scheduler's `TaskRecord`).
    `str(task)` is the task's plan line."""

    @property
    def task(self) -> _PlannedTask: ...

    @property
    def not_taken(self) -> bool: ...

    def observation(self, limit: int = 2000) -> str: ...


def format_observations(
    records: Sequence[TaskOutcome], limit: int = 2000, *, thoughts: bool = True
) -> str:
    """Each task of a plan with what came of it, as the joiner and the replanner read it."""
    lines = []
    for rec in records:
        if thoughts and rec.task.thought:
            lines.append(f"Thought: {rec.task.thought}")
        if rec.not_taken:
            # A branch not taken, without its arguments: the 1.5B joiner answered with the
            # message of a `notify(...)` that was never sent ("... is still valid for 6 days").
            task = rec.task
            cond = f" if {task.condition}" if task.condition is not None else ""
            lines.append(f"{task.id}. {task.tool}(...){cond}")
            lines.append(
                f"Observation: NOT DONE (this step did not happen): {rec.observation(limit)}"
            )
            continue
        lines.append(str(rec.task))
        lines.append(f"Observation: {rec.observation(limit)}")
    return "\n".join(lines)


def question_messages(system: str, question: str) -> list[Message]:
    """The opening of a planner or ReAct conversation."""
    return [Message("system", system), Message("user", f"Question: {question}")]


def one_shot_messages(system: str, example: tuple[str, str], question: str) -> list[Message]:
    """A planner conversation whose one worked example is an earlier question and its plan."""
    return few_shot_messages(system, [example], question)


def few_shot_messages(
    system: str, examples: Sequence[tuple[str, str]], question: str
) -> list[Message]:
    """A planner conversation whose earlier turns are worked examples, questions and plans."""
    messages = [Message("system", system)]
    for asked, plan in examples:
        messages += [Message("user", f"Question: {asked}"), Message("assistant", plan)]
    return [*messages, Message("user", f"Question: {question}")]


# The planner.

PLANNER_HEAD = (
    "You are a planner: you turn a question into a plan of tool calls that run in parallel."
)
REPAIR_HEAD = "Your plan was rejected at this line:"
REPEATED_REPAIR = (
    "You wrote this same line before and it was rejected for the same reason: write a different"
    " line, or end the plan with join() if no valid task can get what the line was for."
)

_RULES = """\
Rules:
- One task per line: `<id>. <tool>(<arguments>)`, optionally after a line `Thought: <reason>`.
- Arguments are literals or results of earlier tasks: $<id> is the result of task <id>,
  $<id>.field a part of it; inside a string write "${<id>}".
- $<id>[*] calls the tool once per item of task <id>'s list, all at once (the result is a list).
- Ids count up from {first_id}; a task may only use results of earlier tasks.
- Tasks that do not need each other's results run at the same time.
- Only the calls the question needs, each made once: no tool the question does not ask for.
{compute}- End with `<id>. join()` and {end}; the answer is written after the plan has run."""

# With plan answers on: the plan may end with its answer, and then no joiner call is made.
PLAN_ANSWER = "If the answer is results in set words"

_PLAN_ANSWER_RULE = (
    PLAN_ANSWER
    + """, end with `<id>. join("<the answer, ${<id>} where
  a result goes>")`: it is the answer (a rank task's ${<id>.largest} names the larger one).
  Not when other words depend on the results."""
)

# Worked examples for a tool set that has none of its own (an MCP server's, BFCL's), on tools
# it does not have: they show the form, and that a plan calls only the tools the question
# needs, one as often as the question asks.  Without them the 1.5B model called every tool
# offered (BFCL `multiple`, 15 seeded questions: 8 right without examples, 12 with these).
# Each plan opens by listing what the question asks for (the grammar then asks for that
# thought, `planner.opens_with_thought`): without it the 1.5B model stopped after the first
# request of a question that asks for several ("... After that, ... Also ...": BFCL
# parallel_multiple, most of its wrong counts).  Listing, it paired two lists where each item
# of one goes with each of the other ("A and B in 2018 and 2020"): the third example lists all.
_OTHER_TOOLS = {"weather": "city", "stock_price": "symbol", "translate": "text, to"}
_OTHER_TOOLS_EXAMPLES = (
    (
        "(These examples use other tools: "
        + ", ".join(f"{name}({params})" for name, params in _OTHER_TOOLS.items())
        + ".)\n"
    )
    + """\
Question: What is the weather in Oslo and in Lima?
Thought: It asks for 2 things: the weather in Oslo, the weather in Lima.
1. weather("Oslo")
2. weather("Lima")
3. join()
<END_OF_PLAN>

Question: How do you say "thank you" in French?
Thought: It asks for 1 thing: "thank you" in French.
1. translate("thank you", "French")
2. join()
<END_OF_PLAN>

Question: How do you say "yes" and "no" in Greek and in Thai?
Thought: It asks for 4 things: "yes" in Greek, "yes" in Thai, "no" in Greek, "no" in Thai.
1. translate("yes", "Greek")
2. translate("yes", "Thai")
3. translate("no", "Greek")
4. translate("no", "Thai")
5. join()
<END_OF_PLAN>

Question: Can you tell me the weather in Rome? After that, translate "good night" into \
Italian, and also give me the stock prices of IBM and SAP.
Thought: It asks for 4 things: the weather in Rome, "good night" in Italian, the price of \
IBM, the price of SAP.
1. weather("Rome")
2. translate("good night", "Italian")
3. stock_price("IBM")
4. stock_price("SAP")
5. join()
<END_OF_PLAN>"""
)


def other_tools_examples(tools: ToolRegistry) -> str:
    """Worked examples on tools other than `tools`' (see `_OTHER_TOOLS_EXAMPLES`); none when
    the registry has a tool of one of their names, which the model could then call as the
    example does."""
    if any(name in tools for name in _OTHER_TOOLS):
        return ""
    return _OTHER_TOOLS_EXAMPLES


_SAMPLES: dict[Any, str] = {str: '"text"', int: "3", float: "2.5", bool: "True"}


def synthesized_example(tools: ToolRegistry) -> str:
    """A worked example of the plan form built from the registry's own tools: two independent
    calls, one that uses their results, and join.  No longer shown by default (small models
    copy its shape); kept for the BFCL benchmark's comparison (`--examples synthesized`)."""
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
        '  is a calculator task (a count of a list\'s items: calculator("len(${<id>})"))'
    )
    if "convert_units" in tools:
        rule += ",\n  a change of units a convert_units task"
    if "rank" in tools:
        rule += ', "which is largest/smallest" a rank task'
    return rule + ": the answer only quotes them.\n"


def planner_system_prompt(
    tools: ToolRegistry,
    examples: str,
    first_id: int = 1,
    style: PromptStyle = "full",
    *,
    plan_answers: bool = False,
) -> str:
    """The planner's instructions: the tools, the plan language's rules and, in the full style,
    worked examples (the compact style leaves them out: they teach small models the form).
    With `plan_answers`, a plan whose answer is its results in set words may end with it."""
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
        rules + ("\n- " + _PLAN_ANSWER_RULE if plan_answers else ""),
    ]
    if style == "full" and examples:
        parts += ["", "Examples:", examples]
    return "\n".join(parts)


_RUNBOOK_RULES = """\
Write the runbook the user gives as one plan, to be run later many times without you.
- Each numbered step is a task (or a few), in the runbook's order where one needs another.
- A step done only under a condition in words ("if the disk is over 90%") ends with
  `if <condition>` on earlier results: `3. rotate_logs({host}) if ${1.disk_pct} > 90`.
  There is no else: the other side is its own task with the opposite condition.
  A condition may test a parameter too: `if "{region}" == "eu"`.
- A parameter the runbook writes <name> is written {name} in the plan, as a whole value
  (`disk_usage({host})`) or inside a string (`"{host} is full"`); never an example value.
  The parameters: {params}.
- `$N` and `${N.field}` are only the result of task N, an earlier task (task 1 has none to
  read); the field is one the tool's description names, never the tool's own name.  A tool
  that returns a number, a text or a bool (`-> int`, `-> str`, `-> bool`) has no fields: its
  condition reads the whole result, `if $2 > 30`, `if $2 == True`, `if $2 == "ok"`."""


def runbook_messages(
    tools: ToolRegistry, runbook: str, params: Sequence[str], *, plan_answers: bool = False
) -> list[Message]:
    """The planner's request to compile a runbook (`runbooks`): the tools and the plan
    language's rules, branches and parameters, then the runbook as the user's message."""
    system = planner_system_prompt(tools, "", style="compact", plan_answers=plan_answers)
    named = ", ".join("{" + p + "}" for p in params) or "none"
    rules = _RUNBOOK_RULES.replace("{params}", named)
    return question_messages(system + "\n\n" + rules, runbook)


_STEP_RULES = """\
You write the plan one step at a time.  Each time you see the runbook, the plan so far and one
step: reply with that step's one task only, numbered as asked, then <END_OF_STEP>.  A step done
only under a condition ends with its `if <condition>` on the results of earlier tasks."""


def step_messages(
    tools: ToolRegistry,
    runbook: str,
    params: Sequence[str],
    so_far: Sequence[str],
    number: int,
    step: str,
    first_id: int,
    *,
    plan_answers: bool = False,
    condition: str | None = None,
) -> list[Message]:
    """One step's request when a runbook is compiled step by step (`runbooks.steps`): the
    compile's system prompt and rules, then the runbook, the plan so far and the step (with
    the `condition` the compiler gives it, if any).  What comes before the plan so far is the
    same for every step of a runbook (a prefix cache keeps it)."""
    system = runbook_messages(tools, runbook, params, plan_answers=plan_answers)[0].content
    plan = "\n".join(so_far) if so_far else "(no task yet)"
    user = (
        f"Runbook:\n{runbook.strip()}\n\nThe plan so far:\n{plan}\n\n"
        f"Step {number}: {step}\nWrite task {first_id}, for step {number}."
    )
    if condition is not None:
        user += f"  It runs only `if {condition}`, written for you: write its call only."
    return [Message("system", system + "\n\n" + _STEP_RULES), Message("user", user)]


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
    in `messages` is replaced, not stacked.  When the earlier request rejected the same line
    for the same reason, this one says so: asked the same way, a greedy model writes the same
    line again."""
    plan_so_far = "\n".join(str(t) for t in accepted) or "(no task was accepted)"
    line = error.line.strip() if error.line else "(end of plan)"
    head = f"{REPAIR_HEAD} {line}\nError: {error.message}\n"
    earlier = [m for m in messages if m.content.startswith(REPAIR_HEAD)]
    if earlier and earlier[-1].content.startswith(head):
        head += REPEATED_REPAIR + "\n"
    fix = (
        head + f"Tasks accepted so far (they are running; do not repeat them):\n{plan_so_far}\n"
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
winner and give the difference or ratio.  A yes/no question is answered Yes or No first; a
"how many" question with the count."""

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
