"""The shapes suite's seventh fresh batch (benchmarks/shapes/fresh7.py), written after the prompts
were frozen: every template draws distinct questions with golds for several seeds, its gold is
the tools' data (some checked by hand), its exclusions hold, and its scorer takes a right answer
and refuses a wrong one.  No model runs here, and no held-out question is drawn: only the other
parts' template names are compared, so that no template of this batch takes one."""

from __future__ import annotations

import pytest
from benchmarks import answer_eval
from benchmarks.shapes import fresh, fresh2, fresh3, fresh4, fresh5, fresh6, fresh7, tune
from benchmarks.shapes.common import CITIES, Facts
from benchmarks.shapes.fresh import _STALE_CURRENCY, _home
from benchmarks.shapes.fresh2 import _CAPITALS_IN_DOUBT
from benchmarks.shapes.fresh3 import _CAPITAL_TITLE_IN_DOUBT
from benchmarks.shapes.scoring import Choice, Count, Items, Number, YesNo

from shape_pins import Batch

SEEDS = [1, 7, 12, 26, 99]
EARLIER = (tune, fresh, fresh2, fresh3, fresh4, fresh5, fresh6)


@pytest.fixture(scope="module")
def facts() -> Facts:
    return answer_eval.Data()


BATCH = Batch(fresh7, "fresh7", EARLIER)
template, make, draws = BATCH.template, BATCH.make, BATCH.draws


def test_the_seventh_fresh_batch_has_two_new_templates_per_category() -> None:
    BATCH.check_registered()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_every_template_of_the_batch_draws_distinct_questions_with_golds_it_scores(
    facts: Facts, seed: int
) -> None:
    BATCH.check_draws(facts, seed)


def test_golds_come_from_the_data(facts: Facts) -> None:
    # A few golds recomputed by hand from the records, each scored right and a rival wrong.
    text, gold = make(facts, "country_of_iso_code", "Switzerland")
    assert "CHE" in text
    assert gold.score("Switzerland.")
    assert not gold.score("Chile.")
    for country, code in fresh7.ISO3.items():  # every code the data resolves as meant
        assert facts.country(code)["name"] == facts.country(country)["name"], code

    text, gold = make(facts, "capitals_of_three", "France", "Japan", "Peru")
    assert isinstance(gold, Items)
    assert gold.score("Paris, Tokyo and Lima.")
    assert not gold.score("Paris and Tokyo.")

    text, gold = make(facts, "neighbour_capitals", "Sweden")
    assert isinstance(gold, Items)
    assert gold.score("Oslo and Helsinki.")
    assert not gold.score("Oslo.")

    text, gold = make(facts, "largest_neighbour_of_city_country", "Bergen", True)
    assert isinstance(gold, Choice)
    assert gold.score("Russia.")
    assert not gold.score("Sweden.")

    text, gold = make(facts, "only_euro_user_of_four", "Austria", "Norway", "Japan", "Chile")
    assert {"Austria", "Norway", "Japan", "Chile"} <= set(text.replace(",", "").split())
    assert gold.score("Austria.")
    assert not gold.score("Norway.")

    text, gold = make(facts, "count_home_countries", 2, "Spain", "Japan")
    assert isinstance(gold, Count)
    assert gold.value == 2
    assert gold.score("2")
    assert not gold.score("5")

    text, gold = make(
        facts, "count_multilingual", "Canada", "Finland", "France", "Germany", "Belgium"
    )
    assert gold == Count(3)

    text, gold = make(facts, "combined_over_mark_yn", "Germany", "France", 100e6)
    assert isinstance(gold, YesNo)
    assert gold.yes is (
        facts.country("Germany")["population"] + facts.country("France")["population"] > 100e6
    )
    assert "100 million" in text

    text, gold = make(facts, "short_of_mark", "Sweden", 20e6)
    assert isinstance(gold, Number)
    assert gold.value == pytest.approx(20e6 - facts.country("Sweden")["population"])

    text, gold = make(facts, "times_two_combined", "Brazil", "Peru", "Chile", True)
    assert isinstance(gold, Number)
    want = facts.country("Brazil")["area_km2"] / (
        facts.country("Peru")["area_km2"] + facts.country("Chile")["area_km2"]
    )
    assert gold.value == pytest.approx(want)

    text, gold = make(facts, "fuel_economy", True, 30)
    assert isinstance(gold, Number)
    assert gold.value == pytest.approx(7.84, abs=0.01)  # 30 US mpg is 7.84 L/100 km
    text, gold = make(facts, "fuel_economy", False, 8)
    assert gold.value == pytest.approx(29.4, abs=0.05)  # 8 L/100 km is 29.4 US mpg

    text, gold = make(facts, "park_share_of_country", "Portugal", 3000)
    assert isinstance(gold, Number)
    want = 100 * 3000 * 2.589988110336 / facts.country("Portugal")["area_km2"]
    assert gold.value == pytest.approx(want)
    assert gold.score(f"About {want:.1f}%.")


def test_borders_most_of_the_others_is_settled(facts: Facts) -> None:
    for text, gold in draws(facts, "borders_most_of_the_others"):
        names = [gold.gold, *gold.rivals]
        assert len(names) == 4
        touching = {
            n.text: sum(o.text in facts.country(n.text)["neighbours"] for o in names if o != n)
            for n in names
        }
        best = touching.pop(gold.gold.text)
        assert all(best > other for other in touching.values()), text


def test_exclusions_hold(facts: Facts) -> None:
    # No British city (Edinburgh is in Scotland and in the United Kingdom) in questions on the
    # countries of cities, no disputed capital asked for, no stale currency in euro questions.
    british = {c for c in CITIES if _home(facts, c) == "United Kingdom"}
    assert british
    for name in ("count_home_countries", "cities_in_populous_countries"):
        for text, _ in draws(facts, name):
            assert not any(city in text for city in british), (name, text)
    for text, _ in draws(facts, "largest_neighbour_of_city_country"):
        assert not any(city in text for city in british), text
    in_doubt = _CAPITALS_IN_DOUBT | _CAPITAL_TITLE_IN_DOUBT
    for text, _ in draws(facts, "capitals_of_three", times=60):
        assert not any(c in text for c in in_doubt), text
    for text, gold in draws(facts, "neighbour_capitals"):
        for capital in gold.items:
            assert capital.text not in {facts.country(c)["capital"] for c in in_doubt}, text
    for text, _ in draws(facts, "only_euro_user_of_four", times=60):
        assert not any(c in text for c in _STALE_CURRENCY), text


def test_lists_mix_both_sides_of_their_bar(facts: Facts) -> None:
    # Both conditions of the region-and-size list matter: some country fails each.
    for text, gold in draws(facts, "in_region_and_over"):
        assert isinstance(gold, Items)
        assert gold.items, text
        assert gold.rivals, text
    for text, gold in draws(facts, "cities_in_populous_countries"):
        assert isinstance(gold, Items)
        assert gold.items, text
        assert gold.rivals, text


def test_the_runner_knows_the_seventh_fresh_part() -> None:
    qs = answer_eval.suite_questions("shapes", "fresh7", 1, 12)
    assert {q.template for q in qs} == {t.name for t in fresh7.TEMPLATES}
    rows = [
        {"heldout": True, "part": "fresh7", "correct": True, "wall_s": 1.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
        {"heldout": True, "part": "fresh6", "correct": False, "wall_s": 2.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
    ]  # fmt: skip
    result = {"rows": rows}
    mine = answer_eval.summary(result, "fresh7")
    assert mine is not None
    assert mine["n"] == 1
    assert mine["accuracy"] == 1.0
    other = answer_eval.summary(result, "fresh6")
    assert other is not None
    assert other["n"] == 1
    assert other["accuracy"] == 0.0
