"""The plan cache: a new question of a shape already planned runs the earlier plan with its own
values in the slots, without a planner call.

`PlanCache.consult` looks a question up before planning (emitting `CacheHit` or `CacheMiss`);
`PlanCache.learner` is a run's subscriber that makes a template from a run that went well and
judges a template by the runs it served.  Templates live in the journal's SQLite file
(`table`), keyed by the tool registry's signature; `template` says what a template
is and when a question may use one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import JournalError, PlanError
from ..events import (
    AnswerUngrounded,
    CacheAdapted,
    CacheHit,
    CacheMiss,
    Event,
    EventBus,
    LLMCallFinished,
    PlanInvalid,
    ReplanEvent,
    RunFinished,
    RunStarted,
    TaskFailed,
    TaskPlanned,
    TaskRecovery,
)
from ..parser import parse_call
from ..plan import Task
from ..redaction import redact
from ..store import Journal
from ..tools import JOIN, ToolRegistry
from .table import StoredTemplate, TemplateTable
from .template import Fill, NotATemplate, PlanTemplate, Slot, extract, registry_signature

__all__ = ["PlanCache", "PlanTemplate", "registry_signature", "resumed_start"]

log = logging.getLogger("planweave.cache")

UNVERIFIED = (
    "the template this question reads as failed verification and was not used: it is not "
    "sealed by this user's journal key (the journal's file was edited, or it was stored "
    "before templates were sealed, or by another user)"
)

MAX_QUESTION_CHARS = 2_000  # longer questions are not looked up (nor made into templates)
ADAPT_SIMILARITY = 0.5  # the least share of words a question must have with a template to adapt it


class PlanCache:
    """Plan templates in a journal's file.

    `max_templates` bounds the table (least recently used go first); a template whose runs
    failed or needed a replan `evict_after` times in a row is removed.  Runs that called a tool
    with side effects make no template unless `side_effects` is True.  With `adapt`, a question
    no template fits but one is worded much like (half its words or more) is planned with that
    template as the one worked example (`CacheAdapted`): its slots as placeholders, and none of
    the words of the question it was made from that the new question does not say itself (see
    `PlanTemplate.shown_example`), since that question may be another user's."""

    def __init__(
        self,
        journal: Journal | str | Path,
        *,
        max_templates: int = 1000,
        evict_after: int = 2,
        side_effects: bool = False,
        adapt: bool = False,
    ) -> None:
        self.journal = journal if isinstance(journal, Journal) else Journal(journal)
        self.table = TemplateTable(self.journal)
        self.max_templates = max_templates
        self.evict_after = evict_after
        self.side_effects = side_effects
        self.adapt = adapt
        self._reported: set[str] = set()  # unverified templates already logged

    # ------------------------------------------------------------------ before planning

    def consult(self, question: str, tools: ToolRegistry, bus: EventBus) -> str | None:
        """The validated plan for `question` from a template, or None; says which on `bus`."""
        found = self.lookup(question, tools)
        bus.emit(found)
        return found.plan if isinstance(found, CacheHit) else None

    def lookup(self, question: str, tools: ToolRegistry) -> CacheHit | CacheAdapted | CacheMiss:
        """What the cache has for `question` (not yet emitted): a plan, an example to plan
        with (when `adapt` is on), or why neither."""
        if len(question) > MAX_QUESTION_CHARS:
            return CacheMiss(reason=f"the question is longer than {MAX_QUESTION_CHARS} characters")
        signature = registry_signature(tools)
        try:
            stored = self.table.candidates(signature)
        except JournalError as exc:
            return CacheMiss(reason=f"the cache could not be read: {exc.message}")
        found: CacheHit | CacheAdapted | CacheMiss = self._hit(question, tools, signature, stored)
        if isinstance(found, CacheMiss) and self.adapt:
            return self._adaptation(question, tools, stored) or found
        return found

    def _hit(
        self, question: str, tools: ToolRegistry, signature: str, stored: list[StoredTemplate]
    ) -> CacheHit | CacheMiss:
        refused: CacheMiss | None = None
        for row, fill in _fills(stored, question):
            # A template is a plan run without the planner: nothing of one whose seal does not
            # check is used, not even its counters.  Checked only here, for the rows this
            # question reads as (a seal costs tens of µs; the table may hold a thousand).
            if not self._verified(row):
                refused = refused or CacheMiss(reason=UNVERIFIED, template_id=row.id)
                continue
            if fill.refused is not None:
                refused = refused or CacheMiss(reason=fill.refused, template_id=row.id)
                continue
            try:
                plan, tasks = fill.validated(tools)
            except PlanError as exc:
                refused = refused or CacheMiss(
                    reason=f"the filled plan is not valid: {exc}", template_id=row.id
                )
                # A template whose own plan does not validate (a damaged row) goes the way of
                # one whose runs fail; an odd value in a sound template is this question's.
                if not _validates(fill.template, tools):
                    self._judge_quietly(signature, row.id)
                continue
            if not self.side_effects and any(
                tools[t.tool].side_effects for t in tasks if not t.is_join
            ):
                # Only a damaged or forged row can say so: no template is made of such a run.
                refused = refused or CacheMiss(
                    reason="the cached plan calls a tool with side effects", template_id=row.id
                )
                continue
            try:
                self.table.used(signature, row.id)
            except JournalError as exc:
                log.warning("the plan cache could not count a hit: %s", exc.message)
            return CacheHit(template_id=row.id, plan=plan, tokens_saved=row.tokens)
        return refused or self._miss(question, signature)

    def _miss(self, question: str, signature: str) -> CacheMiss:
        """No template of `question`'s shape for these tools: says so, and whether one was made
        for another tool set (a tool added, removed or changed since)."""
        try:
            others = self.table.others(signature)
        except JournalError:
            others = []
        fits = _fills(others, question)
        if not fits:
            return CacheMiss(reason="no template of this question's shape")
        row = fits[0][0]
        return CacheMiss(
            reason=f"no template of this question's shape for these tools (tool set "
            f"{signature[:8]}); template {row.id} of its shape was made for another tool set "
            f"({row.tools[:8]}): a tool was added, removed or changed since"
        )

    def _verified(self, row: StoredTemplate) -> bool:
        if self.table.verified(row):
            return True
        if row.id not in self._reported:  # once per template: the id only (the row is untrusted)
            self._reported.add(row.id)
            log.warning("the plan cache does not use template %r: %s", row.id[:12], UNVERIFIED)
        return False

    def _adaptation(
        self, question: str, tools: ToolRegistry, stored: list[StoredTemplate]
    ) -> CacheAdapted | None:
        """The verified template in good standing worded most like `question`, if it shares
        at least `ADAPT_SIMILARITY` of its words, as the planner's one example
        (`shown_example`: no text of the earlier question that `question` does not say)."""
        scored = []
        for row in stored:
            template = _template(row)
            if template is not None and row.bad == 0:
                scored.append((template.similarity(question), row.used, row, template))
        scored.sort(key=lambda item: (item[0], item[1]), reverse=True)
        for score, _, row, template in scored:
            if score < ADAPT_SIMILARITY:
                break
            if not self._verified(row):
                continue
            shown = template.shown_example(question, tools)
            if shown is None:
                continue
            return CacheAdapted(template_id=row.id, question=shown[0], plan=shown[1])
        return None

    def _judge_quietly(self, signature: str, template_id: str) -> None:
        try:
            self.table.judged(signature, template_id, good=False, evict_after=self.evict_after)
        except JournalError as exc:
            log.warning("the plan cache could not count a failure: %s", exc.message)

    # ------------------------------------------------------------------ after the run

    def learner(self, tools: ToolRegistry) -> Callable[[Event], None]:
        """A subscriber for one run: on its end, makes a template of it or judges the one it
        was served.  Never fails the run: the cache is an optimisation."""
        return _Learner(self, tools)

    def learn(
        self,
        question: str,
        tasks: list[Task],
        tools: ToolRegistry,
        *,
        run_id: str = "",
        tokens: int = 0,
    ) -> PlanTemplate | None:
        """Make and store the template of `question` answered by `tasks`; None when the plan
        cannot be one (see `template.extract`) or the same shape is stored already."""
        if len(question) > MAX_QUESTION_CHARS or redact(question) != question:
            return None  # a question holding a secret is never kept (nor shown as an example)
        if not self.side_effects and any(
            t.tool in tools and tools[t.tool].side_effects for t in tasks
        ):
            return None
        try:
            template = extract(question, tasks, tools)
        except NotATemplate as exc:
            log.debug("no template from %r: %s", question, exc)
            return None
        stored = self.table.put(
            registry_signature(tools),
            template.to_dict(),
            source_run=run_id,
            tokens=tokens,
            bound=self.max_templates,
        )
        return template if stored else None

    def judge(self, tools: ToolRegistry, template_id: str, *, good: bool) -> bool:
        """Count a served run's outcome; returns whether the template was evicted."""
        return self.table.judged(
            registry_signature(tools), template_id, good=good, evict_after=self.evict_after
        )

    # ------------------------------------------------------------------ for `planweave cache`

    def templates(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The stored templates, each with `verified`: whether the cache would use it."""
        return [self._shown(t) for t in self.table.all(limit)]

    def find(self, prefix: str) -> list[dict[str, Any]]:
        return [self._shown(t) for t in self.table.find(prefix)]

    def _shown(self, template: StoredTemplate) -> dict[str, Any]:
        return template.to_dict() | {"verified": self.table.verified(template)}

    def clear(self, template_id: str | None = None) -> int:
        return self.table.delete(template_id)


def resumed_start(decision: dict[str, Any] | None) -> tuple[str | None, tuple[str, str] | None]:
    """What a resumed run starts its first plan from: the plan the cache gave it, or the example
    it planned with (`Journal.cache_decision`), so the recorded planner call replays; or the
    named plan it ran (`runbooks`), which needs no planner call either."""
    if decision is None:
        return None, None
    plan, question = decision.get("plan"), decision.get("question")
    if decision.get("kind") in ("cache_hit", "named_plan") and isinstance(plan, str):
        return plan, None
    if (
        decision.get("kind") == "cache_adapted"
        and isinstance(plan, str)
        and isinstance(question, str)
    ):
        return None, (question, plan)
    return None, None


def _fills(stored: list[StoredTemplate], question: str) -> list[tuple[StoredTemplate, Fill]]:
    """The templates `question` reads as, the most specific first (the most literal text)."""
    out = []
    for row in stored:
        template = _template(row)
        if template is None:
            continue
        fill = template.match(question)
        if fill is not None:
            out.append((row, fill))
    out.sort(key=lambda pair: (pair[1].refused is not None, -pair[1].template.specificity))
    return out


def _template(row: StoredTemplate) -> PlanTemplate | None:
    """The row as a template; None for a row that is damaged (the file is not trusted)."""
    try:
        slots = tuple(Slot.from_dict(s) for s in row.slots)
        if not all(s.kind in ("text", "number") and isinstance(s.example, str) for s in slots):
            return None
        template = PlanTemplate(key=row.key, slots=slots, plan=row.plan, question=row.question)
    except (KeyError, TypeError, AttributeError):
        return None
    return template if template.sound() else None


def _validates(template: PlanTemplate, tools: ToolRegistry) -> bool:
    try:
        template.example_plan(tools)
    except PlanError:
        return False
    return True


@dataclass
class _Learner:
    """What one run's events say about its first plan."""

    cache: PlanCache
    tools: ToolRegistry
    question: str = ""
    run_id: str = ""
    calls: list[TaskPlanned] = field(default_factory=list)
    served: str | None = None
    tokens: int = 0
    troubled: bool = False  # a repair, a replan, a failure, a recovery or an ungrounded answer

    def __call__(self, event: Event) -> None:
        match event:
            case RunStarted():
                self.question, self.run_id = event.question, event.run_id
            case TaskPlanned() if event.plan_round == 0:
                self.calls.append(event)
            case CacheHit():
                self.served = event.template_id
            case LLMCallFinished() if event.purpose in ("planner", "repair"):
                self.tokens += event.prompt_tokens + event.completion_tokens
            case PlanInvalid() | ReplanEvent() | TaskFailed() | TaskRecovery() | AnswerUngrounded():
                self.troubled = True
            case RunFinished():
                try:
                    self._finished(event)
                except Exception as exc:  # the cache is an optimisation: never fail the run
                    log.warning("the plan cache could not learn from run %s: %s", self.run_id, exc)

    def _finished(self, event: RunFinished) -> None:
        good = event.status == "finished" and not self.troubled and event.replans == 0
        if self.served is not None:
            self.cache.judge(self.tools, self.served, good=good)
        elif good and self.question and self.calls:
            tasks = _tasks(self.calls)
            self.cache.learn(
                self.question, tasks, self.tools, run_id=self.run_id, tokens=self.tokens
            )


def _tasks(calls: list[TaskPlanned]) -> list[Task]:
    """The plan again from its announced calls, closed by join()."""
    tasks: list[Task] = []
    for event in calls:
        task = parse_call(event.call, event.task_id, [t.id for t in tasks])
        tasks.append(task)
    tasks.append(Task(max(t.id for t in tasks) + 1, JOIN))
    return tasks
