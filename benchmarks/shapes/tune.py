"""The tune half of the shapes suite: tune prompts, examples and tools against these.

Three templates per category; the held-out half (heldout.py) has other templates of the same
categories, which nobody tuning reads.
"""

from __future__ import annotations

import random

from .common import (
    BORDERED,
    CITIES,
    COUNTRIES,
    EURO_BORDERED,
    MONOLINGUAL,
    MULTILINGUAL,
    REGIONS,
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
    region_name,
    registry,
    the,
    threshold,
)
from .scoring import Choice, Coordinates, Count, Items, Name, Number, YesNo

TEMPLATES: list[Template] = []
shape = registry(TEMPLATES)


@shape("lookup")
def region(r: random.Random, f: Facts) -> Drawn:
    c = r.choice([c for c in COUNTRIES if c not in ("Egypt", "Russia", "Turkey")])
    gold = f.country(c)["region"]
    text = r.choice(
        [
            f"Which continent is {the(c)} on?",
            f"What region of the world is {the(c)} in?",
            f"Quick geography check: in which part of the world would I find {the(c)}?",
            f"{capital_first(the(c))} belongs to which continent?",
        ]
    )
    rivals = tuple(region_name(x) for x in REGIONS if x != gold)
    return text, Choice(region_name(gold), rivals)


@shape("lookup")
def currency(r: random.Random, f: Facts) -> Drawn:
    c = r.choice([c for c in COUNTRIES if only_currency(f, c)])
    text = r.choice(
        [
            f"What currency do they use in {the(c)}?",
            f"Which currency will I need when I travel to {the(c)}?",
            f"What's the official currency of {the(c)}?",
            f"What money do people pay with in {the(c)}?",
        ]
    )
    return text, Choice(currency_name(str(only_currency(f, c))))


@shape("lookup")
def city_coordinates(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    record = f.city(city)
    text = r.choice(
        [
            f"What are the coordinates of {city}?",
            f"Give me the latitude and longitude of {city}.",
            f"Where exactly is {city} on the map? I need its lat/long.",
        ]
    )
    return text, Coordinates(float(record["latitude"]), float(record["longitude"]))


@shape("chain")
def capital_population(r: random.Random, f: Facts) -> Drawn:
    c = r.choice([c for c in COUNTRIES if capital_city(f, c)])
    record = capital_city(f, c)
    assert record is not None
    text = r.choice(
        [
            f"How many people live in the capital of {the(c)}?",
            f"What is the population of {possessive(c)} capital city?",
            f"I'm curious how big {possessive(c)} capital is: how many inhabitants does it have?",
        ]
    )
    return text, Number(float(record["population"]))


@shape("chain")
def city_currency(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    code = only_currency(f, f.city(city)["country"])
    if code is None:
        return None
    text = r.choice(
        [
            f"I'm flying to {city} next week. Which currency should I bring?",
            f"What currency do people pay with in {city}?",
            f"If I buy a coffee in {city}, what currency will I be paying in?",
        ]
    )
    return text, Choice(currency_name(code))


@shape("chain")
def capital_country_population(r: random.Random, f: Facts) -> Drawn:
    c = r.choice([c for c in COUNTRIES if capital_city(f, c)])
    capital = f.country(c)["capital"]
    # What a plan computes: the capital's country, then that country's population.
    gold = pop(f, f.city(capital)["country"])
    text = r.choice(
        [
            f"What's the population of the country whose capital is {capital}?",
            f"How many people live in the country that has {capital} as its capital?",
            f"{capital} is a capital city. How many people live in its country?",
        ]
    )
    return text, Number(float(gold))


@shape("comparison")
def bigger_city(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(CITIES, 2)
    people = {c: f.city(c)["population"] for c in (a, b)}
    if not apart(list(people.values())):
        return None
    gold = max(people, key=people.__getitem__)
    text = r.choice(
        [
            f"Which city has more people, {a} or {b}?",
            f"Which is the bigger city by population: {a} or {b}?",
            f"Is {a} or {b} more populous?",
        ]
    )
    return text, Choice(city_name(f, gold), (city_name(f, a if gold == b else b),))


@shape("comparison")
def further_west(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(CITIES, 2)
    lon = {c: float(f.city(c)["longitude"]) for c in (a, b)}
    if not 0.5 < abs(lon[a] - lon[b]) < 60:  # far apart, "west" depends on the way round
        return None
    west = r.choice([True, False])
    gold = min(lon, key=lon.__getitem__) if west else max(lon, key=lon.__getitem__)
    side = "west" if west else "east"
    text = r.choice(
        [
            f"Which lies further {side}, {a} or {b}?",
            f"Of {a} and {b}, which city is further to the {side}?",
            f"Which is more to the {side}: {a} or {b}?",
        ]
    )
    return text, Choice(city_name(f, gold), (city_name(f, a if gold == b else b),))


@shape("comparison")
def more_neighbours(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(BORDERED, 2)
    count = {c: len(f.country(c)["neighbours"]) for c in (a, b)}
    if count[a] == count[b]:
        return None
    gold = max(count, key=count.__getitem__)
    text = r.choice(
        [
            f"Which country has more neighbours, {the(a)} or {the(b)}?",
            f"Which borders more countries: {the(a)} or {the(b)}?",
            f"Does {the(a)} or {the(b)} have more countries along its borders?",
        ]
    )
    rival = a if gold == b else b
    return text, Choice(country_name(f, gold), (country_name(f, rival),))


@shape("count")
def count_population_over(r: random.Random, f: Facts) -> Drawn:
    chosen = r.sample(COUNTRIES, 4)
    people = [pop(f, c) for c in chosen]
    limit = threshold(r, people, [5e6, 10e6, 20e6, 30e6, 40e6, 50e6, 60e6, 80e6, 100e6])
    if limit is None:
        return None
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"How many of {names} have more than {millions(limit)} people?",
            f"Of {names}, how many have a population above {millions(limit)}?",
            f"Out of {names}, how many countries are home to over {millions(limit)} people?",
        ]
    )
    return text, Count(sum(p > limit for p in people))


@shape("count")
def count_big_cities(r: random.Random, f: Facts) -> Drawn:
    chosen = r.sample(CITIES, r.choice([4, 5]))
    people = [f.city(c)["population"] for c in chosen]
    limits = {250e3: "250,000", 500e3: "half a million", 1e6: "a million", 2e6: "2 million"}
    limit = threshold(r, people, list(limits))
    if limit is None:
        return None
    names = listing(chosen)
    text = r.choice(
        [
            f"How many of these cities have more than {limits[limit]} inhabitants: {names}?",
            f"Of {names}, how many are home to over {limits[limit]} people?",
            f"Count the cities with a population above {limits[limit]} among {names}.",
        ]
    )
    return text, Count(sum(p > limit for p in people))


@shape("count")
def count_euro_neighbours(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(EURO_BORDERED)
    gold = sum("EUR" in f.country(n)["currencies"] for n in f.country(c)["neighbours"])
    text = r.choice(
        [
            f"How many of {possessive(c)} neighbours use the euro?",
            f"How many countries bordering {the(c)} have the euro as their currency?",
            f"{capital_first(the(c))} has several neighbours. How many of them pay in euros?",
        ]
    )
    return text, Count(gold)


@shape("yesno")
def larger_area_yn(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(COUNTRIES, 2)
    if not apart([area(f, a), area(f, b)]):
        return None
    text = r.choice(
        [
            f"Is {the(a)} larger than {the(b)}?",
            f"Is {the(a)} bigger than {the(b)} in area?",
            f"Does {the(a)} cover a larger area than {the(b)}?",
        ]
    )
    subjects = (country_name(f, a), country_name(f, b))
    verbs = ("larger", "bigger", "greater area", "covers a larger", "covers more")
    return text, YesNo(area(f, a) > area(f, b), subjects, verbs, ordered=True)


@shape("yesno")
def borders_yn(r: random.Random, f: Facts) -> Drawn:
    a = r.choice(BORDERED)
    neighbours = f.country(a)["neighbours"]
    near = r.choice([True, False])
    if near:
        b = r.choice(neighbours)
    else:
        same_region = [
            c
            for c in COUNTRIES
            if c != a
            and f.country(c)["region"] == f.country(a)["region"]
            and f.country(c)["name"] not in neighbours
        ]
        b = r.choice(same_region)
    text = r.choice(
        [
            f"Does {the(a)} border {the(b)}?",
            f"Do {the(a)} and {the(b)} share a border?",
            f"Is {the(b)} one of {possessive(a)} neighbours?",
        ]
    )
    subjects = (country_name(f, a), country_name(f, b))
    return text, YesNo(near, subjects, ("border", "neighbo", "adjacent"))


@shape("yesno")
def city_in_country_yn(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    home = f.city(city)["country"]
    there = r.choice([True, False])
    if there:
        country = f.country(home)["name"]
    else:
        nearby = [n for n in f.country(home)["neighbours"] if n in COUNTRIES]
        if not nearby:
            return None
        country = r.choice(nearby)
    text = r.choice(
        [
            f"Is {city} in {the(country)}?",
            f"Is {city} a city in {the(country)}?",
            f"{city} is in {the(country)}, right?",
        ]
    )
    subjects = (city_name(f, city), country_name(f, country))
    return text, YesNo(there, subjects, ("in", "located", "part of"), ordered=True)


@shape("relative")
def percent_more_people(r: random.Random, f: Facts) -> Drawn:
    a, b = sorted(r.sample(COUNTRIES, 2), key=lambda c: -pop(f, c))
    ratio = pop(f, a) / pop(f, b)
    if not 1.1 < ratio < 4:
        return None
    text = r.choice(
        [
            f"By what percentage does {possessive(a)} population exceed {possessive(b)}?",
            f"How much bigger, in percent, is the population of {the(a)} than that of {the(b)}?",
            f"{capital_first(the(a))} has how many percent more inhabitants than {the(b)}?",
        ]
    )
    return text, Number(100 * (ratio - 1))


@shape("relative")
def capital_share(r: random.Random, f: Facts) -> Drawn:
    c = r.choice([c for c in COUNTRIES if capital_city(f, c)])
    record = capital_city(f, c)
    assert record is not None
    share = record["population"] / pop(f, c)
    capital = f.country(c)["capital"]
    text = r.choice(
        [
            f"What percentage of {possessive(c)} population lives in its capital?",
            f"What share of the people of {the(c)} live in {capital}?",
            f"Roughly what percent of {possessive(c)} inhabitants live in the capital city?",
        ]
    )
    return text, Number(100 * share, alternates=(share,))


@shape("relative")
def density_times(r: random.Random, f: Facts) -> Drawn:
    a, b = sorted(r.sample(COUNTRIES, 2), key=lambda c: -density(f, c))
    ratio = density(f, a) / density(f, b)
    if ratio < 1.3:
        return None
    text = r.choice(
        [
            f"How many times more densely populated is {the(a)} than {the(b)}?",
            f"{capital_first(possessive(a))} population density is how many times {possessive(b)}?",
            f"How many times as many people per square kilometre does {the(a)} have as {the(b)}?",
        ]
    )
    return text, Number(ratio)


@shape("units")
def people_per_square_mile(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(COUNTRIES)
    text = r.choice(
        [
            f"How many people per square mile live in {the(c)}?",
            f"What is {possessive(c)} population density in people per square mile?",
            f"I think in miles: how many residents per square mile does {the(c)} have?",
        ]
    )
    return text, Number(pop(f, c) / (area(f, c) * SQ_MI_PER_KM2))


@shape("units")
def celsius_to_fahrenheit(r: random.Random, f: Facts) -> Drawn:
    t = r.choice([-10, -5, 4, 12, 18, 21, 25, 28, 30, 33, 37, 40])
    city = r.choice(CITIES)
    text = r.choice(
        [
            f"It's {t} °C in {city} right now. What is that in Fahrenheit?",
            f"Convert {t} degrees Celsius to Fahrenheit.",
            f"My thermostat says {t}°C. How warm is that in °F?",
        ]
    )
    return text, Number(t * 1.8 + 32)


@shape("units")
def miles_from_equator(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    lat = float(f.city(city)["latitude"])
    if abs(lat) < 5:
        return None
    side = "north" if lat > 0 else "south"
    text = r.choice(
        [
            f"Counting 69 miles per degree of latitude, how far {side} of the equator is {city}, "
            "in miles?",
            f"How many miles {side} of the equator is {city}? Take a degree of latitude as "
            "69 miles.",
            f"If one degree of latitude is about 69 miles, how many miles separate {city} from "
            "the equator?",
        ]
    )
    return text, Number(abs(lat) * 69)


@shape("list")
def which_in_region(r: random.Random, f: Facts) -> Drawn:
    chosen = r.sample(COUNTRIES, r.choice([4, 5]))
    regions = {c: f.country(c)["region"] for c in chosen}
    region = r.choice(REGIONS)
    inside = [c for c in chosen if regions[c] == region]
    if not 0 < len(inside) < len(chosen):
        return None
    where = {"Americas": "the Americas"}.get(region, region)
    adjective = {"Africa": "African", "Asia": "Asian", "Europe": "European"}.get(region)
    names = listing([the(c) for c in chosen])
    wordings = [
        f"Which of these countries are in {where}: {names}?",
        f"Of {names}, which ones lie in {where}?",
    ]
    if adjective:
        wordings.append(f"From this list, which are {adjective} countries: {names}?")
    outside = [c for c in chosen if c not in inside]
    return r.choice(wordings), Items(
        tuple(country_name(f, c) for c in inside), tuple(country_name(f, c) for c in outside)
    )


@shape("list")
def neighbours_over(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(BORDERED)
    neighbours = f.country(c)["neighbours"]
    people = [pop(f, n) for n in neighbours]
    limit = threshold(r, people, [5e6, 10e6, 20e6, 30e6, 40e6, 50e6, 100e6])
    if limit is None:
        return None
    text = r.choice(
        [
            f"Which of {possessive(c)} neighbours have more than {millions(limit)} people?",
            f"List the countries bordering {the(c)} with a population above {millions(limit)}.",
            f"Which countries next to {the(c)} are home to over {millions(limit)} people?",
        ]
    )
    big = [n for n, p in zip(neighbours, people, strict=True) if p > limit]
    small = [n for n in neighbours if n not in big]
    return text, Items(
        tuple(country_name(f, n) for n in big), tuple(country_name(f, n) for n in small)
    )


@shape("list")
def shared_languages(r: random.Random, f: Facts) -> Drawn:
    a = r.choice(MULTILINGUAL)
    la = f.country(a)["languages"]
    language = r.choice(la)  # then a partner that speaks it: not English every time
    partners = [c for c in MULTILINGUAL + MONOLINGUAL if c != a]
    partners = [c for c in partners if language in f.country(c)["languages"]]
    if not partners:
        return None
    b = r.choice(partners)
    lb = f.country(b)["languages"]
    shared = [x for x in la if x in lb]
    text = r.choice(
        [
            f"Which languages do {the(a)} and {the(b)} have in common?",
            f"What languages are official in both {the(a)} and {the(b)}?",
            f"Name the official languages that {the(a)} and {the(b)} share.",
        ]
    )
    others = [x for x in dict.fromkeys(la + lb) if x not in shared]
    return text, Items(tuple(Name(x) for x in shared), tuple(Name(x) for x in others))
