"""The question's lists of names: which of them a result's list holds, and counts among them.

A small model matches and counts list items unreliably: `held_names()` does the matching once,
from the results, for the joiner to read (its counts ground an answer's numbers), and
`overcounted()` finds an answer to "how many of Porto, Sydney and Lyon ..." that gives no
number that could be such a count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ..records import TaskRecord, TaskStatus
from .names import _fold
from .numerals import numbers
from .phrases import stated

__all__ = ["held_names", "overcounted"]

# A list result read for the question's names: at most this many items (a neighbours list, a
# country's languages; not a file listing).
_HELD_MAX_ITEMS = 200
# An enumeration in a question: two or more names joined by commas, "and" or "or" ("Malta,
# Hungary, Ukraine and Bulgaria").
_ENUM_NAME = r"(?:the )?[A-Z][\w'’.-]*(?: (?:(?:of|de|la|and the) )?[A-Z][\w'’.-]*)*"
_ENUMERATION = re.compile(
    rf"{_ENUM_NAME}(?:\s*,\s*{_ENUM_NAME})*(?:,?\s+(?:and|or)\s+{_ENUM_NAME})"
    rf"|{_ENUM_NAME}(?:\s*,\s*{_ENUM_NAME})+"
)
_ENUM_SPLIT = re.compile(r"\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+")


def held_names(question: str, records: Iterable[TaskRecord]) -> list[str]:
    """Notes for the joiner: where the question lists names ("How many of Malta, Hungary,
    Ukraine and Bulgaria border Romania?") and a finished result is a list that holds some of
    them (Romania's neighbours), which ones it holds, counted, and which it does not.  A small
    model matches and counts list items unreliably; this is the matching done once, from the
    results, for the joiner to read (and its counts ground an answer's numbers)."""
    notes = []
    for task_id, members, held in _held(question, records):
        note = f"task {task_id}'s result holds {len(held)} of {', '.join(members)}: " + ", ".join(
            held
        )
        others = [m for m in members if m not in held]
        notes.append(note + (f"; not {', '.join(others)}." if others else "."))
    return notes


# A question that counts among names it lists: "in how many of Porto, Sydney and Lyon ...",
# "count the countries ... among Cuba, Chile and Peru" (not "how many people live in Lyon and
# Nice", which lists names but counts people).
_COUNTS_AMONG = re.compile(
    r"\bhow\s+many\s+of\b|\b(?:how\s+many|count|number\s+of)\b.*\bamong\b"
    r"|\bamong\b.*\b(?:how\s+many|count)\b",
    re.IGNORECASE | re.DOTALL,
)
_COUNT_WORDS = re.compile(
    r"\b(?:none|no|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|all"
    r"|both|neither|only)\b",
    re.IGNORECASE,
)


def overcounted(answer: str, question: str) -> int | None:
    """How many names the question counts among ("how many of Porto, Sydney and Lyon ...")
    where the answer states numbers but none that could be such a count: every whole number it
    states that the question does not is above it ("216,086,853 countries": a sum answered for
    a count), and it has no count in words.  None when the question does not count among listed
    names, or the answer may hold a count."""
    if not _COUNTS_AMONG.search(question):
        return None
    lists = _enumerations(question)
    if not lists:
        return None
    most = max(len(m) for m in lists)
    said = stated(answer)
    asked = {n.value for n in numbers(question)}
    own = [n for n in numbers(said) if n.value not in asked and not n.percent]
    if not own or _COUNT_WORDS.search(said):
        return None
    if any(n.value.is_integer() and n.value <= most for n in own):
        return None
    return most


def _enumerations(question: str) -> list[list[str]]:
    """The question's lists of names, each as its names."""
    found = []
    for match in _ENUMERATION.finditer(question):
        # "the Czech Republic" is listed as the data names it: "Czech Republic".
        members = [m.removeprefix("the ") for m in _ENUM_SPLIT.split(match.group(0)) if m]
        if len(members) >= 2:
            found.append(members)
    return found


def _held(
    question: str, records: Iterable[TaskRecord]
) -> Iterator[tuple[int, list[str], list[str]]]:
    """Each list result and enumeration of the question it holds names of: the task's id, the
    enumeration's names and those the list holds."""
    enumerations = _enumerations(question)
    if not enumerations:
        return
    for rec in records:
        items = rec.result
        if rec.status is not TaskStatus.DONE or rec.task.is_join:
            continue
        if not isinstance(items, list) or not 0 < len(items) <= _HELD_MAX_ITEMS:
            continue
        if not all(isinstance(i, str) for i in items):
            continue
        folded = {_fold(i) for i in items}
        for members in enumerations:
            held = [m for m in members if _fold(m) in folded]
            if held:
                yield rec.task.id, members, held
