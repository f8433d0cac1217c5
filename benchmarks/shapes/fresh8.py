"""An eighth fresh batch of the shapes suite: templates written after the prompts were frozen.

Written on 2026-12-04, after the prompts, examples and tools were frozen, by someone who read
neither the prompts nor the worked examples (nor the planner, the joiner, the grounding code,
the grammar, the replies, the compiled or ReAct modes, the built-in tools' EXAMPLES, any saved
result or eval output, or the history of the source), and who ran no model and no eval.  What
they read: common.py, scoring.py, __init__.py, tune.py, heldout.py and fresh.py to fresh7.py of
this package (for the format, and to stay off their shapes), answer_eval.py only to wire this
part in (and the names of the names suite's templates), tests/test_shapes_fresh7.py and
tests/shape_pins.py as models for the test, the built-in tools' signatures and docstrings, and
the fields of the country and city records.  Every template is a question shape that none of
tune.py, heldout.py, fresh.py to fresh7.py or the names suite has, two per category: the country
a capital belongs to, the population of a city named with its country where a bigger namesake
lies elsewhere, the capital of the one country that borders two others, the currency of the
biggest of three, which of two countries has more neighbours on the euro, where it is warmer
with one temperature in Celsius and the other in Fahrenheit, how many of a list of cities are
national capitals, how many of a list border another on it, whether a trip between two cities
crosses into another currency, whether two countries have a neighbour in common, how many years
of compound growth take a population to a round figure, how many times as far from the equator
one city is as another, a fuel price between litres and US gallons, a tyre pressure between bar
and psi, the capitals of the euro users among a list, and the biggest of a list in each of two
continents.  No prompt was ever tuned on them.  Golds come from the tools' own data through
`Facts`, and no question depends on the clock, on a disputed capital, on a territory counted as
a country, on a border that overseas land makes arguable, on a currency the data has out of
date, on whether a city is counted within its limits or with its suburbs, or on whether a
British city's country is the United Kingdom or one of its nations; no question asks for a
choice between values too close to call.

    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh8 --per-template 2
"""

from __future__ import annotations

import math
import random
import re

from .common import (
    CITIES,
    COUNTRIES,
    Drawn,
    Facts,
    Template,
    apart,
    area,
    capital_first,
    city_name,
    country_name,
    currency_name,
    listing,
    millions,
    only_currency,
    pop,
    possessive,
    registry,
    the,
)
from .fresh import _STALE_CURRENCY, _TERRITORIES, _capital, _distinct, _home
from .fresh2 import _CAPITALS_IN_DOUBT, _SAFE_MARGIN, _TWO_CONTINENTS
from .fresh3 import _CAPITAL_TITLE_IN_DOUBT
from .fresh4 import _NO_CAPITAL_QUESTION, _capitals
from .fresh5 import _ring
from .fresh7 import _cities, _named_capital
from .scoring import Choice, Count, Items, Number, YesNo, fold

TEMPLATES: list[Template] = []
shape = registry(TEMPLATES)

LITRES_PER_US_GALLON = 3.785411784
PSI_PER_BAR = 1e5 / 6894.757293168
# Countries whose currency in the data is out of date (Croatia's kuna, Bulgaria's lev) or whose
# euro is used without an agreement (Montenegro): no question turns on a neighbour among them.
_CURRENCY_IN_DOUBT = _STALE_CURRENCY | {"Croatia", "Montenegro"}
# Cities named with their country, where city_info's first pick of the bare name lies in
# another country: the country decides which city is meant.
_NAMESAKES = [
    ("Cordoba", "Spain"), ("Valencia", "Spain"), ("Hamilton", "New Zealand"),
    ("Kingston", "Canada"), ("London", "Canada"), ("San Jose", "Costa Rica"),
    ("Birmingham", "United States"), ("Toledo", "Spain"), ("Tripoli", "Lebanon"),
    ("Granada", "Nicaragua"), ("Cambridge", "United States"), ("Guadalajara", "Spain"),
    ("Barcelona", "Venezuela"), ("Cartagena", "Spain"), ("Alexandria", "United States"),
]  # fmt: skip
_OTHER_MATCH = re.compile(r", (?P<country>[^,]+) \(pop (?P<pop>\d+)\)$")
# How a question names a continent as an adjective; only where the data's region is the
# continent people mean (not the Americas, one region and two continents).
_ADJECTIVES = {"Europe": "European", "Asia": "Asian", "Africa": "African"}


def _countries() -> list[str]:
    return [c for c in COUNTRIES if c not in _TERRITORIES]


def _data_names(f: Facts, countries: set[str]) -> set[str]:
    """The names the data gives these countries (as neighbour lists spell them)."""
    return {str(f.country(c)["name"]) for c in countries}


def _borders(f: Facts, a: str, b: str) -> bool:
    return f.country(b)["name"] in f.country(a)["neighbours"]


# --- lookup -----------------------------------------------------------------------------


@shape("lookup")
def country_of_capital(r: random.Random, f: Facts) -> Drawn:
    # Not a capital named after its country (Mexico City), nor London (England's too).
    pool = [
        c
        for c in _capitals(f)
        if fold(c) not in fold(f.country(c)["capital"]) and c != "United Kingdom"
    ]
    c = r.choice(pool)
    capital = str(f.country(c)["capital"])
    text = r.choice(
        [
            f"Which country has {capital} as its capital?",
            f"{capital} is the capital of which country?",
            f"I just read a news story datelined {capital}. Which country's capital is that?",
        ]
    )
    return text, Choice(country_name(f, c))


@shape("lookup")
def namesake_city_population(r: random.Random, f: Facts) -> Drawn:
    name, country = r.choice(_NAMESAKES)
    first = f.city(name)
    meant = f.city(f"{name}, {country}")
    if not meant["country"] == f.country(country)["name"] != first["country"]:
        return None
    if first["country"] in _TERRITORIES:
        return None
    # No other city of that name in that country a reader might mean instead.
    for other in meant.get("other_matches", []):
        found = _OTHER_MATCH.search(other)
        if (
            found
            and found["country"] == meant["country"]
            and int(found["pop"]) > 0.25 * float(meant["population"])
        ):
            return None
    elsewhere = the(str(first["country"]))
    text = r.choice(
        [
            f"How many people live in {name}, {country}?",
            f"What is the population of {name} in {the(country)} (not the one in {elsewhere})?",
            f"I mean the {name} in {the(country)}, not the bigger one in {elsewhere}: how many "
            "inhabitants does it have?",
        ]
    )
    return text, Number(float(meant["population"]))


# --- chain ------------------------------------------------------------------------------


@shape("chain")
def capital_of_shared_neighbour(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 8)
    in_doubt = _data_names(f, _CAPITALS_IN_DOUBT | _CAPITAL_TITLE_IN_DOUBT)
    pairs = []
    for a, b in ((a, b) for a in sorted(ring) for b in sorted(ring) if a < b):
        shared = set(ring[a]) & set(ring[b])
        if len(shared) != 1:
            continue
        (middle,) = shared
        if middle not in in_doubt and f.country(middle)["capital"]:
            pairs.append((a, b, middle))
    a, b, middle = r.choice(pairs)
    if r.choice([True, False]):
        a, b = b, a
    text = r.choice(
        [
            f"Which city is the capital of the one country that borders both {the(a)} and "
            f"{the(b)}?",
            f"Only one country shares a border with both {the(a)} and {the(b)}. What is its "
            "capital?",
            f"There is a single country that is a neighbour of {the(a)} and of {the(b)}. Name "
            "its capital city.",
        ]
    )
    others = sorted({n for n in ring[a] + ring[b] if n != middle and f.country(n)["capital"]})
    return text, Choice(_capital(f, middle), tuple(_capital(f, n) for n in others))


@shape("chain")
def currency_of_largest_of_three(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in _countries() if c not in _STALE_CURRENCY and only_currency(f, c)]
    chosen = r.sample(pool, 3)
    codes = {c: str(only_currency(f, c)) for c in chosen}
    # Three currencies, no two an answer may call by one name (the Swedish and Icelandic krona).
    spellings = [set(currency_name(code).folded()) for code in codes.values()]
    if any(a & b for i, a in enumerate(spellings) for b in spellings[i + 1 :]):
        return None
    by_area = r.choice([True, False])
    size = {c: area(f, c) if by_area else float(pop(f, c)) for c in chosen}
    ranked = sorted(chosen, key=size.__getitem__, reverse=True)
    if not apart([size[ranked[0]], size[ranked[1]]], 0.1 if by_area else _SAFE_MARGIN):
        return None
    names = listing([the(c) for c in chosen])
    if by_area:
        wordings = [
            f"Of {names}, the largest by area uses which currency?",
            f"Which currency is used in whichever of {names} covers the most land?",
            f"Take the biggest of {names} in area. What money do people pay with there?",
        ]
    else:
        wordings = [
            f"Of {names}, the most populous uses which currency?",
            f"Which currency is used in whichever of {names} has the most people?",
            f"Take the one of {names} with the largest population. What money do people pay "
            "with there?",
        ]
    return r.choice(wordings), Choice(
        currency_name(codes[ranked[0]]), tuple(currency_name(codes[c]) for c in ranked[1:])
    )


# --- comparison -------------------------------------------------------------------------


@shape("comparison")
def more_euro_neighbours(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 9)
    in_doubt = _data_names(f, _CURRENCY_IN_DOUBT)
    fits = {
        c: sum("EUR" in f.country(n)["currencies"] for n in ns)
        for c, ns in sorted(ring.items())
        if c not in _CURRENCY_IN_DOUBT and not set(ns) & in_doubt
    }
    # Both with a neighbour on the euro, so that neither is out at a glance.
    a, b = r.sample(sorted(c for c, n in fits.items() if n), 2)
    if fits[a] == fits[b]:
        return None
    text = r.choice(
        [
            f"Which has more neighbours that use the euro: {the(a)} or {the(b)}?",
            f"Counting only bordering countries that pay in euros, does {the(a)} or {the(b)} "
            "have more of them?",
            f"{capital_first(the(a))} or {the(b)}: which is bordered by more countries using "
            "the euro?",
        ]
    )
    gold, rival = (a, b) if fits[a] > fits[b] else (b, a)
    return text, Choice(country_name(f, gold), (country_name(f, rival),))


@shape("comparison")
def warmer_across_scales(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(CITIES, 2)
    celsius = r.choice([-8, -3, 2, 7, 12, 16, 19, 23, 26, 29, 32, 36])
    as_f = celsius * 1.8 + 32
    # Plainly apart once converted (4 °F or more), yet close enough that the scales must be
    # converted to tell.
    fahrenheit = round(as_f + r.choice([-18, -14, -11, -8, -6, -5, 5, 6, 8, 11, 14, 18]))
    if not 4 <= abs(as_f - fahrenheit) <= 20:
        return None
    warmer = r.choice([True, False])
    a_wins = (as_f > fahrenheit) is warmer
    if warmer:
        wordings = [
            f"Today's forecast: {celsius} °C in {a} and {fahrenheit} °F in {b}. Where is it "
            "warmer?",
            f"Weather check: {a} reports {celsius}°C, {b} reports {fahrenheit}°F. Which city "
            "is hotter?",
            f"Which is warmer today, {a} at {celsius} degrees Celsius or {b} at {fahrenheit} "
            "degrees Fahrenheit?",
        ]
    else:
        wordings = [
            f"Today's forecast: {celsius} °C in {a} and {fahrenheit} °F in {b}. Where is it "
            "colder?",
            f"Weather check: {a} reports {celsius}°C, {b} reports {fahrenheit}°F. Which city "
            "is cooler?",
            f"Which is colder today, {a} at {celsius} degrees Celsius or {b} at {fahrenheit} "
            "degrees Fahrenheit?",
        ]
    gold, rival = (a, b) if a_wins else (b, a)
    return r.choice(wordings), Choice(city_name(f, gold), (city_name(f, rival),))


# --- count ------------------------------------------------------------------------------


@shape("count")
def count_national_capitals(r: random.Random, f: Facts) -> Drawn:
    capitals = sorted(str(f.country(c)["capital"]) for c in _capitals(f))
    in_doubt = _data_names(f, _NO_CAPITAL_QUESTION)
    others = [
        city
        for city in _cities(f)
        if _home(f, city) not in in_doubt
        and f.country(_home(f, city))["capital"]
        and f.city(city)["name"] != f.country(_home(f, city))["capital"]
    ]
    n = r.choice([4, 5])
    k = r.choice(list(range(n + 1)))
    chosen = r.sample(r.sample(capitals, k) + r.sample(others, n - k), n)  # shuffled
    names = listing(chosen)
    text = r.choice(
        [
            f"How many of these cities are national capitals: {names}?",
            f"Of {names}, how many are the capital city of their country?",
            f"Counting only cities that are the capital of a country, how many are on this "
            f"list: {names}?",
        ]
    )
    return text, Count(k)


@shape("count")
def count_with_neighbour_on_list(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 1, 10)
    region = r.choice(["Europe", "Europe", "Americas", "Africa", "Asia"])
    pool = [c for c in sorted(ring) if f.country(c)["region"] == region]
    if len(pool) < 5:
        return None
    want = r.choice([0, 2, 3, 4])
    for _ in range(200):
        chosen = r.sample(pool, 5)
        gold = sum(any(_borders(f, c, o) for o in chosen if o != c) for c in chosen)
        if min(gold, 4) == want:
            break
    else:
        return None
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"How many of {names} share a border with at least one of the others on this list?",
            f"Looking at {names}: how many of them have a neighbour among the rest?",
            f"Of {names}, count the countries that border at least one other country in the list.",
        ]
    )
    return text, Count(gold)


# --- yesno ------------------------------------------------------------------------------


@shape("yesno")
def change_money_between_cities_yn(r: random.Random, f: Facts) -> Drawn:
    in_doubt = _data_names(f, _CURRENCY_IN_DOUBT)
    code = {
        city: str(only_currency(f, _home(f, city)))
        for city in _cities(f)
        if _home(f, city) not in in_doubt and only_currency(f, _home(f, city))
    }
    a = r.choice(sorted(code))
    home = _home(f, a)
    differ = r.choice([True, False])
    pool = [c for c in sorted(code) if _home(f, c) != home and (code[c] != code[a]) is differ]
    # A city across a border where there is one: Lyon and Geneva, not Lyon and Osaka.
    near = [c for c in pool if _home(f, c) in f.country(home)["neighbours"]]
    if not pool:
        return None
    b = r.choice(near or pool)
    subjects = (city_name(f, a), city_name(f, b))
    if r.choice([True, False]):
        text = r.choice(
            [
                f"I'm taking the train from {a} to {b}. Will I need a different currency there?",
                f"Travelling from {a} to {b}: do I have to change money?",
            ]
        )
        verbs: tuple[str, ...] = ("different currenc", "change money", "change currenc")
        return text, YesNo(differ, subjects, verbs)
    text = r.choice(
        [
            f"Can I pay with the same cash in {a} and in {b}?",
            f"Are {a} and {b} on the same currency?",
        ]
    )
    return text, YesNo(not differ, subjects, ("same currenc", "same cash", "same money"))


@shape("yesno")
def neighbour_in_common_yn(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 1, 10)
    yes = r.choice([True, False])
    pairs = [
        (a, b)
        for a in sorted(ring)
        for b in sorted(ring)
        if a < b
        and f.country(a)["region"] == f.country(b)["region"]
        and not _borders(f, a, b)
        and bool(set(ring[a]) & set(ring[b])) is yes
    ]
    a, b = r.choice(pairs)
    if r.choice([True, False]):
        a, b = b, a
    text = r.choice(
        [
            f"Is there a country that borders both {the(a)} and {the(b)}?",
            f"Do {the(a)} and {the(b)} have a neighbour in common?",
            f"{capital_first(the(a))} and {the(b)} do not touch. Is there any country that "
            "shares a border with each of them?",
        ]
    )
    subjects = (country_name(f, a), country_name(f, b))
    return text, YesNo(yes, subjects, ("border", "neighbo", "in common", "through"))


# --- relative ---------------------------------------------------------------------------


@shape("relative")
def years_to_reach_mark(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(_countries())
    now = float(pop(f, c))
    pct = r.choice([0.5, 1.0, 1.5, 2.0, 2.5, 3.0])
    marks = [m * 1e6 for m in (1, 2, 5, 10, 20, 25, 40, 50, 75, 100, 150, 200, 300, 500)]
    fits = [m for m in marks if 1.15 * now < m < 2.5 * now]
    if not fits:
        return None
    mark = r.choice(fits)
    years = math.log(mark / now) / math.log(1 + pct / 100)
    if not 5 <= years <= 80:
        return None
    # Not where growth without compounding could pass for the gold.
    if not _distinct(years, [(mark / now - 1) / (pct / 100)], 0.05):
        return None
    text = r.choice(
        [
            f"If {possessive(c)} population grows {pct:g}% a year, compounded, how many years "
            f"until it reaches {millions(mark)}?",
            f"At a steady growth of {pct:g} percent per year, how long would it take "
            f"{the(c)} to hit {millions(mark)} people?",
            f"How many years of {pct:g}% annual growth would it take for {possessive(c)} "
            f"population to get to {millions(mark)}?",
        ]
    )
    # The whole years it takes to pass the mark are right too.
    return text, Number(years, (float(math.ceil(years)),))


@shape("relative")
def times_further_from_equator(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(CITIES, 2)
    far, near = abs(float(f.city(a)["latitude"])), abs(float(f.city(b)["latitude"]))
    if near < 8:
        return None
    ratio = far / near
    if not 1.3 <= ratio <= 6 or not _distinct(ratio, [far, near, far - near, near / far], 0.05):
        return None
    text = r.choice(
        [
            f"Measured along the meridians, how many times farther from the equator is {a} "
            f"than {b}?",
            f"How many times as far from the equator as {b} is {a}?",
            f"{a} and {b}: the first is how many times as far from the equator as the second?",
        ]
    )
    return text, Number(ratio)


# --- units ------------------------------------------------------------------------------


@shape("units")
def fuel_price_per_gallon(r: random.Random, f: Facts) -> Drawn:
    if r.choice([True, False]):
        pool = [
            c
            for c in _countries()
            if c not in _STALE_CURRENCY and f.country(c)["currencies"] == ["EUR"]
        ]
        c = r.choice(pool)
        price = r.choice([1.59, 1.65, 1.72, 1.79, 1.85, 1.92, 1.99, 2.05])
        gold = price * LITRES_PER_US_GALLON
        wordings = [
            f"Petrol costs €{price:.2f} a litre in {the(c)}. What is that per US gallon?",
            f"Filling up in {the(c)} at {price:.2f} euros per liter: how much is that per US "
            "gallon?",
            f"Convert a fuel price of €{price:.2f}/L (as in {the(c)}) to euros per US gallon.",
        ]
    else:
        city = r.choice([c for c in CITIES if _home(f, c) == "United States"])
        price = r.choice([2.89, 3.09, 3.25, 3.45, 3.69, 3.89, 4.15, 4.59])
        gold = price / LITRES_PER_US_GALLON
        wordings = [
            f"Gas costs ${price:.2f} a gallon in {city}. How much is that per litre?",
            f"I paid ${price:.2f} per US gallon for fuel in {city}. What's the price per liter?",
            f"Convert a gas price of ${price:.2f}/gal ({city}) to dollars per litre.",
        ]
    if not _distinct(gold, [price], 0.05):
        return None
    return r.choice(wordings), Number(gold)


@shape("units")
def tyre_pressure(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    if r.choice([True, False]):
        bar = r.choice([1.8, 2.0, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.8, 3.0])
        gold, given = bar * PSI_PER_BAR, bar
        wordings = [
            f"The manual of my rental car in {city} says {bar:g} bar for the tyres. What is "
            "that in psi?",
            f"Convert a tire pressure of {bar:g} bar to psi.",
            f"My tyres should be at {bar:g} bar, but the pump only shows psi. What should I set?",
        ]
    else:
        psi = r.choice([26, 28, 30, 32, 33, 35, 36, 38, 40, 44])
        gold, given = psi / PSI_PER_BAR, float(psi)
        wordings = [
            f"My car's door sticker says {psi} psi. The air pump at a station in {city} reads "
            "in bar. What should I set it to?",
            f"Convert a tire pressure of {psi} psi to bar.",
            f"How many bar is {psi} psi of tyre pressure?",
        ]
    if not _distinct(gold, [given], 0.05):
        return None
    return r.choice(wordings), Number(gold)


# --- list -------------------------------------------------------------------------------


@shape("list")
def capitals_of_euro_users(r: random.Random, f: Facts) -> Drawn:
    pool = [
        c
        for c in _countries()
        if c not in _STALE_CURRENCY and f.country(c)["currencies"] and _named_capital(f, c)
    ]
    euro = [c for c in pool if "EUR" in f.country(c)["currencies"]]
    other = [c for c in pool if c not in euro]
    n = r.choice([4, 5])
    k = r.choice(list(range(1, n)))
    inside = r.sample(euro, k)
    chosen = r.sample(inside + r.sample(other, n - k), n)  # shuffled
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"I want to visit the capital of every country among {names} that uses the euro. "
            "Which cities are those?",
            f"Among {names}, take the countries that pay in euros. What are their capital cities?",
            f"List the capitals of the euro countries among {names}.",
        ]
    )
    return text, Items(
        tuple(_capital(f, c) for c in chosen if c in inside),
        tuple(_capital(f, c) for c in chosen if c not in inside),
    )


@shape("list")
def largest_per_continent(r: random.Random, f: Facts) -> Drawn:
    first, second = r.sample(sorted(_ADJECTIVES), 2)
    by_area = r.choice([True, False])
    margin = 0.1 if by_area else _SAFE_MARGIN
    groups = {}
    for region in (first, second):
        inside = [
            c for c in _countries() if c not in _TWO_CONTINENTS and f.country(c)["region"] == region
        ]
        groups[region] = r.sample(inside, r.choice([2, 3]))
    size = {c: area(f, c) if by_area else float(pop(f, c)) for cs in groups.values() for c in cs}
    tops = []
    for cs in groups.values():
        ranked = sorted(cs, key=size.__getitem__, reverse=True)
        if not apart([size[ranked[0]], size[ranked[1]]], margin):
            return None
        tops.append(ranked[0])
    chosen = r.sample([c for cs in groups.values() for c in cs], len(size))
    names = listing([the(c) for c in chosen])
    one, two = _ADJECTIVES[first], _ADJECTIVES[second]
    if by_area:
        wordings = [
            f"Among {names}, which is the largest {one} country and which the largest {two} "
            "one, by area?",
            f"From this list, name the biggest {one} country and the biggest {two} country "
            f"by area: {names}.",
        ]
    else:
        wordings = [
            f"Among {names}, which is the most populous {one} country and which the most "
            f"populous {two} one?",
            f"From this list, name the {one} country with the most people and the {two} "
            f"country with the most people: {names}.",
        ]
    return r.choice(wordings), Items(
        tuple(country_name(f, c) for c in tops),
        tuple(country_name(f, c) for c in chosen if c not in tops),
    )
