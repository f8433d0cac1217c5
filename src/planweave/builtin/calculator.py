"""`calculator`: safe arithmetic, comparisons and counting on one expression, evaluated by
`simpleeval` (never `eval`).

What small models write when a question asks "how many of these" or "is A larger than B" is
accepted: comparisons (`${1} > 50000000`, `"Spain" in ${2}`), `and`/`or`/`not`, `x if c else
y`, a sum of conditions (`sum([${1} > 5, ${2} > 5])`) and one-loop comprehensions
(`len([x for x in ${1} if x > 5])`).  Arithmetic takes numbers only (a text or a list times a
number would be a way to build a huge value), comprehensions stop at simpleeval's length limit,
and every refusal says what to write instead.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from ..errors import ToolFailed
from ..expression import MAX_DIGITS, check, evaluate
from ..tools import tool

__all__ = ["MAX_DIGITS", "MAX_ITEMS", "MAX_LENGTH", "calculator"]

MAX_LENGTH = 4000  # characters in one expression (results substituted in may be lists)
MAX_ITEMS = 1000  # items of a list the expression evaluates to
_MAX_BITS = MAX_DIGITS * 10 // 3

_SYMBOLS = {"×": "*", "÷": "/", "−": "-", "^": "**", "≥": ">=", "≤": "<=", "≠": "!="}
_UNDERSCORE_RE = re.compile(r"(?<=\d)_(?=\d)")
_SEPARATED_RE = re.compile(r"\d,\d{3}(?!\d)")
# Triple quotes and line breaks: no expression needs them.
_UNREAD_RE = re.compile(r"""\"\"\"|'''|[\r\n]""")
# A quoted text, kept as written: a city's name in it is no expression to rewrite.
_STRING_RE = re.compile(r"""("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')""")


def _code(text: str) -> list[str]:
    """`text` cut at its quoted texts: the even items are code, the odd ones quoted texts."""
    return _STRING_RE.split(text)


def _rewritten(text: str) -> str:
    """`text` with `^`, `×` and the like as Python writes them and `17_900_000` as a number,
    outside its quoted texts only."""
    parts = _code(text)
    for i in range(0, len(parts), 2):
        code = _UNDERSCORE_RE.sub("", parts[i])
        for symbol, replacement in _SYMBOLS.items():
            code = code.replace(symbol, replacement)
        parts[i] = code
    return "".join(parts)


def _result(expression: str, result: Any) -> Any:
    """The expression's value as the tool returns it: a number, True/False, a text or a list
    of those; a tuple (a zip's pair) reads as a list."""
    if isinstance(result, tuple):
        result = list(result)
    if isinstance(result, list):
        if len(result) > MAX_ITEMS:
            raise ToolFailed(f"{expression!r} gives more than {MAX_ITEMS} items")
        return [_result(expression, item) for item in result]
    if isinstance(result, bool | str):
        return result
    if not isinstance(result, int | float):
        raise ToolFailed(f"{expression!r} does not evaluate to a number, yes/no or a list")
    if isinstance(result, int) and result.bit_length() > _MAX_BITS:
        raise ToolFailed(f"the result of {expression!r} has more than {MAX_DIGITS} digits")
    if isinstance(result, float) and not math.isfinite(result):
        raise ToolFailed(f"the result of {expression!r} is not a finite number")
    return result


@tool(isolate=True, pure=True, expressions=["expression"])
def calculator(expression: str) -> float | int | bool | str | list[Any]:
    """Evaluate arithmetic, a comparison or a count, such as "(17900000 / 41850) - 300",
    "${1} > ${2}" (True or False) or "len([x for x in ${3} if x > 50000000])".

    Knows + - * / // % ** (also written ^), parentheses, abs, round, min, max, sqrt, log (natural,
    or log(x, base)), exp, pi and e; sum, min, max and mean (the average) take numbers or a
    list: sum(1, 2, 3) or sum([1, 2, 3]); len counts a list's items, names too:
    len(["Spain", "Italy"]) is 2.  Comparisons < > <= >= == != give True or False, and so do
    and, or, not, `"Spain" in ${1}` (is it in the list), all(...) and any(...); sum([${1} > 5,
    ${2} > 5]) counts the conditions that hold; "A" if ${1} > ${2} else "B" names the larger;
    common(${1}, ${2}) lists the items two lists share.
    Integers stay integers except through `/`, which always gives a float (10 / 2 is 5.0).
    Write numbers without thousands separators (17900000 or 17_900_000); scientific notation
    like 1.5e6 works.

    Args:
        expression: numbers without thousands separators, + - * / ** ( ), sqrt, round, min, max;
            sum, mean (the average) and len (how many) of a list; comparisons, and/or, `in`
    """
    if len(expression) > MAX_LENGTH:
        raise ToolFailed(
            f"the expression is too long ({len(expression)} > {MAX_LENGTH} characters)"
        )
    if _UNREAD_RE.search(expression.strip()):
        # Where a text ends in these, the quoted texts found below are not Python's.
        raise ToolFailed("write the expression on one line, each text in one pair of quotes")
    text = _rewritten(expression.strip())
    if not text:
        raise ToolFailed("the expression is empty")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ToolFailed(f"not an arithmetic expression: {expression!r}") from None
    code = "".join(_code(text)[::2])
    if isinstance(tree.body, ast.Tuple) or ("[" not in code and _SEPARATED_RE.search(code)):
        # `1,000` parses as a pair; outside a list it is a number written with separators.
        raise ToolFailed("write numbers without thousands separators, as in 17900000")
    check(tree)
    result = evaluate(tree, shown=expression)
    value: float | int | bool | str | list[Any] = _result(expression, result)
    return value
