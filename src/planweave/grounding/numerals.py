"""Numbers as people write them: thousands separators, decimals, an exponent, a scale word
("17.9 million" reads as 17,900,000) or a percent sign, each with the rounding its written
precision allows; and every number a task's result holds (`_values`: numbers in its text
included, and the length of every list it holds).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Number", "numbers"]

_MULTIPLIERS = {
    "thousand": 1e3,
    "million": 1e6,
    "mn": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "trillion": 1e12,
}
# A number as people write it: thousands separators, decimals, an exponent, then an optional
# scale word or a percent sign.  Signs are ignored (magnitudes are compared), so a date's
# hyphens do not make negative numbers.
_NUMBER_RE = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:[eE]([-+]?\d{1,3}))?(?![\w])"
    r"(?:\s*(%|percent\b|per\s+cent\b|thousand\b|million\b|mn\b|billion\b|bn\b|trillion\b))?",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Number:
    """A number as written: its text, its value, how far rounding may have moved it, and
    whether it was a percentage."""

    text: str
    value: float
    tolerance: float
    percent: bool = False


def numbers(text: str) -> list[Number]:
    """The numbers written in `text`, with the rounding each one's precision allows."""
    found = []
    for match in _NUMBER_RE.finditer(text):
        whole, decimals, exponent, suffix = match.groups()
        digits = whole.replace(",", "")
        try:
            value = float(f"{digits}.{decimals or 0}e{exponent or 0}")
        except OverflowError:  # pragma: no cover - float() returns inf instead
            continue
        if not math.isfinite(value):
            continue
        if decimals:
            unit = 10.0 ** -len(decimals)
        else:  # "17,900,000" or "430" may be rounded to its last non-zero digit
            unit = 10.0 ** (len(digits) - len(digits.rstrip("0"))) if digits.strip("0") else 1.0
        scale = 10.0 ** int(exponent or 0)
        word = (suffix or "").lower()
        percent = word in ("%", "percent") or word.startswith("per")
        if not percent and word:
            scale *= _MULTIPLIERS[word]
        found.append(
            Number(
                text=match.group(0),
                value=value * (1.0 if percent else _MULTIPLIERS.get(word, 1.0)),
                tolerance=unit * scale / 2,
                percent=percent,
            )
        )
    return found


def _values(value: Any) -> Iterator[float]:
    """Every number in a result: numbers themselves, numbers written in its text (keys too),
    and the length of each list or tuple it holds."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int | float):
            if math.isfinite(item):
                yield float(item)
        elif isinstance(item, str):
            for number in numbers(item):
                yield number.value
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            yield float(len(item))
            stack.extend(item)
        elif hasattr(item, "__dict__") and not isinstance(item, type):
            stack.extend(vars(item).values())
