"""The grounding check: every number an answer states must come from the results or the question.

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
A yes/no answer is checked where a tool decided it: when exactly one finished result is True or
False (a comparison the calculator made), an answer to a yes/no question that says the
opposite is withdrawn (`contradicted()`), unless the question negates ("isn't", "not"); and
when none is, a yes/no question with one mark ("more than 500 people per km²") is decided by
the one result's number the answer quotes for it.
Names are checked where a tool ranked them: when a result is a ranking (`rank`'s: the
`largest` or `smallest` name and the `order`) and the question asks for one end of it ("which
has more", "the fewest"), the answer must name that end first (`misnamed()`): "Norway has more
people than Brazil" over a ranking that puts Brazil first is withdrawn like a number from
nowhere.  Other names are not checked.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .events import AnswerUngrounded
from .joiner import is_yes_no
from .plan import render_text
from .records import TaskRecord, TaskStatus

__all__ = [
    "Contradicted",
    "Findings",
    "Misnamed",
    "Number",
    "check",
    "contradicted",
    "fallback_answer",
    "grounding_note",
    "held_names",
    "misnamed",
    "numbers",
    "ungrounded",
    "unnamed",
]

_MULTIPLIERS = {
    "thousand": 1e3,
    "million": 1e6,
    "mn": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "trillion": 1e12,
}
# A number as people write it: thousands separators, decimals, an exponent, then an optional
# scale word or a percent sign.  Signs are ignored (magnitudes are compared), so a date's
# hyphens do not make negative numbers.
_NUMBER_RE = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:[eE]([-+]?\d{1,3}))?(?![\w])"
    r"(?:\s*(%|percent\b|per\s+cent\b|thousand\b|million\b|mn\b|billion\b|bn\b|trillion\b))?",
    re.IGNORECASE,
)
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


@dataclass(frozen=True, slots=True)
class Number:
    """A number as written: its text, its value, how far rounding may have moved it, and
    whether it was a percentage."""

    text: str
    value: float
    tolerance: float
    percent: bool = False


def numbers(text: str) -> list[Number]:
    """The numbers written in `text`, with the rounding each one's precision allows."""
    found = []
    for match in _NUMBER_RE.finditer(text):
        whole, decimals, exponent, suffix = match.groups()
        digits = whole.replace(",", "")
        try:
            value = float(f"{digits}.{decimals or 0}e{exponent or 0}")
        except OverflowError:  # pragma: no cover - float() returns inf instead
            continue
        if not math.isfinite(value):
            continue
        if decimals:
            unit = 10.0 ** -len(decimals)
        else:  # "17,900,000" or "430" may be rounded to its last non-zero digit
            unit = 10.0 ** (len(digits) - len(digits.rstrip("0"))) if digits.strip("0") else 1.0
        scale = 10.0 ** int(exponent or 0)
        word = (suffix or "").lower()
        percent = word in ("%", "percent") or word.startswith("per")
        if not percent and word:
            scale *= _MULTIPLIERS[word]
        found.append(
            Number(
                text=match.group(0),
                value=value * (1.0 if percent else _MULTIPLIERS.get(word, 1.0)),
                tolerance=unit * scale / 2,
                percent=percent,
            )
        )
    return found


def _values(value: Any) -> Iterator[float]:
    """Every number in a result: numbers themselves, numbers written in its text (keys too),
    and the length of each list or tuple it holds."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int | float):
            if math.isfinite(item):
                yield float(item)
        elif isinstance(item, str):
            for number in numbers(item):
                yield number.value
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            yield float(len(item))
            stack.extend(item)
        elif hasattr(item, "__dict__") and not isinstance(item, type):
            stack.extend(vars(item).values())


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
    quoted: dict[float, TaskRecord] = {}
    for number in numbers(stated(answer)):
        if abs(number.value - mark) <= number.tolerance or number.percent:
            continue
        for rec in records:
            if rec.status is not TaskStatus.DONE or rec.task.is_join:
                continue
            if any(abs(abs(v) - number.value) <= number.tolerance for v in _values(rec.result)):
                quoted.setdefault(number.value, rec)
                break
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


def ranked(question: str, records: Iterable[TaskRecord]) -> tuple[int, str] | None:
    """The task id and the name of the last ranking that answers the question's end (a later
    round's, after a replan), if any."""
    last = None
    for rec, _, expected in _rankings_asked(question, records):
        last = rec.task.id, expected
    return last


def grounding_note(
    answer: str,
    missing: list[str],
    *,
    react: bool = False,
    wrong: Misnamed | None = None,
    names: Sequence[str] = (),
    opposite: Contradicted | None = None,
    among: int | None = None,
) -> str:
    """What the joiner (or a ReAct step) is told when its answer stated numbers or `names`
    from nowhere, (`wrong`) named another than a ranking's answer, (`opposite`) said yes
    where a comparison's result says no, or (`among`) gave no count of the names the
    question counts among."""
    if among is not None and not missing and not names and wrong is None and opposite is None:
        return (
            f"Your answer ({answer[:300]!r}) {_uncounted(among)}. Answer again: say how many "
            f"of them the results show, and which."
        )
    if opposite is not None:
        told = (
            f"Your answer ({answer[:300]!r}) {opposite.text()}. Answer again: the comparison's "
            f"result decides, so begin with {opposite.expected}"
        )
        if missing or names:
            told += ", and state only numbers and names that the question or a result gives"
        return told + "."
    if not missing and not names and wrong is not None:
        return (
            f"Your answer ({answer[:300]!r}) {wrong.text()}. Answer again, naming "
            f"{wrong.expected} first, as the results give it."
        )
    stated_here = []
    if missing:
        stated_here.append("states " + ", ".join(missing))
    if names:
        stated_here.append("names " + ", ".join(names))
    listed = " and ".join(stated_here)
    compute = "call a tool (the calculator) to do it" if react else "Replan to do it with a tool"
    # The answer may quote a result by its task's (or action's) id, `${N}`, filled in as the
    # run ends: no digit to retype.
    copy = (
        f"writing ${{<id>}} where {'an action' if react else 'a task'}'s result goes (it is "
        "filled in), or copying numbers exactly as the results give them"
    )
    also = f" Also, {wrong.text()}: name {wrong.expected} first." if wrong is not None else ""
    return (
        f"Your answer ({answer[:300]!r}) {listed}, which no result and not the question "
        f"gives. Answer again, {copy} (you may round them), naming only what the question or "
        f"a result names; if a number must first be "
        f"computed, compared or counted, {compute}; if the results do not tell, say what could "
        f"not be found.{also}"
    )


# The fallback answer's fixed words (`stated` tells them from the withdrawn answer's).
FOUND = "What was found: "
NOT_FOUND = "What could not be found: "
KEPT = "The answer without them: "
_LEAD = "By the ranking of task "
_UNSUPPORTED = "I could not give an answer supported by the results"
_RANKED_INSTEAD = "The results rank "
_DECIDED = "by task "
_FALLBACK_OPENINGS = (_LEAD, _UNSUPPORTED, _RANKED_INSTEAD, "Yes: " + _DECIDED, "No: " + _DECIDED)


# A placeholder left in an answer: `${<id>}`, `${17819054 / 2}` (never a filled-in result).
_PLACEHOLDER_RE = re.compile(r"\$\{[^}\n]{0,200}\}?")


def fallback_answer(
    records: Iterable[TaskRecord],
    missing: list[str],
    answer: str | None = None,
    limit: int = 300,
    *,
    wrong: Misnamed | None = None,
    leader: tuple[int, str] | None = None,
    names: Sequence[str] = (),
    opposite: Contradicted | None = None,
    among: int | None = None,
) -> str:
    """The run's answer when the joiner twice stated numbers from nowhere: its last answer with
    those numbers taken out (its names and words may still answer the question), then what was
    found and what was not, in the results' own words.  `leader` (task id, name) is what a
    ranking among the results gives where the question asks: it is said first."""
    found: list[str] = []
    failed: list[str] = []
    for rec in records:
        if rec.task.is_join:
            continue
        line = f"{rec.task.call_text()} -> {rec.observation(limit)}"
        (found if rec.status is TaskStatus.DONE else failed).append(line)
    # The unsupported numbers are not repeated (the answer_ungrounded event has them): an
    # answer states no number that no result gives, not even to disown it.
    if opposite is not None:
        # What the comparison decided is the answer; the joiner's words said the opposite.
        parts = [
            f"{opposite.expected}: {_DECIDED}{opposite.task_id}, {opposite.call} gives "
            f"{opposite.given} (the answer given said {opposite.said}, so it was withdrawn)."
        ]
        answer = None
    elif wrong is not None and not missing and not names:
        # The answer's words are the problem: only the results speak.
        parts = [
            f"{_RANKED_INSTEAD}{wrong.expected} where the question asks (task "
            f"{wrong.task_id}); the answer given named {wrong.named} instead, so it was withdrawn."
        ]
        answer = None
    elif among is not None and not missing and not names:
        parts = [f"{_UNSUPPORTED}: {_uncounted(among)}, so it was withdrawn."]
        answer = None  # its number counts something else: it is not kept
    else:
        counted = [
            f"{n} {word}{'s' if n > 1 else ''}"
            for n, word in ((len(missing), "number"), (len(names), "name"))
            if n
        ]
        parts = [f"{_UNSUPPORTED}: it stated {' and '.join(counted)} that no result gives."]
        if leader is not None:
            # What a tool decided answers a "which" question even when the prose did not hold.
            parts.insert(0, f"{_LEAD}{leader[0]}, the answer is {leader[1]}.")
    if answer and wrong is not None:
        answer = None  # it named the wrong one too: its words are not kept
    if answer:
        # Whole numbers as written are taken out, not their text wherever it occurs ("1" is
        # in "1,371,498").
        gone = set(missing)
        kept = _PLACEHOLDER_RE.sub("[?]", answer[:1000])
        kept = _NUMBER_RE.sub(lambda m: "[?]" if m.group(0) in gone else m.group(0), kept)
        for name in names:
            kept = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", "[?]", kept)
        parts.append(f"{KEPT}{kept.strip()}")
    if found:
        parts.append(FOUND + "; ".join(found) + ".")
    if failed:
        parts.append(NOT_FOUND + "; ".join(failed) + ".")
    return " ".join(parts)


def stated(answer: str) -> str:
    """The part of an answer that states something: of a fallback answer, only its withdrawn
    answer's kept words; its own sentences (a task id, how many numbers were taken out) and
    its quotes of the results (each call as the plan wrote it, with its result) are left out."""
    if not answer.startswith(_FALLBACK_OPENINGS):
        return answer
    start = answer.find(KEPT)
    if start < 0:
        return ""
    return unquoted(answer[start + len(KEPT) :])


def unquoted(answer: str) -> str:
    """An answer without a fallback's quotes of the results ("What was found: ...")."""
    cut = [i for i in (answer.find(" " + FOUND), answer.find(" " + NOT_FOUND)) if i >= 0]
    return answer[: min(cut)] if cut else answer


@dataclass(frozen=True, slots=True)
class Findings:
    """What the check found in one answer: the numbers from nowhere and a misnamed ranking;
    the withdrawal event, the note asking again and the fallback answer all read it."""

    answer: str
    numbers: list[str]
    wrong: Misnamed | None
    leader: tuple[int, str] | None = None  # a ranking's answer to the question, if any
    names: list[str] = field(default_factory=list)
    opposite: Contradicted | None = None
    among: int | None = None  # the question counts among this many names; no count was given
    lacking: list[str] = field(default_factory=list)  # of `numbers`, those no result's digits

    @property
    def ok(self) -> bool:
        return (
            not self.numbers
            and not self.names
            and self.wrong is None
            and self.opposite is None
            and self.among is None
        )

    def withdrawn(self, *, retry: bool) -> AnswerUngrounded:
        return AnswerUngrounded(
            answer=self.answer,
            numbers=self.numbers,
            retry=retry,
            misnamed=(
                self.opposite.text()
                if self.opposite is not None
                else self.wrong.text()
                if self.wrong is not None
                else _uncounted(self.among)
                if self.among is not None
                else None
            ),
            names=self.names,
        )

    @property
    def missing_facts(self) -> bool:
        """The answer states numbers that no result gives, nor a result's digits mistyped:
        the results lack something (a lookup or a calculation no task made).  A placeholder
        left in it, a retyped number or a name from memory is the joiner's slip."""
        return bool(self.lacking) and not any(n.startswith("${") for n in self.names)

    def replan_reason(self) -> str:
        """Why the next round is planned, for the planner: what the withdrawn answer stated
        from nowhere, and what to plan for it."""
        return (
            f"an answer was written ({self.answer[:200]!r}) but no result gives the numbers "
            f"{', '.join(self.lacking)}: the results do not answer the question yet. Plan "
            "only what is missing: the next lookup (a tool whose argument is an earlier "
            "result, $<id>) or the calculation that gives it; reuse $<id> of the tasks that "
            "worked."
        )

    def note(self, *, react: bool = False) -> str:
        return grounding_note(
            self.answer,
            self.numbers,
            react=react,
            wrong=self.wrong,
            names=self.names,
            opposite=self.opposite,
            among=self.among,
        )

    def fallback(self, records: Iterable[TaskRecord]) -> str:
        return fallback_answer(
            records,
            self.numbers,
            self.answer,
            wrong=self.wrong,
            leader=self.leader,
            names=self.names,
            opposite=self.opposite,
            among=self.among,
        )


def _uncounted(among: int) -> str:
    return (
        f"it gives no count of the {among} names the question counts among (a count of them "
        f"is at most {among})"
    )


def check(answer: str, question: str, records: Iterable[TaskRecord]) -> Findings:
    """The checks of `answer`: numbers (`ungrounded`), names (`unnamed`), a ranking's name
    (`misnamed`), a yes/no a comparison decided (`contradicted`) and a count among the
    question's names (`overcounted`)."""
    records = list(records)
    missing = ungrounded(answer, question, records)
    names = unnamed(stated(answer), question, records)
    # A placeholder still in the filled answer (`${<id>}` copied from the rule, an expression
    # `${17819054 / 2}`) quotes no result: it is words from nowhere like an unknown name.
    names += [p for p in dict.fromkeys(_PLACEHOLDER_RE.findall(answer)) if p not in names]
    wrong = misnamed(answer, question, records)
    leader = ranked(question, records) if missing or names or wrong else None
    opposite = contradicted(answer, question, records)
    among = overcounted(answer, question)
    lacking = _lacking(missing, question, records) if missing else []
    return Findings(answer, missing, wrong, leader, names, opposite, among, lacking)


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


# Names: capitalized words (a run of them is one name: "New Delhi") and codes ("EUR").  Words
# that open sentences or carry no name are not names; a name is grounded when the question or
# a finished result says it (accents and case aside).
_NAME_RE = re.compile(
    r"\b[A-Z][\w'’-]*[a-zà-ÿ][\w'’-]*(?:[ -](?:(?:of|de|la|da) )?[A-Z][\w'’-]+)*|\b[A-Z]{2,4}\b"
)
_NOT_NAMES = frozenset(
    """a about all almost also an and approximately are around as at be because both but by
    celsius combined density each either fahrenheit for from he her here his however i if in
    is it its kilometers kilometres km meanwhile miles my neither no none north not of on
    one only or our over people percent population roughly since she so south square east
    west that the their there these they this those thus to together total under we what
    when where which who why with yes you your since therefore area nearly two three four
    five six seven eight nine ten january february march april may june july august
    september october november december monday tuesday wednesday thursday friday saturday
    sunday utc iso ok please sorry unfortunately invalid note""".split()  # noqa: SIM905
)


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def unnamed(answer: str, question: str, records: Iterable[TaskRecord]) -> list[str]:
    """The names `answer` states (capitalized words and codes) that neither the question nor
    any finished task's result gives, each once, in order: a currency or a country the model
    brought from its own memory (`check` withdraws such an answer, as it does numbers)."""
    sources = [_fold(question)]
    for rec in records:
        if rec.status is TaskStatus.DONE:
            sources.append(_fold(render_text(rec.result)))
    text = "\n".join(sources)
    found: list[str] = []
    for match in _NAME_RE.finditer(answer):
        words = match.group(0).split()
        while words and words[0].casefold() in _NOT_NAMES:
            words.pop(0)  # "The Netherlands": the name is "Netherlands"
        name = " ".join(words)
        if len(name) < 2 or name.casefold() in _NOT_NAMES or name in found:
            continue
        if _fold(name) not in text and not all(_fold(w) in text for w in words):
            found.append(name)
    return found


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
