"""The shapes suite's fourth fresh batch (benchmarks/shapes/fresh4.py), written after the prompts
were frozen: every template draws distinct questions with golds for several seeds, its gold is
the tools' data (some checked by hand), its exclusions hold, and its scorer takes a right answer
and refuses a wrong one.  No model runs here, and no held-out question is drawn: only the other
parts' template names are compared, so that no template of this batch takes one."""

from __future__ import annotations

from typing import Any

import pytest
from benchmarks import answer_eval, shapes
from benchmarks.shapes import fresh, fresh2, fresh3, fresh4, heldout, tune
from benchmarks.shapes.common import CATEGORIES, Facts
from benchmarks.shapes.scoring import Choice, Count, Gold, Items, Number, YesNo

from shape_pins import GOLD_OF, Pick

SEEDS = [1, 7, 12, 26, 99]


@pytest.fixture(scope="module")
def facts() -> Facts:
    return answer_eval.Data()


def template(name: str) -> Any:
    (found,) = [t for t in fresh4.TEMPLATES if t.name == name]
    return found


def make(facts: Facts, name: str, *wanted: Any) -> tuple[str, Any]:
    drawn = template(name).make(Pick(*wanted), facts)
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


def written(v: float) -> str:
    """A number as an answer writes it: "4,650,776", "7.54"."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def right_and_wrong(gold: Gold) -> tuple[list[str], list[str]]:
    """Answers the gold's scorer must take, and answers it must refuse (as for fresh3)."""
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


def test_the_fourth_fresh_batch_has_two_new_templates_per_category() -> None:
    names = [t.name for t in fresh4.TEMPLATES]
    assert len(names) == len(set(names)) == 16
    for category in CATEGORIES:
        assert sum(t.category == category for t in fresh4.TEMPLATES) == 2, category
    # No name of the other parts or of the names suite again (only names are compared).
    assert not set(names) & {t.name for t in tune.TEMPLATES}
    assert not set(names) & {t.name for t in fresh.TEMPLATES}
    assert not set(names) & {t.name for t in fresh2.TEMPLATES}
    assert not set(names) & {t.name for t in fresh3.TEMPLATES}
    # Computed apart so that a failure prints only the clashing names, none of the others.
    clash = sorted(set(names) & {t.name for t in heldout.TEMPLATES})
    assert clash == []
    assert not set(names) & set(answer_eval.TEMPLATES)
    # Only `fresh4` draws this batch: not `all`, not the other fresh batches.
    assert shapes.templates("fresh4") == fresh4.TEMPLATES
    assert shapes.FRESH4 == fresh4.TEMPLATES
    for part in ("all", "fresh", "fresh2", "fresh3"):
        assert not set(names) & {t.name for t in shapes.templates(part)}, part


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_every_template_of_the_batch_draws_distinct_questions_with_golds_it_scores(
    facts: Facts, seed: int
) -> None:
    qs = shapes.questions("fresh4", 3, seed, facts)
    by_template: dict[str, list[shapes.ShapeQuestion]] = {}
    for q in qs:
        by_template.setdefault(q.template, []).append(q)
    assert set(by_template) == {t.name for t in fresh4.TEMPLATES}
    for name, made in by_template.items():
        assert len(made) == 3, name
        assert len({q.text for q in made}) == 3, name
        for q in made:
            assert q.part == "fresh4", name
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
    again = shapes.questions("fresh4", 3, seed, facts)
    assert [q.text for q in again] == [q.text for q in qs]  # seeded
    assert [q.gold for q in again] == [q.gold for q in qs]


@pytest.mark.timeout(120)
def test_what_the_batch_leaves_out(facts: Facts) -> None:
    qs = [q for seed in range(12) for q in shapes.questions("fresh4", 4, seed, facts)]
    # Capitals people argue about, or whose people depend on where the city ends.
    doubted = (
        "India", "Philippines", "Belgium", "South Africa", "Bolivia", "Tanzania",
        "Netherlands", "Switzerland",
    )  # fmt: skip
    for q in qs:
        if q.template in (
            "capitals_combined_population",
            "capital_heaviest_share",
            "capital_outnumbers_city_yn",
        ):
            assert not any(c in q.text for c in doubted), q.text
        if q.template == "capital_and_currency":  # Bulgaria has the euro; the data the lev
            assert not any(c in q.text for c in ("Bulgaria", "South Africa", "Bolivia")), q.text
        if q.template == "neighbours_total_area":
            # Not across Israel's borders, overseas land, Kashmir or China's count.
            arguable = ("Syria", "Jordan", "Egypt", "Pakistan", "France", "Spain", "India")
            assert not any(c in q.text for c in arguable), q.text
        if q.template == "cities_bigger_than_own_capital":
            # No New Delhi or Delhi, no Pretoria, Bern or Amsterdam, no near tie (Seattle).
            unsure = ("Mumbai", "Johannesburg", "Zurich", "Rotterdam", "Antwerp", "Seattle")
            assert not any(c in q.text for c in unsure), q.text
        if q.template == "official_language_count":
            assert not any(c in q.text for c in ("Switzerland", "Norway", "Spain", "India"))
    # The answers are balanced where the draw alone would not be.
    for name in ("capital_outnumbers_city_yn", "area_over_square_miles_yn"):
        said = [q.gold.yes for q in qs if q.template == name and isinstance(q.gold, YesNo)]
        assert 0.3 < sum(said) / len(said) < 0.7, name
    counted = [
        q.gold.value
        for q in qs
        if q.template == "count_population_between" and isinstance(q.gold, Count)
    ]
    assert counted.count(0) < len(counted) / 2


def test_lookups_and_chains_by_hand(facts: Facts) -> None:
    # Belgium: Dutch, French and German; Singapore four; France one.
    text, gold = make(facts, "official_language_count", 3, "Belgium")
    assert "Belgium" in text
    assert gold == Count(3)
    assert gold.score("Belgium has three official languages: Dutch, French and German.", text)
    assert make(facts, "official_language_count", 4, "Singapore")[1] == Count(4)
    assert make(facts, "official_language_count", 1, "France")[1] == Count(1)
    # Poland: Warsaw and the złoty.
    _, gold = make(facts, "capital_and_currency", "Poland")
    assert gold.score("The capital of Poland is Warsaw, and they pay in złoty (PLN).")
    assert not gold.score("Warsaw.")
    assert not gold.score("The currency is the złoty.")
    # Berlin 3,426,354 and Copenhagen 1,153,615.
    _, gold = make(facts, "capitals_combined_population", "Germany", "Denmark")
    assert gold.value == pytest.approx(4_579_969)
    assert gold.score("Berlin and Copenhagen together have about 4.58 million people.")
    assert not gold.score("About 3.4 million.")
    # Mexico's neighbours: the United States, Guatemala and Belize.
    _, gold = make(facts, "neighbours_total_area", "Mexico")
    assert gold.value == pytest.approx(9_629_091 + 108_889 + 22_966)
    assert not gold.score("About 11.7 million km², Mexico included.")


def test_comparisons_and_counts_by_hand(facts: Facts) -> None:
    # India 1,264 million, Pakistan 188, Saudi Arabia 30.8, Ecuador 15.9.
    pins = (False, "Saudi Arabia", "Ecuador", "India", "Pakistan")
    text, gold = make(facts, "second_largest_of_four", *pins)
    assert "population" in text or "populous" in text
    assert gold.gold.text == "Pakistan"
    assert gold.score("India is first by far; Pakistan is the second most populous.")
    assert not gold.score("India.")
    assert not gold.score("Saudi Arabia, then Ecuador.")
    # Japan, 377,930 km², and Germany, 357,114, are too close to call second.
    maker = template("second_largest_of_four").make
    assert maker(Pick(True, "Brazil", "Japan", "Germany", "Ireland"), facts) is None
    # Wellington holds 8.4 % of New Zealand, Ottawa 2.9 % of Canada, Beijing 1.4 % of China.
    pins = (True, "New Zealand", "Canada", "China")
    _, gold = make(facts, "capital_heaviest_share", *pins)
    assert gold.gold.text == "New Zealand"
    assert gold.score("Wellington: about 8 % of the country lives there.")
    assert not gold.score("Canada.")
    _, gold = make(facts, "capital_heaviest_share", False, *pins[1:])
    assert gold.gold.text == "China"
    # Munich and Porto have the euro, Krakow and Zurich not.
    pins = (2, 4, "Munich", "Porto", "Krakow", "Zurich")
    text, gold = make(facts, "count_cities_with_euro", *pins)
    assert all(c in text for c in pins[2:])
    assert gold == Count(2)
    assert gold.score("Two of them: Munich and Porto.", text)
    # Morocco 33.5 million and Belgium 11.2 are between 10 and 40 million; Norway, Lithuania
    # and Indonesia are not.
    five = ("Morocco", "Belgium", "Norway", "Lithuania", "Indonesia")
    text, gold = make(facts, "count_population_between", (10e6, 40e6), 2, *five)
    assert gold == Count(2)
    assert gold.score("2 countries: Morocco and Belgium.", text)
    assert template("count_population_between").make(Pick((10e6, 40e6), 0, *five), facts) is None
    # Colombia, 47.9 million, is too near 50 million to count either way.
    near = ("Colombia", "Peru", "Cuba", "Japan", "Iceland")
    assert template("count_population_between").make(Pick((20e6, 50e6), 1, *near), facts) is None


def test_yes_no_by_hand(facts: Facts) -> None:
    # Rome 2.32 million against Lyon 0.52.
    text, gold = make(facts, "capital_outnumbers_city_yn", True, "Italy", "Lyon")
    assert "Lyon" in text
    assert "Rome" not in text
    assert gold.yes is True
    assert gold.score("Rome has more people than Lyon.")
    assert not gold.score("Lyon is bigger than Rome.")
    # Ulaanbaatar against Chicago, 2.66 million.
    _, gold = make(facts, "capital_outnumbers_city_yn", False, "Mongolia", "Chicago")
    assert gold.yes is False
    assert gold.score("No, Chicago is far larger.")
    # Paris within its limits against Toronto with its suburbs: the data says no, a count of
    # greater Paris yes; never asked.
    maker = template("capital_outnumbers_city_yn").make
    assert maker(Pick(False, "France", "Toronto"), facts) is None
    # France: 640,679 km², 247,368 square miles.
    text, gold = make(facts, "area_over_square_miles_yn", True, "France", 150e3)
    assert "150,000" in text
    assert gold.yes is True
    assert gold.score("France is larger than 150,000 square miles: about 247,000.")
    assert gold.score("Yes: France covers about 247,000 square miles.")
    assert not gold.score("No, France is smaller than that.")
    # Never a mark within 10 % of the area, nor beyond three times it, for France.
    for text, _ in draws(facts, "area_over_square_miles_yn", "France"):
        assert not any(m in text for m in ("250,000", "10,000", "25,000", "1 million")), text


def test_numbers_and_lists_by_hand(facts: Facts) -> None:
    # France at Italy's 201.7 people per km²: 129.2 million.
    _, gold = make(facts, "population_at_density_of", "France", "Italy")
    assert gold.value == pytest.approx(129_202_908, 1e-6)
    assert gold.score("About 129 million people.")
    assert not gold.score("66 million.")
    # Japan 336.3 per km² against Peru 24.0.
    _, gold = make(facts, "density_gap", "Japan", "Peru")
    assert gold.value == pytest.approx(312.277, 1e-5)
    assert not gold.score("About 14 times as dense.")
    # 40 km in 1 h 45 min: 22.86 km/h, 14.2 mph (not 22.86).
    text, gold = make(facts, "average_speed_mixed_units", "cycled", 40, 105, True)
    assert "1 hour 45 minutes" in text
    assert gold.value == pytest.approx(14.2029, 1e-4)
    assert not gold.score("22.9 mph.")
    # 60 miles in 80 minutes: 45 mph, 72.4 km/h; not a ride.
    assert template("average_speed_mixed_units").make(Pick("cycled", 60, 80, False), facts) is None
    # 4 m by 3.5 m: 14 m², 150.7 sq ft (not 45.9, the metres converted once).
    _, gold = make(facts, "room_floor_area", True, 4.0, 3.5)
    assert gold.value == pytest.approx(150.695, 1e-5)
    assert not gold.score("45.9 square feet.")
    # 12 ft by 15 ft: 180 sq ft, 16.72 m².
    text, gold = make(facts, "room_floor_area", False, 12, 15)
    assert "12 ft by 15 ft" in text
    assert gold.value == pytest.approx(16.7225472)
    # Sydney and Toronto outgrow Canberra and Ottawa; Munich and Alexandria not Berlin and Cairo.
    pins = (2, 4, "Sydney", "Toronto", "Munich", "Alexandria")
    _, gold = make(facts, "cities_bigger_than_own_capital", *pins)
    assert [n.text for n in gold.items] == ["Sydney", "Toronto"]
    assert [n.text for n in gold.rivals] == ["Munich", "Alexandria"]
    assert gold.score("Sydney and Toronto; Munich is smaller than Berlin.")
    assert not gold.score("Sydney, Toronto and Alexandria.")
    # Romania 19.9 million and Australia 23.7 are the closest pair of the five.
    five = (False, "Italy", "Romania", "Australia", "Indonesia", "Denmark")
    _, gold = make(facts, "closest_pair_in_size", *five)
    assert {n.text for n in gold.items} == {"Romania", "Australia"}
    assert gold.score("Romania and Australia.")
    assert not gold.score("Romania and Denmark.")
    # Colombia 47.9, Spain 46.5, Argentina 42.7 million: too close to pick a pair.
    near = (False, "Spain", "Argentina", "Colombia", "Poland", "Japan")
    assert template("closest_pair_in_size").make(Pick(*near), facts) is None


def test_the_runner_knows_the_fourth_fresh_part() -> None:
    qs = answer_eval.suite_questions("shapes", "fresh4", 1, 12)
    assert {q.template for q in qs} == {t.name for t in fresh4.TEMPLATES}
    rows = [
        {"heldout": True, "part": "fresh4", "correct": True, "wall_s": 1.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
        {"heldout": True, "part": "fresh3", "correct": False, "wall_s": 2.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
    ]  # fmt: skip
    result = {"rows": rows}
    mine = answer_eval.summary(result, "fresh4")
    assert mine is not None
    assert mine["n"] == 1
    assert mine["accuracy"] == 1.0
    other = answer_eval.summary(result, "fresh3")
    assert other is not None
    assert other["n"] == 1
    assert other["accuracy"] == 0.0
