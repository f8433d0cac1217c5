"""The compiled mode: plan → run → join, replanning with what the earlier rounds found.

One round (stream a plan into the scheduler, let every task finish, ask the joiner) serves both
the run's top level and the sub-goal of a decomposed task.  With `join_replan`, a joiner that
replans writes the next plan in the same reply, and its tasks start while that reply streams:
a replan then costs no planner call.  With `grounding`, an answer stating numbers that no
result gives is withdrawn; while rounds are left the planner is asked, once, for what it lacked
(a lookup or a calculation no task made), else the joiner is asked once more (see
`grounding`).  With
`plan_answers`, a plan may end with its answer (`join("... ${3} ...")`): when every task of
its round finished and the answer fills in (and, with grounding, states no number the results
do not give), that is the answer and the joiner is not asked.  `react.py` is its
sibling.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass

from .errors import BudgetExceeded, JoinerError, LLMError, PlanError
from .events import AnswerDelta, EventBus, ReplanEvent
from .grounding import check, held_names
from .joiner import Joiner, fits_question, is_yes_no, plan_answer, says_yes_or_no_itself
from .llm.base import Message
from .meter import MeteredLLM
from .parser import PlanParser
from .planner import Planner
from .records import TaskRecord, TaskStatus
from .recovery import SubplanAnswer, classify
from .replies import AnswerStream, JoinDecision, JoinReplyStream, fill_answer
from .scheduler import Scheduler
from .tools import ToolRegistry

__all__ = ["Compiled"]


@dataclass(slots=True)
class _Retries:
    """The run's one retry of each kind for an ungrounded answer."""

    redone: bool = False  # the joiner was asked again
    replanned: bool = False  # the planner was asked for what the answer lacked


@dataclass(slots=True, frozen=True)
class _Decided:
    """How a round ends (see `Compiled._decide`)."""

    decision: JoinDecision  # the joiner's last decision
    planned: list[str] | None = None  # its reply carried the next plan, run: the joiner's notes
    replan: str | None = None  # why the planner is asked for what the answer lacked
    # The run's answer: the joiner's, filled in, or drawn from the results when the joiner's
    # is ungrounded and the retries are spent.
    answer: str | None = None


@dataclass(slots=True)
class Compiled:
    """Answers a question by compiling it into plans of parallel tool calls."""

    tools: ToolRegistry
    planner: Planner
    joiner: Joiner
    max_replans: int = 2
    streaming: bool = True
    continue_cut: bool = True
    join_replan: bool = False
    grounding: bool = False
    plan_answers: bool = False
    replan_failures: bool = True

    def with_replans(self, max_replans: int) -> Compiled:
        """This mode with a run's own replan budget (a named plan's run has none)."""
        if max_replans == self.max_replans:
            return self
        return dataclasses.replace(self, max_replans=max_replans)

    async def answer(
        self,
        question: str,
        llm: MeteredLLM,
        scheduler: Scheduler,
        bus: EventBus,
        *,
        plan: str | None = None,
        example: tuple[str, str] | None = None,
    ) -> str:
        """Plan, run and join until the joiner finishes, at most `max_replans` times again.
        `plan` is a first plan already written (the plan cache's): it runs without a planner
        call, and is repaired by the planner like any plan should it not be valid.  `example`
        (a question and its plan) is the planner's one worked example for the first plan."""
        parser = PlanParser(self.tools, plan_answers=self.plan_answers)
        messages: list[Message] | None = self.planner.messages(question, example)
        notes: list[str] = []
        retries = _Retries()
        for round_ in range(self.max_replans + 1):
            if messages is not None:
                scheduler.plan_round = round_
                first = _given(plan) if plan is not None and round_ == 0 else None
                notes = await self._plan_and_run(llm, messages, parser, scheduler, bus, first)
            # else the joiner's reply carried this round's plan, which has run.
            records = list(scheduler.records.values())
            last_round = round_ == self.max_replans
            failed = _new_failures(records, round_) if self.replan_failures else []
            if failed and not last_round:
                # A task failed and rounds are left: the planner gets the error, not the joiner.
                reason = _failure_reason(failed)
                messages = self._replan(question, records, reason, parser, bus, round_ + 1)
                continue
            answer = self._plan_answer(question, parser, records, round_, notes)
            if answer is not None:
                _deltas(bus)(answer)
                return answer
            decided = await self._decide(
                llm, question, records, notes, parser, scheduler, bus, round_, retries
            )
            if decided.answer is not None:
                return decided.answer
            if decided.replan is not None:
                messages = self._replan(question, records, decided.replan, parser, bus, round_ + 1)
                continue
            if last_round:
                # A directive where an answer must come: asked once more, told why.
                again = [*notes, _NO_MORE_PLANS]
                decision = await self._join(llm, question, records, True, again, bus)
                if decision.action == "finish":
                    return fill_answer(decision.text, records)
                break
            if decided.planned is not None:
                messages, notes = None, decided.planned
                continue
            reason = decided.decision.text
            messages = self._replan(question, records, reason, parser, bus, round_ + 1)
        raise BudgetExceeded(
            f"the joiner still asked to replan after {self.max_replans} replans", limit="replans"
        )

    async def _decide(
        self,
        llm: MeteredLLM,
        question: str,
        records: list[TaskRecord],
        notes: list[str],
        parser: PlanParser,
        scheduler: Scheduler,
        bus: EventBus,
        round_: int,
        retries: _Retries,
    ) -> _Decided:
        """Ask the joiner how round `round_` ends (with `join_replan`, its reply may carry the
        next plan) and, with `grounding`, check the answer it gives."""
        last_round = round_ == self.max_replans
        if self.join_replan and not last_round:
            decision, planned = await self._join_and_plan(
                llm, question, records, notes, parser, scheduler, bus, round_ + 1
            )
        else:
            decision = await self._join(llm, question, records, last_round, notes, bus)
            planned = None
        decided = _Decided(decision, planned)
        if self.grounding:
            decided = await self._ground(
                llm, question, records, notes, bus, decided, retries, last_round
            )
        decision = decided.decision
        if decided.answer is None and decided.replan is None and decision.action == "finish":
            decided = _Decided(decision, answer=fill_answer(decision.text, records))
        return decided

    async def _ground(
        self,
        llm: MeteredLLM,
        question: str,
        records: list[TaskRecord],
        notes: list[str],
        bus: EventBus,
        decided: _Decided,
        retries: _Retries,
        last_round: bool,
    ) -> _Decided:
        """Withdraw a finishing answer that states numbers no result gives, and say what comes
        next: the planner asked for what it lacked (once, while rounds are left), else the
        joiner asked again (once per run), else the answer drawn from the results."""
        decision, planned = decided.decision, decided.planned
        while decision.action == "finish":
            # The answer as the user gets it: a `${N}` it quotes is the result itself.
            found = check(fill_answer(decision.text, records), question, records)
            if found.ok:
                break
            # What the answer needed is in no result: a lookup or a calculation is
            # missing, which the planner plans (the joiner, asked again, re-types).
            plan_more = not last_round and not retries.replanned and found.missing_facts
            bus.emit(found.withdrawn(retry=plan_more or not retries.redone))
            if plan_more:
                retries.replanned = True
                return _Decided(decision, planned, replan=found.replan_reason())
            if retries.redone:
                return _Decided(decision, planned, answer=found.fallback(records))
            retries.redone, planned = True, None
            again = [*notes, found.note()]
            decision = await self._join(llm, question, records, last_round, again, bus)
        return _Decided(decision, planned)

    def _replan(
        self,
        question: str,
        records: list[TaskRecord],
        reason: str,
        parser: PlanParser,
        bus: EventBus,
        next_round: int,
    ) -> list[Message]:
        """The planner's messages for round `next_round`, planned again for `reason`."""
        bus.emit(ReplanEvent(reason=reason, plan_round=next_round))
        parser.remember_failures(records)
        return self.planner.replan_messages(question, records, reason, parser.last_id + 1)

    async def subgoal(
        self, goal: str, llm: MeteredLLM, scheduler: Scheduler, bus: EventBus
    ) -> SubplanAnswer:
        """One round for a decomposed task's sub-goal: its answer, or why there is none."""
        parser = PlanParser(self.tools, plan_answers=self.plan_answers)
        notes = await self._plan_and_run(llm, self.planner.messages(goal), parser, scheduler, bus)
        records = list(scheduler.records.values())
        answer = self._plan_answer(goal, parser, records, scheduler.plan_round, notes)
        text = answer or ""
        if answer is None:
            try:
                decision = await self._join(llm, goal, records, True, notes)
            except JoinerError as err:  # a reply with no answer: the sub-goal gave none
                text = err.message
            else:
                text = decision.text
                answer = text if decision.action == "finish" else None
        return SubplanAnswer(
            answer=answer,
            text=text,
            subplan=[
                {"call": r.task.call_text(), "status": r.status.value, "result": r.observation(200)}
                for r in records
            ],
        )

    def _plan_answer(
        self,
        question: str,
        parser: PlanParser,
        records: list[TaskRecord],
        plan_round: int,
        notes: list[str],
    ) -> str | None:
        """The answer the round's plan ended with, when it stands without the joiner."""
        join = parser.tasks.get(parser.last_id)
        if not self.plan_answers or notes or join is None or not join.is_join:
            return None
        if is_yes_no(question) and says_yes_or_no_itself(join):
            return None  # the plan guessed the answer: the joiner reads the results
        answer = plan_answer(join, records, plan_round)
        if answer is None or not fits_question(question, answer):
            return None
        if self.grounding and not check(answer, question, records).ok:
            return None
        return answer

    async def _plan_and_run(
        self,
        llm: MeteredLLM,
        messages: list[Message],
        parser: PlanParser,
        scheduler: Scheduler,
        bus: EventBus,
        first: AsyncGenerator[str, None] | None = None,
    ) -> list[str]:
        """Stream one plan into the scheduler and wait until every task of it has ended
        (`first`: a plan already written, read instead of asking the planner).
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
                    first=first,
                )
            except LLMError as err:
                # Let the tasks already running finish and be recorded, then fail.
                llm_error = err
        if llm_error is not None:
            raise llm_error
        return _notes(plan_error)

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
        notes = [*notes, *held_names(question, records)]
        messages = self.joiner.messages(question, records, last_round=last_round, notes=notes)
        return await self.joiner.decide(
            llm, messages, _deltas(bus), last_round=last_round, yes_no=is_yes_no(question)
        )

    async def _join_and_plan(
        self,
        llm: MeteredLLM,
        question: str,
        records: list[TaskRecord],
        notes: list[str],
        parser: PlanParser,
        scheduler: Scheduler,
        bus: EventBus,
        next_round: int,
    ) -> tuple[JoinDecision, list[str] | None]:
        """Ask the joiner, letting a Replan reply carry the next plan: its tasks start as its
        lines stream, and an invalid plan is repaired by the planner as any other.  Returns
        the decision and, when the reply carried a plan (which has then run), the notes for
        the next joiner; None when the planner must still be asked."""
        next_id = parser.last_id + 1
        notes = [*notes, *held_names(question, records)]
        messages = self.joiner.messages(
            question, records, last_round=False, notes=notes, next_id=next_id
        )
        reply = JoinReplyStream(bare=self.joiner.bare)
        answer = AnswerStream(bare=self.joiner.bare)  # the answer streams as it is decoded
        deltas = _deltas(bus)
        llm_error: LLMError | None = None
        plan_error: PlanError | None = None
        planned = False
        async with scheduler.running():
            try:
                request = self.joiner.request(messages, plan=True, yes_no=is_yes_no(question))
                async with aclosing(llm.stream(request)) as stream:
                    start = ""
                    async for chunk in stream:
                        start = reply.feed(chunk)
                        if reply.planning:
                            break
                        deltas(answer.feed(chunk))
                    if reply.planning:
                        planned = True
                        reason = reply.decision().text
                        bus.emit(ReplanEvent(reason=reason, plan_round=next_round))
                        scheduler.plan_round = next_round
                        parser.remember_failures(records)
                        plan_error = await self.planner.stream_plan(
                            llm,
                            self.planner.replan_messages(question, records, reason, next_id),
                            parser,
                            scheduler.add,
                            bus,
                            streaming=self.streaming,
                            continue_cut=self.continue_cut,
                            first=_rest(start, stream, reply),
                        )
            except LLMError as err:
                llm_error = err
        if llm_error is not None:
            raise llm_error
        if not planned:
            deltas(answer.close()[1])
        return reply.decision(), _notes(plan_error) if planned else None


async def _given(plan: str) -> AsyncGenerator[str, None]:
    yield plan


async def _rest(
    start: str, stream: AsyncGenerator[str, None], reply: JoinReplyStream
) -> AsyncGenerator[str, None]:
    """The plan part of a joiner's reply: what came with its first line, then the stream."""
    yield start
    async for chunk in stream:
        yield reply.feed(chunk)


def _deltas(bus: EventBus | None) -> Callable[[str], None]:
    """Where pieces of the answer go: the run's bus as `AnswerDelta`s, or nowhere."""

    def emit(text: str) -> None:
        if text and bus is not None:
            bus.emit(AnswerDelta(text=text))

    return emit


# Failures another plan can fix by writing other lines: the tool refused its arguments.  A
# crash, a timeout or a result too large is no better for being planned again.
_REPLANNABLE = frozenset({"tool.permanent", "tool.invalid_arguments"})
_NO_MORE_PLANS = (
    "Your reply asked for another plan, but no more plans can run: answer from the results "
    "above, and say plainly what could not be found."
)


def _new_failures(records: list[TaskRecord], plan_round: int) -> list[TaskRecord]:
    """The tasks of `plan_round` that failed in a way another plan can fix (not those skipped
    for a failed input), less the calls that already failed the same way in an earlier round:
    asked again, the planner would only repeat them."""
    failed = [
        r
        for r in records
        if r.plan_round == plan_round
        and r.status is TaskStatus.FAILED
        and not r.task.is_join
        and r.error is not None
        and classify(r.error) in _REPLANNABLE
        and not r.recovery  # the run's recovery rules already acted on it (decomposed, ...)
    ]
    earlier = {
        (r.task.call_text(), r.error.message if r.error else "")
        for r in records
        if r.plan_round < plan_round and r.status is TaskStatus.FAILED
    }
    new = [
        r for r in failed if (r.task.call_text(), r.error.message if r.error else "") not in earlier
    ]
    return new if new else []


def _failure_reason(failed: list[TaskRecord]) -> str:
    """Why the next round is planned: each failed task and its error, which says what to fix."""
    lines = [
        f"task {r.task.id} failed ({r.error.message if r.error else r.status.value})"
        for r in failed
    ]
    return (
        "; ".join(lines)
        + ". Plan again what those tasks were for: fix their arguments as the error says, or "
        "use another tool; reuse $<id> of the tasks that worked."
    )


def _notes(plan_error: PlanError | None) -> list[str]:
    return [f"the planner's last plan was invalid: {plan_error}"] if plan_error else []
