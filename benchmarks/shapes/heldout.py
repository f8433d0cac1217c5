"""The held-out half of the shapes suite.  Do not read it while tuning prompts, examples or
tools: it measures whether what was tuned on tune.py carries over to other question shapes of
the same categories.  Run it once, at the end (`answer_eval.py --suite shapes --part heldout`).
"""

from __future__ import annotations

import random

from .common import (
    ACRES_PER_KM2,
    BORDERED,
    CITIES,
    COUNTRIES,
    MI_PER_KM,
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
    listing,
    millions,
    only_currency,
    pop,
    possessive,
    registry,
    the,
    threshold,
)
from .scoring import Choice, Count, Items, Name, Number, YesNo

TEMPLATES: list[Template] = []
shape = registry(TEMPLATES)

_SUBREGION_ALIASES = {
    "Latin America and the Caribbean": ("Latin America",),
    "Northern America": ("North America",),
    "Sub-Saharan Africa": ("Subsaharan Africa",),
    "South-eastern Asia": ("Southeast Asia", "South East Asia", "South-East Asia"),
    "Northern Africa": ("North Africa",),
}


@shape("lookup")
def subregion(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(COUNTRIES)
    record = f.country(c)
    gold = record["subregion"]
    siblings = {
        f.country(x)["subregion"] for x in COUNTRIES if f.country(x)["region"] == record["region"]
    }
    text = r.choice(
        [
            f"Which subregion does {the(c)} belong to?",
            f"In the UN's grouping of the world, which subregion is {the(c)} part of?",
            f"{capital_first(the(c))} is in {record['region']}, but which part of it exactly?",
        ]
    )
    rivals = tuple(Name(s, _SUBREGION_ALIASES.get(s, ())) for s in sorted(siblings - {gold}))
    return text, Choice(Name(gold, _SUBREGION_ALIASES.get(gold, ())), rivals)


@shape("lookup")
def official_language(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(MONOLINGUAL)
    text = r.choice(
        [
            f"What language do people speak in {the(c)}?",
            f"What's the official language of {the(c)}?",
            f"Which language would I need to get by in {the(c)}?",
        ]
    )
    return text, Choice(Name(f.country(c)["languages"][0]))


@shape("lookup")
def city_country(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    text = r.choice(
        [
            f"Which country is {city} in?",
            f"In what country would I find the city of {city}?",
            f"{city}: which country is that?",
        ]
    )
    return text, Choice(country_name(f, f.city(city)["country"]))


@shape("lookup")
def city_timezone(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    text = r.choice(
        [
            f"What time zone is {city} in?",
            f"Which IANA time zone does {city} use?",
            f"I need to schedule a call with someone in {city}. What's their time zone?",
        ]
    )
    return text, Choice(Name(f.city(city)["timezone"]))


@shape("chain")
def capital_timezone(r: random.Random, f: Facts) -> Drawn:
    c = r.choice([c for c in COUNTRIES if capital_city(f, c)])
    record = capital_city(f, c)
    assert record is not None
    text = r.choice(
        [
            f"What time zone is the capital of {the(c)} in?",
            f"Which time zone does {possessive(c)} capital city use?",
            f"I'm calling a government office in {possessive(c)} capital. What time zone is it?",
        ]
    )
    return text, Choice(Name(record["timezone"]))


@shape("chain")
def city_country_capital(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    country = f.country(f.city(city)["country"])
    capital = country["capital"]
    record = f.city(capital)
    text = r.choice(
        [
            f"What is the capital of the country that {city} is in?",
            f"{city} is in some country. What's that country's capital?",
            f"Which city is the capital of the country where {city} lies?",
        ]
    )
    aliases = (record["name"],) if record["name"] != capital else ()
    return text, Choice(Name(capital, aliases))


@shape("chain")
def city_country_languages(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    languages = f.country(f.city(city)["country"])["languages"]
    if not languages:
        return None
    text = r.choice(
        [
            f"What are the official languages of the country {city} is in?",
            f"Which languages are official in the country where {city} is located?",
            f"If I move to {city}, which official languages does that country have?",
        ]
    )
    return text, Items(tuple(Name(x) for x in languages))


@shape("comparison")
def southernmost_of_three(r: random.Random, f: Facts) -> Drawn:
    three = r.sample(CITIES, 3)
    lat = {c: float(f.city(c)["latitude"]) for c in three}
    if min(abs(a - b) for a in lat.values() for b in lat.values() if a != b) < 0.5:
        return None
    gold = min(lat, key=lat.__getitem__)
    names = listing(three)
    text = r.choice(
        [
            f"Which of {names} lies furthest south?",
            f"Of {names}, which city is the southernmost?",
            f"{names}: which one is furthest to the south?",
        ]
    )
    rivals = tuple(city_name(f, c) for c in three if c != gold)
    return text, Choice(city_name(f, gold), rivals)


@shape("comparison")
def capital_bigger(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample([c for c in COUNTRIES if capital_city(f, c)], 2)
    capitals = {c: capital_city(f, c) for c in (a, b)}
    people = {c: float(record["population"]) for c, record in capitals.items() if record}
    if not apart(list(people.values())):
        return None
    gold = max(people, key=people.__getitem__)

    def named(c: str) -> Name:
        record = capitals[c]
        assert record is not None
        name = country_name(f, c)
        extra = (f.country(c)["capital"], record["name"])
        return Name(name.text, tuple(dict.fromkeys((*name.aliases, *extra))))

    text = r.choice(
        [
            f"Whose capital has more people, {possessive(a)} or {possessive(b)}?",
            f"Which country has the more populous capital city: {the(a)} or {the(b)}?",
            f"Compare the capitals of {the(a)} and {the(b)}: which is bigger by population?",
        ]
    )
    return text, Choice(named(gold), (named(a if gold == b else b),))


@shape("comparison")
def more_languages(r: random.Random, f: Facts) -> Drawn:
    a = r.choice(MULTILINGUAL)
    b = r.choice([c for c in MULTILINGUAL + MONOLINGUAL if c != a])
    count = {c: len(f.country(c)["languages"]) for c in (a, b)}
    if count[a] == count[b]:
        return None
    gold = max(count, key=count.__getitem__)
    text = r.choice(
        [
            f"Which country has more official languages, {the(a)} or {the(b)}?",
            f"Does {the(a)} or {the(b)} recognise more official languages?",
            f"Between {the(a)} and {the(b)}, which has the larger number of official languages?",
        ]
    )
    rival = a if gold == b else b
    return text, Choice(country_name(f, gold), (country_name(f, rival),))


@shape("count")
def count_area_over(r: random.Random, f: Facts) -> Drawn:
    chosen = r.sample(COUNTRIES, 4)
    areas = [area(f, c) for c in chosen]
    limits = {100e3: "100,000", 200e3: "200,000", 300e3: "300,000", 500e3: "500,000"}
    limits |= {1e6: "1 million", 2e6: "2 million", 5e6: "5 million"}
    limit = threshold(r, areas, list(limits))
    if limit is None:
        return None
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"How many of {names} are larger than {limits[limit]} square kilometres?",
            f"Of {names}, how many cover more than {limits[limit]} km²?",
            f"Count how many of these countries exceed {limits[limit]} sq km in area: {names}.",
        ]
    )
    return text, Count(sum(a > limit for a in areas))


@shape("count")
def count_in_region(r: random.Random, f: Facts) -> Drawn:
    chosen = r.sample(COUNTRIES, 5)
    region = r.choice(REGIONS)
    gold = sum(f.country(c)["region"] == region for c in chosen)
    if gold == 0 and r.choice([True, False, False]):  # some, not many, questions with none
        return None
    where = {"Americas": "the Americas"}.get(region, region)
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"How many of {names} are in {where}?",
            f"Of {names}, how many countries lie in {where}?",
            f"Counting only countries in {where}, how many are on this list: {names}?",
        ]
    )
    return text, Count(gold)


@shape("count")
def count_big_neighbours(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(BORDERED)
    people = [pop(f, n) for n in f.country(c)["neighbours"]]
    limit = threshold(r, people, [5e6, 10e6, 20e6, 30e6, 50e6, 100e6])
    if limit is None:
        return None
    text = r.choice(
        [
            f"How many of {possessive(c)} neighbours have more than {millions(limit)} people?",
            f"How many countries bordering {the(c)} have a population above {millions(limit)}?",
            f"Of the countries next to {the(c)}, how many are home to over {millions(limit)} "
            "people?",
        ]
    )
    return text, Count(sum(p > limit for p in people))


@shape("yesno")
def share_language_yn(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(MULTILINGUAL + MONOLINGUAL, 2)
    shared = set(f.country(a)["languages"]) & set(f.country(b)["languages"])
    text = r.choice(
        [
            f"Do {the(a)} and {the(b)} share an official language?",
            f"Is there an official language that {the(a)} and {the(b)} have in common?",
            f"Could one official language be used in both {the(a)} and {the(b)}?",
        ]
    )
    subjects = (country_name(f, a), country_name(f, b))
    return text, YesNo(bool(shared), subjects, ("share", "common", "both"))


@shape("yesno")
def same_currency_yn(r: random.Random, f: Facts) -> Drawn:
    a = r.choice([c for c in COUNTRIES if only_currency(f, c)])
    same = r.choice([True, False])
    code = only_currency(f, a)
    pool = [c for c in COUNTRIES if c != a and only_currency(f, c)]
    pool = [c for c in pool if (only_currency(f, c) == code) == same]
    if not pool:
        return None
    b = r.choice(pool)
    text = r.choice(
        [
            f"Do {the(a)} and {the(b)} use the same currency?",
            f"Can I pay with the same money in {the(a)} and {the(b)}?",
            f"Is the currency of {the(a)} also the currency of {the(b)}?",
        ]
    )
    subjects = (country_name(f, a), country_name(f, b))
    return text, YesNo(same, subjects, ("same currency", "share", "both use", "same money"))


@shape("yesno")
def twice_population_yn(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(COUNTRIES, 2)
    ratio = pop(f, a) / pop(f, b)
    if not 1.2 < ratio < 4 or abs(ratio - 2) < 0.2:
        return None
    text = r.choice(
        [
            f"Does {the(a)} have more than twice as many people as {the(b)}?",
            f"Is {possessive(a)} population more than double {possessive(b)}?",
            f"Are there over twice as many people in {the(a)} as in {the(b)}?",
        ]
    )
    subjects = (country_name(f, a), country_name(f, b))
    verbs = ("more than twice", "over twice", "more than double", "over double")
    return text, YesNo(ratio > 2, subjects, verbs, ordered=True)


@shape("relative")
def percent_smaller_area(r: random.Random, f: Facts) -> Drawn:
    big, small = sorted(r.sample(COUNTRIES, 2), key=lambda c: -area(f, c))
    ratio = area(f, small) / area(f, big)
    if not 0.1 < ratio < 0.9:
        return None
    text = r.choice(
        [
            f"How much smaller, in percent, is {the(small)} than {the(big)}?",
            f"By what percentage is {possessive(small)} area smaller than {possessive(big)}?",
            f"{capital_first(the(small))} is smaller than {the(big)}. By how many percent?",
        ]
    )
    return text, Number(100 * (1 - ratio))


@shape("relative")
def country_times_city(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    name = f.country(f.city(city)["country"])["name"]
    ratio = pop(f, name) / f.city(city)["population"]
    text = r.choice(
        [
            f"How many times larger is the population of {the(name)} than that of {city}?",
            f"{capital_first(the(name))} has how many times as many people as {city}?",
            f"The population of {the(name)} is how many times the population of {city}?",
        ]
    )
    return text, Number(ratio)


@shape("relative")
def neighbourhood_share(r: random.Random, f: Facts) -> Drawn:
    c = r.choice([c for c in BORDERED if len(f.country(c)["neighbours"]) <= 6])
    around = sum(pop(f, n) for n in f.country(c)["neighbours"])
    share = pop(f, c) / (pop(f, c) + around)
    text = r.choice(
        [
            f"What percentage of the combined population of {the(c)} and its neighbours lives "
            f"in {the(c)}?",
            f"Taking {the(c)} together with all the countries bordering it, what share of "
            "their people live in "
            f"{the(c)}?",
            f"If you add up the people of {the(c)} and of every country next to it, what percent "
            f"of the total are in {the(c)}?",
        ]
    )
    return text, Number(100 * share, alternates=(share,))


@shape("units")
def acres(r: random.Random, f: Facts) -> Drawn:
    c = r.choice([*COUNTRIES, "Luxembourg", "Malta", "Andorra", "Singapore", "Liechtenstein"])
    text = r.choice(
        [
            f"How many acres does {the(c)} cover?",
            f"What is the area of {the(c)} in acres?",
            f"My uncle measures everything in acres. How big is {the(c)} in acres?",
        ]
    )
    return text, Number(area(f, c) * ACRES_PER_KM2)


@shape("units")
def north_south_km(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(CITIES, 2)
    lat = {c: float(f.city(c)["latitude"]) for c in (a, b)}
    if abs(lat[a] - lat[b]) < 2:
        return None
    north, south = (a, b) if lat[a] > lat[b] else (b, a)
    text = r.choice(
        [
            f"Counting 111 km per degree of latitude, how many kilometres further north is "
            f"{north} than {south}?",
            f"How far north of {south} is {north}, in km, if a degree of latitude is 111 km?",
            f"Taking 111 km per degree of latitude, what is the north-south distance between "
            f"{north} and {south} in kilometres?",
        ]
    )
    return text, Number((lat[north] - lat[south]) * 111)


@shape("units")
def kmh_to_mph(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(CITIES, 2)
    train, limit, plane = r.choice([200, 250, 300, 320]), r.choice([50, 80, 100, 120, 130]), 900
    v, text = r.choice(
        [
            (train, f"The train from {a} to {b} runs at {train} km/h. How fast is that in mph?"),
            (limit, f"The speed limit near {a} is {limit} km/h. What is that in miles per hour?"),
            (plane, f"A jet cruises at {plane} km/h. How many miles per hour is that?"),
            (limit, f"Convert {limit} km/h to mph."),
        ]
    )
    return text, Number(v * MI_PER_KM)


@shape("list")
def common_neighbours(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(BORDERED, 2)
    na, nb = f.country(a)["neighbours"], f.country(b)["neighbours"]
    both = [n for n in na if n in nb]
    if not both:
        return None
    own = {f.country(a)["name"], f.country(b)["name"]}
    others = [n for n in dict.fromkeys(na + nb) if n not in both and n not in own]
    text = r.choice(
        [
            f"Which countries border both {the(a)} and {the(b)}?",
            f"Name the countries that are neighbours of {the(a)} and of {the(b)}.",
            f"Which countries share a border with {the(a)} and also with {the(b)}?",
        ]
    )
    return text, Items(
        tuple(country_name(f, n) for n in both), tuple(country_name(f, n) for n in others)
    )


@shape("list")
def cities_in_country(r: random.Random, f: Facts) -> Drawn:
    chosen = r.sample(CITIES, 5)
    homes = {c: f.country(f.city(c)["country"])["name"] for c in chosen}
    country = r.choice(sorted(set(homes.values())))
    inside = [c for c in chosen if homes[c] == country]
    if len(inside) == len(chosen):
        return None
    names = listing(chosen)
    text = r.choice(
        [
            f"Which of {names} are in {the(country)}?",
            f"Of these cities, which ones are in {the(country)}: {names}?",
            f"I have a list of cities: {names}. Which of them are in {the(country)}?",
        ]
    )
    outside = [c for c in chosen if c not in inside]
    return text, Items(
        tuple(city_name(f, c) for c in inside), tuple(city_name(f, c) for c in outside)
    )


@shape("list")
def larger_than_list(r: random.Random, f: Facts) -> Drawn:
    chosen = r.sample(COUNTRIES, 4)
    areas = [area(f, c) for c in chosen]
    limits = {100e3: "100,000", 200e3: "200,000", 300e3: "300,000", 500e3: "500,000"}
    limits |= {1e6: "1 million", 2e6: "2 million"}
    limit = threshold(r, areas, list(limits))
    if limit is None:
        return None
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"Which of {names} are larger than {limits[limit]} square kilometres?",
            f"Of {names}, which cover more than {limits[limit]} km²?",
            f"List the countries among {names} whose area exceeds {limits[limit]} sq km.",
        ]
    )
    big = [c for c, a in zip(chosen, areas, strict=True) if a > limit]
    small = [c for c in chosen if c not in big]
    return text, Items(
        tuple(country_name(f, c) for c in big), tuple(country_name(f, c) for c in small)
    )
