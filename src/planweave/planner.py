"""The planner: streams a plan into the scheduler as it is decoded, with bounded repairs.
Its prompts live in `prompts`."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from typing import Literal

from . import prompts
from .errors import LLMStreamError, PlanError, PlanSyntaxError
from .events import EventBus, PlanInvalid
from .llm.base import LLMRequest, Message, PromptStyle, estimate_tokens
from .meter import MeteredLLM
from .parser import PlanParser
from .plan import END_OF_PLAN, Task
from .recovery import classify
from .similar import SIMILAR, SIMILARITY, ExampleBank
from .tools import ToolRegistry

__all__ = ["Planner", "opens_with_thought", "planner_examples"]

_ANSWER_JOIN_RE = re.compile(r"^(\d+\.\s*)join\(.+\)[ \t]*$", re.M)
_QUESTION_RE = re.compile(r"^Question:.*\n(?!Question:)(.*)$", re.M)


def _shown(example: str, plan_answers: bool) -> str:
    """A worked example as the planner is shown it: its answer only where a plan may end with
    one (`plan_answers`), else its join bare."""
    return example if plan_answers else _ANSWER_JOIN_RE.sub(r"\1join()", example)


def planner_examples(tools: ToolRegistry, examples: str | None, *, plan_answers: bool) -> str:
    """The worked examples the planner shows: `examples`, else those written for these tools,
    else examples on other tools (a small model copies the shape of an example built from the
    registry's own tools onto tools it does not fit: on BFCL, one built from the first tools cut
    the planner's right plans from 37 of 60 to 13; shown none, it called every tool offered)."""
    if examples is None:
        examples = "\n\n".join(tools.usable_examples()) or prompts.other_tools_examples(tools)
    return _shown(examples, plan_answers)


def opens_with_thought(examples: str) -> bool:
    """Whether every worked example's plan opens with a `Thought:` line (then the planner's
    grammar asks for one too: a plan opens as its examples do)."""
    openings = _QUESTION_RE.findall(examples)
    return bool(openings) and all(line.startswith("Thought:") for line in openings)


class Planner:
    """Builds planner requests in the given prompt `style` and streams the plan into the
    scheduler as it is decoded.  With `plan_answers`, a plan may end with its answer
    (`join("... ${3} ...")`) where the answer is its results in set words."""

    def __init__(
        self,
        tools: ToolRegistry,
        *,
        examples: str | None = None,
        max_tokens: int | None = 1024,
        max_repairs: int = 2,
        grammar: str | None = None,
        style: PromptStyle = "full",
        plan_answers: bool = False,
        similar: int = SIMILAR,
    ) -> None:
        self.tools = tools
        self.similar = similar
        self.style: PromptStyle = style
        self.plan_answers = plan_answers
        self.max_tokens = max_tokens
        self.max_repairs = max_repairs
        self.grammar = grammar
        examples = planner_examples(tools, examples, plan_answers=plan_answers)
        self.examples = examples
        # The bank is read only when examples are chosen from it (off by default).
        bank = tools.usable_bank() if similar > 0 and style == "full" else []
        self.bank = ExampleBank([_shown(e, plan_answers) for e in bank])

    def system_prompt(self, first_id: int = 1) -> str:
        return prompts.planner_system_prompt(
            self.tools, self.examples, first_id, self.style, plan_answers=self.plan_answers
        )

    def messages(self, question: str, example: tuple[str, str] | None = None) -> list[Message]:
        """The planner's request for `question`; with `example` (a question and its plan, from
        the plan cache), that is the one worked example, after instructions without any.
        Without, the instructions' own examples, then as earlier turns those of the tools'
        bank worded most like `question` (`similar` at most)."""
        if example is None:
            chosen = self.bank.nearest(question, self.similar, SIMILARITY)
            return prompts.few_shot_messages(self.system_prompt(), chosen, question)
        system = prompts.planner_system_prompt(
            self.tools, "", 1, "compact", plan_answers=self.plan_answers
        )
        return prompts.one_shot_messages(system, example, question)

    def prompt_tokens(self, question: str, example: tuple[str, str] | None = None) -> int:
        """About how many tokens the planner's request for `question` takes."""
        return sum(4 + estimate_tokens(m.content) for m in self.messages(question, example))

    def replan_messages(
        self, question: str, records: Sequence[prompts.TaskOutcome], reason: str, next_id: int
    ) -> list[Message]:
        system = self.system_prompt(next_id)
        return prompts.replan_messages(system, question, records, reason, next_id)

    def request(
        self, messages: list[Message], purpose: Literal["planner", "repair"] = "planner"
    ) -> LLMRequest:
        return LLMRequest(
            messages=messages,
            stop=[END_OF_PLAN],
            max_tokens=self.max_tokens,
            grammar=self.grammar,
            purpose=purpose,
        )

    async def stream_plan(
        self,
        llm: MeteredLLM,
        messages: list[Message],
        parser: PlanParser,
        add: Callable[[Task], object],
        bus: EventBus,
        *,
        streaming: bool = True,
        continue_cut: bool = False,
        first: AsyncGenerator[str, None] | None = None,
    ) -> PlanError | None:
        """Stream one plan into `add`, task by task; repair invalid plans a bounded number of times.

        Returns None when a complete plan (ending in join) was accepted, or the last PlanError
        once repairs ran out: the error then becomes an observation for the joiner.  Tasks
        accepted before an error keep running; `add` never sees a task that failed validation.
        With `continue_cut`, a response that breaks off mid-plan is handled like an invalid
        plan: the planner is asked to continue after the last accepted task (same bound).
        `first` is a plan already streaming (the joiner's, after its Replan line): it is read
        instead of a planner call, and `messages` are what a repair continues from.
        """
        # A new round may restart its ids: nothing of it runs yet.
        parser.start_plan(renumber=True)
        accepted: list[Task] = []
        error: PlanError | None = None
        repairs = 0
        asked: set[str] = set()  # the repair requests sent, never twice

        def take(tasks: list[Task]) -> None:
            accepted.extend(tasks)
            if streaming:
                for task in tasks:
                    add(task)

        while True:
            try:
                if first is not None:
                    stream, first = first, None
                else:
                    stream = llm.stream(self.request(messages, "repair" if repairs else "planner"))
                await _read(stream, parser, take)
                break
            except (PlanError, LLMStreamError) as exc:
                # Lines accepted in the same chunk as the error, or before a missing join, are
                # valid: they run, and the repair prompt lists them.
                take(parser.drain())
                if isinstance(exc, LLMStreamError) and not continue_cut:
                    raise
                repair = self._repair(exc, messages, accepted, parser, bus, repairs, asked)
                if isinstance(repair, PlanError):
                    error = repair
                    break
                repairs += 1
                messages = repair
                parser.start_plan(renumber=not accepted)
        if not streaming:
            for task in accepted:
                add(task)
        return error

    def _repair(
        self,
        exc: PlanError | LLMStreamError,
        messages: list[Message],
        accepted: list[Task],
        parser: PlanParser,
        bus: EventBus,
        repairs: int,
        asked: set[str],
    ) -> list[Message] | PlanError:
        """The messages that ask for the plan repaired after `exc`, or the error to keep when
        no repair is left (the bound is reached, or the same request was already sent)."""
        err = _as_plan_error(exc)
        repair = prompts.repair_messages(messages, accepted, err, parser.last_id + 1)
        # The same request again would get the same reply from a greedy model.
        will_repair = repairs < self.max_repairs and repair[-1].content not in asked
        asked.add(repair[-1].content)
        bus.emit(
            PlanInvalid(
                error=err.report(),
                repair=repairs,
                will_repair=will_repair,
                category=classify(exc),
            )
        )
        return repair if will_repair else err


async def _read(
    stream: AsyncGenerator[str, None], parser: PlanParser, take: Callable[[list[Task]], None]
) -> None:
    """Feed one streamed plan to `parser` until it ends, handing its tasks to `take` as they
    are accepted; the stream is closed however it ends."""
    async with aclosing(stream):
        async for chunk in stream:
            take(parser.feed(chunk))
            if parser.done:
                break
    take(parser.close())


def _as_plan_error(exc: PlanError | LLMStreamError) -> PlanError:
    """A plan that broke off mid-stream is repaired like an invalid one."""
    if isinstance(exc, PlanError):
        return exc
    return PlanSyntaxError(f"the response broke off before the plan ended ({exc.message})")
