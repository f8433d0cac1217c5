"""A tenth fresh batch of the shapes suite: templates written after the prompts were frozen.

Written on 2026-12-04/05, after the prompts, examples and tools were frozen, by someone who read
neither the prompts nor the worked examples (nor the planner, the joiner, the grounding code,
the grammar, the replies, the compiled or ReAct modes, the similar-examples code, the built-in
tools' EXAMPLES or their package's __init__, any saved result or eval output, or the history of
the source), and who ran no model and no eval.  What they read: common.py, scoring.py,
__init__.py, tune.py, heldout.py and fresh.py to fresh9.py of this package (for the format, and
to stay off their shapes), answer_eval.py only to wire this part in (and the names of the names
suite's templates), tests/test_shapes_fresh9.py and tests/shape_pins.py as models for the test,
the built-in tools' signatures and docstrings, and the fields of the country and city records
(read through `Facts`, to pick the pools).  Every template is a question shape that none of
tune.py, heldout.py, fresh.py to fresh9.py or the names suite has, two per category: the
country of the biggest of several cities that share a name, the country whose only land
neighbour is a given one, the capital of the country that issues a currency, the country of
the most populous of three cities, the country in the middle of a list by population or area,
the city of three whose latitude is nearest a fourth's, how many different currencies a trip
through a list of countries needs, how many of a list are above the list's own average, whether
one pair of countries is further apart in size than another, whether a country is the biggest
of another's neighbours, the years until a faster-growing country catches up with a bigger
one, how far a country is above or below its neighbours' average in percent, wind speeds
between knots and km/h, heating and cooling power between BTU per hour and watts, the countries
of a list that fall between two others, and the countries of a list bigger than two others
combined.  No prompt was ever tuned on them.  Golds come from the tools' own data through
`Facts`, and no question depends on the clock, on a disputed capital, on a territory counted as
a country, on a border that overseas land makes arguable, on a currency the data has out of
date, on whether a city is counted within its limits or with its suburbs, on whether a British
city's country is the United Kingdom or one of its nations, or on where a continent ends (no
question asks about a continent); no question asks for a choice between values too close to
call.

    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh10 --per-template 2
"""

from __future__ import annotations

import math
import random
import re
import statistics

from .common import (
    Drawn,
    Facts,
    Template,
    apart,
    capital_first,
    city_name,
    country_name,
    listing,
    only_currency,
    possessive,
    registry,
    the,
)
from .fresh import _STALE_CURRENCY, _TERRITORIES, _capital, _distinct, _home
from .fresh2 import _SAFE_MARGIN
from .fresh3 import _the
from .fresh4 import _CLEAR_FACTOR
from .fresh5 import _ring
from .fresh7 import _cities, _named_capital
from .fresh9 import _OWN_CURRENCIES, _countries, _lat, _size
from .scoring import Choice, Count, Items, Name, Number, YesNo

TEMPLATES: list[Template] = []
shape = registry(TEMPLATES)

KM_PER_NAUTICAL_MILE = 1.852
MI_PER_NAUTICAL_MILE = 1.852 / 1.609344
WATTS_PER_BTU_PER_HOUR = 1055.05585262 / 3600  # the International Table BTU
# Names several cities share, where the most populous one (city_info's pick) has at least
# _CLEAR_FACTOR times the people of any namesake in another country, however either is counted.
# Not London, Birmingham or Cambridge (whose country an answer may give as England), not
# Victoria (Hong Kong's, a territory), not Georgetown (George Town in Malaysia, spelt apart).
_SHARED_NAMES = (
    "Cordoba", "Kingston", "Tripoli", "Guadalajara", "Cartagena", "Alexandria", "Santiago",
    "Perth", "Halifax", "Athens", "Merida", "Trujillo", "Valladolid", "Hyderabad", "Vancouver",
    "Boston", "Bergen", "Florence", "Naples", "Dublin", "Valencia", "Hamilton", "San Jose",
    "Barcelona", "Granada", "Toledo", "Richmond", "Newcastle",
)  # fmt: skip
_OTHER_MATCH = re.compile(r", (?P<country>[^,]+) \(pop (?P<pop>\d+)\)$")
# A country and the one country it shares a land border with, where no other country has that
# one as its only neighbour (not Italy: San Marino and the Vatican; not Indonesia: East Timor and
# Papua New Guinea; not Germany or the United States: Hans Island gives Denmark and Canada a
# second; not the United Kingdom, whose border with Ireland runs through one of its nations).
_ONLY_NEIGHBOUR_OF = {
    "Spain": "Portugal", "North Korea": "South Korea", "Haiti": "Dominican Republic",
    "Dominican Republic": "Haiti", "South Africa": "Lesotho", "Senegal": "Gambia",
    "Saudi Arabia": "Qatar", "Malaysia": "Brunei", "France": "Monaco",
}  # fmt: skip
# Currencies for a question on the capital of their country: fresh9's, less those of a country
# whose capital is moving or that people often take for another city (Jakarta to Nusantara,
# Kuala Lumpur beside Putrajaya, Naypyidaw for Yangon).
_CAPITAL_CURRENCIES = {
    money: owner
    for money, owner in _OWN_CURRENCIES.items()
    if owner[0] not in ("Indonesia", "Malaysia", "Myanmar")
}
# The biggest city, which an answer may take for the capital.
_NOT_THE_CAPITAL = {
    "Nigeria": Name("Lagos"), "Vietnam": Name("Ho Chi Minh City", ("Saigon",)),
    "Georgia": Name("Batumi"), "Ghana": Name("Kumasi"),
}  # fmt: skip
# Seaside cities, where wind is given in knots.
_WINDY_CITIES = (
    "Bergen", "Stavanger", "Trondheim", "Gothenburg", "Aarhus", "Cork", "Galway", "Marseille",
    "Auckland", "Perth", "Busan", "Genoa", "Rotterdam",
)  # fmt: skip
# Cities where air conditioners and heaters are sold by BTU per hour.
_BTU_CITIES = ("Chicago", "Houston", "Seattle", "Toronto", "Montreal", "Calgary")
_EURO = "EUR"


def _size_word(by_area: bool) -> tuple[str, str]:
    """How a question names the measure: ("in area", "larger"), ("in population", ...)."""
    return ("in area", "larger") if by_area else ("by population", "more populous")


def _margin(by_area: bool) -> float:
    """How far apart two sizes must be to rank: areas hold, populations in the data are some
    years old."""
    return 0.1 if by_area else _SAFE_MARGIN


def _country(f: Facts, name: str) -> Name:
    """A country as another record spells it ("The Netherlands"), with its spellings."""
    return country_name(f, str(f.country(name)["name"]))


# --- lookup -----------------------------------------------------------------------------


@shape("lookup")
def largest_namesake_country(r: random.Random, f: Facts) -> Drawn:
    name = r.choice(_SHARED_NAMES)
    record = f.city(name)
    home = str(f.country(record["country"])["name"])
    if home in _TERRITORIES | {"United Kingdom"}:
        return None
    others: dict[str, int] = {}
    for match in record.get("other_matches", []):
        if m := _OTHER_MATCH.search(match):
            there = str(f.country(m["country"])["name"])
            if there != home:
                others[there] = max(others.get(there, 0), int(m["pop"]))
    if not others or record["population"] < _CLEAR_FACTOR * max(others.values()):
        return None
    text = r.choice(
        [
            f"There are several cities called {name}. In which country is the biggest one?",
            f"Of all the cities named {name}, which country has the most populous one?",
            f"Lots of places are called {name}. The largest city with that name is in which "
            "country?",
        ]
    )
    return text, Choice(country_name(f, home), tuple(_country(f, c) for c in sorted(others)))


@shape("lookup")
def country_of_only_neighbour(r: random.Random, f: Facts) -> Drawn:
    n = r.choice(sorted(_ONLY_NEIGHBOUR_OF))
    c = _ONLY_NEIGHBOUR_OF[n]
    if f.country(c)["neighbours"] != [f.country(n)["name"]]:
        return None
    text = r.choice(
        [
            f"Which country has {_the(n)} as its only land neighbour?",
            f"Name the country whose one and only land border is with {_the(n)}.",
            f"Which country shares a land border with {_the(n)} and with no other country?",
        ]
    )
    # The others that border it, none of them a territory.
    here = f.country(c)["name"]
    rivals = [x for x in f.country(n)["neighbours"] if x not in _TERRITORIES and x != here]
    return text, Choice(country_name(f, c), tuple(_country(f, x) for x in rivals))


# --- chain ------------------------------------------------------------------------------


@shape("chain")
def capital_of_currency_country(r: random.Random, f: Facts) -> Drawn:
    money = r.choice(sorted(_CAPITAL_CURRENCIES))
    c, code = _CAPITAL_CURRENCIES[money]
    if f.country(c)["currencies"] != [code] or not _named_capital(f, c):
        return None
    text = r.choice(
        [
            f"I'm going to a country where they pay in {money}. What is its capital?",
            f"Which city is the capital of the country that uses the {money}?",
            f"My pay slip is in {money}. What's the capital of the country I work in?",
            f"The {money} is the currency of a country. Name that country's capital city.",
        ]
    )
    rivals = (_NOT_THE_CAPITAL[c],) if c in _NOT_THE_CAPITAL else ()
    return text, Choice(_capital(f, c), rivals)


@shape("chain")
def country_of_biggest_city(r: random.Random, f: Facts) -> Drawn:
    chosen = r.sample(_cities(f), 3)
    homes = {city: _home(f, city) for city in chosen}
    if len(set(homes.values())) < 3:
        return None
    people = {city: float(f.city(city)["population"]) for city in chosen}
    ranked = sorted(chosen, key=people.__getitem__, reverse=True)
    # Clearly the biggest, whether a city is counted within its limits or with its suburbs.
    if people[ranked[0]] < _CLEAR_FACTOR * people[ranked[1]]:
        return None
    names = listing(chosen)
    text = r.choice(
        [
            f"Which of {names} has the most people, and which country is it in? Name the country.",
            f"Take the most populous of these cities: {names}. Which country is it in?",
            f"I'm moving to whichever of {names} is the biggest city. Which country am I "
            "moving to?",
        ]
    )
    rivals = tuple(country_name(f, homes[city]) for city in ranked[1:])
    return text, Choice(country_name(f, homes[ranked[0]]), rivals)


# --- comparison -------------------------------------------------------------------------


@shape("comparison")
def middle_of_list_by_size(r: random.Random, f: Facts) -> Drawn:
    n = r.choice([3, 5])
    chosen = r.sample(_countries(), n)
    by_area = r.choice([True, False])
    ranked = sorted(chosen, key=lambda c: _size(f, c, by_area))
    mid = n // 2
    # The middle one clearly apart from those on either side of it.
    if not apart([_size(f, c, by_area) for c in ranked[mid - 1 : mid + 2]], _margin(by_area)):
        return None
    names = listing([the(c) for c in chosen])
    measure, _ = _size_word(by_area)
    noun = "area" if by_area else "population"
    if n == 3:
        wordings = [
            f"Of {names}, which is in the middle {measure}: neither the biggest nor the smallest?",
            f"Rank {names} {measure}. Which country comes second?",
            f"Which of {names} has the middle {noun} of the three?",
        ]
    else:
        wordings = [
            f"Rank {names} {measure}. Which country is in the middle of the ranking?",
            f"Which of {names} has the median {noun}?",
            f"If you sorted {names} {measure}, which one would come out in the middle?",
        ]
    rivals = tuple(country_name(f, c) for c in ranked if c != ranked[mid])
    return r.choice(wordings), Choice(country_name(f, ranked[mid]), rivals)


@shape("comparison")
def closest_latitude_to_city(r: random.Random, f: Facts) -> Drawn:
    ref, *chosen = r.sample(_cities(f), 4)
    at = _lat(f, ref)
    gaps = sorted((abs(_lat(f, c) - at), c) for c in chosen)
    (first, gold), (second, _) = gaps[:2]
    if second - first < 2:
        return None
    # The same one if the hemisphere were forgotten.
    if min(chosen, key=lambda c: abs(abs(_lat(f, c)) - abs(at))) != gold:
        return None
    names = listing(chosen, "or")
    text = r.choice(
        [
            f"Which of {names} lies at the latitude closest to {possessive(ref)}?",
            f"I want a city at about the same latitude as {ref}. Which is nearest to it in "
            f"latitude: {names}?",
            f"Of {listing(chosen)}, which city's latitude is nearest to that of {ref}?",
        ]
    )
    rivals = tuple(city_name(f, c) for _, c in gaps[1:])
    return text, Choice(city_name(f, gold), rivals)


# --- count ------------------------------------------------------------------------------


@shape("count")
def count_distinct_currencies(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in _countries() if c not in _STALE_CURRENCY and only_currency(f, c)]
    euro = [c for c in pool if only_currency(f, c) == _EURO]
    other = [c for c in pool if only_currency(f, c) != _EURO]
    n = r.choice([4, 5, 6])
    e = r.choice([0, 2, 3, 4])
    if e > n - 1:
        return None
    chosen = r.sample(r.sample(euro, e) + r.sample(other, n - e), n)  # shuffled
    codes = {only_currency(f, c) for c in chosen}
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"I'm travelling through {names}. How many different currencies will I need?",
            f"How many distinct currencies are used across {names}?",
            f"A business trip takes me to {names}. How many kinds of money will I have to "
            "change into?",
        ]
    )
    return text, Count(len(codes))


@shape("count")
def count_above_list_average(r: random.Random, f: Facts) -> Drawn:
    chosen = r.sample(_countries(), r.choice([4, 5, 6]))
    by_area = r.choice([True, False])
    values = [_size(f, c, by_area) for c in chosen]
    mean = statistics.mean(values)
    # None near the average, so that neither rounding nor the data's age moves one across it.
    if any(abs(v - mean) < (0.08 if by_area else 0.2) * mean for v in values):
        return None
    names = listing([the(c) for c in chosen])
    if by_area:
        wordings = [
            f"How many of {names} are larger than the average area of these countries?",
            f"Work out the mean area of {names}. How many of them are bigger than that?",
            f"Among {names}, how many cover more land than their average?",
        ]
    else:
        wordings = [
            f"How many of {names} have more people than the average population of these countries?",
            f"Work out the mean population of {names}. How many of them are above it?",
            f"Among {names}, how many are more populous than their average?",
        ]
    return r.choice(wordings), Count(sum(v > mean for v in values))


# --- yesno ------------------------------------------------------------------------------


@shape("yesno")
def gap_wider_yn(r: random.Random, f: Facts) -> Drawn:
    a, b, c, d = r.sample(_countries(), 4)
    by_area = r.choice([True, False])
    s = {x: _size(f, x, by_area) for x in (a, b, c, d)}
    gaps = (abs(s[a] - s[b]), abs(s[c] - s[d]))
    ratios = (max(s[a], s[b]) / min(s[a], s[b]), max(s[c], s[d]) / min(s[c], s[d]))
    yes = r.choice([True, False])
    # Clearly one way, as a difference and as a ratio alike.
    if (gaps[0] > gaps[1]) is not yes or (ratios[0] > ratios[1]) is not yes:
        return None
    if max(gaps) < (1.3 if by_area else 1.6) * min(gaps) or not apart(list(ratios), 0.1):
        return None
    noun = "area" if by_area else "population"
    text = r.choice(
        [
            f"Is the difference in {noun} between {the(a)} and {the(b)} bigger than the one "
            f"between {the(c)} and {the(d)}?",
            f"Do {the(a)} and {the(b)} differ more in {noun} than {the(c)} and {the(d)} do?",
            f"Comparing {noun}s: is the gap between {the(a)} and {the(b)} wider than the gap "
            f"between {the(c)} and {the(d)}?",
        ]
    )
    subjects = (country_name(f, a), country_name(f, c))
    return text, YesNo(yes, subjects, ("bigger", "larger", "wider", "greater"), ordered=True)


@shape("yesno")
def biggest_neighbour_yn(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 9)
    c = r.choice(sorted(ring))
    by_area = r.choice([True, False])
    ranked = sorted(ring[c], key=lambda n: _size(f, n, by_area), reverse=True)
    if not apart([_size(f, n, by_area) for n in ranked[:2]], _margin(by_area)):
        return None
    yes = r.choice([True, False])
    y = ranked[0] if yes else r.choice(ranked[1:])
    if by_area:
        wordings = [
            f"Is {_the(y)} the largest of {possessive(c)} neighbours by area?",
            f"Of all the countries bordering {_the(c)}, is {_the(y)} the biggest in area?",
            f"Does {_the(y)} cover more land than any other country next to {_the(c)}?",
        ]
    else:
        wordings = [
            f"Is {_the(y)} the most populous of {possessive(c)} neighbours?",
            f"Of all the countries bordering {_the(c)}, does {_the(y)} have the most people?",
            f"Is {_the(y)} home to more people than any other neighbour of {_the(c)}?",
        ]
    subjects = (country_name(f, y), country_name(f, c))
    verbs = ("largest", "biggest", "most populous", "most people", "more people", "more land")
    return r.choice(wordings), YesNo(yes, subjects, verbs)


# --- relative ---------------------------------------------------------------------------


@shape("relative")
def years_until_overtake(r: random.Random, f: Facts) -> Drawn:
    a = r.choice(_countries())
    pa = float(f.country(a)["population"])
    # A country with more people, but not so many more that catching up takes a lifetime.
    ahead = [c for c in _countries() if 1.1 * pa < f.country(c)["population"] < 2.5 * pa]
    if not ahead:
        return None
    b = r.choice(ahead)
    pb = float(f.country(b)["population"])
    ga, gb = sorted(r.sample([0.2, 0.4, 0.5, 0.8, 1.0, 1.2, 1.5, 2.0, 2.5, 3.0], 2), reverse=True)
    years = math.log(pb / pa) / math.log((1 + ga / 100) / (1 + gb / 100))
    if not 10 <= years <= 80:
        return None
    # Not where growth without compounding, or a number the question writes, passes for it.
    simple = (pb / pa - 1) / ((ga - gb) / 100)
    if not _distinct(years, [simple, ga, gb, 100 * (pb / pa - 1)], 0.05):
        return None
    text = r.choice(
        [
            f"If {possessive(a)} population grows {ga:g}% a year and {possessive(b)} "
            f"{gb:g}% a year, in how many years will {the(a)} catch up with {the(b)}?",
            f"{capital_first(the(a))} grows by {ga:g} percent a year, {the(b)} by {gb:g} "
            f"percent, both compounded. How many years until {the(a)} has as many people as "
            f"{the(b)}?",
            f"At {ga:g}% yearly growth for {the(a)} and {gb:g}% for {the(b)}, after how long "
            f"does {the(a)} draw level with {the(b)} in population?",
        ]
    )
    return text, Number(years, alternates=(float(math.ceil(years)), float(round(years))))


@shape("relative")
def percent_off_neighbour_average(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 8)
    c = r.choice(sorted(ring))
    by_area = r.choice([True, False])
    own = _size(f, c, by_area)
    sizes = [_size(f, n, by_area) for n in ring[c]]
    mean = statistics.mean(sizes)
    pct = 100 * (own / mean - 1)
    if not 10 <= abs(pct) <= 300:
        return None
    # Not where a share of its own size, the neighbours' median or total, or the ratio passes.
    slips = [
        100 * abs(own - mean) / own,
        100 * abs(own / statistics.median(sizes) - 1),
        100 * abs(own / sum(sizes) - 1),
        100 * own / mean,
    ]
    if not _distinct(abs(pct), slips, 0.05):
        return None
    noun = "area" if by_area else "population"
    way = "above" if pct > 0 else "below"
    text = r.choice(
        [
            f"By what percentage is {possessive(c)} {noun} {way} the average {noun} of its "
            "neighbours?",
            f"Take the mean {noun} of the countries bordering {_the(c)}. How many percent "
            f"{way} that is {possessive(c)} own?",
            f"Compared with the average of its neighbours, how far {way} it is {the(c)} in "
            f"{noun}, in percent?",
        ]
    )
    return text, Number(abs(pct))


# --- units ------------------------------------------------------------------------------


@shape("units")
def wind_speed_knots(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(_WINDY_CITIES)
    if r.choice([True, False]):
        knots = r.choice([12, 15, 18, 22, 25, 28, 30, 35, 40, 45, 50])
        given, gold, slip = float(knots), knots * KM_PER_NAUTICAL_MILE, knots * 1.609344
        wordings = [
            f"The marine forecast for {city} says gusts of {knots} knots. How fast is that in "
            "km/h?",
            f"Convert a wind speed of {knots} knots to kilometres per hour.",
            f"The sailing club in {city} calls off races above {knots} knots of wind. What is "
            "that in km/h?",
        ]
    else:
        kmh = r.choice([20, 30, 40, 45, 55, 65, 75, 90, 100, 120])
        given, gold, slip = float(kmh), kmh / KM_PER_NAUTICAL_MILE, kmh / 1.609344
        wordings = [
            f"My weather app says the wind in {city} will reach {kmh} km/h. How many knots is "
            "that?",
            f"Convert {kmh} km/h to knots.",
            f"A ferry out of {city} cruises at {kmh} km/h. What's its speed in knots?",
        ]
    # Not where the number given, or a conversion through statute miles, passes for it.
    if not _distinct(gold, [given, slip], 0.05):
        return None
    return r.choice(wordings), Number(gold)


@shape("units")
def heating_power_btu(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(_BTU_CITIES)
    if r.choice([True, False]):
        btu = r.choice([5000, 6000, 8000, 10000, 12000, 14000, 18000, 24000])
        watts = btu * WATTS_PER_BTU_PER_HOUR
        if r.choice([True, False]):
            gold, alternates = watts / 1000, (watts,)
            unit = "kilowatts"
        else:
            gold, alternates = watts, (watts / 1000,)
            unit = "watts"
        wordings = [
            f"I'm looking at a {btu:,} BTU air conditioner for my flat in {city}. What is its "
            f"cooling power in {unit}?",
            f"Convert {btu:,} BTU per hour to {unit}.",
            f"A window AC unit sold in {city} is rated at {btu:,} BTU/h. How many {unit} is that?",
        ]
    else:
        kw = r.choice([1.5, 2, 2.5, 3, 3.5, 5, 7, 9])
        gold, alternates = kw * 1000 / WATTS_PER_BTU_PER_HOUR, ()
        wordings = [
            f"My space heater in {city} is rated at {kw:g} kW. How many BTU per hour is that?",
            f"Convert {kw:g} kW of heating power to BTU/h.",
            f"A {kw:g} kW heat pump I saw in {city}: what is that in BTU per hour?",
        ]
    return r.choice(wordings), Number(gold, alternates)


# --- list -------------------------------------------------------------------------------


@shape("list")
def between_two_references(r: random.Random, f: Facts) -> Drawn:
    low, high = r.sample(_countries(), 2)
    by_area = r.choice([True, False])
    lo, hi = sorted((_size(f, low, by_area), _size(f, high, by_area)))
    if hi < 2 * lo:
        return None
    low, high = sorted((low, high), key=lambda c: _size(f, c, by_area))
    m = 0.08 if by_area else 0.15
    others = [c for c in _countries() if c not in (low, high)]
    inside = [c for c in others if lo * (1 + m) < _size(f, c, by_area) < hi * (1 - m)]
    outside = [
        c for c in others if not lo * (1 - m) <= _size(f, c, by_area) <= hi * (1 + m)
    ]  # fmt: skip
    n = r.choice([4, 5])
    k = r.choice([1, 2, 3])
    if len(inside) < k or len(outside) < n - k:
        return None
    picked = r.sample(inside, k)
    chosen = r.sample(picked + r.sample(outside, n - k), n)  # shuffled
    names = listing([the(c) for c in chosen])
    if by_area:
        wordings = [
            f"Which of {names} are between {the(low)} and {the(high)} in area?",
            f"Of {names}, which are larger in area than {the(low)} but smaller than {the(high)}?",
            f"List the countries among {names} whose area lies between {possessive(low)} and "
            f"{possessive(high)}.",
        ]
    else:
        wordings = [
            f"Which of {names} have a population between {possessive(low)} and {possessive(high)}?",
            f"Of {names}, which have more people than {the(low)} but fewer than {the(high)}?",
            f"List the countries among {names} whose population falls between those of "
            f"{the(low)} and {the(high)}.",
        ]
    return r.choice(wordings), Items(
        tuple(country_name(f, c) for c in chosen if c in picked),
        tuple(country_name(f, c) for c in chosen if c not in picked),
    )


@shape("list")
def bigger_than_two_combined(r: random.Random, f: Facts) -> Drawn:
    x, y = r.sample(_countries(), 2)
    by_area = r.choice([True, False])
    bar = _size(f, x, by_area) + _size(f, y, by_area)
    m = 0.08 if by_area else 0.15
    others = [c for c in _countries() if c not in (x, y)]
    over = [c for c in others if _size(f, c, by_area) > bar * (1 + m)]
    under = [c for c in others if _size(f, c, by_area) < bar * (1 - m)]
    # Some that beat each of the two alone but not both together: a list that added nothing
    # up would name them.
    alone = [c for c in under if _size(f, c, by_area) > max(_size(f, z, by_area) for z in (x, y))]
    n = r.choice([4, 5])
    k = r.choice([1, 2, 3])
    if len(over) < k or not alone or len(under) < n - k:
        return None
    picked = r.sample(over, k)
    first = r.choice(alone)
    rest = [first, *r.sample([c for c in under if c != first], n - k - 1)]
    chosen = r.sample(picked + rest, n)  # shuffled
    names = listing([the(c) for c in chosen])
    if by_area:
        wordings = [
            f"Which of {names} are larger in area than {the(x)} and {the(y)} put together?",
            f"Of {names}, which cover more land than {the(x)} and {the(y)} combined?",
            f"List the countries among {names} whose area exceeds the combined area of "
            f"{the(x)} and {the(y)}.",
        ]
    else:
        wordings = [
            f"Which of {names} have more people than {the(x)} and {the(y)} combined?",
            f"Of {names}, which are more populous than {the(x)} and {the(y)} put together?",
            f"List the countries among {names} whose population beats the combined "
            f"population of {the(x)} and {the(y)}.",
        ]
    return r.choice(wordings), Items(
        tuple(country_name(f, c) for c in chosen if c in picked),
        tuple(country_name(f, c) for c in chosen if c not in picked),
    )
