"""`calculator`: safe arithmetic on one expression, evaluated by `simpleeval` (never `eval`)."""

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

__all__ = ["MAX_DIGITS", "MAX_LENGTH", "calculator"]

MAX_LENGTH = 500  # characters in one expression
MAX_DIGITS = 1000  # decimal digits an integer power may produce

_SYMBOLS = {"×": "*", "÷": "/", "−": "-", "^": "**"}
_UNDERSCORE_RE = re.compile(r"(?<=\d)_(?=\d)")
_NAMES = {"pi": math.pi, "e": math.e}


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


def _log(x: float, base: float = math.e) -> float:
    return math.log(x, base)


def _round(x: float, ndigits: int | None = None) -> float | int:
    # round(1, -10**9) computes 10**(10**9) while holding the GIL: refuse it up front.
    if isinstance(ndigits, int) and not -MAX_DIGITS <= ndigits <= MAX_DIGITS:
        raise ToolFailed(f"round's digits must be between -{MAX_DIGITS} and {MAX_DIGITS}")
    return round(x, ndigits)


def _count(items: Any) -> int:
    if not isinstance(items, list | tuple):
        raise ToolFailed("len counts the items of a list, as in len([1, 2, 3])")
    return len(items)


def _numbers(name: str, args: tuple[Any, ...]) -> list[Any]:
    """The numbers of sum(...) or mean(...): one list, or the numbers written out."""
    items = list(args[0]) if len(args) == 1 and isinstance(args[0], list | tuple) else list(args)
    if not items:
        raise ToolFailed(f"{name} needs numbers, as in {name}([1, 2, 3]) or {name}(1, 2, 3)")
    return items


def _sum(*args: Any) -> Any:
    return sum(_numbers("sum", args))


def _mean(*args: Any) -> float:
    items = _numbers("mean", args)
    return float(sum(items) / len(items))


# Functions whose list argument may hold texts too: a count of names is a number.
_COUNTING = frozenset({"len", "count"})

_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": _count,
    "count": _count,
    "mean": _mean,
    "average": _mean,
    "abs": abs,
    "round": _round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "log": _log,
    "exp": math.exp,
    "sum": _sum,
}
_ALLOWED_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _power,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _check(tree: ast.Expression) -> None:
    """Refuse, with a readable reason, anything but numbers, operators and allowed calls.  A
    list (a fan-out's results, "sum(${2})") may only be a function's argument: `[1] * 10**9`
    would build a huge one."""
    listed = {
        id(a)
        for node in ast.walk(tree.body)
        if isinstance(node, ast.Call)
        for a in node.args
        if isinstance(a, ast.List | ast.Tuple)
    }
    counted = {
        id(item)
        for node in ast.walk(tree.body)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _COUNTING
        for a in node.args
        if isinstance(a, ast.List | ast.Tuple)
        for item in a.elts
    }
    for node in ast.walk(tree.body):
        if isinstance(node, ast.List | ast.Tuple):
            if id(node) not in listed:
                raise ToolFailed(
                    "a list may only be a function's argument, as in sum([1, 2]); write "
                    "numbers without thousands separators"
                )
        elif isinstance(node, ast.BinOp | ast.UnaryOp):
            if type(node.op) not in _ALLOWED_OPS:
                raise ToolFailed(f"operator {type(node.op).__name__} is not allowed")
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, str) and id(node) in counted:
                continue
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise ToolFailed(f"only numbers are allowed, not {node.value!r}")
        elif isinstance(node, ast.Name):
            if node.id not in _NAMES and node.id not in _FUNCTIONS:
                known = ", ".join([*_NAMES, *_FUNCTIONS])
                raise ToolFailed(f"unknown name {node.id!r}; known names: {known}")
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
                raise ToolFailed(f"only these functions may be called: {', '.join(_FUNCTIONS)}")
            if node.keywords:
                raise ToolFailed("functions take positional arguments only")
        elif isinstance(node, ast.Attribute):
            raise ToolFailed("attribute access is not allowed")
        elif not isinstance(node, ast.operator | ast.unaryop | ast.Load | ast.expr_context):
            raise ToolFailed(f"{type(node).__name__} is not allowed in arithmetic")


@tool(isolate=True, pure=True)
def calculator(expression: str) -> float | int:
    """Evaluate an arithmetic expression such as "(17900000 / 41850) - 300".

    Knows + - * / // % ** (also written ^), parentheses, abs, round, min, max, sqrt, log (natural,
    or log(x, base)), exp, pi and e; sum, min, max and mean (the average) take numbers or a
    list: sum(1, 2, 3) or sum([1, 2, 3]); len counts a list's items, names too:
    len(["Spain", "Italy"]) is 2.
    Integers stay integers except through `/`, which always gives a float (10 / 2 is 5.0).
    Write numbers without thousands separators (17900000 or 17_900_000); scientific notation
    like 1.5e6 works.

    Args:
        expression: numbers without thousands separators, + - * / ** ( ), sqrt, round, min, max;
            sum, mean (the average) and len (how many) of a list
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
    _check(tree)
    # The compound evaluator for list literals only: `_check` refused every other compound.
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
    if isinstance(result, bool) or not isinstance(result, int | float):
        raise ToolFailed(f"{expression!r} does not evaluate to a number")
    if isinstance(result, int) and result.bit_length() > MAX_DIGITS * 10 // 3:
        raise ToolFailed(f"the result of {expression!r} has more than {MAX_DIGITS} digits")
    if isinstance(result, float) and not math.isfinite(result):
        raise ToolFailed(f"the result of {expression!r} is not a finite number")
    return result
