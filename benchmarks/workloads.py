"""Benchmark workloads built from the `countryinfo` data, with gold plans and gold answers.

Each question comes with the plan an ideal planner would write, the ReAct steps an ideal ReAct
agent would take, and the gold answer, all computed from the same data the tools read.  Tools
sleep according to a seeded latency profile keyed by their arguments, so every contestant sees
the same latency for the same call.
"""

from __future__ import annotations

import hashlib
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any

from countryinfo import CountryInfo

from planweave import Tool, ToolFailed, ToolRegistry, tool

COUNTRIES = [
    "France", "Germany", "Italy", "Spain", "Portugal", "Netherlands", "Belgium", "Austria",
    "Poland", "Sweden", "Norway", "Denmark", "Finland", "Greece", "Ireland", "Switzerland",
    "Japan", "Brazil", "Canada", "Mexico", "Egypt", "Kenya", "India", "Australia", "Chile",
    "Peru", "Argentina", "Hungary", "Romania", "Turkey", "Thailand", "Vietnam",
]  # fmt: skip


@dataclass(frozen=True)
class Step:
    """One gold tool call: `args` may hold `$N` references, as in the plan text."""

    tool: str
    args: tuple[str, ...]

    def call(self) -> str:
        return f"{self.tool}({', '.join(self.args)})"


@dataclass
class Question:
    id: str
    kind: str
    text: str
    gold: float | str
    steps: list[Step]
    split: str = "tune"
    answer: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def plan_text(self) -> str:
        lines = [f"{i}. {s.call()}" for i, s in enumerate(self.steps, 1)]
        lines.append(f"{len(self.steps) + 1}. join()")
        return "\n".join(lines) + "\n<END_OF_PLAN>"

    def deps(self, index: int) -> list[int]:
        """The 1-based ids step `index` (1-based) refers to."""
        step = self.steps[index - 1]
        refs = [int(a[1:].split(".")[0]) for a in step.args if a.startswith("$") and a[1:2] != "{"]
        refs += [int(part.split("}")[0]) for a in step.args for part in a.split("${")[1:]]
        return refs


def _facts(name: str) -> dict[str, Any]:
    c = CountryInfo(name)
    return {"population": int(c.population()), "area": int(c.area()), "capital": str(c.capital())}


def generate(n: int = 200, seed: int = 2026) -> list[Question]:
    """`n` questions over six shapes; every fifth is held out (never used to tune prompts)."""
    rng = random.Random(seed)
    shapes = ["comparison", "pick4", "fanout", "chain", "map", "replan"]
    out: list[Question] = []
    for k in range(n):
        shape = shapes[k % len(shapes)]
        q = _make(shape, rng, f"{shape}-{k}")
        q.split = "heldout" if k % 5 == 4 else "tune"
        out.append(q)
    return out


def _make(shape: str, rng: random.Random, qid: str) -> Question:
    if shape == "comparison":
        a, b = rng.sample(COUNTRIES, 2)
        fa, fb = _facts(a), _facts(b)
        gold = a if fa["population"] > fb["population"] else b
        steps = [Step("population", (f'"{a}"',)), Step("population", (f'"{b}"',))]
        text = f"Which has more people, {a} or {b}?"
        return Question(qid, shape, text, gold, steps, answer=f"{gold} has more people.")
    if shape == "pick4":
        names = rng.sample(COUNTRIES, 4)
        areas = {n: _facts(n)["area"] for n in names}
        gold = max(areas, key=areas.__getitem__)
        steps = [Step("area", (f'"{n}"',)) for n in names]
        text = f"Which of {', '.join(names[:3])} and {names[3]} has the largest area?"
        return Question(qid, shape, text, gold, steps, answer=f"{gold} is the largest.")
    if shape == "fanout":
        count = rng.randint(2, 5)
        names = rng.sample(COUNTRIES, count)
        total = sum(_facts(n)["population"] for n in names)
        steps = [Step("population", (f'"{n}"',)) for n in names]
        expr = " + ".join(f"${{{i}}}" for i in range(1, count + 1))
        steps.append(Step("calculator", (f'"{expr}"',)))
        text = f"What is the combined population of {', '.join(names)}?"
        return Question(qid, shape, text, float(total), steps, answer=f"{total}")
    if shape == "chain":
        a = rng.choice(COUNTRIES)
        fa = _facts(a)
        steps = [
            Step("capital", (f'"{a}"',)),
            Step("country_of", ("$1",)),
            Step("population", ("$2",)),
            Step("calculator", ('"${3} / 1000000"',)),
        ]
        gold = fa["population"] / 1_000_000
        text = (
            f"In millions, how many people live in the country whose capital is the capital of {a}?"
        )
        return Question(qid, shape, text, gold, steps, answer=f"{gold:.3f}")
    if shape == "map":
        count = rng.choice([16, 24, 32])
        names = [rng.choice(COUNTRIES) for _ in range(count)]
        total = sum(_facts(n)["area"] for n in names)
        steps = [Step("area", (f'"{n}"',)) for n in names]
        expr = " + ".join(f"${{{i}}}" for i in range(1, count + 1))
        steps.append(Step("calculator", (f'"{expr}"',)))
        text = f"Add up the areas of these {count} countries: {', '.join(names)}."
        return Question(qid, shape, text, float(total), steps, answer=f"{total}")
    # replan: the first plan finds a capital; what to look up next is only known then.
    a = rng.choice(COUNTRIES)
    capital = _facts(a)["capital"]
    steps = [Step("capital", (f'"{a}"',)), Step("city_population", (f'"{capital}"',))]
    text = f"How many people live in the capital of {a}?"
    gold = city_population_of(capital)
    return Question(
        qid, shape, text, float(gold), steps, answer=str(gold), meta={"capital": capital}
    )


def city_population_of(city: str) -> int:
    """A fixed stand-in figure per city (the data package has no city populations)."""
    return 100_000 + int(hashlib.sha256(city.encode()).hexdigest()[:5], 16)


LOCAL_TOOLS = frozenset({"calculator"})


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


def bench_tools(profile: str = "web") -> ToolRegistry:
    """Tools over the same data with the latency profile applied; sync, so they run in threads."""

    def wait(name: str, arg: str) -> None:
        seconds = latency(profile, name, arg)
        if seconds:
            time.sleep(seconds)

    @tool
    def population(country: str) -> int:
        """The population of a country."""
        wait("population", country)
        return _facts(country)["population"]

    @tool
    def area(country: str) -> int:
        """The area of a country in km²."""
        wait("area", country)
        return _facts(country)["area"]

    @tool
    def capital(country: str) -> str:
        """The capital city of a country."""
        wait("capital", country)
        return _facts(country)["capital"]

    @tool
    def country_of(city: str) -> str:
        """The country whose capital is this city."""
        wait("country_of", city)
        for name in COUNTRIES:
            if _facts(name)["capital"] == city:
                return name
        raise ToolFailed(f"no country has the capital {city!r}")

    @tool
    def city_population(city: str) -> int:
        """The population of a city (a fixed stand-in figure per city)."""
        wait("city_population", city)
        return city_population_of(city)

    @tool
    def calculator(expression: str) -> float:
        """Evaluate arithmetic."""
        from planweave.builtin.calculator import calculator as calc

        return float(calc.fn(expression))

    tools: list[Tool] = [population, area, capital, country_of, city_population, calculator]
    return ToolRegistry(tools)
