"""A third fresh batch of the shapes suite: templates written after the prompts were frozen.

Written on 2026-12-03, after the prompts, examples and tools were frozen, by someone who read
neither the prompts nor the worked examples (nor the planner, the joiner, the grounding code, the
grammar, the replies, the compiled or ReAct modes, the built-in tools' EXAMPLES or any saved
result), and who ran no model.  What they read: common.py, scoring.py, __init__.py, tune.py,
heldout.py, fresh.py and fresh2.py of this package (for the format, and to stay off their
shapes), answer_eval.py only to wire this part in (and the names of the names suite's
templates, to stay off those too), tests/test_shapes_fresh2.py and tests/shape_pins.py as
models for the test, the built-in tools' signatures and docstrings, and the fields of the
country and city records.  Every template is a question shape that none of tune.py,
heldout.py, fresh.py, fresh2.py or the names suite has, two per category: exclusions ("besides
English"), a country's only neighbour, a city's continent, closeness to a reference, a count
over a list against a reference's neighbours, a count under two conditions at once, "is X the
capital", "bigger than these combined", largest over smallest, the density of a merger,
temperature differences and travel times across unit systems, the top two of five, and which
of a list has a language official.  No prompt was ever tuned on them.  Golds come from the
tools' own data through `Facts`, and no question depends on the clock, on a disputed capital,
on a territory counted as a country, on a border that overseas land or a recent treaty makes
arguable, or on a currency the data has out of date; no question asks for a choice between
values too close to call.

    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh3 --per-template 2
"""

from __future__ import annotations

import math
import random

from .common import (
    BORDERED,
    CITIES,
    COUNTRIES,
    MONOLINGUAL,
    MULTILINGUAL,
    REGIONS,
    Drawn,
    Facts,
    Template,
    apart,
    area,
    capital_city,
    capital_first,
    city_name,
    country_name,
    density,
    listing,
    pop,
    possessive,
    region_name,
    registry,
    the,
)
from .fresh import _CONTESTED, _TERRITORIES, _capital, _distinct, _home
from .fresh2 import (
    _CAPITALS_IN_DOUBT,
    _KNOWN_LANGUAGES,
    _SAFE_MARGIN,
    _TWO_CONTINENTS,
    _UNSETTLED_LANGUAGE,
)
from .scoring import Choice, Count, Items, Name, Number, YesNo

TEMPLATES: list[Template] = []
shape = registry(TEMPLATES)

KM_PER_MI = 1.609344
# Countries with a whole record, as the questions name them.
_WHOLE = sorted(set(COUNTRIES) | set(BORDERED) | set(MULTILINGUAL) | set(MONOLINGUAL))
# Beyond fresh2's: Argentina has no official language in law (Guarani is one province's),
# Kazakhstan's Russian is "used officially" beside the state language, and Andorra's one
# official language is Catalan (the data lists four).
_LANGUAGE_IN_DOUBT = _UNSETTLED_LANGUAGE | {"Argentina", "Kazakhstan", "Andorra"}
# Other names an answer may give a language.
_LANGUAGE_SPELLINGS = {
    "Swahili": ("Kiswahili",),
    "Irish": ("Irish Gaelic", "Gaelic"),
    "Belarusian": ("Belarusan", "Byelorussian"),
}
# Pairs whose border depends on what counts: overseas land (French Guiana, Sint Maarten,
# Gibraltar, the Cypriot bases, Ceuta and Melilla), Hans Island (Canada and Denmark since
# 2022), Kashmir (India and Afghanistan).
_BORDER_IN_DOUBT = {
    frozenset(p)
    for p in [
        ("France", "Brazil"), ("France", "Suriname"), ("France", "Netherlands"),
        ("United Kingdom", "Spain"), ("United Kingdom", "Cyprus"), ("Spain", "Morocco"),
        ("Canada", "Denmark"), ("India", "Afghanistan"),
    ]
}  # fmt: skip
# Countries whose number of neighbours depends on the same things.
_COUNT_IN_DOUBT = {c for pair in _BORDER_IN_DOUBT for c in pair} | _CONTESTED | {"China"}
# Countries with one land neighbour, a country (not Canada or Denmark: Hans Island).
_ONE_NEIGHBOUR = [
    "Portugal", "Ireland", "South Korea", "Haiti", "Dominican Republic", "Lesotho", "Gambia",
    "Qatar", "Brunei", "Monaco", "San Marino", "East Timor", "Papua New Guinea",
]  # fmt: skip
_THE_TOO = {"Dominican Republic", "Gambia"}
# Capitals people argue about beyond fresh2's: Amsterdam or The Hague, and Bern, which the
# Swiss call the federal city.  (A city of theirs that is no capital is still asked about.)
_CAPITAL_TITLE_IN_DOUBT = {"Netherlands", "Switzerland"}


def _the(country: str) -> str:
    return f"the {country}" if country in _THE_TOO else the(country)


def _clean_neighbours(f: Facts, c: str) -> list[str]:
    """`c`'s neighbours with whole records, none a territory, none across a border in doubt."""
    return [
        n
        for n in f.country(c)["neighbours"]
        if n in _WHOLE
        and n not in _TERRITORIES | _CONTESTED
        and frozenset((c, n)) not in _BORDER_IN_DOUBT
    ]


def _continent(f: Facts, city: str) -> Name:
    """A city's region, as an answer may name its continent ("South America", "Australia")."""
    home = _home(f, city)
    region = str(f.country(home)["region"])
    name = region_name(region)
    extra: tuple[str, ...] = ()
    if region == "Oceania":
        extra = ("Australasia", *(("Australia",) if home == "Australia" else ()))
    return Name(name.text, (*name.aliases, *extra))


def _language(language: str) -> Name:
    return Name(language, _LANGUAGE_SPELLINGS.get(language, ()))


# --- lookup -----------------------------------------------------------------------------


@shape("lookup")
def other_official_language(r: random.Random, f: Facts) -> Drawn:
    pool = [
        c for c in _WHOLE if c not in _LANGUAGE_IN_DOUBT and len(f.country(c)["languages"]) == 2
    ]
    c = r.choice(pool)
    given = r.choice(f.country(c)["languages"])
    (other,) = [x for x in f.country(c)["languages"] if x != given]
    text = r.choice(
        [
            f"Besides {given}, what is the other official language of {the(c)}?",
            f"{capital_first(the(c))} has two official languages. One is {given}; what is "
            "the other?",
            f"Apart from {given}, which language is official in {the(c)}?",
            f"I know {given} is official in {the(c)}. Which other language has that status there?",
        ]
    )
    # No rival: an answer may well name the given language first ("Besides English, ...").
    return text, Choice(_language(other))


@shape("lookup")
def only_neighbour(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(_ONE_NEIGHBOUR)
    neighbours = f.country(c)["neighbours"]
    if len(neighbours) != 1 or neighbours[0] in _TERRITORIES:
        return None
    text = r.choice(
        [
            f"Which is the only country that shares a land border with {_the(c)}?",
            f"{capital_first(_the(c))} has just one neighbour by land. Which country is it?",
            f"What's the one country {_the(c)} borders on land?",
        ]
    )
    return text, Choice(country_name(f, neighbours[0]))


# --- chain ------------------------------------------------------------------------------


@shape("chain")
def continent_of_city(r: random.Random, f: Facts) -> Drawn:
    # Not a city of a country that spans two continents (Istanbul, Alexandria).  The continent
    # first: most of the cities are in Europe.
    by_region: dict[str, list[str]] = {}
    for c in CITIES:
        if _home(f, c) not in _TWO_CONTINENTS:
            by_region.setdefault(f.country(_home(f, c))["region"], []).append(c)
    region = r.choice(sorted(by_region))
    city = r.choice(by_region[region])
    gold = _continent(f, city)
    text = r.choice(
        [
            f"Which continent is {city} on?",
            f"On what continent would I find {city}?",
            f"{city} is on which continent?",
            f"I've got a conference in {city}. Which continent is that?",
        ]
    )
    rivals = tuple(region_name(x) for x in REGIONS if x != region)
    return text, Choice(gold, rivals)


@shape("chain")
def neighbours_of_city_country(r: random.Random, f: Facts) -> Drawn:
    by_count: dict[int, list[str]] = {}
    for city in CITIES:
        home = _home(f, city)
        neighbours = f.country(home)["neighbours"]
        if home in _COUNT_IN_DOUBT or set(neighbours) & (_TERRITORIES | _CONTESTED):
            continue
        # Islands left out: "it has no land borders" is the answer, and no count.
        if neighbours:
            by_count.setdefault(len(neighbours), []).append(city)
    # The count first: most of the cities are in countries with many neighbours.
    gold = r.choice(sorted(by_count))
    city = r.choice(by_count[gold])
    text = r.choice(
        [
            f"How many countries border the country that {city} is in?",
            f"I live in {city}. How many countries does my country share a land border with?",
            f"{city}'s country has how many neighbouring countries?",
        ]
    )
    return text, Count(gold)


# --- comparison -------------------------------------------------------------------------


@shape("comparison")
def closest_population_to(r: random.Random, f: Facts) -> Drawn:
    ref, *chosen = r.sample(COUNTRIES, 4)
    bar = pop(f, ref)
    gaps = sorted((abs(pop(f, c) - bar), c) for c in chosen)
    (first, gold), (second, _) = gaps[:2]
    # Clearly the closest, in people and in proportion alike, and still so as the data ages.
    if second - first < _SAFE_MARGIN * bar:
        return None
    by_ratio = min(chosen, key=lambda c: abs(math.log(pop(f, c) / bar)))
    if by_ratio != gold:
        return None
    names = listing([the(c) for c in chosen], "or")
    text = r.choice(
        [
            f"Which of {names} has a population closest to {possessive(ref)}?",
            f"Of {listing([the(c) for c in chosen])}, which country's population is nearest "
            f"to that of {the(ref)}?",
            f"I'm looking for a country about as populous as {the(ref)}. Which of {names} "
            "comes closest?",
        ]
    )
    rivals = tuple(country_name(f, c) for c in chosen if c != gold)
    return text, Choice(country_name(f, gold), rivals)


@shape("comparison")
def capital_further_north(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in COUNTRIES if c not in _CAPITALS_IN_DOUBT and capital_city(f, c)]
    a, b = r.sample(pool, 2)
    lat = {}
    for c in (a, b):
        record = capital_city(f, c)
        assert record is not None
        lat[c] = float(record["latitude"])
    if abs(lat[a] - lat[b]) < 1:
        return None
    north = r.choice([True, False])
    gold = (max if north else min)(lat, key=lat.__getitem__)
    side = "north" if north else "south"
    text = r.choice(
        [
            f"Whose capital lies further {side}, {possessive(a)} or {possessive(b)}?",
            f"Which country has its capital further to the {side}: {the(a)} or {the(b)}?",
            f"Compare the capitals of {the(a)} and {the(b)}. Which country's capital is "
            f"further {side}?",
        ]
    )

    def named(c: str) -> Name:  # the country, or its capital standing for it
        country, capital = country_name(f, c), _capital(f, c)
        return Name(country.text, (*country.aliases, capital.text, *capital.aliases))

    return text, Choice(named(gold), (named(a if gold == b else b),))


# --- count ------------------------------------------------------------------------------


@shape("count")
def count_bordering_from_list(r: random.Random, f: Facts) -> Drawn:
    x = r.choice([c for c in _WHOLE if c not in _CONTESTED and _clean_neighbours(f, c)])
    record = f.country(x)
    near = _clean_neighbours(f, x)
    # Others of the same region that do not border it (nor might, by some count).
    far = [
        c
        for c in _WHOLE
        if c != x
        and c not in _CONTESTED
        and f.country(c)["region"] == record["region"]
        and c not in record["neighbours"]
        and frozenset((c, x)) not in _BORDER_IN_DOUBT
    ]
    n = r.choice([4, 5])
    k = r.choice(list(range(min(n, len(near)) + 1)))
    if len(far) < n - k:
        return None
    chosen = r.sample(r.sample(near, k) + r.sample(far, n - k), n)  # shuffled
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"How many of {names} share a border with {the(x)}?",
            f"Of these countries, how many are neighbours of {the(x)}: {names}?",
            f"Looking at a map of {the(x)}: how many of {names} touch its borders?",
        ]
    )
    return text, Count(k)


@shape("count")
def count_more_people_less_land(r: random.Random, f: Facts) -> Drawn:
    # The count first (none, one, or two or more), then a draw that gives it: most count none.
    want = r.choice([0, 1, 2])
    for _ in range(200):
        ref, *chosen = r.sample(COUNTRIES, 5)
        people, land = pop(f, ref), area(f, ref)
        # No near tie with the reference on either measure.
        if not all(
            apart([pop(f, c), people], _SAFE_MARGIN) and apart([area(f, c), land], 0.05)
            for c in chosen
        ):
            continue
        gold = sum(pop(f, c) > people and area(f, c) < land for c in chosen)
        if min(gold, 2) == want:
            break
    else:
        return None
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"How many of {names} have more people than {the(ref)} but less land?",
            f"Compared with {the(ref)}, how many of these countries are both more populous "
            f"and smaller in area: {names}?",
            f"Of {names}, how many fit more inhabitants than {the(ref)} into a smaller territory?",
        ]
    )
    return text, Count(gold)


# --- yesno ------------------------------------------------------------------------------


@shape("yesno")
def is_capital_yn(r: random.Random, f: Facts) -> Drawn:
    capital = r.choice([True, False])
    if capital:
        homes = {_home(f, c) for c in CITIES}
        pool = sorted(set(COUNTRIES) | homes)
        pool = [c for c in pool if c not in _CAPITALS_IN_DOUBT | _CAPITAL_TITLE_IN_DOUBT]
        c = r.choice([c for c in pool if f.country(c)["capital"]])
        named = _capital(f, c)
    else:  # a city of the country that is not its capital, often its biggest (Sydney)
        city = r.choice(CITIES)
        c = _home(f, city)
        if c in _CAPITALS_IN_DOUBT or f.city(city)["name"] == f.country(c)["capital"]:
            return None
        named = city_name(f, city)
    text = r.choice(
        [
            f"Is {named.text} the capital of {the(c)}?",
            f"Is it true that {named.text} is {possessive(c)} capital city?",
            f"Quick check: is the capital of {the(c)} {named.text}?",
        ]
    )
    return text, YesNo(capital, (named, country_name(f, c)), ("capital",))


@shape("yesno")
def bigger_than_combined_yn(r: random.Random, f: Facts) -> Drawn:
    # The answer first, then a draw that gives it: the biggest of a few is mostly the bigger.
    yes = r.choice([True, False])
    by_area = r.choice([True, False])
    for _ in range(200):
        chosen = r.sample(COUNTRIES, r.choice([3, 4]))
        size = {c: area(f, c) if by_area else float(pop(f, c)) for c in chosen}
        big = max(chosen, key=size.__getitem__)
        others = [c for c in chosen if c != big]
        total = sum(size[c] for c in others)
        margin = 0.1 if by_area else _SAFE_MARGIN
        if (size[big] > total) == yes and apart([size[big], total], margin):
            break
    else:
        return None
    group = listing([the(c) for c in others])
    if by_area:
        wordings = [
            f"Is {the(big)} larger than {group} combined?",
            f"Does {the(big)} cover more area than {group} put together?",
            f"In terms of area, is {the(big)} bigger than {group} taken together?",
        ]
        verbs: tuple[str, ...] = (
            "larger", "bigger", "greater", "more area", "more land", "cover more", "exceed",
        )  # fmt: skip
    else:
        wordings = [
            f"Does {the(big)} have more people than {group} combined?",
            f"Are there more people in {the(big)} than in {group} put together?",
            f"Is the population of {the(big)} bigger than that of {group} taken together?",
        ]
        verbs = (
            "more people", "more inhabitants", "more residents", "more populous",
            "larger population", "bigger population", "greater population", "outnumber",
            "exceed",
        )  # fmt: skip
    subjects = (country_name(f, big), country_name(f, others[0]))
    return r.choice(wordings), YesNo(yes, subjects, verbs, ordered=True)


# --- relative ---------------------------------------------------------------------------


@shape("relative")
def largest_over_smallest(r: random.Random, f: Facts) -> Drawn:
    by_area = r.choice([True, False])
    chosen = r.sample(COUNTRIES, r.choice([3, 4]))
    values = sorted(area(f, c) if by_area else float(pop(f, c)) for c in chosen)
    margin = 0.1 if by_area else _SAFE_MARGIN
    # Which is the largest and which the smallest must be plain.
    if not (apart(values[-2:], margin) and apart(values[:2], margin)):
        return None
    ratio = values[-1] / values[0]
    if ratio > 500:  # China against Iceland: a quiz, not a question
        return None
    others = [values[-1] / values[1], values[-2] / values[0], values[0] / values[-1]]
    if not _distinct(ratio, others, 0.05):
        return None
    names = listing([the(c) for c in chosen])
    if by_area:
        wordings = [
            f"Of {names}, how many times larger in area is the biggest than the smallest?",
            f"Take {names}: the largest of them covers how many times the area of the smallest?",
            f"Among {names}, divide the biggest country's area by the smallest one's. "
            "What is the result?",
        ]
    else:
        wordings = [
            f"Of {names}, how many times more people does the most populous have than the "
            "least populous?",
            f"Take {names}: the most populous of them has how many times as many inhabitants "
            "as the least populous?",
            f"Among {names}, what is the ratio of the largest population to the smallest?",
        ]
    return r.choice(wordings), Number(ratio)


@shape("relative")
def merged_density(r: random.Random, f: Facts) -> Drawn:
    c = r.choice([c for c in COUNTRIES if _clean_neighbours(f, c)])
    near = _clean_neighbours(f, c)
    partners = r.sample(near, min(len(near), r.choice([1, 2])))
    chosen = [c, *partners]
    gold = sum(pop(f, x) for x in chosen) / sum(area(f, x) for x in chosen)
    each = [density(f, x) for x in chosen]
    # Not where the mean of the densities, or one of them, would pass for the gold.
    if not _distinct(gold, [*each, sum(each) / len(each)], 0.05):
        return None
    names = listing([the(x) for x in chosen])
    text = r.choice(
        [
            f"If {names} merged into one country, what would its population density be, in "
            "people per km²?",
            f"Treat {names} as a single country: how many people per square kilometre would "
            "it have?",
            f"Taken together as one territory, {names} would have how many inhabitants per "
            "square kilometre?",
        ]
    )
    return text, Number(gold)


# --- units ------------------------------------------------------------------------------


@shape("units")
def temperature_gap(r: random.Random, f: Facts) -> Drawn:
    celsius = r.choice([True, False])
    if celsius:
        temps = [-5, -2, 0, 3, 6, 8, 11, 14, 17, 19, 22, 25, 28, 31, 34]
        gaps = range(5, 21)
    else:
        temps = [23, 28, 32, 37, 41, 45, 50, 55, 59, 64, 68, 72, 77, 81, 86, 90, 95]
        gaps = range(9, 37)
    warm, cool = sorted(r.sample(temps, 2), reverse=True)
    gap = warm - cool
    if gap not in gaps:  # a day's swing, or a week's change of weather
        return None
    if celsius:
        gold, slip = gap * 1.8, gap * 1.8 + 32  # the slip: a gap converted as a reading
        wordings = [
            f"It's {warm}°C at noon and {cool}°C at midnight. How big is that swing in "
            "degrees Fahrenheit?",
            f"The forecast says a high of {warm} °C and a low of {cool} °C. What is the "
            "difference between them in °F?",
            f"Today it is {warm} degrees Celsius; last week it was {cool}. By how many "
            "Fahrenheit degrees has it warmed up?",
        ]
    else:
        gold, slip = gap / 1.8, (gap - 32) / 1.8
        wordings = [
            f"It's {warm}°F at noon and {cool}°F at midnight. How big is that swing in "
            "degrees Celsius?",
            f"The forecast says a high of {warm} °F and a low of {cool} °F. What is the "
            "difference between them in °C?",
            f"Today it is {warm} degrees Fahrenheit; last week it was {cool}. By how many "
            "Celsius degrees has it warmed up?",
        ]
    if not _distinct(gold, [warm, cool, gap, slip], 0.05):
        return None
    return r.choice(wordings), Number(gold)


@shape("units")
def travel_time_mixed_units(r: random.Random, f: Facts) -> Drawn:
    in_minutes = r.choice([True, False])
    if r.choice([True, False]):  # kilometres at miles per hour
        distance = r.choice([150, 200, 240, 300, 360, 420, 480, 550])
        speed = r.choice([40, 45, 50, 55, 60, 65, 70])
        hours = distance / (speed * KM_PER_MI)
        trip, long = f"{distance} km", f"{distance}-kilometre"
        pace = r.choice([f"{speed} mph", f"{speed} miles per hour"])
    else:  # miles at kilometres per hour
        distance = r.choice([90, 120, 150, 180, 240, 300])
        speed = r.choice([60, 80, 90, 100, 110, 120, 130])
        hours = distance * KM_PER_MI / speed
        trip, long = f"{distance} miles", f"{distance}-mile"
        pace = r.choice([f"{speed} km/h", f"{speed} kilometres per hour"])
    unit = "minutes" if in_minutes else "hours"
    # An hour count in minutes, or the reverse, is the same answer; units left unconverted are
    # not.
    gold, other = (60 * hours, hours) if in_minutes else (hours, 60 * hours)
    slips = [distance / speed, 60 * distance / speed, distance, speed]
    if not all(_distinct(v, slips, 0.05) for v in (gold, other)):
        return None
    text = r.choice(
        [
            f"The drive ahead of me is {trip}. If I average {pace}, how many {unit} will it take?",
            f"A {long} journey at a steady {pace}: how long is that, in {unit}?",
            f"How many {unit} does it take to cover {trip} at {pace}?",
        ]
    )
    return text, Number(gold, alternates=(other,))


# --- list -------------------------------------------------------------------------------


@shape("list")
def top_two_of_five(r: random.Random, f: Facts) -> Drawn:
    by_area = r.choice([True, False])
    chosen = r.sample(COUNTRIES, 5)
    size = {c: area(f, c) if by_area else float(pop(f, c)) for c in chosen}
    ranked = sorted(chosen, key=size.__getitem__, reverse=True)
    # The second and the third must be plain apart.
    if not apart([size[ranked[1]], size[ranked[2]]], 0.1 if by_area else _SAFE_MARGIN):
        return None
    names = listing([the(c) for c in chosen])
    if by_area:
        wordings = [
            f"Which two of {names} are the largest by area?",
            f"Of these five countries, which two cover the most ground: {names}?",
            f"Name the two biggest countries, by surface area, among {names}.",
        ]
    else:
        wordings = [
            f"Which two of these countries have the most people: {names}?",
            f"Of {names}, which two are the most populous?",
            f"Name the two countries with the largest populations among {names}.",
        ]
    return r.choice(wordings), Items(
        tuple(country_name(f, c) for c in ranked[:2]),
        tuple(country_name(f, c) for c in ranked[2:]),
    )


@shape("list")
def countries_with_official_language(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in _WHOLE if c not in _LANGUAGE_IN_DOUBT]
    spoken = {c: set(f.country(c)["languages"]) for c in pool}
    shared = sorted(
        x for x in _KNOWN_LANGUAGES if sum(x in languages for languages in spoken.values()) >= 2
    )
    language = r.choice(shared)
    with_it = [c for c in pool if language in spoken[c]]
    # Without it, and beside no country that has it: a neighbour's language is often a
    # regional or minority one (German in Italy, Urdu in India).
    without = [
        c
        for c in pool
        if language not in spoken[c]
        and not any(language in f.country(n)["languages"] for n in f.country(c)["neighbours"])
        and not (c == "Netherlands" and language == "English")  # official in Saba
    ]
    n = r.choice([4, 5])
    k = r.choice(list(range(1, min(n - 1, len(with_it)) + 1)))
    if len(without) < n - k:
        return None
    inside = r.sample(with_it, k)
    chosen = r.sample(inside + r.sample(without, n - k), n)  # shuffled
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"Which of these countries have {language} as an official language: {names}?",
            f"In which of {names} is {language} an official language?",
            f"I only speak {language}. Which of {names} list it among their official languages?",
        ]
    )
    outside = [c for c in chosen if c not in inside]
    return text, Items(
        tuple(country_name(f, c) for c in chosen if c in inside),
        tuple(country_name(f, c) for c in outside),
    )
