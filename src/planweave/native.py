"""Native mode: the model's own parallel function calling (an endpoint's, or the embedded
model's in its chat template's tags, `llm.tool_calls`).  The question goes to the model
with the tools' JSON schemas; every tool call of a model turn runs at once, each a task of the
run's scheduler (journaled, recovered and recorded like a compiled plan's), and the results go
back as tool messages, turn after turn, until the model answers with text.  The second
baseline beside ReAct, with the same tools, LLM and records."""

from __future__ import annotations

import json
from collections.abc import Sequence

from .errors import ArgumentError, BudgetExceeded, PlanError, UnknownToolError
from .events import EventBus
from .llm.base import LLMRequest, Message, ToolCall, require_tool_calling
from .meter import MeteredLLM
from .plan import Task
from .prompts import question_messages
from .scheduler import Scheduler
from .tools import ToolRegistry

__all__ = ["NATIVE_SYSTEM", "Native"]

NATIVE_SYSTEM = (
    "You answer questions by calling the provided functions. Call all the functions whose "
    "results you need in one turn when no call needs another's result. When the results "
    "answer the question, reply with the answer."
)


class Native:
    """Native parallel function calling over `tools`, at most `max_turns` model turns."""

    def __init__(
        self, tools: ToolRegistry, *, max_turns: int = 10, max_tokens: int | None = None
    ) -> None:
        self.tools = tools
        self.max_turns = max_turns
        self.max_tokens = max_tokens

    async def run(self, question: str, llm: MeteredLLM, scheduler: Scheduler, bus: EventBus) -> str:
        """Answer `question`, each tool call the model asks for a task of `scheduler`."""
        require_tool_calling(llm.llm)
        messages = question_messages(NATIVE_SYSTEM, question)
        schemas = [tool.json_schema() for tool in self.tools.values()]
        for _ in range(self.max_turns):
            request = LLMRequest(
                messages=list(messages),
                max_tokens=self.max_tokens,
                tools=schemas,
                purpose="native",
            )
            calls: list[ToolCall] = []
            text = await llm.complete(request, calls=calls)
            if not calls:
                return text.strip()
            messages.append(Message("assistant", text, tuple(calls)))
            results = await self._turn(calls, scheduler)
            messages.extend(
                Message("tool", result, tool_call_id=call.id)
                for call, result in zip(calls, results, strict=True)
            )
        raise BudgetExceeded(
            f"native mode took {self.max_turns} turns without an answer", limit="react_steps"
        )

    async def _turn(self, calls: Sequence[ToolCall], scheduler: Scheduler) -> list[str]:
        """Run a turn's `calls` at once, each a task; what each gave (or its error), as the
        model reads it."""
        next_id = max(scheduler.records, default=0) + 1
        asked: list[Task | str] = []
        for call in calls:
            try:
                asked.append(self.task_of(call, next_id))
            except PlanError as err:
                asked.append(f"ERROR: {err.message}")
            else:
                next_id += 1
        async with scheduler.running():
            for task in asked:
                if isinstance(task, Task):
                    scheduler.add(task)
        return [a if isinstance(a, str) else scheduler.records[a.id].observation() for a in asked]

    def task_of(self, call: ToolCall, task_id: int) -> Task:
        """The task `call` asks for; a PlanError when it names no tool or its arguments are
        no JSON object the tool takes."""
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(self.tools) or "none"
            raise UnknownToolError(f"unknown tool {call.name!r} (tools: {known})")
        try:
            arguments = json.loads(call.arguments or "{}")
        except (ValueError, RecursionError) as exc:
            raise ArgumentError(
                f"the arguments of {tool.name} are not valid JSON ({exc}): send a JSON object"
            ) from None
        if not isinstance(arguments, dict):
            raise ArgumentError(f"the arguments of {tool.name} must be a JSON object")
        task = Task(task_id, tool.name, kwargs=arguments)
        try:
            task.bound = tool.bind((), arguments)
        except TypeError as exc:
            raise ArgumentError(f"{tool.signature_text()}: {exc}") from None
        for name, value in task.bound.items():
            try:
                tool.check_value(name, value)
            except ValueError as exc:
                raise ArgumentError(f"argument {name!r} of {tool.name}: {exc}") from None
        return task
