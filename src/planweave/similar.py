"""Worked examples chosen per question: of a tool set's bank (`ToolRegistry.bank`), those
worded most like the question, shown to the planner as earlier turns of its conversation after
the fixed instructions (whose processed state the embedded model keeps, so only the chosen
examples and the question are read anew).

A small model plans a question shape it was shown well and one it was not shown badly: it
copies the shape of the nearest example.  The prompt cannot hold an example of every shape,
so the bank holds many and each question is shown the ones it resembles.  Resemblance is
by the words that say a question's shape ("currency", "both", "how many", "percentage"), not by
its names: a capitalised word inside a sentence is a name and is not compared, so a question on
Peru is not shown an example for its mention of Peru.  Words are weighted by how rare they are
in the bank (a word every example has tells nothing)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MAX_COMPARED_CHARS",
    "MAX_SIMILAR",
    "SIMILAR",
    "SIMILARITY",
    "ExampleBank",
    "shape_words",
]

# How many of the bank's examples a question is shown by default and at most, and how alike
# their wording must be (`ExampleBank.score`): below it an example shares a word or two of no
# consequence.  Off by default: on question shapes the bank does not hold (the shapes suite's
# ninth batch, held out by template) the embedded model answered 7 of 32 shown two and 10 of
# 32 shown none, and more slowly; `similar_examples=2` is for a bank of the shapes a
# deployment's users ask.
SIMILAR = 0
MAX_SIMILAR = 8
SIMILARITY = 0.35

_WORD = re.compile(r"[^\W\d_]+")
# Symbols that say a shape as much as their words do.
_SYMBOLS = {"°C": " celsius ", "°F": " fahrenheit ", "€": " money ", "$": " money ", "£": " money "}
# Capitalised words that are not names.
_NOT_NAMES = frozenset({"celsius", "fahrenheit", "kelvin", "i"})


# Only a question's opening is compared: its shape is said there, and a long text costs time.
MAX_COMPARED_CHARS = 2000
_STOPS = frozenset(".?!:;")


def shape_words(question: str) -> frozenset[str]:
    """The words of `question` (its first `MAX_COMPARED_CHARS` characters) that say its shape:
    lower-cased, a plural's `s` dropped, and no name (a capitalised word that does not open a
    sentence; one that does is kept, and weighs nothing unless the bank has the word)."""
    question = question[:MAX_COMPARED_CHARS]
    for symbol, word in _SYMBOLS.items():
        question = question.replace(symbol, word)
    words = set()
    end = 0  # where the previous word ended: only the gap since then says a sentence opens
    for m in _WORD.finditer(question):
        opens = end == 0 or question[end : m.start()].rstrip()[-1:] in _STOPS
        end = m.end()
        word = m.group().lower()
        if m.group()[0].isupper() and not opens and word not in _NOT_NAMES:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us")):
            word = word[:-1]
        words.add(word)
    return frozenset(words)


@dataclass(frozen=True, slots=True)
class _Example:
    question: str
    plan: str
    words: frozenset[str]


_QUESTION_START = re.compile(r"^(?=Question:)", re.M)


class ExampleBank:
    """Worked examples (`Question: ...` then the plan) to choose from by resemblance."""

    def __init__(self, examples: Sequence[str]) -> None:
        self.examples: list[_Example] = []
        # An entry may hold several examples, each opening with its `Question:` line.
        for example in (e for entry in examples for e in _QUESTION_START.split(entry)):
            first, _, plan = example.strip().partition("\n")
            question = first.removeprefix("Question:").strip()
            if question and plan.strip():
                self.examples.append(_Example(question, plan.strip(), shape_words(question)))
        counts: dict[str, int] = {}
        for e in self.examples:
            for w in e.words:
                counts[w] = counts.get(w, 0) + 1
        n = len(self.examples)
        self._idf = {w: math.log((n + 1) / c) for w, c in counts.items()}

    def __len__(self) -> int:
        return len(self.examples)

    def _norm(self, words: frozenset[str]) -> float:
        return math.sqrt(sum(self._idf.get(w, 0.0) ** 2 for w in words))

    def score(self, question: str | frozenset[str], example: _Example) -> float:
        """The cosine of the two questions' shape words (`question`'s, or those words), each
        weighted by its rarity in the bank (words the bank never has weigh nothing)."""
        words = shape_words(question) if isinstance(question, str) else question
        shared = sum(self._idf[w] ** 2 for w in words & example.words)
        norms = self._norm(words) * self._norm(example.words)
        return shared / norms if norms else 0.0

    def nearest(self, question: str, k: int, minimum: float) -> list[tuple[str, str]]:
        """Up to `k` examples scoring at least `minimum`, as (question, plan), the nearest
        last (it is read just before the question)."""
        if k <= 0:
            return []
        words = shape_words(question)
        scored = [(self.score(words, e), -i, e) for i, e in enumerate(self.examples)]
        # The best last; of two alike, the one earlier in the bank.
        best = sorted((s for s in scored if s[0] >= minimum), key=lambda s: s[:2])[-k:]
        return [(e.question, e.plan) for _, _, e in best]
