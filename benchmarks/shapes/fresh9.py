"""A ninth fresh batch of the shapes suite: templates written after the prompts were frozen.

Written on 2026-12-04, after the prompts, examples and tools were frozen, by someone who read
neither the prompts nor the worked examples (nor the planner, the joiner, the grounding code,
the grammar, the replies, the compiled or ReAct modes, the built-in tools' EXAMPLES or their
package's __init__, any saved result or eval output, or the history of the source), and who ran
no model and no eval.  What they read: common.py, scoring.py, __init__.py, tune.py, heldout.py
and fresh.py to fresh8.py of this package (for the format, and to stay off their shapes),
answer_eval.py only to wire this part in (and the names of the names suite's templates),
tests/test_shapes_fresh8.py and tests/shape_pins.py as models for the test, the built-in tools'
signatures and docstrings, and the fields of the country and city records (read through
`Facts`, to pick the pools).  Every template is a question shape that none of tune.py,
heldout.py, fresh.py to fresh8.py or the names suite has, two per category: the country a
currency belongs to, the country where a language is official, the capital of the country of
the northernmost (or southernmost) of three cities, the neighbour whose capital lies furthest
north (or south), which of two countries will have more people after years of different
growth, which of two countries named only by their capitals has more people, how many of a
list of cities lie in countries bordering a given one, on how many days readings in one
temperature scale passed a mark in the other, whether two cities are on the same continent,
whether two countries' areas are within a given percentage of each other, the yearly growth a
country needs to reach a round figure, how many times a country is its smallest neighbour,
engine power between kilowatts and horsepower, food energy between kilojoules and
kilocalories, the two cities of a list that share a country, and the countries of a list at
least a given percentage bigger than a reference.  No prompt was ever tuned on them.  Golds come
from the tools' own data through `Facts`, and no question depends on the clock, on a disputed
capital, on a territory counted as a country, on a border that overseas land makes arguable, on
a currency the data has out of date, on whether a city is counted within its limits or with
its suburbs, on whether a British city's country is the United Kingdom or one of its nations,
or on where a continent ends (no Americas, no Oceania, no country on two continents); no
question asks for a choice between values too close to call.

    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh9 --per-template 2
"""

from __future__ import annotations

import random

from .common import (
    COUNTRIES,
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
from .fresh import _TERRITORIES, _capital, _distinct, _home
from .fresh2 import _SAFE_MARGIN, _TWO_CONTINENTS
from .fresh4 import _capitals, _country_or_capital
from .fresh5 import _ring
from .fresh7 import _cities, _homes, _named_capital
from .scoring import Choice, Count, Items, Name, Number, YesNo, fold

TEMPLATES: list[Template] = []
shape = registry(TEMPLATES)

WATTS_PER_HP = 745.69987158227022  # mechanical horsepower (pint's "hp")
WATTS_PER_PS = 735.49875  # metric horsepower (PS, CV), which European brochures often mean
KJ_PER_KCAL = 4.184  # the thermochemical kilocalorie; the IT one (4.1868) is within 0.1 %
# Currencies issued by one country alone, by names that do not give the country away (not the
# rupee, peso, dinar, krona, franc, won, rand, leu or real), with their ISO 4217 codes.
_OWN_CURRENCIES = {
    "forint": ("Hungary", "HUF"), "zloty": ("Poland", "PLN"), "yen": ("Japan", "JPY"),
    "baht": ("Thailand", "THB"), "rupiah": ("Indonesia", "IDR"), "dong": ("Vietnam", "VND"),
    "naira": ("Nigeria", "NGN"), "cedi": ("Ghana", "GHS"), "taka": ("Bangladesh", "BDT"),
    "birr": ("Ethiopia", "ETB"), "hryvnia": ("Ukraine", "UAH"), "tugrik": ("Mongolia", "MNT"),
    "ringgit": ("Malaysia", "MYR"), "tenge": ("Kazakhstan", "KZT"), "dram": ("Armenia", "AMD"),
    "kyat": ("Myanmar", "MMK"), "kip": ("Laos", "LAK"), "riel": ("Cambodia", "KHR"),
    "quetzal": ("Guatemala", "GTQ"), "lempira": ("Honduras", "HNL"), "lari": ("Georgia", "GEL"),
}  # fmt: skip
# Languages official in one country alone (in law and in the data), by names that mostly do
# not give the country away.  Not Tigrinya (a federal working language of Ethiopia too since
# 2020), not Nepali (on India's schedule), none of a language listed under another country.
_OWN_LANGUAGES = {
    "Amharic": "Ethiopia", "Khmer": "Cambodia", "Burmese": "Myanmar", "Sinhala": "Sri Lanka",
    "Malagasy": "Madagascar", "Dzongkha": "Bhutan", "Kinyarwanda": "Rwanda",
    "Kirundi": "Burundi", "Dhivehi": "Maldives", "Icelandic": "Iceland",
    "Mongolian": "Mongolia", "Estonian": "Estonia", "Georgian": "Georgia",
}  # fmt: skip
# Other names an answer may give these countries.
_ALSO_CALLED = {"Myanmar": ("Burma",), "Georgia": ("Sakartvelo",)}
# Continents a question may ask about: regions of the data that are one continent each (not
# the Americas, two continents; not Oceania, where Australia the continent ends before New
# Zealand).
_ONE_CONTINENT = ("Europe", "Asia", "Africa")
# Cities of the United States, where weather apps read in Fahrenheit.
_FAHRENHEIT_CITIES = ("Chicago", "Houston", "Seattle")
# Cities with warm summers, whose highs in Celsius the question lists.
_CELSIUS_CITIES = (
    "Seville", "Malaga", "Naples", "Palermo", "Marseille", "Florence", "Bologna", "Milan",
    "Thessaloniki", "Lyon", "Osaka", "Kyoto", "Shanghai",
)  # fmt: skip
# Cities where food labels give kilojoules.
_KILOJOULE_CITIES = ("Sydney", "Melbourne", "Perth", "Brisbane", "Auckland")


def _countries() -> list[str]:
    return [c for c in COUNTRIES if c not in _TERRITORIES]


def _also_called(f: Facts, c: str) -> Name:
    name = country_name(f, c)
    return Name(name.text, (*name.aliases, *_ALSO_CALLED.get(c, ())))


def _lat(f: Facts, city: str) -> float:
    return float(f.city(city)["latitude"])


def _capital_lat(f: Facts, c: str) -> float:
    record = capital_city(f, c)
    assert record is not None
    return float(record["latitude"])


def _size(f: Facts, c: str, by_area: bool) -> float:
    return area(f, c) if by_area else float(pop(f, c))


# --- lookup -----------------------------------------------------------------------------


@shape("lookup")
def country_of_currency(r: random.Random, f: Facts) -> Drawn:
    money = r.choice(sorted(_OWN_CURRENCIES))
    c, code = _OWN_CURRENCIES[money]
    if f.country(c)["currencies"] != [code]:
        return None
    text = r.choice(
        [
            f"Which country uses the {money} as its currency?",
            f"I found some old banknotes in a drawer, marked '{money}'. Which country are they "
            "from?",
            f"The prices on this menu are all in {money}. Which country am I in?",
            f"The {money} is the money of which country?",
        ]
    )
    return text, Choice(_also_called(f, c))


@shape("lookup")
def country_of_language(r: random.Random, f: Facts) -> Drawn:
    language = r.choice(sorted(_OWN_LANGUAGES))
    c = _OWN_LANGUAGES[language]
    if language not in f.country(c)["languages"]:
        return None
    text = r.choice(
        [
            f"In which country is {language} an official language?",
            f"{language} is the official language of which country?",
            f"My new colleague grew up speaking {language}, the official language of her home "
            "country. Which country is that?",
            f"Which country has {language} among its official languages?",
        ]
    )
    return text, Choice(_also_called(f, c))


# --- chain ------------------------------------------------------------------------------


@shape("chain")
def capital_of_extreme_city(r: random.Random, f: Facts) -> Drawn:
    pool = [city for city in _cities(f) if _named_capital(f, _home(f, city))]
    a, b, c = r.sample(pool, 3)
    homes = {city: _home(f, city) for city in (a, b, c)}
    if len(set(homes.values())) < 3:
        return None
    north = r.choice([True, False])
    ranked = sorted(homes, key=lambda city: _lat(f, city), reverse=north)
    if abs(_lat(f, ranked[0]) - _lat(f, ranked[1])) < 2:
        return None
    side = "north" if north else "south"
    most = "northernmost" if north else "southernmost"
    names = listing([a, b, c])
    text = r.choice(
        [
            f"Of {names}, take the city that lies furthest {side}. What is the capital of the "
            "country it is in?",
            f"I'm flying to whichever of {names} is furthest {side}, then on to the capital of "
            "that city's country. Which capital will that be?",
            f"Find the {most} of these cities: {names}. Which city is the capital of its country?",
        ]
    )
    gold = _capital(f, homes[ranked[0]])
    return text, Choice(gold, tuple(_capital(f, homes[city]) for city in ranked[1:]))


@shape("chain")
def neighbour_with_extreme_capital(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 9)
    fits = [c for c, ns in sorted(ring.items()) if all(_named_capital(f, n) for n in ns)]
    c = r.choice(fits)
    north = r.choice([True, False])
    ranked = sorted(ring[c], key=lambda n: _capital_lat(f, n), reverse=north)
    if abs(_capital_lat(f, ranked[0]) - _capital_lat(f, ranked[1])) < 1:
        return None
    side = "north" if north else "south"
    most = "most northerly" if north else "most southerly"
    text = r.choice(
        [
            f"Which of {possessive(c)} neighbours has its capital furthest {side}?",
            f"Among the countries bordering {the(c)}, whose capital city lies farthest {side}?",
            f"Of all the countries that share a border with {the(c)}, which one has the {most} "
            "capital?",
        ]
    )
    rivals = tuple(_country_or_capital(f, n) for n in ranked[1:])
    return text, Choice(_country_or_capital(f, ranked[0]), rivals)


# --- comparison -------------------------------------------------------------------------


@shape("comparison")
def more_people_after_growth(r: random.Random, f: Facts) -> Drawn:
    a = r.choice(_countries())
    # Two countries close enough in people that the growth may turn the order round.
    near = [
        c
        for c in _countries()
        if c != a and max(pop(f, a), pop(f, c)) < 1.6 * min(pop(f, a), pop(f, c))
    ]
    if not near:
        return None
    b = r.choice(near)
    ga, gb = r.sample([0.3, 0.5, 0.8, 1.0, 1.2, 1.5, 2.0, 2.5, 3.0], 2)
    years = r.choice([10, 15, 20, 25, 30, 40])
    now = {a: float(pop(f, a)), b: float(pop(f, b))}
    later = {a: now[a] * (1 + ga / 100) ** years, b: now[b] * (1 + gb / 100) ** years}
    if not apart(list(later.values()), 0.1):
        return None
    # Half the draws are ones where growth turns the order round.
    flip = r.choice([True, False])
    if ((now[a] > now[b]) != (later[a] > later[b])) is not flip:
        return None
    text = r.choice(
        [
            f"If {possessive(a)} population grows {ga:g}% a year and {possessive(b)} grows "
            f"{gb:g}% a year, which country will have more people in {years} years?",
            f"Suppose {the(a)} grows by {ga:g} percent per year and {the(b)} by {gb:g} percent "
            f"per year, compounded. After {years} years, which of the two is more populous?",
            f"A projection: {the(a)} at {ga:g}% annual growth, {the(b)} at {gb:g}%. Which has "
            f"the larger population after {years} years?",
        ]
    )
    gold, rival = (a, b) if later[a] > later[b] else (b, a)
    return text, Choice(country_name(f, gold), (country_name(f, rival),))


@shape("comparison")
def more_populous_by_capital(r: random.Random, f: Facts) -> Drawn:
    # Not a capital named after its country (Mexico City), nor London (England's too).
    pool = [
        c
        for c in _capitals(f)
        if fold(c) not in fold(f.country(c)["capital"]) and c != "United Kingdom"
    ]
    a, b = r.sample(pool, 2)
    if not apart([float(pop(f, a)), float(pop(f, b))], _SAFE_MARGIN):
        return None
    x, y = (str(f.country(c)["capital"]) for c in (a, b))
    more = r.choice([True, False])
    if more:
        wordings = [
            f"Which country has more people: the one whose capital is {x}, or the one whose "
            f"capital is {y}?",
            f"Two capitals, {x} and {y}. Whose country is more populous?",
            f"Is the country governed from {x} or the one governed from {y} home to more people?",
        ]
    else:
        wordings = [
            f"Which country has fewer people: the one whose capital is {x}, or the one whose "
            f"capital is {y}?",
            f"Two capitals, {x} and {y}. Whose country is less populous?",
            f"Is the country governed from {x} or the one governed from {y} home to fewer people?",
        ]
    gold, rival = (a, b) if (pop(f, a) > pop(f, b)) is more else (b, a)
    return r.choice(wordings), Choice(
        _country_or_capital(f, gold), (_country_or_capital(f, rival),)
    )


# --- count ------------------------------------------------------------------------------


@shape("count")
def count_cities_in_neighbour_countries(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 9)
    homes = _homes(f)
    fits = [c for c, ns in sorted(ring.items()) if any(n in homes for n in ns)]
    x = r.choice(fits)
    near = {str(f.country(n)["name"]) for n in ring[x]}
    here = str(f.country(x)["name"])
    inside = [city for city in _cities(f) if _home(f, city) in near]
    # Cities elsewhere, from the same part of the world where there are enough of them; none in
    # the country itself.
    outside = [
        city
        for city in _cities(f)
        if _home(f, city) not in near | {here}
        and f.country(_home(f, city))["region"] == f.country(x)["region"]
    ]
    if len(outside) < 4:
        outside = [city for city in _cities(f) if _home(f, city) not in near | {here}]
    n = r.choice([4, 5])
    k = r.choice(list(range(min(n - 1, len(inside)) + 1)))
    chosen = r.sample(r.sample(inside, k) + r.sample(outside, n - k), n)  # shuffled
    names = listing(chosen)
    text = r.choice(
        [
            f"How many of these cities are in a country that borders {the(x)}: {names}?",
            f"I'm visiting {names}. How many of those cities lie in countries neighbouring "
            f"{the(x)}?",
            f"Of {names}, how many are in one of {possessive(x)} neighbouring countries?",
        ]
    )
    return text, Count(k)


@shape("count")
def count_days_past_converted_mark(r: random.Random, f: Facts) -> Drawn:
    above = r.choice([True, False])
    n = r.choice([5, 6, 7])
    if r.choice([True, False]):
        # Readings in Fahrenheit, the mark in Celsius.
        city = r.choice(_FAHRENHEIT_CITIES)
        mark = r.choice([18, 20, 22, 25, 27, 30, 32])
        at = mark * 1.8 + 32
        readings = r.sample(
            [v for v in range(round(at) - 16, round(at) + 17) if abs(v - at) >= 2], n
        )
        given, wanted = "°F", "°C"
    else:
        city = r.choice(_CELSIUS_CITIES)
        mark = r.choice([60, 65, 70, 75, 80, 85, 90, 95])
        at = (mark - 32) / 1.8
        readings = r.sample(
            [v for v in range(round(at) - 9, round(at) + 10) if abs(v - at) >= 1], n
        )
        given, wanted = "°C", "°F"
    k = sum((v > at) is above for v in readings)
    if not 0 < k < n:
        return None
    written = listing([str(v) for v in readings])
    if above:
        wordings = [
            f"My weather app showed these daily highs in {city} this week: {written} {given}. "
            f"On how many days was it warmer than {mark} {wanted}?",
            f"Afternoon temperatures in {city} lately, in {given}: {written}. How many of those "
            f"days topped {mark} {wanted}?",
        ]
    else:
        wordings = [
            f"My weather app showed these daily highs in {city} this week: {written} {given}. "
            f"On how many days did it stay cooler than {mark} {wanted}?",
            f"Afternoon temperatures in {city} lately, in {given}: {written}. On how many of "
            f"those days did it stay below {mark} {wanted}?",
        ]
    return r.choice(wordings), Count(k)


# --- yesno ------------------------------------------------------------------------------


@shape("yesno")
def same_continent_yn(r: random.Random, f: Facts) -> Drawn:
    region = {
        city: str(f.country(_home(f, city))["region"])
        for city in _cities(f)
        if _home(f, city) not in _TWO_CONTINENTS
    }
    where = r.choice(_ONE_CONTINENT)
    a = r.choice(sorted(c for c, g in region.items() if g == where))
    yes = r.choice([True, False])
    pool = [
        c
        for c, g in sorted(region.items())
        if g in _ONE_CONTINENT and (g == where) is yes and _home(f, c) != _home(f, a)
    ]
    if not pool:
        return None
    b = r.choice(pool)
    text = r.choice(
        [
            f"Are {a} and {b} on the same continent?",
            f"Is {a} on the same continent as {b}?",
            f"I have meetings in {a} and then in {b}. Will I stay on one continent?",
        ]
    )
    subjects = (city_name(f, a), city_name(f, b))
    verbs = ("same continent", "one continent", "both in", "both on", "both located")
    return text, YesNo(yes, subjects, verbs)


@shape("yesno")
def areas_within_percent_yn(r: random.Random, f: Facts) -> Drawn:
    # Areas only: populations in the data are some years old, areas hold.
    pct = r.choice([5, 10, 15, 20, 25])
    yes = r.choice([True, False])
    size = {c: area(f, c) for c in _countries()}
    countries = sorted(size)
    pairs = []
    for i, a in enumerate(countries):
        for b in countries[i + 1 :]:
            big, small = max(size[a], size[b]), min(size[a], size[b])
            # However the gap is put (of the smaller, of the bigger, of the mean), it is well
            # inside or well outside the mark.
            of_small, of_big = (big - small) / small, (big - small) / big
            if yes and of_small < 0.75 * pct / 100:
                pairs.append((a, b))
            if not yes and 1.25 * pct / 100 < of_big and of_small < 3 * pct / 100:
                pairs.append((a, b))
    if not pairs:
        return None
    a, b = r.choice(pairs)
    if r.choice([True, False]):
        a, b = b, a
    text = r.choice(
        [
            f"Are {the(a)} and {the(b)} within {pct}% of each other in area?",
            f"Is {the(a)} roughly the same size as {the(b)}, meaning their areas differ by less "
            f"than {pct} percent?",
            f"A friend says {the(a)} and {the(b)} are within {pct}% of each other in area. "
            "Is that right?",
        ]
    )
    subjects = (country_name(f, a), country_name(f, b))
    return text, YesNo(yes, subjects, ("within", "same size", "less than"))


# --- relative ---------------------------------------------------------------------------


@shape("relative")
def growth_rate_needed(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(_countries())
    now = float(pop(f, c))
    years = r.choice([10, 15, 20, 25, 30])
    marks = [m * 1e6 for m in (1, 2, 5, 10, 15, 20, 30, 40, 50, 60, 80, 100, 150, 200, 300, 500)]
    fits = [m for m in marks if 1.1 * now < m < 2.5 * now]
    if not fits:
        return None
    mark = r.choice(fits)
    rate = (mark / now) ** (1 / years) - 1
    if not 0.003 <= rate <= 0.04:
        return None
    # Not where growth without compounding, or a number the question writes, passes for it.
    linear = (mark / now - 1) / years
    if not _distinct(100 * rate, [100 * linear, years, mark / 1e6, now / 1e6], 0.05):
        return None
    text = r.choice(
        [
            f"What constant yearly growth rate would take {possessive(c)} population to "
            f"{millions(mark)} in {years} years?",
            f"{capital_first(the(c))} wants {millions(mark)} inhabitants within {years} years. "
            "What compound annual growth, in percent, gets it there?",
            f"At what annual rate, compounded, would {the(c)} have to grow to reach "
            f"{millions(mark)} people after {years} years?",
        ]
    )
    return text, Number(100 * rate, alternates=(rate,))


@shape("relative")
def times_smallest_neighbour(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 10)
    c = r.choice(sorted(ring))
    by_area = r.choice([True, False])
    ranked = sorted(ring[c], key=lambda n: _size(f, n, by_area))
    sizes = [_size(f, n, by_area) for n in ranked[:2]]
    if not apart(sizes, 0.1 if by_area else _SAFE_MARGIN):
        return None
    ratio = _size(f, c, by_area) / sizes[0]
    if not 1.5 <= ratio <= 1000:
        return None
    if by_area:
        wordings = [
            f"How many times bigger than its smallest neighbour is {the(c)}, by area?",
            f"Take {possessive(c)} smallest neighbouring country by area. How many times would "
            f"it fit into {the(c)}?",
            f"{capital_first(possessive(c))} area is how many times that of the smallest "
            "country bordering it?",
        ]
    else:
        wordings = [
            f"How many times as many people as its least populous neighbour does {the(c)} have?",
            f"Compare {the(c)} with the neighbouring country that has the fewest inhabitants: "
            f"how many times larger is {possessive(c)} population?",
            f"{capital_first(possessive(c))} population is how many times that of its least "
            "populous neighbour?",
        ]
    return r.choice(wordings), Number(ratio)


# --- units ------------------------------------------------------------------------------


@shape("units")
def engine_power(r: random.Random, f: Facts) -> Drawn:
    if r.choice([True, False]):
        city = r.choice([c for c in _cities(f) if f.country(_home(f, c))["region"] == "Europe"])
        kw = r.choice([55, 66, 75, 81, 90, 100, 110, 125, 140, 150, 185, 210])
        given, gold, alt = float(kw), kw * 1000 / WATTS_PER_HP, kw * 1000 / WATTS_PER_PS
        wordings = [
            f"The car I rented in {city} has a {kw} kW engine. How much horsepower is that?",
            f"Convert an engine power of {kw} kW to horsepower.",
            f"A dealer's spec sheet in {city} lists {kw} kW. What's that in hp?",
        ]
    else:
        city = r.choice(_FAHRENHEIT_CITIES)
        hp = r.choice([90, 120, 150, 180, 200, 250, 300, 400])
        given, gold, alt = float(hp), hp * WATTS_PER_HP / 1000, hp * WATTS_PER_PS / 1000
        wordings = [
            f"My pickup back in {city} is rated at {hp} hp. How many kilowatts is that?",
            f"Convert {hp} horsepower to kW.",
            f"An ad in {city} says the boat's outboard makes {hp} hp. What is that in kilowatts?",
        ]
    if not _distinct(gold, [given], 0.05):
        return None
    # Horsepower as the metric PS is right too.
    return r.choice(wordings), Number(gold, (alt,))


@shape("units")
def food_energy(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(_KILOJOULE_CITIES)
    if r.choice([True, False]):
        kj = r.choice([420, 600, 750, 850, 980, 1200, 1450, 1700, 2100])
        given, gold = float(kj), kj / KJ_PER_KCAL
        wordings = [
            f"A muesli bar I bought in {city} says {kj:,} kJ per serve. How many kilocalories "
            "is that?",
            f"Convert {kj:,} kilojoules to Calories (kcal).",
            f"The menu at a café in {city} lists a sandwich at {kj:,} kJ. What is that in kcal?",
        ]
    else:
        kcal = r.choice([90, 150, 210, 250, 320, 400, 480, 550, 650])
        given, gold = float(kcal), kcal * KJ_PER_KCAL
        wordings = [
            f"Labels in {city} give kilojoules, but my snack from home says {kcal} kcal. How "
            "many kJ is that?",
            f"Convert {kcal} kcal to kilojoules.",
            f"How many kJ are in a {kcal}-Calorie meal?",
        ]
    if not _distinct(gold, [given], 0.05):
        return None
    return r.choice(wordings), Number(gold)


# --- list -------------------------------------------------------------------------------


@shape("list")
def two_cities_same_country(r: random.Random, f: Facts) -> Drawn:
    homes = _homes(f)
    country = r.choice(sorted(c for c, cities in homes.items() if len(cities) >= 2))
    pair = r.sample(homes[country], 2)
    region = f.country(country)["region"]
    # The others from as many countries, none the pair's, in the same part of the world where
    # there are enough of them.
    others = sorted(c for c in homes if c != country and f.country(c)["region"] == region)
    m = r.choice([2, 3])
    if len(others) < m:
        others = sorted(c for c in homes if c != country)
    rest = [r.choice(homes[c]) for c in r.sample(others, m)]
    chosen = r.sample(pair + rest, len(pair) + m)  # shuffled
    names = listing(chosen)
    text = r.choice(
        [
            f"Two of these cities are in the same country: {names}. Which two?",
            f"Of {names}, which pair lies in one and the same country?",
            f"I'm told exactly two of {names} share a country. Which ones are they?",
        ]
    )
    return text, Items(tuple(city_name(f, c) for c in pair), tuple(city_name(f, c) for c in rest))


@shape("list")
def at_least_percent_bigger(r: random.Random, f: Facts) -> Drawn:
    ref = r.choice(_countries())
    by_area = r.choice([True, False])
    pct = r.choice([20, 25, 30, 50])
    margin = 0.05 if by_area else 0.1
    at = _size(f, ref, by_area)
    mark = at * (1 + pct / 100)
    others = [c for c in _countries() if c != ref]
    over = [c for c in others if _size(f, c, by_area) > mark * (1 + margin)]
    # Bigger than the reference, but not by the percentage: a list that ignored it would
    # name them.
    short = [c for c in others if at * (1 + margin) < _size(f, c, by_area) < mark * (1 - margin)]
    under = [c for c in others if _size(f, c, by_area) < at * (1 - margin)]
    n = r.choice([4, 5])
    k = r.choice([1, 2, 3])
    s = r.choice([1, 2])
    if len(over) < k or len(short) < s or len(under) < n - k - s or n - k - s < 0:
        return None
    inside = r.sample(over, k)
    rest = r.sample(short, s) + r.sample(under, n - k - s)
    chosen = r.sample(inside + rest, n)  # shuffled
    names = listing([the(c) for c in chosen])
    if by_area:
        wordings = [
            f"Which of {names} are at least {pct}% larger than {the(ref)} in area?",
            f"Of {names}, which are more than {pct} percent bigger in area than {the(ref)}?",
            f"List the countries among {names} whose area exceeds {possessive(ref)} by {pct}% "
            "or more.",
        ]
    else:
        wordings = [
            f"Which of {names} have at least {pct}% more people than {the(ref)}?",
            f"Of {names}, which are more than {pct} percent more populous than {the(ref)}?",
            f"List the countries among {names} whose population beats {possessive(ref)} by "
            f"{pct}% or more.",
        ]
    return r.choice(wordings), Items(
        tuple(country_name(f, c) for c in chosen if c in inside),
        tuple(country_name(f, c) for c in chosen if c not in inside),
    )
