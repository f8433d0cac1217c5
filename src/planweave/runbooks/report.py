"""What a named plan's run did, in the runtime's own words, after its answer: each side effect
taken (its call with the values it ran with, and what it gave), each one not taken and why, each
one that failed.  A runbook's actions are stated as they happened, never re-typed by the joiner
(the 1.5B joiner left the rotation out of "disk at 94 %" and wrote a skipped message as sent)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import TaskError
from ..plan import render_text, resolve
from ..records import TaskRecord, TaskStatus, clip, item_call
from ..redaction import redact
from ..tools import ToolRegistry

__all__ = ["with_actions"]

_SHOWN = 200  # characters of a call or a result


def with_actions(
    answer: str, records: Iterable[TaskRecord], tools: ToolRegistry, results: Mapping[int, Any]
) -> str:
    """`answer`, then what the run's side-effecting tasks did; `answer` alone when the plan has
    none (its tools say which have side effects)."""
    done: list[str] = []
    others: list[str] = []
    acting = 0
    for rec in records:
        tool = tools.get(rec.task.tool)
        if tool is None or not tool.side_effects:
            continue
        acting += 1
        if rec.items:  # a fan-out: every element that finished, whatever became of the task
            done += [_done(r) for r in rec.items if r.status is TaskStatus.DONE]
        elif rec.status is TaskStatus.DONE:
            done.append(_done(rec, results))
        if rec.status is TaskStatus.DONE:
            continue
        if rec.not_taken and rec.error is not None:
            others.append(f"Not taken: {rec.task.tool} ({_shown(rec.error.message)}).")
        elif rec.error is not None:
            others.append(f"Not done: {rec.task.tool} ({_shown(rec.error.message)}).")
    if not acting:
        return answer
    lines = [f"Actions taken: {'; '.join(done) if done else 'none'}."]
    return "\n".join([answer, "", *lines, *others])  # the session masks the whole answer


def _done(rec: TaskRecord, results: Mapping[int, Any] | None = None) -> str:
    call = rec.call
    if not call:
        try:
            args = {k: resolve(v, results or {}) for k, v in rec.task.bound.items()}
            call = item_call(rec.task.tool, args)
        except TaskError:
            call = rec.task.call_text()
    return f"{_shown(call)} -> {_shown(render_text(rec.result))}"


def _shown(text: str) -> str:
    """`text` with known secrets masked, then clipped (clipped first, a secret cut in two
    would no longer be known)."""
    return clip(redact(text), _SHOWN)
