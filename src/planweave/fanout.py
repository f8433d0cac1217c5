"""Fan-out: a task with `$N[*]` in an argument calls its tool once per element of task N's list.

Every element is a call of its own, all at once: its own `task_started`/`task_finished` events
(with `item`, 1-based, shown as `3.1`, `3.2`), attempts and recovery, and its own journal record,
so that a resumed run calls again only the elements that had not finished.  The tool's own
concurrency limit (`@tool(max_concurrency=)`) holds across elements and the rest of the plan;
the run's `max_concurrency` counts the fan-out once.  The task's result is the list of the
elements' results in the list's order (an empty list gives an empty list); once every element
has ended, the first failed one, if any, fails the task.  Starred references to several lists
go through them pairwise; lists of different lengths fail the task.

Two bounds hold: one task fans out over at most `max_items` elements (`max_fanout`), and one run
over at most `tally.limit` in all (`max_fanout_total`, every fan-out task of every plan round
and of every decomposition's sub-plan counted): a fan-out that would pass it fails, as a list
too long does, before any of its calls.
An element is recorded as running (`TaskStarted`) only once it holds its tool's concurrency
slot, so that after a crash only the elements that were really running are in flight.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from .errors import ProjectionError, TaskError, ToolArgumentError
from .plan import MAX_FANOUT, MAX_FANOUT_TOTAL, Ref, Task, fan_outs, format_args, project
from .records import RecordedItem, TaskRecord, item_call, plan_json
from .step import Outcome, StepRunner
from .tools import Tool

__all__ = ["FanOut", "FanOutTally"]

_LABEL_CHARS = 80  # a fanned-over name longer than this labels no result (`TaskRecord.label`)


@dataclass(slots=True)
class FanOutTally:
    """The fan-out elements a run has taken so far, of the `limit` it may take in all
    (`max_fanout_total`): one per run, shared by its scheduler and its sub-plans' (a
    decomposition cannot start a count of its own)."""

    limit: int
    used: int = 0


class FanOut:
    """Runs fan-out tasks for a scheduler, each element a step of `steps` (the scheduler's
    step runner).  `recorded` holds, by task id and item, the elements an earlier session of
    the run finished; `max_items` bounds one fan-out's elements, `tally` counts those of every
    fan-out of the run together."""

    def __init__(
        self,
        steps: StepRunner,
        *,
        recorded: Mapping[int, Mapping[int, RecordedItem]] | None = None,
        max_items: int = MAX_FANOUT,
        tally: FanOutTally | None = None,
    ) -> None:
        self.steps = steps
        self.recorded = recorded or {}
        self.max_items = max_items
        self.tally = tally if tally is not None else FanOutTally(MAX_FANOUT_TOTAL)

    def elements(self, task: Task, results: Mapping[int, Any]) -> list[dict[Ref, Any]]:
        """Each call's elements, by the list they come from; a TaskError when a list is not
        one, is too long, or is not as long as the others."""
        try:
            lists = {ref: self._list(ref, results) for ref in fan_outs(task.bound.values())}
            if len({len(v) for v in lists.values()}) > 1:
                sizes = ", ".join(f"{ref}[*] {len(v)}" for ref, v in lists.items())
                raise ToolArgumentError(
                    f"a task fans out over its lists pairwise, but they differ in length ({sizes})",
                    cause="fan_out_lengths",
                )
            size = len(next(iter(lists.values()), ()))
            if self.tally.used + size > self.tally.limit:
                raise ToolArgumentError(
                    f"{' and '.join(f'{ref}[*]' for ref in lists)} would make {size} calls, but "
                    f"this run has made {self.tally.used} of the {self.tally.limit} fan-out calls "
                    "one run may make in all (max_fanout_total): fan out over fewer items, or "
                    "raise the bound",
                    cause="fan_out_total",
                )
        except TaskError as err:
            err.task_id, err.tool = task.id, task.tool
            err.arguments = format_args(task.args, task.kwargs)
            raise
        columns = zip(*lists.values(), strict=True)
        return [dict(zip(lists, values, strict=True)) for values in columns]

    def _list(self, ref: Ref, results: Mapping[int, Any]) -> list[Any]:
        value = project(results[ref.task_id], ref)
        if not isinstance(value, list | tuple):
            raise ProjectionError(
                f"{ref}[*] fans out over a list, but {ref} is a {type(value).__name__}",
                cause="not_a_list",
            )
        if len(value) > self.max_items:
            raise ToolArgumentError(
                f"{ref}[*] has {len(value)} items; one task fans out over at most "
                f"{self.max_items} (max_fanout): narrow the list, or split it with "
                f"projections such as ${ref.task_id}[0]",
                cause="fan_out_too_wide",
            )
        return list(value)

    async def run(self, rec: TaskRecord, tool: Tool, results: Mapping[int, Any]) -> list[Any]:
        """Call `tool` once per element, all at once; the results in order, or the first
        failed element's error once every element has ended."""
        task = rec.task
        values = self.elements(task, results)
        self.tally.used += len(values)
        arguments = {name: plan_json(v) for name, v in task.bound.items()}
        self.steps.started(rec, arguments, items=len(values))
        rec.items = [TaskRecord(task, rec.plan_round, item=k) for k in range(1, len(values) + 1)]
        out: list[Any] = [None] * len(values)
        async with anyio.create_task_group() as tg:
            for sub, value in zip(rec.items, values, strict=True):
                tg.start_soon(self._element, sub, tool, value, results, out)
        failed = next((sub for sub in rec.items if sub.error is not None), None)
        if failed is not None:
            assert failed.error is not None
            assert failed.item is not None
            raise _for_task(failed.error, failed.item, len(values))
        return out

    async def _element(
        self, sub: TaskRecord, tool: Tool, value: Any, results: Mapping[int, Any], out: list[Any]
    ) -> None:
        task, item, steps = sub.task, sub.item, self.steps
        assert item is not None
        try:
            arguments = steps.invoker.resolve_arguments(task, tool, task.bound, results, item=value)
        except TaskError as err:
            steps.ended(sub, Outcome(error=err))
            return
        sub.call = item_call(task.tool, arguments)
        if len(value) == 1:
            (fanned,) = value.values()
            sub.label = fanned if isinstance(fanned, str) and len(fanned) <= _LABEL_CHARS else ""
        earlier = self.recorded.get(task.id, {}).get(item)
        if earlier is not None and earlier.call == sub.call:
            outcome = steps.reuse(sub, earlier)
        else:
            try:
                async with steps.slot(tool):
                    # Recorded as running only now that it holds its slot (write-ahead): a crash
                    # leaves in flight only the elements that were running, not those waiting.
                    steps.begin(sub)
                    outcome = await steps.run(sub, tool, arguments)
            except anyio.get_cancelled_exc_class():
                steps.cancelled(sub)
                raise
        out[item - 1] = outcome.result
        steps.ended(sub, outcome)


def _for_task(err: TaskError, item: int, items: int) -> TaskError:
    """An element's failure as its fan-out task's: the same class, naming the element."""
    whole = copy.copy(err)
    whole.args = (f"item {item} of {items}: {err.message}",)
    return whole
