"""Real tools with controlled latency, used by the runtime and CLI tests."""

from __future__ import annotations

import os
import re
import threading
import time

import anyio

from planweave import ToolFailed, tool

POPULATION = {"France": 68_000_000, "Belgium": 11_800_000, "Netherlands": 17_900_000}
AREA = {"France": 551_695, "Belgium": 30_689, "Netherlands": 41_850}


class Gauge:
    """Counts calls in flight and remembers the peak, across threads and tasks."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0
        self.calls = 0

    def __enter__(self) -> Gauge:
        with self.lock:
            self.now += 1
            self.calls += 1
            self.peak = max(self.peak, self.now)
        return self

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.now -= 1


GAUGE = Gauge()


@tool
async def population(country: str, delay: float = 0.05) -> int:
    """The population of a country.

    Args:
        country: the country's English name
        delay: seconds the lookup takes
    """
    with GAUGE:
        await anyio.sleep(delay)
    if country not in POPULATION:
        raise ToolFailed(f"no country named {country!r}")
    return POPULATION[country]


@tool
def area(country: str, delay: float = 0.05) -> int:
    """The area of a country in square kilometres (a blocking, sync tool).

    Args:
        country: the country's English name
        delay: seconds the lookup takes
    """
    with GAUGE:
        time.sleep(delay)
    return AREA[country]


@tool
async def facts(country: str) -> dict[str, int]:
    """Population and area of a country, as a record."""
    await anyio.sleep(0.01)
    return {"population": POPULATION[country], "area": AREA[country]}


@tool
def divide(a: float, b: float) -> float:
    """a divided by b."""
    return a / b


@tool
def echo(text: str) -> str:
    """Returns its input."""
    return text


TOOLS = [population, area, facts, divide, echo]


@tool(isolate=True, timeout=0.5)
def backtrack(n: int) -> bool:
    """Matches a pattern that backtracks 2**n times, in one C call that holds the GIL."""
    return re.fullmatch(r"(a+)+b", "a" * n) is not None


@tool(isolate=True)
def isolated_divide(a: float, b: float) -> float:
    """a divided by b, computed in a worker process."""
    if b == 0:
        raise ToolFailed("cannot divide by zero")
    return a / b


@tool(isolate=True)
def worker_pid() -> int:
    """The id of the process the call ran in."""
    return os.getpid()


ISOLATED = [backtrack, isolated_divide, worker_pid]
