"""The server's runs: each one a task in the server's task group, recorded in the journal, and
admitted (`Admission`): a few answer at once, some more wait their turn, the rest are refused.

Several servers (replicas) may share one journal (PostgreSQL, or one SQLite file on one
machine).  Each run is held by the process running it (`store.owner`: a lease); a server that
takes over (`take_over_every`) looks for runs whose holder is gone and resumes them, as
`runs resume` would: finished steps keep their results, a side effect that was in flight
leaves the run paused for a person's decision.  `max_running_total` bounds the runs running
across all of them (counted in the journal when a run is started)."""

from __future__ import annotations

import logging
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, nullcontext
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from ..admission import Admission
from ..approval import ApproveMode
from ..errors import DecisionNeeded, Overloaded, ResumeError, UserError
from ..events import Event, RunResumed, RunStarted
from ..redaction import redact
from ..resume import ResumeDecision
from ..runtime import RunResult, Runtime
from ..settings import Mode
from ..store import Journal
from ..typed import OutputShape
from .live import Live

__all__ = ["RunService"]

log = logging.getLogger("planweave.server")

Begin = Callable[[list[Callable[[Event], None]]], Awaitable[RunResult]]


class RunService:
    """Starts and resumes runs of one runtime in the background and cancels them; `live`
    follows them.  The runtime must have a journal: it is the one record the server reads.
    With an `admission`, every session of a run (started, resumed, approved) takes a place in
    it first (Overloaded when none is left) and waits there for its turn."""

    def __init__(
        self,
        runtime: Runtime,
        admission: Admission | None = None,
        *,
        max_running_total: int | None = None,
    ) -> None:
        if runtime.journal is None:
            raise UserError("the server records every run: give the runtime a journal")
        self.runtime = runtime
        self.admission = admission
        self.max_running_total = max_running_total
        self.journal: Journal = runtime.journal
        self.live = Live(self.journal)
        self._group: TaskGroup | None = None
        # Runs open one at a time, each in its own turn of the event loop: opening one (the
        # journal's first writes, the first steps of its plan) takes a millisecond or more,
        # and a burst of them in one turn would hold every other request for all of them.
        self._opening = anyio.Lock()
        self._starting = 0  # sessions started here, not yet recorded as running

    @asynccontextmanager
    async def running(self, *, take_over_every: float | None = None) -> AsyncIterator[None]:
        """The scope the runs live in.  Leaving it cancels the runs still going (the journal
        says so; they can be resumed).  `take_over_every`: every so many seconds, resume the
        runs whose holder is gone (`take_over`)."""
        async with anyio.create_task_group() as group:
            self._group = group
            if take_over_every:
                self.live.taking_over = True
                group.start_soon(self._taking_over, take_over_every)
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    async def take_over(self) -> list[str]:
        """Resume the runs whose holder is gone (`Journal.orphans`), as many as admission
        lets in; returns the ids of those this server took.  One another server took first,
        or that waits for a person's decision (a side effect was in flight), is left."""
        taken = []
        for run_id in self.journal.orphans():
            try:
                taken.append(await self.resume(run_id, {}))
            except Overloaded:
                break  # no room here now: the next round, or another server
            except DecisionNeeded as exc:
                log.warning("run %s waits for a decision: %s", run_id, exc)
            except ResumeError as exc:
                if "still running" not in str(exc):  # else another server took it first
                    log.warning("run %s cannot be taken over: %s", run_id, exc)
        return taken

    async def _taking_over(self, every: float) -> None:
        while True:
            try:
                await self.take_over()
            except Exception as exc:  # the journal unreachable a while: try again later
                log.error("taking over runs failed:\n%s", _trace(exc))
            await anyio.sleep(every)

    async def start(
        self,
        question: str,
        mode: Mode | None = None,
        *,
        approve: ApproveMode | None = None,
        output: OutputShape | None = None,
        thread: str | None = None,
        user: str | None = None,
    ) -> str:
        """Start answering `question` (typed by `output`, a JSON Schema, where given; a turn of
        `thread`; for `user`, whose run it is); returns the run's id once it is in the
        journal.  Overloaded past `max_running_total` runs running in the journal."""
        return await self._start(
            lambda subs: self.runtime.arun(
                question,
                mode=mode,
                subscribers=subs,
                check=False,
                approve=approve,
                admission=self.admission,
                output_type=output,
                thread=thread,
                user=user,
            )
        )

    async def start_plan(
        self, name: str, version: int, params: Mapping[str, Any], *, user: str | None = None
    ) -> str:
        """Start version `version` of the named plan `name` with `params` (see
        `Runtime.arun_plan`), `user`'s run; returns its id once it is in the journal."""
        return await self._start(
            lambda subs: self.runtime.arun_plan(
                name,
                plan_version=version,
                params=params,
                subscribers=subs,
                check=False,
                admission=self.admission,
                user=user,
            )
        )

    async def approve(
        self, run_id: str, edits: Mapping[int, Mapping[str, Any]], drop: list[int]
    ) -> str:
        """Approve the tasks run `run_id` waits for (see `Runtime.aapprove`) and run it on;
        returns once it goes on.  Raises InvalidApproval, ResumeError."""
        return await self._start(
            lambda subs: self.runtime.aapprove(
                run_id,
                edits=edits,
                drop=drop,
                subscribers=subs,
                check=False,
                admission=self.admission,
            )
        )

    async def resume(self, run_id: str, decisions: dict[int, ResumeDecision]) -> str:
        """Resume run `run_id` (see `Runtime.aresume`); returns its full id once it goes on.
        Raises what keeps it from going on (ResumeError, DecisionNeeded)."""
        return await self._start(
            lambda subs: self.runtime.aresume(
                run_id, decisions=decisions, subscribers=subs, check=False, admission=self.admission
            )
        )

    def queued(self, run_id: str) -> dict[str, int] | None:
        """`{"ahead": N}` while run `run_id` waits for its turn (N: its place in line), else
        None."""
        ahead = None if self.admission is None else self.admission.ahead(run_id)
        return None if ahead is None else {"ahead": ahead}

    def health(self) -> dict[str, Any]:
        """What `/healthz` answers: that the server answers, its model, and (`runs`) its
        `load()`."""
        load = self.load()
        found: dict[str, Any] = {"status": "ok", "model": self.runtime.llm.model}
        return found if load is None else found | {"runs": load}

    def load(self) -> dict[str, int] | None:
        """Runs answering and waiting now, and how many of each may (None: no admission)."""
        admission = self.admission
        if admission is None:
            return None
        return {
            "running": admission.running,
            "queued": admission.queued,
            "max_running": admission.max_running,
            "max_queued": admission.max_queued,
        }

    def cancel(self, run_id: str) -> str:
        """Ask run `run_id` to stop (the journal's cancel flag: a live run stops within a
        second, wherever it runs); returns its state."""
        return self.journal.request_cancel(run_id)

    async def _start(self, begin: Begin) -> str:
        """Start a session of a run (new, of a named plan, resumed, approved, taken over),
        counted against `max_running_total` with the journal's running runs and this server's
        sessions not yet recorded as running (Overloaded past it)."""
        if self._group is None:
            raise RuntimeError("the run service is not running (use `async with running()`)")
        total = self.max_running_total
        if total is not None and self.journal.running_count() + self._starting >= total:
            raise Overloaded(
                f"{total} runs are running across the servers of this journal", retry_after=1.0
            )
        self._starting += 1
        try:
            run_id: str = await self._group.start(self._drive, begin)
        finally:
            self._starting -= 1
        return run_id

    async def _drive(self, begin: Begin, *, task_status: TaskStatus[str]) -> None:
        """One session of a run.  What goes wrong before it opens is raised to the one who
        started it (Overloaded first of all: then nothing is recorded); a crash after that (a
        bug in a tool or in planweave: the run's record is closed by then) is logged, and the
        server goes on."""
        with self.admission.place() if self.admission is not None else nullcontext():
            await self._session(begin, task_status)

    async def _session(self, begin: Begin, task_status: TaskStatus[str]) -> None:
        session = self.live.session()
        opened = False

        def announce(event: Event) -> None:
            nonlocal opened
            if not opened and isinstance(event, RunStarted | RunResumed):
                opened = True
                self._opening.release()
                task_status.started(event.run_id)

        await self._opening.acquire()
        try:
            await begin([session, announce])
        except Exception as exc:
            if not opened:
                raise
            log.error("run %s crashed:\n%s", session.run_id, _trace(exc))
        finally:
            if not opened:
                self._opening.release()
            session.close()


def _trace(exc: BaseException) -> str:
    return redact("".join(traceback.format_exception(exc)))
