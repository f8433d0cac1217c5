"""The shapes suite's third fresh batch (benchmarks/shapes/fresh3.py), written after the prompts
were frozen: every template draws distinct questions with golds for several seeds, its gold is
the tools' data (some checked by hand), its exclusions hold, and its scorer takes a right answer
and refuses a wrong one.  No model runs here, and no held-out question is drawn: only the other
parts' template names are compared, so that no template of this batch takes one."""

from __future__ import annotations

from typing import Any

import pytest
from benchmarks import answer_eval, shapes
from benchmarks.shapes import fresh, fresh2, fresh3, heldout, tune
from benchmarks.shapes.common import CATEGORIES, Facts
from benchmarks.shapes.scoring import Choice, Count, Gold, Items, Number, YesNo

from shape_pins import GOLD_OF, Pick

SEEDS = [1, 7, 12, 26, 99]


@pytest.fixture(scope="module")
def facts() -> Facts:
    return answer_eval.Data()


def template(name: str) -> Any:
    (found,) = [t for t in fresh3.TEMPLATES if t.name == name]
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
    """Answers the gold's scorer must take, and answers it must refuse (as for fresh2)."""
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


def test_the_third_fresh_batch_has_two_new_templates_per_category() -> None:
    names = [t.name for t in fresh3.TEMPLATES]
    assert len(names) == len(set(names)) == 16
    for category in CATEGORIES:
        assert sum(t.category == category for t in fresh3.TEMPLATES) == 2, category
    # No name of the other parts or of the names suite again (only names are compared).
    assert not set(names) & {t.name for t in tune.TEMPLATES}
    assert not set(names) & {t.name for t in fresh.TEMPLATES}
    assert not set(names) & {t.name for t in fresh2.TEMPLATES}
    # Computed apart so that a failure prints only the clashing names, none of the others.
    clash = sorted(set(names) & {t.name for t in heldout.TEMPLATES})
    assert clash == []
    assert not set(names) & set(answer_eval.TEMPLATES)
    # Only `fresh3` draws this batch: not `all`, not the other fresh batches.
    assert shapes.templates("fresh3") == fresh3.TEMPLATES
    assert shapes.FRESH3 == fresh3.TEMPLATES
    for part in ("all", "fresh", "fresh2"):
        assert not set(names) & {t.name for t in shapes.templates(part)}, part


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_every_template_of_the_batch_draws_distinct_questions_with_golds_it_scores(
    facts: Facts, seed: int
) -> None:
    qs = shapes.questions("fresh3", 3, seed, facts)
    by_template: dict[str, list[shapes.ShapeQuestion]] = {}
    for q in qs:
        by_template.setdefault(q.template, []).append(q)
    assert set(by_template) == {t.name for t in fresh3.TEMPLATES}
    for name, made in by_template.items():
        assert len(made) == 3, name
        assert len({q.text for q in made}) == 3, name
        for q in made:
            assert q.part == "fresh3", name
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
    again = shapes.questions("fresh3", 3, seed, facts)
    assert [q.text for q in again] == [q.text for q in qs]  # seeded


@pytest.mark.timeout(120)
def test_what_the_batch_leaves_out(facts: Facts) -> None:
    qs = [q for seed in range(12) for q in shapes.questions("fresh3", 4, seed, facts)]
    for q in qs:
        if q.template == "continent_of_city":  # no city of a country on two continents
            assert not any(c in q.text for c in ("Istanbul", "Izmir", "Alexandria")), q.text
        if q.template == "neighbours_of_city_country":
            # Not where overseas land, Hans Island, Kashmir or Gaza make the count arguable,
            # nor an island's none.
            arguable = ("Lyon", "Seville", "Rotterdam", "Mumbai", "Toronto", "Alexandria", "Osaka")
            assert not any(c in q.text for c in arguable), q.text
            assert isinstance(q.gold, Count)
            assert q.gold.value > 0
        if q.template == "is_capital_yn" and isinstance(q.gold, YesNo):
            # No capital people argue about, said to be one or not.
            doubted = ("Pretoria", "Cape Town", "Sucre", "Dodoma", "Bern", "Amsterdam")
            assert not any(c in q.text for c in doubted), q.text
        if q.template == "other_official_language":  # no country whose law is in question
            assert not any(c in q.text for c in ("Israel", "New Zealand", "Argentina")), q.text
    # Hans Island: neither Canada nor Denmark has one neighbour.
    assert {"Canada", "Denmark"}.isdisjoint(fresh3._ONE_NEIGHBOUR)
    # The answers are balanced where the draw alone would not be.
    combined = [
        q.gold.yes
        for q in qs
        if q.template == "bigger_than_combined_yn" and isinstance(q.gold, YesNo)
    ]
    assert 0.3 < sum(combined) / len(combined) < 0.7
    counted = [
        q.gold.value
        for q in qs
        if q.template == "count_more_people_less_land" and isinstance(q.gold, Count)
    ]
    assert counted.count(0) < len(counted) / 2


def test_lookups_and_chains_by_hand(facts: Facts) -> None:
    # Kenya: English and Swahili; Ireland: Irish and English.
    text, gold = make(facts, "other_official_language", "Kenya", "English")
    assert "English" in text
    assert gold.gold.text == "Swahili"
    assert gold.score("Besides English, Kenya's other official language is Kiswahili.")
    assert not gold.score("English.")
    _, gold = make(facts, "other_official_language", "Ireland", "English")
    assert gold.score("Irish (Gaelic).")
    # Portugal borders Spain alone; Ireland the United Kingdom.
    assert make(facts, "only_neighbour", "Portugal")[1].gold.text == "Spain"
    _, gold = make(facts, "only_neighbour", "Ireland")
    assert gold.score("Only the UK, through Northern Ireland.")
    assert not gold.score("France.")
    # Sydney may be on "Australia", Auckland not; Medellin is in South America.
    _, gold = make(facts, "continent_of_city", "Oceania", "Sydney")
    assert gold.score("Sydney is in Australia, the continent.")
    assert gold.score("Oceania.")
    assert not gold.score("Asia.")
    _, gold = make(facts, "continent_of_city", "Oceania", "Auckland")
    assert gold.score("Auckland is in Oceania.")
    assert not gold.score("Australia.")
    _, gold = make(facts, "continent_of_city", "Americas", "Medellin")
    assert gold.score("Medellín is in South America.")
    assert not gold.score("Europe.")
    # Poland has seven neighbours; Ireland one.
    assert make(facts, "neighbours_of_city_country", 7, "Krakow")[1] == Count(7)
    text, gold = make(facts, "neighbours_of_city_country", 1, "Cork")
    assert "Cork" in text
    assert gold == Count(1)
    assert gold.score("Ireland borders one country, the United Kingdom.", text)


def test_comparisons_and_counts_by_hand(facts: Facts) -> None:
    # Spain 46.5 million: Argentina 42.7, Peru 30.8, Japan 127.1.
    _, gold = make(facts, "closest_population_to", "Spain", "Argentina", "Peru", "Japan")
    assert gold.gold.text == "Argentina"
    assert gold.score("Argentina, with about 42.7 million people.")
    assert not gold.score("Peru.")
    # Canada, 35.5 million, is not plainly closer than Argentina, 42.7: no question.
    maker = template("closest_population_to").make
    assert maker(Pick("Spain", "Argentina", "Canada", "Japan"), facts) is None
    # Madrid 40.4 N against Oslo 59.9 N; Oslo and Helsinki are too close to call.
    text, gold = make(facts, "capital_further_north", "Norway", "Spain", False)
    assert "south" in text
    assert gold.gold.text == "Spain"
    assert gold.score("Madrid is further south than Oslo.")
    assert not gold.score("Oslo.")
    assert template("capital_further_north").make(Pick("Norway", "Finland"), facts) is None
    # Germany borders Poland and Austria, not Spain, Portugal or Italy.
    text, gold = make(
        facts,
        "count_bordering_from_list",
        *("Germany", 2, 5, "Poland", "Austria", "Spain", "Portugal", "Italy"),
    )
    assert all(c in text for c in ("Germany", "Poland", "Austria", "Spain", "Portugal", "Italy"))
    assert gold == Count(2)
    # The Netherlands' border with France is in the Caribbean: France is never a "no".
    for text, _ in draws(facts, "count_bordering_from_list", "Netherlands", 0, 5):
        assert "France" not in text, text
    # Mongolia: Romania and Pakistan have more people on less land; Brazil and Saudi Arabia
    # have more land.
    pins = ("Mongolia", "Romania", "Brazil", "Pakistan", "Saudi Arabia")
    text, gold = make(facts, "count_more_people_less_land", 2, *pins)
    assert gold == Count(2)
    assert gold.score("Two of the four: Romania and Pakistan.", text)
    assert template("count_more_people_less_land").make(Pick(0, *pins), facts) is None


def test_yes_no_by_hand(facts: Facts) -> None:
    text, gold = make(facts, "is_capital_yn", False, "Sydney")
    assert "Sydney" in text
    assert gold.yes is False
    assert gold.score("No, the capital of Australia is Canberra, not Sydney.")
    assert gold.score("Sydney is not Australia's capital; Canberra is.")
    assert not gold.score("Yes, Sydney is the capital.")
    _, gold = make(facts, "is_capital_yn", True, "Canada")
    assert gold.yes is True
    assert gold.score("Ottawa is the capital of Canada.")
    # Cape Town is a capital of South Africa, after a fashion: never asked.
    assert template("is_capital_yn").make(Pick(False, "Cape Town"), facts) is None
    # Algeria, 2,381,741 km², against France and Spain, 1,146,671 together.
    text, gold = make(facts, "bigger_than_combined_yn", True, 3, "Algeria", "France", "Spain")
    assert gold.yes is True
    assert gold.score("Algeria is larger than France and Spain combined.")
    assert not gold.score("France and Spain together are larger than Algeria.")
    # Japan, 127 million, against Mexico and the Philippines, 220 million together.
    _, gold = make(facts, "bigger_than_combined_yn", False, 3, "Japan", "Mexico", "Philippines")
    assert gold.yes is False
    assert gold.score("No. Japan does not have more people than Mexico and the Philippines.")
    assert not gold.score("Japan has more people than Mexico and the Philippines combined.")


def test_numbers_and_lists_by_hand(facts: Facts) -> None:
    # Indonesia 1,904,569 km² over Switzerland's 41,284: 46.1.
    pins = (True, 3, "Germany", "Indonesia", "Switzerland")
    _, gold = make(facts, "largest_over_smallest", *pins)
    assert gold.value == pytest.approx(46.1333, 1e-4)
    assert not gold.score("Indonesia is 5.3 times as big as Germany.")
    # France and Germany: 146,861,000 people on 997,793 km², 147.2 a km² (not the mean of
    # 103.1 and 226.2).
    _, gold = make(facts, "merged_density", "France", 1, "Germany")
    assert gold.value == pytest.approx(147.186, 1e-5)
    assert not gold.score("About 164.7 people per km².")
    # 14 °C and -2 °C: 16 degrees apart, 28.8 °F apart (not 60.8, 16 °C as a reading).
    _, gold = make(facts, "temperature_gap", True, 14, -2)
    assert gold.value == pytest.approx(28.8)
    assert not gold.score("60.8 °F.")
    # 77 °F and 59 °F: 10 °C apart.
    assert make(facts, "temperature_gap", False, 77, 59)[1].value == pytest.approx(10.0)
    # 300 km at 60 mph: 3.107 hours, 186.4 minutes (not 300, 300 / 60 hours in minutes).
    text, gold = make(facts, "travel_time_mixed_units", True, 300, 60)
    assert "minutes" in text
    assert gold.value == pytest.approx(186.4114, 1e-5)
    assert gold.score("About 3.1 hours.")
    assert not gold.score("300 minutes.")
    # 150 miles at 90 km/h: 2.68 hours.
    text, gold = make(facts, "travel_time_mixed_units", False, 150, 90)
    assert "hours" in text
    assert gold.value == pytest.approx(2.68224, 1e-5)
    assert not gold.score("1.67 hours.")
    # Japan 127 million and Italy 60.8 are the two most populous; Ecuador 15.9 the third.
    five = (False, "Italy", "Ecuador", "Belgium", "Uruguay", "Japan")
    _, gold = make(facts, "top_two_of_five", *five)
    assert [n.text for n in gold.items] == ["Japan", "Italy"]
    assert gold.score("Japan and Italy.")
    assert not gold.score("Japan, Italy and Ecuador.")
    # Spanish is official in Cuba, Bolivia and Ecuador, not in Poland or Austria.
    spanish = ("Spanish", 5, 3, "Cuba", "Bolivia", "Ecuador", "Poland", "Austria")
    _, gold = make(facts, "countries_with_official_language", *spanish)
    assert [n.text for n in gold.items] == ["Cuba", "Bolivia", "Ecuador"]
    assert [n.text for n in gold.rivals] == ["Poland", "Austria"]
    assert gold.score("Cuba, Bolivia and Ecuador; Poland and Austria do not.")
    # Never a country next to one where it is official: German is official in South Tyrol.
    for _, drawn in draws(facts, "countries_with_official_language", "German"):
        assert "Italy" not in {n.text for n in drawn.rivals}


def test_the_runner_knows_the_third_fresh_part() -> None:
    qs = answer_eval.suite_questions("shapes", "fresh3", 1, 12)
    assert {q.template for q in qs} == {t.name for t in fresh3.TEMPLATES}
    rows = [
        {"heldout": True, "part": "fresh3", "correct": True, "wall_s": 1.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
        {"heldout": True, "part": "fresh2", "correct": False, "wall_s": 2.0, "llm_calls": 1,
         "withdrawn": 0, "ungrounded": []},
    ]  # fmt: skip
    result = {"rows": rows}
    mine = answer_eval.summary(result, "fresh3")
    assert mine is not None
    assert mine["n"] == 1
    assert mine["accuracy"] == 1.0
    other = answer_eval.summary(result, "fresh2")
    assert other is not None
    assert other["n"] == 1
    assert other["accuracy"] == 0.0
