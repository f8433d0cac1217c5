"""The benchmark's world: country facts, the seeded latency profile and the tool functions every
contestant calls: five lookups, a calculator and `rank` (which of several named values is
largest, so a plan can end with the winner's name instead of asking a model to compare).

It imports neither planweave nor any agent framework (only `countryinfo` and `simpleeval`), so
the runners of peer frameworks, which live in virtualenvs of their own, call exactly the same
functions with exactly the same latency as planweave's contestants.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import random
import time
from collections.abc import Callable
from functools import cache
from typing import Any

import simpleeval  # type: ignore[import-untyped]
from countryinfo import CountryInfo

COUNTRIES = [
    "France", "Germany", "Italy", "Spain", "Portugal", "Netherlands", "Belgium", "Austria",
    "Poland", "Sweden", "Norway", "Denmark", "Finland", "Greece", "Ireland", "Switzerland",
    "Japan", "Brazil", "Canada", "Mexico", "Egypt", "Kenya", "India", "Australia", "Chile",
    "Peru", "Argentina", "Hungary", "Romania", "Turkey", "Thailand", "Vietnam",
]  # fmt: skip

LOCAL_TOOLS = frozenset({"calculator", "rank"})


@cache
def facts(name: str) -> dict[str, Any]:
    c = CountryInfo(name)
    return {"population": int(c.population()), "area": int(c.area()), "capital": str(c.capital())}


def city_population_of(city: str) -> int:
    """A fixed stand-in figure per city (the data package has no city populations)."""
    return 100_000 + int(hashlib.sha256(city.encode()).hexdigest()[:5], 16)


def latency(profile: str, tool_name: str, argument: str) -> float:
    """Seconds a call takes: `web` is log-normal around 300 ms (capped at 3 s) for lookups,
    nothing for local computation; `zero` is none at all.  Seeded by tool and argument, so
    every contestant waits the same for the same call."""
    if profile == "zero" or tool_name in LOCAL_TOOLS:
        return 0.0
    key = f"{tool_name}:{argument}"
    digest = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
    rng = random.Random(digest)
    return min(3.0, math.exp(rng.gauss(math.log(0.3), 0.4)))


def tool_functions(profile: str) -> dict[str, Callable[..., Any]]:
    """The benchmark tools as plain synchronous functions, keyed by tool name, with type hints
    and docstrings: the lookups and the calculator take one string, `rank` a list of names and
    a list of values.  Each lookup sleeps its seeded latency first.  Every framework wraps these
    same functions in its own tool type."""

    def wait(name: str, arg: str) -> None:
        seconds = latency(profile, name, arg)
        if seconds:
            time.sleep(seconds)

    def population(country: str) -> int:
        """The population of a country."""
        wait("population", country)
        return int(facts(country)["population"])

    def area(country: str) -> int:
        """The area of a country in km²."""
        wait("area", country)
        return int(facts(country)["area"])

    def capital(country: str) -> str:
        """The capital city of a country."""
        wait("capital", country)
        return str(facts(country)["capital"])

    def country_of(city: str) -> str:
        """The country whose capital is this city."""
        wait("country_of", city)
        for name in COUNTRIES:
            if facts(name)["capital"] == city:
                return name
        raise LookupError(f"no country has the capital {city!r}")

    def city_population(city: str) -> int:
        """The population of a city (a fixed stand-in figure per city)."""
        wait("city_population", city)
        return city_population_of(city)

    def calculator(expression: str) -> float:
        """Evaluate arithmetic."""
        return float(simpleeval.simple_eval(expression))

    functions = (population, area, capital, country_of, city_population, calculator, rank)
    return {f.__name__: f for f in functions}


def rank(names: list[str], values: list[float]) -> dict[str, Any]:
    """Which of several named values is largest: rank(["Spain", "Peru"], [$1, $2]) gives
    {"largest": "Spain", "value": ..., "order": ["Spain", "Peru"]}."""
    if len(names) != len(values) or not names:
        raise ValueError(f"rank needs one value per name: {len(names)} names, {len(values)} values")
    pairs = sorted(zip(names, map(float, values), strict=True), key=lambda p: p[1], reverse=True)
    return {"largest": pairs[0][0], "value": pairs[0][1], "order": [n for n, _ in pairs]}


# The names of each tool's parameters, in order, for frameworks that call with keywords.
PARAMETERS = {
    name: tuple(inspect.signature(fn).parameters) for name, fn in tool_functions("zero").items()
}
