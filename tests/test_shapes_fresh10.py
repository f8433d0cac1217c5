"""The shapes suite's tenth fresh batch (benchmarks/shapes/fresh10.py), written after the prompts
were frozen: every template draws distinct questions with golds for several seeds, its gold is
the tools' data (some checked by hand), its exclusions hold, and its scorer takes a right answer
and refuses a wrong one.  No model runs here, and no held-out question is drawn: only the other
parts' template names are compared, so that no template of this batch takes one."""

from __future__ import annotations

import math
import re
import statistics

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
    fresh10,
    tune,
)
from benchmarks.shapes.common import CITIES, Facts
from benchmarks.shapes.fresh import _home
from benchmarks.shapes.fresh2 import _CAPITALS_IN_DOUBT
from benchmarks.shapes.fresh3 import _CAPITAL_TITLE_IN_DOUBT, _ONE_NEIGHBOUR, _WHOLE
from benchmarks.shapes.fresh10 import _ONLY_NEIGHBOUR_OF, _SHARED_NAMES
from benchmarks.shapes.scoring import Choice, Count, Items, Number, YesNo

from shape_pins import Batch, Pick

SEEDS = [1, 7, 12, 26, 99]
EARLIER = (tune, fresh, fresh2, fresh3, fresh4, fresh5, fresh6, fresh7, fresh8, fresh9)


@pytest.fixture(scope="module")
def facts() -> Facts:
    return answer_eval.Data()


BATCH = Batch(fresh10, "fresh10", EARLIER)
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


def _size(facts: Facts, country: str, text: str) -> float:
    """The measure the question asks about: area where it says so, else population."""
    by_area = re.search(r"\b(?:areas?|land)\b", text) is not None
    return float(facts.country(country)["area_km2" if by_area else "population"])


def _lat(facts: Facts, city: str) -> float:
    return float(facts.city(city)["latitude"])


def test_the_tenth_fresh_batch_has_two_new_templates_per_category() -> None:
    BATCH.check_registered()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_every_template_of_the_batch_draws_distinct_questions_with_golds_it_scores(
    facts: Facts, seed: int
) -> None:
    BATCH.check_draws(facts, seed)


def test_golds_come_from_the_data(facts: Facts) -> None:
    # A few golds recomputed by hand from the records, each scored right and a rival wrong.
    text, gold = make(facts, "largest_namesake_country", "Cordoba")
    assert facts.city("Cordoba")["country"] == "Argentina"
    assert gold.score("Argentina: Córdoba there has about 2 million people.")
    assert not gold.score("Spain.")
    # Valencia in Venezuela has only twice the people of Valencia in Spain: not asked.
    assert template("largest_namesake_country").make(Pick("Valencia"), facts) is None

    text, gold = make(facts, "country_of_only_neighbour", "Senegal")
    assert "Senegal" in text
    assert "Gambia" not in text
    assert gold.score("The Gambia.")
    assert not gold.score("Mali.")

    text, gold = make(facts, "capital_of_currency_country", "naira")
    assert "Nigeria" not in text
    assert gold.score("Abuja, the capital of Nigeria.")
    assert not gold.score("Lagos.")

    text, gold = make(facts, "country_of_biggest_city", "Sao Paulo", "Porto", "Graz")
    assert gold.score("São Paulo, so Brazil.")
    assert not gold.score("Portugal.")

    # France 640,679 km², Spain 505,992, Poland 312,679.
    text, gold = make(facts, "middle_of_list_by_size", 3, "France", "Spain", "Poland", True)
    assert isinstance(gold, Choice)
    assert gold.gold.text == "Spain"
    # By population Spain (46.5 million) and Poland (38.5 million) are too close to call.
    pinned = Pick(3, "France", "Spain", "Poland", False)
    assert template("middle_of_list_by_size").make(pinned, facts) is None

    # Toronto lies at 43.7 °N, Milan at 45.5, Cologne at 50.9, Eindhoven at 51.4.
    text, gold = make(
        facts, "closest_latitude_to_city", "Toronto", "Milan", "Cologne", "Eindhoven"
    )  # fmt: skip
    assert gold.score("Milan.")
    assert not gold.score("Cologne.")

    text, gold = make(
        facts, "count_distinct_currencies", 5, 2, "France", "Germany", "Poland", "Japan",
        "Ecuador",
    )  # fmt: skip
    assert gold == Count(4)  # the euro, the zloty, the yen and the US dollar

    text, gold = make(
        facts, "count_above_list_average", 4, "China", "India", "Iceland", "Ireland", False
    )  # fmt: skip
    assert gold == Count(2)

    text, gold = make(facts, "gap_wider_yn", "Canada", "Chile", "France", "Spain", True)
    assert isinstance(gold, YesNo)
    assert gold.yes  # some 9.2 million km² against 135,000
    assert gold.score("Yes, by far.")
    assert not gold.score("No.")

    text, gold = make(facts, "biggest_neighbour_yn", "Austria", True)
    assert isinstance(gold, YesNo)
    assert gold.yes  # Germany, 357,114 km², before Italy's 301,336
    assert gold.score("Germany is Austria's largest neighbour by area.")
    text, gold = make(facts, "biggest_neighbour_yn", "Peru", False, "Colombia")
    assert isinstance(gold, YesNo)
    assert not gold.yes  # Brazil has far more people
    assert gold.score("No, Brazil does.")

    text, gold = make(facts, "years_until_overtake", "Ghana", "Poland", 1.2, 0.2)
    assert isinstance(gold, Number)
    ghana, poland = (facts.country(c)["population"] for c in ("Ghana", "Poland"))
    want = math.log(poland / ghana) / math.log(1.012 / 1.002)
    assert gold.value == pytest.approx(want)
    assert gold.score(f"About {want:.1f} years.")
    assert gold.score(f"In {math.ceil(want)} years.")
    assert not gold.score(f"{(poland / ghana - 1) / 0.01:.0f} years.")  # without compounding

    text, gold = make(facts, "percent_off_neighbour_average", "Tanzania", True)
    assert isinstance(gold, Number)
    near = facts.country("Tanzania")["neighbours"]
    mean = statistics.mean(facts.country(n)["area_km2"] for n in near)
    assert gold.value == pytest.approx(100 * (facts.country("Tanzania")["area_km2"] / mean - 1))
    assert "above" in text

    text, gold = make(facts, "wind_speed_knots", "Bergen", True, 30)
    assert isinstance(gold, Number)
    assert gold.value == pytest.approx(55.56)
    assert not gold.score("About 48 km/h.")  # through statute miles

    text, gold = make(facts, "heating_power_btu", "Houston", True, 12000)
    assert isinstance(gold, Number)
    assert gold.value == pytest.approx(3.5169, abs=1e-4)
    assert gold.score("About 3.5 kW.")
    assert gold.score("About 3,517 W.")

    text, gold = make(
        facts, "between_two_references", "Hungary", "Chile", True, 5, 2,
        "Greece", "Uruguay", "Algeria", "Czech Republic", "Mexico",
    )  # fmt: skip
    assert isinstance(gold, Items)
    assert {i.text for i in gold.items} == {"Greece", "Uruguay"}
    assert gold.score("Greece and Uruguay.")
    assert not gold.score("Greece, Uruguay and the Czech Republic.")

    text, gold = make(
        facts, "bigger_than_two_combined", "Morocco", "Ethiopia", True, 4, 2,
        "China", "India", "Colombia", "Italy",
    )  # fmt: skip
    assert isinstance(gold, Items)
    assert {i.text for i in gold.items} == {"China", "India"}
    # Colombia is bigger than either of the two, but not than both together.
    assert not gold.score("China, India and Colombia.")


def test_chain_comparison_and_count_golds_hold_for_every_draw(facts: Facts) -> None:
    for text, gold in draws(facts, "country_of_biggest_city"):
        named = _named(text, CITIES)
        assert len(named) == 3, text
        people = sorted((facts.city(c)["population"], c) for c in named)
        assert people[-1][0] >= 3 * people[-2][0], text
        assert gold.gold.text == _home(facts, people[-1][1]), text
    for text, gold in draws(facts, "middle_of_list_by_size", times=60):
        named = _named(text, _WHOLE)
        assert len(named) in (3, 5), text
        ranked = sorted(named, key=lambda c: _size(facts, c, text))
        assert gold.gold.text == ranked[len(named) // 2], text
    for text, gold in draws(facts, "closest_latitude_to_city", times=60):
        chosen = {gold.gold.text, *(n.text for n in gold.rivals)}
        (ref,) = [c for c in _named(text, CITIES) if c not in chosen]
        best = min(chosen, key=lambda c: abs(_lat(facts, c) - _lat(facts, ref)))
        assert gold.gold.text == best, text
    for text, gold in draws(facts, "count_distinct_currencies", times=60):
        named = _named(text, _WHOLE)
        codes = {tuple(facts.country(c)["currencies"]) for c in named}
        assert all(len(code) == 1 for code in codes), text
        assert gold.value == len(codes), text
    for text, gold in draws(facts, "count_above_list_average", times=60):
        values = [_size(facts, c, text) for c in _named(text, _WHOLE)]
        mean = statistics.mean(values)
        assert gold.value == sum(v > mean for v in values), text


def test_yes_no_and_list_golds_hold_for_every_draw(facts: Facts) -> None:
    for text, gold in draws(facts, "gap_wider_yn", times=80):
        a, b, c, d = (_size(facts, x, text) for x in _named(text, _WHOLE))
        assert (abs(a - b) > abs(c - d)) is gold.yes, text
        assert (max(a, b) / min(a, b) > max(c, d) / min(c, d)) is gold.yes, text
    for text, gold in draws(facts, "biggest_neighbour_yn", times=60):
        y, c = (n.text for n in gold.subjects)
        near = facts.country(c)["neighbours"]
        assert facts.country(y)["name"] in near, text
        top = max(near, key=lambda n: _size(facts, n, text))
        assert (top == facts.country(y)["name"]) is gold.yes, text
    for text, gold in draws(facts, "between_two_references", times=60):
        chosen = [n.text for n in (*gold.items, *gold.rivals)]
        low, high = sorted(
            (c for c in _named(text, _WHOLE) if c not in chosen),
            key=lambda c: _size(facts, c, text),
        )
        lo, hi = _size(facts, low, text), _size(facts, high, text)
        for n in gold.items:
            assert lo < _size(facts, n.text, text) < hi, text
        for n in gold.rivals:
            assert not lo <= _size(facts, n.text, text) <= hi, text
    for text, gold in draws(facts, "bigger_than_two_combined", times=60):
        chosen = [n.text for n in (*gold.items, *gold.rivals)]
        x, y = (c for c in _named(text, _WHOLE) if c not in chosen)
        bar = _size(facts, x, text) + _size(facts, y, text)
        assert all(_size(facts, n.text, text) > bar for n in gold.items), text
        assert all(_size(facts, n.text, text) < bar for n in gold.rivals), text


def test_exclusions_hold(facts: Facts) -> None:
    british = {c for c in CITIES if _home(facts, c) == "United Kingdom"}
    assert british
    for name in ("country_of_biggest_city", "closest_latitude_to_city"):
        for text, _ in draws(facts, name, times=60):
            assert not set(_named(text, CITIES)) & british, (name, text)
    # The biggest namesake has three times the people of any other country's, and is no
    # British city.
    for text, gold in draws(facts, "largest_namesake_country", times=60):
        (name,) = _named(text, list(_SHARED_NAMES))
        record = facts.city(name)
        assert gold.gold.text == facts.country(record["country"])["name"] != "United Kingdom"
        for match in record.get("other_matches", []):
            found = re.search(r", ([^,]+) \(pop (\d+)\)$", match)
            assert found is not None
            country, people = found.groups()
            if facts.country(country)["name"] != gold.gold.text:
                assert record["population"] >= 3 * int(people), text
    # The only country with that one neighbour alone, among all countries with one.
    with_one = [*_ONE_NEIGHBOUR, "Denmark", "Canada", "Vatican City"]
    for text, gold in draws(facts, "country_of_only_neighbour"):
        (n,) = _named(text, sorted(_ONLY_NEIGHBOUR_OF))
        alone = [
            c for c in with_one if facts.country(c)["neighbours"] == [facts.country(n)["name"]]
        ]
        assert [facts.country(c)["name"] for c in alone] == [facts.country(gold.gold.text)["name"]]
    in_doubt = _CAPITALS_IN_DOUBT | _CAPITAL_TITLE_IN_DOUBT
    doubted = {str(facts.country(c)["capital"]) for c in in_doubt if facts.country(c)["capital"]}
    for text, gold in draws(facts, "capital_of_currency_country"):
        assert gold.gold.text not in doubted | {"Jakarta", "Kuala Lumpur", "Naypyidaw"}, text
    for text, gold in draws(facts, "years_until_overtake", times=60):
        assert 10 <= gold.value <= 80, text
    for text, gold in draws(facts, "percent_off_neighbour_average", times=60):
        assert 10 <= gold.value <= 300, text


def test_the_runner_knows_the_tenth_fresh_part() -> None:
    qs = answer_eval.suite_questions("shapes", "fresh10", 1, 12)
    assert {q.template for q in qs} == {t.name for t in fresh10.TEMPLATES}
    rows = [
        {"heldout": True, "part": "fresh10", "correct": True, "wall_s": 1.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
        {"heldout": True, "part": "fresh9", "correct": False, "wall_s": 2.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
    ]  # fmt: skip
    result = {"rows": rows}
    mine = answer_eval.summary(result, "fresh10")
    assert mine is not None
    assert mine["n"] == 1
    assert mine["accuracy"] == 1.0
    other = answer_eval.summary(result, "fresh9")
    assert other is not None
    assert other["n"] == 1
    assert other["accuracy"] == 0.0
    assert math.isclose(other["median_s"], 2.0)
