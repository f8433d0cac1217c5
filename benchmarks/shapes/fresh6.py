"""A sixth fresh batch of the shapes suite: templates written after the prompts were frozen.

Written on 2026-12-04, after the prompts, examples and tools were frozen, by someone who read
neither the prompts nor the worked examples (nor the planner, the joiner, the grounding code,
the grammar, the replies, the compiled or ReAct modes, the built-in tools' EXAMPLES, any saved
result or eval output, or the history of the source), and who ran no model and no eval.  What
they read: common.py, scoring.py, __init__.py, tune.py, heldout.py and fresh.py to fresh5.py of
this package (for the format, and to stay off their shapes), answer_eval.py only to wire this
part in (and the names of the names suite's templates), tests/test_shapes_fresh5.py and
tests/shape_pins.py as models for the test, the built-in tools' signatures and docstrings, and
the fields of the country and city records.  Every template is a question shape that none of
tune.py, heldout.py, fresh.py to fresh5.py or the names suite has, two per category.  No prompt
was ever tuned on them.  Golds come from the tools' own data through `Facts`, and no question
depends on the clock, on a disputed capital, on a territory counted as a country, on a border
that overseas land makes arguable, on a currency the data has out of date, or on whether a city
is counted within its limits or with its suburbs; no question asks for a choice between values
too close to call.

    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh6 --per-template 2
"""

from __future__ import annotations

import random

from .common import (
    CITIES,
    COUNTRIES,
    Drawn,
    Facts,
    Template,
    apart,
    area,
    capital_city,
    city_name,
    country_name,
    density,
    listing,
    pop,
    registry,
    the,
)
from .fresh import _STALE_CURRENCY, _TERRITORIES, _distinct, _home
from .fresh2 import _SAFE_MARGIN
from .fresh4 import _capitals
from .fresh5 import _ring
from .scoring import Choice, Count, Items, Name, Number, YesNo

TEMPLATES: list[Template] = []
shape = registry(TEMPLATES)

KG_PER_LB = 0.45359237
KM_PER_MI = 1.609344


def _countries() -> list[str]:
    return [c for c in COUNTRIES if c not in _TERRITORIES]


# --- lookup -----------------------------------------------------------------------------


@shape("lookup")
def capital_longitude(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(_capitals(f))
    record = capital_city(f, c)
    assert record is not None
    lon = float(record["longitude"])
    if abs(lon) < 10:  # far from the meridian, so that a rounded answer stays close
        return None
    text = r.choice(
        [
            f"What is the longitude of {possessive_capital(c)}?",
            f"Quick geography check: at what longitude does the capital of {the(c)} lie?",
            f"For a map I'm drawing, I need the longitude of {the(c)}'s capital city. What is it?",
        ]
    )
    return text, Number(lon, (abs(lon),))


def possessive_capital(c: str) -> str:
    return f"the capital of {the(c)}"


@shape("lookup")
def biggest_neighbour_population(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 5)
    c = r.choice(sorted(ring))
    people = sorted((float(pop(f, n)) for n in ring[c]), reverse=True)
    if not apart(people[:2], _SAFE_MARGIN):
        return None
    text = r.choice(
        [
            f"How many people live in the most populous country bordering {the(c)}?",
            f"Among {possessive_country(c)} neighbours, the biggest by population has how many "
            "inhabitants?",
            f"I'd like the population of whichever neighbour of {the(c)} has the most people, "
            "please.",
        ]
    )
    return text, Number(people[0])


def possessive_country(c: str) -> str:
    return f"{the(c)}'" if c.endswith("s") else f"{the(c)}'s"


# --- chain ------------------------------------------------------------------------------


@shape("chain")
def home_country_area(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    home = _home(f, city)
    km2 = area(f, home)
    text = r.choice(
        [
            f"How large, in square kilometres, is the country {city} belongs to?",
            f"My friend just moved to {city}. What's the total area of that country in km²?",
            f"Find the country where {city} is, then tell me its area in sq km.",
        ]
    )
    return text, Number(km2)


@shape("chain")
def home_country_neighbour_total(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 6)
    cities = [c for c in CITIES if _home(f, c) in ring]
    if not cities:
        return None
    city = r.choice(cities)
    home = _home(f, city)
    gold = sum(float(pop(f, n)) for n in ring[home])
    if not _distinct(gold, [float(pop(f, home))], 0.05):
        return None
    text = r.choice(
        [
            f"What's the combined population of all the countries that border the country "
            f"{city} is in?",
            f"Thinking of {city}'s country: how many people live in its neighbouring countries "
            "altogether?",
            f"Take the country containing {city}, and add up the populations of every "
            "country bordering it. What's the total?",
        ]
    )
    return text, Number(gold)


# --- comparison -------------------------------------------------------------------------


@shape("comparison")
def sparser_of_two(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(_countries(), 2)
    da, db = density(f, a), density(f, b)
    if not apart([da, db], 0.15):
        return None
    gold, rival = (a, b) if da < db else (b, a)
    text = r.choice(
        [
            f"Which is less densely populated: {the(a)} or {the(b)}?",
            f"Between {the(a)} and {the(b)}, where do people have more room, i.e. fewer "
            "inhabitants per square kilometre?",
            f"{capital(the(a))} or {the(b)} — which has the lower population density?",
        ]
    )
    return text, Choice(country_name(f, gold), (country_name(f, rival),))


def capital(text: str) -> str:
    return text[:1].upper() + text[1:]


@shape("comparison")
def least_populous_of_three(r: random.Random, f: Facts) -> Drawn:
    chosen = r.sample(_countries(), 3)
    people = sorted(chosen, key=lambda c: pop(f, c))
    if not apart([float(pop(f, people[0])), float(pop(f, people[1]))], _SAFE_MARGIN):
        return None
    names = listing([the(c) for c in chosen], "or")
    text = r.choice(
        [
            f"Which has the smallest population: {names}?",
            f"Of {names}, which country has the fewest people?",
            f"I'm comparing {listing([the(c) for c in chosen])}. Which one is home to the "
            "fewest inhabitants?",
        ]
    )
    return text, Choice(country_name(f, people[0]), tuple(country_name(f, c) for c in people[1:]))


# --- count ------------------------------------------------------------------------------


@shape("count")
def count_capitals_east_of(r: random.Random, f: Facts) -> Drawn:
    meridian = r.choice([0, 20, 40, 80, 100])
    capitals = _capitals(f)
    want = r.choice([0, 1, 2, 3])
    for _ in range(200):
        chosen = r.sample(capitals, 5)
        lons = []
        for c in chosen:
            record = capital_city(f, c)
            assert record is not None
            lons.append(float(record["longitude"]))
        if any(abs(lon - meridian) < 2 for lon in lons):
            continue
        gold = sum(lon > meridian for lon in lons)
        if min(gold, 3) == want:
            break
    else:
        return None
    names = listing([the(c) for c in chosen])
    where = "the prime meridian" if meridian == 0 else f"{meridian}° east"
    text = r.choice(
        [
            f"How many of these countries have a capital lying east of {where}: {names}?",
            f"Count the capitals east of {where} among {names}.",
            f"Looking at {names}: in how many of them is the capital city further east than "
            f"{where}?",
        ]
    )
    return text, Count(gold)


@shape("count")
def count_fewer_than_mark(r: random.Random, f: Facts) -> Drawn:
    mark = r.choice([1, 5, 10, 20, 50])
    pool = [c for c in _countries() if not 0.8 < pop(f, c) / (mark * 1e6) < 1.25]
    chosen = r.sample(pool, r.choice([4, 5, 6]))
    gold = sum(pop(f, c) < mark * 1e6 for c in chosen)
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"How many of {names} have fewer than {mark} million inhabitants?",
            f"Of {names}, how many countries have a population under {mark},000,000?",
            f"Could you tell me how many of these have less than {mark} million people: {names}?",
        ]
    )
    return text, Count(gold)


# --- yesno ------------------------------------------------------------------------------


@shape("yesno")
def capital_south_of_city_yn(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(_capitals(f))
    record = capital_city(f, c)
    assert record is not None
    city = r.choice(CITIES)
    if _home(f, city) == f.country(c)["name"]:
        return None
    lat, other = float(record["latitude"]), float(f.city(city)["latitude"])
    if abs(lat - other) < 3:
        return None
    yes = lat < other
    text = r.choice(
        [
            f"Is the capital of {the(c)} further south than {city}?",
            f"Does {possessive_country(c)} capital lie to the south of {city}?",
            f"I always mix these up: is {possessive_country(c)} capital south of {city}?",
        ]
    )
    verbs = ("south", "further south", "farther south", "southern")
    return text, YesNo(yes, (country_name(f, c), city_name(f, city)), verbs, ordered=True)


@shape("yesno")
def fewer_than_mark_yn(r: random.Random, f: Facts) -> Drawn:
    yes = r.choice([True, False])
    c = r.choice(_countries())
    people = float(pop(f, c))
    marks = [1, 2, 5, 10, 20, 30, 50, 80, 100, 200]
    fits = [
        m
        for m in marks
        if (people < m * 1e6) == yes
        and abs(people - m * 1e6) > 0.15 * m * 1e6
        and m * 1e6 / 4 < people < 4 * m * 1e6
    ]
    if not fits:
        return None
    mark = r.choice(fits)
    text = r.choice(
        [
            f"Does {the(c)} have fewer than {mark} million people?",
            f"Is the population of {the(c)} below {mark} million?",
            f"A colleague claims {the(c)} has under {mark} million inhabitants. True?",
        ]
    )
    verbs = ("fewer than", "less than", "under", "below")
    million = Name("million", ())
    return text, YesNo(yes, (country_name(f, c), million), verbs, ordered=True)


# --- relative ---------------------------------------------------------------------------


@shape("relative")
def population_gap(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(_countries(), 2)
    pa, pb = float(pop(f, a)), float(pop(f, b))
    if pa < pb:
        a, b, pa, pb = b, a, pb, pa
    gold = pa - pb
    if not _distinct(gold, [pa, pb], 0.05):
        return None
    text = r.choice(
        [
            f"How many more people live in {the(a)} than in {the(b)}?",
            f"By how many inhabitants does {the(a)} outnumber {the(b)}?",
            f"What's the difference in population between {the(a)} and {the(b)}?",
        ]
    )
    return text, Number(gold)


@shape("relative")
def area_split_equally(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(_countries())
    parts = r.choice([3, 4, 5, 8, 10, 12])
    gold = area(f, c) / parts
    text = r.choice(
        [
            f"If {the(c)} were divided into {parts} regions of equal size, how many square "
            "kilometres would each cover?",
            f"Split {the(c)} evenly into {parts} provinces. What's the area of one, in km²?",
            f"Suppose the land of {the(c)} is shared equally among {parts} districts: how big "
            "is each district in sq km?",
        ]
    )
    return text, Number(gold)


# --- units ------------------------------------------------------------------------------


@shape("units")
def parcels_lb_to_kg(r: random.Random, f: Facts) -> Drawn:
    weights = r.sample(list(range(3, 40)), r.choice([2, 3, 4]))
    total = sum(weights)
    gold = total * KG_PER_LB
    if not _distinct(gold, [total, total / 2.2 * 1.1], 0.03):
        return None
    written = listing([str(w) for w in weights])
    text = r.choice(
        [
            f"I'm shipping parcels weighing {written} lb. What's their total weight in kilograms?",
            f"Together, how many kg do boxes of {written} pounds weigh?",
            f"The courier needs the combined weight in kilos. The packages are {written} lbs.",
        ]
    )
    return text, Number(gold)


@shape("units")
def weekly_run_miles_to_km(r: random.Random, f: Facts) -> Drawn:
    runs = [r.choice([2, 3, 3.5, 4, 5, 6, 6.5, 8, 10, 13.1]) for _ in range(r.choice([3, 4]))]
    total = sum(runs)
    gold = total * KM_PER_MI
    if not _distinct(gold, [total], 0.05):
        return None
    written = listing([f"{x:g}" for x in runs])
    text = r.choice(
        [
            f"This week I ran {written} miles. How many kilometres is that in total?",
            f"My training log says {written} mi. What's the weekly total in km?",
            f"Please convert my week's runs to kilometres, all added up: {written} miles.",
        ]
    )
    return text, Number(gold)


# --- list -------------------------------------------------------------------------------


@shape("list")
def euro_users_from_list(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in _countries() if c not in _STALE_CURRENCY and f.country(c)["currencies"]]
    euro = [c for c in pool if "EUR" in f.country(c)["currencies"]]
    other = [c for c in pool if c not in euro]
    n = r.choice([4, 5])
    k = r.choice(list(range(1, n)))
    chosen = r.sample(r.sample(euro, k) + r.sample(other, n - k), n)
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"Which of these countries pay with the euro: {names}?",
            f"I'm only bringing euros. In which of {names} can I use them as the local currency?",
            f"From {names}, name the ones whose official currency is the euro.",
        ]
    )
    return text, Items(
        tuple(country_name(f, c) for c in chosen if c in euro),
        tuple(country_name(f, c) for c in chosen if c not in euro),
    )


@shape("list")
def denser_than_reference(r: random.Random, f: Facts) -> Drawn:
    ref = r.choice(_countries())
    own = density(f, ref)
    pool = [c for c in _countries() if c != ref and apart([density(f, c), own], 0.2)]
    more = [c for c in pool if density(f, c) > own]
    fewer = [c for c in pool if density(f, c) < own]
    n = r.choice([4, 5])
    k = r.choice(list(range(1, n)))
    if len(more) < k or len(fewer) < n - k:
        return None
    inside = r.sample(more, k)
    chosen = r.sample(inside + r.sample(fewer, n - k), n)
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"Which of {names} are more densely populated than {the(ref)}?",
            f"Compared with {the(ref)}, which of these have more people per km²: {names}?",
            f"List the countries among {names} whose population density beats "
            f"{possessive_country(ref)}.",
        ]
    )
    return text, Items(
        tuple(country_name(f, c) for c in chosen if c in inside),
        tuple(country_name(f, c) for c in chosen if c not in inside),
    )
