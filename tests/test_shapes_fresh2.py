"""The shapes suite's second fresh batch (benchmarks/shapes/fresh2.py), written after the prompts
were frozen: every template draws distinct questions with golds for several seeds, its gold is
the tools' data (some checked by hand), and its scorer takes a right answer and refuses a wrong
one.  No model runs here, and no held-out question is drawn: only the other parts' template
names are compared, so that no template of this batch takes one."""

from __future__ import annotations

from typing import Any

import pytest
from benchmarks import answer_eval, shapes
from benchmarks.shapes import fresh, fresh2, heldout, tune
from benchmarks.shapes.common import CATEGORIES, Facts
from benchmarks.shapes.scoring import Choice, Count, Gold, Items, Number, YesNo

from shape_pins import GOLD_OF, Pick

SEEDS = [1, 7, 12, 26, 99]


@pytest.fixture(scope="module")
def facts() -> Facts:
    return answer_eval.Data()


def template(name: str) -> Any:
    (found,) = [t for t in fresh2.TEMPLATES if t.name == name]
    return found


def make(facts: Facts, name: str, *wanted: Any) -> tuple[str, Any]:
    drawn = template(name).make(Pick(*wanted), facts)
    assert drawn is not None
    return drawn


def written(v: float) -> str:
    """A number as an answer writes it: "4,650,776", "7.54"."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def right_and_wrong(gold: Gold) -> tuple[list[str], list[str]]:
    """Answers the gold's scorer must take, and answers it must refuse."""
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


def test_the_second_fresh_batch_has_two_new_templates_per_category() -> None:
    names = [t.name for t in fresh2.TEMPLATES]
    assert len(names) == len(set(names)) == 16
    for category in CATEGORIES:
        assert sum(t.category == category for t in fresh2.TEMPLATES) == 2, category
    # No name of the other parts or of the names suite again (only names are compared).
    assert not set(names) & {t.name for t in tune.TEMPLATES}
    assert not set(names) & {t.name for t in fresh.TEMPLATES}
    # Computed apart so that a failure prints only the clashing names, none of the others.
    clash = sorted(set(names) & {t.name for t in heldout.TEMPLATES})
    assert clash == []
    assert not set(names) & set(answer_eval.TEMPLATES)
    # Only `fresh2` draws this batch: not `all`, not `fresh`.
    assert shapes.templates("fresh2") == fresh2.TEMPLATES
    assert not set(names) & {t.name for t in shapes.templates("all")}
    assert not set(names) & {t.name for t in shapes.templates("fresh")}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_every_template_of_the_batch_draws_distinct_questions_with_golds_it_scores(
    facts: Facts, seed: int
) -> None:
    qs = shapes.questions("fresh2", 3, seed, facts)
    by_template: dict[str, list[shapes.ShapeQuestion]] = {}
    for q in qs:
        by_template.setdefault(q.template, []).append(q)
    assert set(by_template) == {t.name for t in fresh2.TEMPLATES}
    for name, made in by_template.items():
        assert len(made) == 3, name
        assert len({q.text for q in made}) == 3, name
        for q in made:
            assert q.part == "fresh2", name
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
    again = shapes.questions("fresh2", 3, seed, facts)
    assert [q.text for q in again] == [q.text for q in qs]  # seeded


def test_lookups_and_chains_by_hand(facts: Facts) -> None:
    # Sydney at 33.9 S; Seville at 37.4 N, in southern Spain, which names no side.
    _, gold = make(facts, "hemisphere_of_city", True, "Sydney")
    assert gold.score("Sydney is in the southern hemisphere.")
    assert not gold.score("North of the equator.")
    _, gold = make(facts, "hemisphere_of_city", False, "Seville")
    assert gold.score("Seville, in southern Spain, lies north of the equator.")
    assert not gold.score("South.")
    # Porto at 8.6 W; Lyon at 4.8 E, in western Europe, which names no side either.
    _, gold = make(facts, "prime_meridian_side", True, "Porto")
    assert gold.score("Porto is west of the Greenwich meridian.")
    _, gold = make(facts, "prime_meridian_side", False, "Lyon")
    assert gold.score("Lyon, in western Europe, lies just east of Greenwich.")
    assert not gold.score("West.")
    # The Netherlands' neighbours: Germany, 80.8 million people, and Belgium, 11.2 million.
    text, gold = make(facts, "capital_of_biggest_neighbour", False, "Germany", "Netherlands")
    assert "Netherlands" in text
    assert gold.gold.text == "Berlin"
    assert gold.score("Germany is the most populous neighbour; its capital is Berlin.")
    assert not gold.score("Brussels.")
    # Finland's largest neighbour by area is Russia.
    _, gold = make(facts, "capital_of_biggest_neighbour", True, "Russia", "Finland")
    assert gold.gold.text == "Moscow"
    # Toronto 43.7 N against Ottawa 45.4 N.
    text, gold = make(facts, "city_or_its_capital_north", "Toronto", True)
    assert "north" in text
    assert gold.gold.text == "Ottawa"
    assert gold.score("Ottawa, the capital, is further north than Toronto.")
    assert not gold.score("Toronto is further north than Ottawa.")
    _, gold = make(facts, "city_or_its_capital_north", "Toronto", False)
    assert gold.gold.text == "Toronto"
    assert template("city_or_its_capital_north").make(Pick("Cape Town"), facts) is None
    assert template("city_or_its_capital_north").make(Pick("Rome"), facts) is None  # a capital


def test_comparisons_and_counts_by_hand(facts: Facts) -> None:
    # Norway 5,156,450 people against Hamburg 1,973,896.
    _, gold = make(facts, "city_or_country_more_people", "Norway", "Hamburg")
    assert gold.gold.text == "Norway"
    assert gold.score("Norway has more people than Hamburg.")
    assert not gold.score("Hamburg.")
    # Canada 9,984,670 km² and 35.5 million people; Australia 7,692,024 km² and 23.7 million.
    for by_area in (True, False):
        _, gold = make(facts, "city_in_bigger_country", "Toronto", "Sydney", by_area)
        assert gold.gold.text == "Toronto"
        assert gold.score("Canada is bigger than Australia, so Toronto.")
        assert not gold.score("Sydney.")
    # Belgium shares French, German or Dutch with all four neighbours; Finland shares Swedish
    # with Sweden only.
    assert make(facts, "count_neighbours_sharing_language", 4, "Belgium")[1] == Count(4)
    text, gold = make(facts, "count_neighbours_sharing_language", 1, "Finland")
    assert "Finland" in text
    assert gold == Count(1)
    # France and Italy in Europe, Japan in Asia, Kenya in Africa, Peru in the Americas.
    text, gold = make(
        facts, "count_continents_spanned", "France", "Japan", "Kenya", "Peru", "Italy"
    )
    assert "five" in text
    assert gold == Count(4)
    assert gold.score("Those five countries span 4 continents.", text)
    maker = template("count_continents_spanned").make  # Chile and Peru: one region or two?
    assert maker(Pick("France", "Japan", "Kenya", "Peru", "Chile"), facts) is None


def test_yes_no_by_hand(facts: Facts) -> None:
    _, gold = make(facts, "official_language_yn", "Switzerland", True, "Italian")
    assert gold.yes is True
    assert gold.score("Italian is one of Switzerland's official languages.")
    _, gold = make(facts, "official_language_yn", "Belgium", False, "Italian")
    assert gold.yes is False
    assert gold.score("Italian is not an official language of Belgium.")
    assert not gold.score("Yes, Belgium recognises Italian.")
    # Never a neighbour's language, often a minority one there (Finnish in Sweden).
    drawn = template("official_language_yn").make(Pick("Sweden", False, "Finnish"), facts)
    assert drawn is not None
    assert "Finnish" not in drawn[0]
    # Geneva is in Switzerland, which borders France; Porto is in Portugal, which does not.
    _, gold = make(facts, "city_in_bordering_country_yn", "France", True, "Geneva")
    assert gold.yes is True
    assert gold.score("Geneva is in Switzerland, which borders France.")
    _, gold = make(facts, "city_in_bordering_country_yn", "France", False, "Porto")
    assert gold.yes is False
    assert gold.score("Porto is in Portugal, which does not border France.")


def test_numbers_and_lists_by_hand(facts: Facts) -> None:
    # Zurich 415,367 and Geneva 201,741 of Switzerland's 8,183,800: 7.54 %.
    text, gold = make(facts, "cities_share_of_country", "Switzerland", 2, "Zurich", "Geneva")
    assert "all in" not in text
    assert gold.value == pytest.approx(7.5406, 1e-4)
    assert gold.score("About 0.0754 of them.")
    assert not gold.score("Zurich alone is 5.1 %.")
    # Spain 46,507,760: 10 % is 4,650,776.
    assert make(facts, "extra_people_at_growth", "Spain", 10)[1] == Number(4_650_776.0)
    # Iceland: 103,000 km² for 328,170 people, 313,864 m² (31.4 ha) each.
    assert make(facts, "land_per_person", "Iceland", True)[1].value == pytest.approx(313_864, 1e-5)
    assert make(facts, "land_per_person", "Iceland", False)[1].value == pytest.approx(31.386, 1e-4)
    # 250 miles are 402.3 km: 24.1 litres at 6 l/100 km (not 15, 250 x 6 / 100).
    _, gold = make(facts, "fuel_for_trip_miles", 250, 6)
    assert gold.value == pytest.approx(24.1402, 1e-5)
    assert not gold.score("15 litres.")
    # Bergen 60.4 N and Hamburg 53.6 N are north of the 50th parallel; Milan 45.5 N and
    # Sydney 33.9 S are not.
    text, gold = make(
        facts, "cities_north_of_parallel", 4, "Bergen", "Hamburg", "Milan", "Sydney", 50.0
    )
    assert "50" in text
    assert [n.text for n in gold.items] == ["Bergen", "Hamburg"]
    assert [n.text for n in gold.rivals] == ["Milan", "Sydney"]
    assert gold.score("Bergen and Hamburg; Milan and Sydney lie below it.")
    # Belgium, 30,528 km²: France, Germany and the Netherlands are larger, Luxembourg is not.
    _, gold = make(facts, "neighbours_larger_in_area", "Belgium")
    assert [n.text for n in gold.items] == ["France", "Germany", "Netherlands"]
    assert [n.text for n in gold.rivals] == ["Luxembourg"]
    assert gold.score("France, Germany and the Netherlands; Luxembourg is smaller.")
    assert not gold.score("France and Germany.")


def test_the_runner_knows_the_second_fresh_part() -> None:
    qs = answer_eval.suite_questions("shapes", "fresh2", 1, 12)
    assert {q.template for q in qs} == {t.name for t in fresh2.TEMPLATES}
    rows = [
        {"heldout": True, "part": "fresh2", "correct": True, "wall_s": 1.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
        {"heldout": True, "part": "fresh", "correct": False, "wall_s": 2.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
    ]  # fmt: skip
    result = {"rows": rows}
    mine = answer_eval.summary(result, "fresh2")
    assert mine is not None
    assert mine["n"] == 1
    assert mine["accuracy"] == 1.0
    other = answer_eval.summary(result, "fresh")
    assert other is not None
    assert other["n"] == 1
    assert other["accuracy"] == 0.0
