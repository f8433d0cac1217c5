"""Branches: a task that runs only when a condition on earlier results holds.

    1. disk_usage("db-3")
    2. rotate_logs("db-3") if $1.disk_pct > 90
    3. notify("disk ok on db-3") if $1.disk_pct <= 90
    4. report("rotated: ${2}; notified: ${3}") if $2 != None or $3 != None
    5. join()

A condition is read with its plan line (`condition`), checked as the calculator's expressions
are (`expression.check`: comparisons, `and`/`or`/`not`, numbers, texts, lists, `None`, the
calculator's pure functions; no attribute, no other call), bounded in length and depth, and
evaluated by the scheduler once the task's inputs have ended (`holds`); its references are
dependencies like any others.  The rules:

- a condition that is false skips its task, recorded with why (`BranchNotTaken`, "condition
  false: $1.disk_pct > 90 ($1.disk_pct is 85)"): a branch not taken, which is no failure (no
  replan for it, and a plan's answer that does not quote it is still the answer);
- a task without a condition that reads a skipped branch's result is skipped too (the branch's
  downstream goes with it);
- a task with a condition of its own gathers branches: it waits for them, and a task skipped as
  a branch not taken reads as None in it, in its condition and in its arguments;
- a failed input skips a task as always, with a condition or without.

A condition decided is recorded: a resumed run takes a skipped branch as skipped and a task
that ran as what it gave, and evaluates again only the conditions of tasks it runs.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Mapping
from typing import Any

from .errors import ConditionError, TaskError, ToolFailed
from .expression import check, evaluate
from .plan import Condition, Ref, render_text, resolve

__all__ = ["MAX_CONDITION_CHARS", "MAX_CONDITION_DEPTH", "condition", "holds", "why_not"]

MAX_CONDITION_CHARS = 500  # a condition as the plan reads it
MAX_CONDITION_DEPTH = 32  # nested operations in one condition
_SHOWN_VALUE_CHARS = 80


def condition(test: ast.expr, to_ref: Callable[[ast.expr], Ref | None]) -> Condition:
    """The condition `test` (the parsed text after `if`, references masked) makes; `to_ref`
    reads a reference's node (None: not a reference).  Raises ValueError saying what is wrong."""
    if _depth(test) > MAX_CONDITION_DEPTH:
        raise ValueError(f"the condition nests deeper than {MAX_CONDITION_DEPTH} levels")
    refs: dict[Ref, str] = {}

    class Named(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> Any:
            ref = to_ref(node) if isinstance(node, ast.expr) else None
            if ref is None:
                return self.generic_visit(node)
            if ref.each is not None:
                raise ValueError(f"a condition reads whole results, not {ref}")
            name = refs.setdefault(ref, f"ref_{len(refs)}")
            return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)

    named = ast.Expression(body=Named().visit(test))
    expression = ast.unparse(named)
    shown = {name: str(ref) for ref, name in refs.items()}
    text = ast.unparse(_Renamed(shown).visit(ast.parse(expression, mode="eval")))
    if len(text) > MAX_CONDITION_CHARS:
        raise ValueError(f"the condition is longer than {MAX_CONDITION_CHARS} characters")
    try:
        check(named, shown, none=True)
    except ToolFailed as exc:
        raise ValueError(f"condition `{text}`: {exc.message}") from None
    return Condition(expression, tuple((name, ref) for ref, name in refs.items()), text)


class _Renamed(ast.NodeTransformer):
    """Each bound name written as the reference it stands for (`ref_0` -> `$2.disk_pct`)."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(id=self.names.get(node.id, node.id), ctx=node.ctx)


def _depth(node: ast.AST) -> int:
    deepest, stack = 0, [(node, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_CONDITION_DEPTH:
            break
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


@functools.lru_cache(maxsize=256)
def _tree(expression: str) -> ast.Expression:
    return ast.parse(expression, mode="eval")


def _values(cond: Condition, results: Mapping[int, Any]) -> dict[str, Any]:
    return {name: resolve(ref, results) for name, ref in cond.refs}


def holds(cond: Condition, results: Mapping[int, Any]) -> bool:
    """Whether `cond` holds on `results` (by task id).  Raises ConditionError when it cannot be
    evaluated or gives anything but True or False, ProjectionError when a reference does not
    resolve."""
    values = _values(cond, results)
    try:
        value = evaluate(_tree(cond.expression), values, shown=cond.text)
    except ToolFailed as exc:
        raise ConditionError(
            f"the condition `{cond.text}` cannot be evaluated: {exc.message}{_given(cond, values)}",
            cause="condition",
        ) from None
    if not isinstance(value, bool):
        raise ConditionError(
            f"the condition `{cond.text}` gives {_shown(value)}, not True or False: compare "
            f'it, as in `len($1) > 0` or `$1 == "done"`{_given(cond, values)}',
            cause="condition",
        )
    return value


def why_not(cond: Condition, results: Mapping[int, Any]) -> str:
    """Why a task whose condition is false was skipped: the condition and what it read."""
    try:
        values = _values(cond, results)
    except TaskError:
        values = {}
    return f"condition false: {cond.text}{_given(cond, values)}"


def _given(cond: Condition, values: Mapping[str, Any]) -> str:
    read = [f"{ref} is {_shown(values[name])}" for name, ref in cond.refs if name in values]
    return f" ({'; '.join(read)})" if read else ""


def _shown(value: Any) -> str:
    text = "None" if value is None else render_text(value)
    if isinstance(value, str):
        text = repr(value)
    return text if len(text) <= _SHOWN_VALUE_CHARS else text[: _SHOWN_VALUE_CHARS - 3] + "..."
