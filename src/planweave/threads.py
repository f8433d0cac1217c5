"""Conversations: a run in a thread (`run(q, thread=...)`, `--thread`) answers a follow-up from
what the thread already found.

The planner and the joiner read the question with the thread's last turns after it (their
questions, answers and results), so "and Belgium?" means what it follows.  A call the plan
writes again word for word (`population("France")`) of a `pure` tool takes the result an earlier
turn recorded instead of calling the tool (`TaskFinished.recalled` names that turn's run; the
journal keeps it).  Only turns whose records carry this user's seal are read: a journal is
untrusted, and an edited turn must not answer for its tool.  The thread is kept with the run's
settings (`RunSettings.thread`), so a resumed run goes on in it.

The OpenAI-compatible endpoint's earlier `messages` are a thread too (`from_messages`): their
questions and answers, no results.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from .errors import JournalUnverified, UserError
from .plan import render_text
from .records import Recorded, clip
from .store import Journal
from .store.codec import Unstorable, decode
from .tools import ToolRegistry

__all__ = ["MAX_TURNS", "Memory", "Turn", "check_thread", "from_messages", "recall"]

MAX_TURNS = 5  # the last turns the planner reads
_TURN_CHARS = 1_500  # one turn's text, results included
_RESULT_CHARS = 200  # one result's text
_THREAD_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def check_thread(thread: str) -> str:
    """`thread`, if it is a thread id (1 to 128 letters, digits, `.`, `_`, `:` or `-`)."""
    if not isinstance(thread, str) or not _THREAD_RE.match(thread):
        raise UserError(
            f"a thread id is 1 to 128 letters, digits, '.', '_', ':' or '-', not {thread!r}"
        )
    return thread


@dataclass(frozen=True)
class Turn:
    """One earlier turn: its question, its answer, its results as (call, text)."""

    question: str
    answer: str
    results: tuple[tuple[str, str], ...] = ()

    def text(self) -> str:
        lines = [f"Q: {self.question}", f"A: {self.answer}"]
        lines += [f"  {call} = {value}" for call, value in self.results]
        return clip("\n".join(lines), _TURN_CHARS)


@dataclass
class Memory:
    """What a run knows of its thread: the earlier `turns` (oldest first) and, by call text,
    the outcomes of pure tools' calls it may take instead of calling them again."""

    turns: list[Turn] = field(default_factory=list)
    remembered: dict[str, Recorded] = field(default_factory=dict)

    def context(self, question: str) -> str:
        """`question` as the planner and the joiner read it: the earlier turns after it."""
        if not self.turns:
            return question
        turns = "\n".join(t.text() for t in self.turns[-MAX_TURNS:])
        return (
            f"{question}\n\n(This question follows earlier ones in the same conversation, "
            f"oldest first; use what they found:\n{turns})"
        )


def recall(
    journal: Journal, thread: str, tools: ToolRegistry, *, before: str | None = None
) -> Memory:
    """The memory of `thread` from the journal: its finished turns (before run `before`, when
    given), each read only if its records carry this user's seal."""
    memory = Memory()
    rows = journal.thread_runs(thread)
    if before is not None:
        ids = [r["id"] for r in rows]
        rows = rows[: ids.index(before)] if before in ids else rows
    for row in rows:
        if row["status"] != "finished" or row["answer"] is None:
            continue
        try:
            journal.verify(row["id"])
        except JournalUnverified:
            continue  # edited, or sealed by someone else: it answers for nothing
        results = _results(journal, row["id"], tools, memory.remembered)
        memory.turns.append(Turn(row["question"], row["answer"], tuple(results)))
    return memory


def _results(
    journal: Journal, run_id: str, tools: ToolRegistry, remembered: dict[str, Recorded]
) -> list[tuple[str, str]]:
    """A turn's finished results as (call, text); a pure tool's literal call is remembered
    (from the turn that first recorded it)."""
    out = []
    for task in journal.recorded_tasks(run_id).values():
        if task.status != "done" or task.tool == "join":
            continue
        try:
            value = decode(task.result)
        except Unstorable:
            continue
        out.append((task.call, clip(render_text(value), _RESULT_CHARS)))
        tool = tools.get(task.tool)
        if tool is not None and tool.pure and "$" not in task.call:
            remembered.setdefault(
                task.call,
                Recorded(task.call, "done", value, task.result, attempts=0, run_id=run_id),
            )
    return out


def from_messages(pairs: Iterable[tuple[str, str]]) -> Memory:
    """The memory a chat's earlier (question, answer) pairs make: no results to reuse."""
    return Memory(turns=[Turn(q, a) for q, a in pairs if q.strip()])
