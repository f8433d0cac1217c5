"""One session of a run, as nested layers, each with one concern:

    run_session ......... the record: open it, close it with what was found (or leave the run
                          paused for approval); a bug propagates once the record is closed
      Session.turn ...... cancellation through the journal, the run's turn (admission), the
                          run's MCP sessions, the LLM tool's meter
        within_budget ... the wall-time budget
          Session.answer  compiled (the plan cache's start, plan, run, join) or ReAct

A session is a new run or one more session of a journaled run (`ResumeState`: resumed,
approved).  What every session of a runtime shares (`Setup`: the tools, the LLM, the modes)
is built once from the runtime's settings (`modes`); what one run asked for (its mode, its
approval) is the session's own `RunSettings`.
"""

from __future__ import annotations

import contextlib
import json
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio

from .admission import Admission
from .approval import Gate
from .cache import PlanCache, resumed_start
from .compiled import Compiled
from .context import RunContext
from .errors import (
    AwaitingApproval,
    BudgetExceeded,
    RunCancelled,
    RunError,
    RunPaused,
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
    NamedPlanStarted,
    PlanAwaitingApproval,
    ReplanEvent,
    RunAdmitted,
    RunFinished,
    RunQueued,
    RunResumed,
    RunStarted,
)
from .executors import Backends
from .fanout import FanOutTally
from .grammar import joiner_grammar, plan_grammar, react_grammar
from .invoker import Invoker
from .joiner import Joiner
from .llm.base import LLM, require_tool_calling
from .mcp_tools import mcp_servers, mcp_sessions
from .meter import MeteredLLM
from .native import Native
from .planner import Planner, opens_with_thought, planner_examples
from .react import ReAct
from .records import Recorded, RecordedItem, RunResult, TaskRecord
from .recoverer import TaskRecoverer
from .recovery import EscalationHandler, Recovery, SubplanAnswer
from .redaction import encodable, redact
from .resume import ResumeState
from .runbooks.report import with_actions
from .scheduler import Scheduler
from .settings import Mode, RunSettings
from .store import Journal, RunRecorder, encode
from .threads import Memory, asks_afresh, recall
from .tools import ToolRegistry
from .typed import NO_VALUE, OutputShape, named_value, shape_answer

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["Setup", "check_approve", "modes", "plan_cache", "run_session", "trace"]


class Setup(Protocol):
    """What every session of a runtime shares (a `Runtime` is one)."""

    tools: ToolRegistry
    llm: LLM
    settings: RunSettings
    recovery: Recovery
    backends: Backends
    compiled: Compiled
    react: ReAct
    journal: Journal | None
    cache: PlanCache | None
    escalate: EscalationHandler | None
    tracing: TracerProvider | Literal[False] | None
    deps: Any


def modes(
    tools: ToolRegistry, settings: RunSettings, recovery: Recovery
) -> tuple[Planner, Joiner, Compiled, ReAct]:
    """The compiled mode (its planner and joiner) and the ReAct mode over `tools`, as the
    resolved `settings` (`RunSettings.resolved`) say."""
    style = settings.prompt_style or "full"
    grammar, answers = settings.grammar, settings.plan_answers is not False
    join_replan, grounding = bool(settings.join_replan), bool(settings.grounding)
    # Grammars are plain text; backends that cannot constrain decoding ignore them.
    examples = planner_examples(tools, settings.examples, plan_answers=answers)
    # A plan opens as its examples do: with a thought when every one shows it.
    thought = style == "full" and opens_with_thought(examples)
    planner = Planner(
        tools,
        examples=examples,
        max_repairs=settings.max_repairs,
        grammar=plan_grammar(tools, plan_answers=answers, thought=thought) if grammar else None,
        style=style,
        plan_answers=answers,
        similar=settings.similar_examples,
    )
    joiner = Joiner(
        grammar=joiner_grammar(style) if grammar else None,
        style=style,
        plan_tools=tools if join_replan else None,
        plan_grammar=(
            joiner_grammar(style, tools, plan_answers=answers) if grammar and join_replan else None
        ),
        finish_grammar=joiner_grammar(style, finish_only=True) if grammar else None,
        plan_answers=answers,
    )
    react = ReAct(
        tools,
        max_steps=settings.react_max_steps,
        grammar=react_grammar(tools) if grammar else None,
        grounding=grounding,
    )
    compiled = Compiled(
        tools,
        planner,
        joiner,
        max_replans=settings.max_replans,
        streaming=settings.streaming,
        join_replan=join_replan,
        grounding=grounding,
        plan_answers=answers,
        # A plan that breaks off mid-stream is continued when a recovery rule says so.
        continue_cut=bool(recovery.patterns("llm.stream_cut")),
    )
    return planner, joiner, compiled, react


def plan_cache(
    cache: PlanCache | bool | None, settings: RunSettings, journal: Journal | None
) -> PlanCache | None:
    """The runtime's plan cache: `cache` when it is one, else one in the journal's file when
    `cache` is True, or None and `settings.cache` (none without a journal)."""
    if isinstance(cache, PlanCache):
        return cache
    if cache is False or (cache is None and (not settings.cache or journal is None)):
        return None
    if journal is None:
        raise UserError("the plan cache lives in the journal's file: give Runtime(journal=PATH)")
    return PlanCache(journal, adapt=settings.cache_adapt)


def check_approve(settings: RunSettings, journal: Journal | None) -> None:
    """Refuse approval where it cannot be: ReAct runs (no plan) or no journal to pause in."""
    if settings.approve is None:
        return
    if settings.mode != "compiled":
        raise UserError(f"approval is for compiled runs; {settings.mode} mode has no plan")
    if journal is None:
        raise UserError("approval keeps the paused run in the journal: Runtime(journal=PATH)")


async def run_session(
    setup: Setup,
    settings: RunSettings,
    question: str,
    subscribers: Sequence[Callable[[Event], None]],
    *,
    resume: ResumeState | None = None,
    admission: Admission | None = None,
    given: NamedPlanStarted | None = None,
) -> RunResult:
    """One session of a run with the run's `settings`: open its record, take its turn in
    `admission`, answer within the budget, close the record (or leave it paused for
    approval).  A run error ends the run (in the result); a bug propagates once the record
    is closed: every finished result stays recorded.  `given`: a named plan's first plan,
    run without a planner call."""
    if settings.mode == "native":
        require_tool_calling(setup.llm)
    session = _open(setup, settings, encodable(question), subscribers, resume, admission, given)
    result = session.result
    try:
        await session.turn()
    except anyio.get_cancelled_exc_class():
        result.status = "cancelled"
        session.finish()
        raise
    except (RunError, RunPaused, BaseExceptionGroup) as exc:
        try:
            ended = _run_error(exc)
        except BaseException as bug:
            session.finish(crash=bug)
            raise
        ended.run_id = result.run_id
        if isinstance(ended, AwaitingApproval) and session.scheduler.gate is not None:
            return session.pause(ended)
        if isinstance(ended, RunPaused):  # only the gate pauses a run: a bug otherwise
            session.finish(crash=ended)
            raise
        result.error = ended
    except Exception as exc:
        # A bug (in planweave or in a user's tool or pattern) propagates, but the run's
        # record is closed first.
        session.finish(crash=exc)
        raise
    session.finish()
    return result


def _open(
    setup: Setup,
    settings: RunSettings,
    question: str,
    subscribers: Sequence[Callable[[Event], None]],
    resume: ResumeState | None,
    admission: Admission | None,
    given: NamedPlanStarted | None = None,
) -> Session:
    """The session's record opened (the run's row created for a new run) and its parts: the
    event bus (the journal first: no view shows what has not been recorded), the metered
    LLM, the top-level scheduler.  The session's opening events are emitted."""
    run_id = resume.run_id if resume is not None else uuid.uuid4().hex[:12]
    memory = _memory(setup, settings, question, resume)  # before the run's own row is there
    recorder = None
    if setup.journal is not None:
        if resume is None:
            setup.journal.create_run(run_id, question, settings.mode, settings.to_dict())
        session_no = resume.session if resume is not None else 1
        side_effects = [t.name for t in setup.tools.values() if t.side_effects]
        recorder = RunRecorder(setup.journal, run_id, side_effects, session=session_no)
    # The plan cache learns from new compiled runs (a resumed one was judged when it began),
    # not from a named plan's (`runbooks`: its question is no user's).
    learner = (
        [setup.cache.learner(setup.tools)]
        if setup.cache is not None
        and settings.mode == "compiled"
        and resume is None
        and given is None
        else []
    )
    offset = resume.elapsed if resume is not None else 0.0
    listeners: list[Callable[[Event], None]] = [*trace(setup), *subscribers, *learner]
    if recorder is not None:
        listeners.insert(0, recorder)
    bus = EventBus(listeners, offset=offset)
    llm = MeteredLLM(
        setup.llm,
        bus,
        replay=resume.replay if resume else None,
        recovery=setup.recovery,
        budget=settings.budget,
        price=settings.priced(),
    )
    scheduler = _top_scheduler(setup, settings, run_id, llm, bus, recorder, resume, memory)
    result = RunResult(run_id, question, settings.mode, "failed", None, [], llm.usage, 0.0)
    result.cache = resume.cache if resume is not None else None
    parts = (scheduler, result, recorder, resume, admission, memory, given)
    session = Session(setup, settings, question, bus, llm, *parts)
    for event in _opening(run_id, question, settings.mode, resume):
        bus.emit(event)
    return session


def _memory(
    setup: Setup, settings: RunSettings, question: str, resume: ResumeState | None
) -> Memory:
    """What the run's thread found before it (`threads`); nothing outside a thread."""
    if settings.thread is None:
        return Memory()
    if setup.journal is None:
        raise UserError("a thread is kept in the journal: Runtime(..., journal=PATH)")
    before = resume.run_id if resume is not None else None
    memory = recall(setup.journal, settings.thread, setup.tools, before=before, user=settings.user)
    if asks_afresh(question):
        memory.remembered.clear()  # "check again": its calls are made again
    return memory


def trace(setup: Setup) -> list[Callable[[Event], None]]:
    """A run's OpenTelemetry spans, when traces are on (a subscriber per run: events carry no
    run id).  The first call imports the trace module."""
    # No provider can have been set where nobody imported OpenTelemetry.
    if setup.tracing is False or (
        setup.tracing is None and "opentelemetry.trace" not in sys.modules
    ):
        return []
    from .otel import RunTrace, tracer

    found = tracer(setup.tracing)
    if found is None:
        return []
    llm = setup.llm
    return [
        RunTrace(
            found, model=llm.model, provider=llm.provider, endpoint=llm.endpoint, tools=setup.tools
        )
    ]


@dataclass(slots=True, eq=False)
class Session:
    """One session's parts, and the layers inside its record."""

    setup: Setup
    settings: RunSettings
    question: str
    bus: EventBus
    llm: MeteredLLM
    scheduler: Scheduler
    result: RunResult
    recorder: RunRecorder | None
    resume: ResumeState | None
    admission: Admission | None
    memory: Memory
    given: NamedPlanStarted | None = None

    @property
    def run_id(self) -> str:
        return self.result.run_id

    async def turn(self) -> None:
        """Cancellation through the journal, the run's turn, its MCP sessions, the meter
        serving the `llm` tool; inside them, the answer within the budget."""
        result = self.result
        async with (
            _cancellable(self.recorder) as cancelled,
            _turn(self.admission, self.run_id, self.bus),
            _mcp_sessions(self.setup.tools),
        ):
            with self.llm.serving():
                # Known secrets masked: a plan's answer fills in results as they are.
                answer = await within_budget(self.typed(), self.settings.budget.wall_s)
                result.answer = redact(answer)
            result.status = "finished"
        if cancelled():
            result.status = "cancelled"
            result.error = RunCancelled("cancelled on request", run_id=self.run_id)

    async def typed(self) -> str:
        """The run's answer, written as the value of its output schema where it has one (the
        value goes to the result's `output`, its JSON text is the answer)."""
        answer = await self.answer()
        if self.settings.output_schema is None:
            return answer
        shape = OutputShape.from_text(self.settings.output_schema)
        named = named_value(shape, self.scheduler.join, self.scheduler.results)
        if named is not NO_VALUE:  # the plan named a result that is the value: no LLM call
            self.result.output = named
            return json.dumps(named, ensure_ascii=False)
        records = list(self.scheduler.records.values())
        text, self.result.output = await shape_answer(
            self.llm,
            shape,
            self.question,
            redact(answer),
            records,
            grammar=self.settings.grammar,
            grounding=self.settings.grounding is True,
        )
        return text

    async def answer(self) -> str:
        """The run's answer: ReAct's, native function calling's, or the compiled mode's from
        the plan cache's start."""
        setup, llm, scheduler, bus = self.setup, self.llm, self.scheduler, self.bus
        asked = self.memory.context(self.question)  # a follow-up reads what it follows
        if self.settings.mode == "react":
            return await setup.react.run(asked, llm, scheduler, bus)
        if self.settings.mode == "native":
            native = Native(setup.tools, max_turns=self.settings.react_max_steps)
            return await native.run(asked, llm, scheduler, bus)
        plan, example = self.cached_start()
        compiled = setup.compiled.with_replans(self.settings.max_replans)  # this run's own
        answer = await compiled.answer(asked, llm, scheduler, bus, plan=plan, example=example)
        if not self.named_plan:
            return answer
        # A runbook's actions as they happened, after the joiner's words about them.
        return with_actions(answer, scheduler.records.values(), setup.tools, scheduler.results)

    @property
    def named_plan(self) -> bool:
        """Whether this run is a named plan's, begun now or resumed."""
        if self.given is not None:
            return True
        cached = self.resume.cached if self.resume is not None else None
        return cached is not None and cached.get("kind") == "named_plan"

    def cached_start(self) -> tuple[str | None, tuple[str, str] | None]:
        """The first plan from the plan cache, or an example to plan it with; a resumed run
        goes on from what the cache gave it when it began."""
        if self.resume is not None:
            return resumed_start(self.resume.cached)
        if self.given is not None:
            self.bus.emit(self.given)
            return self.given.plan, None
        cache, question = self.setup.cache, self.question
        if cache is None or self.memory.turns:
            return None, None  # a follow-up means what it follows: no template knows that
        found = cache.lookup(question, self.setup.tools)  # a few ms of SQLite
        if isinstance(found, CacheAdapted):
            # An example longer than the generic ones saves nothing: never a negative saving.
            planner = self.setup.compiled.planner
            found.tokens_saved = max(
                0,
                planner.prompt_tokens(question)
                - planner.prompt_tokens(question, (found.question, found.plan)),
            )
        self.bus.emit(found)
        if isinstance(found, CacheHit):
            return found.plan, None
        if isinstance(found, CacheAdapted):
            return None, (found.question, found.plan)
        return None, None

    def pause(self, pause: AwaitingApproval) -> RunResult:
        """Leave the run waiting for approval: the journal keeps what waits."""
        result, gate = self.result, self.scheduler.gate
        assert gate is not None
        result.status, result.error, result.waiting = "awaiting_approval", None, pause.tasks
        result.tasks = list(self.scheduler.records.values())
        result.wall_s = self.bus.now()
        self.bus.emit(
            PlanAwaitingApproval(
                approve=gate.mode,
                tasks=pause.tasks,
                llm=result.llm.to_dict(),
                wall_s=round(result.wall_s, 6),
            )
        )
        result.events = self.bus.events
        return result

    def finish(self, *, crash: BaseException | None = None) -> None:
        """Close the session's record: the result's tasks and figures, the answer, the end."""
        result, bus = self.result, self.bus
        result.tasks = list(self.scheduler.records.values())
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


def _top_scheduler(
    setup: Setup,
    settings: RunSettings,
    run_id: str,
    llm: MeteredLLM,
    bus: EventBus,
    recorder: RunRecorder | None,
    resume: ResumeState | None,
    memory: Memory,
) -> Scheduler:
    """The run's own scheduler: its results stored in the journal when there is one, the
    outcomes a resumed run recorded reused (and its thread's, for pure tools' calls), its
    tasks held at the gate of approval."""
    invoker = Invoker(
        tool_timeout=settings.tool_timeout,
        max_argument_chars=settings.max_argument_chars,
        backends=setup.backends,
        context=RunContext(run_id, setup.deps, thread=settings.thread, user=settings.user),
    )
    return _scheduler(
        setup,
        settings,
        run_id,
        llm,
        bus,
        invoker,
        store=encode if recorder is not None else None,
        recorded=resume.recorded if resume else None,
        items=resume.items if resume else None,
        gate=_gate(setup, settings, resume),
        remembered=memory.remembered,
    )


def _gate(setup: Setup, settings: RunSettings, resume: ResumeState | None) -> Gate | None:
    """Which of the run's tasks wait for approval (and the approvals it got so far)."""
    if settings.approve is None or settings.mode != "compiled":
        return None
    approvals = resume.approvals if resume is not None else ()
    return Gate.of(settings.approve, setup.tools, approvals)


def _scheduler(
    setup: Setup,
    settings: RunSettings,
    run_id: str,
    llm: MeteredLLM,
    bus: EventBus,
    invoker: Invoker,
    *,
    depth: int = 0,
    tally: FanOutTally | None = None,
    store: Callable[[Any], Any] | None = None,
    recorded: Mapping[int, Recorded] | None = None,
    items: Mapping[int, Mapping[int, RecordedItem]] | None = None,
    gate: Gate | None = None,
    remembered: Mapping[str, Recorded] | None = None,
) -> Scheduler:
    """A scheduler with the run's recovery; a sub-plan gets one of its own (`depth`), the
    run's top level also the journal's `store`, the `recorded` outcomes (and fan-out `items`)
    to reuse and the `gate` of approval.  Its sub-plans share its `tally` of fan-out elements."""
    tally = tally if tally is not None else FanOutTally(settings.max_fanout_total)

    async def decompose(rec: TaskRecord, error: TaskError, depth: int) -> SubplanAnswer:
        # The sub-plan runs on its own scheduler (its task ids are its own); its LLM calls
        # go through the run's meter, so they are counted, budgeted and journaled.
        sub_bus = EventBus(offset=bus.now())
        sub = _scheduler(setup, settings, run_id, llm, sub_bus, invoker, depth=depth, tally=tally)
        return await setup.compiled.subgoal(_subgoal(setup.tools, rec, error), llm, sub, sub_bus)

    recoverer = TaskRecoverer(
        setup.recovery,
        setup.tools,
        invoker,
        bus,
        decompose=decompose,
        escalate=setup.escalate,
        run_id=run_id,
        depth=depth,
        decomposition_depth=settings.budget.decomposition_depth,
    )
    return Scheduler(
        setup.tools,
        invoker,
        bus,
        max_concurrency=settings.max_concurrency,
        recoverer=recoverer,
        max_fanout=settings.max_fanout,
        fanout_tally=tally,
        remembered=remembered,
        store=store,
        recorded=recorded,
        items=items,
        gate=gate,
    )


async def within_budget(answering: Awaitable[str], wall_s: float | None) -> str:
    """`answering`'s answer, or BudgetExceeded once the wall-time budget is spent.  Wall time
    counts per session: a resumed run gets its budget afresh."""
    with anyio.move_on_after(float("inf") if wall_s is None else wall_s):
        return await answering
    raise BudgetExceeded(f"the run's wall-time budget of {wall_s:g} s is spent", limit="wall_s")


def _run_error(
    exc: RunError | RunPaused | BaseExceptionGroup[BaseException],
) -> RunError | RunPaused:
    """The run error that ended a run; task groups wrap what their bodies raise, and a run
    error stays a run error.  Anything else (a bug) propagates, unwrapped when it is alone (or
    the same error each time: every element of a fan-out whose tool's package is missing)."""
    if isinstance(exc, RunError | RunPaused):
        return exc
    errors, rest = exc.split((RunError, RunPaused))
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


def _mcp_sessions(tools: ToolRegistry) -> contextlib.AbstractAsyncContextManager[object]:
    """The run's MCP sessions (one per server, opened at its first call, closed when the run
    ends) when its tools include MCP tools."""
    return mcp_sessions() if mcp_servers(tools.values()) else contextlib.nullcontext()


@asynccontextmanager
async def _cancellable(recorder: RunRecorder | None) -> AsyncIterator[Callable[[], bool]]:
    """A scope that another process can stop through the journal (`planweave runs cancel`);
    gives a function telling whether it was stopped that way.  The watcher (which also renews
    the run's lease) outlives the scope's own cancellation: a run that winds down slowly (a
    tool that cannot be interrupted) is still held until it has."""
    if recorder is None:
        yield lambda: False
        return
    async with anyio.create_task_group() as tg:
        with anyio.CancelScope() as body:
            tg.start_soon(recorder.watch_cancel, body.cancel)
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


@asynccontextmanager
async def event_stream(
    drive: Callable[[Callable[[Event], None]], Awaitable[object]],
) -> AsyncIterator[AsyncIterator[Event]]:
    """The events of the session `drive(listener)` runs, as they happen, the last
    `RunFinished` (see `Runtime.events`).  Leaving the block before it cancels the session; the
    block does not end before the session has."""
    send, receive = anyio.create_memory_object_stream[Event](max_buffer_size=float("inf"))
    ended = anyio.Event()

    def forward(event: Event) -> None:
        if isinstance(event, RunFinished):
            ended.set()
        # The consumer may have stopped listening; the run is then being cancelled.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            send.send_nowait(event)

    async def run() -> None:
        async with send:
            await drive(forward)

    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
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
