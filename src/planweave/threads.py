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

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .errors import JournalUnverified, UserError
from .plan import render_text
from .records import Recorded, clip
from .redaction import MASK, redact
from .store import Journal
from .store.codec import Unstorable, decode
from .tools import ToolRegistry

__all__ = [
    "MAX_TURNS",
    "RECALLED_TURNS",
    "THREAD_PATTERN",
    "Memory",
    "Turn",
    "asks_afresh",
    "check_thread",
    "from_messages",
    "recall",
]

MAX_TURNS = 5  # the last turns the planner reads
RECALLED_TURNS = 20  # the last turns whose results may be recalled (and read at all)
_TURN_CHARS = 1_500  # one turn's text, results included
_RESULT_CHARS = 200  # one result's text
THREAD_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}"  # a thread id, whole
_THREAD_RE = re.compile(THREAD_PATTERN)


# A question that asks for the facts afresh ("check again", "the latest", "now"): its calls are
# made again, whatever earlier turns found.
_AFRESH = re.compile(
    r"\b(again|afresh|latest|now|currently|current|today|refresh|re-?check|up[- ]to[- ]date)\b",
    re.I,
)


def asks_afresh(question: str) -> bool:
    """Whether `question` asks for the facts afresh, so that no earlier result is recalled."""
    return _AFRESH.search(question) is not None


def check_thread(thread: str) -> str:
    """`thread`, if it is a thread id (1 to 128 letters, digits, `.`, `_`, `:` or `-`)."""
    if not isinstance(thread, str) or not _THREAD_RE.fullmatch(thread):
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
    journal: Journal,
    thread: str,
    tools: ToolRegistry,
    *,
    before: str | None = None,
    user: str | None = None,
) -> Memory:
    """The memory of `thread` from the journal: its last `RECALLED_TURNS` finished turns
    (before run `before`, when given) that answered the same `user`, each read only if its
    records carry this user's seal, its answer from its sealed `run_finished` event."""
    memory = Memory()
    rows = journal.thread_runs(thread)
    if before is not None:
        ids = [r["id"] for r in rows]
        rows = rows[: ids.index(before)] if before in ids else rows
    turns: list[tuple[dict[str, Any], str]] = []
    for row in reversed(rows):  # the newest first, until enough are read
        if len(turns) == RECALLED_TURNS:
            break
        if row.get("user") != user:
            continue  # another user's turn answers nothing of this one's
        try:
            journal.verify(row["id"])
        except JournalUnverified:
            continue  # edited, or sealed by someone else: it answers for nothing
        answer = _sealed_answer(journal, row["id"])
        if answer is not None:
            turns.append((row, answer))
    for row, answer in reversed(turns):
        results = _results(journal, row["id"], tools, memory.remembered)
        memory.turns.append(Turn(redact(row["question"]), redact(answer), tuple(results)))
    return memory


def _sealed_answer(journal: Journal, run_id: str) -> str | None:
    """The answer of a finished run as its last `run_finished` event (a sealed row) says."""
    rows = journal.read(
        "SELECT data FROM events WHERE run_id = ? AND kind = 'run_finished' "
        "ORDER BY seq DESC LIMIT 1",
        (run_id,),
    )
    try:
        data = json.loads(rows[0]["data"]) if rows else None
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("status") != "finished":
        return None
    answer = data.get("answer")
    return answer if isinstance(answer, str) else None


def _results(
    journal: Journal, run_id: str, tools: ToolRegistry, remembered: dict[str, Recorded]
) -> list[tuple[str, str]]:
    """A turn's finished results as (call, text); a pure tool's literal call is remembered
    (from the first of the turns read that recorded it) when its result is the tool's own: not one
    recovery gave (a fallback's, a person's), not masked for the journal, not of a tool
    whose result depends on its run's context."""
    recovered = {
        r["id"]
        for r in journal.read(
            "SELECT id FROM tasks WHERE run_id = ? AND recovery IS NOT NULL AND recovery != '[]'",
            (run_id,),
        )
    }
    out = []
    for task in journal.recorded_tasks(run_id).values():
        if task.status != "done" or task.tool == "join":
            continue
        try:
            value = decode(task.result)
        except Unstorable:
            continue
        text = render_text(value)
        out.append((task.call, clip(redact(text), _RESULT_CHARS)))
        tool = tools.get(task.tool)
        own = task.id not in recovered and MASK not in text
        if tool is not None and tool.pure and tool.context is None and own and "$" not in task.call:
            remembered.setdefault(
                task.call,
                Recorded(task.call, "done", value, task.result, attempts=0, run_id=run_id),
            )
    return out


def from_messages(pairs: Iterable[tuple[str, str]]) -> Memory:
    """The memory a chat's earlier (question, answer) pairs make: no results to reuse."""
    return Memory(turns=[Turn(q, a) for q, a in pairs if q.strip()])
