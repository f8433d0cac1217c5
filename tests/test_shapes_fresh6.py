"""The shapes suite's sixth fresh batch (benchmarks/shapes/fresh6.py), written after the prompts
were frozen: every template draws distinct questions with golds for several seeds, its gold is
the tools' data (some checked by hand), its exclusions hold, and its scorer takes a right answer
and refuses a wrong one.  No model runs here, and no held-out question is drawn: only the other
parts' template names are compared, so that no template of this batch takes one."""

from __future__ import annotations

from typing import Any

import pytest
from benchmarks import answer_eval, shapes
from benchmarks.shapes import fresh, fresh2, fresh3, fresh4, fresh5, fresh6, heldout, tune
from benchmarks.shapes.common import CATEGORIES, Facts
from benchmarks.shapes.scoring import Items, Number, YesNo

from shape_pins import GOLD_OF, Pick, right_and_wrong

SEEDS = [1, 7, 12, 26, 99]


@pytest.fixture(scope="module")
def facts() -> Facts:
    return answer_eval.Data()


def template(name: str) -> Any:
    (found,) = [t for t in fresh6.TEMPLATES if t.name == name]
    return found


def make(facts: Facts, name: str, *wanted: Any) -> tuple[str, Any]:
    drawn: tuple[str, Any] | None = template(name).make(Pick(*wanted), facts)
    assert drawn is not None
    return drawn


def draws(facts: Facts, name: str, *wanted: Any, times: int = 60) -> list[tuple[str, Any]]:
    """Draws of a template with `wanted` pinned and the rest left to chance, seed after seed."""
    out = []
    for seed in range(times):
        pick = Pick(*wanted)
        pick.seed(seed)
        drawn = template(name).make(pick, facts)
        if drawn is not None:
            out.append(drawn)
    return out


def test_the_sixth_fresh_batch_has_two_new_templates_per_category() -> None:
    names = [t.name for t in fresh6.TEMPLATES]
    assert len(names) == len(set(names)) == 16
    for category in CATEGORIES:
        assert sum(t.category == category for t in fresh6.TEMPLATES) == 2, category
    # No name of the other parts or of the names suite again (only names are compared).
    for other in (tune, fresh, fresh2, fresh3, fresh4, fresh5):
        assert not set(names) & {t.name for t in other.TEMPLATES}, other.__name__
    # Computed apart so that a failure prints only the clashing names, none of the others.
    clash = sorted(set(names) & {t.name for t in heldout.TEMPLATES})
    assert clash == []
    assert not set(names) & set(answer_eval.TEMPLATES)
    # Only `fresh6` draws this batch: not `all`, not the other fresh batches.
    assert shapes.templates("fresh6") == fresh6.TEMPLATES
    assert shapes.FRESH6 == fresh6.TEMPLATES
    for part in ("all", "fresh", "fresh2", "fresh3", "fresh4", "fresh5"):
        assert not set(names) & {t.name for t in shapes.templates(part)}, part


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_every_template_of_the_batch_draws_distinct_questions_with_golds_it_scores(
    facts: Facts, seed: int
) -> None:
    qs = shapes.questions("fresh6", 3, seed, facts)
    by_template: dict[str, list[shapes.ShapeQuestion]] = {}
    for q in qs:
        by_template.setdefault(q.template, []).append(q)
    assert set(by_template) == {t.name for t in fresh6.TEMPLATES}
    for name, made in by_template.items():
        assert len(made) == 3, name
        assert len({q.text for q in made}) == 3, name
        for q in made:
            assert q.part == "fresh6", name
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
    again = shapes.questions("fresh6", 3, seed, facts)
    assert [q.text for q in again] == [q.text for q in qs]  # seeded
    assert [q.gold for q in again] == [q.gold for q in qs]


def test_golds_come_from_the_data(facts: Facts) -> None:
    # A few golds recomputed by hand from the records, each scored right and a rival wrong.
    text, gold = make(facts, "home_country_area", "Lyon")
    assert "Lyon" in text
    assert isinstance(gold, Number)
    assert gold.value == pytest.approx(float(facts.country("France")["area_km2"]))
    assert gold.score(f"{gold.value:,.0f} km²")
    assert not gold.score(f"{gold.value * 1.5:,.0f} km²")

    text, gold = make(facts, "population_gap", "Germany", "France")
    assert isinstance(gold, Number)
    want = facts.country("Germany")["population"] - facts.country("France")["population"]
    assert gold.value == pytest.approx(abs(want))

    text, gold = make(facts, "sparser_of_two", "Canada", "Netherlands")
    assert gold.score("Canada.")
    assert not gold.score("The Netherlands.")

    text, gold = make(facts, "euro_users_from_list", "Germany", "Japan", "Italy", "Brazil", 2)
    assert isinstance(gold, Items)
    assert gold.score("Germany and Italy.")
    assert not gold.score("Germany, Italy and Japan.")

    text, gold = make(facts, "fewer_than_mark_yn", True, "Norway", 10)
    assert isinstance(gold, YesNo)
    assert gold.yes is (facts.country("Norway")["population"] < 10e6)

    text, gold = make(facts, "parcels_lb_to_kg")
    assert isinstance(gold, Number)
    assert gold.value > 0


def test_the_runner_knows_the_sixth_fresh_part() -> None:
    qs = answer_eval.suite_questions("shapes", "fresh6", 1, 12)
    assert {q.template for q in qs} == {t.name for t in fresh6.TEMPLATES}
    rows = [
        {"heldout": True, "part": "fresh6", "correct": True, "wall_s": 1.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
        {"heldout": True, "part": "fresh5", "correct": False, "wall_s": 2.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
    ]  # fmt: skip
    result = {"rows": rows}
    mine = answer_eval.summary(result, "fresh6")
    assert mine is not None
    assert mine["n"] == 1
    assert mine["accuracy"] == 1.0
    other = answer_eval.summary(result, "fresh5")
    assert other is not None
    assert other["n"] == 1
    assert other["accuracy"] == 0.0
