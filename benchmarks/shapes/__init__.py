"""The shapes suite: does what was tuned carry over to question shapes nobody tuned on?

The names suite (answer_eval's 16 templates) holds out questions *by name* inside the templates
the prompts were tuned on, so it measures recall.  Here the split is *by template*: 49 other
templates in eight categories (lookup, chain, comparison, count, yesno, relative, units, list),
each category with templates in both halves: `tune.py` to tune against, `heldout.py` to read
only at the final run.  Golds are computed from the built-in tools' own data, in Python, never
by planweave; scoring is in `scoring.py`.

A third part, `fresh.py` (`--part fresh`), holds templates written after the prompts were frozen
(2026-12-02) by someone who had read neither the held-out half nor the prompts: a second,
independent measure of generalisation.  `all` still means the two halves, tune and heldout, so
that runs of `all` stay comparable with those made before the fresh batch.  A fourth,
`fresh2.py` (`--part fresh2`), is a second such batch, written the same day by another hand that
had read neither the prompts nor the worked examples, on shapes none of the other parts has.
A fifth, `fresh3.py` (`--part fresh3`), is a third such batch (2026-12-03), again by a hand that
had read neither, on shapes none of the four others (nor the names suite) has.  A sixth,
`fresh4.py` (`--part fresh4`), is a fourth such batch (2026-12-03), by yet another hand that
had read neither, on shapes none of the five others (nor the names suite) has.  A seventh,
`fresh5.py` (`--part fresh5`), is a fifth such batch (2026-12-03), by another hand again that
had read neither, on shapes none of the six others (nor the names suite) has.  An eighth,
`fresh6.py` (`--part fresh6`), is a sixth such batch (2026-12-04), by another hand again that
had read neither, on shapes none of the seven others (nor the names suite) has.  A ninth,
`fresh7.py` (`--part fresh7`), is a seventh such batch (2026-12-04), by another hand again that
had read neither, on shapes none of the eight others (nor the names suite) has.  A tenth,
`fresh8.py` (`--part fresh8`), is an eighth such batch (2026-12-04), by another hand again that
had read neither, on shapes none of the nine others (nor the names suite) has.  An eleventh,
`fresh9.py` (`--part fresh9`), is a ninth such batch (2026-12-04), by another hand again that
had read neither, on shapes none of the ten others (nor the names suite) has.  A twelfth,
`fresh10.py` (`--part fresh10`), is a tenth such batch (2026-12-04/05), by another hand again
that had read neither, on shapes none of the eleven others (nor the names suite) has.

    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part tune --per-template 2
    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh --per-template 2
    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh2 --per-template 2
    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh3 --per-template 2
    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh4 --per-template 2
    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh5 --per-template 2
    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh6 --per-template 2
    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh7 --per-template 2
    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh8 --per-template 2
    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh9 --per-template 2
    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh10 --per-template 2
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from . import (
    fresh,
    fresh2,
    fresh3,
    fresh4,
    fresh5,
    fresh6,
    fresh7,
    fresh8,
    fresh9,
    fresh10,
    heldout,
    tune,
)
from .common import CATEGORIES, Category, Facts, Template
from .scoring import Count, Gold, counts

__all__ = [
    "CATEGORIES",
    "FRESH",
    "FRESH2",
    "FRESH3",
    "FRESH4",
    "FRESH5",
    "FRESH6",
    "FRESH7",
    "FRESH8",
    "FRESH9",
    "FRESH10",
    "PARTS",
    "ShapeQuestion",
    "questions",
    "templates",
]

Part = Literal[
    "tune",
    "heldout",
    "fresh",
    "fresh2",
    "fresh3",
    "fresh4",
    "fresh5",
    "fresh6",
    "fresh7",
    "fresh8",
    "fresh9",
    "fresh10",
    "all",
]
# The two halves; `all` is both of them.
PARTS: dict[str, list[Template]] = {"tune": tune.TEMPLATES, "heldout": heldout.TEMPLATES}
# The batches written after the prompts were frozen: only `fresh`, `fresh2`, `fresh3`,
# `fresh4`, `fresh5`, `fresh6`, `fresh7`, `fresh8`, `fresh9` and `fresh10` draw them.
FRESH: list[Template] = fresh.TEMPLATES
FRESH2: list[Template] = fresh2.TEMPLATES
FRESH3: list[Template] = fresh3.TEMPLATES
FRESH4: list[Template] = fresh4.TEMPLATES
FRESH5: list[Template] = fresh5.TEMPLATES
FRESH6: list[Template] = fresh6.TEMPLATES
FRESH7: list[Template] = fresh7.TEMPLATES
FRESH8: list[Template] = fresh8.TEMPLATES
FRESH9: list[Template] = fresh9.TEMPLATES
FRESH10: list[Template] = fresh10.TEMPLATES


@dataclass
class ShapeQuestion:
    template: str
    category: Category
    text: str
    gold: Gold
    heldout: bool  # no prompt was tuned on it: the held-out half or a fresh batch
    part: str = ""  # "tune", "heldout", or a fresh batch: "fresh", "fresh2" ... "fresh10"

    def score(self, answer: str | None) -> bool:
        return bool(answer) and self.gold.score(answer or "", self.text)


def parts(part: Part) -> list[tuple[str, list[Template]]]:
    """The parts `part` names, with their templates: `all` is tune and heldout, no fresh batch."""
    if part == "fresh":
        return [("fresh", FRESH)]
    if part == "fresh2":
        return [("fresh2", FRESH2)]
    if part == "fresh3":
        return [("fresh3", FRESH3)]
    if part == "fresh4":
        return [("fresh4", FRESH4)]
    if part == "fresh5":
        return [("fresh5", FRESH5)]
    if part == "fresh6":
        return [("fresh6", FRESH6)]
    if part == "fresh7":
        return [("fresh7", FRESH7)]
    if part == "fresh8":
        return [("fresh8", FRESH8)]
    if part == "fresh9":
        return [("fresh9", FRESH9)]
    if part == "fresh10":
        return [("fresh10", FRESH10)]
    return [(name, ts) for name, ts in PARTS.items() if part in ("all", name)]


def templates(part: Part) -> list[Template]:
    return [t for _, ts in parts(part) for t in ts]


def questions(part: Part, per_template: int, seed: int, facts: Facts) -> list[ShapeQuestion]:
    """`per_template` distinct questions of every template of `part`, the same for a seed."""
    out = []
    for name, ts in parts(part):
        for t in ts:
            rng = random.Random(f"{seed}:{t.name}")
            seen: set[str] = set()
            tries = 0
            while len(seen) < per_template and tries < 100 * per_template:  # may run out
                tries += 1
                drawn = t.make(rng, facts)
                if drawn is None or drawn[0] in seen:
                    continue
                text, gold = drawn
                # A count the question itself writes could never be told from the question.
                if isinstance(gold, Count) and gold.value in counts(text):
                    continue
                seen.add(text)
                out.append(ShapeQuestion(t.name, t.category, text, gold, name != "tune", name))
    return out
