"""`rank`: which of several named values is largest or smallest, so nobody compares in prose.

A small model shown two coordinates or three populations still names the wrong one now and
then; a plan that ranks them with a tool hands the joiner the answer's name, not a comparison.
Lists are ranked by how many items each holds, and their comparison comes with the ranking
(the items they share, those only one has, all of them once): a small model reaches for `rank`
to compare two neighbour lists or two countries' languages, and gets what it meant.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Literal

from ..errors import ToolFailed
from ..records import clip
from ..tools import tool

__all__ = ["MAX_ITEMS", "rank"]

MAX_ITEMS = 1000


def _value(value: Any, name: str) -> float | str:
    """A value to rank: a number (finite) or a text (ranked alphabetically, as dates written
    2024-05-01 are); anything else is refused with what to use instead."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        kind = type(value).__name__
        raise ToolFailed(
            f"rank ranks one number, text or list per name; the value of {name!r} is {kind}; "
            'pass one value per name, as in rank(["A", "B"], [$1, $2])'
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolFailed(f"the value of {name!r} is not a finite number: {value}")
    try:
        return value if isinstance(value, str) else float(value)
    except OverflowError:
        raise ToolFailed(f"the value of {name!r} is too large to rank") from None


@tool(pure=True)
def rank(
    names: list[str],
    values: list[Any],
    order: Literal["largest", "smallest"] = "largest",
    above: float | None = None,
    below: float | None = None,
) -> dict[str, Any]:
    """Which is largest or smallest: rank(["Lyon", "Bergen"], [$1, $2]) gives
    {"largest": "Bergen", ...}; above=$3 (or below=) lists those above. Lists give "only"
    (each one's own items), "common", "all".

    Args:
        names: the names of the things compared, such as countries or cities
        values: their values, in the same order as the names (results such as $1, $2):
            numbers, dates (ranked in time), names (grouped: "groups" maps each value to the
            names that have it, "count_different" counts the values), or lists (compared:
            "only" holds each name's items no other list has, "common" the items in every
            list, "all" and "count_all" every item once, "sizes" and "order" their sizes)
        order: "largest" to put the largest first, "smallest" for the smallest first; the
            result's "order" lists every name so ranked ($3.order[1] is the second)
        above: a number: list the names whose value is greater, and count them
        below: a number: list the names whose value is smaller, and count them; with
            above=, also those between the two ("between", "count_between")
    """
    _check_names(names, values)
    lists = [isinstance(v, list | tuple) for v in values]
    if any(lists) and not all(lists):
        raise ToolFailed("rank compares numbers, texts or lists, not a mix of them")
    compared = _compared([str(n) for n in names], values) if all(lists) else {}
    if compared:
        values = [len(compared["items"][str(n)]) for n in names]
    pairs = [(str(n), _value(v, str(n))) for n, v in zip(names, values, strict=True)]
    if len({isinstance(v, str) for _, v in pairs}) > 1:
        raise ToolFailed("rank compares numbers, or texts, not a mix of the two")
    if not compared and not all(_ordered_text(v) for _, v in pairs):
        return _grouped(pairs, above, below)
    ordered = sorted(pairs, key=lambda p: p[1], reverse=order == "largest")
    first_name, first_value = ordered[0]
    ties = [n for n, v in ordered if v == first_value]
    result: dict[str, Any] = {
        order: first_name if len(ties) == 1 else ties,
        "value": first_value,
        "order": [n for n, _ in ordered],
        "values": {n: v for n, v in ordered},
    }
    _add_bounds(result, ordered, above, below)
    if compared:
        result = _as_comparison(result, compared, order)
    return result


def _ordered_text(value: float | str) -> bool:
    """Whether a value ranks by its order: a number, or a text that starts with a digit (a date
    written 2024-05-01, a time): names (a country, a region, a currency) have none that means
    anything."""
    return not isinstance(value, str) or value[:1].isdigit()


def _grouped(
    pairs: list[tuple[str, float | str]], above: float | None, below: float | None
) -> dict[str, Any]:
    """Names whose values are names themselves (each city's country, each country's region):
    which share a value and how many different values there are, not an alphabetical winner.
    A small model reaches for `rank` to count the countries a list of cities spans."""
    if above is not None or below is not None:
        shown = ", ".join(repr(v) for v in dict.fromkeys(v for _, v in pairs))
        key = "above" if above is not None else "below"
        raise ToolFailed(
            f"{key}= compares numbers, and these values are names ({clip(shown, 120)}): rank "
            "the numbers the question's mark is about (a population, an area) instead"
        )
    groups: dict[str, list[str]] = {}
    for name, value in pairs:
        groups.setdefault(str(value), []).append(name)
    return {
        "groups": groups,
        "different": list(groups),
        "count_different": len(groups),
        "values": dict(pairs),
    }


def _check_names(names: list[str], values: list[Any]) -> None:
    """Refuse names and values that do not pair up: unequal counts, none, too many, a name twice."""
    if len(names) != len(values):
        raise ToolFailed(
            f"rank needs one value per name: {len(names)} names but {len(values)} values"
        )
    if not names:
        raise ToolFailed("rank needs at least one name and its value")
    if len(names) > MAX_ITEMS:
        raise ToolFailed(f"rank takes at most {MAX_ITEMS} names, not {len(names)}")
    twice = sorted(n for n, k in Counter(map(str, names)).items() if k > 1)
    if twice:
        raise ToolFailed(f"rank needs each name once; repeated: {', '.join(twice)}")


def _add_bounds(
    result: dict[str, Any],
    ordered: list[tuple[str, float | str]],
    above: float | None,
    below: float | None,
) -> None:
    """Add to `result` the names above and below the bounds given, their counts, and with both
    bounds those between."""
    first_value = ordered[0][1]
    for key, bound, sign in (("above", above, 1.0), ("below", below, -1.0)):
        if bound is None:
            continue
        limit = _value(bound, key)
        if isinstance(first_value, str) or isinstance(limit, str):
            raise ToolFailed(f"{key}= compares numbers; these values are texts")
        result[key] = [n for n, v in ordered if sign * (float(v) - limit) > 0]
        result[f"count_{key}"] = len(result[key])
    if above is not None and below is not None:
        # "How many have between 20 and 80 million people": both bounds, the names inside.
        inside = set(result["above"]) & set(result["below"])
        result["between"] = [n for n, _ in ordered if n in inside]
        result["count_between"] = len(result["between"])


def _as_comparison(result: dict[str, Any], compared: dict[str, Any], order: str) -> dict[str, Any]:
    """The ranking of lists by size, led by their comparison and without a winner."""
    # Lists are compared, not crowned: a plan answer that quotes `${3.largest}` for
    # "which border A but not B" names no list, and the joiner reads "only" instead.
    del compared["items"], result[order], result["value"]
    result["sizes"] = result.pop("values")
    return {**compared, **result}


def _compared(names: list[str], lists: list[Any]) -> dict[str, Any]:
    """How lists of names or numbers compare: each one's distinct items, those in every list,
    those only one list has, and all of them once (in order of first appearance)."""
    items: dict[str, list[Any]] = {}
    for name, values in zip(names, lists, strict=True):
        if len(values) > MAX_ITEMS:
            raise ToolFailed(f"rank compares lists of at most {MAX_ITEMS} items each")
        for value in values:
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise ToolFailed(
                    f"rank compares lists of names or numbers; {name!r} holds "
                    f"{type(value).__name__}"
                )
        items[name] = list(dict.fromkeys(values))
    # In how many lists each item stands (each list's items are distinct): all of them is
    # common, one is that list's own.
    lists_holding = Counter(v for held in items.values() for v in held)
    every = list(lists_holding)
    common = [v for v in every if lists_holding[v] == len(items)]
    only = {name: [v for v in held if lists_holding[v] == 1] for name, held in items.items()}
    return {
        "items": items,
        "only": only,
        "common": common,
        "count_common": len(common),
        "all": every,
        "count_all": len(every),
    }
