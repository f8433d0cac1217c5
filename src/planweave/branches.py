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
import itertools
import re
from collections.abc import Callable, Mapping
from typing import Any

from .errors import ConditionError, TaskError, ToolFailed
from .expression import check, evaluate
from .plan import Condition, Ref, render_text, resolve
from .returns import declared_fields, has_fields

__all__ = [
    "MAX_CONDITION_CHARS",
    "MAX_CONDITION_DEPTH",
    "condition",
    "holds",
    "unsound",
    "why_not",
]

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


Returns = Callable[[Ref], "tuple[str, Any] | None"]  # a reference's tool and declared type
_ORDER = (ast.Lt, ast.Gt, ast.LtE, ast.GtE)
_REF_IN_TEXT_RE = re.compile(r"\$\{\d")


def unsound(
    cond: Condition,
    returns: Returns,
    action: Callable[[str], bool],
    skippable: Callable[[int], bool],
) -> str | None:
    """Why `cond` can only be false, always holds, or cannot be evaluated as written (None
    when it can be either): a text holding a reference (`"${3}" == "done"`), a result
    compared with a value of another kind than its declared type's (a bool or number with a
    text, a text or a record with a number), an action's text said equal to a text (what an
    action says it did is not known before it runs), `$N != None` of a task every run has,
    or a task a run may skip (`skippable`) ordered without testing it against None first.
    `returns` gives a reference's tool and declared type, `action` whether a tool is one."""
    refs = dict(cond.refs)
    tree = _tree(cond.expression)
    tested = {refs[n.id].task_id for n in _none_tested(tree) if n.id in refs}
    for node in ast.walk(tree):
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(text, str) and _REF_IN_TEXT_RE.search(text):
            return (
                f"compares the text {text!r}, not a result: write the reference without "
                'quotes, as in `$1 == "done"`'
            )
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for op, pair in zip(node.ops, itertools.pairwise(sides), strict=True):
            for name, other in (pair, pair[::-1]):
                ref = refs.get(name.id) if isinstance(name, ast.Name) else None
                if ref is None:
                    continue
                if isinstance(op, _ORDER) and skippable(ref.task_id) and ref.task_id not in tested:
                    return (
                        f"orders {ref}, but task {ref.task_id} runs only when a condition "
                        f"holds: when it does not, {ref} is None and cannot be compared; read "
                        "a result every run has"
                    )
                if isinstance(other, ast.Constant) and not isinstance(other.value, bool):
                    why = _compared(ref, op, other.value, returns, action, skippable)
                    if why is not None:
                        return why
    return None


def _none_tested(tree: ast.AST) -> list[ast.Name]:
    """The names compared with None in `tree` (`$4 != None and $4 > 30` tests $4 first)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Constant) and s.value is None for s in sides):
                out += [s for s in sides if isinstance(s, ast.Name)]
    return out


def _compared(
    ref: Ref,
    op: ast.cmpop,
    value: Any,
    returns: Returns,
    action: Callable[[str], bool],
    skippable: Callable[[int], bool],
) -> str | None:
    """Why comparing the whole result `ref` with the constant `value` is pointless, or None."""
    if value is None:
        if ref.path or skippable(ref.task_id) or not isinstance(op, ast.Eq | ast.NotEq):
            return None
        holds = "always holds" if isinstance(op, ast.NotEq) else "never holds"
        return (
            f"tests {ref} against None, but task {ref.task_id} runs in every run (it has no "
            f"condition and reads no branch), so that {holds}: test what the runbook's words "
            "say, on the results or the parameters"
        )
    known = None if ref.path or ref.each is not None else returns(ref)
    if known is None:
        return None
    tool, declared = known
    if isinstance(value, str) and declared in (bool, int, float):
        hint = "True or False" if declared is bool else "a number"
        return (
            f"compares {ref} with the text {value!r}, but {tool} returns {declared.__name__}: "
            f"compare it with {hint}, without quotes"
        )
    if isinstance(value, str) and isinstance(op, ast.Eq | ast.NotEq) and action(tool):
        return (
            f"compares {ref} with the text {value!r}, but {tool} is an action: the text it "
            "returns says what it did, in words no plan knows before it runs; to test that "
            f"task {ref.task_id} ran, write `{ref} != None`"
        )
    if isinstance(value, int | float) and declared is str:
        return (
            f"compares {ref} with the number {value!r}, but {tool} returns a text: compare a "
            "number one of the results gives"
        )
    if isinstance(value, int | float) and has_fields(declared):
        fields = declared_fields(declared) or ()
        some = f" (its fields: {', '.join(fields)})" if fields else ""
        return (
            f"compares {ref}, the whole result of {tool}, with the number {value!r}: compare "
            f"one of its fields{some}, as `{ref}.<field>`"
        )
    return None


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
