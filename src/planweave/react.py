"""ReAct mode: think, call one tool, read the result, repeat.  The baseline every speed claim
of the compiled mode is measured against, with the same tools, LLM and records."""

from __future__ import annotations

import re

from .errors import BudgetExceeded, PlanError
from .events import EventBus
from .joiner import parse_decision
from .llm.base import LLMRequest, Message
from .meter import MeteredLLM
from .parser import PlanParser, parse_call
from .scheduler import Scheduler
from .tools import ToolRegistry

__all__ = ["REACT_HEAD", "ReAct"]

REACT_HEAD = "You answer a question by calling tools one at a time and reading each result."

_FORMAT = """\
Each turn, reply in exactly this form, then stop and wait for the observation:
Thought: <what you need next>
Action: <tool>(<arguments>)

Arguments are literals (strings in quotes, numbers, lists); $<id> passes the result of an
earlier action, where ids count the actions from 1.  When you can answer, reply:
Thought: <brief reasoning>
Action: Finish(<the answer>)"""

_ACTION_RE = re.compile(r"Action\s*:\s*(.*)", re.S | re.I)


class ReAct:
    def __init__(
        self,
        tools: ToolRegistry,
        *,
        max_steps: int = 10,
        max_tokens: int | None = 512,
        grammar: str | None = None,
    ) -> None:
        self.tools = tools
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.grammar = grammar

    def system_prompt(self) -> str:
        prompt = f"{REACT_HEAD}\n\nTools:\n{self.tools.render()}\n\n{_FORMAT}"
        examples = self.tools.usable_examples("react")
        if examples:
            prompt += "\n\nExamples:\n" + "\n\n".join(examples)
        return prompt

    async def run(self, question: str, llm: MeteredLLM, scheduler: Scheduler, bus: EventBus) -> str:
        """Answer `question`, recording every action in `scheduler` like a compiled plan."""
        messages = [
            Message("system", self.system_prompt()),
            Message("user", f"Question: {question}"),
        ]
        parser = PlanParser(self.tools)
        for _ in range(self.max_steps):
            request = LLMRequest(
                messages=messages,
                stop=["Observation:"],
                max_tokens=self.max_tokens,
                grammar=self.grammar,
            )
            output = await llm.complete(request, "react")
            match = _ACTION_RE.search(output)
            action = match.group(1).strip() if match else ""
            if not action or re.match(r"Finish\s*\(", action, re.I):
                return parse_decision(output).text
            task_id = parser.last_id + 1
            try:
                task = parse_call(action.splitlines()[0], task_id, parser.known_ids)
                parser.add(task)
            except PlanError as err:
                observation = f"ERROR: {err.message}"
            else:
                async with scheduler.running():
                    scheduler.add(task)
                observation = scheduler.records[task.id].observation()
            messages = [
                *messages,
                Message("assistant", output.strip()),
                Message("user", f"Observation: {observation}"),
            ]
        raise BudgetExceeded(
            f"ReAct took {self.max_steps} steps without finishing", limit="react_steps"
        )
