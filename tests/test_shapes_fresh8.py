"""The shapes suite's eighth fresh batch (benchmarks/shapes/fresh8.py), written after the prompts
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
    tune,
)
from benchmarks.shapes.common import CITIES, Facts
from benchmarks.shapes.fresh import _STALE_CURRENCY, _home
from benchmarks.shapes.fresh2 import _CAPITALS_IN_DOUBT
from benchmarks.shapes.fresh3 import _CAPITAL_TITLE_IN_DOUBT, _WHOLE
from benchmarks.shapes.fresh4 import _capitals
from benchmarks.shapes.scoring import Choice, Count, Items, Number, YesNo

from shape_pins import Batch

SEEDS = [1, 7, 12, 26, 99]
EARLIER = (tune, fresh, fresh2, fresh3, fresh4, fresh5, fresh6, fresh7)


@pytest.fixture(scope="module")
def facts() -> Facts:
    return answer_eval.Data()


BATCH = Batch(fresh8, "fresh8", EARLIER)
template, make, draws = BATCH.template, BATCH.make, BATCH.draws


def test_the_eighth_fresh_batch_has_two_new_templates_per_category() -> None:
    BATCH.check_registered()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_every_template_of_the_batch_draws_distinct_questions_with_golds_it_scores(
    facts: Facts, seed: int
) -> None:
    BATCH.check_draws(facts, seed)


def test_golds_come_from_the_data(facts: Facts) -> None:
    # A few golds recomputed by hand from the records, each scored right and a rival wrong.
    text, gold = make(facts, "country_of_capital", "Peru")
    assert "Lima" in text
    assert gold.score("Lima is the capital of Peru.")
    assert not gold.score("Chile.")

    text, gold = make(facts, "namesake_city_population", ("Cordoba", "Spain"))
    assert isinstance(gold, Number)
    assert gold.value == facts.city("Cordoba, Spain")["population"]
    assert facts.city("Cordoba")["country"] != "Spain"  # the bare name means another city
    assert not gold.score(f"{facts.city('Cordoba')['population']:,}")

    text, gold = make(facts, "currency_of_largest_of_three", "Brazil", "Peru", "Chile", True)
    assert isinstance(gold, Choice)
    assert gold.score("Brazil is the largest, and it uses the Brazilian real.")
    assert not gold.score("PEN.")

    text, gold = make(facts, "more_euro_neighbours", "Germany", "Poland")
    assert isinstance(gold, Choice)

    def euro_neighbours(c: str) -> int:
        return sum("EUR" in facts.country(n)["currencies"] for n in facts.country(c)["neighbours"])

    want = "Germany" if euro_neighbours("Germany") > euro_neighbours("Poland") else "Poland"
    assert gold.gold.text == want

    text, gold = make(facts, "warmer_across_scales", "Seville", "Chicago", 26, 8, True)
    assert "26" in text
    assert "87" in text  # 26 °C is 78.8 °F
    assert gold.score("Chicago.")
    assert not gold.score("Seville.")

    text, gold = make(
        facts, "count_with_neighbour_on_list", "Europe", 3,
        "Germany", "Austria", "Italy", "Portugal", "Finland",
    )  # fmt: skip
    assert gold == Count(3)  # Germany-Austria, Austria-Italy; Portugal and Finland alone

    text, gold = make(facts, "change_money_between_cities_yn", "Munich", True, "Krakow")
    assert "Munich" in text
    assert "Krakow" in text
    assert isinstance(gold, YesNo)
    assert gold.yes  # the euro, then the zloty

    text, gold = make(facts, "neighbour_in_common_yn", True, ("Austria", "Poland"))
    assert isinstance(gold, YesNo)
    assert gold.yes  # Germany, Czechia and Slovakia border both

    text, gold = make(facts, "years_to_reach_mark", "Sweden", 1.0, 20e6)
    assert isinstance(gold, Number)
    want = math.log(20e6 / facts.country("Sweden")["population"]) / math.log(1.01)
    assert gold.value == pytest.approx(want)
    assert gold.score(f"About {math.ceil(want)} years.")

    text, gold = make(facts, "times_further_from_equator", "Bergen", "Mumbai")
    assert isinstance(gold, Number)
    want = abs(facts.city("Bergen")["latitude"]) / abs(facts.city("Mumbai")["latitude"])
    assert gold.value == pytest.approx(want)

    text, gold = make(facts, "fuel_price_per_gallon", True, "Austria", 1.79)
    assert isinstance(gold, Number)
    assert gold.value == pytest.approx(6.776, abs=0.001)  # 1.79 a litre, 3.785 l a US gallon

    text, gold = make(facts, "tyre_pressure", True, 2.4)
    assert isinstance(gold, Number)
    assert gold.value == pytest.approx(34.81, abs=0.01)  # 2.4 bar is 34.8 psi

    text, gold = make(facts, "capitals_of_euro_users", 4, 2, "France", "Italy", "Japan", "Peru")
    assert isinstance(gold, Items)
    assert gold.score("Paris and Rome.")
    assert not gold.score("Paris, Rome and Tokyo.")

    text, gold = make(
        facts, "largest_per_continent", "Europe", "Africa", True, 2,
        "France", "Portugal", "Nigeria", "Kenya",
    )  # fmt: skip
    assert isinstance(gold, Items)
    assert gold.score("France and Nigeria.")
    assert not gold.score("France and Kenya.")


def test_chain_and_count_golds_hold_for_every_draw(facts: Facts) -> None:
    # The two countries the question names have one neighbour in common, whose capital it is.
    longest_first = sorted(_WHOLE, key=len, reverse=True)
    for text, gold in draws(facts, "capital_of_shared_neighbour"):
        rest, named = text, []
        for c in longest_first:
            pattern = re.compile(rf"(?<!\w){re.escape(c)}(?!\w)")
            if pattern.search(rest):
                named.append(c)
                rest = pattern.sub(" ", rest)
        a, b = named
        (shared,) = set(facts.country(a)["neighbours"]) & set(facts.country(b)["neighbours"])
        assert gold.gold.text == facts.country(shared)["capital"], text
    capitals = {str(facts.country(c)["capital"]) for c in _capitals(facts)}
    for text, gold in draws(facts, "count_national_capitals"):
        listed = text.split(": ")[-1] if ": " in text else text
        assert gold.value == sum(
            re.search(rf"(?<!\w){re.escape(c)}(?!\w)", listed) is not None for c in capitals
        ), text


def test_exclusions_hold(facts: Facts) -> None:
    # No disputed capital asked about, no British city, no stale currency at stake.
    in_doubt = {
        str(facts.country(c)["capital"])
        for c in _CAPITALS_IN_DOUBT | _CAPITAL_TITLE_IN_DOUBT
        if facts.country(c)["capital"]
    }
    for text, _ in draws(facts, "country_of_capital", times=60):
        assert "London" not in text, text
        assert not any(capital in text for capital in in_doubt), text
    british = {c for c in CITIES if _home(facts, c) == "United Kingdom"}
    assert british
    for name in ("count_national_capitals", "change_money_between_cities_yn"):
        for text, _ in draws(facts, name):
            assert not any(city in text for city in british), (name, text)
    stale = {c for c in CITIES if _home(facts, c) in _STALE_CURRENCY | {"Croatia"}}
    for text, _ in draws(facts, "change_money_between_cities_yn"):
        assert not any(city in text for city in stale), text
    for text, gold in draws(facts, "more_euro_neighbours"):
        for rival in (gold.gold, *gold.rivals):
            near = set(facts.country(rival.text)["neighbours"])
            assert not near & {"Croatia", "Bulgaria", "Montenegro"}, text
    for text, _ in draws(facts, "warmer_across_scales", times=60):
        celsius, fahrenheit = (int(n) for n in re.findall(r"(-?\d+) ?(?:°|degrees)", text))
        assert 4 <= abs(celsius * 1.8 + 32 - fahrenheit) <= 20, text
    for text, gold in draws(facts, "neighbour_in_common_yn"):
        a, b = (n.text for n in gold.subjects)
        assert facts.country(b)["name"] not in facts.country(a)["neighbours"], text
        shared = set(facts.country(a)["neighbours"]) & set(facts.country(b)["neighbours"])
        assert bool(shared) is gold.yes, text


def test_the_runner_knows_the_eighth_fresh_part() -> None:
    qs = answer_eval.suite_questions("shapes", "fresh8", 1, 12)
    assert {q.template for q in qs} == {t.name for t in fresh8.TEMPLATES}
    rows = [
        {"heldout": True, "part": "fresh8", "correct": True, "wall_s": 1.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
        {"heldout": True, "part": "fresh7", "correct": False, "wall_s": 2.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
    ]  # fmt: skip
    result = {"rows": rows}
    mine = answer_eval.summary(result, "fresh8")
    assert mine is not None
    assert mine["n"] == 1
    assert mine["accuracy"] == 1.0
    other = answer_eval.summary(result, "fresh7")
    assert other is not None
    assert other["n"] == 1
    assert other["accuracy"] == 0.0
