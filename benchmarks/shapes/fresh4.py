"""A fourth fresh batch of the shapes suite: templates written after the prompts were frozen.

Written on 2026-12-03, after the prompts, examples and tools were frozen, by someone who read
neither the prompts nor the worked examples (nor the planner, the joiner, the grounding code, the
grammar, the replies, the compiled or ReAct modes, the built-in tools' EXAMPLES or any saved
result or eval output), and who ran no model and no eval.  What they read: common.py,
scoring.py, __init__.py, tune.py, heldout.py, fresh.py, fresh2.py and fresh3.py of this package
(for the format, and to stay off their shapes), answer_eval.py only to wire this part in (and
the names of the names suite's templates, to stay off those too), tests/test_shapes_fresh3.py
and tests/shape_pins.py as models for the test, the built-in tools' signatures and docstrings,
and the fields of the country and city records.  Every template is a question shape that none
of tune.py, heldout.py, fresh.py, fresh2.py, fresh3.py or the names suite has, two per
category: how many official languages, a capital and a currency asked together, two capitals'
people added up, the area of a country's neighbours without it, the second largest of four,
where the capital holds the biggest share of the people, how many of some cities have the euro,
how many countries fall between two population marks, whether a capital outnumbers a foreign
city, whether a country passes a mark in square miles, a country's population at another's
density, the gap between two densities, an average speed across unit systems, a room's floor
in the other system's square units, the cities bigger than their own capital, and the two
countries closest in size.  No prompt was ever tuned on them.  Golds come from the tools' own
data through `Facts`, and no question depends on the clock, on a disputed capital, on a
territory counted as a country, on a border that overseas land makes arguable, on a currency
the data has out of date, or on whether a city is counted within its limits or with its
suburbs; no question asks for a choice between values too close to call.

    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh4 --per-template 2
"""

from __future__ import annotations

import itertools
import math
import random

from .common import (
    CITIES,
    COUNTRIES,
    MI_PER_KM,
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
    currency_name,
    density,
    listing,
    millions,
    only_currency,
    pop,
    possessive,
    registry,
    the,
)
from .fresh import _CONTESTED, _STALE_CURRENCY, _TERRITORIES, _capital, _distinct, _home
from .fresh2 import _CAPITALS_IN_DOUBT, _SAFE_MARGIN
from .fresh3 import _CAPITAL_TITLE_IN_DOUBT, _COUNT_IN_DOUBT, _WHOLE
from .scoring import Choice, Count, Items, Name, Number, YesNo

TEMPLATES: list[Template] = []
shape = registry(TEMPLATES)

SQ_FT_PER_M2 = 1 / 0.3048**2
FT_PER_M = 1 / 0.3048
# Countries whose count of official languages the data gives as the law does, and nobody
# argues about: no regional co-official language (Spain, Italy, Peru), none "recognised" beside
# it (Switzerland's Romansh, India's schedule), no dialects listed apart (Norway), no minority
# language listed as official (Cyprus), no official language missing in law (Japan, Chile).
_LANGUAGES_COUNTED = [
    "France", "Germany", "Poland", "Hungary", "Greece", "Egypt", "Turkey", "Ukraine",
    "Romania", "Brazil", "Lithuania", "Latvia", "Canada", "Finland", "Ireland", "Kenya",
    "Tanzania", "Pakistan", "Paraguay", "Belarus", "Iraq", "Malta", "Belgium", "Luxembourg",
    "Singapore",
]  # fmt: skip
# Capitals whose population depends on where the city ends: New Delhi or Delhi, the City of
# Manila or Metro Manila, the City of Brussels or its region.  No population question on them.
_CITY_LIMITS_IN_DOUBT = {"India", "Philippines", "Belgium"}
# The data counts some cities within their limits (Paris, Tokyo) and others with their suburbs
# (Sydney): a capital and a city of another country are only compared where one has this many
# times the other's people, so that either way of counting gives the same answer.
_CLEAR_FACTOR = 3.0
_NO_CAPITAL_QUESTION = _CAPITALS_IN_DOUBT | _CAPITAL_TITLE_IN_DOUBT | _CITY_LIMITS_IN_DOUBT
# Pakistan's border with China runs through Kashmir, which India claims.
_KASHMIR = {"Pakistan"}


# Distances (in km or miles) and times (in minutes) of a run, a ride and a drive, and the
# speeds, in km/h, that make them plausible.
_TRIPS = {
    "ran": ([5, 8, 10, 12, 15, 21], [28, 35, 42, 50, 55, 64, 75, 90, 110, 125]),
    "cycled": ([25, 32, 40, 48, 60, 75, 90], [70, 80, 95, 105, 120, 150, 165, 200]),
    "drove": ([120, 180, 250, 320, 400, 450], [90, 105, 140, 170, 200, 225, 270, 300]),
}
_SPEEDS_KMH = {"ran": (6, 20), "cycled": (12, 40), "drove": (50, 130)}


def _capitals(f: Facts) -> list[str]:
    """Countries whose capital city_info finds, none in doubt as a capital or as a city."""
    return [c for c in COUNTRIES if c not in _NO_CAPITAL_QUESTION and capital_city(f, c)]


def _capital_people(f: Facts, country: str) -> float:
    record = capital_city(f, country)
    assert record is not None
    return float(record["population"])


def _country_or_capital(f: Facts, c: str) -> Name:
    """The country, or its capital standing for it ("Uruguay", "Montevideo")."""
    country, capital = country_name(f, c), _capital(f, c)
    return Name(country.text, (*country.aliases, capital.text, *capital.aliases))


def _size(f: Facts, c: str, by_area: bool) -> float:
    return area(f, c) if by_area else float(pop(f, c))


# --- lookup -----------------------------------------------------------------------------


@shape("lookup")
def official_language_count(r: random.Random, f: Facts) -> Drawn:
    by_count: dict[int, list[str]] = {}
    for c in _LANGUAGES_COUNTED:
        by_count.setdefault(len(f.country(c)["languages"]), []).append(c)
    # The count first: most of the countries have one or two.
    gold = r.choice(sorted(by_count))
    c = r.choice(by_count[gold])
    text = r.choice(
        [
            f"How many official languages does {the(c)} have?",
            f"What's the number of official languages in {the(c)}?",
            f"Moving to {the(c)} next year. How many languages are official there?",
        ]
    )
    return text, Count(gold)


@shape("lookup")
def capital_and_currency(r: random.Random, f: Facts) -> Drawn:
    pool = [
        c
        for c in COUNTRIES
        if c not in _CAPITALS_IN_DOUBT | _CAPITAL_TITLE_IN_DOUBT | _STALE_CURRENCY
        and only_currency(f, c)
        and f.country(c)["capital"]
    ]
    c = r.choice(pool)
    code = only_currency(f, c)
    assert code is not None
    text = r.choice(
        [
            f"What is the capital of {the(c)}, and what currency do they use there?",
            f"Two quick facts about {the(c)}, please: its capital city and its currency.",
            f"I'm travelling to {the(c)}. Which city is the capital, and what money will I need?",
        ]
    )
    return text, Items((_capital(f, c), currency_name(code)))


# --- chain ------------------------------------------------------------------------------


@shape("chain")
def capitals_combined_population(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(_capitals(f), 2)
    people = [_capital_people(f, a), _capital_people(f, b)]
    gold = sum(people)
    # Not where one capital alone, or the two countries' people, could pass for the sum.
    if not _distinct(gold, [*people, float(pop(f, a) + pop(f, b))], 0.05):
        return None
    text = r.choice(
        [
            f"How many people live in the capitals of {the(a)} and {the(b)} together?",
            f"Add up the populations of {possessive(a)} capital and {possessive(b)} capital. "
            "What's the total?",
            f"What is the combined population of the capital cities of {the(a)} and {the(b)}?",
        ]
    )
    return text, Number(gold)


@shape("chain")
def neighbours_total_area(r: random.Random, f: Facts) -> Drawn:
    pool = []
    for c in _WHOLE:
        neighbours = f.country(c)["neighbours"]
        # Every neighbour a country with an area, and none across a border in doubt.
        if c in _COUNT_IN_DOUBT | _KASHMIR or not 2 <= len(neighbours) <= 6:
            continue
        if set(neighbours) & (_TERRITORIES | _CONTESTED):
            continue
        if all(f.country(n)["area_km2"] for n in neighbours):
            pool.append(c)
    c = r.choice(pool)
    gold = sum(area(f, n) for n in f.country(c)["neighbours"])
    # Not where the country's own area, or the total with it, could pass for the gold.
    if not _distinct(gold, [area(f, c), gold + area(f, c)], 0.05):
        return None
    text = r.choice(
        [
            f"What is the combined area of all the countries that border {the(c)}, not "
            f"counting {the(c)} itself?",
            f"Add up the areas of {possessive(c)} neighbours. How many square kilometres is that?",
            f"How much land, in km², do the countries next to {the(c)} cover between them?",
        ]
    )
    return text, Number(gold)


# --- comparison -------------------------------------------------------------------------


@shape("comparison")
def second_largest_of_four(r: random.Random, f: Facts) -> Drawn:
    by_area = r.choice([True, False])
    chosen = r.sample(COUNTRIES, 4)
    size = {c: _size(f, c, by_area) for c in chosen}
    ranked = sorted(chosen, key=size.__getitem__, reverse=True)
    # The first and second, and the second and third, plainly apart.
    margin = 0.1 if by_area else _SAFE_MARGIN
    if not apart([size[c] for c in ranked[:3]], margin):
        return None
    names = listing([the(c) for c in chosen], "or")
    if by_area:
        wordings = [
            f"Which of {names} is the second largest by area?",
            f"Ranking {listing([the(c) for c in chosen])} by size, which one comes second?",
            f"Not the biggest, but the runner-up: which of {names} has the second-largest area?",
        ]
    else:
        wordings = [
            f"Which of {names} has the second-largest population?",
            f"Ranking {listing([the(c) for c in chosen])} by population, which country comes "
            "second?",
            f"Among {names}, which is the second most populous?",
        ]
    # The largest is no rival: an answer may name it first ("Japan is first, Italy second").
    rivals = tuple(country_name(f, c) for c in ranked[2:])
    return r.choice(wordings), Choice(country_name(f, ranked[1]), rivals)


@shape("comparison")
def capital_heaviest_share(r: random.Random, f: Facts) -> Drawn:
    chosen = r.sample(_capitals(f), 3)
    share = {c: _capital_people(f, c) / pop(f, c) for c in chosen}
    most = r.choice([True, False])
    ranked = sorted(chosen, key=share.__getitem__, reverse=most)
    # Plainly first: twice the share of the next, since the data draws city limits unevenly.
    if not apart([share[ranked[0]], share[ranked[1]]], 0.5):
        return None
    names = listing([the(c) for c in chosen])
    if most:
        wordings = [
            f"Of {names}, which country has the largest share of its people living in its capital?",
            f"In which of {names} does the capital hold the highest percentage of the "
            "national population?",
            f"Which is most concentrated in its capital city: {listing(chosen, 'or')}?",
        ]
    else:
        wordings = [
            f"Of {names}, which country has the smallest share of its people living in its "
            "capital?",
            f"In which of {names} does the capital hold the lowest percentage of the "
            "national population?",
        ]
    rivals = tuple(_country_or_capital(f, c) for c in ranked[1:])
    return r.choice(wordings), Choice(_country_or_capital(f, ranked[0]), rivals)


# --- count ------------------------------------------------------------------------------


@shape("count")
def count_cities_with_euro(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in CITIES if _home(f, c) not in _STALE_CURRENCY]
    euro = [c for c in pool if "EUR" in f.country(_home(f, c))["currencies"]]
    other = [c for c in pool if c not in euro]
    n = r.choice([4, 5])
    k = r.choice(list(range(n + 1)))
    chosen = r.sample(r.sample(euro, k) + r.sample(other, n - k), n)  # shuffled
    names = listing(chosen)
    text = r.choice(
        [
            f"How many of these cities have the euro as their local currency: {names}?",
            f"On a trip through {names}, in how many of those cities is the euro the "
            "official currency?",
            f"Of {names}, how many are in countries that use the euro?",
        ]
    )
    return text, Count(k)


@shape("count")
def count_population_between(r: random.Random, f: Facts) -> Drawn:
    low, high = r.choice([(10e6, 40e6), (10e6, 60e6), (20e6, 50e6), (20e6, 80e6), (30e6, 100e6)])
    # The count first (none, one, two, or three or more), then a draw that gives it.
    want = r.choice([0, 1, 2, 3])
    for _ in range(200):
        chosen = r.sample(COUNTRIES, 5)
        people = [pop(f, c) for c in chosen]
        # Nobody near either mark, in case the data has aged.
        if any(abs(p - mark) <= 0.1 * mark for p in people for mark in (low, high)):
            continue
        gold = sum(low < p < high for p in people)
        if min(gold, 3) == want:
            break
    else:
        return None
    names = listing([the(c) for c in chosen])
    span = f"{low / 1e6:g} and {millions(high)}"
    text = r.choice(
        [
            f"How many of {names} have a population between {span}?",
            f"Of {names}, how many are home to somewhere between {span} people?",
            f"Count the countries with between {span} inhabitants among {names}.",
        ]
    )
    return text, Count(gold)


# --- yesno ------------------------------------------------------------------------------


@shape("yesno")
def capital_outnumbers_city_yn(r: random.Random, f: Facts) -> Drawn:
    # The answer first, then a draw that gives it: most of the cities are smaller.
    yes = r.choice([True, False])
    capitals = _capitals(f)
    for _ in range(200):
        c = r.choice(capitals)
        city = r.choice(CITIES)
        if _home(f, city) == f.country(c)["name"]:
            continue
        mine, theirs = _capital_people(f, c), float(f.city(city)["population"])
        big, small = max(mine, theirs), min(mine, theirs)
        if (mine > theirs) == yes and big >= _CLEAR_FACTOR * small:
            break
    else:
        return None
    text = r.choice(
        [
            f"Is the capital of {the(c)} more populous than {city}?",
            f"Does {possessive(c)} capital city have more people than {city}?",
            f"Quick one: more people live in the capital of {the(c)} than in {city}, right?",
        ]
    )
    verbs = (
        "more populous", "more people", "more inhabitants", "more residents", "bigger",
        "larger", "outnumber", "exceed",
    )  # fmt: skip
    return text, YesNo(yes, (_country_or_capital(f, c), city_name(f, city)), verbs, ordered=True)


@shape("yesno")
def area_over_square_miles_yn(r: random.Random, f: Facts) -> Drawn:
    yes = r.choice([True, False])
    c = r.choice(COUNTRIES)
    size = area(f, c) * SQ_MI_PER_KM2
    marks = [10e3, 25e3, 50e3, 100e3, 150e3, 200e3, 300e3, 500e3, 1e6, 2e6, 3e6]
    # A mark the answer gives, not within 10 % of the area (a rough conversion stays right),
    # nor so far from it that no conversion is needed.
    fits = [
        m for m in marks if (size > m) == yes and abs(size - m) > 0.1 * m and m / 3 < size < 3 * m
    ]
    if not fits:
        return None
    mark = r.choice(fits)
    written = f"{mark / 1e6:g} million" if mark >= 1e6 else f"{mark:,.0f}"
    text = r.choice(
        [
            f"Is {the(c)} bigger than {written} square miles?",
            f"Does {the(c)} cover more than {written} sq mi?",
            f"Convert {possessive(c)} area to square miles: is it over {written}?",
        ]
    )
    miles = Name("square mile", ("sq mi", "mi2", "sq miles"))
    verbs = ("bigger", "larger", "more than", "over", "exceed", "cover more", "greater")
    return text, YesNo(yes, (country_name(f, c), miles), verbs, ordered=True)


# --- relative ---------------------------------------------------------------------------


@shape("relative")
def population_at_density_of(r: random.Random, f: Facts) -> Drawn:
    target, model = r.sample(COUNTRIES, 2)
    gold = density(f, model) * area(f, target)
    # Not where the country's own people, the other's, or the densities swapped could pass
    # for the gold; nor a change too slight to ask about.
    slips = [pop(f, target), pop(f, model), density(f, target) * area(f, model)]
    if not _distinct(gold, slips, 0.2) or not 1 / 100 < gold / pop(f, target) < 100:
        return None
    text = r.choice(
        [
            f"If {the(target)} were as densely populated as {the(model)}, how many people "
            "would live there?",
            f"How many people would {the(target)} have at {possessive(model)} population density?",
            f"Imagine {the(target)} packed people in like {the(model)} does, per square "
            f"kilometre. What would {possessive(target)} population be?",
        ]
    )
    return text, Number(gold)


@shape("relative")
def density_gap(r: random.Random, f: Facts) -> Drawn:
    a, b = sorted(r.sample(COUNTRIES, 2), key=lambda c: -density(f, c))
    da, db = density(f, a), density(f, b)
    gap = da - db
    if da / db < 1.3 or not _distinct(gap, [da, db, da / db], 0.05):
        return None
    text = r.choice(
        [
            f"How many more people per square kilometre does {the(a)} have than {the(b)}?",
            f"What's the difference in population density between {the(a)} and {the(b)}, "
            "in people per km²?",
            f"{capital_first(possessive(a))} population density minus {possessive(b)}: how "
            "many people per km² is that?",
        ]
    )
    return text, Number(gap)


# --- units ------------------------------------------------------------------------------


@shape("units")
def average_speed_mixed_units(r: random.Random, f: Facts) -> Drawn:
    verb = r.choice(["ran", "cycled", "drove"])
    distances, minutes = _TRIPS[verb]
    distance, spent = r.choice(distances), r.choice(minutes)
    hours = spent / 60
    km = r.choice([True, False])  # kilometres given, miles per hour wanted; or the reverse
    given = distance / hours
    gold = given * MI_PER_KM if km else given / MI_PER_KM
    # Plausible speeds only: a run, a ride, a drive.
    bounds = _SPEEDS_KMH[verb]
    kmh = given if km else given / MI_PER_KM
    if not bounds[0] <= kmh <= bounds[1]:
        return None
    slips = [given, distance, spent, distance / spent]
    if not _distinct(gold, slips, 0.05):
        return None
    h, m = divmod(spent, 60)
    took = f"{m} minutes"
    if h:
        took = f"{h} hour{'s' if h > 1 else ''}" + (f" {m} minutes" if m else "")
    trip = f"{distance} km" if km else f"{distance} miles"
    unit = r.choice(["mph", "miles per hour"]) if km else r.choice(["km/h", "kilometres per hour"])
    text = r.choice(
        [
            f"I {verb} {trip} in {took}. What was my average speed in {unit}?",
            f"Yesterday I {verb} {trip}, and it took {took}. How fast was that, in {unit}?",
            f"What's the average speed in {unit} if you cover {trip} in {took}?",
        ]
    )
    return text, Number(gold)


@shape("units")
def room_floor_area(r: random.Random, f: Facts) -> Drawn:
    metric = r.choice([True, False])  # metres given, square feet wanted; or the reverse
    if metric:
        a, b = r.sample([2.5, 3.0, 3.2, 3.5, 4.0, 4.2, 4.5, 5.0, 5.5, 6.0], 2)
        gold = a * b * SQ_FT_PER_M2
        slips = [a * b, a * b * FT_PER_M, a * b / FT_PER_M]
        sides = f"{a:g} m by {b:g} m"
        wordings = [
            f"My living room is {sides}. How many square feet is that?",
            f"We're carpeting a {sides} bedroom. What's the floor area in sq ft?",
            f"A room measures {sides}. Give me its area in square feet.",
        ]
    else:
        a, b = r.sample([8, 10, 11, 12, 13, 14, 15, 16, 18, 20], 2)
        gold = a * b / SQ_FT_PER_M2
        slips = [a * b, a * b / FT_PER_M, a * b * FT_PER_M]
        sides = f"{a} ft by {b} ft"
        wordings = [
            f"My living room is {sides}. How many square metres is that?",
            f"We're tiling a {sides} kitchen. What's the floor area in m²?",
            f"A room measures {sides}. Give me its area in square meters.",
        ]
    if not _distinct(gold, slips, 0.05):
        return None
    return r.choice(wordings), Number(gold)


# --- list -------------------------------------------------------------------------------


@shape("list")
def cities_bigger_than_own_capital(r: random.Random, f: Facts) -> Drawn:
    pool = []
    for city in CITIES:
        home = _home(f, city)
        record = capital_city(f, home)
        if home in _NO_CAPITAL_QUESTION or record is None or record["name"] == f.city(city)["name"]:
            continue
        if apart([float(f.city(city)["population"]), float(record["population"])], _SAFE_MARGIN):
            pool.append(city)
    bigger = {
        c for c in pool if float(f.city(c)["population"]) > _capital_people(f, f.city(c)["country"])
    }
    n = r.choice([4, 5])
    k = r.choice(list(range(1, n)))
    inside = r.sample(sorted(bigger), k)
    chosen = r.sample(inside + r.sample([c for c in pool if c not in bigger], n - k), n)
    names = listing(chosen)
    text = r.choice(
        [
            f"Which of {names} have more people than the capital of their own country?",
            f"Of these cities, which are bigger than their national capital: {names}?",
            f"Some cities outgrow their country's capital. Which of {names} do?",
        ]
    )
    return text, Items(
        tuple(city_name(f, c) for c in chosen if c in inside),
        tuple(city_name(f, c) for c in chosen if c not in inside),
    )


@shape("list")
def closest_pair_in_size(r: random.Random, f: Facts) -> Drawn:
    by_area = r.choice([True, False])
    chosen = r.sample(COUNTRIES, 5)
    size = {c: _size(f, c, by_area) for c in chosen}
    pairs = list(itertools.combinations(chosen, 2))
    by_ratio = sorted(pairs, key=lambda p: abs(math.log(size[p[0]] / size[p[1]])))
    gaps = [abs(math.log(size[a] / size[b])) for a, b in by_ratio]
    # Plainly the closest, in proportion and in plain difference alike.
    margin = math.log(1.1 if by_area else 1 + _SAFE_MARGIN)
    closest = min(pairs, key=lambda p: abs(size[p[0]] - size[p[1]]))
    if gaps[1] - gaps[0] < margin or set(closest) != set(by_ratio[0]):
        return None
    names = listing([the(c) for c in chosen])
    if by_area:
        wordings = [
            f"Which two of {names} are closest in area?",
            f"Of these five countries, which pair is most alike in size (area): {names}?",
            f"Find the two countries among {names} whose areas are nearest to each other.",
        ]
    else:
        wordings = [
            f"Which two of {names} have the most similar populations?",
            f"Of these five countries, which pair is closest in population: {names}?",
            f"Find the two countries among {names} whose numbers of inhabitants are nearest "
            "to each other.",
        ]
    pair = by_ratio[0]
    return r.choice(wordings), Items(
        tuple(country_name(f, c) for c in chosen if c in pair),
        tuple(country_name(f, c) for c in chosen if c not in pair),
    )
