"""The runtime: the Python API.  A `Runtime` takes its tools, its LLM and one `RunSettings`;
each run (or resumed session of one) is a `session`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Unpack, cast

import anyio

from .admission import Admission
from .approval import review
from .cache import PlanCache
from .errors import RunFailed, UserError
from .events import Event, NamedPlanStarted
from .executors import Backends
from .llm.base import LLM
from .records import RunResult
from .recovery import EscalationHandler, Recovery
from .resume import Decisions, ResumeState, prepare
from .runbooks.runs import NamedPlanMethods
from .session import check_approve, event_stream, modes, plan_cache, run_session, trace
from .settings import Mode, RunOptions, RunSettings, SettingsKeywords, make_llm, recovery_policy
from .store import Journal
from .tools import ToolRegistry, ToolSource
from .typed import schema_text, typed_result

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

# RunResult and RunFailed live with the records and the errors; importable from here as before.
__all__ = ["Mode", "RunFailed", "RunResult", "Runtime"]

Subscribers = list[Callable[[Event], None]] | None
T = TypeVar("T")


class Runtime(NamedPlanMethods):
    """Answers questions with tools and an LLM, as its `RunSettings` say.

    `mode="compiled"` plans a DAG of tool calls and runs each call the moment its inputs are
    ready, while the plan is still streaming; `mode="react"` is the one-call-per-turn baseline.
    Named plans (compiled from runbooks, run without a planner call) are `NamedPlanMethods`.
    """

    def __init__(
        self,
        tools: ToolSource,
        llm: LLM,
        settings: RunSettings | None = None,
        *,
        journal: Journal | str | Path | None = None,
        cache: PlanCache | bool | None = None,
        recovery: Recovery | None = None,
        escalate: EscalationHandler | None = None,
        tracing: TracerProvider | Literal[False] | None = None,
        subscribers: Subscribers = None,
        deps: Any = None,
        **keywords: Unpack[SettingsKeywords],
    ) -> None:
        """`settings` (default `RunSettings()`) are the run's mode, limits and behaviour; the
        keyword arguments named in `SettingsKeywords` (`mode=`, `max_replans=`, `budget=`,
        ...) set the field of the same name.  `self.settings` is what runs record: these,
        resolved for `llm` (`RunSettings.resolved`).

        `journal` (a Journal or a path) records every run durably so it can be resumed (and
        keeps a run paused for approval).  `cache` is the plan cache: a compiled run whose
        question reads as a template made from an earlier run runs that plan without a
        planner call; None or True: a `PlanCache` in the journal's file when
        `settings.cache` (none without a journal), False: off, or a `PlanCache`.
        `recovery` maps failure classes to handling patterns (default: the policy the
        settings name, `recovery_policy`).  `escalate` is the async function a person answers
        through when the `Escalate` pattern acts.  `tracing`: OpenTelemetry spans of each run
        go to this tracer provider (None: to the global one when one is set; False: none).
        `subscribers` hear every event of every run.  `deps` is what tools that take a
        `RunContext` find in its `deps` (a database handle...).  A tool that cannot run on
        `settings.executor` raises UserError now; `close()` stops the executor's workers."""
        settings = (settings or RunSettings()).with_keywords(**keywords)
        self.tools = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.llm = llm
        self.journal = Journal(journal) if isinstance(journal, str | Path) else journal
        check_approve(settings, self.journal)
        self.backends = Backends(settings.executor, ray_address=settings.ray_address)
        self.backends.check(self.tools.values())
        self.recovery = recovery or recovery_policy(settings, escalate=escalate)
        self.escalate = escalate
        self.tracing = tracing
        self.subscribers = list(subscribers or ())
        self.deps = deps
        self.cache = plan_cache(cache, settings, self.journal)
        self.settings = settings.resolved(
            llm,
            recovery="custom" if recovery is not None else settings.recovery,
            cache=self.cache is not None,
            cache_adapt=self.cache is not None and self.cache.adapt,
        )
        self.planner, self.joiner, self.compiled, self.react = modes(
            self.tools, self.settings, self.recovery
        )

    @classmethod
    def from_settings(
        cls,
        settings: RunSettings,
        *,
        llm: LLM | None = None,
        journal: Journal | str | Path | None = None,
        escalate: EscalationHandler | None = None,
        subscribers: Subscribers = None,
        tracing: TracerProvider | Literal[False] | None = None,
    ) -> Runtime:
        """The runtime `settings` describe whole: its tool sets loaded (`tools`, `mcp`), its
        LLM built unless `llm` is given (`make_llm` builds the embedded model unloaded).
        `escalate` is how a person is asked when `settings.ask` is set; without it nobody is."""
        llm = llm if llm is not None else make_llm(settings)
        return cls(
            settings.tool_sets(),
            llm,
            settings,
            journal=journal,
            escalate=escalate,
            subscribers=subscribers,
            tracing=tracing,
        )

    async def warm(self) -> None:
        """Do now what the first run would otherwise do once (the LLM client's set-up, the
        trace module's import): a server calls this before it answers, so that no request
        waits behind it."""
        await self.llm.warm()
        trace(self)

    def close(self) -> None:
        """Stop the executor's worker processes (and a local Ray it started)."""
        self.backends.close()

    # ------------------------------------------------------------------ entry points

    def run(self, question: str, **options: Unpack[RunOptions]) -> RunResult:
        """Answer `question` (blocking; `options` as for `arun`).  Raises RunFailed when no
        answer could be had."""
        return self._blocking("run", lambda: self.arun(question, **options))

    async def arun(
        self,
        question: str,
        *,
        subscribers: Subscribers = None,
        check: bool = True,
        admission: Admission | None = None,
        **options: Unpack[RunOptions],
    ) -> RunResult:
        """Answer `question` (in the `mode` asked, else the settings').  On failure, raises
        RunFailed (holding every finished result), or
        with `check=False` returns the result with `status="failed"` and `error` set.
        `approve` (default: the settings') pauses the run for a person's yes: the result then
        has `status="awaiting_approval"` and the `waiting` tasks (`RunSettings.approve`).
        `admission`: once recorded, the run waits for its turn there (`RunQueued`).
        `output_type` (a pydantic model, a dataclass, a list, a Literal...) types the answer:
        the result's `output` is an instance of it, its `answer` the JSON (see `typed`); an
        `OutputShape` is a JSON Schema without a type (`output` is then the JSON value).
        `thread` makes the run a turn of that conversation (`threads`; needs the journal);
        `user` is who it answers, as tools that take a `RunContext` see it."""
        settings = self._for_run(options)
        result = await self._session(settings, question, subscribers, check, admission=admission)
        return typed_result(result, options.get("output_type"))

    def resume(self, run_id: str, *, decisions: Decisions | None = None) -> RunResult:
        """Continue a journaled run (blocking).  See `aresume`."""
        return self._blocking("resume", lambda: self.aresume(run_id, decisions=decisions))

    async def aresume(
        self,
        run_id: str,
        *,
        decisions: Decisions | None = None,
        subscribers: Subscribers = None,
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
        return await self._resumed(state, subscribers, check, admission)

    def approve(
        self,
        run_id: str,
        *,
        edits: Mapping[int, Mapping[str, Any]] | None = None,
        drop: Iterable[int] = (),
    ) -> RunResult:
        """Approve the tasks run `run_id` waits for and run it on (blocking).  See `aapprove`."""
        return self._blocking("approve", lambda: self.aapprove(run_id, edits=edits, drop=drop))

    async def aapprove(
        self,
        run_id: str,
        *,
        edits: Mapping[int, Mapping[str, Any]] | None = None,
        drop: Iterable[int] = (),
        subscribers: Subscribers = None,
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
        return await self._resumed(state, subscribers, check, admission)

    def reject(self, run_id: str, reason: str = "") -> dict[str, Any]:
        """End the journaled run `run_id`, which awaits approval, without running its waiting
        tasks: it fails with `PlanRejected` (`reason` in its message).  Returns the error."""
        return self._journal("rejecting").reject(run_id, reason or "no reason given")

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
        settings = self._for_run({"mode": mode})
        async with event_stream(
            lambda forward: self._session(settings, question, [forward], check=False)
        ) as events:
            yield events

    # ------------------------------------------------------------------ shared by the above

    def _for_run(self, options: RunOptions) -> RunSettings:
        """A new run's settings: the runtime's, as the run's `options` ask."""
        settings = self.settings.for_run(
            mode=options.get("mode") or self.settings.mode,
            approve=options.get("approve") or self.settings.approve,
            output_schema=schema_text(options.get("output_type")),
            thread=options.get("thread"),
            user=options.get("user"),
        )
        check_approve(settings, self.journal)
        return settings

    async def _resumed(
        self,
        state: ResumeState,
        subscribers: Subscribers,
        check: bool,
        admission: Admission | None,
    ) -> RunResult:
        """One more session of a journaled run, in the mode, approval and output schema it
        began with."""
        mode = cast(Mode, state.mode if state.mode in ("react", "native") else "compiled")
        settings = self.settings.for_run(
            mode=mode,
            approve=state.approve,
            output_schema=state.output_schema,
            thread=state.thread,
            user=state.user,
            recorded=True,
        )
        return await self._session(
            settings, state.question, subscribers, check, resume=state, admission=admission
        )

    async def _session(
        self,
        settings: RunSettings,
        question: str,
        subscribers: Subscribers,
        check: bool,
        *,
        resume: ResumeState | None = None,
        admission: Admission | None = None,
        given: NamedPlanStarted | None = None,
    ) -> RunResult:
        """A session with the runtime's subscribers and `subscribers`; with `check`, a run
        without an answer raises RunFailed."""
        listeners = [*self.subscribers, *(subscribers or ())]
        result = await run_session(
            self, settings, question, listeners, resume=resume, admission=admission, given=given
        )
        if check and result.error is not None:
            raise RunFailed(str(result.error), result=result, cause=result.error)
        return result

    def _blocking(self, name: str, call: Callable[[], Awaitable[T]]) -> T:
        """`call()`'s result on an event loop of its own; `name` is refused in async code."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise UserError(
                f"Runtime.{name}() blocks and cannot run inside async code; "
                f"use `await runtime.a{name}(...)` there"
            )

        async def once() -> T:
            try:
                return await call()
            finally:
                # Each blocking call has its own event loop: close its connections with it.
                await self.llm.aclose()

        return anyio.run(once)

    def _journal(self, doing: str) -> Journal:
        if self.journal is None:
            raise UserError(f"{doing} a run needs the journal: Runtime(..., journal=PATH)")
        return self.journal
