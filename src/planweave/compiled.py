"""The compiled mode: plan → run → join, replanning with what the earlier rounds found.

One round (stream a plan into the scheduler, let every task finish, ask the joiner) serves both
the run's top level and the sub-goal of a decomposed task.  `react.py` is its sibling.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import BudgetExceeded, LLMError, PlanError
from .events import AnswerDelta, EventBus, ReplanEvent
from .joiner import Joiner
from .llm.base import Message
from .meter import MeteredLLM
from .parser import PlanParser
from .planner import Planner
from .prompts import JoinDecision
from .records import TaskRecord
from .recovery import SubplanAnswer
from .scheduler import Scheduler
from .tools import ToolRegistry

__all__ = ["Compiled"]


@dataclass(slots=True)
class Compiled:
    """Answers a question by compiling it into plans of parallel tool calls."""

    tools: ToolRegistry
    planner: Planner
    joiner: Joiner
    max_replans: int = 2
    streaming: bool = True
    continue_cut: bool = True

    async def answer(
        self, question: str, llm: MeteredLLM, scheduler: Scheduler, bus: EventBus
    ) -> str:
        """Plan, run and join until the joiner finishes, at most `max_replans` times again."""
        parser = PlanParser(self.tools)
        messages = self.planner.messages(question)
        for round_ in range(self.max_replans + 1):
            scheduler.plan_round = round_
            notes = await self._plan_and_run(llm, messages, parser, scheduler, bus)
            records = list(scheduler.records.values())
            last_round = round_ == self.max_replans
            decision = await self._join(llm, question, records, last_round, notes, bus)
            if decision.action == "finish":
                return decision.text
            if last_round:
                break
            bus.emit(ReplanEvent(reason=decision.text, plan_round=round_ + 1))
            messages = self.planner.replan_messages(
                question, records, decision.text, parser.last_id + 1
            )
        raise BudgetExceeded(
            f"the joiner still asked to replan after {self.max_replans} replans", limit="replans"
        )

    async def subgoal(
        self, goal: str, llm: MeteredLLM, scheduler: Scheduler, bus: EventBus
    ) -> SubplanAnswer:
        """One round for a decomposed task's sub-goal: its answer, or why there is none."""
        notes = await self._plan_and_run(
            llm, self.planner.messages(goal), PlanParser(self.tools), scheduler, bus
        )
        records = list(scheduler.records.values())
        decision = await self._join(llm, goal, records, True, notes)
        return SubplanAnswer(
            answer=decision.text if decision.action == "finish" else None,
            text=decision.text,
            subplan=[
                {"call": r.task.call_text(), "status": r.status.value, "result": r.observation(200)}
                for r in records
            ],
        )

    async def _plan_and_run(
        self,
        llm: MeteredLLM,
        messages: list[Message],
        parser: PlanParser,
        scheduler: Scheduler,
        bus: EventBus,
    ) -> list[str]:
        """Stream one plan into the scheduler and wait until every task of it has ended.
        Returns notes for the joiner (an invalid plan that could not be repaired)."""
        llm_error: LLMError | None = None
        plan_error: PlanError | None = None
        async with scheduler.running():
            try:
                plan_error = await self.planner.stream_plan(
                    llm,
                    messages,
                    parser,
                    scheduler.add,
                    bus,
                    streaming=self.streaming,
                    continue_cut=self.continue_cut,
                )
            except LLMError as err:
                # Let the tasks already running finish and be recorded, then fail.
                llm_error = err
        if llm_error is not None:
            raise llm_error
        return [f"the planner's last plan was invalid: {plan_error}"] if plan_error else []

    async def _join(
        self,
        llm: MeteredLLM,
        question: str,
        records: list[TaskRecord],
        last_round: bool,
        notes: list[str],
        bus: EventBus | None = None,
    ) -> JoinDecision:
        """The joiner's decision; with `bus` (the run's own question, not a sub-goal), the
        answer streams onto it as `AnswerDelta`s while it is decoded."""
        messages = self.joiner.messages(question, records, last_round=last_round, notes=notes)

        def answer(text: str) -> None:
            if bus is not None:
                bus.emit(AnswerDelta(text=text))

        return await self.joiner.decide(llm, messages, answer)
