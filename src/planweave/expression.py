"""Safe evaluation of one expression: numbers, texts, lists, arithmetic, comparisons, `and`/`or`/
`not`, a few pure functions and one-loop comprehensions, by `simpleeval` (never `eval`).

One evaluator serves the `calculator` tool (its expression) and a plan's conditions
(`N. tool(...) if ${2.disk_pct} > 90`, `branches`).  Arithmetic takes numbers only (a text or a
list times a number would be a way to build a huge value), a power or a product may not grow
past `MAX_DIGITS` digits, and every refusal (`ToolFailed`) says what to write instead.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Collection, Mapping
from typing import Any

from .errors import ToolFailed, UserError

__all__ = ["FUNCTIONS", "MAX_DIGITS", "check", "evaluate"]

MAX_DIGITS = 1000  # decimal digits an integer power may produce
_MAX_BITS = MAX_DIGITS * 10 // 3
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


def check(tree: ast.Expression, names: Collection[str] = (), *, none: bool = False) -> None:
    """Refuse, with a readable reason (`ToolFailed`), anything but numbers, texts, lists,
    operators, comparisons, the allowed calls and one-loop comprehensions; `names` are
    variables the caller binds too, and `none` allows the constant None.  What a value may do
    is checked when it is used (arithmetic takes numbers only)."""
    bound: set[str] = set(names)
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
        elif isinstance(node, ast.Constant | ast.Name):
            _check_leaf(node, bound, none)
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
        elif not isinstance(node, _STRUCTURE):
            raise ToolFailed(f"{type(node).__name__} is not allowed in arithmetic")


_STRUCTURE = (
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
    | ast.expr_context
)


def _check_leaf(node: ast.Constant | ast.Name, bound: Collection[str], none: bool) -> None:
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, int | float | str) and not (none and node.value is None):
            raise ToolFailed(f"only numbers and texts are allowed, not {node.value!r}")
    elif node.id not in _NAMES and node.id not in _FUNCTIONS and node.id not in bound:
        known = ", ".join([*_NAMES, *_FUNCTIONS])
        raise ToolFailed(
            f"unknown name {node.id!r}; known names: {known}; a text goes in quotes, "
            "as in \"'${1}' == '${2}'\""
        )


def evaluate(
    tree: ast.Expression, names: Mapping[str, Any] | None = None, *, shown: str = ""
) -> Any:
    """The value of `tree` (checked by `check` first, with `names` bound); `shown` is how
    errors quote it.  Raises ToolFailed."""
    try:
        import simpleeval  # type: ignore[import-untyped]
    except ImportError:
        raise UserError(
            "the calculator and plan conditions need the 'simpleeval' package: "
            "pip install 'planweave[tools]'"
        ) from None
    evaluator = simpleeval.EvalWithCompoundTypes(
        operators=dict(_ALLOWED_OPS), functions=dict(_FUNCTIONS), names={**_NAMES, **(names or {})}
    )
    try:
        return evaluator.eval(shown, previously_parsed=tree.body)
    except ToolFailed:
        raise
    except ZeroDivisionError:
        raise ToolFailed(f"division by zero in {shown!r}") from None
    except OverflowError:
        raise ToolFailed(f"the result of {shown!r} is too large") from None
    except (ValueError, TypeError) as exc:
        raise ToolFailed(f"cannot evaluate {shown!r}: {exc}") from None
    except simpleeval.InvalidExpression as exc:
        raise ToolFailed(f"cannot evaluate {shown!r}: {exc}") from None
    except RecursionError:
        raise ToolFailed(f"the expression {shown!r} is nested too deeply") from None


FUNCTIONS = frozenset(_FUNCTIONS)
