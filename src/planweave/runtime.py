"""The runtime: plan, schedule, join, replan; or ReAct.  The Python API lives here."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from .admission import Admission
from .approval import APPROVE_MODES, ApproveMode, Gate, review
from .cache import PlanCache, resumed_start
from .compiled import Compiled
from .errors import (
    AwaitingApproval,
    BudgetExceeded,
    RunCancelled,
    RunError,
    TaskError,
    UserError,
)
from .events import (
    AnswerEvent,
    CacheAdapted,
    CacheHit,
    CacheMiss,
    Event,
    EventBus,
    LLMCallFinished,
    PlanAwaitingApproval,
    ReplanEvent,
    RunAdmitted,
    RunFinished,
    RunQueued,
    RunResumed,
    RunStarted,
    timings,
)
from .executor import DEFAULT_TIMEOUT, Executor
from .executors import Backends
from .fanout import FanOutTally
from .grammar import joiner_grammar, plan_grammar, react_grammar
from .joiner import Joiner
from .llm.base import LLM, PromptStyle
from .mcp_tools import mcp_servers, mcp_sessions
from .meter import MeteredLLM
from .plan import MAX_ARGUMENT_CHARS, MAX_FANOUT, MAX_FANOUT_TOTAL
from .planner import Planner
from .react import ReAct
from .records import LLMUsage, Recorded, RecordedItem, TaskRecord, partial_text, run_dict
from .recoverer import TaskRecoverer
from .recovery import Budget, EscalationHandler, Recovery, SubplanAnswer
from .redaction import encodable, redact
from .scheduler import Scheduler
from .settings import Mode, RunSettings, load_tool_sets, make_llm, recovery_policy
from .store import Decisions, Journal, ResumeState, RunRecorder, encode, prepare
from .tools import ExecutorName, ToolRegistry, ToolSource

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["Mode", "RunFailed", "RunResult", "Runtime"]


@dataclass(slots=True)
class RunResult:
    """Everything a run produced.  `to_dict()` is the `planweave run --json` object."""

    run_id: str
    question: str
    mode: Mode
    status: Literal["finished", "failed", "cancelled", "awaiting_approval"]
    answer: str | None
    tasks: list[TaskRecord]
    llm: LLMUsage
    wall_s: float
    replans: int = 0
    error: RunError | None = None
    cache: dict[str, Any] | None = None
    # The tasks waiting for approval ({id, tool, call, args, deps, side_effects}) when the run
    # paused for it (status "awaiting_approval").
    waiting: list[dict[str, Any]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list, repr=False)

    @property
    def partial(self) -> str | None:
        """For a run without an answer: what it found before it stopped, as text (no LLM)."""
        return None if self.answer is not None else partial_text(self.tasks)

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
        """The `planweave run --json` object (`planweave runs show --json` adds to it)."""
        return run_dict(
            id=self.run_id,
            question=self.question,
            answer=self.answer,
            mode=self.mode,
            status=self.status,
            tasks=[r.to_dict() for r in self.tasks],
            llm=self.llm.to_dict(),
            wall_s=self.wall_s,
            replans=self.replans,
            timings=self.timings(),
            error=None if self.error is None else self.error.report(),
            partial=self.partial,
            cache=self.cache,
        )


def _run_error(exc: RunError | BaseExceptionGroup[BaseException]) -> RunError:
    """The run error that ended a run; task groups wrap what their bodies raise, and a run
    error stays a run error.  Anything else (a bug) propagates, unwrapped when it is alone (or
    the same error each time: every element of a fan-out whose tool's package is missing)."""
    if isinstance(exc, RunError):
        return exc
    errors, rest = exc.split(RunError)
    if rest is not None:
        leaves = _leaves(rest)
        first = leaves[0]
        if all(type(leaf) is type(first) and str(leaf) == str(first) for leaf in leaves):
            raise first from exc
        raise exc
    assert errors is not None
    return _leaves(errors)[0]  # type: ignore[return-value]


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out


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
        max_argument_chars: int = MAX_ARGUMENT_CHARS,
        max_fanout: int = MAX_FANOUT,
        max_fanout_total: int = MAX_FANOUT_TOTAL,
        streaming: bool = True,
        react_max_steps: int = 10,
        examples: str | None = None,
        grammar: bool = True,
        prompt_style: PromptStyle | None = None,
        join_replan: bool | None = None,
        grounding: bool | None = None,
        plan_answers: bool | None = None,
        subscribers: list[Callable[[Event], None]] | None = None,
        journal: Journal | str | Path | None = None,
        cache: PlanCache | bool | None = None,
        recovery: Recovery | None = None,
        budget: Budget | None = None,
        escalate: EscalationHandler | None = None,
        tracing: TracerProvider | Literal[False] | None = None,
        approve: ApproveMode | None = None,
        executor: ExecutorName = "thread",
        ray_address: str | None = None,
    ) -> None:
        """`journal` (a Journal or a path) records every run durably so it can be resumed,
        with `self.settings` (RunSettings): what of this setup settings can describe.  Tools,
        and a recovery policy, given as Python objects cannot be; `from_settings` builds a
        runtime that settings describe whole.

        `recovery` maps failure classes to handling patterns (default: `Recovery.default()`,
        retries for transient failures; `Recovery.none()` turns recovery off); `budget` limits
        LLM calls, tokens, wall time and decomposition depth; `escalate` is the async function
        a person answers through when the `Escalate` pattern acts.  `max_argument_chars` bounds
        one argument once its references are filled in (a ToolArgumentError past it), and
        `max_fanout` the elements of one fan-out (`$N[*]`; a longer list fails the task), and
        `max_fanout_total` the elements of all the fan-outs of one run's plan together (every
        plan round; a fan-out that would pass it fails as a list too long does).

        `prompt_style` is how much the planner's and joiner's prompts spell out: "full" (worked
        examples, a thought before every answer: what the embedded model's accuracy was
        measured with) or "compact" (no examples, the answer first); by default the backend's
        own (`LLM.prompt_style`: compact for OpenAI-compatible endpoints).
        `join_replan`: a joiner that replans writes the next plan in the same reply (None: on
        for every backend but the embedded model, whose prompts stay as measured).
        `plan_answers`: a plan whose answer is its results in set words may end with it
        (`join("... ${3} ...")`), and then no joiner call is made, unless a task of the round
        did not finish (None: on; the embedded model's worked plans end with their answers).
        `grounding`: an answer stating numbers that no result and not the question gives is
        withdrawn, the joiner asked once more, then the run answers with what was found (None:
        on for the embedded model, whose answers need it, off for endpoints).

        `cache` is the plan cache: a compiled run whose question reads as a template made from
        an earlier run (other names or numbers in the same words) runs that plan without a
        planner call, and a run that went well makes a template.  None or True: a `PlanCache`
        in the journal's file (none without a journal); False: off; or a `PlanCache`.

        `tracing`: OpenTelemetry spans of each run (see `planweave.otel`) go to this tracer
        provider; None (the default): to the global one when one is set; False: none.

        `approve` makes a compiled run's tasks wait for a person's yes (`approve`, `reject`;
        `arun(approve=)` for one run): "plan" pauses the run once its first plan is written,
        before any task starts; "side_effects" runs every task but those of tools marked
        `side_effects=True`, which wait.  Needs the journal, where the pause is kept.

        `executor` is where sync tools run (`planweave.executors`): "thread" (threads of this
        process), "process" (a pool of worker processes) or "ray" (Ray tasks on the cluster at
        `ray_address`, env RAY_ADDRESS, else a local Ray); a tool that cannot run there raises
        UserError now.  `close()` stops the workers."""
        if mode not in ("compiled", "react"):
            raise UserError(f"mode must be 'compiled' or 'react', not {mode!r}")
        if prompt_style not in (None, "full", "compact"):
            raise UserError(f"prompt_style must be 'full' or 'compact', not {prompt_style!r}")
        _check_approve(approve, mode, journal)
        if max_replans < 0 or max_repairs < 0 or max_concurrency < 1 or max_argument_chars < 1:
            raise UserError(
                "max_replans and max_repairs must be >= 0, max_concurrency and "
                "max_argument_chars >= 1"
            )
        self.tools = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.backends = Backends(executor, ray_address=ray_address)
        self.backends.check(self.tools.values())
        self.llm = llm
        self.mode: Mode = mode
        self.max_replans = max_replans
        self.max_concurrency = max_concurrency
        self.tool_timeout = tool_timeout
        self.max_argument_chars = max_argument_chars
        if max_fanout < 0 or max_fanout_total < 0:
            raise UserError(
                f"max_fanout and max_fanout_total must be >= 0, not {max_fanout} and "
                f"{max_fanout_total}"
            )
        self.max_fanout = max_fanout
        self.max_fanout_total = max_fanout_total
        self.streaming = streaming
        self.join_replan = not llm.embedded if join_replan is None else join_replan
        self.grounding = llm.embedded if grounding is None else grounding
        self.plan_answers = True if plan_answers is None else plan_answers
        self.subscribers = list(subscribers or ())
        self.recovery = recovery if recovery is not None else Recovery.default()
        self.budget = budget or Budget()
        self.escalate = escalate
        self.tracing = tracing
        self.approve_mode: ApproveMode | None = approve
        self.prompt_style: PromptStyle = prompt_style or llm.prompt_style
        self._modes(examples, max_repairs, react_max_steps, grammar)
        self.journal = Journal(journal) if isinstance(journal, str | Path) else journal
        self.cache = _plan_cache(cache, self.journal)
        self.settings = RunSettings(
            mode=mode,
            model=llm.model,
            grammar=grammar,
            prompt_style=self.prompt_style,
            tools=(),
            max_replans=max_replans,
            max_repairs=max_repairs,
            tool_timeout=tool_timeout,
            max_argument_chars=max_argument_chars,
            max_fanout=max_fanout,
            max_fanout_total=max_fanout_total,
            streaming=streaming,
            join_replan=self.join_replan,
            grounding=self.grounding,
            plan_answers=self.plan_answers,
            cache=self.cache is not None,
            cache_adapt=self.cache is not None and self.cache.adapt,
            recovery="default" if recovery is None else "custom",
            budget=self.budget,
            approve=approve,
            executor=executor,
            ray_address=ray_address,
        )

    async def warm(self) -> None:
        """Do now what the first run would otherwise do once (the LLM client's set-up, the
        trace module's import): a server calls this before it answers, so that no request
        waits behind it."""
        await self.llm.warm()
        self._trace()

    def close(self) -> None:
        """Stop the executor's worker processes (and a local Ray it started)."""
        self.backends.close()

    def _modes(
        self, examples: str | None, max_repairs: int, react_max_steps: int, grammar: bool
    ) -> None:
        """The compiled mode (planner, joiner) and the ReAct mode over this runtime's tools."""
        # Grammars are plain text; backends that cannot constrain decoding ignore them.
        self.planner = Planner(
            self.tools,
            examples=examples,
            max_repairs=max_repairs,
            grammar=plan_grammar(self.tools, answers=self.plan_answers) if grammar else None,
            style=self.prompt_style,
            answers=self.plan_answers,
        )
        self.joiner = Joiner(
            grammar=joiner_grammar(self.prompt_style) if grammar else None,
            style=self.prompt_style,
            plan_tools=self.tools if self.join_replan else None,
            plan_grammar=(
                joiner_grammar(self.prompt_style, self.tools, answers=self.plan_answers)
                if grammar and self.join_replan
                else None
            ),
            finish_grammar=(
                joiner_grammar(self.prompt_style, finish_only=True) if grammar else None
            ),
            plan_answers=self.plan_answers,
        )
        self.react = ReAct(
            self.tools,
            max_steps=react_max_steps,
            grammar=react_grammar(self.tools) if grammar else None,
            grounding=self.grounding,
        )
        self.compiled = Compiled(
            self.tools,
            self.planner,
            self.joiner,
            max_replans=self.max_replans,
            streaming=self.streaming,
            join_replan=self.join_replan,
            grounding=self.grounding,
            plan_answers=self.plan_answers,
            # A plan that breaks off mid-stream is continued when a recovery rule says so.
            continue_cut=bool(self.recovery.patterns("llm.stream_cut")),
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
        tracing: TracerProvider | Literal[False] | None = None,
    ) -> Runtime:
        """The runtime `settings` describe: its tool sets loaded, its LLM built (unless `llm`
        is given; `make_llm` builds the embedded model unloaded), its recovery policy and
        budget.  `escalate` is how a person is asked when `settings.ask` is set; without it
        nobody is asked.  Its runs record `settings` (with the model's name filled in)."""
        tools = load_tool_sets(
            settings.tools,
            settings.files,
            mcp=settings.mcp,
            mcp_timeout=settings.mcp_open_timeout(),
            mcp_max_tools=settings.mcp_max_tools,
        )
        llm = llm if llm is not None else make_llm(settings)
        if isinstance(journal, str | Path):
            journal = Journal(journal)
        cache: PlanCache | bool | None = None if settings.cache else False
        if settings.cache and settings.cache_adapt and journal is not None:
            cache = PlanCache(journal, adapt=True)
        runtime = cls(
            tools,
            llm,
            mode=settings.mode,
            max_replans=settings.max_replans,
            max_repairs=settings.max_repairs,
            tool_timeout=settings.tool_timeout,
            max_argument_chars=settings.max_argument_chars,
            max_fanout=settings.max_fanout,
            max_fanout_total=settings.max_fanout_total,
            streaming=settings.streaming,
            grammar=settings.grammar,
            prompt_style=settings.prompt_style,
            join_replan=settings.join_replan,
            grounding=settings.grounding,
            plan_answers=settings.plan_answers,
            subscribers=subscribers,
            journal=journal,
            cache=cache,
            recovery=recovery_policy(settings, escalate=escalate),
            budget=settings.budget,
            escalate=escalate,
            tracing=tracing,
            approve=settings.approve,
            executor=settings.executor,
            ray_address=settings.ray_address,
        )
        runtime.settings = dataclasses.replace(
            settings,
            model=settings.model or llm.model,
            prompt_style=runtime.prompt_style,
            join_replan=runtime.join_replan,
            grounding=runtime.grounding,
            plan_answers=runtime.plan_answers,
        )
        return runtime

    # ------------------------------------------------------------------ public entry points

    def run(
        self, question: str, *, mode: Mode | None = None, approve: ApproveMode | None = None
    ) -> RunResult:
        """Answer `question` (blocking).  Raises RunFailed when no answer could be had."""
        _not_in_async("run", "arun")

        async def once() -> RunResult:
            try:
                return await self.arun(question, mode=mode, approve=approve)
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
        approve: ApproveMode | None = None,
        admission: Admission | None = None,
    ) -> RunResult:
        """Answer `question`.  On failure, raises RunFailed (holding every finished result), or
        with `check=False` returns the result with `status="failed"` and `error` set.
        `approve` (default: the runtime's) pauses the run for a person's yes: the result then
        has `status="awaiting_approval"` and the `waiting` tasks (see `approve`).
        `admission`: once recorded, the run waits for its turn there (`RunQueued`)."""
        mode = mode or self.mode
        approve = approve or self.approve_mode
        _check_approve(approve, mode, self.journal)
        result = await self._run(
            question,
            mode,
            [*self.subscribers, *(subscribers or ())],
            approve=approve,
            admission=admission,
        )
        if check and result.error is not None:
            raise RunFailed(str(result.error), result=result, cause=result.error)
        return result

    def resume(self, run_id: str, *, decisions: Decisions | None = None) -> RunResult:
        """Continue a journaled run (blocking).  See `aresume`."""
        _not_in_async("resume", "aresume")

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
        admission: Admission | None = None,
    ) -> RunResult:
        """Continue the journaled run `run_id` (a unique prefix will do) where it stopped.

        Recorded LLM responses are replayed, finished tasks keep their results, tasks that were
        in flight run again if their tool is free of side effects.  For a side-effecting task
        that was in flight, `decisions` says "rerun" or "fail" (a mapping by task id, or a
        function asked per task); without one the run is left paused and DecisionNeeded says
        which tasks need a decision.  `admission`: as for `arun`.
        """
        state = prepare(self._journal("resuming"), run_id, self.tools, decisions)
        mode: Mode = "react" if state.mode == "react" else "compiled"
        result = await self._run(
            state.question,
            mode,
            [*self.subscribers, *(subscribers or ())],
            resume=state,
            admission=admission,
        )
        if check and result.error is not None:
            raise RunFailed(str(result.error), result=result, cause=result.error)
        return result

    def approve(
        self,
        run_id: str,
        *,
        edits: Mapping[int, Mapping[str, Any]] | None = None,
        drop: Iterable[int] = (),
    ) -> RunResult:
        """Approve the tasks run `run_id` waits for and run it on (blocking).  See `aapprove`."""
        _not_in_async("approve", "aapprove")

        async def once() -> RunResult:
            try:
                return await self.aapprove(run_id, edits=edits, drop=drop)
            finally:
                await self.llm.aclose()

        return anyio.run(once)

    async def aapprove(
        self,
        run_id: str,
        *,
        edits: Mapping[int, Mapping[str, Any]] | None = None,
        drop: Iterable[int] = (),
        subscribers: list[Callable[[Event], None]] | None = None,
        check: bool = True,
        admission: Admission | None = None,
    ) -> RunResult:
        """Approve the tasks the journaled run `run_id` waits for, and run it on (a resumed
        session: it reads the same plan again, with the approval applied).

        `edits` gives new arguments (by name, in the JSON plan form: `"$1"` is task 1's
        result) for some waiting tasks, by task id; `drop` leaves waiting tasks out (a task
        that uses a dropped one's result must be dropped too).  Raises InvalidApproval when
        the edits do not make a valid plan, ResumeError when the run does not await approval.
        `admission`: as for `arun`.
        """
        journal = self._journal("approving")
        waiting = journal.awaiting(run_id)
        calls = {t.id: t.call for t in journal.recorded_tasks(waiting["id"]).values()}
        approval = review(
            waiting["tasks"], waiting["planned"], self.tools, edits=edits, drop=drop, calls=calls
        )
        state = prepare(journal, waiting["id"], self.tools, approving=True)
        state.approvals.append(
            {"approved": approval.approved, "edits": approval.edits, "dropped": approval.dropped}
        )
        state.approved_now = approval
        result = await self._run(
            state.question,
            "compiled",
            [*self.subscribers, *(subscribers or ())],
            resume=state,
            admission=admission,
        )
        if check and result.error is not None:
            raise RunFailed(str(result.error), result=result, cause=result.error)
        return result

    def reject(self, run_id: str, reason: str = "") -> dict[str, Any]:
        """End the journaled run `run_id`, which awaits approval, without running its waiting
        tasks: it fails with `PlanRejected` (`reason` in its message).  Returns the error."""
        return self._journal("rejecting").reject(run_id, reason or "no reason given")

    def _journal(self, doing: str) -> Journal:
        if self.journal is None:
            raise UserError(f"{doing} a run needs the journal: Runtime(..., journal=PATH)")
        return self.journal

    @asynccontextmanager
    async def events(
        self, question: str, *, mode: Mode | None = None
    ) -> AsyncIterator[AsyncIterator[Event]]:
        """Run `question`; the context gives its events as they happen, the last `RunFinished`.

            async with runtime.events("...") as events:
                async for event in events:
                    ...

        A failed run ends with a `RunFinished` whose status is "failed"; nothing is raised.
        Leaving the block before `RunFinished` (break, an exception) cancels the run and every
        tool in flight; the block does not end before the run has.
        """
        send, receive = anyio.create_memory_object_stream[Event](max_buffer_size=float("inf"))
        ended = anyio.Event()

        def forward(event: Event) -> None:
            if isinstance(event, RunFinished):
                ended.set()
            # The consumer may have stopped listening; the run is then being cancelled.
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                send.send_nowait(event)

        async def drive() -> None:
            async with send:
                await self._run(question, mode or self.mode, [*self.subscribers, forward])

        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(drive)
            try:
                async with receive:
                    yield receive
            except Exception as exc:
                # The consumer's own error: raised as it is once the run has been cancelled,
                # not wrapped in the task group's exception group.
                failure = exc
            finally:
                if not ended.is_set():
                    tg.cancel_scope.cancel()
        if failure is not None:
            raise failure

    # ------------------------------------------------------------------ the run itself

    async def _run(
        self,
        question: str,
        mode: Mode,
        subscribers: list[Callable[[Event], None]],
        resume: ResumeState | None = None,
        approve: ApproveMode | None = None,
        admission: Admission | None = None,
    ) -> RunResult:
        """One session of a run: open its record, wait for its turn (`admission`), answer
        within the budget, close the record (or leave it paused for approval)."""
        question = encodable(question)  # argv may hold undecodable bytes as surrogates
        run_id = resume.run_id if resume is not None else uuid.uuid4().hex[:12]
        recorder = self._recorder(run_id, question, mode, resume, approve)
        offset = resume.elapsed if resume is not None else 0.0
        # The journal goes first: no view shows what has not been recorded.  The plan cache
        # learns from new compiled runs (a resumed one was judged, or not, when it started).
        learner = (
            [self.cache.learner(self.tools)]
            if self.cache is not None and mode == "compiled" and resume is None
            else []
        )
        trace = self._trace()
        bus = EventBus(
            [*([recorder] if recorder else []), *trace, *subscribers, *learner], offset=offset
        )
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
            Executor(
                default_timeout=self.tool_timeout,
                max_argument_chars=self.max_argument_chars,
                backends=self.backends,
            ),
            store=encode if recorder is not None else None,
            recorded=resume.recorded if resume else None,
            items=resume.items if resume else None,
            gate=self._gate(mode, approve, resume),
        )
        result = RunResult(run_id, question, mode, "failed", None, [], llm.usage, 0.0)
        result.cache = resume.cache if resume is not None else None
        for event in _opening(run_id, question, mode, resume):
            bus.emit(event)
        try:
            # llm.serving(): the `llm` tool's calls go through the run's meter.
            async with (
                _cancellable(recorder) as cancelled,
                _turn(admission, run_id, bus),
                self._mcp_sessions(),
            ):
                with llm.serving():
                    # Known secrets masked: a plan's answer fills in results as they are.
                    result.answer = redact(
                        await self._within_budget(
                            self._answer(mode, question, llm, scheduler, bus, resume)
                        )
                    )
                result.status = "finished"
            if cancelled():
                result.status = "cancelled"
                result.error = RunCancelled("cancelled on request", run_id=run_id)
        except anyio.get_cancelled_exc_class():
            result.status = "cancelled"
            self._finish(result, scheduler, bus)
            raise
        except (RunError, BaseExceptionGroup) as exc:
            result.error = self._run_error(exc, result, scheduler, bus)
            result.error.run_id = run_id
            if isinstance(result.error, AwaitingApproval) and scheduler.gate is not None:
                return self._pause(result, scheduler, bus, result.error)
        except Exception as exc:
            # A bug (in planweave or in a user's tool or pattern) propagates, but the run's
            # record is closed first: every finished result stays recorded.
            self._finish(result, scheduler, bus, crash=exc)
            raise
        self._finish(result, scheduler, bus)
        return result

    def _trace(self) -> list[Callable[[Event], None]]:
        """This run's OpenTelemetry spans, when traces are on (a subscriber per run: events
        carry no run id)."""
        # No provider can have been set where nobody imported OpenTelemetry.
        if self.tracing is False or (
            self.tracing is None and "opentelemetry.trace" not in sys.modules
        ):
            return []
        from .otel import RunTrace, tracer

        found = tracer(self.tracing)
        return [] if found is None else [RunTrace(found, model=self.llm.model)]

    def _mcp_sessions(self) -> contextlib.AbstractAsyncContextManager[object]:
        """The run's MCP sessions (one per server, opened at its first call, closed when the
        run ends) when its tools include MCP tools."""
        return mcp_sessions() if mcp_servers(self.tools.values()) else contextlib.nullcontext()

    def _run_error(
        self,
        exc: RunError | BaseExceptionGroup[BaseException],
        result: RunResult,
        scheduler: Scheduler,
        bus: EventBus,
    ) -> RunError:
        """The run error that ended a run (task groups wrap what their bodies raise); anything
        else is a bug, raised unwrapped once the run's record is closed."""
        try:
            return _run_error(exc)
        except BaseException as bug:
            self._finish(result, scheduler, bus, crash=bug)
            raise

    def _recorder(
        self,
        run_id: str,
        question: str,
        mode: Mode,
        resume: ResumeState | None,
        approve: ApproveMode | None,
    ) -> RunRecorder | None:
        """The journal's subscriber for this session (creating the run's row for a new run)."""
        if self.journal is None:
            return None
        if resume is None:
            settings = dataclasses.replace(self.settings, approve=approve)
            self.journal.create_run(run_id, question, mode, settings.to_dict())
        session = resume.session if resume is not None else 1
        return RunRecorder(self.journal, run_id, self.tools, session=session)

    async def _within_budget(self, answering: Awaitable[str]) -> str:
        """`answering`'s answer, or BudgetExceeded once the wall-time budget is spent.  Wall
        time counts per session: a resumed run gets its budget afresh."""
        wall_s = self.budget.wall_s
        with anyio.move_on_after(float("inf") if wall_s is None else wall_s):
            return await answering
        raise BudgetExceeded(f"the run's wall-time budget of {wall_s:g} s is spent", limit="wall_s")

    async def _answer(
        self,
        mode: Mode,
        question: str,
        llm: MeteredLLM,
        scheduler: Scheduler,
        bus: EventBus,
        resume: ResumeState | None,
    ) -> str:
        if mode == "react":
            return await self.react.run(question, llm, scheduler, bus)
        plan, example = self._cached_start(question, bus, resume)
        return await self.compiled.answer(question, llm, scheduler, bus, plan=plan, example=example)

    def _cached_start(
        self, question: str, bus: EventBus, resume: ResumeState | None
    ) -> tuple[str | None, tuple[str, str] | None]:
        """The first plan from the plan cache, or an example to plan it with; a resumed run
        goes on from what the cache gave it when it began."""
        if resume is not None:
            return resumed_start(resume.cached)
        if self.cache is None:
            return None, None
        found = self.cache.lookup(question, self.tools)  # a few ms of SQLite
        if isinstance(found, CacheAdapted):
            # An example longer than the generic ones saves nothing: never a negative saving.
            found.tokens_saved = max(
                0,
                self.planner.prompt_tokens(question)
                - self.planner.prompt_tokens(question, (found.question, found.plan)),
            )
        bus.emit(found)
        if isinstance(found, CacheHit):
            return found.plan, None
        if isinstance(found, CacheAdapted):
            return None, (found.question, found.plan)
        return None, None

    def _gate(
        self, mode: Mode, approve: ApproveMode | None, resume: ResumeState | None
    ) -> Gate | None:
        """Which of the run's tasks wait for approval (and the approvals it got): its own
        mode, or the one it was started with."""
        if resume is not None:
            approve = resume.approve
        if approve is None or mode != "compiled":
            return None
        return Gate.of(approve, self.tools, resume.approvals if resume is not None else ())

    def _pause(
        self, result: RunResult, scheduler: Scheduler, bus: EventBus, pause: AwaitingApproval
    ) -> RunResult:
        """Leave the run waiting for approval: the journal keeps what waits."""
        assert scheduler.gate is not None
        result.status, result.error, result.waiting = "awaiting_approval", None, pause.tasks
        result.tasks = list(scheduler.records.values())
        result.wall_s = bus.now()
        bus.emit(
            PlanAwaitingApproval(
                approve=scheduler.gate.mode,
                tasks=pause.tasks,
                llm=result.llm.to_dict(),
                wall_s=round(result.wall_s, 6),
            )
        )
        result.events = bus.events
        return result

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
        items: Mapping[int, Mapping[int, RecordedItem]] | None = None,
        gate: Gate | None = None,
        tally: FanOutTally | None = None,
    ) -> Scheduler:
        """A scheduler with the run's recovery; a sub-plan gets one of its own (`depth`), the
        run's top level also the journal's `store`, the `recorded` outcomes to reuse and the
        `gate` of approval.  Its sub-plans share its `tally` of fan-out elements."""
        tally = tally if tally is not None else FanOutTally(self.max_fanout_total)

        async def decompose(rec: TaskRecord, error: TaskError, depth: int) -> SubplanAnswer:
            # The sub-plan runs on its own scheduler (its task ids are its own); its LLM calls
            # go through the run's meter, so they are counted, budgeted and journaled.
            sub_bus = EventBus(offset=bus.now())
            sub = self._scheduler(llm, sub_bus, run_id, executor, depth=depth, tally=tally)
            return await self.compiled.subgoal(_subgoal(self.tools, rec, error), llm, sub, sub_bus)

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
            items=items,
            gate=gate,
            max_fanout=self.max_fanout,
            fanout_tally=tally,
        )

    def _finish(
        self,
        result: RunResult,
        scheduler: Scheduler,
        bus: EventBus,
        *,
        crash: BaseException | None = None,
    ) -> None:
        result.tasks = list(scheduler.records.values())
        result.wall_s = bus.now()
        result.replans = sum(isinstance(e, ReplanEvent) for e in bus.events)
        for event in bus.events:
            if isinstance(event, CacheHit | CacheAdapted | CacheMiss):
                result.cache = event.summary()
        if result.answer is not None and result.status == "finished":
            bus.emit(AnswerEvent(answer=result.answer))
        assert result.status != "awaiting_approval"
        bus.emit(
            RunFinished(
                status=result.status,
                answer=result.answer,
                error=_report(result.error, crash),
                wall_s=round(result.wall_s, 6),
                llm=result.llm.to_dict(),
                replans=result.replans,
                partial=result.partial,
            )
        )
        result.events = bus.events


def _plan_cache(cache: PlanCache | bool | None, journal: Journal | None) -> PlanCache | None:
    if isinstance(cache, PlanCache):
        return cache
    if cache is False or (cache is None and journal is None):
        return None
    if journal is None:
        raise UserError("the plan cache lives in the journal's file: give Runtime(journal=PATH)")
    return PlanCache(journal)


def _not_in_async(blocking: str, awaitable: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise UserError(
        f"Runtime.{blocking}() blocks and cannot run inside async code; "
        f"use `await runtime.{awaitable}(...)` there"
    )


def _report(error: RunError | None, crash: BaseException | None) -> dict[str, Any] | None:
    if crash is not None:
        text = f"{type(crash).__name__}: {crash}"
        return {"type": type(crash).__name__, "message": str(crash), "text": text}
    return None if error is None else error.report()


def _opening(run_id: str, question: str, mode: Mode, resume: ResumeState | None) -> list[Event]:
    """The events a session begins with: the run started, or resumed (and approved)."""
    if resume is None:
        return [RunStarted(run_id=run_id, question=question, mode=mode)]
    resumed = RunResumed(
        run_id=run_id, session=resume.session, reused=sorted(resume.recorded), rerun=resume.rerun
    )
    return [resumed, *([resume.approved_now] if resume.approved_now is not None else [])]


def _check_approve(approve: object, mode: str, journal: object) -> None:
    if approve is None:
        return
    if approve not in APPROVE_MODES:
        raise UserError(f"approve must be 'plan', 'side_effects' or None, not {approve!r}")
    if mode != "compiled":
        raise UserError("approval is for compiled runs; ReAct mode has no plan to approve")
    if journal is None:
        raise UserError("approval keeps the paused run in the journal: Runtime(journal=PATH)")


@asynccontextmanager
async def _cancellable(recorder: RunRecorder | None) -> AsyncIterator[Callable[[], bool]]:
    """A scope that another process can stop through the journal (`planweave runs cancel`);
    gives a function telling whether it was stopped that way."""
    if recorder is None:
        yield lambda: False
        return
    async with anyio.create_task_group() as tg:
        tg.start_soon(recorder.watch_cancel, tg.cancel_scope.cancel)
        yield lambda: recorder.cancel_asked
        tg.cancel_scope.cancel()


def _turn(
    admission: Admission | None, run_id: str, bus: EventBus
) -> contextlib.AbstractAsyncContextManager[None]:
    """Run `run_id`'s turn in `admission` (none to wait for without one); a wait is heard as
    `RunQueued` (where it began: the live place is `Admission.ahead`), then `RunAdmitted`."""
    if admission is None:
        return contextlib.nullcontext()
    queued = False

    def heard(ahead: int, waited: float) -> None:
        nonlocal queued
        if ahead and not queued:
            queued = True
            bus.emit(RunQueued(ahead=ahead))
        elif not ahead:
            bus.emit(RunAdmitted(waited=round(waited, 3)))

    return admission.turn(run_id, heard)


def _subgoal(tools: ToolRegistry, rec: TaskRecord, error: TaskError) -> str:
    """A failed call as a sub-goal for the planner (ADaPT: decompose only when needed)."""
    task = rec.task
    tool = tools[task.tool]
    call = rec.call or task.call_text()  # a fan-out element's own call
    return (
        f"Find what `{call}` would return ({tool.description or tool.name}). "
        f"Calling {task.tool} that way failed: {error.message}. Reach the same result "
        "another way, with other tools or smaller calls, and answer with that result only."
    )
