"""A seventh fresh batch of the shapes suite: templates written after the prompts were frozen.

Written on 2026-12-04, after the prompts, examples and tools were frozen, by someone who read
neither the prompts nor the worked examples (nor the planner, the joiner, the grounding code,
the grammar, the replies, the compiled or ReAct modes, the built-in tools' EXAMPLES, any saved
result or eval output, or the history of the source), and who ran no model and no eval.  What
they read: common.py, scoring.py, __init__.py, tune.py, heldout.py and fresh.py to fresh6.py of
this package (for the format, and to stay off their shapes), answer_eval.py only to wire this
part in (and the names of the names suite's templates), tests/test_shapes_fresh6.py and
tests/shape_pins.py as models for the test, the built-in tools' signatures and docstrings, and
the fields of the country and city records.  Every template is a question shape that none of
tune.py, heldout.py, fresh.py to fresh6.py or the names suite has, two per category: a country
named by its ISO code, the capitals of three countries at once, the capitals of a country's
neighbours, the largest neighbour of a city's country, the one euro user among four, the one of
four that borders most of the others, how many countries a list of cities spans, how many of a
list are officially multilingual, whether any neighbour passes a mark, whether two countries
together pass one, how far a population is short of a round figure, a population
or area as a multiple of two others combined, fuel economy between mpg and L/100 km, a park in
square miles as a share of a country, countries in a region *and* over a mark, and cities in
countries over a mark.  No prompt was ever tuned on them.  Golds come from the tools' own data
through `Facts`, and no question depends on the clock, on a disputed capital, on a territory
counted as a country, on a border that overseas land makes arguable, on a currency the data has
out of date, on whether a city is counted within its limits or with its suburbs, or on whether
a British city's country is the United Kingdom or one of its nations; no question asks for a
choice between values too close to call.

    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh7 --per-template 2
"""

from __future__ import annotations

import random

from .common import (
    CITIES,
    COUNTRIES,
    SQ_MI_PER_KM2,
    Drawn,
    Facts,
    Template,
    apart,
    area,
    capital_city,
    capital_first,
    city_name,
    country_name,
    listing,
    millions,
    pop,
    possessive,
    registry,
    the,
)
from .fresh import _STALE_CURRENCY, _TERRITORIES, _capital, _distinct, _home
from .fresh2 import _CAPITALS_IN_DOUBT, _SAFE_MARGIN, _TWO_CONTINENTS
from .fresh3 import _CAPITAL_TITLE_IN_DOUBT
from .fresh4 import _LANGUAGES_COUNTED
from .fresh5 import _ring
from .scoring import Choice, Count, Items, Name, Number, YesNo

TEMPLATES: list[Template] = []
shape = registry(TEMPLATES)

LITRES_PER_US_GALLON = 3.785411784
KM_PER_MI = 1.609344
# Litres per 100 km times miles per US gallon: the one is this over the other.
MPG_TIMES_L_PER_100KM = 100 * LITRES_PER_US_GALLON / KM_PER_MI
# ISO 3166-1 alpha-3 codes (which country_info resolves), not the Olympic ones (GER, SUI, NED).
ISO3 = {
    "Switzerland": "CHE", "Germany": "DEU", "Portugal": "PRT", "Netherlands": "NLD",
    "Austria": "AUT", "Denmark": "DNK", "Ireland": "IRL", "Spain": "ESP", "Sweden": "SWE",
    "Poland": "POL", "Greece": "GRC", "Japan": "JPN", "South Korea": "KOR",
    "South Africa": "ZAF", "Morocco": "MAR", "Czech Republic": "CZE", "Hungary": "HUN",
    "Romania": "ROU", "Ukraine": "UKR", "Iran": "IRN", "Pakistan": "PAK", "Saudi Arabia": "SAU",
    "New Zealand": "NZL", "Iceland": "ISL", "Tanzania": "TZA", "Ethiopia": "ETH",
    "Algeria": "DZA", "Philippines": "PHL", "Bangladesh": "BGD", "Nepal": "NPL",
    "Mongolia": "MNG", "Lithuania": "LTU", "Ghana": "GHA", "Senegal": "SEN", "Chile": "CHL",
    "Uruguay": "URY", "Nigeria": "NGA", "Indonesia": "IDN", "Vietnam": "VNM",
    "Colombia": "COL", "Argentina": "ARG", "Bulgaria": "BGR",
}  # fmt: skip
# How a question names a region ("in the Americas").
_REGION_WORDS = {"Europe": "Europe", "Asia": "Asia", "Africa": "Africa", "Americas": "the Americas"}


# Cities whose "country" a question could mean two ways: Edinburgh is in Scotland and in the
# United Kingdom.  No question counts or sizes their countries.
_NATIONS_IN_ONE = {"United Kingdom"}


def _countries() -> list[str]:
    return [c for c in COUNTRIES if c not in _TERRITORIES]


def _named_capital(f: Facts, c: str) -> bool:
    """Whether nobody argues about the country's capital and city_info finds it under a name
    that is not the country's own (no Luxembourg, no Singapore)."""
    return c not in _CAPITALS_IN_DOUBT | _CAPITAL_TITLE_IN_DOUBT and capital_city(f, c) is not None


def _cities(f: Facts) -> list[str]:
    """The cities of CITIES whose country nobody could take for another (not Edinburgh's)."""
    return [city for city in CITIES if _home(f, city) not in _NATIONS_IN_ONE]


def _homes(f: Facts) -> dict[str, list[str]]:
    """Those cities by the country they are in."""
    out: dict[str, list[str]] = {}
    for city in _cities(f):
        out.setdefault(_home(f, city), []).append(city)
    return out


# --- lookup -----------------------------------------------------------------------------


@shape("lookup")
def country_of_iso_code(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(sorted(ISO3))
    code = ISO3[c]
    if f.country(code)["name"] != f.country(c)["name"]:
        return None
    text = r.choice(
        [
            f"Which country has the three-letter ISO country code {code}?",
            f"A spreadsheet lists a country only as '{code}', its ISO 3166 alpha-3 code. Which "
            "country is that?",
            f"What country does the ISO code {code} stand for?",
        ]
    )
    return text, Choice(country_name(f, c))


@shape("lookup")
def capitals_of_three(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in _countries() if _named_capital(f, c)]
    chosen = r.sample(pool, 3)
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"What are the capitals of {names}?",
            f"Name the capital cities of {names}.",
            f"Quiz night prep: I need the capitals of {names}. What are they?",
        ]
    )
    return text, Items(tuple(_capital(f, c) for c in chosen))


# --- chain ------------------------------------------------------------------------------


@shape("chain")
def neighbour_capitals(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 4)
    fits = [c for c, ns in sorted(ring.items()) if all(_named_capital(f, n) for n in ns)]
    c = r.choice(fits)
    text = r.choice(
        [
            f"What are the capitals of the countries that border {the(c)}?",
            f"List the capital city of each of {possessive(c)} neighbours.",
            f"I want to visit the capital of every country bordering {the(c)}. Which cities are "
            "those?",
        ]
    )
    return text, Items(tuple(_capital(f, n) for n in ring[c]))


@shape("chain")
def largest_neighbour_of_city_country(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 6)
    cities = [city for city in _cities(f) if _home(f, city) in ring]
    city = r.choice(cities)
    neighbours = ring[_home(f, city)]
    by_area = r.choice([True, False])
    size = {n: area(f, n) if by_area else float(pop(f, n)) for n in neighbours}
    ranked = sorted(neighbours, key=size.__getitem__, reverse=True)
    if not apart([size[ranked[0]], size[ranked[1]]], 0.1 if by_area else _SAFE_MARGIN):
        return None
    if by_area:
        wordings = [
            f"What is the largest country, by area, that borders the country {city} is in?",
            f"{city}'s country has several neighbours. Which of them covers the most ground?",
            f"Take the country where {city} lies: which of its neighbours is the biggest in area?",
        ]
    else:
        wordings = [
            f"Which is the most populous neighbour of the country {city} is in?",
            f"{city}'s country has several neighbours. Which of them has the most people?",
            f"Take the country where {city} lies: which bordering country has the largest "
            "population?",
        ]
    return r.choice(wordings), Choice(
        country_name(f, ranked[0]), tuple(country_name(f, n) for n in ranked[1:])
    )


# --- comparison -------------------------------------------------------------------------


@shape("comparison")
def only_euro_user_of_four(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in _countries() if c not in _STALE_CURRENCY and f.country(c)["currencies"]]
    euro = [c for c in pool if "EUR" in f.country(c)["currencies"]]
    other = [c for c in pool if c not in euro]
    odd = r.choice(euro)
    chosen = r.sample([odd, *r.sample(other, 3)], 4)
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"Only one of {names} uses the euro. Which one?",
            f"I'm only carrying euros. Which one of {names} has the euro as its currency?",
            f"{capital_first(names)}: which single one of these countries pays in euros?",
        ]
    )
    return text, Choice(country_name(f, odd), tuple(country_name(f, c) for c in chosen if c != odd))


@shape("comparison")
def borders_most_of_the_others(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 8)
    hub = r.choice(sorted(ring))
    near = [n for n in ring[hub] if n in ring]
    if len(near) < 2:
        return None
    chosen = [hub, *r.sample(near, 2)]
    further = sorted({m for n in chosen[1:] for m in ring[n] if m in ring} - set(chosen))
    if not further:
        return None
    chosen.append(r.choice(further))

    def touches(a: str, b: str) -> bool:
        return b in ring[a] and a in ring[b]

    degree = {c: sum(touches(c, o) for o in chosen if o != c) for c in chosen}
    ranked = sorted(chosen, key=degree.__getitem__, reverse=True)
    if degree[ranked[0]] == degree[ranked[1]]:
        return None
    shown = r.sample(chosen, 4)
    names = listing([the(c) for c in shown])
    text = r.choice(
        [
            f"Of {names}, which one shares a border with the most of the others?",
            f"Looking only at {names}: which of them borders the largest number of the other "
            "three?",
            f"Which of {names} has the most neighbours among the rest of this list?",
        ]
    )
    return text, Choice(country_name(f, ranked[0]), tuple(country_name(f, c) for c in ranked[1:]))


# --- count ------------------------------------------------------------------------------


@shape("count")
def count_home_countries(r: random.Random, f: Facts) -> Drawn:
    homes = _homes(f)
    several = sorted(h for h, cs in homes.items() if len(cs) >= 2)
    k = r.choice([2, 3, 4])
    picked = r.sample(several, k)
    cities = [r.choice(homes[h]) for h in picked]
    rest = [c for h in picked for c in homes[h] if c not in cities]
    if len(rest) < 5 - k:
        return None
    cities += r.sample(rest, 5 - k)
    shown = r.sample(cities, 5)
    names = listing(shown)
    text = r.choice(
        [
            f"How many different countries are these cities in: {names}?",
            f"I'm touring {names}. How many countries will I visit?",
            f"Between them, in how many countries do {names} lie?",
        ]
    )
    return text, Count(len({_home(f, c) for c in shown}))


@shape("count")
def count_multilingual(r: random.Random, f: Facts) -> Drawn:
    chosen = r.sample(_LANGUAGES_COUNTED, 5)
    gold = sum(len(f.country(c)["languages"]) > 1 for c in chosen)
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"How many of {names} have several official languages?",
            f"Of {names}, how many are officially multilingual?",
            f"Count the countries with multiple official languages among {names}.",
        ]
    )
    return text, Count(gold)


# --- yesno ------------------------------------------------------------------------------


@shape("yesno")
def any_neighbour_over_yn(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 6)
    c = r.choice(sorted(ring))
    people = [float(pop(f, n)) for n in ring[c]]
    marks = [
        m
        for m in (5, 10, 20, 30, 50, 100)
        if all(abs(p - m * 1e6) > 0.25 * m * 1e6 for p in people)
    ]
    if not marks:
        return None
    mark = r.choice(marks)
    yes = any(p > mark * 1e6 for p in people)
    text = r.choice(
        [
            f"Does any country bordering {the(c)} have more than {millions(mark * 1e6)} people?",
            f"Is at least one of {possessive(c)} neighbours home to over {millions(mark * 1e6)} "
            "inhabitants?",
            f"Do any of {possessive(c)} neighbours have a population above {millions(mark * 1e6)}?",
        ]
    )
    verbs = ("more than", "over", "above", "exceed")
    return text, YesNo(yes, (country_name(f, c), Name("million")), verbs, ordered=True)


@shape("yesno")
def combined_over_mark_yn(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(_countries(), 2)
    total = float(pop(f, a) + pop(f, b))
    marks = [m * 1e6 for m in (5, 10, 20, 30, 50, 80, 100, 150, 200, 300, 500)]
    fits = [m for m in marks if abs(total - m) > _SAFE_MARGIN * m and m / 3 < total < 3 * m]
    if not fits:
        return None
    mark = r.choice(fits)
    text = r.choice(
        [
            f"Do {the(a)} and {the(b)} together have more than {millions(mark)} people?",
            f"Is the combined population of {the(a)} and {the(b)} over {millions(mark)}?",
            f"Put {the(a)} and {the(b)} together: are there above {millions(mark)} "
            "inhabitants in all?",
        ]
    )
    verbs = ("more than", "over", "above", "exceed")
    return text, YesNo(total > mark, (country_name(f, a), Name("million")), verbs, ordered=True)


# --- relative ---------------------------------------------------------------------------


@shape("relative")
def short_of_mark(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(_countries())
    people = float(pop(f, c))
    marks = [m * 1e6 for m in (1, 2, 5, 10, 20, 25, 50, 100, 150, 200, 300, 500)]
    fits = [m for m in marks if 1.1 * people < m < 3 * people]
    if not fits:
        return None
    mark = r.choice(fits)
    gold = mark - people
    if not _distinct(gold, [people, mark], 0.05):
        return None
    text = r.choice(
        [
            f"How many more people would {the(c)} need to reach a population of {millions(mark)}?",
            f"{capital_first(possessive(c))} population falls short of {millions(mark)} by how "
            "many people?",
            f"If {the(c)} wanted to hit {millions(mark)} inhabitants, how many extra people "
            "would it need?",
        ]
    )
    return text, Number(gold)


@shape("relative")
def times_two_combined(r: random.Random, f: Facts) -> Drawn:
    big, a, b = r.sample(_countries(), 3)
    by_area = r.choice([True, False])
    size = {c: area(f, c) if by_area else float(pop(f, c)) for c in (big, a, b)}
    gold = size[big] / (size[a] + size[b])
    if gold < 1.3 or not _distinct(gold, [size[big] / size[a], size[big] / size[b]], 0.05):
        return None
    if by_area:
        wordings = [
            f"How many times the combined area of {the(a)} and {the(b)} does {the(big)} cover?",
            f"{capital_first(possessive(big))} area is how many times that of {the(a)} and "
            f"{the(b)} put together?",
        ]
    else:
        wordings = [
            f"How many times as many people as {the(a)} and {the(b)} combined does {the(big)} "
            "have?",
            f"{capital_first(possessive(big))} population is how many times that of {the(a)} "
            f"and {the(b)} together?",
        ]
    return r.choice(wordings), Number(gold)


# --- units ------------------------------------------------------------------------------


@shape("units")
def fuel_economy(r: random.Random, f: Facts) -> Drawn:
    if r.choice([True, False]):
        mpg = r.choice([18, 22, 25, 28, 30, 32, 35, 40, 45, 50])
        gold = MPG_TIMES_L_PER_100KM / mpg
        wordings = [
            f"My car gets {mpg} miles per US gallon. What is that in litres per 100 km?",
            f"A rental is rated at {mpg} mpg (US gallons). How many L/100 km is that?",
            f"Convert a fuel economy of {mpg} US mpg to liters per 100 kilometers.",
        ]
        given = float(mpg)
    else:
        rate = r.choice([4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8, 9, 10])
        gold = MPG_TIMES_L_PER_100KM / rate
        wordings = [
            f"My car uses {rate:g} litres per 100 km. How many miles per US gallon is that?",
            f"A European spec sheet says {rate:g} L/100 km. What's that in US mpg?",
            f"Convert {rate:g} liters per 100 kilometers to miles per (US) gallon.",
        ]
        given = rate
    if not _distinct(gold, [given, 100.0], 0.05):
        return None
    return r.choice(wordings), Number(gold)


@shape("units")
def park_share_of_country(r: random.Random, f: Facts) -> Drawn:
    c = r.choice([c for c in _countries() if 20_000 < area(f, c) < 400_000])
    sq_mi = r.choice([300, 500, 800, 1200, 2000, 3000, 5000, 8000])
    share = 100 * sq_mi / SQ_MI_PER_KM2 / area(f, c)
    if not 0.5 < share < 60:
        return None
    text = r.choice(
        [
            f"A national park covers {sq_mi:,} square miles. What percentage of {possessive(c)} "
            "area would that be?",
            f"If a reserve of {sq_mi:,} sq mi lay in {the(c)}, what share of the country would "
            "it take up, in percent?",
            f"A nature reserve spans {sq_mi:,} square miles. Placed in {the(c)}, how many percent "
            "of the country's area would it cover?",
        ]
    )
    return text, Number(share, (share / 100,))


# --- list -------------------------------------------------------------------------------


@shape("list")
def in_region_and_over(r: random.Random, f: Facts) -> Drawn:
    region = r.choice(sorted(_REGION_WORDS))
    mark = r.choice([5, 10, 20, 40, 50]) * 1e6
    pool = [
        c
        for c in _countries()
        if c not in _TWO_CONTINENTS and abs(pop(f, c) - mark) > _SAFE_MARGIN * mark
    ]

    def inside(c: str) -> bool:
        return bool(f.country(c)["region"] == region)

    both = [c for c in pool if inside(c) and pop(f, c) > mark]
    small = [c for c in pool if inside(c) and pop(f, c) < mark]
    away = [c for c in pool if not inside(c) and pop(f, c) > mark]
    if not both or not small or not away:
        return None
    picked = [r.choice(both), r.choice(small), r.choice(away)]
    picked += r.sample([c for c in pool if c not in picked], 2)
    chosen = r.sample(picked, 5)
    names = listing([the(c) for c in chosen])
    where = _REGION_WORDS[region]
    text = r.choice(
        [
            f"Which of these countries are in {where} and have more than {millions(mark)} "
            f"people: {names}?",
            f"Of {names}, name the ones that lie in {where} and have a population above "
            f"{millions(mark)}.",
            f"I need countries in {where} with over {millions(mark)} inhabitants. Which of "
            f"{names} qualify?",
        ]
    )
    gold = [c for c in chosen if inside(c) and pop(f, c) > mark]
    return text, Items(
        tuple(country_name(f, c) for c in gold),
        tuple(country_name(f, c) for c in chosen if c not in gold),
    )


@shape("list")
def cities_in_populous_countries(r: random.Random, f: Facts) -> Drawn:
    mark = r.choice([10, 20, 50, 100]) * 1e6
    pool = [c for c in _cities(f) if abs(pop(f, _home(f, c)) - mark) > _SAFE_MARGIN * mark]
    over = [c for c in pool if pop(f, _home(f, c)) > mark]
    under = [c for c in pool if pop(f, _home(f, c)) < mark]
    n = r.choice([4, 5])
    k = r.choice(list(range(1, n)))
    if len(over) < k or len(under) < n - k:
        return None
    inside = r.sample(over, k)
    chosen = r.sample(inside + r.sample(under, n - k), n)
    names = listing(chosen)
    text = r.choice(
        [
            f"Which of these cities are in a country with more than {millions(mark)} "
            f"inhabitants: {names}?",
            f"Of {names}, which lie in a country of over {millions(mark)} people?",
            f"List the cities among {names} whose country has a population above {millions(mark)}.",
        ]
    )
    return text, Items(
        tuple(city_name(f, c) for c in chosen if c in inside),
        tuple(city_name(f, c) for c in chosen if c not in inside),
    )
