"""A fresh batch of the shapes suite: templates written after the prompts were frozen.

Written on 2026-12-02, after the prompts, examples and tools were frozen (issue 26), by someone
who had read neither the held-out half (heldout.py) nor the prompts, the planner or the worked
examples: only common.py, scoring.py, tune.py (for the format, and to stay off its shapes), the
names suite's templates and the built-in tools' signatures and docstrings.  No prompt was ever
tuned on these templates, so they measure generalisation a second time, independently of the
held-out half, which its authors wrote before the tuning.  Two templates per category, each a
shape neither tune.py nor the names suite has; golds come from the tools' own data through
`Facts`, as in the other halves, and every question avoids answers that depend on the clock or
on which source one trusts (no time zones, no disputed capitals, no stale currencies).

    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh --per-template 2
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from .common import (
    BORDERED,
    CITIES,
    COUNTRIES,
    SQ_MI_PER_KM2,
    Drawn,
    Facts,
    Template,
    area,
    capital_city,
    city_name,
    country_name,
    currency_name,
    density,
    listing,
    pop,
    possessive,
    registry,
    the,
    threshold,
)
from .scoring import Choice, Count, Items, Name, Number, YesNo

TEMPLATES: list[Template] = []
shape = registry(TEMPLATES)

LB_PER_KG = 1 / 0.45359237

# Countries whose capital people argue about (Pretoria, Cape Town or Bloemfontein; Sucre or
# La Paz; Dodoma or Dar es Salaam): no question asks for theirs.
_DISPUTED_CAPITALS = {"South Africa", "Bolivia", "Tanzania"}
# Other spellings of capitals an answer may use.
_CAPITAL_SPELLINGS = {"Kyiv": ("Kiev",), "Bern": ("Berne",), "Washington D.C.": ("Washington",)}
# Neighbours in the data that are territories, not countries: no question sums the people
# "bordering" a country through one.
_TERRITORIES = {"French Guiana", "Gibraltar", "Hong Kong", "Macau", "Western Sahara"}
# Countries whose borders depend on who is asked (the data has no Palestinian territories).
_CONTESTED = {"Israel"}
# Bulgaria adopted the euro on 2026-01-01 and the data still has the lev: no euro question on it.
_STALE_CURRENCY = {"Bulgaria"}


def _home(f: Facts, city: str) -> str:
    """The country record's name of the country a city is in ("Netherlands", "Czech Republic")."""
    return str(f.country(f.city(city)["country"])["name"])


def _capital(f: Facts, country: str) -> Name:
    """The country's capital with the spellings an answer may use (city_info's too)."""
    capital = str(f.country(country)["capital"])
    record = capital_city(f, country)
    spellings = (*_CAPITAL_SPELLINGS.get(capital, ()), *([record["name"]] if record else []))
    return Name(capital, tuple(s for s in dict.fromkeys(spellings) if s != capital))


def _distinct(value: float, others: Sequence[float], margin: float = 0.03) -> bool:
    """Whether no other number an answer may well state is within `margin` of the gold, so
    stating it cannot pass for the gold."""
    return all(abs(value - o) > margin * abs(value) for o in others)


# --- lookup -----------------------------------------------------------------------------


@shape("lookup")
def country_area_km2(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(COUNTRIES)
    text = r.choice(
        [
            f"How big is {the(c)} in square kilometres?",
            f"What's the total area of {the(c)}, in km²?",
            f"How many square kilometers does {the(c)} cover?",
            f"I need the surface area of {the(c)} (km2) for a school project.",
        ]
    )
    return text, Number(area(f, c))


@shape("lookup")
def country_of_city(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    text = r.choice(
        [
            f"Which country is {city} in?",
            f"In what country would I find the city of {city}?",
            f"My friend just moved to {city}. What country is that?",
            f"{city} belongs to which country?",
        ]
    )
    return text, Choice(country_name(f, _home(f, city)))


# --- chain ------------------------------------------------------------------------------


@shape("chain")
def capital_of_home_country(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    home = _home(f, city)
    if home in _DISPUTED_CAPITALS or f.country(home)["capital"] in (None, city):
        return None
    text = r.choice(
        [
            f"What's the capital of the country that {city} is in?",
            f"I'm visiting {city}. What is the capital city of that country?",
            f"{city} is in a country whose capital is... what?",
            f"Name the capital of the country where {city} is located.",
        ]
    )
    return text, Choice(_capital(f, home))


@shape("chain")
def home_country_density(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    home = _home(f, city)
    text = r.choice(
        [
            f"What is the population density of the country {city} is in, in people per km²?",
            f"How many people per square kilometre live in the country where {city} is?",
            f"Take the country {city} lies in: how densely populated is it (people per sq km)?",
        ]
    )
    return text, Number(density(f, home))


# --- comparison -------------------------------------------------------------------------


@shape("comparison")
def nearer_the_equator(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(CITIES, 2)
    lat = {c: abs(float(f.city(c)["latitude"])) for c in (a, b)}
    if abs(lat[a] - lat[b]) < 2:
        return None
    closer = r.choice([True, False])
    gold = min(lat, key=lat.__getitem__) if closer else max(lat, key=lat.__getitem__)
    if closer:
        wordings = [
            f"Which is closer to the equator, {a} or {b}?",
            f"Of {a} and {b}, which city lies nearer the equator?",
            f"{a} or {b}: which one is nearer to the equator?",
        ]
    else:
        wordings = [
            f"Which is farther from the equator, {a} or {b}?",
            f"Of {a} and {b}, which city is further away from the equator?",
        ]
    return r.choice(wordings), Choice(city_name(f, gold), (city_name(f, a if gold == b else b),))


@shape("comparison")
def bigger_capital(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in COUNTRIES if c not in _DISPUTED_CAPITALS and capital_city(f, c)]
    a, b = r.sample(pool, 2)
    people = {}
    for c in (a, b):
        record = capital_city(f, c)
        assert record is not None
        people[c] = float(record["population"])
    if not max(people.values()) > 1.1 * min(people.values()):
        return None
    gold = max(people, key=people.__getitem__)
    text = r.choice(
        [
            f"Which country has the more populous capital, {the(a)} or {the(b)}?",
            f"Whose capital city has more inhabitants: {possessive(a)} or {possessive(b)}?",
            f"Compare the capitals of {the(a)} and {the(b)}: which country's capital is bigger "
            "by population?",
        ]
    )

    def named(c: str) -> Name:  # the country, or its capital standing for it
        country, capital = country_name(f, c), _capital(f, c)
        return Name(country.text, (*country.aliases, capital.text, *capital.aliases))

    return text, Choice(named(gold), (named(a if gold == b else b),))


# --- count ------------------------------------------------------------------------------


@shape("count")
def count_southern_cities(r: random.Random, f: Facts) -> Drawn:
    south = [c for c in CITIES if float(f.city(c)["latitude"]) < -1]
    north = [c for c in CITIES if float(f.city(c)["latitude"]) > 1]
    k = r.choice([0, 1, 2, 3])
    n = r.choice([4, 5])
    chosen = r.sample(r.sample(south, k) + r.sample(north, n - k), n)  # shuffled
    names = listing(chosen)
    text = r.choice(
        [
            f"How many of these cities are in the southern hemisphere: {names}?",
            f"Of {names}, how many lie south of the equator?",
            f"Count the cities below the equator among {names}.",
        ]
    )
    return text, Count(k)


@shape("count")
def count_denser_than(r: random.Random, f: Facts) -> Drawn:
    reference, *chosen = r.sample(COUNTRIES, 5)
    bar = density(f, reference)
    values = [density(f, c) for c in chosen]
    if any(abs(v - bar) <= 0.1 * bar for v in values):  # no near tie with the reference
        return None
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"How many of {names} are more densely populated than {the(reference)}?",
            f"Among {names}, how many have a higher population density than {the(reference)}?",
            f"Compared with {the(reference)}, how many of these countries pack more people "
            f"into each square kilometre: {names}?",
        ]
    )
    return text, Count(sum(v > bar for v in values))


# --- yesno ------------------------------------------------------------------------------


@shape("yesno")
def same_country_yn(r: random.Random, f: Facts) -> Drawn:
    a = r.choice(CITIES)
    home = _home(f, a)
    same = r.choice([True, False])
    if same:
        pool = [c for c in CITIES if c != a and _home(f, c) == home]
    else:  # a city of a neighbouring country where there is one: Lyon and Geneva
        neighbours = set(f.country(home)["neighbours"])
        pool = [c for c in CITIES if _home(f, c) in neighbours] or [
            c for c in CITIES if _home(f, c) != home
        ]
    if not pool:
        return None
    b = r.choice(pool)
    text = r.choice(
        [
            f"Are {a} and {b} in the same country?",
            f"Is {a} in the same country as {b}?",
            f"Do {a} and {b} belong to the same country?",
        ]
    )
    subjects = (city_name(f, a), city_name(f, b))
    verbs = ("same country", "both in", "both located", "both cities in", "both part of")
    return text, YesNo(same, subjects, verbs)


@shape("yesno")
def uses_euro_yn(r: random.Random, f: Facts) -> Drawn:
    europe = [
        c for c in COUNTRIES if f.country(c)["region"] == "Europe" and c not in _STALE_CURRENCY
    ]
    on_euro = r.choice([True, False])
    c = r.choice([c for c in europe if ("EUR" in f.country(c)["currencies"]) is on_euro])
    text = r.choice(
        [
            f"Does {the(c)} use the euro?",
            f"Is the euro the official currency of {the(c)}?",
            f"Has {the(c)} adopted the euro?",
            f"Heading to {the(c)} soon: is their currency the euro?",
        ]
    )
    subjects = (country_name(f, c), currency_name("EUR"))
    verbs = ("use", "currency", "adopt", "pay", "on the euro")
    return text, YesNo(on_euro, subjects, verbs)


# --- relative ---------------------------------------------------------------------------


@shape("relative")
def city_to_capital_ratio(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    home = _home(f, city)
    record = capital_city(f, home)
    if home in _DISPUTED_CAPITALS or record is None or record["name"] == f.city(city)["name"]:
        return None
    ratio = float(f.city(city)["population"]) / float(record["population"])
    # Not where the ratio and its inverse or its percentage could be mistaken for each other.
    if not _distinct(ratio, [1 / ratio, 100 * ratio, 1.0], 0.1):
        return None
    text = r.choice(
        [
            f"What is the ratio of {city}'s population to that of its country's capital?",
            f"{city}'s population is what fraction of the population of its national capital?",
            f"Divide the number of people living in {city} by the number living in the "
            "capital of its country. What do you get?",
        ]
    )
    return text, Number(ratio)


@shape("relative")
def share_of_neighbourhood(r: random.Random, f: Facts) -> Drawn:
    c = r.choice([c for c in BORDERED if c not in _CONTESTED])
    neighbours = f.country(c)["neighbours"]
    people = [f.country(n)["population"] for n in neighbours]
    if not people or any(p is None for p in people) or set(neighbours) & _TERRITORIES:
        return None
    share = pop(f, c) / (pop(f, c) + sum(int(p) for p in people))
    if not _distinct(share, [1 - share], 0.1):
        return None
    text = r.choice(
        [
            f"What share of the combined population of {the(c)} and all its neighbouring "
            f"countries lives in {the(c)}?",
            f"Add up the populations of {the(c)} and every country bordering it. What "
            f"percentage of that total lives in {the(c)}?",
            f"Of everyone living in {the(c)} or in a country that borders it, what percent "
            f"live in {the(c)} itself?",
        ]
    )
    return text, Number(100 * share, alternates=(share,))


# --- units ------------------------------------------------------------------------------


@shape("units")
def luggage_kg_to_lb(r: random.Random, f: Facts) -> Drawn:
    kg = r.choice([7, 8, 10, 12, 15, 20, 23, 25, 32])
    text = r.choice(
        [
            f"My suitcase weighs {kg} kg. How many pounds is that?",
            f"The airline allows {kg} kilograms of checked luggage. What is that in lbs?",
            f"Convert {kg} kg to pounds, please.",
            f"How heavy is a {kg} kilogram bag in pounds?",
        ]
    )
    return text, Number(kg * LB_PER_KG)


@shape("units")
def area_gap_square_miles(r: random.Random, f: Facts) -> Drawn:
    small, big = sorted(r.sample(COUNTRIES, 2), key=lambda c: area(f, c))
    if not 0.1 < area(f, small) / area(f, big) < 0.8:
        return None
    gap = (area(f, big) - area(f, small)) * SQ_MI_PER_KM2
    stated = [area(f, small), area(f, big), area(f, big) - area(f, small)]
    if not _distinct(gap, [*stated, *(a * SQ_MI_PER_KM2 for a in stated[:2])]):
        return None
    text = r.choice(
        [
            f"How many square miles larger is {the(big)} than {the(small)}?",
            f"What's the difference in area between {the(big)} and {the(small)}, in square miles?",
            f"By how many sq mi does {possessive(big)} area exceed {possessive(small)}?",
        ]
    )
    return text, Number(gap)


# --- list -------------------------------------------------------------------------------


@shape("list")
def capitals_over(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in COUNTRIES if c not in _DISPUTED_CAPITALS and capital_city(f, c)]
    chosen = r.sample(pool, r.choice([4, 5]))
    people = []
    for c in chosen:
        record = capital_city(f, c)
        assert record is not None
        people.append(float(record["population"]))
    limits = {1e6: "a million", 2e6: "2 million", 3e6: "3 million", 5e6: "5 million"}
    limit = threshold(r, people, list(limits), margin=0.1)
    if limit is None:
        return None
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"In which of these countries does the capital have more than {limits[limit]} "
            f"inhabitants: {names}?",
            f"Of {names}, which have a capital city of over {limits[limit]} people?",
            f"Which countries among {names} have capitals with a population above {limits[limit]}?",
        ]
    )
    big = [c for c, p in zip(chosen, people, strict=True) if p > limit]
    small = [c for c in chosen if c not in big]
    return text, Items(
        tuple(country_name(f, c) for c in big), tuple(country_name(f, c) for c in small)
    )


@shape("list")
def cities_bigger_than(r: random.Random, f: Facts) -> Drawn:
    reference, *chosen = r.sample(CITIES, 5)
    bar = float(f.city(reference)["population"])
    people = {c: float(f.city(c)["population"]) for c in chosen}
    if any(abs(p - bar) <= 0.1 * bar for p in people.values()):  # no near tie
        return None
    bigger = [c for c in chosen if people[c] > bar]
    if not 0 < len(bigger) < len(chosen):
        return None
    names = listing(chosen)
    text = r.choice(
        [
            f"Which of these cities have more inhabitants than {reference}: {names}?",
            f"Of {names}, which are more populous than {reference}?",
            f"List the cities among {names} that have a bigger population than {reference}.",
        ]
    )
    smaller = [c for c in chosen if c not in bigger]
    return text, Items(
        tuple(city_name(f, c) for c in bigger), tuple(city_name(f, c) for c in smaller)
    )
