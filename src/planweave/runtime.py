"""The runtime: plan, schedule, join, replan; or ReAct.  The Python API lives here."""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from .errors import (
    BudgetExceeded,
    LLMError,
    PlanError,
    RunCancelled,
    RunError,
    TaskError,
    UserError,
)
from .events import (
    AnswerEvent,
    Event,
    EventBus,
    LLMCallFinished,
    ReplanEvent,
    RunFinished,
    RunResumed,
    RunStarted,
    timings,
)
from .executor import DEFAULT_TIMEOUT, Executor
from .grammar import joiner_grammar, plan_grammar, react_grammar
from .joiner import Joiner, parse_decision
from .llm.base import LLM
from .llm.meter import LLMUsage, MeteredLLM
from .parser import PlanParser
from .planner import Planner
from .react import ReAct
from .recovery import Budget, EscalationHandler, Recovery, SubplanAnswer, TaskRecoverer
from .scheduler import Recorded, Scheduler, TaskRecord
from .settings import Mode, RunSettings, load_tool_sets, make_llm, recovery_policy
from .store import Decisions, Journal, ResumeState, RunRecorder, encode, prepare
from .tools import ToolRegistry, ToolSource

__all__ = ["Mode", "RunFailed", "RunResult", "Runtime"]


@dataclass(slots=True)
class RunResult:
    """Everything a run produced.  `to_dict()` is the `planweave run --json` object."""

    run_id: str
    question: str
    mode: Mode
    status: Literal["finished", "failed", "cancelled"]
    answer: str | None
    tasks: list[TaskRecord]
    llm: LLMUsage
    wall_s: float
    replans: int = 0
    error: RunError | None = None
    events: list[Event] = field(default_factory=list, repr=False)

    @property
    def partial(self) -> str | None:
        """For a run without an answer: what it found before it stopped, as text (no LLM)."""
        if self.answer is not None:
            return None
        done = [r for r in self.tasks if r.status == "done"]
        if not done:
            return None
        return "\n".join(f"{r.task.call_text()} = {r.observation(500)}" for r in done)

    @property
    def results(self) -> dict[int, Any]:
        """Every finished task's result, by task id."""
        return {r.task.id: r.result for r in self.tasks if r.status == "done"}

    def timings(self) -> dict[str, float]:
        """Seconds spent planning, executing (at least one tool running) and joining."""
        return timings(
            ((e.purpose, e.duration) for e in self.events if isinstance(e, LLMCallFinished)),
            ((r.start, r.end) for r in self.tasks),
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.run_id,
            "question": self.question,
            "answer": self.answer,
            "mode": self.mode,
            "status": self.status,
            "tasks": [r.to_dict() for r in self.tasks],
            "llm": self.llm.to_dict(),
            "wall_s": round(self.wall_s, 6),
            "replans": self.replans,
            "timings": self.timings(),
        }
        if self.error is not None:
            data["error"] = self.error.report()
        if self.partial is not None:
            data["partial"] = self.partial
        return data


def _first(group: BaseExceptionGroup[RunError]) -> RunError:
    error: RunError | BaseExceptionGroup[RunError] = group
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


class RunFailed(RunError):
    """A run ended without an answer.  `result` holds every task that did finish; `cause` is
    the error that ended it."""

    def __init__(self, message: str, *, result: RunResult, cause: RunError) -> None:
        super().__init__(message, run_id=result.run_id)
        self.result = result
        self.cause = cause


class Runtime:
    """Answers questions with tools and an LLM.

    `mode="compiled"` plans a DAG of tool calls and runs each call the moment its inputs are
    ready, while the plan is still streaming; `mode="react"` is the one-call-per-turn baseline.
    """

    def __init__(
        self,
        tools: ToolSource,
        llm: LLM,
        *,
        mode: Mode = "compiled",
        max_replans: int = 2,
        max_repairs: int = 2,
        max_concurrency: int = 64,
        tool_timeout: float = DEFAULT_TIMEOUT,
        streaming: bool = True,
        react_max_steps: int = 10,
        examples: str | None = None,
        grammar: bool = True,
        subscribers: list[Callable[[Event], None]] | None = None,
        journal: Journal | str | Path | None = None,
        recovery: Recovery | None = None,
        budget: Budget | None = None,
        escalate: EscalationHandler | None = None,
    ) -> None:
        """`journal` (a Journal or a path) records every run durably so it can be resumed,
        with `self.settings` (RunSettings): what of this setup settings can describe.  Tools,
        and a recovery policy, given as Python objects cannot be; `from_settings` builds a
        runtime that settings describe whole.

        `recovery` maps failure classes to handling patterns (default: `Recovery.default()`,
        retries for transient failures; `Recovery.none()` turns recovery off); `budget` limits
        LLM calls, tokens, wall time and decomposition depth; `escalate` is the async function
        a person answers through when the `Escalate` pattern acts."""
        if mode not in ("compiled", "react"):
            raise UserError(f"mode must be 'compiled' or 'react', not {mode!r}")
        if max_replans < 0 or max_repairs < 0 or max_concurrency < 1:
            raise UserError("max_replans and max_repairs must be >= 0, max_concurrency >= 1")
        self.tools = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.llm = llm
        self.mode: Mode = mode
        self.max_replans = max_replans
        self.max_concurrency = max_concurrency
        self.tool_timeout = tool_timeout
        self.streaming = streaming
        # Grammars are plain text; backends that cannot constrain decoding ignore them.
        self.planner = Planner(
            self.tools,
            examples=examples,
            max_repairs=max_repairs,
            grammar=plan_grammar(self.tools) if grammar else None,
        )
        self.joiner = Joiner(grammar=joiner_grammar() if grammar else None)
        self.react = ReAct(
            self.tools,
            max_steps=react_max_steps,
            grammar=react_grammar(self.tools) if grammar else None,
        )
        self.subscribers = list(subscribers or ())
        self.recovery = recovery if recovery is not None else Recovery.default()
        self.budget = budget or Budget()
        self.escalate = escalate
        self.journal = Journal(journal) if isinstance(journal, str | Path) else journal
        self.settings = RunSettings(
            mode=mode,
            model=llm.model,
            grammar=grammar,
            tools=(),
            max_replans=max_replans,
            max_repairs=max_repairs,
            tool_timeout=tool_timeout,
            streaming=streaming,
            recovery="default" if recovery is None else "custom",
            budget=self.budget,
        )

    @classmethod
    def from_settings(
        cls,
        settings: RunSettings,
        *,
        llm: LLM | None = None,
        journal: Journal | str | Path | None = None,
        escalate: EscalationHandler | None = None,
        subscribers: list[Callable[[Event], None]] | None = None,
    ) -> Runtime:
        """The runtime `settings` describe: its tool sets loaded, its LLM built (unless `llm`
        is given; `make_llm` builds the embedded model unloaded), its recovery policy and
        budget.  `escalate` is how a person is asked when `settings.ask` is set; without it
        nobody is asked.  Its runs record `settings` (with the model's name filled in)."""
        tools = load_tool_sets(settings.tools, settings.files)
        llm = llm if llm is not None else make_llm(settings)
        runtime = cls(
            tools,
            llm,
            mode=settings.mode,
            max_replans=settings.max_replans,
            max_repairs=settings.max_repairs,
            tool_timeout=settings.tool_timeout,
            streaming=settings.streaming,
            grammar=settings.grammar,
            subscribers=subscribers,
            journal=journal,
            recovery=recovery_policy(settings, escalate=escalate),
            budget=settings.budget,
            escalate=escalate,
        )
        runtime.settings = dataclasses.replace(settings, model=settings.model or llm.model)
        return runtime

    # ------------------------------------------------------------------ public entry points

    def run(self, question: str, *, mode: Mode | None = None) -> RunResult:
        """Answer `question` (blocking).  Raises RunFailed when no answer could be had."""

        async def once() -> RunResult:
            try:
                return await self.arun(question, mode=mode)
            finally:
                # Each blocking call has its own event loop: close its connections with it.
                await self.llm.aclose()

        return anyio.run(once)

    async def arun(
        self,
        question: str,
        *,
        mode: Mode | None = None,
        subscribers: list[Callable[[Event], None]] | None = None,
        check: bool = True,
    ) -> RunResult:
        """Answer `question`.  On failure, raises RunFailed (holding every finished result), or
        with `check=False` returns the result with `status="failed"` and `error` set."""
        result = await self._run(
            question, mode or self.mode, [*self.subscribers, *(subscribers or ())]
        )
        if check and result.error is not None:
            raise RunFailed(str(result.error), result=result, cause=result.error)
        return result

    def resume(self, run_id: str, *, decisions: Decisions | None = None) -> RunResult:
        """Continue a journaled run (blocking).  See `aresume`."""

        async def once() -> RunResult:
            try:
                return await self.aresume(run_id, decisions=decisions)
            finally:
                await self.llm.aclose()

        return anyio.run(once)

    async def aresume(
        self,
        run_id: str,
        *,
        decisions: Decisions | None = None,
        subscribers: list[Callable[[Event], None]] | None = None,
        check: bool = True,
    ) -> RunResult:
        """Continue the journaled run `run_id` (a unique prefix will do) where it stopped.

        Recorded LLM responses are replayed, finished tasks keep their results, tasks that were
        in flight run again if their tool is free of side effects.  For a side-effecting task
        that was in flight, `decisions` says "rerun" or "fail" (a mapping by task id, or a
        function asked per task); without one the run is left paused and DecisionNeeded says
        which tasks need a decision.
        """
        if self.journal is None:
            raise UserError("resuming needs the journal: Runtime(..., journal=PATH)")
        state = prepare(self.journal, run_id, self.tools, decisions)
        mode: Mode = "react" if state.mode == "react" else "compiled"
        result = await self._run(
            state.question, mode, [*self.subscribers, *(subscribers or ())], resume=state
        )
        if check and result.error is not None:
            raise RunFailed(str(result.error), result=result, cause=result.error)
        return result

    async def events(self, question: str, *, mode: Mode | None = None) -> AsyncIterator[Event]:
        """Run `question` and yield its events as they happen; the last is `RunFinished`.

        A failed run ends with a `RunFinished` whose status is "failed"; nothing is raised.
        Leaving the loop early cancels the run and every tool in flight.
        """
        send, receive = anyio.create_memory_object_stream[Event](max_buffer_size=float("inf"))

        def forward(event: Event) -> None:
            # The consumer may have stopped listening; the run is then being cancelled.
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                send.send_nowait(event)

        async def drive() -> None:
            async with send:
                await self._run(question, mode or self.mode, [*self.subscribers, forward])

        async with anyio.create_task_group() as tg:
            tg.start_soon(drive)
            try:
                async with receive:
                    async for event in receive:
                        yield event
            except GeneratorExit:
                # The consumer stopped early (break, aclose): cancel the run, record it as
                # cancelled, and end without yielding again.
                tg.cancel_scope.cancel()

    # ------------------------------------------------------------------ the run itself

    async def _run(
        self,
        question: str,
        mode: Mode,
        subscribers: list[Callable[[Event], None]],
        resume: ResumeState | None = None,
    ) -> RunResult:
        run_id = resume.run_id if resume is not None else uuid.uuid4().hex[:12]
        offset = 0.0
        if self.journal is not None:
            if resume is None:
                self.journal.create_run(run_id, question, mode, self.settings.to_dict())
            else:
                offset = max(0.0, time.time() - resume.created)
            recorder = RunRecorder(
                self.journal, run_id, self.tools, session=resume.session if resume else 1
            )
            # The journal goes first: no view shows what has not been recorded.
            subscribers = [recorder, *subscribers]
        bus = EventBus(subscribers, offset=offset)
        llm = MeteredLLM(
            self.llm,
            bus,
            replay=resume.replay if resume else None,
            recovery=self.recovery,
            budget=self.budget,
        )
        scheduler = self._scheduler(
            llm,
            bus,
            run_id,
            Executor(default_timeout=self.tool_timeout),
            store=encode if self.journal is not None else None,
            recorded=resume.recorded if resume else None,
        )
        result = RunResult(run_id, question, mode, "failed", None, [], llm.usage, 0.0)
        requested = False

        async def watch_cancel(scope: anyio.CancelScope) -> None:
            # Another process asks for a stop through the journal (`planweave runs cancel`).
            nonlocal requested
            assert self.journal is not None
            while not self.journal.cancel_requested(run_id):  # noqa: ASYNC110 (another process)
                await anyio.sleep(0.5)
            requested = True
            scope.cancel()

        try:
            if resume is None:
                bus.emit(RunStarted(run_id=run_id, question=question, mode=mode))
            else:
                bus.emit(
                    RunResumed(
                        run_id=run_id,
                        session=resume.session,
                        reused=sorted(resume.recorded),
                        rerun=resume.rerun,
                    )
                )
            async with anyio.create_task_group() as tg:
                if self.journal is not None:
                    tg.start_soon(watch_cancel, tg.cancel_scope)
                # Wall time counts per session: a resumed run gets its budget afresh.
                wall_s = self.budget.wall_s
                with anyio.move_on_after(float("inf") if wall_s is None else wall_s) as wall:
                    if mode == "react":
                        result.answer = await self.react.run(question, llm, scheduler, bus)
                    else:
                        result.answer = await self._compiled(question, llm, scheduler, bus, result)
                    result.status = "finished"
                if wall.cancelled_caught:
                    raise BudgetExceeded(
                        f"the run's wall-time budget of {self.budget.wall_s:g} s is spent",
                        limit="wall_s",
                    )
                tg.cancel_scope.cancel()
        except RunError as err:
            err.run_id = run_id
            result.error = err
        except BaseExceptionGroup as group:
            # The task group wraps what its body raised; a run error stays a run error.
            errors, rest = group.split(RunError)
            if errors is None or rest is not None:
                raise
            result.error = _first(errors)
            result.error.run_id = run_id
        except anyio.get_cancelled_exc_class():
            result.status = "cancelled"
            self._finish(result, scheduler, bus)
            raise
        if requested:
            result.status = "cancelled"
            result.error = RunCancelled("cancelled on request", run_id=run_id)
        self._finish(result, scheduler, bus)
        return result

    @property
    def _continue_cut(self) -> bool:
        """Whether a plan that breaks off mid-stream is continued (a recovery rule says so)."""
        return bool(self.recovery.patterns("llm.stream_cut"))

    def _scheduler(
        self,
        llm: MeteredLLM,
        bus: EventBus,
        run_id: str,
        executor: Executor,
        *,
        depth: int = 0,
        store: Callable[[Any], Any] | None = None,
        recorded: Mapping[int, Recorded] | None = None,
    ) -> Scheduler:
        """A scheduler with the run's recovery; a sub-plan gets one of its own (`depth`), the
        run's top level also the journal's `store` and the `recorded` outcomes to reuse."""

        async def decompose(rec: TaskRecord, error: TaskError, depth: int) -> SubplanAnswer:
            return await self._decompose(llm, bus, run_id, executor, rec, error, depth)

        recoverer = TaskRecoverer(
            self.recovery,
            self.tools,
            executor,
            bus,
            decompose=decompose,
            escalate=self.escalate,
            run_id=run_id,
            depth=depth,
            max_depth=self.budget.decomposition_depth,
        )
        return Scheduler(
            self.tools,
            executor,
            bus,
            max_concurrency=self.max_concurrency,
            recoverer=recoverer,
            store=store,
            recorded=recorded,
        )

    async def _decompose(
        self,
        llm: MeteredLLM,
        bus: EventBus,
        run_id: str,
        executor: Executor,
        rec: TaskRecord,
        error: TaskError,
        depth: int,
    ) -> SubplanAnswer:
        """Hand a failed call to the planner as a sub-goal and run the sub-plan it writes; the
        recoverer splices the answer in (ADaPT: decompose only when needed)."""
        task = rec.task
        tool = self.tools[task.tool]
        goal = (
            f"Find what `{task.call_text()}` would return ({tool.description or tool.name}). "
            f"Calling {task.tool} that way failed: {error.message}. Reach the same result "
            "another way, with other tools or smaller calls, and answer with that result only."
        )
        # The sub-plan runs on its own scheduler (its task ids are its own); its LLM calls go
        # through the run's meter, so they are counted, budgeted and journaled.
        sub_bus = EventBus(offset=bus.now())
        sub = self._scheduler(llm, sub_bus, run_id, executor, depth=depth)
        parser = PlanParser(self.tools)
        async with sub.running():
            plan_error = await self.planner.stream_plan(
                llm,
                self.planner.messages(goal),
                parser,
                sub.add,
                sub_bus,
                streaming=self.streaming,
                continue_cut=self._continue_cut,
            )
        records = list(sub.records.values())
        notes = [f"the sub-plan was invalid: {plan_error}"] if plan_error else []
        output = await llm.complete(
            self.joiner.request(self.joiner.messages(goal, records, last_round=True, notes=notes)),
            "joiner",
        )
        decision = parse_decision(output)
        return SubplanAnswer(
            answer=decision.text if decision.action == "finish" else None,
            text=decision.text,
            subplan=[
                {"call": r.task.call_text(), "status": r.status.value, "result": r.observation(200)}
                for r in records
            ],
        )

    def _finish(self, result: RunResult, scheduler: Scheduler, bus: EventBus) -> None:
        result.tasks = list(scheduler.records.values())
        result.wall_s = bus.now()
        if result.answer is not None and result.status == "finished":
            bus.emit(AnswerEvent(answer=result.answer))
        bus.emit(
            RunFinished(
                status=result.status,
                answer=result.answer,
                error=None if result.error is None else result.error.report(),
            )
        )
        result.events = bus.events

    async def _compiled(
        self,
        question: str,
        llm: MeteredLLM,
        scheduler: Scheduler,
        bus: EventBus,
        result: RunResult,
    ) -> str:
        parser = PlanParser(self.tools)
        messages = self.planner.messages(question)
        for round_ in range(self.max_replans + 1):
            scheduler.plan_round = round_
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
                        continue_cut=self._continue_cut,
                    )
                except LLMError as err:
                    # Let the tasks already running finish and be recorded, then fail.
                    llm_error = err
            if llm_error is not None:
                raise llm_error
            records = list(scheduler.records.values())
            notes = [f"the planner's last plan was invalid: {plan_error}"] if plan_error else []
            last_round = round_ == self.max_replans
            output = await llm.complete(
                self.joiner.request(
                    self.joiner.messages(question, records, last_round=last_round, notes=notes)
                ),
                "joiner",
            )
            decision = parse_decision(output)
            if decision.action == "finish":
                return decision.text
            if last_round:
                break
            result.replans += 1
            bus.emit(ReplanEvent(reason=decision.text, plan_round=round_ + 1))
            messages = self.planner.replan_messages(
                question, records, decision.text, parser.last_id + 1
            )
        raise BudgetExceeded(
            f"the joiner still asked to replan after {self.max_replans} replans", limit="replans"
        )
