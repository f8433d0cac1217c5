"""Gold answers of the shapes suite and how an answer is scored against each, conservatively.

Every gold is a frozen dataclass with a `kind` and `score(answer, question)`:

    Number       a number within 2 % of the value (or of an alternate, e.g. a share given as a
                 fraction instead of a percentage), as the names suite scores numbers
    Choice       one name (with its spellings): named, in a clause that does not deny it, and
                 before every rival ("Which is further west, Porto or Cork?")
    YesNo        the answer's first yes or no (as an interjection: "No, ...", "..., yes."), else a
                 sentence that states the question's claim, negated or not; otherwise wrong
    Count        an exact whole number, in digits or words ("three", "none")
    Items        a set: every item named and no rival named, where a clause that denies what
                 it names ("Greece and Chile do not") or puts it below the bar ("while Chile
                 has fewer") names no answer
    Coordinates  a latitude and a longitude, each within 0.1 degree, hemisphere included

Names are compared folded (accents, case and punctuation dropped) as whole words; a longer name
hides the shorter ones inside it ("South Sudan" does not name Sudan).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from planweave.grounding import numbers

TOLERANCE = 0.02  # relative, for numbers
DEGREES = 0.1  # absolute, for coordinates

_FOLD = str.maketrans(
    {"ø": "o", "ł": "l", "đ": "d", "ð": "d", "æ": "ae", "œ": "oe", "ß": "ss", "ı": "i", "þ": "th"}
)
_APOSTROPHES = re.compile("['’‘`]")
_NOT_WORD = re.compile(r"[^a-z0-9]+")


def fold(text: str) -> str:
    """Lower-case ASCII words and digits with single spaces: "Zürich" is "zurich", "doesn't" is
    "doesnt", "Europe/Paris" is "europe paris"."""
    text = unicodedata.normalize("NFKD", text.lower().translate(_FOLD))
    text = "".join(c for c in text if not unicodedata.combining(c))
    return " ".join(_NOT_WORD.sub(" ", _APOSTROPHES.sub("", text)).split())


@dataclass(frozen=True)
class Name:
    """A name as the question writes it, and the other spellings an answer may use."""

    text: str
    aliases: tuple[str, ...] = ()

    def folded(self) -> tuple[str, ...]:
        out: list[str] = []
        for spelling in (self.text, *self.aliases):
            key = fold(spelling)
            key = key.removeprefix("the ") if key != "the" else key
            if key and key not in out:
                out.append(key)
        return tuple(out)


def mentions(text: str, names: Sequence[Name]) -> list[list[int]]:
    """Where each name is mentioned in the folded `text` (start offsets, in order), plurals
    too ("euros", "pesos").  Longer spellings are matched first and hide the words they cover."""
    keys = sorted(
        ((key, i) for i, name in enumerate(names) for key in name.folded()),
        key=lambda p: -len(p[0]),
    )
    found: list[list[int]] = [[] for _ in names]
    for key, i in keys:
        pattern = re.compile(rf"(?<![a-z0-9]){re.escape(key)}(?:s|es)?(?![a-z0-9])")
        found[i].extend(m.start() for m in pattern.finditer(text))
        text = pattern.sub(lambda m: " " * len(m.group()), text)
    return [sorted(f) for f in found]


# Where one clause ends and another begins: sentence ends (not a decimal point), brackets,
# dashes, and contrasting conjunctions ("Spain and Italy, but not Greece").
_CLAUSE_RE = re.compile(
    r"[;:!?\n()\[\]—–]|\s-\s|\.(?!\d)"
    r"|,\s*(?=(?:but|while|whereas|although|though|however|unlike|except|not|nor|neither)\b)"
    r"|\s(?=(?:but|while|whereas|although|unlike|except|rather than|instead of)\s)",
    re.IGNORECASE,
)
_NEGATION_RE = re.compile(
    r"\b(?:not|no|none|neither|nor|never|without|except|excluding|unlike|rather|instead|cannot"
    r"|isnt|arent|doesnt|dont|didnt|cant|wont|hasnt|havent|wasnt|werent|lacks?|fails?)\b"
)
_NOT_ONLY_RE = re.compile(r"\bnot (?:only|just|merely)\b")


# In a list answer, a clause that puts items below the bar leaves them out ("while Greece and
# Chile have fewer"): no list question of the suite asks for the items below a bar.
_BELOW_RE = re.compile(r"\b(?:fewer|less|below|under|smaller|lower)\b")


def clauses(answer: str) -> list[str]:
    """The answer's clauses, folded."""
    return [f for part in _CLAUSE_RE.split(answer) if (f := fold(part))]


def negated(clause: str) -> bool:
    """Whether a folded clause denies what it says ("not only" does not)."""
    return _NEGATION_RE.search(_NOT_ONLY_RE.sub(" ", clause)) is not None


def near(answer: str, value: float) -> bool:
    return any(abs(n.value - value) <= TOLERANCE * abs(value) + 1e-9 for n in numbers(answer))


class Gold(Protocol):
    @property
    def kind(self) -> str: ...

    def score(self, answer: str, question: str = "") -> bool: ...


@dataclass(frozen=True)
class Number:
    value: float
    alternates: tuple[float, ...] = ()
    kind: Literal["number"] = field(default="number", init=False)

    def score(self, answer: str, question: str = "") -> bool:
        return any(near(answer, v) for v in (self.value, *self.alternates))


@dataclass(frozen=True)
class Choice:
    gold: Name
    rivals: tuple[Name, ...] = ()
    kind: Literal["name"] = field(default="name", init=False)

    def score(self, answer: str, question: str = "") -> bool:
        found = mentions(fold(answer), [self.gold, *self.rivals])
        if not found[0]:
            return False
        first = found[0][0]
        if any(f and f[0] < first for f in found[1:]):
            return False
        said = [c for c in clauses(answer) if mentions(c, [self.gold])[0]]
        return bool(said) and not negated(said[0])


@dataclass(frozen=True)
class Items:
    items: tuple[Name, ...]
    rivals: tuple[Name, ...] = ()
    kind: Literal["list"] = field(default="list", init=False)

    def score(self, answer: str, question: str = "") -> bool:
        named: set[int] = set()
        for clause in clauses(answer):
            if negated(clause) or _BELOW_RE.search(clause):
                continue
            found = mentions(clause, [*self.items, *self.rivals])
            named.update(i for i, f in enumerate(found) if f)
        wanted = set(range(len(self.items)))
        return wanted <= named and not named - wanted


_INTERJECTION_RE = re.compile(
    # At the start of the answer or a sentence (after "Answer:", quotes or markup), or set off
    # by punctuation inside one: "No, ...", "**Yes.**", "..., yes."
    r"(?:^|[.!?:;\n]|\banswer is)[\s\"'*_#>(\[-]*(?P<lead>yes|yeah|yep|no|nope)\b"
    r"(?!\s+(?:doubt|question|matter|wonder)\b)"
    r"|,\s*(?P<mid>yes|no)\s*(?=[,.!;:—–]|$)",
    re.IGNORECASE,
)


def verdict(answer: str) -> bool | None:
    """The answer's first yes or no said as such, or None."""
    match = _INTERJECTION_RE.search(answer)
    if match is None:
        return None
    return (match.group("lead") or match.group("mid")).lower() in ("yes", "yeah", "yep")


@dataclass(frozen=True)
class YesNo:
    """The answer to "Does A border B?": `subjects` (A, B) and `verbs` (word starts such as
    "border") let a sentence without yes or no count when it plainly states the claim or its
    negation: "A borders B." / "A does not border B."  With `ordered`, A must come before
    the verb and the verb before B ("A is larger than B", never "B is larger than A")."""

    yes: bool
    subjects: tuple[Name, Name]
    verbs: tuple[str, ...]
    ordered: bool = False
    kind: Literal["yesno"] = field(default="yesno", init=False)

    def score(self, answer: str, question: str = "") -> bool:
        said = verdict(answer)
        if said is None:
            said = self.stated(answer)
        return said is self.yes

    def stated(self, answer: str) -> bool | None:
        """What the first sentence that states the claim says about it, or None."""
        verbs = [re.compile(rf"(?<![a-z0-9]){re.escape(fold(v))}") for v in self.verbs]
        for sentence in re.split(r"[.!?;\n](?!\d)", answer):
            clauses = [c for c in (fold(c) for c in re.split(r"[:,]", sentence)) if c]
            text = " ".join(clauses)
            starts = list(itertools.accumulate((len(c) + 1 for c in clauses[:-1]), initial=0))
            found_a, found_b = mentions(text, self.subjects)
            if not found_a or not found_b:
                continue
            a, b = found_a[0], found_b[0]
            spots = [m.start() for v in verbs for m in v.finditer(text, a if self.ordered else 0)]
            if not spots or (self.ordered and not a < min(spots) < b):
                continue
            # From the start of the clause that names them: "There is no language that A and
            # B have in common" denies; "There is no doubt: A borders B" does not.
            start = max(at for at in starts if at <= min(a, b))
            return not negated(text[start : max(a, b, min(spots)) + 1])
        return None


_WORD_NUMBERS = {
    "none": 0, "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20,
}  # fmt: skip
_COUNT_TOKEN_RE = re.compile(
    r"(?<![\w.,-])(?P<n>\d+|" + "|".join(_WORD_NUMBERS) + r")(?![\w]|[.,]\d)"
    r"(?!\s*(?:%|percent|per\b|million|billion|thousand|km|mi|square|sq|degrees?|°))",
    re.IGNORECASE,
)
_NO_THINGS_RE = re.compile(r"\bno (?:country|countries|city|cities|neighbou?rs?|one)\b")
# A number after these is the size of the list asked about, not the count: "2 of the 4".
_DENOMINATOR_RE = re.compile(r"(?:\bof|\bout of|\bamong|\bfrom)(?:\s+(?:the|these|those|all))?\s*$")
MAX_COUNT = 100


def counts(text: str) -> list[int]:
    """The whole numbers in `text` that may be a count, in order: up to MAX_COUNT, in digits
    or words, not a percentage, a scale ("40 million") or a unit, not the size of the list
    ("of the four")."""
    out: list[tuple[int, int]] = []
    for m in _COUNT_TOKEN_RE.finditer(text):
        word = m.group("n").lower()
        value = int(word) if word.isdigit() else _WORD_NUMBERS[word]
        if value > MAX_COUNT or _DENOMINATOR_RE.search(text[: m.start()].lower()):
            continue
        out.append((m.start(), value))
    out.extend((m.start(), 0) for m in _NO_THINGS_RE.finditer(text.lower()))
    return [value for _, value in sorted(out)]


@dataclass(frozen=True)
class Count:
    """An exact count: the first whole number of the answer that may be one (see `counts`)
    and is not written in the question (a threshold such as "north of 50 degrees")."""

    value: int
    kind: Literal["count"] = field(default="count", init=False)

    def score(self, answer: str, question: str = "") -> bool:
        given = set(counts(question))
        found = [n for n in counts(answer) if n not in given]
        return bool(found) and found[0] == self.value


_COORDINATE_RE = re.compile(
    r"(?<![\w.])(?P<sign>[-−])?(?P<deg>\d{1,3}(?:\.\d+)?)(?!\d|\.\d)\s*(?:°|º|degrees?\b|deg\b)?\s*"
    r"(?P<hemi>north|south|east|west|[NSEW](?![a-z]))?",
    re.IGNORECASE,
)


def coordinates(answer: str) -> list[float]:
    """The signed degrees written in `answer`: a minus sign or S/W makes one negative."""
    out = []
    for m in _COORDINATE_RE.finditer(answer):
        value = float(m.group("deg"))
        hemi = (m.group("hemi") or "").lower()[:1]
        out.append(-value if m.group("sign") or hemi in ("s", "w") else value)
    return out


@dataclass(frozen=True)
class Coordinates:
    latitude: float
    longitude: float
    kind: Literal["coordinates"] = field(default="coordinates", init=False)

    def score(self, answer: str, question: str = "") -> bool:
        found = coordinates(answer)
        return all(any(abs(v - want) <= DEGREES for v in found) for want in self.wanted())

    def wanted(self) -> tuple[float, float]:
        return self.latitude, self.longitude
