"""What the shapes suite's tests share: which gold each template class gives, and a random
source that pins a template's draw."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from benchmarks.shapes.scoring import Choice, Count, Items, Number, YesNo

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
