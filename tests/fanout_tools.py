"""Tools for the fan-out tests: a list lookup and a per-item lookup with controlled latency,
both writing every call to the ledger (env PLANWEAVE_TEST_LEDGER) when one is set."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from planweave import RetryTool, ToolRegistry, tool

NEIGHBOURS = {
    "Austria": ["Germany", "Czechia", "Slovakia", "Hungary"],
    "Iceland": [],
    "Wide": [f"C{i}" for i in range(70)],
}
POPULATION = {"Germany": 83, "Czechia": 11, "Slovakia": 5, "Hungary": 10}
# Later items answer sooner, so that finishing order is not the list's order.
DELAY = {"Germany": 0.4, "Czechia": 0.3, "Slovakia": 0.2, "Hungary": 0.1}
# Countries whose first lookup fails with a transient error: a test sets its own (`flaky`).
FLAKY: set[str] = set()


def _ledger(line: str) -> None:
    path = os.environ.get("PLANWEAVE_TEST_LEDGER")
    if path:
        with Path(path).open("a") as f:
            f.write(line + "\n")


@tool
def neighbours(country: str) -> list[str]:
    """The countries that border a country."""
    _ledger(f"neighbours {country}")
    return NEIGHBOURS[country]


@tool
async def population(country: str) -> int:
    """The population of a country, in millions."""
    _ledger(f"population {country}")
    scale = float(os.environ.get("PLANWEAVE_TEST_DELAY", "1"))
    await anyio.sleep(DELAY.get(country, 0.05) * scale)
    if country in FLAKY:
        FLAKY.discard(country)
        raise RetryTool(f"{country}: the service is busy")
    return POPULATION[country]


@tool
def total(numbers: list[int]) -> int:
    """Add numbers up."""
    _ledger(f"total {numbers}")
    return sum(numbers)


TOOLS = ToolRegistry([neighbours, population, total])

PLAN = (
    'Thought: one population lookup per neighbour.\n1. neighbours("Austria")\n'
    "2. population($1[*])\n3. total($2)\n4. join()\n<END_OF_PLAN>"
)
FINISH = "Thought: added up.\nAction: Finish(Austria's neighbours have 109 million people.)"
