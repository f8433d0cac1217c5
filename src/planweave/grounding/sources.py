"""Numbers from nowhere: every number an answer states must come from the results or the question.

A small model asked to answer from tool results still copies digits wrong (816,025 becomes
8,160,250), states a percentage no tool returned when the lookups failed, or does arithmetic in
prose.  `ungrounded()` finds such numbers: each number of the answer is compared, within the
rounding its written precision allows, with every number of the question and of the tasks' results
(numbers in result text included, and the length of every list a result holds, so a count is
grounded when a tool returned the list).  "17.9 million" reads as 17,900,000; "15.3%" is
grounded by 15.3 or by 0.153.  Where the sources are few, a number is also grounded when it is
the sum, the difference or a ratio of two of them, if it is written precisely enough for a
chance match to be unlikely (the fewer the sources, the rounder it may be): a small model's
right arithmetic in prose stands, its wrong arithmetic does not.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from ..plan import render_text
from ..records import TaskRecord, TaskStatus
from .lists import _enumerations, _held
from .numerals import Number, _values, numbers

__all__ = ["DERIVED_CHANCE", "MAX_DERIVED_SOURCES", "MAX_SOURCE_NUMBERS", "ungrounded"]

# Small whole numbers a sentence uses without a source ("2 of the 3 cities"); a count a tool
# returned as a list is grounded anyway (list lengths are sources).
_FREE_BELOW = 10
_COUNT_RE = re.compile(r"\bhow\s+many\b(?!\s+(?:more|fewer|less|times)\b)", re.IGNORECASE)
# In the answer to "how many" over a list, a whole number below this, written plainly, is a
# count: it must be exactly a source ("about 1.4 million people" is still rounded).
_EXACT_COUNT_BELOW = 1000
MAX_SOURCE_NUMBERS = 100_000  # a huge result is read up to this many numbers
# Arithmetic between sources is tried only for a few of them, and only for a number whose
# relative rounding times the count of derived values stays under this: a number spread
# log-uniformly over ten decades then matches one by chance about 4 % of the time.
MAX_DERIVED_SOURCES = 16
DERIVED_CHANCE = 0.5


def _sources(question: str, records: Iterable[TaskRecord]) -> list[float]:
    found = [n.value for n in numbers(question)]
    for rec in records:
        if rec.status is TaskStatus.DONE:
            for value in _values(rec.result):
                found.append(value)
                if len(found) >= MAX_SOURCE_NUMBERS:
                    return found
    return found


def _grounded(number: Number, sources: list[float]) -> bool:
    # A percentage may be given by a result as the percentage or as the fraction.
    candidates = [(number.value, number.tolerance)]
    if number.percent:
        candidates.append((number.value / 100, number.tolerance / 100))
    for wanted, tolerance in candidates:
        for source in sources:
            if abs(abs(source) - wanted) <= tolerance * 1.000001 + 1e-12:
                return True
    return False


def _counted(number: Number, sources: list[float]) -> bool:
    """A plain whole number in the answer to "how many": exactly a whole source (a list's
    length, a count a tool gave), or a fraction rounded (233 for a density of 232.6)."""
    for source in sources:
        size = abs(source)
        if size == number.value:
            return True
        if not size.is_integer() and abs(size - number.value) <= number.tolerance * 1.000001:
            return True
    return False


def _tallies(question: str, records: list[TaskRecord]) -> list[float]:
    """Counts an answer to "how many" may state that no single result gives: how many names
    each of the question's lists has ("in how many of Porto, Toulouse and Sydney ..."), and how
    many finished tasks of one tool gave the same result (three lookups that each gave
    ["EUR"])."""
    found = [float(len(m)) for m in _enumerations(question)]
    same: Counter[tuple[str, str]] = Counter(
        (r.task.tool, render_text(r.result))
        for r in records
        if r.status is TaskStatus.DONE and not r.task.is_join
    )
    found += [float(n) for n in same.values() if n > 1]
    return found


def _derived(sources: list[float]) -> list[float]:
    """Sums, differences, ratios and relative differences of pairs of a few distinct sources."""
    distinct = sorted({abs(s) for s in sources if s})
    if len(distinct) > MAX_DERIVED_SOURCES:
        return []
    out: list[float] = []
    for i, a in enumerate(distinct):
        for b in distinct[i + 1 :]:
            out.extend((a + b, b - a, b / a, a / b, (b - a) / a, (b - a) / b))
    return out


def ungrounded(answer: str, question: str, records: Iterable[TaskRecord]) -> list[str]:
    """The numbers `answer` states that neither the question nor any finished task's result
    gives, as written in the answer (each once, in order)."""
    # A question that asks for a count of things a result lists gets no free small numbers:
    # its answer is one ("how many people live in Milan" is answered by a number, not a list).
    records = list(records)
    counting = _COUNT_RE.search(question) and any(
        r.status is TaskStatus.DONE and isinstance(r.result, list | tuple) for r in records
    )
    free = -1 if counting else _FREE_BELOW
    stated = [
        n
        for n in numbers(answer)
        if n.percent or not (n.value <= free and n.value.is_integer() and "." not in n.text)
    ]
    if not stated:
        return []
    sources = _sources(question, records)
    # The counts the joiner is told (`held_names`): how many of the question's names a list
    # holds, and how many it does not.
    for _, members, held in _held(question, records):
        sources += [float(len(held)), float(len(members) - len(held))]
    if counting or _COUNT_RE.search(question):
        sources += _tallies(question, records)
    derived: list[float] | None = None
    missing: list[str] = []
    for number in stated:
        if counting and number.text.isdigit() and number.value < _EXACT_COUNT_BELOW:
            # A count is exact: a list's length, not one "rounded" to the ten nor the sum of
            # two ("10 countries border Germany" over its 9 neighbours and a list of 1).
            if number.text not in missing and not _counted(number, sources):
                missing.append(number.text)
            continue
        if number.text in missing or _grounded(number, sources):
            continue
        derived = _derived(sources) if derived is None else derived
        precise = number.tolerance * len(derived) <= DERIVED_CHANCE * number.value
        if precise and _grounded(number, derived):
            continue
        missing.append(number.text)
    return missing


def _leading_digits(value: float) -> str:
    """A number's first two significant digits: 68,373,090 and 6,837,309 give "68"."""
    return f"{abs(value):.1e}".replace(".", "")[:2]


def _lacking(missing: list[str], question: str, records: list[TaskRecord]) -> list[str]:
    """Of the numbers no source gives, those that are not a source's digits retyped (a
    dropped digit, a shifted comma): what no task found or computed."""
    leading = {_leading_digits(v) for v in _sources(question, records) if v}
    lacking = []
    for text in missing:
        written = numbers(text)
        if not written or _leading_digits(written[0].value) not in leading:
            lacking.append(text)
    return lacking
