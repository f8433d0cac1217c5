"""The planner: its prompts, and streaming a plan into the scheduler with bounded repairs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import aclosing
from typing import Any

from .errors import LLMStreamError, PlanError, PlanSyntaxError
from .events import EventBus, PlanInvalid, Purpose
from .llm.base import LLMRequest, Message
from .meter import MeteredLLM
from .parser import PlanParser
from .plan import END_OF_PLAN, Task
from .records import TaskRecord
from .recovery import classify
from .tools import Tool, ToolRegistry

__all__ = ["PLANNER_HEAD", "REPAIR_HEAD", "Planner", "format_observations"]

PLANNER_HEAD = (
    "You are a planner: you turn a question into a plan of tool calls that run in parallel."
)
REPAIR_HEAD = "Your plan was rejected at this line:"

_RULES = """\
Rules:
- One task per line: `<id>. <tool>(<arguments>)`, optionally after a line `Thought: <reason>`.
- Arguments are literals or results of earlier tasks: $<id> is the result of task <id>,
  $<id>.field a part of it; inside a string write "${<id>}".
- Ids count up from {first_id}; a task may only use results of earlier tasks.
- Tasks that do not need each other's results run at the same time.
- End with `<id>. join()` and {end}.  Do not compute the final answer in the plan: it is
  written after the plan has run."""

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


def format_observations(
    records: Sequence[TaskRecord], limit: int = 2000, *, thoughts: bool = True
) -> str:
    """Each task of a plan with what came of it, as the joiner and the replanner read it."""
    lines = []
    for rec in records:
        if thoughts and rec.task.thought:
            lines.append(f"Thought: {rec.task.thought}")
        lines.append(str(rec.task))
        lines.append(f"Observation: {rec.observation(limit)}")
    return "\n".join(lines)


class Planner:
    """Builds planner prompts and streams the plan into the scheduler as it is decoded."""

    def __init__(
        self,
        tools: ToolRegistry,
        *,
        examples: str | None = None,
        max_tokens: int | None = 1024,
        max_repairs: int = 2,
        grammar: str | None = None,
    ) -> None:
        self.tools = tools
        self.max_tokens = max_tokens
        self.max_repairs = max_repairs
        self.grammar = grammar
        if examples is None:
            usable = tools.usable_examples()
            examples = "\n\n".join(usable) if usable else synthesized_example(tools)
        self.examples = examples

    def system_prompt(self, first_id: int = 1) -> str:
        join_n = len(self.tools) + 1
        parts = [
            PLANNER_HEAD,
            "",
            "Tools:",
            self.tools.render(),
            f"{join_n}. join(): collects the results of the plan; always the last task.",
            "",
            _RULES.replace("{first_id}", str(first_id)).replace("{end}", END_OF_PLAN),
            "",
            "Examples:",
            self.examples,
        ]
        return "\n".join(parts)

    def messages(self, question: str) -> list[Message]:
        return [
            Message("system", self.system_prompt()),
            Message("user", f"Question: {question}"),
        ]

    def replan_messages(
        self, question: str, records: Sequence[TaskRecord], reason: str, next_id: int
    ) -> list[Message]:
        user = (
            f"Question: {question}\n\n"
            "A plan already ran; its tasks and results:\n"
            f"{format_observations(records)}\n\n"
            f"Why that was not enough: {reason}\n\n"
            f"Write a new plan for what is still missing.  Start at id {next_id}; you may use "
            "$<id> of the tasks above.  End with join() and " + END_OF_PLAN + "."
        )
        return [Message("system", self.system_prompt(next_id)), Message("user", user)]

    def repair_messages(
        self, messages: Sequence[Message], accepted: Sequence[Task], error: PlanError, next_id: int
    ) -> list[Message]:
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

    def request(self, messages: list[Message]) -> LLMRequest:
        return LLMRequest(
            messages=messages, stop=[END_OF_PLAN], max_tokens=self.max_tokens, grammar=self.grammar
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
    ) -> PlanError | None:
        """Stream one plan into `add`, task by task; repair invalid plans a bounded number of times.

        Returns None when a complete plan (ending in join) was accepted, or the last PlanError
        once repairs ran out: the error then becomes an observation for the joiner.  Tasks
        accepted before an error keep running; `add` never sees a task that failed validation.
        With `continue_cut`, a response that breaks off mid-plan is handled like an invalid
        plan: the planner is asked to continue after the last accepted task (same bound).
        """
        parser.start_plan()
        accepted: list[Task] = []
        error: PlanError | None = None
        repairs = 0

        def take(tasks: list[Task]) -> None:
            accepted.extend(tasks)
            if streaming:
                for task in tasks:
                    add(task)

        while True:
            try:
                purpose: Purpose = "repair" if repairs else "planner"
                async with aclosing(llm.stream(self.request(messages), purpose)) as stream:
                    async for chunk in stream:
                        take(parser.feed(chunk))
                        if parser.done:
                            break
                take(parser.close())
                break
            except (PlanError, LLMStreamError) as exc:
                if isinstance(exc, LLMStreamError):
                    if not continue_cut:
                        raise
                    err: PlanError = PlanSyntaxError(
                        f"the response broke off before the plan ended ({exc.message})"
                    )
                else:
                    err = exc
                will_repair = repairs < self.max_repairs
                bus.emit(
                    PlanInvalid(
                        error=err.report(),
                        repair=repairs,
                        will_repair=will_repair,
                        category=classify(exc),
                    )
                )
                if not will_repair:
                    error = err
                    break
                repairs += 1
                messages = self.repair_messages(messages, accepted, err, parser.last_id + 1)
                parser.start_plan()
        if not streaming:
            for task in accepted:
                add(task)
        return error
