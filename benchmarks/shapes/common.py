"""What the templates of both halves share: the facts they read, how a template is declared,
the pools of countries and cities they draw from, names with their spellings, and wording.

A template draws its inputs with `r.choice` and `r.sample` only (tests pin them) and returns the
question and its gold, or None to be drawn again (no threshold splits the draw, a tie).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .scoring import Gold, Name, fold

Category = Literal["lookup", "chain", "comparison", "count", "yesno", "relative", "units", "list"]
CATEGORIES: tuple[Category, ...] = (
    "lookup", "chain", "comparison", "count", "yesno", "relative", "units", "list",
)  # fmt: skip
SQ_MI_PER_KM2 = 1 / 2.589988110336
ACRES_PER_KM2 = 247.105381467
MI_PER_KM = 1 / 1.609344


class Facts(Protocol):
    """The built-in tools' own answers (`answer_eval.Data`): golds are what they give."""

    def country(self, name: str) -> dict[str, Any]: ...

    def city(self, name: str) -> dict[str, Any]: ...


Drawn = tuple[str, Gold] | None
Maker = Callable[[random.Random, Facts], Drawn]


@dataclass(frozen=True)
class Template:
    name: str
    category: Category
    make: Maker


def registry(into: list[Template]) -> Callable[[Category], Callable[[Maker], Maker]]:
    """A decorator that adds a maker to `into` as a template of a category, named after it."""

    def shape(category: Category) -> Callable[[Maker], Maker]:
        def add(make: Maker) -> Maker:
            into.append(Template(make.__name__, category, make))
            return make

        return add

    return shape


# Countries whose records are whole (population, area, capital, region, languages).
COUNTRIES = [
    "France", "Germany", "Italy", "Spain", "Portugal", "Netherlands", "Belgium", "Austria",
    "Poland", "Sweden", "Norway", "Denmark", "Finland", "Greece", "Ireland", "Switzerland",
    "Japan", "Brazil", "Canada", "Mexico", "Egypt", "Kenya", "India", "Australia", "Chile",
    "Argentina", "Peru", "Colombia", "Nigeria", "South Africa", "Indonesia", "Thailand",
    "Vietnam", "South Korea", "Morocco", "Czech Republic", "Hungary", "Romania", "Ukraine",
    "Iran", "Pakistan", "Saudi Arabia", "Bolivia", "Uruguay", "Ecuador", "New Zealand",
    "Iceland", "Bulgaria", "Tanzania", "Ethiopia", "Algeria", "Philippines", "Bangladesh",
    "Nepal", "Mongolia", "Lithuania", "Ghana", "Senegal", "Cuba", "Jordan", "China",
    "United States", "United Kingdom",
]  # fmt: skip
# Cities whose most populous namesake is the one meant (city_info picks the most populous).
CITIES = [
    "Lyon", "Munich", "Milan", "Barcelona", "Porto", "Rotterdam", "Antwerp", "Krakow",
    "Gothenburg", "Bergen", "Aarhus", "Tampere", "Thessaloniki", "Cork", "Zurich", "Osaka",
    "Toronto", "Seville", "Graz", "Nagoya", "Vancouver", "Hamburg", "Marseille", "Geneva",
    "Basel", "Bordeaux", "Toulouse", "Nice", "Cologne", "Stuttgart", "Naples", "Turin",
    "Florence", "Bilbao", "Malaga", "Salzburg", "Innsbruck", "Utrecht", "Ghent", "Gdansk",
    "Wroclaw", "Uppsala", "Malmo", "Trondheim", "Stavanger", "Odense", "Turku", "Galway",
    "Kyoto", "Yokohama", "Sapporo", "Montreal", "Calgary", "Sao Paulo", "Rio de Janeiro",
    "Guadalajara", "Monterrey", "Alexandria", "Mombasa", "Mumbai", "Bangalore", "Sydney",
    "Melbourne", "Perth", "Brisbane", "Auckland", "Cape Town", "Johannesburg", "Casablanca",
    "Marrakesh", "Istanbul", "Izmir", "Busan", "Shanghai", "Chicago", "Houston", "Seattle",
    "Rosario", "Medellin", "Cusco", "Arequipa", "Guayaquil", "Brno", "Debrecen", "Lviv",
    "Kharkiv", "Plovdiv", "Edinburgh", "Manchester", "Glasgow", "Leeds", "Dresden",
    "Leipzig", "Bologna", "Genoa", "Palermo", "Nantes", "Strasbourg", "Coimbra", "Braga",
    "Eindhoven", "Liege", "Linz", "Lausanne",
]  # fmt: skip
# Countries whose neighbours all have records (fan-outs over them succeed); Croatia's data
# still has the kuna, so countries bordering it are left out of currency questions.
BORDERED = [
    "Germany", "France", "Austria", "Poland", "Spain", "Italy", "Belgium", "Switzerland",
    "Czech Republic", "Slovakia", "Brazil", "Argentina", "Peru", "Ukraine", "Romania",
    "Bulgaria", "Greece", "Russia", "India", "Kenya", "Tanzania", "Turkey", "Iran", "Colombia",
    "Bolivia", "Saudi Arabia", "Algeria", "Iraq", "Syria", "Israel", "Jordan", "Belarus",
    "Lithuania", "Latvia", "Finland", "Norway", "Chile", "Paraguay", "Mexico", "Egypt",
]  # fmt: skip
EURO_BORDERED = [
    "Germany", "Austria", "Poland", "Spain", "Czech Republic", "Switzerland", "Russia",
    "Latvia", "Belarus", "Ukraine", "Slovakia", "Italy", "Belgium", "Lithuania",
]  # fmt: skip
# Countries with more than one official language, for questions on shared languages.
MULTILINGUAL = [
    "Belgium", "Switzerland", "Luxembourg", "Canada", "Finland", "Ireland", "India", "Kenya",
    "Tanzania", "Argentina", "Paraguay", "Bolivia", "Singapore", "Malta", "Cyprus", "Pakistan",
    "Israel", "Iraq", "Czech Republic", "Belarus", "Kazakhstan", "New Zealand", "Andorra",
]  # fmt: skip
MONOLINGUAL = [
    "France", "Germany", "Austria", "Italy", "Spain", "Portugal", "Netherlands", "Sweden",
    "Greece", "Turkey", "Egypt", "Brazil", "Mexico", "Chile", "Peru", "Russia", "Slovakia",
    "United Kingdom", "United States", "Australia", "Japan", "Poland", "Hungary", "Denmark",
]  # fmt: skip
REGIONS = ("Africa", "Americas", "Asia", "Europe", "Oceania")

_THE = {"Netherlands", "United States", "United Kingdom", "Czech Republic", "Philippines"}
COUNTRY_ALIASES = {
    "Czech Republic": ("Czechia",),
    "Netherlands": ("Holland",),
    "United States": ("USA", "U.S.A.", "U.S.", "United States of America"),
    "United Kingdom": ("UK", "U.K.", "Britain", "Great Britain"),
    "Republic of Macedonia": ("North Macedonia", "Macedonia"),
    "Vatican City State": ("Vatican City", "Vatican", "Holy See"),
    "Bosnia and Herzegovina": ("Bosnia",),
    "Swaziland": ("Eswatini",),
    "Turkey": ("Türkiye",),
    "Ivory Coast": ("Côte d'Ivoire",),
    "East Timor": ("Timor-Leste",),
}
REGION_ALIASES = {"Americas": ("America",), "Oceania": ("Australia and Oceania",)}
# ISO 4217 codes (what country_info returns) and the names people use for the currencies.
CURRENCY_NAMES = {
    "EUR": ("euro",), "PLN": ("zloty",), "SEK": ("krona", "kronor"), "NOK": ("krone", "kroner"),
    "DKK": ("krone", "kroner"), "GBP": ("pound sterling", "British pound", "pound"),
    "JPY": ("yen",), "CAD": ("Canadian dollar",), "AUD": ("Australian dollar",),
    "NZD": ("New Zealand dollar",), "BRL": ("Brazilian real",), "MXN": ("Mexican peso",),
    "ARS": ("Argentine peso", "Argentinian peso"), "COP": ("Colombian peso",),
    "PEN": ("sol", "soles"), "INR": ("rupee",), "EGP": ("Egyptian pound",),
    "KES": ("Kenyan shilling",), "TZS": ("Tanzanian shilling",), "HUF": ("forint",),
    "CZK": ("koruna", "Czech crown"), "RON": ("leu", "lei"), "BGN": ("lev",),
    "UAH": ("hryvnia",), "CNY": ("yuan", "renminbi"), "THB": ("baht",),
    "KRW": ("Korean won", "South Korean won"), "IDR": ("rupiah",), "VND": ("dong",),
    "ZAR": ("rand",), "NGN": ("naira",), "MAD": ("dirham",), "ISK": ("krona", "Icelandic krona"),
    "PHP": ("Philippine peso",), "SAR": ("riyal",), "GHS": ("cedi",),
    "PKR": ("Pakistani rupee",), "BDT": ("taka",), "ETB": ("birr",), "TRY": ("lira",),
    "RUB": ("ruble", "rouble"), "USD": ("US dollar", "U.S. dollar"),
    "CHF": ("Swiss franc",), "JOD": ("Jordanian dinar",), "MNT": ("tugrik",),
    "NPR": ("Nepalese rupee",), "DZD": ("Algerian dinar",), "XOF": ("CFA franc",),
}  # fmt: skip


def the(country: str) -> str:
    """The country as a sentence names it: "the Netherlands", "Spain"."""
    return f"the {country}" if country in _THE else country


def capital_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def possessive(country: str) -> str:
    name = the(country)
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def listing(items: Sequence[str], last: str = "and") -> str:
    """ "A, B and C"."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"


def country_name(f: Facts, name: str) -> Name:
    """A country with the spellings an answer may use (the tools', common short names)."""
    official = f.country(name)["name"]
    spellings = (official, *COUNTRY_ALIASES.get(name, ()), *COUNTRY_ALIASES.get(official, ()))
    return Name(name, tuple(s for s in dict.fromkeys(spellings) if s != name))


def city_name(f: Facts, name: str) -> Name:
    """A city as the question writes it, and as city_info spells it ("Seville", "Sevilla")."""
    official = f.city(name)["name"]
    return Name(name, (official,) if official != name else ())


def region_name(region: str) -> Name:
    return Name(region, REGION_ALIASES.get(region, ()))


def currency_name(code: str) -> Name:
    return Name(code, CURRENCY_NAMES.get(code, ()))


def same_country(f: Facts, a: str, b: str) -> bool:
    """Whether two spellings ("The Netherlands", "Netherlands") mean one country record."""
    return bool(f.country(a)["name"] == f.country(b)["name"])


def pop(f: Facts, country: str) -> int:
    return int(f.country(country)["population"])


def area(f: Facts, country: str) -> float:
    return float(f.country(country)["area_km2"])


def density(f: Facts, country: str) -> float:
    return pop(f, country) / area(f, country)


def only_currency(f: Facts, country: str) -> str | None:
    """The country's one currency when it has one and people know its name, else None."""
    codes = f.country(country)["currencies"]
    return codes[0] if len(codes) == 1 and codes[0] in CURRENCY_NAMES else None


def capital_city(f: Facts, country: str) -> dict[str, Any] | None:
    """city_info's record of the country's capital, or None where city_info finds another
    city of that name first (San José in California) or the capital is the country's name."""
    capital = f.country(country)["capital"]
    if not capital or fold(capital) == fold(country):
        return None
    record = f.city(capital)
    return record if same_country(f, record["country"], country) else None


def apart(values: Sequence[float], margin: float = 0.05) -> bool:
    """Whether no two values are within `margin` of each other (no near ties to rank)."""
    ordered = sorted(values)
    return all(b - a > margin * max(abs(a), abs(b)) for a, b in itertools.pairwise(ordered))


def threshold(
    r: random.Random, values: Sequence[float], candidates: Sequence[float], margin: float = 0.05
) -> float | None:
    """A threshold among `candidates` that some values pass and some do not, none of them
    within `margin` of it; None when there is none."""
    fits = [
        t
        for t in candidates
        if all(abs(v - t) > margin * t for v in values)
        and 0 < sum(v > t for v in values) < len(values)
    ]
    return r.choice(fits) if fits else None


def millions(n: float) -> str:
    """ "40 million", "2.5 million"."""
    return f"{n / 1e6:g} million"
