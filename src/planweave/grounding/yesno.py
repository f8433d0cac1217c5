"""A yes or no a tool decided: the answer to a yes/no question must not say the opposite.

When exactly one finished result is True or False (a comparison the calculator made), an answer
to a yes/no question that says the opposite is withdrawn (`contradicted()`), unless the question
negates ("isn't", "not"); and when none is, a yes/no question with one mark ("more than 500
people per km²") is decided by the one result's number the answer quotes for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..joiner import is_yes_no
from ..records import TaskRecord, TaskStatus
from .numerals import _values, numbers
from .phrases import stated

__all__ = ["Contradicted", "contradicted"]


@dataclass(frozen=True, slots=True)
class Contradicted:
    """An answer to a yes/no question that says `said` ("Yes"/"No") where the one True/False
    result among the tasks (task `task_id`, `call`) says the other."""

    task_id: int
    call: str
    result: bool
    said: str
    # Where a result's number decided it against the question's mark: "226.211, not more
    # than 500" (else the result was True or False itself).
    reading: str | None = None

    @property
    def expected(self) -> str:
        return "Yes" if self.result else "No"

    @property
    def given(self) -> str:
        return self.reading if self.reading is not None else str(self.result)

    def text(self) -> str:
        return (
            f"it answers {self.said} where task {self.task_id} ({self.call[:200]}) gives "
            f"{self.given}"
        )


_YES_NO_SAID = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
# A question that negates ("Isn't X larger?", "Is X not in Europe?"): True may mean "No".
_NEGATED = re.compile(r"n't\b|\b(?:not|never|neither|nor|no longer)\b", re.IGNORECASE)


def contradicted(answer: str, question: str, records: Iterable[TaskRecord]) -> Contradicted | None:
    """Where `question` asks yes or no and exactly one finished task's result is True or
    False, an answer that opens with the other word; None when it agrees, or nothing tells
    (no such result, several, a question that negates, an answer with neither word first)."""
    said = _YES_NO_SAID.match(answer)
    if said is None or not is_yes_no(question) or _NEGATED.search(question):
        return None
    records = list(records)
    word = said.group(1).capitalize()
    decided = [
        r
        for r in records
        if r.status is TaskStatus.DONE and not r.task.is_join and isinstance(r.result, bool)
    ]
    if len(decided) != 1:
        return _past_the_mark(answer, question, records, word) if not decided else None
    rec = decided[0]
    if (word == "Yes") == rec.result:
        return None
    return Contradicted(rec.task.id, rec.task.call_text(), bool(rec.result), word)


# A yes/no question's mark: "more than 500 people per km²", "over 50 million", "below 1,000".
_MARK_RE = re.compile(
    r"\b(?:(more|greater|higher|larger|bigger|over|above|exceed(?:s|ing)?)"
    r"|(less|fewer|lower|smaller|under|below))(?:\s+than)?\s+(?=[\d$€£])",
    re.IGNORECASE,
)


def _past_the_mark(
    answer: str, question: str, records: list[TaskRecord], word: str
) -> Contradicted | None:
    """Where a yes/no question asks whether a value passes one mark ("Does Germany have more
    than 500 people per km²?") and the answer quotes one result's number for it, an answer
    whose yes or no that number contradicts; None when nothing tells (no mark, several, the
    answer quoting no result's number or several)."""
    marks = list(_MARK_RE.finditer(question))
    if len(marks) != 1:
        return None
    after = numbers(question[marks[0].end() :].lstrip("$€£"))
    if not after:
        return None
    mark, up = after[0].value, marks[0].group(1) is not None
    # Each result's numbers are read once, not once for every number the answer states.
    given = [
        (rec, [abs(v) for v in _values(rec.result)])
        for rec in records
        if rec.status is TaskStatus.DONE and not rec.task.is_join
    ]
    quoted: dict[float, TaskRecord] = {}
    for number in numbers(stated(answer)):
        if abs(number.value - mark) <= number.tolerance or number.percent:
            continue
        for rec, values in given:
            if any(abs(v - number.value) <= number.tolerance for v in values):
                quoted.setdefault(number.value, rec)
                break
        if len(quoted) > 1:
            return None  # two results quoted: nothing tells
    if len(quoted) != 1:
        return None
    ((value, rec),) = quoted.items()
    if value == mark:
        return None
    passes = value > mark if up else value < mark
    if (word == "Yes") == passes:
        return None
    side = marks[0].group(0).strip()
    reading = f"{value:g}, {'' if passes else 'not '}{side} {after[0].text}"
    return Contradicted(rec.task.id, rec.task.call_text(), passes, word, reading)
