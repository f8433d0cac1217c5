"""The runtime's named-plan methods (`Runtime` has them): compile a runbook, read, edit and run
named plans.  A run of a named plan is a compiled run of the runtime whose first plan is given
(`session.run_session(given=...)`), journaled like any."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import UserError
from . import NamedPlan, NamedPlans, check_plan_name, repaired
from .steps import (
    MAX_STEPS,
    Step,
    plan_of,
    runbook_steps,
    step_parts,
    step_plan,
    step_repaired,
    step_request,
    task_lines,
)

if TYPE_CHECKING:
    from ..admission import Admission
    from ..events import Event, NamedPlanStarted
    from ..llm.base import LLM, LLMRequest
    from ..records import RunResult
    from ..settings import RunOptions, RunSettings
    from ..store import Journal
    from ..tools import ToolRegistry

__all__ = ["NamedPlanMethods"]

T = TypeVar("T")
Subscribers = list[Callable[["Event"], None]] | None


class NamedPlanMethods:
    """Named plans on a `Runtime` (its journal keeps them, its tools check them)."""

    if TYPE_CHECKING:
        journal: Journal | None
        tools: ToolRegistry
        llm: LLM
        settings: RunSettings

        def _blocking(self, name: str, call: Callable[[], Awaitable[T]]) -> T: ...

        def _for_run(self, options: RunOptions) -> RunSettings: ...

        async def _session(
            self,
            settings: RunSettings,
            question: str,
            subscribers: Subscribers,
            check: bool,
            *,
            admission: Admission | None = None,
            given: NamedPlanStarted | None = None,
        ) -> RunResult: ...

    def compile_runbook(self, text: str, *, name: str, by_step: bool | None = None) -> NamedPlan:
        """Compile a runbook into the next version of the named plan `name` (blocking).  See
        `acompile_runbook`."""
        return self._blocking(
            "compile_runbook", lambda: self.acompile_runbook(text, name=name, by_step=by_step)
        )

    async def acompile_runbook(
        self, text: str, *, name: str, by_step: bool | None = None
    ) -> NamedPlan:
        """One planner call turns the markdown runbook `text` (numbered steps, conditions in
        words, parameters `<host>` or `<limit:int>`) into a plan with branches and typed
        parameters (`{host}`), with the branch grammar where the backend takes grammars; it
        is validated and stored in the journal as the next version of `name`.  A reply that
        does not validate goes back to the planner with the error, up to `max_repairs` times
        (the planner's own repair budget); after that UserError (nothing is stored).
        `by_step` (default: with the embedded model) asks one planner call per numbered step
        instead (`runbooks.steps`), each step's reply repaired the same way."""
        plans = self.named_plans_store()
        check_plan_name(name)
        names = plans.check_runbook(text)
        if by_step is None:
            by_step = bool(getattr(self.llm, "embedded", False))
        steps = runbook_steps(text)
        if by_step and 0 < len(steps) <= MAX_STEPS:
            return plans.compiled(name, text, await self._by_step(plans, text, names, steps))
        request = plans.request(text, grammar=bool(self.settings.grammar))
        return await self._valid(
            request,
            lambda reply, last: plans.compiled(name, text, reply, strict=not last),
            repaired,
        )

    async def _by_step(
        self, plans: NamedPlans, text: str, names: list[str], steps: list[Step]
    ) -> str:
        """The plan of `text` (its parameters `names`) compiled one numbered step at a time."""
        so_far: list[str] = []
        for step in [part for s in steps for part in step_parts(s)]:
            request = step_request(
                self.tools,
                text,
                names,
                so_far,
                step,
                grammar=bool(self.settings.grammar),
                plan_answers=plans.plan_answers,
            )
            accept = functools.partial(step_plan, plans, text, so_far, step)
            again = functools.partial(step_repaired, step=step)
            try:
                so_far = task_lines(await self._valid(request, accept, again))
            except UserError as exc:
                raise UserError(f"step {step.number}: {exc}") from exc
        return plan_of(so_far)

    async def _valid(
        self,
        request: LLMRequest,
        accept: Callable[[str, bool], T],
        again: Callable[[LLMRequest, str, str], LLMRequest],
    ) -> T:
        """What `accept(reply, last)` makes of the planner's reply to `request`; a reply it
        refuses as not validating goes back with the error (`again`), up to `max_repairs`
        times (the planner's own repair budget), and the last refusal is raised."""
        for repairs in range(self.settings.max_repairs + 1):
            last = repairs == self.settings.max_repairs
            reply = "".join([delta.text async for delta in self.llm.stream(request)])
            try:
                return accept(reply, last)
            except UserError as exc:
                if last or "does not validate" not in str(exc):
                    raise
                request = again(request, reply, str(exc))
        raise AssertionError("unreachable")

    def named_plan(self, name: str, version: int | None = None) -> NamedPlan:
        """Version `version` of the named plan `name` (default: its latest)."""
        return self.named_plans_store().get(name, version)

    def named_plans(self) -> list[NamedPlan]:
        """The latest version of each named plan, by name."""
        return self.named_plans_store().all()

    def save_plan(
        self, name: str, plan_text: str, params: Mapping[str, str] | None = None
    ) -> NamedPlan:
        """A new version of `name` from `plan_text` (the plan language, `{param}` where a
        parameter goes), validated as a compiled one; `params` (name -> str, int, float or
        bool) default to the latest version's."""
        return self.named_plans_store().save(name, plan_text, params=params)

    def run_plan(
        self, name: str, /, *, plan_version: int | None = None, **params: Any
    ) -> RunResult:
        """Run the named plan `name` with `params` (blocking).  See `arun_plan`.  `name` is
        given by position and the version as `plan_version`, so a runbook's parameters may be
        called `name` or `version` (deploy_check's is)."""
        return self._blocking(
            "run_plan", lambda: self.arun_plan(name, plan_version=plan_version, params=params)
        )

    async def arun_plan(
        self,
        name: str,
        /,
        *,
        plan_version: int | None = None,
        params: Mapping[str, Any] | None = None,
        subscribers: Subscribers = None,
        check: bool = True,
        admission: Admission | None = None,
        user: str | None = None,
        **values: Any,
    ) -> RunResult:
        """Run version `plan_version` (default: the latest) of the named plan `name` with its
        parameters (`params`, or as keywords; text is read as the parameter's type) bound as
        data: a compiled run, journaled like any, without a planner call; the joiner answers
        unless the plan ends with its answer (`join("...")`), and never plans again (a failed
        step is reported, not replanned around).  A missing, unknown or mistyped
        parameter raises UserError.  `subscribers`, `check`, `admission`, `user`: as `arun`."""
        plans = self.named_plans_store()
        plan = plans.get(name, plan_version)
        given = plans.start(plan, {**(params or {}), **values})
        # The reviewed plan, and nothing else: no replan writes steps nobody reviewed (they
        # repeated side effects the plan had already taken).
        settings = dataclasses.replace(
            self._for_run({"mode": "compiled", "user": user}), max_replans=0
        )
        question = plan.question(given.params)
        return await self._session(
            settings, question, subscribers, check, admission=admission, given=given
        )

    def named_plans_store(self) -> NamedPlans:
        """The journal's named plans, checked against this runtime's tools."""
        if self.journal is None:
            raise UserError("named plans are kept in the journal: Runtime(..., journal=PATH)")
        answers = self.settings.plan_answers is not False
        return NamedPlans(self.journal, self.tools, plan_answers=answers)
