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


class Batch:
    """A fresh batch of the shapes suite (`module`, drawn as `part`), and what every batch's
    test checks of it: its templates pinned and drawn, two new ones per class registered
    under its part only, and distinct, seeded questions whose golds score as they must.
    `earlier`: the parts written before it (tune first), whose names it may not take."""

    def __init__(self, module: Any, part: str, earlier: Sequence[Any]) -> None:
        self.module, self.part, self.earlier = module, part, tuple(earlier)

    def template(self, name: str) -> Any:
        (found,) = [t for t in self.module.TEMPLATES if t.name == name]
        return found

    def make(self, facts: Any, name: str, *wanted: Any) -> tuple[str, Any]:
        drawn: tuple[str, Any] | None = self.template(name).make(Pick(*wanted), facts)
        assert drawn is not None
        return drawn

    def draws(self, facts: Any, name: str, *wanted: Any, times: int = 40) -> list[Any]:
        """Draws of a template with `wanted` pinned and the rest left to chance, seed after
        seed."""
        out = []
        for seed in range(times):
            pick = Pick(*wanted)
            pick.seed(seed)
            drawn = self.template(name).make(pick, facts)
            if drawn is not None:
                out.append(drawn)
        return out

    def check_registered(self) -> None:
        from benchmarks import answer_eval, shapes
        from benchmarks.shapes import heldout
        from benchmarks.shapes.common import CATEGORIES

        templates = self.module.TEMPLATES
        names = [t.name for t in templates]
        assert len(names) == len(set(names)) == 16
        for category in CATEGORIES:
            assert sum(t.category == category for t in templates) == 2, category
        # No name of the other parts or of the names suite again (only names are compared).
        for other in self.earlier:
            assert not set(names) & {t.name for t in other.TEMPLATES}, other.__name__
        # Computed apart so that a failure prints only the clashing names, none of the others.
        clash = sorted(set(names) & {t.name for t in heldout.TEMPLATES})
        assert clash == []
        assert not set(names) & set(answer_eval.TEMPLATES)
        # No maker of an earlier batch is one of this batch's (none imported and re-registered).
        earlier_makers = {t.make for other in (*self.earlier, heldout) for t in other.TEMPLATES}
        assert not {t.make for t in templates} & earlier_makers
        # Only this part draws the batch: not `all`, not the other fresh batches.
        assert shapes.templates(self.part) == templates
        assert getattr(shapes, self.part.upper()) == templates
        fresh = [m.__name__.rsplit(".", 1)[-1] for m in self.earlier[1:]]
        for part in ("all", *fresh):
            assert not set(names) & {t.name for t in shapes.templates(part)}, part

    def check_draws(self, facts: Any, seed: int) -> None:
        from benchmarks import shapes

        qs = shapes.questions(self.part, 3, seed, facts)
        by_template: dict[str, list[Any]] = {}
        for q in qs:
            by_template.setdefault(q.template, []).append(q)
        assert set(by_template) == {t.name for t in self.module.TEMPLATES}
        for name, made in by_template.items():
            assert len(made) == 3, name
            assert len({q.text for q in made}) == 3, name
            for q in made:
                assert q.part == self.part, name
                assert q.heldout, name
                assert q.text.endswith(("?", ".")), name
                assert "  " not in q.text, name
                if q.category in GOLD_OF:
                    assert isinstance(q.gold, GOLD_OF[q.category]), name
                right, wrong = right_and_wrong(q.gold)
                for answer in right:
                    assert q.score(answer), (name, q.text, answer)
                for answer in wrong:
                    assert not q.score(answer), (name, q.text, answer)
        again = shapes.questions(self.part, 3, seed, facts)
        assert [q.text for q in again] == [q.text for q in qs]  # seeded
        assert [q.gold for q in again] == [q.gold for q in qs]
