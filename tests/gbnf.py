"""A small GBNF reader for the tests: does a grammar accept a text, and a random text it accepts.

It reads the subset of llama.cpp's GBNF that planweave's grammars use (one rule a line; string
literals and character classes with escapes; groups; `?`, `*`, `+`, `{m}`, `{m,n}`, `{m,}`),
so that the grammar-versus-parser property tests need no model: llama.cpp's own parser checks
separately (tests/test_grammar.py) that every grammar compiles.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from functools import cache

from planweave.llm.llamacpp.guide import Guide

__all__ = ["Grammar"]


@dataclass(frozen=True)
class Lit:
    text: str


@dataclass(frozen=True)
class Chars:
    ranges: tuple[tuple[str, str], ...]
    negated: bool

    def has(self, ch: str) -> bool:
        inside = any(lo <= ch <= hi for lo, hi in self.ranges)
        return inside != self.negated


@dataclass(frozen=True)
class RuleRef:
    name: str


@dataclass(frozen=True)
class Seq:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Expr, ...]


@dataclass(frozen=True)
class Repeat:
    item: Expr
    low: int
    high: int | None


Expr = Lit | Chars | RuleRef | Seq | Alt | Repeat

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-"}


@dataclass
class _Reader:
    text: str
    pos: int = 0

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def char(self) -> str:
        ch = self.text[self.pos]
        if ch != "\\":
            self.pos += 1
            return ch
        kind = self.text[self.pos + 1]
        if kind in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[kind]
            code = self.text[self.pos + 2 : self.pos + 2 + width]
            self.pos += 2 + width
            return chr(int(code, 16))
        self.pos += 2
        return _ESCAPES[kind]

    def alternatives(self) -> Expr:
        options = [self.sequence()]
        while self.pos < len(self.text) and self.text[self.pos] == "|":
            self.pos += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def sequence(self) -> Expr:
        items: list[Expr] = []
        while True:
            self.skip()
            if self.pos >= len(self.text) or self.text[self.pos] in "|)":
                return items[0] if len(items) == 1 else Seq(tuple(items))
            items.append(self.postfix(self.atom()))

    def atom(self) -> Expr:
        ch = self.text[self.pos]
        if ch == '"':
            self.pos += 1
            out = []
            while self.text[self.pos] != '"':
                out.append(self.char())
            self.pos += 1
            return Lit("".join(out))
        if ch == "[":
            self.pos += 1
            negated = self.text[self.pos] == "^"
            self.pos += negated
            ranges = []
            while self.text[self.pos] != "]":
                lo = self.char()
                hi = lo
                if self.text[self.pos] == "-" and self.text[self.pos + 1] != "]":
                    self.pos += 1
                    hi = self.char()
                ranges.append((lo, hi))
            self.pos += 1
            return Chars(tuple(ranges), negated)
        if ch == "(":
            self.pos += 1
            inner = self.alternatives()
            assert self.text[self.pos] == ")", self.text[self.pos :]
            self.pos += 1
            return inner
        m = re.compile(r"[a-zA-Z0-9-]+").match(self.text, self.pos)
        assert m is not None, self.text[self.pos :]
        self.pos = m.end()
        return RuleRef(m.group())

    def postfix(self, item: Expr) -> Expr:
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch in "?*+":
                self.pos += 1
                item = Repeat(item, 1 if ch == "+" else 0, 1 if ch == "?" else None)
            elif ch == "{":
                end = self.text.index("}", self.pos)
                low, _, high = self.text[self.pos + 1 : end].partition(",")
                bounded = (
                    int(high) if high else (None if "," in self.text[self.pos : end] else int(low))
                )
                item = Repeat(item, int(low), bounded)
                self.pos = end + 1
            else:
                break
        return item


@dataclass
class Grammar:
    """A GBNF grammar read from its text."""

    text: str
    rules: dict[str, Expr] = field(init=False)

    def __post_init__(self) -> None:
        self.rules = {}
        for line in self.text.splitlines():
            if not line.strip():
                continue
            name, _, body = line.partition("::=")
            self.rules[name.strip()] = _Reader(body.strip()).alternatives()

    def accepts(self, text: str, rule: str = "root") -> bool:
        """Whether `rule` derives exactly `text`; the embedded engine's grammar guide
        (`planweave.llm.llamacpp.guide`), a reader written apart, must say the same."""
        own = self._derives(text, rule)
        guide = Guide.compile(self.text, rule)
        state = guide.step(guide.start(), text.encode()) if text else guide.start()
        guided = state is not None and guide.can_end(state)
        assert guided == own, f"the guide says {guided}, this reader {own}, for {text!r}"
        return own

    def _derives(self, text: str, rule: str) -> bool:

        @cache
        def ends_of_rule(name: str, start: int) -> frozenset[int]:
            return ends(self.rules[name], start)

        def ends(expr: Expr, start: int) -> frozenset[int]:
            if isinstance(expr, Lit):
                ok = text.startswith(expr.text, start)
                return frozenset({start + len(expr.text)}) if ok else frozenset()
            if isinstance(expr, Chars):
                ok = start < len(text) and expr.has(text[start])
                return frozenset({start + 1}) if ok else frozenset()
            if isinstance(expr, RuleRef):
                return ends_of_rule(expr.name, start)
            if isinstance(expr, Alt):
                return frozenset().union(*(ends(o, start) for o in expr.options))
            if isinstance(expr, Seq):
                positions = frozenset({start})
                for item in expr.items:
                    positions = frozenset().union(*(ends(item, p) for p in positions))
                return positions
            # Repeat: widen the reachable positions one more item at a time.
            reached = frozenset({start}) if expr.low == 0 else frozenset()
            frontier, count = frozenset({start}), 0
            while frontier and (expr.high is None or count < expr.high):
                frontier = frozenset().union(*(ends(expr.item, p) for p in frontier))
                count += 1
                if expr.high is None:
                    frontier = frontier - reached if count >= expr.low else frontier
                if count >= expr.low:
                    reached |= frontier
            return reached

        return len(text) in ends_of_rule(rule, 0)

    def sample(self, rng: random.Random, rule: str = "root", pool: str = "") -> str:
        """A random text `rule` derives; characters of negated classes come from `pool`, and
        past a few levels of nesting the shallowest option is taken, so it always ends."""
        heights = self._heights()
        out: list[str] = []

        def height(expr: Expr) -> float:
            return _height(expr, heights)

        def emit(expr: Expr, depth: int) -> None:
            if isinstance(expr, Lit):
                out.append(expr.text)
            elif isinstance(expr, Chars):
                if expr.negated:
                    out.append(rng.choice([c for c in pool if expr.has(c)]))
                else:
                    lo, hi = rng.choice(expr.ranges)
                    out.append(chr(rng.randint(ord(lo), ord(hi))))
            elif isinstance(expr, RuleRef):
                emit(self.rules[expr.name], depth + 1)
            elif isinstance(expr, Seq):
                for item in expr.items:
                    emit(item, depth)
            elif isinstance(expr, Alt):
                options = list(expr.options)
                if depth > 12:
                    low = min(height(o) for o in options)
                    options = [o for o in options if height(o) == low]
                emit(rng.choice(options), depth)
            else:
                high = expr.low + 3 if expr.high is None else min(expr.high, expr.low + 3)
                for _ in range(expr.low if depth > 12 else rng.randint(expr.low, high)):
                    emit(expr.item, depth)

        emit(self.rules[rule], 0)
        return "".join(out)

    def _heights(self) -> dict[str, float]:
        """The fewest nested rule expansions each rule needs to end (a fixpoint)."""
        heights = dict.fromkeys(self.rules, float("inf"))
        changed = True
        while changed:
            changed = False
            for name, expr in self.rules.items():
                value = _height(expr, heights)
                if value < heights[name]:
                    heights[name], changed = value, True
        return heights


def _height(expr: Expr, heights: dict[str, float]) -> float:
    if isinstance(expr, RuleRef):
        return heights[expr.name] + 1
    if isinstance(expr, Seq):
        return max((_height(i, heights) for i in expr.items), default=0)
    if isinstance(expr, Alt):
        return min(_height(o, heights) for o in expr.options)
    if isinstance(expr, Repeat):
        return 0 if expr.low == 0 else _height(expr.item, heights)
    return 0
