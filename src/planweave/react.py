"""ReAct mode: think, call one tool, read the result, repeat.  The baseline every speed claim
of the compiled mode is measured against, with the same tools, LLM and records.  With
`grounding`, a final answer stating numbers no observation gives is sent back once, as the
compiled mode's joiner's is; as there, an answer may quote an action's result as `${N}`."""

from __future__ import annotations

from . import prompts, replies
from .errors import BudgetExceeded, PlanError
from .events import EventBus
from .grounding import check
from .llm.base import LLMRequest
from .meter import MeteredLLM
from .parser import PlanParser, parse_call
from .scheduler import Scheduler
from .tools import ToolRegistry

__all__ = ["ReAct"]


class ReAct:
    def __init__(
        self,
        tools: ToolRegistry,
        *,
        max_steps: int = 10,
        max_tokens: int | None = 512,
        grammar: str | None = None,
        grounding: bool = False,
    ) -> None:
        self.tools = tools
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.grammar = grammar
        self.grounding = grounding

    def system_prompt(self) -> str:
        return prompts.react_system_prompt(self.tools)

    async def run(self, question: str, llm: MeteredLLM, scheduler: Scheduler, bus: EventBus) -> str:
        """Answer `question`, recording every action in `scheduler` like a compiled plan."""
        messages = prompts.question_messages(self.system_prompt(), question)
        parser = PlanParser(self.tools)
        redone = False  # an answer with numbers from nowhere is sent back once, as compiled's
        # Ids count the actions, as the prompt says: one that fails to parse takes its id too.
        actions = 0
        for _ in range(self.max_steps):
            request = LLMRequest(
                messages=messages,
                stop=["Observation:"],
                max_tokens=self.max_tokens,
                grammar=self.grammar,
                purpose="react",
            )
            output = await llm.complete(request)
            call = replies.parse_action(output)
            if call is None:
                records = list(scheduler.records.values())
                text = replies.parse_decision(output).text
                answer = replies.fill_answer(text, records, last_id=actions)
                if not self.grounding:
                    return answer
                found = check(answer, question, records)
                if found.ok:
                    return answer
                bus.emit(found.withdrawn(retry=not redone))
                if redone:
                    return found.fallback(records)
                redone = True
                note = found.note(react=True)
                messages = prompts.react_turn(messages, output, note)
                continue
            actions += 1
            task_id = actions
            try:
                task = parse_call(call, task_id, parser.known_ids)
                parser.add(task)
            except PlanError as err:
                observation = f"ERROR: {err.message}"
            else:
                async with scheduler.running():
                    scheduler.add(task)
                observation = scheduler.records[task.id].observation()
            messages = prompts.react_turn(messages, output, observation)
        raise BudgetExceeded(
            f"ReAct took {self.max_steps} steps without finishing", limit="react_steps"
        )
