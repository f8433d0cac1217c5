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
import operator
import re
from collections.abc import Callable
from typing import Any

from ..errors import ToolFailed
from ..tools import tool
from ._common import missing

__all__ = ["MAX_DIGITS", "MAX_ITEMS", "MAX_LENGTH", "calculator"]

MAX_LENGTH = 4000  # characters in one expression (results substituted in may be lists)
MAX_DIGITS = 1000  # decimal digits an integer power may produce
MAX_ITEMS = 1000  # items of a list the expression evaluates to
_MAX_BITS = MAX_DIGITS * 10 // 3

_SYMBOLS = {"×": "*", "÷": "/", "−": "-", "^": "**", "≥": ">=", "≤": "<=", "≠": "!="}
_UNDERSCORE_RE = re.compile(r"(?<=\d)_(?=\d)")
_SEPARATED_RE = re.compile(r"\d,\d{3}(?!\d)")
_NAMES: dict[str, Any] = {"pi": math.pi, "e": math.e, "True": True, "False": False}
_COUNT_HINT = "len([x for x in ${1} if x > 5]) counts the items over 5"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float)  # bools too: a sum of conditions counts them


def _kind(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, str):
        return "a text"
    if isinstance(value, dict):
        return "a record"
    return type(value).__name__


def _arithmetic(name: str, op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """`op` on numbers only: a text or a list in arithmetic is refused, with what to write."""

    def checked(a: Any, b: Any) -> Any:
        for value in (a, b):
            if not _is_number(value):
                hint = (
                    f"; for a list use sum(...), mean(...), len(...), or {_COUNT_HINT}"
                    if isinstance(value, list | tuple)
                    else ""
                )
                raise ToolFailed(f"{name} takes numbers, not {_kind(value)}{hint}")
        if (
            name == "*"
            and isinstance(a, int)
            and isinstance(b, int)
            and a.bit_length() + b.bit_length() > 2 * _MAX_BITS
        ):
            # A chain of products of huge integers would grow past any use, step by step.
            raise ToolFailed(f"a product in the expression has more than {MAX_DIGITS} digits")
        return op(a, b)

    return checked


def _power(base: Any, exponent: Any) -> Any:
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and abs(base) > 1
        and exponent * math.log10(abs(base)) > MAX_DIGITS
    ):
        digits = int(exponent * math.log10(abs(base))) + 1
        raise ToolFailed(f"a power in the expression is too large (about {digits:,} digits)")
    return operator.pow(base, exponent)


def _ordering(symbol: str, op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """`<`, `>`, `<=`, `>=` between two numbers or two texts; a list against a number is
    answered with how to count or test its items."""

    def checked(a: Any, b: Any) -> bool:
        if (_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str)):
            return op(a, b)
        if isinstance(a, list | tuple) or isinstance(b, list | tuple):
            raise ToolFailed(
                f"cannot compare {_kind(a)} with {_kind(b)} by {symbol}: "
                f"{_COUNT_HINT}, all(x > 5 for x in ${{1}}) tests them all, "
                "max(${1}) > 5 tests the largest"
            )
        raise ToolFailed(f"cannot compare {_kind(a)} with {_kind(b)} by {symbol}")

    return checked


def _contains(item: Any, items: Any) -> bool:
    if isinstance(items, str) and isinstance(item, str):
        return item.casefold() in items.casefold()
    if not isinstance(items, list | tuple):
        raise ToolFailed(
            f'`in` looks for an item in a list, as in "Spain" in ${{1}}, not in {_kind(items)}'
        )
    if isinstance(item, str):
        folded = item.casefold()
        return any(isinstance(x, str) and x.casefold() == folded for x in items)
    return item in items


def _equal(a: Any, b: Any) -> bool:
    # Names compare as a reader would: "france" is "France".
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    return bool(a == b)


def _log(x: float, base: float = math.e) -> float:
    return math.log(x, base)


def _round(x: float, ndigits: int | None = None) -> float | int:
    # round(1, -10**9) computes 10**(10**9) while holding the GIL: refuse it up front.
    if isinstance(ndigits, int) and not -MAX_DIGITS <= ndigits <= MAX_DIGITS:
        raise ToolFailed(f"round's digits must be between -{MAX_DIGITS} and {MAX_DIGITS}")
    return round(x, ndigits)


def _count(items: Any) -> int:
    if not isinstance(items, list | tuple):
        raise ToolFailed(
            f"len counts the items of a list, as in len([1, 2, 3]), not {_kind(items)}"
        )
    return len(items)


def _items(args: tuple[Any, ...]) -> list[Any]:
    """A function's values: one list, or the values written out (sum(1, 2) or sum([1, 2]))."""
    return list(args[0]) if len(args) == 1 and isinstance(args[0], list | tuple) else list(args)


def _numbers(name: str, args: tuple[Any, ...]) -> list[Any]:
    """The numbers of sum(...) or mean(...): one list, or the numbers written out."""
    items = _items(args)
    if not items:
        raise ToolFailed(f"{name} needs numbers, as in {name}([1, 2, 3]) or {name}(1, 2, 3)")
    for item in items:
        if not _is_number(item):
            raise ToolFailed(f"{name} takes numbers, not {_kind(item)} ({item!r})")
    return items


def _sum(*args: Any) -> Any:
    return sum(_numbers("sum", args))


def _mean(*args: Any) -> float:
    items = _numbers("mean", args)
    return float(sum(items) / len(items))


def _extreme(name: str, pick: Callable[..., Any]) -> Callable[..., Any]:
    def chosen(*args: Any) -> Any:
        items = _items(args)
        if not items:
            raise ToolFailed(f"{name} needs values, as in {name}([1, 2, 3])")
        if not (all(_is_number(i) for i in items) or all(isinstance(i, str) for i in items)):
            raise ToolFailed(f"{name} compares numbers, or texts, not a mix of kinds")
        return pick(items)

    return chosen


def _truth(name: str, pick: Callable[[list[bool]], bool]) -> Callable[[Any], bool]:
    def test(items: Any) -> bool:
        if not isinstance(items, list | tuple):
            raise ToolFailed(f"{name} tests a list of conditions, as in {name}(x > 5 for x in $1)")
        return pick([bool(i) for i in items])

    return test


def _common(first: Any, second: Any) -> list[Any]:
    """The items of `first` that `second` has too (names compared as a reader would)."""
    if not isinstance(first, list | tuple) or not isinstance(second, list | tuple):
        raise ToolFailed("common takes two lists, as in common(${1}, ${2})")
    return [item for item in first if _contains(item, second)]


def _zip(*lists: Any) -> list[tuple[Any, ...]]:
    if not lists or not all(isinstance(items, list | tuple) for items in lists):
        raise ToolFailed("zip pairs lists, as in [n for n, p in zip(${1}, ${2}) if p > 5]")
    return list(zip(*lists, strict=False))


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": _count,
    "count": _count,
    "mean": _mean,
    "average": _mean,
    "abs": abs,
    "round": _round,
    "min": _extreme("min", min),
    "max": _extreme("max", max),
    "sqrt": math.sqrt,
    "log": _log,
    "exp": math.exp,
    "sum": _sum,
    "all": _truth("all", all),
    "any": _truth("any", any),
    "zip": _zip,
    "common": _common,
}
_ALLOWED_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: _arithmetic("+", operator.add),
    ast.Sub: _arithmetic("-", operator.sub),
    ast.Mult: _arithmetic("*", operator.mul),
    ast.Div: _arithmetic("/", operator.truediv),
    ast.FloorDiv: _arithmetic("//", operator.floordiv),
    ast.Mod: _arithmetic("%", operator.mod),
    ast.Pow: _arithmetic("**", _power),
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
    ast.Gt: _ordering(">", operator.gt),
    ast.Lt: _ordering("<", operator.lt),
    ast.GtE: _ordering(">=", operator.ge),
    ast.LtE: _ordering("<=", operator.le),
    ast.Eq: _equal,
    ast.NotEq: lambda a, b: not _equal(a, b),
    ast.In: _contains,
    ast.NotIn: lambda a, b: not _contains(a, b),
}
_WORDS = {ast.And: "and", ast.Or: "or"}


def _loop_names(node: ast.ListComp | ast.GeneratorExp) -> set[str]:
    """The names a comprehension's one loop binds (`x`, or `n, p` over a zip)."""
    if len(node.generators) != 1:
        raise ToolFailed("a comprehension may have one `for` only")
    loop = node.generators[0]
    if loop.is_async:
        raise ToolFailed("async comprehensions are not allowed")
    targets = loop.target.elts if isinstance(loop.target, ast.Tuple) else [loop.target]
    if not all(isinstance(t, ast.Name) for t in targets):
        raise ToolFailed("a comprehension's loop names plain variables, as in `for x in ${1}`")
    return {t.id for t in targets if isinstance(t, ast.Name)}


def _check(tree: ast.Expression) -> None:
    """Refuse, with a readable reason, anything but numbers, texts, lists, operators,
    comparisons, the allowed calls and one-loop comprehensions.  What a value may do is checked
    when it is used (arithmetic takes numbers only)."""
    bound: set[str] = set()
    for node in ast.walk(tree.body):
        if isinstance(node, ast.ListComp | ast.GeneratorExp):
            bound |= _loop_names(node)
    for node in ast.walk(tree.body):
        if isinstance(node, ast.BinOp | ast.UnaryOp | ast.Compare):
            ops = node.ops if isinstance(node, ast.Compare) else [node.op]
            for op in ops:
                if type(op) not in _ALLOWED_OPS:
                    raise ToolFailed(f"operator {type(op).__name__} is not allowed")
        elif isinstance(node, ast.BoolOp):
            if type(node.op) not in _WORDS:
                raise ToolFailed(f"operator {type(node.op).__name__} is not allowed")
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, int | float | str):
                raise ToolFailed(f"only numbers and texts are allowed, not {node.value!r}")
        elif isinstance(node, ast.Name):
            if node.id not in _NAMES and node.id not in _FUNCTIONS and node.id not in bound:
                known = ", ".join([*_NAMES, *_FUNCTIONS])
                raise ToolFailed(
                    f"unknown name {node.id!r}; known names: {known}; a text goes in quotes, "
                    "as in \"'${1}' == '${2}'\""
                )
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
                raise ToolFailed(f"only these functions may be called: {', '.join(_FUNCTIONS)}")
            if node.keywords:
                raise ToolFailed("functions take positional arguments only")
            if any(isinstance(a, ast.Starred) for a in node.args):
                raise ToolFailed("`*` before an argument is not allowed")
        elif isinstance(node, ast.Dict):
            raise ToolFailed(
                "a record is not a number: pick its field, as in ${1.population}, "
                "or call the tool for that field"
            )
        elif isinstance(node, ast.Attribute):
            raise ToolFailed("attribute access is not allowed")
        elif isinstance(node, ast.Starred):
            raise ToolFailed("`*` in a list is not allowed")
        elif not isinstance(
            node,
            ast.List
            | ast.Tuple
            | ast.IfExp
            | ast.ListComp
            | ast.GeneratorExp
            | ast.comprehension
            | ast.operator
            | ast.unaryop
            | ast.cmpop
            | ast.boolop
            | ast.expr_context,
        ):
            raise ToolFailed(f"{type(node).__name__} is not allowed in arithmetic")


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


@tool(isolate=True, pure=True)
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
    try:
        import simpleeval  # type: ignore[import-untyped]
    except ImportError:
        raise missing("simpleeval") from None
    if len(expression) > MAX_LENGTH:
        raise ToolFailed(
            f"the expression is too long ({len(expression)} > {MAX_LENGTH} characters)"
        )
    text = _UNDERSCORE_RE.sub("", expression.strip())
    for symbol, replacement in _SYMBOLS.items():
        text = text.replace(symbol, replacement)
    if not text:
        raise ToolFailed("the expression is empty")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ToolFailed(f"not an arithmetic expression: {expression!r}") from None
    if isinstance(tree.body, ast.Tuple) or ("[" not in text and _SEPARATED_RE.search(text)):
        # `1,000` parses as a pair; outside a list it is a number written with separators.
        raise ToolFailed("write numbers without thousands separators, as in 17900000")
    _check(tree)
    evaluator = simpleeval.EvalWithCompoundTypes(
        operators=dict(_ALLOWED_OPS), functions=dict(_FUNCTIONS), names=dict(_NAMES)
    )
    try:
        result = evaluator.eval(text, previously_parsed=tree.body)
    except ToolFailed:
        raise
    except ZeroDivisionError:
        raise ToolFailed(f"division by zero in {expression!r}") from None
    except OverflowError:
        raise ToolFailed(f"the result of {expression!r} is too large") from None
    except (ValueError, TypeError) as exc:
        raise ToolFailed(f"cannot evaluate {expression!r}: {exc}") from None
    except simpleeval.InvalidExpression as exc:
        raise ToolFailed(f"cannot evaluate {expression!r}: {exc}") from None
    except RecursionError:
        raise ToolFailed(f"the expression {expression!r} is nested too deeply") from None
    value: float | int | bool | str | list[Any] = _result(expression, result)
    return value
