"""A fifth fresh batch of the shapes suite: templates written after the prompts were frozen.

Written on 2026-12-03, after the prompts, examples and tools were frozen, by someone who read
neither the prompts nor the worked examples (nor the planner, the joiner, the grounding code,
the grammar, the replies, the compiled or ReAct modes, the built-in tools' EXAMPLES, any saved
result or eval output, or the history of the source), and who ran no model and no eval.  What
they read: common.py, scoring.py, __init__.py, tune.py, heldout.py, fresh.py, fresh2.py,
fresh3.py and fresh4.py of this package (for the format, and to stay off their shapes),
answer_eval.py only to wire this part in (and the names of the names suite's templates, to stay
off those too), tests/test_shapes_fresh4.py and tests/shape_pins.py as models for the test, the
built-in tools' signatures and docstrings, and the fields of the country and city records.  Every
template is a question shape that none of tune.py, heldout.py, fresh.py to fresh4.py or the
names suite has, two per category: a country's neighbours listed, the currencies of a trip
through three countries, the population of the capital of a city's country (three hops), the
people of two cities' countries added up, whose neighbours together are bigger, the biggest of a
list among the euro users only, how many capitals lie north of a parallel, how many languages
two countries have between them, whether a country is denser than every neighbour, whether a
density passes a mark, a population after years of compound growth, a sum of money per head, a
height in feet and inches in centimetres, an average of temperatures in the other scale, the
neighbours of one country that do not border another, and the countries that outnumber a city.
No prompt was ever tuned on them.  (Once every template here was written and tested, a lint run
over the shared tree printed five lines of one worked example, a plan counting countries above a
population mark; no template was changed or added after it.)  Golds come from the tools' own data
through `Facts`, and no question depends on the clock, on a disputed capital, on a territory
counted as a country, on a border that overseas land makes arguable, on a currency the data has
out of date, or on whether a city is counted within its limits or with its suburbs; no question
asks for a choice between values too close to call.

    PYTHONPATH=src python benchmarks/answer_eval.py --suite shapes --part fresh5 --per-template 2
"""

from __future__ import annotations

import random
import statistics

from .common import (
    CITIES,
    COUNTRIES,
    Drawn,
    Facts,
    Template,
    apart,
    area,
    capital_city,
    capital_first,
    country_name,
    currency_name,
    density,
    listing,
    only_currency,
    pop,
    possessive,
    registry,
    the,
)
from .fresh import _CONTESTED, _STALE_CURRENCY, _TERRITORIES, _distinct, _home
from .fresh2 import _SAFE_MARGIN
from .fresh3 import _BORDER_IN_DOUBT, _COUNT_IN_DOUBT, _WHOLE
from .fresh4 import (
    _CLEAR_FACTOR,
    _KASHMIR,
    _LANGUAGES_COUNTED,
    _NO_CAPITAL_QUESTION,
    _capitals,
)
from .scoring import Choice, Count, Items, Name, Number, YesNo

TEMPLATES: list[Template] = []
shape = registry(TEMPLATES)

CM_PER_INCH = 2.54


def _settled_neighbours(f: Facts, c: str) -> list[str] | None:
    """`c`'s neighbours when nobody argues about them: none a territory or across a contested
    border, none that overseas land, Kashmir or Hans Island makes arguable; else None."""
    neighbours = list(f.country(c)["neighbours"])
    if c in _COUNT_IN_DOUBT | _KASHMIR | _CONTESTED | _TERRITORIES:
        return None
    if set(neighbours) & (_TERRITORIES | _CONTESTED):
        return None
    if any(frozenset((c, n)) in _BORDER_IN_DOUBT for n in neighbours):
        return None
    return neighbours


def _ring(f: Facts, least: int, most: int) -> dict[str, list[str]]:
    """Countries with `least` to `most` settled neighbours, every one with a whole record."""
    out = {}
    for c in _WHOLE:
        neighbours = _settled_neighbours(f, c)
        if neighbours is None or not least <= len(neighbours) <= most:
            continue
        if all(f.country(n)["population"] and f.country(n)["area_km2"] for n in neighbours):
            out[c] = neighbours
    return out


def _size(f: Facts, c: str, by_area: bool) -> float:
    return area(f, c) if by_area else float(pop(f, c))


def _lat(f: Facts, c: str) -> float:
    record = capital_city(f, c)
    assert record is not None
    return float(record["latitude"])


def _money(amount: float) -> str:
    """ "$250 million", "$2 billion"."""
    return f"${amount / 1e9:g} billion" if amount >= 1e9 else f"${amount / 1e6:g} million"


# --- lookup -----------------------------------------------------------------------------


@shape("lookup")
def neighbours_named(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 5)
    c = r.choice(sorted(ring))
    neighbours = ring[c]
    # Rivals: the countries next door to a neighbour that do not border the country itself
    # (those with whole records: the data lacks some, such as Kosovo).
    beyond = {
        x
        for n in neighbours
        for x in f.country(n)["neighbours"]
        if x in _WHOLE and x not in neighbours and x != f.country(c)["name"]
    }
    text = r.choice(
        [
            f"Which countries border {the(c)} by land?",
            f"What countries does {the(c)} share a land border with? Name them all.",
            f"I'm planning a road trip from {the(c)}. Which countries could I drive straight "
            "into across its border?",
        ]
    )
    return text, Items(
        tuple(country_name(f, n) for n in neighbours),
        tuple(country_name(f, x) for x in sorted(beyond)),
    )


@shape("lookup")
def trip_currencies(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in COUNTRIES if c not in _STALE_CURRENCY and only_currency(f, c)]
    chosen = r.sample(pool, 3)
    codes = list(dict.fromkeys(str(only_currency(f, c)) for c in chosen))
    # No two currencies an answer may call by one name (the Swedish and Icelandic krona).
    spellings = [set(currency_name(code).folded()) for code in codes]
    if any(a & b for i, a in enumerate(spellings) for b in spellings[i + 1 :]):
        return None
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"I'm backpacking through {names} this summer. Which currencies will I need?",
            f"What currencies are used in {names}?",
            f"Which kinds of money should I get before a trip to {names}?",
        ]
    )
    return text, Items(tuple(currency_name(code) for code in codes))


# --- chain ------------------------------------------------------------------------------


@shape("chain")
def home_capital_population(r: random.Random, f: Facts) -> Drawn:
    city = r.choice(CITIES)
    home = _home(f, city)
    record = capital_city(f, home)
    if home in _NO_CAPITAL_QUESTION or record is None or record["name"] == f.city(city)["name"]:
        return None
    gold = float(record["population"])
    # Not where the city's own people, or its country's, could pass for the capital's.
    if not _distinct(gold, [float(f.city(city)["population"]), float(pop(f, home))], 0.05):
        return None
    text = r.choice(
        [
            f"What's the population of the capital of the country {city} is in?",
            f"My cousin lives in {city}. How many people live in her country's capital?",
            f"{city} isn't its country's capital. How many inhabitants does the actual "
            "capital have?",
        ]
    )
    return text, Number(gold)


@shape("chain")
def home_countries_combined_population(r: random.Random, f: Facts) -> Drawn:
    a, b = r.sample(CITIES, 2)
    homes = [_home(f, a), _home(f, b)]
    if homes[0] == homes[1]:
        return None
    people = [float(pop(f, h)) for h in homes]
    gold = sum(people)
    # Not where one country alone, or the two cities' people, could pass for the sum.
    cities = float(f.city(a)["population"]) + float(f.city(b)["population"])
    if not _distinct(gold, [*people, cities], 0.05):
        return None
    text = r.choice(
        [
            f"My parents live in {a} and my in-laws in {b}. How many people live in those "
            "two countries combined?",
            f"What is the total population of the countries that {a} and {b} are in?",
            f"Add up the populations of the countries where {a} and {b} are located.",
        ]
    )
    return text, Number(gold)


# --- comparison -------------------------------------------------------------------------


@shape("comparison")
def bigger_neighbourhood(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 4)
    a, b = r.sample(sorted(ring), 2)
    # Neither among the other's neighbours, so that listing those names no rival.
    names_a = {f.country(n)["name"] for n in ring[a]}
    names_b = {f.country(n)["name"] for n in ring[b]}
    if f.country(a)["name"] in names_b or f.country(b)["name"] in names_a:
        return None
    by_area = r.choice([True, False])
    total = {c: sum(_size(f, n, by_area) for n in ring[c]) for c in (a, b)}
    if not apart(list(total.values()), 0.1 if by_area else _SAFE_MARGIN):
        return None
    if by_area:
        wordings = [
            f"Whose neighbours cover more land altogether, {possessive(a)} or {possessive(b)}?",
            f"Add up the areas of the countries bordering {the(a)}, and do the same for "
            f"{the(b)}. Which country's neighbours come to more?",
            f"Which country is surrounded by more land, counting only the countries that "
            f"border it: {the(a)} or {the(b)}?",
        ]
    else:
        wordings = [
            f"Whose neighbours have more people altogether, {possessive(a)} or {possessive(b)}?",
            f"Add up the populations of the countries bordering {the(a)}, and do the same "
            f"for {the(b)}. Which country's neighbours come to more?",
            f"Which country has more people living next door, counting everyone in the "
            f"countries that border it: {the(a)} or {the(b)}?",
        ]
    gold = max(total, key=total.__getitem__)
    rival = b if gold == a else a
    return r.choice(wordings), Choice(country_name(f, gold), (country_name(f, rival),))


@shape("comparison")
def largest_among_euro_users(r: random.Random, f: Facts) -> Drawn:
    pool = [c for c in COUNTRIES if c not in _STALE_CURRENCY and f.country(c)["currencies"]]
    euro = [c for c in pool if "EUR" in f.country(c)["currencies"]]
    other = [c for c in pool if c not in euro]
    by_area = r.choice([True, False])
    n = r.choice([4, 5])
    k = r.choice([2, 3])
    chosen = r.sample(r.sample(euro, k) + r.sample(other, n - k), n)  # shuffled
    size = {c: _size(f, c, by_area) for c in chosen}
    users = sorted((c for c in chosen if c in euro), key=size.__getitem__, reverse=True)
    # The biggest of all does not use the euro (else no filter is needed), and the biggest
    # euro user is plainly ahead of the next.
    if max(chosen, key=size.__getitem__) in euro:
        return None
    if not apart([size[users[0]], size[users[1]]], 0.1 if by_area else _SAFE_MARGIN):
        return None
    names = listing([the(c) for c in chosen])
    if by_area:
        wordings = [
            f"Of {names}, which is the largest country by area that uses the euro?",
            f"Among {names}, which euro country covers the most ground?",
            f"I want to pay in euros everywhere. Of {names}, which is the biggest country, "
            "by area, where I can?",
        ]
    else:
        wordings = [
            f"Of {names}, which is the most populous country that uses the euro?",
            f"Among {names}, which euro country has the most people?",
            f"I only want countries with the euro. Of {names}, which one has the largest "
            "population?",
        ]
    # Only the other euro users are rivals: an answer may name the bigger non-euro country
    # first to set it aside.
    rivals = tuple(country_name(f, c) for c in users[1:])
    return r.choice(wordings), Choice(country_name(f, users[0]), rivals)


# --- count ------------------------------------------------------------------------------


@shape("count")
def count_capitals_north_of(r: random.Random, f: Facts) -> Drawn:
    parallel = r.choice([30, 40, 45, 50, 55])
    capitals = _capitals(f)
    # The count first (none to three or more), then a draw that gives it.
    want = r.choice([0, 1, 2, 3])
    for _ in range(200):
        chosen = r.sample(capitals, 5)
        lats = [_lat(f, c) for c in chosen]
        if any(abs(lat - parallel) < 1 for lat in lats):
            continue
        gold = sum(lat > parallel for lat in lats)
        if min(gold, 3) == want:
            break
    else:
        return None
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"How many of {names} have their capital north of the {parallel}th parallel?",
            f"Of {names}, in how many does the capital city lie above {parallel}° north?",
            f"I'm pinning capitals on a map. How many of these countries have theirs north of "
            f"latitude {parallel}°N: {names}?",
        ]
    )
    return text, Count(gold)


@shape("count")
def count_languages_between_two(r: random.Random, f: Facts) -> Drawn:
    # Whether the two share a language first: most pairs share none.
    shared = r.choice([True, False])
    for _ in range(200):
        a, b = r.sample(_LANGUAGES_COUNTED, 2)
        la, lb = set(f.country(a)["languages"]), set(f.country(b)["languages"])
        if bool(la & lb) == shared:
            break
    else:
        return None
    text = r.choice(
        [
            f"How many different official languages do {the(a)} and {the(b)} have between them?",
            f"Counting each language once, how many official languages are there across "
            f"{the(a)} and {the(b)}?",
            f"If you list every official language of {the(a)} and of {the(b)}, with no "
            "repeats, how many are there?",
        ]
    )
    return text, Count(len(la | lb))


# --- yesno ------------------------------------------------------------------------------


@shape("yesno")
def denser_than_all_neighbours_yn(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 6)
    # The answer first, then a country that gives it plainly (no neighbour near its density).
    yes = r.choice([True, False])
    fits = []
    for c, neighbours in sorted(ring.items()):
        own, top = density(f, c), max(density(f, n) for n in neighbours)
        if (own > top) == yes and apart([own, top], 0.1):
            fits.append(c)
    c = r.choice(fits)
    text = r.choice(
        [
            f"Is {the(c)} more densely populated than every one of its neighbours?",
            f"Does {the(c)} have a higher population density than all the countries bordering it?",
            f"Of {the(c)} and the countries around it, is {the(c)} the most densely populated?",
        ]
    )
    around = Name(
        "neighbour", ("neighbor", "neighbouring countries", "neighboring countries", "bordering")
    )
    verbs = ("more densely", "denser", "higher population density", "most densely", "more crowded")
    return text, YesNo(yes, (country_name(f, c), around), verbs, ordered=True)


@shape("yesno")
def density_over_yn(r: random.Random, f: Facts) -> Drawn:
    yes = r.choice([True, False])
    c = r.choice(COUNTRIES)
    people = density(f, c)
    marks = [10, 25, 50, 100, 150, 200, 300, 500]
    # A mark the answer gives, not within 15 % of the density (the data ages), nor so far
    # from it that the answer is plain without looking.
    fits = [
        m
        for m in marks
        if (people > m) == yes and abs(people - m) > 0.15 * m and m / 4 < people < 4 * m
    ]
    if not fits:
        return None
    mark = r.choice(fits)
    text = r.choice(
        [
            f"Does {the(c)} have more than {mark} people per square kilometre?",
            f"Is {possessive(c)} population density above {mark} inhabitants per km²?",
            f"Someone told me {the(c)} packs in over {mark} people per km². Is that right?",
        ]
    )
    km = Name("square kilometre", ("square kilometer", "square km", "sq km", "km2", "km"))
    verbs = ("more than", "over", "above", "exceed", "higher than", "greater than")
    return text, YesNo(yes, (country_name(f, c), km), verbs, ordered=True)


# --- relative ---------------------------------------------------------------------------


@shape("relative")
def population_after_years(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(COUNTRIES)
    pct = r.choice([0.5, 1.0, 1.5, 2.0, 2.5, 3.0])
    years = r.choice([5, 10, 15, 20, 25, 30])
    now = float(pop(f, c))
    gold = now * (1 + pct / 100) ** years
    # Not where growth without compounding, the population now or the growth alone could
    # pass for the gold.
    slips = [now, now * (1 + pct * years / 100), gold - now]
    if not _distinct(gold, slips, 0.03):
        return None
    text = r.choice(
        [
            f"If {possessive(c)} population grew by {pct:g}% a year, compounded, how many "
            f"people would it have after {years} years?",
            f"Take {possessive(c)} population and let it grow {pct:g}% every year for "
            f"{years} years. What do you end up with?",
            f"Suppose {the(c)} grows at {pct:g} percent per year for {years} years in a row. "
            "What would its population be at the end?",
        ]
    )
    return text, Number(gold)


@shape("relative")
def cost_per_person(r: random.Random, f: Facts) -> Drawn:
    c = r.choice(COUNTRIES)
    amount = r.choice([50e6, 250e6, 500e6, 1e9, 2e9, 5e9, 10e9, 40e9])
    gold = amount / pop(f, c)
    # A sum a person could picture: neither a few cents nor a fortune.
    if not 1 <= gold <= 5000:
        return None
    money = _money(amount)
    text = r.choice(
        [
            f"If {the(c)} spent {money} on a new rail line, how much would that be per "
            "resident, in dollars?",
            f"A {money} bill split evenly among everyone living in {the(c)}: how many dollars "
            "is each person's share?",
            f"The government of {the(c)} wants to hand out {money} equally to all its "
            "inhabitants. How much does each one get?",
        ]
    )
    return text, Number(gold)


# --- units ------------------------------------------------------------------------------


@shape("units")
def height_in_cm(r: random.Random, f: Facts) -> Drawn:
    feet, inches = r.choice([4, 5, 5, 6]), r.choice(list(range(1, 12)))
    if not 58 <= feet * 12 + inches <= 78:
        return None
    cm = (feet * 12 + inches) * CM_PER_INCH
    # Not where the feet alone could pass for the gold.
    if not _distinct(cm, [feet * 12 * CM_PER_INCH]):
        return None
    text = r.choice(
        [
            f"I'm {feet} ft {inches} in tall. What's my height in centimetres?",
            f"How tall is {feet}'{inches}\" in cm?",
            f"The form wants my height in metres, but I only know it's {feet} feet {inches} "
            "inches. What do I write?",
        ]
    )
    return text, Number(cm, (cm / 100,))


@shape("units")
def average_temperature_converted(r: random.Random, f: Facts) -> Drawn:
    celsius = r.choice([True, False])  # Celsius given, Fahrenheit wanted; or the reverse
    k = r.choice([3, 4, 5])
    if celsius:
        low = r.choice([-4, 4, 12, 18, 24])
        values = r.sample(list(range(low, low + 10)), k)
        mean = statistics.fmean(values)
        gold = mean * 9 / 5 + 32
        slips = [mean, sum(values), mean * 9 / 5]
        given, wanted = "°C", r.choice(["Fahrenheit", "°F"])
    else:
        low = r.choice([20, 45, 60, 72, 85])
        values = r.sample(list(range(low, low + 15)), k)
        mean = statistics.fmean(values)
        gold = (mean - 32) * 5 / 9
        slips = [mean, sum(values), mean * 5 / 9]
        given, wanted = "°F", r.choice(["Celsius", "°C"])
    # Far enough from zero that a rounded answer stays within the tolerance.
    if abs(gold) < 10 or not _distinct(gold, slips, 0.05):
        return None
    city = r.choice(CITIES)
    written = listing([f"{v}" for v in values])
    text = r.choice(
        [
            f"This week's highs in {city} were {written} {given}. What was the average high "
            f"in {wanted}?",
            f"Over {k} days I logged {written} {given} on my balcony. What's the mean "
            f"temperature in {wanted}?",
            f"Average these readings and give the result in {wanted}: {written} {given}.",
        ]
    )
    return text, Number(gold)


# --- list -------------------------------------------------------------------------------


@shape("list")
def neighbours_of_one_not_other(r: random.Random, f: Facts) -> Drawn:
    ring = _ring(f, 2, 6)
    pairs = []
    for a, na in sorted(ring.items()):
        for b, nb in sorted(ring.items()):
            own_a, own_b = f.country(a)["name"], f.country(b)["name"]
            if a == b or own_b in na or own_a in nb:
                continue
            only = [n for n in na if n not in nb]
            # Some neighbours in common (else the "but not" asks nothing), a few not.
            if set(na) & set(nb) and 1 <= len(only) <= 4:
                pairs.append((a, b))
    a, b = r.choice(pairs)
    na, nb = ring[a], ring[b]
    text = r.choice(
        [
            f"Which countries border {the(a)} but not {the(b)}?",
            f"Name the countries that share a border with {the(a)} but not with {the(b)}.",
            f"{capital_first(the(a))} and {the(b)} have some neighbours in common. Which "
            f"countries border {the(a)} but not {the(b)}?",
        ]
    )
    return text, Items(
        tuple(country_name(f, n) for n in na if n not in nb),
        tuple(country_name(f, n) for n in na if n in nb),
    )


@shape("list")
def countries_outnumbering_city(r: random.Random, f: Facts) -> Drawn:
    # Cities big enough that some countries have fewer people; none whose size depends on
    # where the city ends more than _CLEAR_FACTOR can cover.
    city = r.choice([c for c in CITIES if float(f.city(c)["population"]) >= 3e6])
    people = float(f.city(city)["population"])
    home = _home(f, city)
    pool = [
        c
        for c in COUNTRIES
        if f.country(c)["name"] != home
        and not 1 / _CLEAR_FACTOR < pop(f, c) / people < _CLEAR_FACTOR
    ]
    more = [c for c in pool if pop(f, c) > people]
    fewer = [c for c in pool if c not in more]
    n = r.choice([4, 5])
    k = r.choice(list(range(1, n)))
    if len(more) < k or len(fewer) < n - k:
        return None
    inside = r.sample(more, k)
    chosen = r.sample(inside + r.sample(fewer, n - k), n)  # shuffled
    names = listing([the(c) for c in chosen])
    text = r.choice(
        [
            f"Which of these countries have more people than the city of {city}: {names}?",
            f"{city} is a huge city. Which of {names} have a bigger population than it?",
            f"Of {names}, which countries are more populous than {city}?",
        ]
    )
    return text, Items(
        tuple(country_name(f, c) for c in chosen if c in inside),
        tuple(country_name(f, c) for c in chosen if c not in inside),
    )
