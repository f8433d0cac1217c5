"""`rank`: which of several named values is largest or smallest, so nobody compares in prose.

A small model shown two coordinates or three populations still names the wrong one now and
then; a plan that ranks them with a tool hands the joiner the answer's name, not a comparison.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from ..errors import ToolFailed
from ..tools import tool

__all__ = ["MAX_ITEMS", "rank"]

MAX_ITEMS = 1000


def _number(value: float, name: str) -> float:
    # The schema made it a number; NaN and infinities cannot be ranked.
    if not math.isfinite(value):
        raise ToolFailed(f"the value of {name!r} is not a finite number: {value}")
    return float(value)


@tool(pure=True)
def rank(
    names: list[str], values: list[float], order: Literal["largest", "smallest"] = "largest"
) -> dict[str, Any]:
    """Which of several named values is largest or smallest, so no one compares numbers in
    prose: rank(["Lyon", "Bergen"], [$1, $2]) gives {"largest": "Bergen", ...}.

    Args:
        names: the names of the things compared, such as countries or cities
        values: their values, in the same order as the names (results such as $1, $2)
        order: "largest" to put the largest first, "smallest" for the smallest first
    """
    if len(names) != len(values):
        raise ToolFailed(
            f"rank needs one value per name: {len(names)} names but {len(values)} values"
        )
    if not names:
        raise ToolFailed("rank needs at least one name and its value")
    if len(names) > MAX_ITEMS:
        raise ToolFailed(f"rank takes at most {MAX_ITEMS} names, not {len(names)}")
    pairs = [(str(n), _number(v, str(n))) for n, v in zip(names, values, strict=True)]
    ordered = sorted(pairs, key=lambda p: p[1], reverse=order == "largest")
    first_name, first_value = ordered[0]
    ties = [n for n, v in ordered if v == first_value]
    result: dict[str, Any] = {
        order: first_name if len(ties) == 1 else ties,
        "value": first_value,
        "order": [n for n, _ in ordered],
        "values": {n: v for n, v in ordered},
    }
    return result
