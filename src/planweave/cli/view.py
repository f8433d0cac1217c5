"""The live terminal view of a run, built from nothing but the event stream."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ..events import (
    AnswerDelta,
    AnswerEvent,
    AnswerUngrounded,
    CacheHit,
    Event,
    LLMCallFinished,
    LLMCallStarted,
    LLMProgress,
    LLMReplayDiverged,
    LLMRetry,
    ModelAcquired,
    ModelWaiting,
    PlanApproved,
    PlanAwaitingApproval,
    PlanInvalid,
    PlanRejectedEvent,
    ReplanEvent,
    TaskCancelled,
    TaskEnded,
    TaskFailed,
    TaskFinished,
    TaskPlanned,
    TaskRecovery,
    TaskSkipped,
    TaskStarted,
)
from ..records import dollars, item_call

# Control characters (but tab and newline) a model or a tool wrote must not reach the terminal:
# ESC starts escape sequences that retitle the window, move the cursor or worse.  Each becomes
# U+FFFD, one character for one, so styled spans over the text stay where they were.
_CONTROLS = {c: "\ufffd" for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]}


def terminal_safe(text: str) -> str:
    """`text` with every control character but tab and newline shown as U+FFFD."""
    return text.translate(_CONTROLS)


class _PlainConsole(Console):
    def print(self, *objects: Any, **kwargs: Any) -> None:
        # A line of text (an error, a note) stays one line when the output is not a terminal:
        # scripts and logs read it whole, where Rich would wrap it at 80 columns.
        if not self.is_terminal and all(isinstance(o, str | Text) for o in objects):
            kwargs.setdefault("soft_wrap", True)
        super().print(*(_safe(o) for o in objects), **kwargs)


def _safe(obj: Any) -> Any:
    if isinstance(obj, str):
        return terminal_safe(obj)
    if isinstance(obj, Text):
        safe = obj.copy()
        safe.plain = terminal_safe(obj.plain)
        return safe
    return obj


def plain_console(*, stderr: bool = False) -> Console:
    """A console that prints text as it is.  What it prints comes from models, tools, users and
    journal files, so no markup (`[/bold]` would crash it, `[local]` would vanish), no emoji codes
    (`:x:`), no highlighting and no control characters: styles are given as `Text` spans
    (`labelled`), never in strings.
    """
    return _PlainConsole(stderr=stderr, markup=False, emoji=False, highlight=False)


def labelled(label: str, style: str, text: object) -> Text:
    """`label` in `style`, then `text` as it is."""
    return Text.assemble((label, style), " ", terminal_safe(str(text)))


_SHOWN_ITEMS = 8  # a fan-out's elements in the live view: a wide one would fill the terminal

STYLE = {
    "pending": "dim",
    "running": "yellow",
    "done": "green",
    "failed": "red",
    "skipped": "magenta",
    "cancelled": "red dim",
}


def run_status(status: str, failed: int) -> Text:
    """A run's status as lists show it: a finished run with failed tasks says how many."""
    if status == "finished" and failed:
        return Text(f"finished, {failed} failed", style="yellow")
    return Text(status, style=STYLE.get(status, ""))


@dataclass
class _Row:
    task_id: int | str  # a fan-out's element reads "3.1"
    tool: str
    call: str
    deps: list[int]
    status: str = "pending"
    start: float | None = None
    end: float | None = None
    note: str = ""


@dataclass
class DagView:
    """The live terminal view, built from nothing but the event stream."""

    rows: dict[int, _Row] = field(default_factory=dict)
    # A fan-out's elements by task id and item, shown under their task.
    items: dict[int, dict[int, _Row]] = field(default_factory=dict)
    llm_state: str = ""
    llm_model: str = ""
    notes: list[str] = field(default_factory=list)
    now: float = 0.0
    # The answer as it streams; the whole answer is printed apart once the run has it.
    answer: str = ""
    # The LLM call under way: when it began (the run's clock) and its tokens so far.
    llm_started: float | None = None
    llm_tokens: int = 0
    # The run's finished LLM calls: how many, their prompt and completion tokens.
    llm_usage: list[int] = field(default_factory=lambda: [0, 0, 0])
    llm_cost: float | None = None  # their cost, where the model's price is set
    # A live view's clock runs on between events (`tick`); a recorded run's stands still.
    ticking: bool = False
    _heard: float = field(default=0.0, repr=False)

    def _row(self, event: Event) -> _Row:
        """The row an event of a task is about: the task's, or one of its elements'."""
        task_id: int = getattr(event, "task_id")  # noqa: B009 - every task event has one
        item: int | None = getattr(event, "item", None)
        if item is None:
            return self.rows[task_id]
        task = self.rows[task_id]
        rows = self.items.setdefault(task_id, {})
        if item not in rows:
            rows[item] = _Row(f"{task_id}.{item}", task.tool, task.call, [])
        return rows[item]

    def clock(self) -> float:
        """The run's clock: the last event's time, and in a live view the time since."""
        return self.now + (time.monotonic() - self._heard if self.ticking else 0.0)

    def __call__(self, event: Event) -> None:
        """Update the view with one event of the run."""
        self.now = event.t
        self._heard = time.monotonic()
        if isinstance(event, TaskStarted) and event.item is not None:
            self._row(event).call = item_call(event.tool, event.arguments)
        match event:
            case TaskPlanned() | TaskStarted() | TaskEnded() | TaskRecovery():
                self._on_task(event)
            case (
                LLMCallStarted()
                | LLMProgress()
                | ModelWaiting()
                | ModelAcquired()
                | LLMCallFinished()
            ):
                self._on_llm(event)
            case AnswerDelta() | AnswerUngrounded() | AnswerEvent():
                self._on_answer(event)
            case _:
                self._on_note(event)

    def _on_task(self, event: Event) -> None:
        """Update a task's row (or an element's) with an event of the task."""
        match event:
            case TaskPlanned():
                self.rows[event.task_id] = _Row(event.task_id, event.tool, event.call, event.deps)
            case TaskStarted():
                row = self._row(event)
                row.status, row.start = "running", event.t
            case TaskFinished():
                row = self._row(event)
                row.status, row.end = "done", event.t
            case TaskFailed():
                row = self._row(event)
                row.status, row.end, row.note = (
                    "failed",
                    event.t,
                    str(event.error.get("message", "")),
                )
            case TaskSkipped():
                row = self._row(event)
                row.status, row.note = "skipped", str(event.error.get("message", ""))
            case TaskCancelled():
                row = self._row(event)
                row.status, row.end = "cancelled", event.t if row.start is not None else None
            case TaskRecovery():
                row = self._row(event)
                row.note = f"{event.pattern} after {event.category}: {event.error}"
            case _:
                pass

    def _on_llm(self, event: Event) -> None:
        """Update the LLM line and the run's LLM usage with an event of an LLM call."""
        match event:
            case LLMCallStarted():
                self.llm_model = event.model
                self.llm_state = f"{event.purpose} ({event.model}) streaming…"
                self.llm_started, self.llm_tokens = event.t, 0
            case LLMProgress():
                self.llm_tokens = event.tokens
            case ModelWaiting():
                self.llm_state = (
                    f"{event.purpose} waiting for the model ({self.llm_model}), "
                    f"{event.ahead} ahead…"
                )
            case ModelAcquired():
                self.llm_state = f"{event.purpose} ({self.llm_model}) streaming…"
            case LLMCallFinished():
                self.llm_state, self.llm_started = "", None
                calls, prompt, completion = self.llm_usage
                self.llm_usage = [
                    calls + 1,
                    prompt + event.prompt_tokens,
                    completion + event.completion_tokens,
                ]
                if event.cost is not None:
                    self.llm_cost = (self.llm_cost or 0.0) + event.cost
            case _:
                pass

    def _on_answer(self, event: Event) -> None:
        """Update the streaming answer: a piece more, withdrawn (with a note why), or complete."""
        match event:
            case AnswerDelta():
                self.answer += event.text
            case AnswerUngrounded():
                self.answer = ""  # withdrawn: the next pieces start a new answer
                why = [f"{', '.join(event.numbers)} from no result"] if event.numbers else []
                why += [event.misnamed] if event.misnamed else []
                self.notes.append(f"answer withdrawn: {'; '.join(why)}")
            case AnswerEvent():
                self.answer = ""
            case _:
                pass

    def _on_note(self, event: Event) -> None:
        """Note an event of the plan, the cache or an LLM call's replay or retry (and update the
        rows an approval touches); other events leave the view as it is."""
        match event:
            case PlanInvalid():
                self.notes.append(f"invalid plan: {event.error.get('text')}")
            case LLMReplayDiverged():
                self.notes.append(
                    f"{event.purpose} call {event.call}: its recorded response answered another "
                    "request, asked again"
                )
            case LLMRetry():
                self.notes.append(
                    f"{event.purpose} call {event.call}: {event.category}, retry in "
                    f"{event.delay:.1f} s"
                )
            case ReplanEvent():
                self.notes.append(f"replan {event.plan_round}: {event.reason}")
            case PlanAwaitingApproval():
                ids = ", ".join(str(t["id"]) for t in event.tasks)
                self.notes.append(f"awaiting approval ({event.approve}): tasks {ids}")
                for task in event.tasks:
                    if task["id"] in self.rows:
                        self.rows[task["id"]].note = "awaiting approval"
            case PlanApproved():
                for task_id in event.dropped:
                    self.rows.pop(task_id, None)
                edited = f", edited {', '.join(event.edits)}" if event.edits else ""
                dropped = f", dropped {', '.join(map(str, event.dropped))}" if event.dropped else ""
                self.notes.append(f"approved{edited}{dropped}")
            case PlanRejectedEvent():
                self.notes.append(f"plan rejected: {event.reason}")
            case CacheHit():
                self.notes.append(f"plan from the cache (template {event.template_id})")
            case _:
                pass

    @classmethod
    def from_tasks(cls, tasks: list[dict[str, Any]], now: float = 0.0) -> DagView:
        """The view of a recorded run, from its task objects (as `--json` has them)."""
        view = cls(now=now)
        for t in tasks:
            view.rows[t["id"]] = _Row(
                t["id"],
                t["tool"],
                t["call"],
                t["dependencies"],
                t["status"],
                t["start"],
                t["end"],
                str(t.get("error", {}).get("message", "")),
            )
            for i in t.get("items", ()):
                view.items.setdefault(t["id"], {})[i["item"]] = _Row(
                    f"{t['id']}.{i['item']}",
                    t["tool"],
                    i["call"],
                    [],
                    i["status"],
                    i["start"],
                    i["end"],
                    str(i.get("error", {}).get("message", "")),
                )
        return view

    def _ordered(self) -> list[_Row]:
        """Each task's row, then its elements' rows (the first few of a wide fan-out)."""
        out: list[_Row] = []
        for task_id, row in self.rows.items():
            out.append(row)
            items = self.items.get(task_id, {})
            out.extend(items[k] for k in sorted(items)[:_SHOWN_ITEMS])
        return out

    def render(self) -> Group:
        table = Table(box=None, pad_edge=False, header_style="bold")
        table.add_column("id", justify="right")
        table.add_column("task")
        table.add_column("needs")
        table.add_column("status")
        table.add_column("time", justify="right")
        for row in self._ordered():
            if row.start is None:
                took = ""
            else:
                took = f"{(row.end if row.end is not None else self.clock()) - row.start:.2f}s"
            call = terminal_safe(row.call)
            if len(call) > 70:
                call = call[:67] + "..."
            status = Text(row.status, style=STYLE.get(row.status, ""))
            if row.note:
                status.append(f"  {terminal_safe(row.note[:80])}", style="dim")
            table.add_row(
                str(row.task_id), Text(call), ",".join(f"${d}" for d in row.deps), status, took
            )
        parts: list[Any] = [table]
        if any(len(rows) > _SHOWN_ITEMS for rows in self.items.values()):
            parts.append(Text(f"(the first {_SHOWN_ITEMS} elements of a fan-out)", style="dim"))
        parts.extend(Text(terminal_safe(note), style="yellow") for note in self.notes[-3:])
        if self.llm_state:
            parts.append(Text(self.llm_state + self._streaming(), style="cyan"))
        calls, prompt, completion = self.llm_usage
        if calls:
            parts.append(
                Text(
                    f"LLM: {calls} call{'s' if calls != 1 else ''} · {prompt}+{completion} tokens"
                    + ("" if self.llm_cost is None else f" · {dollars(self.llm_cost)}"),
                    style="dim",
                )
            )
        if self.answer:
            parts.append(Text(terminal_safe(self.answer), style="bold"))
        return Group(*parts)

    def _streaming(self) -> str:
        """How long the call under way has taken, and its tokens so far."""
        if self.llm_started is None:
            return ""
        tokens = f" · ~{self.llm_tokens} tokens" if self.llm_tokens else ""
        return f" {max(0.0, self.clock() - self.llm_started):.1f} s{tokens}"
