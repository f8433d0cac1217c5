"""The shapes suite's fifth fresh batch (benchmarks/shapes/fresh5.py), written after the prompts
were frozen: every template draws distinct questions with golds for several seeds, its gold is
the tools' data (some checked by hand), its exclusions hold, and its scorer takes a right answer
and refuses a wrong one.  No model runs here, and no held-out question is drawn: only the other
parts' template names are compared, so that no template of this batch takes one."""

from __future__ import annotations

from typing import Any

import pytest
from benchmarks import answer_eval, shapes
from benchmarks.shapes import fresh, fresh2, fresh3, fresh4, fresh5, heldout, tune
from benchmarks.shapes.common import CATEGORIES, Facts
from benchmarks.shapes.scoring import Count, Items, Number, YesNo

from shape_pins import GOLD_OF, Pick, right_and_wrong

SEEDS = [1, 7, 12, 26, 99]


@pytest.fixture(scope="module")
def facts() -> Facts:
    return answer_eval.Data()


def template(name: str) -> Any:
    (found,) = [t for t in fresh5.TEMPLATES if t.name == name]
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


def test_the_fifth_fresh_batch_has_two_new_templates_per_category() -> None:
    names = [t.name for t in fresh5.TEMPLATES]
    assert len(names) == len(set(names)) == 16
    for category in CATEGORIES:
        assert sum(t.category == category for t in fresh5.TEMPLATES) == 2, category
    # No name of the other parts or of the names suite again (only names are compared).
    for other in (tune, fresh, fresh2, fresh3, fresh4):
        assert not set(names) & {t.name for t in other.TEMPLATES}, other.__name__
    # Computed apart so that a failure prints only the clashing names, none of the others.
    clash = sorted(set(names) & {t.name for t in heldout.TEMPLATES})
    assert clash == []
    assert not set(names) & set(answer_eval.TEMPLATES)
    # Only `fresh5` draws this batch: not `all`, not the other fresh batches.
    assert shapes.templates("fresh5") == fresh5.TEMPLATES
    assert shapes.FRESH5 == fresh5.TEMPLATES
    for part in ("all", "fresh", "fresh2", "fresh3", "fresh4"):
        assert not set(names) & {t.name for t in shapes.templates(part)}, part


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_every_template_of_the_batch_draws_distinct_questions_with_golds_it_scores(
    facts: Facts, seed: int
) -> None:
    qs = shapes.questions("fresh5", 3, seed, facts)
    by_template: dict[str, list[shapes.ShapeQuestion]] = {}
    for q in qs:
        by_template.setdefault(q.template, []).append(q)
    assert set(by_template) == {t.name for t in fresh5.TEMPLATES}
    for name, made in by_template.items():
        assert len(made) == 3, name
        assert len({q.text for q in made}) == 3, name
        for q in made:
            assert q.part == "fresh5", name
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
    again = shapes.questions("fresh5", 3, seed, facts)
    assert [q.text for q in again] == [q.text for q in qs]  # seeded
    assert [q.gold for q in again] == [q.gold for q in qs]


def test_seed_12_draws_the_same_questions_and_golds(facts: Facts) -> None:
    # The run the docstring names (seed 12, two per template) is pinned: 32 questions, and
    # a few of them with their golds, so that a change to a template shows here first.
    qs = shapes.questions("fresh5", 2, 12, facts)
    assert len(qs) == 32
    by_text = {q.text: q.gold for q in qs}
    gold = by_text["What currencies are used in Norway, Australia and Egypt?"]
    assert isinstance(gold, Items)
    assert [n.text for n in gold.items] == ["NOK", "AUD", "EGP"]
    gold = by_text["Add up the populations of the countries where Turin and Salzburg are located."]
    assert isinstance(gold, Number)
    assert gold.value == pytest.approx(60_769_102 + 8_527_230)
    gold = by_text[
        "How many of Senegal, Mexico, Ecuador, Greece and Mongolia have their capital north "
        "of the 50th parallel?"
    ]
    assert gold == Count(0)
    gold = by_text["Which countries border the Czech Republic but not Belarus?"]
    assert isinstance(gold, Items)
    assert [n.text for n in gold.items] == ["Austria", "Germany", "Slovakia"]
    assert [n.text for n in gold.rivals] == ["Poland"]


@pytest.mark.timeout(120)
def test_what_the_batch_leaves_out(facts: Facts) -> None:
    qs = [q for seed in range(12) for q in shapes.questions("fresh5", 4, seed, facts)]
    # Countries whose borders depend on overseas land, Kashmir, Hans Island or Israel's.
    arguable = (
        "France", "Spain", "Brazil", "Canada", "Denmark", "India", "China", "Israel",
        "Morocco", "Pakistan", "Netherlands", "United Kingdom",
    )  # fmt: skip
    # Cities of countries whose capital is argued about, or whose people depend on the limits.
    doubted = (
        "Mumbai", "Bangalore", "Antwerp", "Ghent", "Liege", "Rotterdam", "Utrecht",
        "Eindhoven", "Zurich", "Geneva", "Basel", "Lausanne", "Cape Town", "Johannesburg",
    )  # fmt: skip
    for q in qs:
        if q.template in (
            "neighbours_named",
            "bigger_neighbourhood",
            "denser_than_all_neighbours_yn",
            "neighbours_of_one_not_other",
        ):
            assert not any(c in q.text for c in arguable), q.text
        if q.template == "trip_currencies":  # Bulgaria has the euro; the data the lev
            assert "Bulgaria" not in q.text, q.text
        if q.template == "home_capital_population":
            assert not any(c in q.text for c in doubted), q.text
        if q.template == "count_capitals_north_of":
            unsure = ("Bolivia", "Tanzania", "South Africa", "Netherlands", "Switzerland")
            assert not any(c in q.text for c in unsure), q.text
        if q.template == "neighbours_named":  # no territory among the neighbours or rivals
            assert isinstance(q.gold, Items)
            named = {n.text for n in (*q.gold.items, *q.gold.rivals)}
            assert not named & {"French Guiana", "Gibraltar", "Western Sahara", "Hong Kong"}
    # The answers are balanced where the draw alone would not be.
    for name in ("denser_than_all_neighbours_yn", "density_over_yn"):
        said = [q.gold.yes for q in qs if q.template == name and isinstance(q.gold, YesNo)]
        assert 0.3 < sum(said) / len(said) < 0.7, name
    for name in ("count_capitals_north_of", "count_languages_between_two"):
        counted = [q.gold.value for q in qs if q.template == name and isinstance(q.gold, Count)]
        assert max(counted.count(v) for v in set(counted)) < len(counted) / 2, name


def test_lookups_and_chains_by_hand(facts: Facts) -> None:
    # Peru borders Bolivia, Brazil, Chile, Colombia and Ecuador; Argentina borders three of
    # them, not Peru.
    text, gold = make(facts, "neighbours_named", "Peru")
    assert "Peru" in text
    assert {n.text for n in gold.items} == {"Bolivia", "Brazil", "Chile", "Colombia", "Ecuador"}
    assert "Argentina" in {n.text for n in gold.rivals}
    assert "Peru" not in {n.text for n in gold.rivals}
    assert gold.score("Peru borders Ecuador, Colombia, Brazil, Bolivia and Chile.")
    assert not gold.score("Ecuador, Colombia, Brazil and Bolivia.")
    assert not gold.score("Ecuador, Colombia, Brazil, Bolivia, Chile and Argentina.")
    # Spain and Italy pay in euros, Poland in złoty: two currencies for three countries.
    _, gold = make(facts, "trip_currencies", "Spain", "Italy", "Poland")
    assert [n.text for n in gold.items] == ["EUR", "PLN"]
    assert gold.score("You'll need euros for Spain and Italy, and złoty for Poland.")
    assert not gold.score("Euros everywhere.")
    # The Swedish and Icelandic krona go by one name: never asked together.
    maker = template("trip_currencies").make
    assert maker(Pick("Sweden", "Iceland", "Peru"), facts) is None
    # Porto (252,687) is in Portugal, whose capital Lisbon has 517,802 people.
    text, gold = make(facts, "home_capital_population", "Porto")
    assert "Porto" in text
    assert gold.value == pytest.approx(517_802)
    assert gold.score("Lisbon, the capital of Portugal, has about 518,000 inhabitants.")
    assert not gold.score("About 252,700.")
    assert not gold.score("About 10.5 million.")
    # Zurich and Mumbai: Bern is the "federal city", Delhi or New Delhi; never asked.
    maker = template("home_capital_population").make
    assert maker(Pick("Zurich"), facts) is None
    assert maker(Pick("Mumbai"), facts) is None
    # Portugal 10,477,800 and Spain 46,507,760; Lyon and Nice share a country.
    _, gold = make(facts, "home_countries_combined_population", "Porto", "Seville")
    assert gold.value == pytest.approx(56_985_560)
    assert gold.score("Portugal and Spain together have about 57 million people.")
    assert not gold.score("About 46.5 million.")
    maker = template("home_countries_combined_population").make
    assert maker(Pick("Lyon", "Nice"), facts) is None


def test_comparisons_and_counts_by_hand(facts: Facts) -> None:
    # Sweden's neighbours (Finland, Norway) have 10.6 million people, Ecuador's (Colombia,
    # Peru) 78.7 million.
    text, gold = make(facts, "bigger_neighbourhood", "Sweden", "Ecuador", False)
    assert "Sweden" in text
    assert "Ecuador" in text
    assert gold.gold.text == "Ecuador"
    assert gold.score("Ecuador's neighbours: Colombia and Peru have far more people.")
    assert not gold.score("Sweden's.")
    # Norway and Sweden border each other: an answer would list the rival among the neighbours.
    assert template("bigger_neighbourhood").make(Pick("Norway", "Sweden", True), facts) is None
    # By area Indonesia is biggest but has no euro; Spain (505,992 km²) beats Italy (301,336).
    pins = ("Spain", "Italy", "Poland", "Indonesia")
    text, gold = make(facts, "largest_among_euro_users", True, 4, 2, *pins)
    assert all(c in text for c in pins)
    assert gold.gold.text == "Spain"
    assert gold.score("Indonesia is larger but uses the rupiah, so among euro users: Spain.")
    assert not gold.score("Italy.")
    # By population Italy (60.8 million) and Spain (46.5) are too close to call.
    maker = template("largest_among_euro_users").make
    assert maker(Pick(False, 4, 2, *pins), facts) is None
    # France is the biggest of all and uses the euro: no filter needed, never asked.
    assert maker(Pick(True, 4, 2, "France", "Italy", "Poland", "Portugal"), facts) is None
    # Berlin 52.5° and Warsaw 52.2° are north of 50°; Paris 48.9°, Rome 41.9°, Madrid 40.4° not.
    five = ("Germany", "Poland", "France", "Italy", "Spain")
    text, gold = make(facts, "count_capitals_north_of", 50, 2, *five)
    assert gold == Count(2)
    assert gold.score("Two: Berlin and Warsaw.", text)
    assert not gold.score("Three of them.", text)
    # Prague, at 50.09°, is too near the 50th parallel to count either way.
    near = ("Czech Republic", "Poland", "France", "Italy", "Spain")
    assert template("count_capitals_north_of").make(Pick(50, 2, *near), facts) is None
    # Belgium: Dutch, French, German; Luxembourg: French, German, Luxembourgish: four.
    text, gold = make(facts, "count_languages_between_two", True, "Belgium", "Luxembourg")
    assert gold == Count(4)
    assert gold.score("Four: Dutch, French, German and Luxembourgish.", text)
    assert not gold.score("6", text)
    # Poland (Polish) and Kenya (English, Swahili) share none: three.
    _, gold = make(facts, "count_languages_between_two", False, "Poland", "Kenya")
    assert gold == Count(3)


def test_yes_no_by_hand(facts: Facts) -> None:
    # Bangladesh, 1,067 people per km², against India's 384 and Myanmar's 79.
    text, gold = make(facts, "denser_than_all_neighbours_yn", True, "Bangladesh")
    assert "Bangladesh" in text
    assert gold.yes is True
    assert gold.score("Bangladesh is denser than all of its neighbours.")
    assert not gold.score("No, India is denser.")
    # Belgium (368) against the Netherlands (403) is too close to call: never drawn.
    for yes in (True, False):
        for text, _ in draws(facts, "denser_than_all_neighbours_yn", yes):
            assert "Belgium" not in text, text
    # Germany: 226 people per km².
    text, gold = make(facts, "density_over_yn", True, "Germany", 100)
    assert "100" in text
    assert gold.yes is True
    assert gold.score("Yes: Germany has about 226 people per km².")
    _, gold = make(facts, "density_over_yn", False, "Germany", 500)
    assert gold.yes is False
    assert gold.score("No, only about 226.")
    # Never a mark within 15 % of Germany's density (200), nor beyond four times it.
    for text, _ in draws(facts, "density_over_yn", "Germany"):
        assert not any(f" {m} " in text for m in ("10", "25", "50", "200")), text


def test_numbers_and_lists_by_hand(facts: Facts) -> None:
    # Belgium, 11,225,469 people, at 3 % a year for 20 years: 20.27 million (not 17.96, the
    # growth without compounding).
    text, gold = make(facts, "population_after_years", "Belgium", 3.0, 20)
    assert "3%" in text or "3 percent" in text
    assert gold.value == pytest.approx(20_274_445.7, 1e-6)
    assert not gold.score("About 17.96 million.")
    # At half a percent for five years compounding hardly shows: never asked.
    maker = template("population_after_years").make
    assert maker(Pick("Belgium", 0.5, 5), facts) is None
    # $2 billion among Germany's 80,783,000 people: $24.76 each.
    text, gold = make(facts, "cost_per_person", "Germany", 2e9)
    assert "$2 billion" in text
    assert gold.value == pytest.approx(24.7577, 1e-4)
    assert gold.score("About $24.76 per person.")
    # $40 billion among Iceland's 328,170 people is a fortune each: never asked.
    assert template("cost_per_person").make(Pick("Iceland", 40e9), facts) is None
    # 5 ft 5 in: 65 inches, 165.1 cm (or 1.651 m).
    text, gold = make(facts, "height_in_cm", 5)
    assert gold.value == pytest.approx(165.1)
    assert gold.score("165 cm.")
    assert gold.score("About 1.65 m.")
    assert not gold.score("152.4 cm.")  # the feet alone
    # 4 ft 4 in is below the heights asked about.
    assert template("height_in_cm").make(Pick(4), facts) is None
    # 24, 25, 27 and 26 °C: 25.5 °C on average, 77.9 °F.
    text, gold = make(facts, "average_temperature_converted", True, 24, 4, 25, 27, 26)
    assert "24, 25, 27 and 26 °C" in text
    assert gold.value == pytest.approx(77.9)
    assert not gold.score("25.5 °F.")
    # Three days around 25 °C add up to about the answer in °F (75 against 77): never asked.
    maker = template("average_temperature_converted").make
    assert maker(Pick(True, 3, 24, 25, 26), facts) is None
    # 60, 61, 64 and 66 °F: 62.75 °F, 17.08 °C.
    text, gold = make(facts, "average_temperature_converted", False, 4, 60, 61, 64, 66, 69)
    assert "60, 61, 64 and 66 °F" in text
    assert gold.value == pytest.approx(17.0833, 1e-4)
    # Around freezing a rounded answer would miss 2 %: never asked.
    assert maker(Pick(False, 3, 20, 30, 31, 33), facts) is None
    # The Czech Republic borders Austria, Germany, Poland and Slovakia; Belarus Poland too.
    text, gold = make(facts, "neighbours_of_one_not_other", ("Czech Republic", "Belarus"))
    assert "the Czech Republic" in text
    assert [n.text for n in gold.items] == ["Austria", "Germany", "Slovakia"]
    assert gold.score("Austria, Germany and Slovakia border the Czech Republic but not Belarus.")
    assert not gold.score("Poland, Austria, Germany and Slovakia.")
    # Shanghai (24.9 million) against Japan and Mexico (over 119 million), Iceland and Denmark.
    pins = ("Shanghai", 4, 2, "Japan", "Mexico", "Iceland", "Denmark")
    text, gold = make(facts, "countries_outnumbering_city", *pins)
    assert "Shanghai" in text
    assert [n.text for n in gold.items] == ["Japan", "Mexico"]
    assert [n.text for n in gold.rivals] == ["Iceland", "Denmark"]
    assert gold.score("Japan and Mexico; Iceland and Denmark have fewer people.")
    assert not gold.score("Japan, Mexico and Denmark.")
    # Never a country within a factor of three of the city (Portugal's 10.5 million is not
    # clearly below Shanghai's 24.9 either way the city is counted).
    for text, _ in draws(facts, "countries_outnumbering_city", "Shanghai"):
        assert "Portugal" not in text, text


def test_the_runner_knows_the_fifth_fresh_part() -> None:
    qs = answer_eval.suite_questions("shapes", "fresh5", 1, 12)
    assert {q.template for q in qs} == {t.name for t in fresh5.TEMPLATES}
    rows = [
        {"heldout": True, "part": "fresh5", "correct": True, "wall_s": 1.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
        {"heldout": True, "part": "fresh4", "correct": False, "wall_s": 2.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
    ]  # fmt: skip
    result = {"rows": rows}
    mine = answer_eval.summary(result, "fresh5")
    assert mine is not None
    assert mine["n"] == 1
    assert mine["accuracy"] == 1.0
    other = answer_eval.summary(result, "fresh4")
    assert other is not None
    assert other["n"] == 1
    assert other["accuracy"] == 0.0
