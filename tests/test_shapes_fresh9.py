"""The shapes suite's ninth fresh batch (benchmarks/shapes/fresh9.py), written after the prompts
were frozen: every template draws distinct questions with golds for several seeds, its gold is
the tools' data (some checked by hand), its exclusions hold, and its scorer takes a right answer
and refuses a wrong one.  No model runs here, and no held-out question is drawn: only the other
parts' template names are compared, so that no template of this batch takes one."""

from __future__ import annotations

import math
import re

import pytest
from benchmarks import answer_eval
from benchmarks.shapes import (
    fresh,
    fresh2,
    fresh3,
    fresh4,
    fresh5,
    fresh6,
    fresh7,
    fresh8,
    fresh9,
    tune,
)
from benchmarks.shapes.common import CITIES, Facts
from benchmarks.shapes.fresh import _home
from benchmarks.shapes.fresh2 import _CAPITALS_IN_DOUBT, _TWO_CONTINENTS
from benchmarks.shapes.fresh3 import _CAPITAL_TITLE_IN_DOUBT, _WHOLE
from benchmarks.shapes.scoring import Choice, Count, Items, Number, YesNo

from shape_pins import Batch

SEEDS = [1, 7, 12, 26, 99]
EARLIER = (tune, fresh, fresh2, fresh3, fresh4, fresh5, fresh6, fresh7, fresh8)


@pytest.fixture(scope="module")
def facts() -> Facts:
    return answer_eval.Data()


BATCH = Batch(fresh9, "fresh9", EARLIER)
template, make, draws = BATCH.template, BATCH.make, BATCH.draws


def _named(text: str, names: list[str]) -> list[str]:
    """The names of `names` the text writes as whole words, longest first so that none hides
    in another, in the order they come."""
    rest, found = text, []
    for name in sorted(names, key=len, reverse=True):
        pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
        if match := pattern.search(rest):
            found.append((match.start(), name))
            rest = pattern.sub(lambda m: " " * len(m.group()), rest)
    return [name for _, name in sorted(found)]


def _capital_lat(facts: Facts, country: str) -> float:
    return float(facts.city(facts.country(country)["capital"])["latitude"])


def test_the_ninth_fresh_batch_has_two_new_templates_per_category() -> None:
    BATCH.check_registered()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_every_template_of_the_batch_draws_distinct_questions_with_golds_it_scores(
    facts: Facts, seed: int
) -> None:
    BATCH.check_draws(facts, seed)


def test_golds_come_from_the_data(facts: Facts) -> None:
    # A few golds recomputed by hand from the records, each scored right and a rival wrong.
    text, gold = make(facts, "country_of_currency", "forint")
    assert "forint" in text
    assert facts.country("Hungary")["currencies"] == ["HUF"]
    assert gold.score("Hungary.")
    assert not gold.score("Romania.")

    text, gold = make(facts, "country_of_language", "Burmese")
    assert "Myanmar" not in text
    assert gold.score("Myanmar.")
    assert gold.score("Burma, also called Myanmar.")
    assert not gold.score("Thailand.")

    text, gold = make(facts, "capital_of_extreme_city", "Bergen", "Seville", "Osaka", True)
    assert isinstance(gold, Choice)
    assert "north" in text
    assert gold.gold.text == "Oslo"  # Bergen lies at 60 °N, Seville at 37, Osaka at 35
    assert gold.score("Bergen is furthest north, so the capital is Oslo.")
    assert not gold.score("Madrid.")

    text, gold = make(facts, "neighbour_with_extreme_capital", "Latvia", True)
    assert isinstance(gold, Choice)
    near = facts.country("Latvia")["neighbours"]
    assert gold.gold.text == max(near, key=lambda n: _capital_lat(facts, n)) == "Estonia"
    assert gold.score("Estonia: Tallinn lies furthest north.")
    assert not gold.score("Russia.")

    # Poland has more people now, and keeps the lead at these rates.
    text, gold = make(
        facts, "more_people_after_growth", "Poland", "Canada", 1.2, 0.5, 25, False
    )  # fmt: skip
    assert isinstance(gold, Choice)
    assert gold.gold.text == "Poland"
    # At these, Canada overtakes it.
    text, gold = make(
        facts, "more_people_after_growth", "Canada", "Poland", 2.0, 0.3, 20, True
    )  # fmt: skip
    assert isinstance(gold, Choice)
    canada = facts.country("Canada")["population"] * 1.02**20
    poland = facts.country("Poland")["population"] * 1.003**20
    assert facts.country("Canada")["population"] < facts.country("Poland")["population"]
    assert canada > poland
    assert gold.gold.text == "Canada"
    assert not gold.score("Poland.")

    text, gold = make(facts, "more_populous_by_capital", "Kenya", "Ghana", True)
    assert "Nairobi" in text
    assert "Accra" in text
    assert "Kenya" not in text
    assert gold.score("Kenya, whose capital is Nairobi.")
    assert gold.score("The one governed from Nairobi.")
    assert not gold.score("Ghana.")

    text, gold = make(
        facts, "count_cities_in_neighbour_countries", "Switzerland", 5, 2,
        "Lyon", "Munich", "Porto", "Krakow", "Ghent",
    )  # fmt: skip
    assert gold == Count(2)  # Lyon in France, Munich in Germany; the rest further away

    text, gold = make(
        facts, "count_days_past_converted_mark", True, "Chicago", 25, 5, 70, 75, 80, 85, 90
    )
    assert "°F" in text
    assert "25 °C" in text
    assert gold == Count(3)  # 25 °C is 77 °F: 80, 85 and 90 pass it

    text, gold = make(facts, "same_continent_yn", "Africa", "Mombasa", False, "Lyon")
    assert isinstance(gold, YesNo)
    assert not gold.yes
    text, gold = make(facts, "same_continent_yn", "Asia", "Osaka", True, "Mumbai")
    assert isinstance(gold, YesNo)
    assert gold.yes
    assert gold.score("Yes, both are in Asia.")

    text, gold = make(facts, "areas_within_percent_yn", 10, True, ("Finland", "Norway"))
    assert isinstance(gold, YesNo)
    assert gold.yes  # 338,424 and 323,802 km²: 4.5 % apart
    text, gold = make(facts, "areas_within_percent_yn", 10, False, ("France", "Spain"))
    assert isinstance(gold, YesNo)
    assert not gold.yes  # 640,679 and 505,992 km²: over 20 % apart
    assert gold.score("France and Spain are not within 10% of each other.")
    assert not gold.score("France and Spain are within 10% of each other.")

    text, gold = make(facts, "growth_rate_needed", "Sweden", 20, 15e6)
    assert isinstance(gold, Number)
    want = (15e6 / facts.country("Sweden")["population"]) ** (1 / 20) - 1
    assert gold.value == pytest.approx(100 * want)
    assert gold.score(f"About {100 * want:.2f}% a year.")
    linear = (15e6 / facts.country("Sweden")["population"] - 1) / 20  # without compounding
    assert not gold.score(f"About {100 * linear:.2f}%.")

    text, gold = make(facts, "times_smallest_neighbour", "Ghana", True)
    assert isinstance(gold, Number)
    near = facts.country("Ghana")["neighbours"]
    smallest = min(facts.country(n)["area_km2"] for n in near)
    assert gold.value == pytest.approx(facts.country("Ghana")["area_km2"] / smallest)

    text, gold = make(facts, "engine_power", True, 110)
    assert isinstance(gold, Number)
    assert gold.value == pytest.approx(147.51, abs=0.01)  # 110 kW at 745.7 W a horsepower
    assert gold.score("About 150 PS.")  # the metric horsepower
    assert not gold.score("110 hp.")

    text, gold = make(facts, "food_energy", True, 1200)
    assert isinstance(gold, Number)
    assert gold.value == pytest.approx(286.8, abs=0.1)  # 4.184 kJ a kilocalorie
    assert not gold.score("5,021 kcal.")

    text, gold = make(facts, "two_cities_same_country", "France", "Lyon", "Nice", 2)
    assert isinstance(gold, Items)
    assert gold.score("Lyon and Nice, both in France.")
    assert not gold.score(f"Lyon and {gold.rivals[0].text}.")

    text, gold = make(
        facts, "at_least_percent_bigger", "Poland", False, 25, 5, 2,
        "Italy", "France", "Ukraine", "Argentina", "Peru",
    )  # fmt: skip
    assert isinstance(gold, Items)
    assert {i.text for i in gold.items} == {"Italy", "France"}
    assert gold.score("France and Italy.")
    assert not gold.score("France, Italy and Ukraine.")  # more people, but not 25 % more


def test_chain_and_count_golds_hold_for_every_draw(facts: Facts) -> None:
    # The capital is that of the country of the northernmost or southernmost city named.
    for text, gold in draws(facts, "capital_of_extreme_city"):
        named = _named(text, CITIES)
        assert len(named) == 3, text
        lat = {c: facts.city(c)["latitude"] for c in named}
        pick = max(named, key=lat.__getitem__) if "north" in text else min(named, key=lat.get)
        assert gold.gold.text == facts.country(_home(facts, pick))["capital"], text
    # The country named is the neighbour whose capital lies furthest that way.
    for text, gold in draws(facts, "neighbour_with_extreme_capital"):
        (c,) = _named(text, _WHOLE)
        near = facts.country(c)["neighbours"]
        key = lambda n: _capital_lat(facts, n)  # noqa: E731
        pick = max(near, key=key) if "north" in text else min(near, key=key)
        assert gold.gold.text == facts.country(pick)["name"], text
    for text, gold in draws(facts, "count_cities_in_neighbour_countries"):
        cities = _named(text, CITIES)
        (x,) = _named(text, [c for c in _WHOLE if c not in cities])
        near = set(facts.country(x)["neighbours"])
        assert gold.value == sum(_home(facts, c) in near for c in cities), text
        assert all(_home(facts, c) != facts.country(x)["name"] for c in cities), text
    for text, gold in draws(facts, "count_days_past_converted_mark"):
        mark = int(re.search(r"(\d+) °[CF]\?$", text)[1])  # type: ignore[index]
        readings = [int(v) for v in re.findall(r"(\d+)(?=,| and|\.| °[CF]\.)", text.split(":")[1])]
        at = mark * 1.8 + 32 if text.endswith("°C?") else (mark - 32) / 1.8
        above = "warmer" in text or "topped" in text
        assert gold.value == sum((v > at) is above for v in readings), text
        assert all(abs(v - at) >= 1 for v in readings), text


def test_exclusions_hold(facts: Facts) -> None:
    in_doubt = _CAPITALS_IN_DOUBT | _CAPITAL_TITLE_IN_DOUBT
    doubted = {str(facts.country(c)["capital"]) for c in in_doubt if facts.country(c)["capital"]}
    british = {c for c in CITIES if _home(facts, c) == "United Kingdom"}
    assert british
    # No capital in doubt is a gold or a rival; no British city is asked about.
    for name in ("capital_of_extreme_city", "neighbour_with_extreme_capital"):
        for text, gold in draws(facts, name):
            for option in (gold.gold, *gold.rivals):
                assert not {option.text, *option.aliases} & (doubted | set(in_doubt)), text
            assert not any(city in text for city in british), (name, text)
    for text, _ in draws(facts, "more_populous_by_capital", times=60):
        assert "London" not in text, text
        assert "Mexico City" not in text, text
        assert not any(capital in text for capital in doubted), text
    # The question names the money or the language, never the country.
    for name in ("country_of_currency", "country_of_language"):
        for text, gold in draws(facts, name):
            assert not _named(text, [gold.gold.text, *gold.gold.aliases]), text
    # Two cities on one continent: none in the Americas or Oceania, none in a country on two.
    elsewhere = {
        c
        for c in CITIES
        if _home(facts, c) in _TWO_CONTINENTS
        or facts.country(_home(facts, c))["region"] in ("Americas", "Oceania")
    }
    for text, gold in draws(facts, "same_continent_yn", times=60):
        assert not set(_named(text, CITIES)) & elsewhere, text
        assert not set(_named(text, CITIES)) & british, text
        a, b = (facts.country(_home(facts, n.text))["region"] for n in gold.subjects)
        assert (a == b) is gold.yes, text
    # However a gap in area is put, it is on the same side of the mark.
    for text, gold in draws(facts, "areas_within_percent_yn", times=60):
        pct = int(re.search(r"(\d+)(?:%| percent)", text)[1])  # type: ignore[index]
        a, b = (facts.country(n.text)["area_km2"] for n in gold.subjects)
        gap = abs(a - b)
        for base in (a, b, (a + b) / 2):
            assert (100 * gap / base < pct) is gold.yes, text
    for text, gold in draws(facts, "growth_rate_needed"):
        assert 0.3 <= gold.value <= 4, text
    for text, gold in draws(facts, "more_people_after_growth", times=60):
        a, b = (n.text for n in (gold.gold, *gold.rivals))
        assert facts.country(a)["population"] < 1.6 * facts.country(b)["population"], text
        assert facts.country(b)["population"] < 1.6 * facts.country(a)["population"], text


def test_the_runner_knows_the_ninth_fresh_part() -> None:
    qs = answer_eval.suite_questions("shapes", "fresh9", 1, 12)
    assert {q.template for q in qs} == {t.name for t in fresh9.TEMPLATES}
    rows = [
        {"heldout": True, "part": "fresh9", "correct": True, "wall_s": 1.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
        {"heldout": True, "part": "fresh8", "correct": False, "wall_s": 2.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
    ]  # fmt: skip
    result = {"rows": rows}
    mine = answer_eval.summary(result, "fresh9")
    assert mine is not None
    assert mine["n"] == 1
    assert mine["accuracy"] == 1.0
    other = answer_eval.summary(result, "fresh8")
    assert other is not None
    assert other["n"] == 1
    assert other["accuracy"] == 0.0
    assert math.isclose(other["median_s"], 2.0)
