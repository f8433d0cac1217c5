"""A second fresh batch of the shapes suite: templates written after the prompts were frozen.

Written on 2026-12-02, after the prompts, examples and tools were frozen, by someone who read
neither the prompts nor the worked examples (nor the planner, the joiner, the grounding code or
any saved result).  What they read: common.py, scoring.py, __init__.py, tune.py, heldout.py and
fresh.py of this package (for the format, and to stay off their shapes), answer_eval.py only to
wire this part in (and the names of the names suite's templates, to stay off those too),
tests/test_shapes_fresh.py as a model for the test, the built-in tools' signatures and
descriptions, and the fields of the country and city records.  Every template is a question
shape that none of tune.py, heldout.py, fresh.py or the names suite has, two per category; no
prompt was ever tuned on them.  Golds come from the tools' own data through `Facts`, and no
question depends on the clock, on a disputed capital, on a territory counted as a country or on
a currency the data has out of date.

    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh2 --per-template 2
"""

from __future__ import annotations

import random

from .common import (
    BORDERED,
    CITIES,
    COUNTRIES,
    MONOLINGUAL,
    MULTILINGUAL,
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
    pop,
    possessive,
    registry,
    the,
    threshold,
)
from .fresh import _CONTESTED, _DISPUTED_CAPITALS, _TERRITORIES, _capital, _distinct, _home
from .scoring import Choice, Count, Items, Name, Number, YesNo

TEMPLATES: list[Template] = []
shape = registry(TEMPLATES)

MI_TO_KM = 1.609344
# Languages people name without a second thought; only these are asked about.
_KNOWN_LANGUAGES = {
    "English", "French", "German", "Spanish", "Portuguese", "Italian", "Dutch", "Arabic",
    "Russian", "Swedish", "Finnish", "Swahili", "Hindi", "Urdu", "Turkish", "Greek", "Polish",
    "Hungarian", "Romanian", "Czech", "Slovak", "Ukrainian", "Danish", "Japanese", "Korean",
    "Chinese", "Persian", "Bengali", "Thai", "Vietnamese", "Irish", "Norwegian", "Malay",
}  # fmt: skip
# Countries whose official language is a matter of law people argue about (no de jure one, or
# a status changed by recent law): no language question on them.
# Nor on those where the data's list is not the law's (it has Slovak official in Czechia).
_UNSETTLED_LANGUAGE = {
    "United States", "United Kingdom", "Australia", "New Zealand", "Israel", "Mexico",
    "Czech Republic",
}  # fmt: skip
# Capitals beyond fresh.py's disputed three: Yamoussoukro or Abidjan; Nur-Sultan, since
# renamed Astana (the data has the old name).
_CAPITALS_IN_DOUBT = _DISPUTED_CAPITALS | {"Ivory Coast", "Kazakhstan"}
# The data's populations are some years old: a population comparison is only asked where the
# two differ by this factor, so that it still holds today.
_SAFE_MARGIN = 0.25
# Countries whose continent depends on who is asked (the data's regions say one).
_TWO_CONTINENTS = {"Egypt", "Russia", "Turkey"}


def _ringed(f: Facts, most: int) -> list[str]:
    """Countries with 2 to `most` neighbours, every one of them a country with a whole record
    (no territory, no contested border), so a fan-out over them gives a settled answer."""
    out = []
    for c in sorted(set(COUNTRIES) | set(BORDERED)):
        neighbours = f.country(c)["neighbours"]
        if c in _CONTESTED or not 2 <= len(neighbours) <= most:
            continue
        if set(neighbours) & (_TERRITORIES | _CONTESTED):
            continue
        records = [f.country(n) for n in neighbours]
        if all(x["population"] and x["area_km2"] and x["languages"] for x in records):
            out.append(c)
    return out


def _lat(f: Facts, city: str) -> float:
    return float(f.city(city)["latitude"])


def _lon(f: Facts, city: str) -> float:
    return float(f.city(city)["longitude"])


def _hemisphere(side: str) -> Name:
    """A side of the equator as an answer may say it: "south", "the southern hemisphere",
    not "southern" alone ("Seville, in southern Spain, is north of the equator")."""
    return Name(side, (f"{side}ern hemisphere", f"{side} of the equator"))


def _city_standing_for(f: Facts, city: str) -> Name:
    """A city, or its country standing for it ("Toronto", "Canada")."""
    home = country_name(f, _home(f, city))
    name = city_name(f, city)
    return Name(name.text, tuple(dict.fromkeys((*name.aliases, home.text, *home.aliases))))


# Cities north of the equator that an answer may well place in "South Korea" or "South America",
# which would name the wrong side first.
_SOUTH_IN_NAME = {"Busan", "Medellin"}


# --- lookup -----------------------------------------------------------------------------


@shape("lookup")
def hemisphere_of_city(r: random.Random, f: Facts) -> Drawn:
    south = r.choice([True, False])
    pool = [c for c in CITIES if c not in _SOUTH_IN_NAME]
    city = r.choice([c for c in pool if (_lat(f, c) < -1 if south else _lat(f, c) > 1)])
    text = r.choice(
        [
            f"Which side of the equator is {city} on, north or south?",
            f"Does {city} sit north or south of the equator?",
            f"Packing for {city}: is it north of the equator or south of it?",
        ]
    )
    gold, rival = ("south", "north") if south else ("north", "south")
    return text, Choice(_hemisphere(gold), (_hemisphere(rival),))


@shape("lookup")
def prime_meridian_side(r: random.Random, f: Facts) -> Drawn:
    west = r.choice([True, False])
    city = r.choice([c for c in CITIES if (_lon(f, c) < -1 if west else _lon(f, c) > 1)])
    text = r.choice(
        [
            f"Is {city} east or west of the Greenwich meridian?",
            f"Which side of the prime meridian is {city} on: east or west?",
            f"Looking at longitude, does {city} lie east of Greenwich or west of it?",
        ]
    )
    # "west", never "western" ("Lyon, in western Europe, is east of Greenwich").
    gold, rival = ("west", "east") if west else ("east", "west")
    return text, Choice(Name(gold), (Name(rival),))


# --- chain ------------------------------------------------------------------------------


@shape("chain")
def capital_of_biggest_neighbour(r: random.Random, f: Facts) -> Drawn:
    by_area = r.choice([True, False])
    tops: dict[str, list[str]] = {}  # the biggest neighbour, and the countries it is that of
    for c in _ringed(f, 4):
        size = {n: area(f, n) if by_area else float(pop(f, n)) for n in f.country(c)["neighbours"]}
        first, second = sorted(size.values(), reverse=True)[:2]
        top = max(size, key=size.__getitem__)
        # No near tie for the biggest; no capital people argue about.
        margin = 1.15 if by_area else 1 + _SAFE_MARGIN
        if first > margin * second and top not in _CAPITALS_IN_DOUBT and f.country(top)["capital"]:
            tops.setdefault(top, []).append(c)
    # The answer first, then a country it answers for: Russia borders many of the countries.
    top = r.choice(sorted(tops))
    c = r.choice(tops[top])
    neighbours = f.country(c)["neighbours"]
    if by_area:
        wordings = [
            f"What is the capital of the largest country, by area, that borders {the(c)}?",
            f"Of {possessive(c)} neighbours, take the one that covers the most land. "
            "What's its capital?",
            f"Which city is the capital of {possessive(c)} biggest neighbour in terms of area?",
        ]
    else:
        wordings = [
            f"What is the capital of {possessive(c)} most populous neighbour?",
            f"Among the countries bordering {the(c)}, find the one with the most people. "
            "What is its capital?",
            f"{capital_first(possessive(c))} neighbour with the biggest population has which "
            "capital city?",
        ]
    rivals = tuple(_capital(f, n) for n in neighbours if n != top and f.country(n)["capital"])
    return r.choice(wordings), Choice(_capital(f, top), rivals)


@shape("chain")
def city_or_its_capital_north(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    home = _home(f, city)
    record = capital_city(f, home)
    if home in _CAPITALS_IN_DOUBT or record is None or record["name"] == f.city(city)["name"]:
        return None
    lat_city, lat_capital = _lat(f, city), float(record["latitude"])
    if abs(lat_city - lat_capital) < 1:
        return None
    north = r.choice([True, False])
    city_wins = (lat_city > lat_capital) is north
    side = "north" if north else "south"
    text = r.choice(
        [
            f"Which lies further {side}: {city} or the capital of its country?",
            f"Between {city} and its national capital, which one is further {side}?",
            f"{city} or the capital of the country it's in: which is further to the {side}?",
        ]
    )
    mine, capital = city_name(f, city), _capital(f, home)
    gold, rival = (mine, capital) if city_wins else (capital, mine)
    return text, Choice(gold, (rival,))


# --- comparison -------------------------------------------------------------------------


@shape("comparison")
def city_or_country_more_people(r: random.Random, f: Facts) -> Drawn:
    # The country first (a city first would meet Iceland, the one small enough, too often),
    # then a city of another country within a factor of four of it, either side.
    c = r.choice(COUNTRIES)
    home = f.country(c)["name"]
    pool = [
        x
        for x in CITIES
        if _home(f, x) != home
        and pop(f, c) / 4 < float(f.city(x)["population"]) < pop(f, c) * 4
        and apart([float(f.city(x)["population"]), float(pop(f, c))], _SAFE_MARGIN)
    ]
    if not pool:
        return None
    city = r.choice(pool)
    people = float(f.city(city)["population"])
    text = r.choice(
        [
            f"Which has more people: the city of {city} or the whole of {the(c)}?",
            f"Are more people living in {city} or in {the(c)}?",
            f"Does {city} or {the(c)} have the larger population?",
            f"Random thought: is the population of {city} bigger than that of {the(c)}, or "
            "is it the other way round? Which one has more?",
        ]
    )
    names = {city: city_name(f, city), c: country_name(f, c)}
    gold = city if people > pop(f, c) else c
    return text, Choice(names[gold], (names[c if gold == city else city],))


@shape("comparison")
def city_in_bigger_country(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(CITIES, 2)
    homes = {x: _home(f, x) for x in (a, b)}
    if homes[a] == homes[b]:
        return None
    by_area = r.choice([True, False])
    size = {x: area(f, h) if by_area else float(pop(f, h)) for x, h in homes.items()}
    if not apart(list(size.values()), 0.1 if by_area else _SAFE_MARGIN):
        return None
    gold = max(size, key=size.__getitem__)
    if by_area:
        wordings = [
            f"Which of {a} and {b} is in the larger country by area?",
            f"{a} or {b}: which city's country covers more land?",
            f"Whose country is physically bigger, {a}'s or {b}'s?",
        ]
    else:
        wordings = [
            f"Which of {a} and {b} is in the more populous country?",
            f"{a} or {b}: which one belongs to a country with more inhabitants?",
            f"Whose home country has the larger population, {a}'s or {b}'s?",
        ]
    rival = a if gold == b else b
    return r.choice(wordings), Choice(_city_standing_for(f, gold), (_city_standing_for(f, rival),))


# --- count ------------------------------------------------------------------------------


@shape("count")
def count_neighbours_sharing_language(r: random.Random, f: Facts) -> Drawn:
    by_count: dict[int, list[str]] = {}
    for c in _ringed(f, 4):
        own = set(f.country(c)["languages"])
        shared = sum(bool(own & set(f.country(n)["languages"])) for n in f.country(c)["neighbours"])
        by_count.setdefault(shared, []).append(c)
    # The count first: most of the countries share a language with none of their neighbours.
    gold = r.choice(sorted(by_count))
    c = r.choice(by_count[gold])
    text = r.choice(
        [
            f"How many of the countries bordering {the(c)} have an official language in "
            "common with it?",
            f"In how many of {possessive(c)} neighbours is at least one of {possessive(c)} "
            "official languages also official?",
            f"Count {possessive(c)} neighbours that share an official language with "
            f"{the(c)}. How many are there?",
        ]
    )
    return text, Count(gold)


@shape("count")
def count_continents_spanned(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in COUNTRIES if c not in _TWO_CONTINENTS]
    chosen = r.sample(pool, 5)
    regions = [f.country(c)["region"] for c in chosen]
    # North and South America are one region in the data and two continents to many people.
    if regions.count("Americas") > 1:
        return None
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"On how many different continents are these five countries: {names}?",
            f"I've been to these five countries: {names}. How many continents is that, "
            "counting each one once?",
            f"Between them, how many continents do these five countries cover: {names}?",
        ]
    )
    return text, Count(len(set(regions)))


# --- yesno ------------------------------------------------------------------------------


@shape("yesno")
def official_language_yn(r: random.Random, f: Facts) -> Drawn:
    pool = sorted((set(COUNTRIES) | set(MULTILINGUAL) | set(MONOLINGUAL)) - _UNSETTLED_LANGUAGE)
    c = r.choice(pool)
    record = f.country(c)
    own = [x for x in record["languages"] if x in _KNOWN_LANGUAGES]
    official = r.choice([True, False])
    if official:
        if not own:
            return None
        language = r.choice(own)
    else:
        # A language of the same region, but of no neighbour: a neighbour's language is often
        # a recognised minority or regional one (Finnish in Sweden, German in Italy).
        near = {f.country(n)["name"] for n in record["neighbours"]}
        far = [
            x
            for x in pool
            if f.country(x)["region"] == record["region"]
            and f.country(x)["name"] not in near | {record["name"]}
        ]
        spoken_near = {x for n in near for x in f.country(n)["languages"]}
        others = {
            x
            for n in far
            for x in f.country(n)["languages"]
            if x in _KNOWN_LANGUAGES and x not in record["languages"] and x not in spoken_near
        }
        if not others:
            return None
        language = r.choice(sorted(others))
    text = r.choice(
        [
            f"Is {language} an official language of {the(c)}?",
            f"Does {the(c)} recognise {language} as an official language?",
            f"Would {language} count as one of {possessive(c)} official languages?",
        ]
    )
    subjects = (Name(language), country_name(f, c))
    verbs = ("official", "recogni", "is spoken", "speak")
    return text, YesNo(official, subjects, verbs)


@shape("yesno")
def city_in_bordering_country_yn(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in sorted(set(COUNTRIES) | set(BORDERED)) if c not in _CONTESTED]
    c = r.choice([c for c in pool if f.country(c)["neighbours"]])
    record = f.country(c)
    neighbours = set(record["neighbours"])
    beside = r.choice([True, False])
    if beside:
        cities = [x for x in CITIES if _home(f, x) in neighbours]
    else:  # a city of the same region, not in the country itself
        cities = [
            x
            for x in CITIES
            if _home(f, x) not in neighbours
            and _home(f, x) != record["name"]
            and f.country(_home(f, x))["region"] == record["region"]
        ]
    if not cities:
        return None
    city = r.choice(cities)
    text = r.choice(
        [
            f"Is {city} in a country that borders {the(c)}?",
            f"Does {city} lie in one of {possessive(c)} neighbouring countries?",
            f"I'm in {city} right now. Is this a country that shares a border with {the(c)}?",
        ]
    )
    subjects = (city_name(f, city), country_name(f, c))
    return text, YesNo(beside, subjects, ("border", "neighbo", "next to", "adjacent"))


# --- relative ---------------------------------------------------------------------------


@shape("relative")
def cities_share_of_country(r: random.Random, f: Facts) -> Drawn:
    homes: dict[str, list[str]] = {}
    for city in CITIES:
        homes.setdefault(_home(f, city), []).append(city)
    country = r.choice(sorted(h for h, cs in homes.items() if len(cs) >= 2))
    cities = r.sample(homes[country], min(len(homes[country]), r.choice([2, 3])))
    people = [float(f.city(x)["population"]) for x in cities]
    share = sum(people) / pop(f, country)
    if not _distinct(share, [p / pop(f, country) for p in people], 0.1):
        return None
    names = listing(cities)
    text = r.choice(
        [
            f"What percentage of {possessive(country)} population lives in {names} combined?",
            f"Put together, {names} hold what share of the people of {the(country)}, in percent?",
            f"{names} are {'both' if len(cities) == 2 else 'all'} in the same country. Taken "
            "together, what percent of that country's population do they account for?",
        ]
    )
    return text, Number(100 * share, alternates=(share,))


@shape("relative")
def extra_people_at_growth(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(COUNTRIES)
    pct = r.choice([5, 8, 10, 12, 15, 20, 25, 30])
    text = r.choice(
        [
            f"If the population of {the(c)} grew by {pct}%, how many extra people would that be?",
            f"Suppose {possessive(c)} population went up {pct} percent. By how many people "
            "would it grow?",
            f"How many people is {pct}% of {possessive(c)} population?",
        ]
    )
    return text, Number(pop(f, c) * pct / 100)


# --- units ------------------------------------------------------------------------------


@shape("units")
def land_per_person(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(COUNTRIES)
    per_person_km2 = area(f, c) / pop(f, c)
    if r.choice([True, False]):
        gold = per_person_km2 * 1e6
        wordings = [
            f"If {possessive(c)} land were shared out equally, how many square metres would "
            "each resident get?",
            f"How much land is there per person in {the(c)}, in square meters?",
        ]
    else:
        gold = per_person_km2 * 100
        wordings = [
            f"How many hectares of land per inhabitant does {the(c)} have?",
            f"Dividing {possessive(c)} area evenly among its people, how many hectares does "
            "each one get?",
        ]
    return r.choice(wordings), Number(gold)


@shape("units")
def fuel_for_trip_miles(r: random.Random, f: Facts) -> Drawn:
    miles = r.choice([120, 150, 180, 200, 250, 300, 350, 420])
    rate = r.choice([4.5, 5, 5.5, 6, 6.5, 7, 8, 9])
    text = r.choice(
        [
            f"My car uses {rate:g} litres per 100 km. How many litres of fuel do I need for a "
            f"{miles}-mile drive?",
            f"A road trip of {miles} miles in a car that burns {rate:g} L/100km: how much "
            "fuel is that, in litres?",
            f"I'm planning a {miles} mile trip in a rental rated at {rate:g} l/100 km. "
            "Roughly how many litres should I budget for?",
        ]
    )
    return text, Number(miles * MI_TO_KM * rate / 100)


# --- list -------------------------------------------------------------------------------


@shape("list")
def cities_north_of_parallel(r: random.Random, f: Facts) -> Drawn:
    chosen = r.sample(CITIES, r.choice([4, 5]))
    lats = [_lat(f, c) for c in chosen]
    parallel = threshold(r, lats, [35.0, 40.0, 45.0, 50.0, 55.0, 60.0])
    if parallel is None:
        return None
    n = int(parallel)  # 35 to 60: "the 50th parallel"
    names = listing(chosen)
    text = r.choice(
        [
            f"Which of these cities lie north of the {n}th parallel: {names}?",
            f"Of {names}, which are at a latitude above {n} degrees north?",
            f"I'm only interested in places north of {n}°N. Which of {names} qualify?",
        ]
    )
    above = [c for c, lat in zip(chosen, lats, strict=True) if lat > parallel]
    below = [c for c in chosen if c not in above]
    return text, Items(tuple(city_name(f, c) for c in above), tuple(city_name(f, c) for c in below))


@shape("list")
def neighbours_larger_in_area(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(_ringed(f, 4))
    neighbours = f.country(c)["neighbours"]
    own = area(f, c)
    if not all(_distinct(own, [area(f, n)], 0.05) for n in neighbours):
        return None
    larger = [n for n in neighbours if area(f, n) > own]
    if not 0 < len(larger) < len(neighbours):
        return None
    text = r.choice(
        [
            f"Which of {possessive(c)} neighbours are bigger than it in area?",
            f"List the countries next to {the(c)} that cover more ground than {the(c)} does.",
            f"Of the countries that border {the(c)}, which have a larger surface area than it has?",
        ]
    )
    smaller = [n for n in neighbours if n not in larger]
    return text, Items(
        tuple(country_name(f, n) for n in larger), tuple(country_name(f, n) for n in smaller)
    )
