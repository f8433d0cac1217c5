"""What the shapes suite's tests share: which gold each template class gives, a random source
that pins a template's draw, and answers each kind of gold must take and refuse."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from benchmarks.shapes.scoring import Choice, Count, Gold, Items, Number, YesNo

GOLD_OF = {
    "count": Count,
    "yesno": YesNo,
    "list": Items,
    "relative": Number,
    "units": Number,
    "comparison": Choice,
}


class Pick(random.Random):
    """A random source that takes the given values first wherever they are among the choices,
    so a test can pin a template's draw."""

    def __init__(self, *wanted: Any) -> None:
        super().__init__(0)
        self.wanted = wanted

    def _pinned(self, seq: Sequence[Any]) -> list[Any]:
        return [w for w in self.wanted if any(type(w) is type(s) and w == s for s in seq)]

    def choice(self, seq: Any) -> Any:
        pinned = self._pinned(seq)
        return pinned[0] if pinned else super().choice(seq)

    def sample(self, population: Sequence[Any], k: int, **_: Any) -> list[Any]:
        pinned = self._pinned(population)[:k]
        rest = [p for p in population if p not in pinned]
        return pinned + super().sample(rest, k - len(pinned))


def written(v: float) -> str:
    """A number as an answer writes it: "4,650,776", "7.54"."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def right_and_wrong(gold: Gold) -> tuple[list[str], list[str]]:
    """Answers a gold's scorer must take, and answers it must refuse."""
    if isinstance(gold, Number):
        v = gold.value
        return [written(v), f"That comes to about {written(v * 1.01)}."], [
            written(v * 1.3),
            f"Roughly {written(v * 0.7)}.",
            "I could not work it out.",
        ]
    if isinstance(gold, Choice):
        right = [f"{gold.gold.text}.", f"The answer is {gold.gold.text}."]
        wrong = [f"It is not {gold.gold.text}.", "I could not find out."]
        wrong += [f"{rival.text}." for rival in gold.rivals]
        if gold.rivals:
            wrong.append(f"{gold.rivals[0].text}, not {gold.gold.text}.")
        return right, wrong
    if isinstance(gold, YesNo):
        said, unsaid = ("Yes", "No") if gold.yes else ("No", "Yes")
        return [f"{said}.", f"{said}, as the data shows."], [f"{unsaid}.", "", "Hard to say."]
    if isinstance(gold, Count):
        n = gold.value
        return [f"{n}", f"The answer is {n}."], [f"{n + 1}", f"The answer is {n + 2}."]
    if isinstance(gold, Items):
        items = [i.text for i in gold.items]
        right = [", ".join(items) + ".", " and ".join(reversed(items)) + "."]
        wrong = ["None of them."]
        if gold.rivals:
            wrong.append(", ".join([*items, gold.rivals[0].text]) + ".")
        if len(items) > 1:
            wrong.append(", ".join(items[1:]) + ".")
        return right, wrong
    raise AssertionError(f"no answers for {gold!r}")
