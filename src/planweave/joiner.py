"""The joiner: after a plan has run, answer (bare, or with `Finish(...)`) or ask for a
`Replan(...)`.  Its prompt lives in `prompts`, the reader of its replies in `replies`."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import aclosing

from . import prompts
from .errors import ProjectionError, ToolArgumentError
from .grammar import yes_no_answers
from .llm.base import LLMRequest, Message, PromptStyle
from .meter import MeteredLLM
from .plan import END_OF_PLAN, Ref, Task, Template, resolve
from .prompts import TaskOutcome
from .records import TaskRecord, TaskStatus
from .replies import AnswerStream, JoinDecision, as_text, fill_answer, parse_decision, spoken
from .tools import ToolRegistry

# fill_answer and parse_decision are re-exported: the runtime reads the joiner's replies
# through them.
__all__ = ["Joiner", "fill_answer", "parse_decision", "plan_answer"]


def plan_answer(join: Task, records: Sequence[TaskRecord], plan_round: int) -> str | None:
    """The answer a plan ended with (`join("... ${3} ...")`), filled in from its results; None
    when the joiner must answer: the join carries none, a task of this round did not finish
    (but for a branch not taken), or the answer cannot be filled in (a projection that does
    not resolve, a placeholder such as `${<id>}` written as it stands)."""
    if join.answer is None:
        return None
    if any(
        r.status is not TaskStatus.DONE and not r.not_taken
        for r in records
        if r.plan_round == plan_round
    ):
        return None  # a branch not taken is no failure: an answer that does not quote it holds
    done = {r.task.id: r.result for r in records if r.status is TaskStatus.DONE}
    if any(dep not in done for dep in join.deps):
        return None
    answer = join.answer
    words = answer.parts if isinstance(answer, Template) else (answer,)
    if any(isinstance(w, str) and ("${" in w or "<the answer" in w) for w in words):
        return None  # the rule's placeholder copied (`join("${<id>}")`), not an answer
    if isinstance(answer, Template) and _repeats_a_fill(answer):
        return None
    if isinstance(answer, Template) and len(answer.parts) == 1:
        answer = answer.parts[0]  # `join("${3}")`: the result whole, as `join($3)`
    try:
        if isinstance(answer, Template):
            # Each result as a sentence says it: 1,234,567, not 1234567; a list by commas.
            values = [resolve(p, done) if isinstance(p, Ref) else p for p in answer.parts]
            if any(isinstance(v, dict) for v in values):
                return None  # a record quoted whole (a rank's, not its `.largest`): no words
            text = "".join(
                p if isinstance(p, str) else spoken(v)
                for p, v in zip(answer.parts, values, strict=True)
            )
        else:
            text = as_text(resolve(answer, done))
    except (ProjectionError, ToolArgumentError):
        return None
    return text if text.strip() else None


def _repeats_a_fill(answer: Template) -> bool:
    """Whether an answer fills in the same result twice (`"${6.largest} and ${6.largest}"`
    for "which two are largest"): a sentence has no reason to, and the 1.5B model does it when
    it means two different items, so the joiner answers from the results instead."""
    refs = [p for p in answer.parts if isinstance(p, Ref)]
    return len(refs) != len(set(refs))


_YES_NO_START = re.compile(
    r"^\s*(?:is|are|does|do|did|can|could|has|have|had|was|were|will|would|should)\b", re.I
)
_CHOICE = re.compile(r"\bor\b|\bwhich\b|\bwhat\b", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_HOW_MANY = re.compile(r"\bhow many\b", re.I)
_YES_NO_ANSWER = re.compile(r"^\W*(?:yes|no)\b", re.I)


def is_yes_no(question: str) -> bool:
    """Whether the question asks yes or no ("Are Lyon and Nice in the same country?"), not
    which of two ("Is Lyon or Nice larger?")."""
    # The question is its last sentence: "I'm in Medellin. Is this a country next to Brazil?"
    asked = _SENTENCE_END.split(question.strip())[-1]
    return bool(_YES_NO_START.match(asked)) and not _CHOICE.search(asked)


def says_yes_or_no_itself(join: Task) -> bool:
    """Whether a plan's answer writes Yes or No in its own words (`join("No, ${1} ...")`):
    written before any result was known, that is a guess; a result filled in first
    (`join("${3}: ...")` over a comparison's True or False) is not."""
    answer = join.answer
    first = answer.parts[0] if isinstance(answer, Template) and answer.parts else answer
    return isinstance(first, str) and bool(_YES_NO_ANSWER.match(first))


def fits_question(question: str, answer: str) -> bool:
    """Whether `answer` has the form the question asks for: a yes/no question ("Are Lyon and
    Nice in the same country?", not "Is Lyon or Nice larger?") answered Yes or No first, a
    "how many" question with a number.  A plan's fill-in that does not is left to the joiner
    (the 1.5B model ended a yes/no plan with a ranking's winner)."""
    if is_yes_no(question):
        return bool(_YES_NO_ANSWER.match(answer))
    if _HOW_MANY.search(question):
        return any(ch.isdigit() for ch in answer)
    return True


class Joiner:
    """Builds joiner requests in the given prompt `style` and reads the decision as it streams.
    With `plan_tools`, a joiner that replans writes the next plan in the same reply
    (`plan_max_tokens`, `plan_grammar` for those requests); without, it gives only the reason
    and the planner is asked separately.  With `plan_answers`, that plan may end with its
    answer (`join("... ${3} ...")`).  The compact style asks for the answer bare, as plain text
    (`bare_answers=False`: inside `Action: Finish(...)`, as before, for comparison)."""

    def __init__(
        self,
        *,
        max_tokens: int | None = 512,
        observation_limit: int = 2000,
        grammar: str | None = None,
        style: PromptStyle = "full",
        plan_tools: ToolRegistry | None = None,
        plan_max_tokens: int | None = 1024,
        plan_grammar: str | None = None,
        finish_grammar: str | None = None,
        plan_answers: bool = False,
        replan_thought: bool | None = None,
        bare_answers: bool | None = None,
    ) -> None:
        self.max_tokens = max_tokens
        self.observation_limit = observation_limit
        self.grammar = grammar
        self.style: PromptStyle = style
        self.plan_tools = plan_tools
        self.plan_max_tokens = plan_max_tokens
        self.plan_grammar = plan_grammar
        self.finish_grammar = finish_grammar
        self.plan_answers = plan_answers
        # A thought before a Replan: asked for in the full style, left out in the compact one.
        self.replan_thought = style == "full" if replan_thought is None else replan_thought
        # The answer without `Action: Finish(`: the compact style's (4 tokens fewer to decode).
        self.bare_answers = style == "compact" if bare_answers is None else bare_answers

    @property
    def bare(self) -> bool:
        """Whether replies are read for bare answers: the prompt asks for them."""
        return self.style == "compact" and self.bare_answers

    def messages(
        self,
        question: str,
        records: Sequence[TaskOutcome],
        *,
        last_round: bool,
        notes: Sequence[str] = (),
        next_id: int = 1,
    ) -> list[Message]:
        return prompts.joiner_messages(
            question,
            records,
            last_round=last_round,
            notes=notes,
            observation_limit=self.observation_limit,
            style=self.style,
            plan_tools=self.plan_tools,
            next_id=next_id,
            plan_answers=self.plan_answers,
            replan_thought=self.replan_thought,
            bare_answers=self.bare,
        )

    def request(
        self,
        messages: list[Message],
        *,
        plan: bool = False,
        last_round: bool = False,
        yes_no: bool = False,
    ) -> LLMRequest:
        """The request for `messages`; `plan`: its reply may carry a plan (then it stops at
        the plan's end); `last_round`: it may only answer (`finish_grammar`, where set);
        `yes_no`: the question is a yes/no one, so an answer starts with Yes or No."""
        grammar = self.plan_grammar if plan else self.grammar
        if last_round and self.finish_grammar is not None:
            grammar = self.finish_grammar
        if yes_no and grammar is not None:
            grammar = yes_no_answers(grammar)
        return LLMRequest(
            messages=messages,
            stop=[END_OF_PLAN] if plan else [],
            max_tokens=self.plan_max_tokens if plan else self.max_tokens,
            grammar=grammar,
            purpose="joiner",
        )

    async def decide(
        self,
        llm: MeteredLLM,
        messages: list[Message],
        answer: Callable[[str], object] | None = None,
        *,
        last_round: bool = False,
        yes_no: bool = False,
    ) -> JoinDecision:
        """Ask the joiner and read its decision; a finishing reply's answer goes to `answer`
        piece by piece as it is decoded (the pieces add up to the decision's text)."""
        reading = AnswerStream(bare=self.bare)
        request = self.request(messages, last_round=last_round, yes_no=yes_no)
        async with aclosing(llm.stream(request)) as stream:
            async for text in stream:
                piece = reading.feed(text)
                if piece and answer is not None:
                    answer(piece)
        decision, rest = reading.close()
        if rest and answer is not None:
            answer(rest)
        return decision
