"""The shapes suite's fresh batch (benchmarks/shapes/fresh.py), written after the prompts were
frozen: every template draws distinct questions with golds for several seeds, its gold is the
tools' data (some checked by hand), and its scorer takes a right answer and refuses a wrong one.
No model runs here, and no held-out question is drawn: only the held-out half's template names
are compared, so that no fresh template takes one."""

from __future__ import annotations

from typing import Any

import pytest
from benchmarks import answer_eval, shapes
from benchmarks.shapes import fresh, heldout, tune
from benchmarks.shapes.common import CATEGORIES, Facts
from benchmarks.shapes.scoring import Choice, Count, Gold, Items, Number, YesNo

from shape_pins import GOLD_OF, Pick

SEEDS = [1, 7, 12, 26, 99]


@pytest.fixture(scope="module")
def facts() -> Facts:
    return answer_eval.Data()


def make(facts: Facts, name: str, *wanted: Any) -> tuple[str, Any]:
    (template,) = [t for t in fresh.TEMPLATES if t.name == name]
    drawn = template.make(Pick(*wanted), facts)
    assert drawn is not None
    return drawn


def right_and_wrong(gold: Gold) -> tuple[list[str], list[str]]:
    """Answers the gold's scorer must take, and answers it must refuse."""
    if isinstance(gold, Number):
        v = gold.value
        return [f"{v:.6g}", f"That comes to about {v * 1.01:.4g}."], [
            f"{v * 1.3:.6g}",
            f"Roughly {v * 0.7:.4g}.",
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


def test_the_fresh_batch_has_two_new_templates_per_category() -> None:
    names = [t.name for t in fresh.TEMPLATES]
    assert len(names) == len(set(names)) >= 16
    for category in CATEGORIES:
        assert sum(t.category == category for t in fresh.TEMPLATES) >= 2, category
    # No name of the other parts or of the names suite again (only names are compared).
    assert not set(names) & {t.name for t in tune.TEMPLATES}
    # Computed apart so that a failure prints only the clashing names, none of the others.
    clash = sorted(set(names) & {t.name for t in heldout.TEMPLATES})
    assert clash == []
    assert not set(names) & set(answer_eval.TEMPLATES)
    # `all` is still the two halves; only `fresh` draws the fresh batch.
    assert shapes.templates("fresh") == fresh.TEMPLATES
    assert not set(names) & {t.name for t in shapes.templates("all")}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_every_fresh_template_draws_distinct_questions_with_golds_it_scores(
    facts: Facts, seed: int
) -> None:
    qs = shapes.questions("fresh", 3, seed, facts)
    by_template: dict[str, list[shapes.ShapeQuestion]] = {}
    for q in qs:
        by_template.setdefault(q.template, []).append(q)
    assert set(by_template) == {t.name for t in fresh.TEMPLATES}
    for name, made in by_template.items():
        assert len(made) == 3, name
        assert len({q.text for q in made}) == 3, name
        for q in made:
            assert q.part == "fresh", name
            assert q.heldout, name
            assert q.text.endswith(("?", ".")), name
            if q.category in GOLD_OF:
                assert isinstance(q.gold, GOLD_OF[q.category]), name
            right, wrong = right_and_wrong(q.gold)
            for answer in right:
                assert q.score(answer), (name, q.text, answer)
            for answer in wrong:
                assert not q.score(answer), (name, q.text, answer)
    again = shapes.questions("fresh", 3, seed, facts)
    assert [q.text for q in again] == [q.text for q in qs]  # seeded


def test_fresh_golds_match_the_data_by_hand(facts: Facts) -> None:
    # Spain: 505,992 km².
    assert make(facts, "country_area_km2", "Spain")[1] == Number(505_992.0)
    _, gold = make(facts, "country_of_city", "Rotterdam")
    assert gold.score("Rotterdam is in the Netherlands.")
    assert gold.score("Holland.")
    assert not gold.score("Belgium.")
    # Lviv is in Ukraine, whose capital is Kyiv (also spelt Kiev); Istanbul's is Ankara.
    _, gold = make(facts, "capital_of_home_country", "Lviv")
    assert gold.score("Lviv is in Ukraine; its capital is Kyiv.")
    assert gold.score("Kiev.")
    assert make(facts, "capital_of_home_country", "Istanbul")[1].gold.text == "Ankara"
    (template,) = [t for t in fresh.TEMPLATES if t.name == "capital_of_home_country"]
    assert template.make(Pick("Cape Town"), facts) is None  # three capitals: never asked
    # Bergen is in Norway: 5,156,450 people on 323,802 km², 15.9 per km².
    assert make(facts, "home_country_density", "Bergen")[1].value == pytest.approx(15.92, 1e-3)
    # Mombasa 4.05 S against Calgary 51.05 N.
    text, gold = make(facts, "nearer_the_equator", "Mombasa", "Calgary", True)
    assert "closer" in text or "nearer" in text
    assert gold.gold.text == "Mombasa"
    _, gold = make(facts, "nearer_the_equator", "Mombasa", "Calgary", False)
    assert gold.gold.text == "Calgary"
    # Madrid 3,255,944 against Rome 2,318,895: Spain, or Madrid standing for it.
    _, gold = make(facts, "bigger_capital", "Spain", "Italy")
    assert gold.score("Spain: Madrid has more people than Rome.")
    assert gold.score("Madrid is bigger than Rome.")
    assert not gold.score("Rome is bigger than Madrid.")
    # Sydney and Perth south of the equator, Lyon and Bergen north of it.
    text, gold = make(facts, "count_southern_cities", 2, 4, "Sydney", "Perth", "Lyon", "Bergen")
    assert all(c in text for c in ("Sydney", "Perth", "Lyon", "Bergen"))
    assert gold == Count(2)
    # Germany 226 per km²: the Netherlands 403 and Belgium 368 are denser, Spain 92 and
    # Canada 3.6 are not.
    text, gold = make(
        facts, "count_denser_than", "Germany", "Netherlands", "Belgium", "Spain", "Canada"
    )
    assert text.endswith("?")
    assert "Germany" in text
    assert gold == Count(2)
    _, gold = make(facts, "same_country_yn", "Porto", True, "Braga")
    assert gold.yes is True
    assert gold.score("Porto and Braga are both in Portugal.")
    _, gold = make(facts, "same_country_yn", "Lyon", False, "Geneva")
    assert gold.yes is False
    assert gold.score(
        "Lyon is in France and Geneva in Switzerland, so they are not in the same country."
    )
    assert not gold.score("Lyon and Geneva are in the same country.")
    _, gold = make(facts, "uses_euro_yn", False, "Poland")
    assert gold.yes is False
    assert gold.score("Poland uses the złoty, not the euro.")
    assert gold.score("Poland has not adopted the euro.")
    assert not gold.score("Poland uses the euro.")
    _, gold = make(facts, "uses_euro_yn", True, "Finland")
    assert gold.yes is True
    assert gold.score("Finland uses the euro.")
    # Hamburg 1,973,896 against Berlin 3,426,354: 0.576.
    _, gold = make(facts, "city_to_capital_ratio", "Hamburg")
    assert gold.value == pytest.approx(0.5761, 1e-3)
    assert not gold.score("Berlin has about 1.74 times as many people.")
    (template,) = [t for t in fresh.TEMPLATES if t.name == "city_to_capital_ratio"]
    assert template.make(Pick("Johannesburg"), facts) is None  # three capitals: never asked
    # Finland 5,470,437 among Norway 5,156,450, Russia 146,233,000 and Sweden 9,737,521: 3.3 %.
    _, gold = make(facts, "share_of_neighbourhood", "Finland")
    assert gold.value == pytest.approx(3.284, 1e-3)
    assert gold.score("About 0.033 of them.")
    (template,) = [t for t in fresh.TEMPLATES if t.name == "share_of_neighbourhood"]
    assert template.make(Pick("Brazil"), facts) is None  # French Guiana is no country
    assert make(facts, "luggage_kg_to_lb", 23)[1].value == pytest.approx(50.706, 1e-4)
    # France 640,679 km² and Spain 505,992 km²: 134,687 km² apart, 52,003 sq mi.
    _, gold = make(facts, "area_gap_square_miles", "Spain", "France")
    assert gold.value == pytest.approx(52_003, 1e-4)
    assert not gold.score("134,687 km².")
    # Madrid 3,255,944, Rome 2,318,895 and Tokyo 9,733,276 are over 2 million; Lisbon
    # 517,802 is not.
    text, gold = make(facts, "capitals_over", 4, "Spain", "Italy", "Portugal", "Japan", 2e6)
    assert "2 million" in text
    assert [n.text for n in gold.items] == ["Spain", "Italy", "Japan"]
    assert [n.text for n in gold.rivals] == ["Portugal"]
    assert gold.score("Spain, Italy and Japan; Lisbon is smaller, so not Portugal.")
    assert not gold.score("Spain, Italy, Portugal and Japan.")
    # Lyon 520,774: Munich 1,505,005 and Milan 1,371,498 are bigger; Porto and Bergen are not.
    _, gold = make(facts, "cities_bigger_than", "Lyon", "Munich", "Porto", "Milan", "Bergen")
    assert [n.text for n in gold.items] == ["Munich", "Milan"]
    assert [n.text for n in gold.rivals] == ["Porto", "Bergen"]
    assert gold.score("Munich and Milan have more people than Lyon; Porto and Bergen have fewer.")


def test_the_runner_knows_the_fresh_part(facts: Facts) -> None:
    qs = answer_eval.suite_questions("shapes", "fresh", 1, 12)
    assert {q.template for q in qs} == {t.name for t in fresh.TEMPLATES}
    rows = [
        {"heldout": True, "part": "fresh", "correct": True, "wall_s": 1.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
        {"heldout": False, "correct": False, "wall_s": 2.0, "llm_calls": 1, "withdrawn": 0,
         "ungrounded": []},
    ]  # fmt: skip
    result = {"rows": rows}
    fresh_rows = answer_eval.summary(result, "fresh")
    assert fresh_rows is not None
    assert fresh_rows["n"] == 1
    assert fresh_rows["accuracy"] == 1.0
    assert answer_eval.summary(result, "heldout") is None  # a fresh row is not the held-out half
    tune_rows = answer_eval.summary(result, "tune")  # a row saved before rows had parts
    assert tune_rows is not None
    assert tune_rows["n"] == 1
