"""Plan templates: what a finished plan becomes once the question's own words are taken out of it,
and how a new question fills it back in.

A template is made from a question and the plan that answered it.  Every literal argument that
the question spells out (a name, a number, a number inside an expression) becomes a slot, in the
question and in the plan alike:

    "Which has more people, France or Belgium?"        which has more people, {0} or {1}
    1. population("France")                            1. population("⟦0⟧")
    2. population("Belgium")                           2. population("⟦1⟧")

A new question uses the template when it reads exactly as the template's question with other
values in the slots ("Which has more people, Spain or Portugal?").  Every word outside the slots
must be the same, so "which has more land" never gets a plan for "which has more people".  The
values are checked against the ones the template was made with (no more words, no new function
words such as "the" or "of", no digits where there were none), so "population of {0}" never
takes "the capital of France" for a country.  Whatever is not a slot stays as the plan wrote it,
and only what the question licenses may stay: a template is not made when its plan holds a
literal the question does not explain (a name the model knew, a number it looked up), since
that literal would be wrong for the next question.

Templates are pure data; `PlanCache` (in `cache/__init__`) stores, finds and scores them.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import MissingJoinError, PlanError, PlanSyntaxError
from ..parser import parse_plan
from ..plan import END_OF_PLAN, Ref, Task, format_args
from ..plan import Template as Interpolated
from ..tools import ToolRegistry

__all__ = [
    "Fill",
    "NotATemplate",
    "PlanTemplate",
    "Slot",
    "extract",
    "normalize",
    "registry_signature",
]

SlotKind = Literal["text", "number"]
Case = Literal["same", "lower", "upper", "title"]

_CASES: tuple[Case, ...] = ("same", "title", "lower", "upper")
MAX_SLOT_CHARS = 80
MAX_EXTRA_WORDS = 1  # a value may have this many more words than the template's own
MAX_NUMBER_DIGITS = 30
_OPEN, _CLOSE = "⟦", "⟧"
_MARK = re.compile(f"{_OPEN}(\\d+){_CLOSE}")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# A number as a question writes it: 1,234,567.5 or 42 or 0.25 (not part of a word or a date).
_NUMBER = re.compile(
    r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w,]|\.\d)"
    r"|(?<![\w.,])\d+(?:\.\d+)?(?![\w]|\.\d)"
)
# Words whose presence changes what a value means: "the capital of France" is not a country.
_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "without",
        "and",
        "or",
        "not",
        "nor",
        "but",
        "whose",
        "which",
        "who",
        "whom",
        "that",
        "this",
        "these",
        "those",
        "its",
        "their",
        "his",
        "her",
        "than",
        "per",
        "each",
        "every",
        "all",
        "any",
        "some",
        "no",
        "none",
    ]
)


@dataclass(frozen=True, slots=True)
class Slot:
    """A value the question gives and the plan uses.  `example` is the value the template was
    made with; `case` is how the plan spelled the question's text (e.g. "title" when the
    question said "france" and the plan "France")."""

    kind: SlotKind
    example: str
    case: Case = "same"

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "example": self.example, "case": self.case}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Slot:
        return cls(kind=data["kind"], example=data["example"], case=data.get("case", "same"))


@dataclass(frozen=True, slots=True)
class PlanTemplate:
    """A question's shape (`key`, slots as `{0}`) and its plan with the same slots (`plan`)."""

    key: str
    slots: tuple[Slot, ...]
    plan: str
    question: str  # the question it was made from

    @property
    def id(self) -> str:
        """A short, stable name: the key's digest."""
        return hashlib.sha256(self.key.encode()).hexdigest()[:12]

    @property
    def specificity(self) -> int:
        """How much of the question the template fixes: its characters outside the slots."""
        return len(_MARK.sub("", self.key))

    def example_plan(self, tools: ToolRegistry) -> str:
        """The plan filled with the values it was made with (the original plan), validated."""
        text = self.fill(
            [_cased(s.example, s.case) if s.kind == "text" else s.example for s in self.slots]
        )
        _validated(text, tools)
        return text

    def shown_example(self, question: str, tools: ToolRegistry) -> tuple[str, str] | None:
        """The template as a worked example for planning `question` (`--cache-adapt`), with
        nothing of the question it was made from but its shape.

        Its slots are placeholders (`<A>`, `<B>`...) in the question and the plan alike; a word
        of its question that is neither a function word nor a word of the tools' descriptions,
        any number word and any token with a digit, is shown as `…`.  Words are not shown for
        being in `question` too: that would tell its asker which of their words the earlier
        question held, and in what order (a PIN spelt out, guessed with all ten digit words).
        None when its plan writes a word outside the slots that is not the tools' own (it
        would carry the earlier question's text), or is not valid."""
        try:
            self.example_plan(tools)
        except PlanError:
            return None
        public = _public_words(tools)
        texts, slots = _segments(self.key)
        shown = [_masked(texts[0], public)]
        for slot, text in zip(slots, texts[1:], strict=True):
            shown += [_placeholder(slot), _masked(text, public)]
        plan = _MARK.sub(lambda m: _placeholder(int(m.group(1))), self.plan)
        # Only the tools' own lower-case words (and function words) license a word of the plan.
        licence = _Licence(set(), public)
        plan_words = _WORD.findall(_MARK.sub(" ", self.plan).replace(END_OF_PLAN, " "))
        if not all(licence.allows(w) or w.lower() in _PLAN_WORDS for w in plan_words):
            return None
        return re.sub(r"…(?:\s+…)+", "…", "".join(shown)), plan

    def similarity(self, question: str) -> float:
        """How much of the wording `question` shares with the template's own words (those
        outside the slots): the Jaccard index of the two sets of words."""
        mine = set(_WORD.findall(_MARK.sub(" ", self.key)))
        theirs = {w.lower() for w in _WORD.findall(question)}
        return len(mine & theirs) / len(mine | theirs) if mine | theirs else 0.0

    def match(self, question: str) -> Fill | None:
        """The slot values `question` gives, or None when it does not read as this template;
        a `Fill` with `refused` set when it does but a value is not one to trust."""
        read = _read(self.key, [s.kind for s in self.slots], normalize(question))
        if read is None:
            return None
        values: list[str] = []
        for i, (slot, value) in enumerate(zip(self.slots, read, strict=True)):
            value = value.strip()
            edge = self.key.startswith(f"{_OPEN}{i}{_CLOSE}") or self.key.endswith(
                f"{_OPEN}{i}{_CLOSE}"
            )
            why = _untrusted(value, slot, self.key, edge=edge)
            if why is not None:
                return Fill(self, (), refused=f"slot {i} ({value!r}): {why}")
            values.append(_cased(value, slot.case) if slot.kind == "text" else _number(value))
        return Fill(self, tuple(values))

    def sound(self) -> bool:
        """Whether every slot marker in the key and the plan names one of the slots (a row
        read from a file may say otherwise)."""
        marks = [int(m.group(1)) for m in _MARK.finditer(self.key + self.plan)]
        return all(0 <= i < len(self.slots) for i in marks)

    def fill(self, values: Sequence[str]) -> str:
        """The plan with `values` in its slots (each written as the plan's syntax needs)."""
        if len(values) != len(self.slots) or not self.sound():
            raise PlanSyntaxError("the cached plan does not fit its slots")

        def put(m: re.Match[str]) -> str:
            value = values[int(m.group(1))]
            # Inside a string literal, a text value is escaped as JSON escapes it.
            return json.dumps(value, ensure_ascii=False)[1:-1]

        return _MARK.sub(put, self.plan)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "key": self.key,
            "slots": [s.to_dict() for s in self.slots],
            "plan": self.plan,
            "question": self.question,
        }


@dataclass(frozen=True, slots=True)
class Fill:
    """A question matched to a template: the values for its slots, or why they were refused."""

    template: PlanTemplate
    values: tuple[str, ...]
    refused: str | None = None

    def plan(self, tools: ToolRegistry) -> str:
        """The filled plan, validated like any plan; raises PlanError when it is not valid."""
        return self.validated(tools)[0]

    def validated(self, tools: ToolRegistry) -> tuple[str, list[Task]]:
        """The filled plan and its tasks, parsed once; raises PlanError when it is not valid."""
        text = self.template.fill(self.values)
        return text, _validated(text, tools)


def normalize(question: str) -> str:
    """A question as templates compare it: one space between words, no closing punctuation."""
    return re.sub(r"\s+", " ", question).strip().rstrip("?.!").strip()


def registry_signature(tools: ToolRegistry) -> str:
    """A digest of every tool's name, description, parameters, result type and side effects:
    a changed tool invalidates the templates made with it."""
    parts = []
    for name in sorted(tools):
        t = tools[name]
        parts.append([t.render(), t.json_schema(), t.side_effects, t.signature_text()])
    body = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


# ------------------------------------------------------------------ showing a template

# Words a plan writes for its own form, whatever the question: join(), literals, <END_OF_PLAN>.
_PLAN_WORDS = frozenset({"join", "true", "false", "none"})
_TOKEN = re.compile(r"\w+", re.UNICODE)


def _placeholder(slot: int) -> str:
    return f"<{chr(ord('A') + slot)}>" if slot < 26 else f"<S{slot + 1}>"


def _public_words(tools: ToolRegistry) -> set[str]:
    """Words an example may show: function words and the words of the tools' descriptions
    (which the planner's prompt shows anyway), in lower case, but no number word."""
    words = set(_FUNCTION_WORDS | _SHAPE_WORDS)
    for tool in tools.values():
        words.update(w.lower() for w in _WORD.findall(tool.render()))
    return words - _NUMBER_WORDS


# Words that say a question's shape and nothing private, which an example may show.
_SHAPE_WORDS = frozenset(
    [
        "what",
        "how",
        "many",
        "much",
        "is",
        "are",
        "was",
        "were",
        "be",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "more",
        "less",
        "fewer",
        "most",
        "least",
        "larger",
        "smaller",
        "bigger",
        "biggest",
        "largest",
        "smallest",
        "greater",
        "higher",
        "lower",
        "highest",
        "lowest",
        "further",
        "farther",
        "closer",
        "nearer",
        "longer",
        "shorter",
        "older",
        "same",
        "different",
        "between",
        "both",
        "either",
        "where",
        "when",
        "why",
        "whether",
        "if",
        "together",
        "combined",
        "total",
        "difference",
        "times",
        "as",
        "there",
    ]
)
_NUMBER_WORDS = frozenset(
    [
        "zero",
        "oh",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
        "thirty",
        "forty",
        "fifty",
        "sixty",
        "seventy",
        "eighty",
        "ninety",
        "hundred",
        "thousand",
        "million",
        "billion",
        "first",
        "second",
        "third",
        "fourth",
        "fifth",
        "sixth",
        "seventh",
        "eighth",
        "ninth",
        "tenth",
    ]
)


def _masked(text: str, public: set[str]) -> str:
    """`text` with each token that is not a public word (`_public_words`) as `…`."""

    def mask(m: re.Match[str]) -> str:
        token = m.group()
        return token if _WORD.fullmatch(token) and token.lower() in public else "…"

    return _TOKEN.sub(mask, text)


# ------------------------------------------------------------------ making a template


class NotATemplate(ValueError):
    """Why a plan cannot be made into a template (said in the cache's log, not to the user)."""


def extract(question: str, tasks: Sequence[Task], tools: ToolRegistry) -> PlanTemplate:
    """The template of `question` answered by `tasks` (the whole first plan, join included).

    Raises NotATemplate when the plan holds a literal the question does not explain, when
    slots would be ambiguous, or when the template would not give back the same plan."""
    text = normalize(question)
    if _OPEN in text or _CLOSE in text or any(_OPEN in t.line or _CLOSE in t.line for t in tasks):
        raise NotATemplate("the question or plan uses the slot marker characters")
    literals = list(_literals(tasks))
    spans = _spans(text, literals)
    if not spans:
        raise NotATemplate("the plan uses nothing the question spells out")
    _check_counts(spans, literals)
    slots, key = _slotted(text, spans)
    words = {w.lower() for w in _WORD.findall(_MARK.sub(" ", key))}
    if len(words) < 2:
        raise NotATemplate("too little of the question is left outside its slots")
    licensed = _Licence(words, _vocabulary(tools, tasks))
    by_value = {(s.kind, _key_value(s)): i for i, s in enumerate(slots)}
    plan_lines = []
    for task in tasks:
        args = tuple(_slotted_value(a, by_value, licensed) for a in task.args)
        kwargs = {k: _slotted_value(v, by_value, licensed) for k, v in task.kwargs.items()}
        plan_lines.append(f"{task.id}. {task.tool}({format_args(args, kwargs)})")
    if not tasks or not tasks[-1].is_join:
        raise NotATemplate("the plan does not end in join()")
    plan = "\n".join(plan_lines) + "\n" + END_OF_PLAN
    template = PlanTemplate(key=key, slots=tuple(slots), plan=plan, question=question)
    _check_round_trip(template, text, tasks, tools)
    return template


_Slots = Mapping[tuple[SlotKind, str], int]  # a slot's index by its kind and value


@dataclass(frozen=True, slots=True)
class _Literal:
    kind: SlotKind
    value: str  # text as the plan wrote it; a number as its canonical text


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    kind: SlotKind
    value: str  # the question's text for this span
    plan_value: str  # the literal as the plan wrote it
    case: Case


def _literals(tasks: Sequence[Task]) -> Iterator[_Literal]:
    """Every literal the plan writes: whole strings, numbers, numbers inside strings."""
    for task in tasks:
        for value in (*task.args, *task.kwargs.values()):
            yield from _literals_in(value)


def _literals_in(value: Any) -> Iterator[_Literal]:
    if isinstance(value, bool) or value is None or isinstance(value, Ref):
        return
    if isinstance(value, int | float):
        yield _Literal("number", _canonical(value))
    elif isinstance(value, str):
        if value.strip():
            yield _Literal("text", value)
        for m in _NUMBER.finditer(value):
            yield _Literal("number", _canonical(m.group()))
    elif isinstance(value, Interpolated):
        for part in value.parts:
            if isinstance(part, str):
                for m in _NUMBER.finditer(part):
                    yield _Literal("number", _canonical(m.group()))
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _literals_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _literals_in(v)


def _spans(question: str, literals: Iterable[_Literal]) -> list[_Span]:
    """Where the question spells out the plan's literals: non-overlapping, longest first."""
    found: list[_Span] = []
    numbers = [(m.start(), m.end(), _canonical(m.group())) for m in _NUMBER.finditer(question)]
    for lit in dict.fromkeys(literals):
        if lit.kind == "number":
            found.extend(
                _Span(s, e, "number", question[s:e], lit.value, "same")
                for s, e, v in numbers
                if v == lit.value
            )
            continue
        pattern = re.compile(rf"(?<!\w){re.escape(lit.value.strip())}(?!\w)", re.IGNORECASE)
        for m in pattern.finditer(question):
            case = _case_of(m.group(), lit.value.strip())
            if case is not None and lit.value == lit.value.strip():
                found.append(_Span(m.start(), m.end(), "text", m.group(), lit.value, case))
    found.sort(key=lambda s: (-(s.end - s.start), s.start))
    chosen: list[_Span] = []
    for span in found:
        if all(span.end <= c.start or span.start >= c.end for c in chosen):
            chosen.append(span)
    return sorted(chosen, key=lambda s: s.start)


def _check_counts(spans: Sequence[_Span], literals: Sequence[_Literal]) -> None:
    """A number the question gives once and the plan writes twice ("60 minutes" and `60 / 60`)
    is once the question's value and once a constant that merely equals it: filling both with
    the next question's number would be wrong."""
    asked = Counter(s.plan_value for s in spans if s.kind == "number")
    written = Counter(lit.value for lit in literals if lit.kind == "number")
    for value, times in asked.items():
        if written[value] != times:
            raise NotATemplate(
                f"the plan writes {value} {written[value]} times, the question {times}"
            )


def _case_of(spelled: str, written: str) -> Case | None:
    """How the plan's `written` relates to the question's `spelled`, if by a rule that carries
    over to other values."""
    for case in _CASES:
        if _cased(spelled, case) == written:
            return case
    return None


def _cased(value: str, case: Case) -> str:
    if case == "lower":
        return value.lower()
    if case == "upper":
        return value.upper()
    if case == "title":
        return " ".join(w[:1].upper() + w[1:] for w in value.split(" "))
    return value


def _slotted(question: str, spans: Sequence[_Span]) -> tuple[list[Slot], str]:
    """The template's slots and its key: the question, lower-cased, with slots as markers."""
    slots: list[Slot] = []
    index: dict[tuple[SlotKind, str], int] = {}
    out: list[str] = []
    at = 0
    for span in spans:
        gap = question[at : span.start]
        if out and not gap.strip():
            raise NotATemplate("two slots with nothing between them")
        out.append(gap.lower())
        ident = (span.kind, span.plan_value if span.kind == "number" else span.plan_value.lower())
        if ident not in index:
            index[ident] = len(slots)
            example = span.value if span.kind == "text" else span.plan_value
            slots.append(Slot(span.kind, example, span.case))
        elif span.kind == "text" and slots[index[ident]].example != span.value:
            raise NotATemplate("the question spells one value two ways")
        out.append(f"{_OPEN}{index[ident]}{_CLOSE}")
        at = span.end
    out.append(question[at:].lower())
    return slots, "".join(out)


def _key_value(slot: Slot) -> str:
    return slot.example if slot.kind == "number" else _cased(slot.example, slot.case).lower()


def _vocabulary(tools: ToolRegistry, tasks: Sequence[Task]) -> set[str]:
    """Words a plan may write without the question saying them: the lower-case words of the
    tools it calls (names, descriptions, parameters), e.g. `round` for the calculator; not a
    capitalised name a description gives as an example ("e.g. Paris")."""
    words: set[str] = set()
    for name in {t.tool for t in tasks}:
        if name in tools:
            words.update(w for w in _WORD.findall(tools[name].render()) if w.islower())
    return words


@dataclass(frozen=True, slots=True)
class _Licence:
    """What licenses a word the plan writes outside the slots: the question's own words (and
    their abbreviations: "km" of "kilometers", "mi" of "miles"), or the tools' own words."""

    question: set[str]
    tools: set[str]

    def allows(self, word: str) -> bool:
        low = word.lower()
        if low in self.question or (word.islower() and word in self.tools):
            return True
        return len(low) >= 2 and any(
            w[:1] == low[:1] and len(w) > len(low) and _subsequence(low, w) for w in self.question
        )


def _slotted_value(value: Any, by_value: _Slots, licensed: _Licence) -> Any:
    """`value` with the question's literals as slot markers; raises NotATemplate for a literal
    that is neither a slot nor explained by the question's words or the tool's own."""
    if isinstance(value, bool) or value is None or isinstance(value, Ref):
        return value
    if isinstance(value, int | float):
        slot = by_value.get(("number", _canonical(value)))
        if slot is not None:
            return _NumberMark(slot)
        _check_number(_canonical(value))
        return value
    if isinstance(value, str):
        slot = by_value.get(("text", value.lower()))
        if slot is not None:
            return f"{_OPEN}{slot}{_CLOSE}"
        free: list[float] = []
        text = _slotted_text(value, by_value, licensed, free)
        if free and not _MARK.search(text):
            raise NotATemplate(
                f"the plan computes {value!r} from numbers the question does not give"
            )
        _check_free(free)
        return text
    if isinstance(value, Interpolated):
        free = []
        parts = tuple(
            part if isinstance(part, Ref) else _slotted_text(part, by_value, licensed, free)
            for part in value.parts
        )
        _check_free(free)
        return Interpolated(parts)
    if isinstance(value, list):
        return [_slotted_value(v, by_value, licensed) for v in value]
    if isinstance(value, tuple):
        return tuple(_slotted_value(v, by_value, licensed) for v in value)
    if isinstance(value, dict):
        return {k: _slotted_value(v, by_value, licensed) for k, v in value.items()}
    raise NotATemplate(f"a literal of type {type(value).__name__}")


def _slotted_text(text: str, by_value: _Slots, licensed: _Licence, free: list[float]) -> str:
    """Text that is not a slot itself: its numbers may be slots (the others go to `free`), its
    words must be licensed, and every digit must be part of a plain number."""

    def number(m: re.Match[str]) -> str:
        canonical = _canonical(m.group())
        slot = by_value.get(("number", canonical))
        if slot is not None:
            return f"{_OPEN}{slot}{_CLOSE}"
        _check_number(canonical)
        free.append(abs(float(m.group().replace(",", ""))))
        return m.group()

    for word in _WORD.findall(text):
        if not licensed.allows(word):
            raise NotATemplate(f"the plan writes {word!r}, which the question does not say")
    if _LOOSE_DIGIT.search(_NUMBER.sub(" ", text)):
        raise NotATemplate(f"the plan writes a number in a form not read here: {text[:40]!r}")
    return _NUMBER.sub(number, text)


# A digit that starts a number the plain number pattern did not read (6.8e7, 68_000_000);
# not one inside a name (area_km2).
_LOOSE_DIGIT = re.compile(r"(?<![^\W\d])\d")


def _check_free(free: list[float]) -> None:
    """One string may hold one number of 10 or more that the question does not give (1000000
    for "in millions"); two (`68 * 1000000`) build a number the model knew."""
    if sum(1 for n in free if n >= 10) > 1:
        raise NotATemplate("the plan combines numbers the question does not give")


def _subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(ch in it for ch in short)


# Numbers a plan may write that no question gives and no fact decides: rounding places and
# small factors, powers of ten (percent, "in millions"), and the clock's and the calendar's.
_CONSTANTS = frozenset({12, 24, 32, 60, 360, 365, 366, 3600, 86400})


def _check_number(canonical: str) -> None:
    """A number the plan writes that the question does not give may stay when it is below 10,
    a power of ten or a constant of the clock or the calendar (`_CONSTANTS`); any other (18
    regions, 68000000 people) is likely a fact the model knew about this question's values,
    which the next question's would not share."""
    try:
        value = abs(float(canonical))
    except (ValueError, OverflowError):
        value = math.inf
    if not math.isfinite(value):
        raise NotATemplate("the plan writes a number that is not finite")
    if value < 10 or math.log10(value).is_integer() or value in _CONSTANTS:
        return
    raise NotATemplate(f"the plan writes {canonical[:20]}, which the question does not give")


def _canonical(value: int | float | str) -> str:
    """A number's one spelling: 1,000 and 1000 and 1000.0 are all "1000"."""
    if isinstance(value, str):
        text = value.replace(",", "")
        value = int(text) if text.lstrip("-").isdigit() else float(text)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    if isinstance(value, int) and abs(value) >= 10**30:
        return "big"  # no question spells such a number the same way; never a slot
    return repr(value)


def _number(text: str) -> str:
    """A number slot's value as the question writes it, without thousands separators (not
    through float: 12345678901234567.5 keeps its digits)."""
    return text.replace(",", "")


@dataclass(frozen=True, slots=True)
class _NumberMark:
    """A number slot where the plan has a bare number (not inside a string)."""

    index: int

    def __repr__(self) -> str:  # how `format_args` writes it
        return f"{_OPEN}{self.index}{_CLOSE}"


def _check_round_trip(
    template: PlanTemplate, question: str, tasks: Sequence[Task], tools: ToolRegistry
) -> None:
    """The template filled from its own question must be the plan it was made from."""
    fill = template.match(question)
    if fill is None or fill.refused is not None:
        raise NotATemplate(f"the template does not read its own question ({fill and fill.refused})")
    try:
        _, filled = fill.validated(tools)
    except PlanError as exc:
        raise NotATemplate(f"the filled plan is not valid: {exc}") from None
    again = [t.call_text() for t in filled]
    if again != [t.call_text() for t in tasks]:
        raise NotATemplate("the template does not give back the plan it was made from")


# ------------------------------------------------------------------ matching


def _untrusted(value: str, slot: Slot, key: str, *, edge: bool) -> str | None:
    """Why `value` should not fill `slot`, or None when it may.  `edge`: the slot begins or
    ends the question, so no text of the template bounds it on that side."""
    if not value:
        return "it is empty"
    if slot.kind == "number":
        digits = sum(ch.isdigit() for ch in value)
        return f"it has {digits} digits" if digits > MAX_NUMBER_DIGITS else None
    if len(value) > MAX_SLOT_CHARS:
        return f"it is longer than {MAX_SLOT_CHARS} characters"
    if _MARK.search(value):
        return "it holds the slot marker"
    words = re.findall(r"\w+", value)
    example = re.findall(r"\w+", slot.example)
    if not words:
        return "it has no word"
    most = len(example) if edge else len(example) + MAX_EXTRA_WORDS
    if len(words) > most:
        return f"it has {len(words)} words where the template had {len(example)}"
    if all(w[:1].isupper() for w in example) and not all(w[:1].isupper() for w in words):
        return "it has words in lower case where the template had a name"
    extra = _function_words(words)
    for w in _function_words(example):
        if w in extra:
            extra.remove(w)
    if extra:
        return f"it has {', '.join(repr(w) for w in extra)}, which may change what it means"
    literal = {w.lower() for w in _WORD.findall(_MARK.sub(" ", key))}
    own = {w.lower() for w in example}
    clash = [w for w in words if w.lower() in literal and w.lower() not in own]
    if clash:
        return f"it repeats the question's own words ({', '.join(clash)})"
    if any(ch.isdigit() for ch in value) and not any(ch.isdigit() for ch in slot.example):
        return "it has digits where the template had none"
    marks = _marks(value) - _marks(slot.example) - _HARMLESS_MARKS
    if marks:
        return f"it has {''.join(sorted(marks))!r}, which may join several values"
    return None


_HARMLESS_MARKS = frozenset("-.'")


def _marks(text: str) -> set[str]:
    return {ch for ch in text if not ch.isalnum() and not ch.isspace()}


def _function_words(words: Iterable[str]) -> list[str]:
    return [w.lower() for w in words if w.lower().strip(",.;:'\"") in _FUNCTION_WORDS]


_NUMBER_AT = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|-?\d+(?:\.\d+)?")


def _segments(key: str) -> tuple[list[str], list[int]]:
    """A key's literal texts and, between them, its slot numbers (one fewer than texts)."""
    texts: list[str] = []
    slots: list[int] = []
    at = 0
    for m in _MARK.finditer(key):
        texts.append(key[at : m.start()])
        slots.append(int(m.group(1)))
        at = m.end()
    texts.append(key[at:])
    return texts, slots


def _read(key: str, kinds: Sequence[SlotKind], question: str) -> list[str] | None:
    """The values `question` gives for `key`'s slots, or None when it does not read as `key`.

    No backtracking: a text slot ends where the next literal text first appears, a number slot
    is the number at that place.  A value that holds the text after it is then cut short, and
    the checks on values refuse what is left (e.g. "Herzegovina and France"): a miss, never a
    wrong reading.  Literal text compares without regard to case."""
    lowered = question.lower()
    if len(lowered) != len(question):  # lower() changed the length: positions would not agree
        return None
    texts, slots = _segments(key)
    if not lowered.startswith(texts[0]):
        return None
    values: dict[int, str] = {}
    at = len(texts[0])
    for slot, text in zip(slots, texts[1:], strict=True):
        if slot >= len(kinds):
            return None
        if kinds[slot] == "number":
            m = _NUMBER_AT.match(question, at)
            if m is None or not lowered.startswith(text, m.end()):
                return None
            value, at = m.group(), m.end() + len(text)
        elif not text:  # the last slot takes the rest
            value, at = question[at:], len(question)
        else:
            end = lowered.find(text, at + 1)
            if end < 0:
                return None
            value, at = question[at:end], end + len(text)
        if values.setdefault(slot, value) != value:
            return None  # one slot used twice with two values
    if at != len(question) or len(values) != len(kinds):
        return None
    return [values[i] for i in range(len(kinds))]


def _validated(text: str, tools: ToolRegistry) -> list[Task]:
    """Parse and validate a whole plan in the text form, as the planner's plans are."""
    tasks = parse_plan(text, tools)
    if not tasks or not tasks[-1].is_join:
        raise MissingJoinError("the cached plan does not end in join()")
    return tasks
