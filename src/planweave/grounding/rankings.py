"""A ranking's names: where a tool ranked them, the answer must name the end the question asks.

When a result is a ranking (`rank`'s: the `largest` or `smallest` name and the `order`) and the
question asks for one end of it ("which has more", "the fewest"), the answer must name that end
first (`misnamed()`): "Norway has more people than Brazil" over a ranking that puts Brazil first
is withdrawn like a number from nowhere.  Where the question asks which ones pass a mark and a
ranking listed them (`above=` or `below=`), the answer must name them all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from ..records import TaskRecord, TaskStatus

__all__ = ["Misnamed", "misnamed", "ranked"]

# Words of a question that ask for the top or the bottom of a ranking; a question with both
# (or neither) is not checked.
_TOP = frozenset(
    [
        "more",
        "most",
        "larger",
        "largest",
        "bigger",
        "biggest",
        "greater",
        "greatest",
        "higher",
        "highest",
        "longer",
        "longest",
        "north",
        "northern",
        "northernmost",
    ]
)
_BOTTOM = frozenset(
    [
        "fewer",
        "fewest",
        "less",
        "least",
        "smaller",
        "smallest",
        "lower",
        "lowest",
        "shorter",
        "shortest",
        "south",
        "southern",
        "southernmost",
    ]
)
_NAMED_WITHIN = 2000  # characters of an answer searched for a ranking's names
_WORD_RE = re.compile(r"[^\W\d_]+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Misnamed:
    """An answer that names first another candidate than the one a ranking (task `task_id`)
    puts where the question asks: `expected`, not `named`."""

    task_id: int
    expected: str
    named: str

    def text(self) -> str:
        return (
            f"it names {self.named} where the ranking of task {self.task_id} gives {self.expected}"
        )


def _end_asked(question: str) -> str | None:
    words = {w.lower() for w in _WORD_RE.findall(question)}
    top, bottom = bool(words & _TOP), bool(words & _BOTTOM)
    if top == bottom:
        return None
    return "top" if top else "bottom"


def _first_named(answer: str, names: list[str]) -> str | None:
    """The candidate the answer names first (whole words, any case), if any; only the answer's
    opening is read (a ranking may list 1,000 names, and the winner is named early)."""
    low = answer[:_NAMED_WITHIN].lower()
    found: list[tuple[int, str]] = []
    for name in names:
        match = re.search(rf"(?<!\w){re.escape(name.lower())}(?!\w)", low)
        if match:
            found.append((match.start(), name))
    return min(found)[1] if found else None


def _rankings_asked(
    question: str, records: Iterable[TaskRecord]
) -> Iterator[tuple[TaskRecord, list[str], str]]:
    """Each finished ranking whose end the question asks for, with its order and the name at
    that end; nothing when the question asks for no end (or both)."""
    end = _end_asked(question)
    if end is None or re.search(r"\bhow many\b", question, re.I):
        return  # a count asks for no end, though "more" may be in its words
    for rec in records:
        result = rec.result
        if rec.status is not TaskStatus.DONE or not isinstance(result, Mapping):
            continue
        order = result.get("order")
        keys = [k for k in ("largest", "smallest") if k in result]
        if len(keys) != 1 or not isinstance(order, list) or len(order) < 2:
            continue
        if not all(isinstance(n, str) for n in order) or not isinstance(result[keys[0]], str):
            continue  # a tie names several: nothing to check
        # The ranking's first name is its `largest` (or `smallest`); the question's end is
        # that one, or the other end when it asks the other way.
        first_is_top = keys[0] == "largest"
        yield rec, order, order[0] if (end == "top") == first_is_top else order[-1]


def misnamed(answer: str, question: str, records: Iterable[TaskRecord]) -> Misnamed | None:
    """The first ranking among the finished results whose end the question asks for and the
    answer names wrongly (another candidate first); None when none does, or nothing tells."""
    records = list(records)
    for rec, order, expected in _rankings_asked(question, records):
        named = _first_named(answer, order)
        if named is not None and named != expected:
            return Misnamed(rec.task.id, expected, named)
    return _left_out(answer, question, records)


# A question that asks for one end ("which is the largest of those above ...") names one.
_SUPERLATIVE = re.compile(
    r"\b(?:most|least|fewest|largest|biggest|greatest|highest|longest|smallest|lowest"
    r"|shortest|densest|richest|poorest|oldest|youngest|hottest|coldest|warmest|tallest"
    r"|deepest|widest|heaviest|lightest|busiest|\w+ernmost)\b",
    re.IGNORECASE,
)


def _left_out(answer: str, question: str, records: list[TaskRecord]) -> Misnamed | None:
    """Where the question asks which ones pass a mark ("which of these are more populous than
    Sydney?") and a ranking listed them (`above=` or `below=`), an answer that leaves one of
    them out: the listed names are expected, those it named were given."""
    if not re.search(r"\bwhich\b", question, re.I) or _SUPERLATIVE.search(question):
        return None
    if re.search(r"\bhow many\b", question, re.I):
        return None
    low = answer[:_NAMED_WITHIN].lower()
    for rec in reversed(records):
        result = rec.result
        if rec.status is not TaskStatus.DONE or not isinstance(result, Mapping):
            continue
        keys = [k for k in ("above", "below") if isinstance(result.get(k), list)]
        if len(keys) != 1 or "between" in result:
            continue
        listed = [n for n in result[keys[0]] if isinstance(n, str)]
        said = [n for n in listed if re.search(rf"(?<!\w){re.escape(n.lower())}(?!\w)", low)]
        if listed and said != listed:
            return Misnamed(rec.task.id, _joined(listed), _joined(said) or "none of them")
        return None  # the last ranking with a mark is the one the answer reads
    return None


def _joined(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def ranked(question: str, records: Iterable[TaskRecord]) -> tuple[int, str] | None:
    """The task id and the name of the last ranking that answers the question's end (a later
    round's, after a replan), if any."""
    last = None
    for rec, _, expected in _rankings_asked(question, records):
        last = rec.task.id, expected
    return last
