"""Which text a GBNF grammar allows next, in Python, for greedy decoding.

llama.cpp's grammar sampler checks every token of the vocabulary at every step (151,936 for
Qwen; 12–25 ms a token on two cores, a quarter of the decoding time of a plan).  Greedy decoding
needs less: the token the model likes best is nearly always one the grammar allows, so the
engine asks this module about that one token, and only when it is refused walks down the
model's ranking to the best token that is allowed.  The text written is the same as under
llama.cpp's sampler, which also keeps the best allowed token.

The grammar is read as llama.cpp reads it (`grammar-parser.cpp`): rules of literals, character
classes, `.`, rule references, groups and the repetitions `* + ? {m} {m,} {m,n}`, the latter
rewritten into rules the same way.  It is matched as llama.cpp matches it: a set of stacks of
positions in alternatives, advanced one code point at a time; a token whose bytes end inside a
UTF-8 character is allowed when some stack can take a character that begins so.

    guide = Guide.compile('root ::= "a" [0-9]+')
    state = guide.step(guide.start(), b"a1")     # None: not allowed
    guide.can_end(state)
"""

from __future__ import annotations

import codecs
import functools
from dataclasses import dataclass

__all__ = ["Guide", "GuideState", "UnsupportedGrammar"]

_MAX_DEPTH = 400  # rule expansions without reading a character (llama.cpp refuses left recursion)
_MAX_CACHE = 200_000
_MAX_REPEAT = 10_000  # each repetition becomes a rule: a bound, like a count, that holds memory


class UnsupportedGrammar(ValueError):
    """The grammar uses what this reader does not know (the engine then leaves it to
    llama.cpp's own sampler)."""


@dataclass(frozen=True, slots=True)
class _Chars:
    """One character position: code point ranges, or anything outside them."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool

    def matches(self, c: int) -> bool:
        inside = any(lo <= c <= hi for lo, hi in self.ranges)
        return inside != self.negated

    def meets(self, lo: int, hi: int) -> bool:
        """Whether some code point in lo..hi matches."""
        if not self.negated:
            return any(a <= hi and lo <= b for a, b in self.ranges)
        at = lo  # the first code point not yet known to be excluded
        for a, b in sorted(self.ranges):
            if a > at:
                break
            at = max(at, b + 1)
            if at > hi:
                return False
        return at <= hi


_ANY = _Chars((), True)
# A stack: the position (alternative, element) to match next, over what follows it; None is
# the empty stack (the grammar is complete).
_Stack = tuple[int, int, "_Stack"] | None


@dataclass(frozen=True, slots=True)
class GuideState:
    stacks: frozenset[_Stack]
    pending: bytes = b""  # the start of a UTF-8 character the last token ended in


class Guide:
    """A compiled grammar; states are immutable, so one guide serves any number of streams."""

    def __init__(self, rules: list[list[tuple[_Chars | int, ...]]], root: int) -> None:
        self._alts: list[tuple[_Chars | int, ...]] = []
        self._rules: list[tuple[int, ...]] = []
        for alternatives in rules:
            first = len(self._alts)
            self._alts.extend(alternatives)
            self._rules.append(tuple(range(first, len(self._alts))))
        self._root = root
        self._expanded: dict[_Stack, tuple[_Stack, ...]] = {}
        self._advanced: dict[tuple[_Stack, int], tuple[_Stack, ...]] = {}

    @staticmethod
    @functools.lru_cache(maxsize=16)
    def compile(text: str, root: str = "root") -> Guide:
        """UnsupportedGrammar when the text is not a grammar this module reads."""
        return _Parser(text).build(root)

    def start(self) -> GuideState:
        out: set[_Stack] = set()
        for alt in self._rules[self._root]:
            out.update(self._expand((alt, 0, None)))
        return GuideState(frozenset(out))

    def can_end(self, state: GuideState) -> bool:
        return None in state.stacks and not state.pending

    def step(self, state: GuideState, piece: bytes) -> GuideState | None:
        """The state after a token's bytes, or None when the grammar does not allow them
        (llama.cpp refuses empty pieces and pieces that begin with a zero byte too)."""
        if not piece or piece[0] == 0:
            return None
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            text = decoder.decode(state.pending + piece, final=False)
        except UnicodeDecodeError:
            return None
        pending = decoder.getstate()[0]
        stacks: frozenset[_Stack] | set[_Stack] = state.stacks
        for ch in text:
            c = ord(ch)
            following: set[_Stack] = set()
            for stack in stacks:
                if stack is not None:
                    following.update(self._advance(stack, c))
            if not following:
                return None
            stacks = following
        if pending and not self._may_begin(stacks, pending):
            return None
        return GuideState(frozenset(stacks), pending)

    # -- matching ---------------------------------------------------------------------------

    def _advance(self, stack: tuple[int, int, _Stack], c: int) -> tuple[_Stack, ...]:
        key = (stack, c)
        done = self._advanced.get(key)
        if done is None:
            alt, pos, below = stack
            chars = self._alts[alt][pos]
            assert isinstance(chars, _Chars)
            done = self._expand((alt, pos + 1, below)) if chars.matches(c) else ()
            if len(self._advanced) > _MAX_CACHE:
                self._advanced.clear()
            self._advanced[key] = done
        return done

    def _expand(self, stack: _Stack) -> tuple[_Stack, ...]:
        """The stacks whose top is a character position (or the empty stack) that `stack`
        stands for, rule references opened; a reference last in its alternative leaves no
        continuation behind (llama.cpp's tail call), so repetition does not deepen stacks."""
        done = self._expanded.get(stack)
        if done is None:
            out: dict[_Stack, None] = {}
            self._open(stack, out, 0)
            done = tuple(out)
            if len(self._expanded) > _MAX_CACHE:
                self._expanded.clear()
            self._expanded[stack] = done
        return done

    def _open(self, stack: _Stack, out: dict[_Stack, None], depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise UnsupportedGrammar("the grammar opens rules without end (left recursion?)")
        while stack is not None:
            alt, pos, below = stack
            elements = self._alts[alt]
            if pos == len(elements):
                stack = below
                continue
            element = elements[pos]
            if isinstance(element, _Chars):
                out[stack] = None
                return
            after: _Stack = (alt, pos + 1, below) if pos + 1 < len(elements) else below
            for inner in self._rules[element]:
                self._open((inner, 0, after), out, depth + 1)
            return
        out[None] = None

    def _may_begin(self, stacks: frozenset[_Stack] | set[_Stack], pending: bytes) -> bool:
        """Whether some stack takes a character whose UTF-8 encoding begins with `pending`."""
        lead = pending[0]
        size = 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4
        value = lead & (0x1F, 0x0F, 0x07)[size - 2]
        for byte in pending[1:]:
            value = value << 6 | byte & 0x3F
        missing = 6 * (size - len(pending))
        lo, hi = value << missing, (value << missing) | ((1 << missing) - 1)
        for stack in stacks:
            if stack is not None:
                chars = self._alts[stack[0]][stack[1]]
                assert isinstance(chars, _Chars)
                if chars.meets(lo, hi):
                    return True
        return False


# -- reading the grammar ----------------------------------------------------------------------

_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "[": "[", "]": "]"}


def _is_word(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "-")


class _Parser:
    """GBNF as llama.cpp's grammar parser reads it, into rules of alternatives of elements: a
    `_Chars` or a rule number."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.names: dict[str, int] = {}
        self.rules: list[list[tuple[_Chars | int, ...]] | None] = []
        self.defined: set[int] = set()

    def fail(self, what: str) -> UnsupportedGrammar:
        return UnsupportedGrammar(f"{what} at character {self.i} of the grammar")

    def rule_id(self, name: str) -> int:
        if name not in self.names:
            self.names[name] = len(self.rules)
            self.rules.append(None)
        return self.names[name]

    def new_rule(self, alternatives: list[tuple[_Chars | int, ...]]) -> int:
        self.rules.append(alternatives)
        return len(self.rules) - 1

    def build(self, root: str) -> Guide:
        self.space(newlines=True)
        while self.i < len(self.text):
            name = self.name()
            self.space(newlines=False)
            if not self.text.startswith("::=", self.i):
                raise self.fail("expected ::=")
            self.i += 3
            self.space(newlines=True)
            rule = self.rule_id(name)
            self.rules[rule] = self.alternates(nested=False)
            self.defined.add(rule)
            self.space(newlines=True)
        if root not in self.names:
            raise UnsupportedGrammar(f"the grammar has no rule {root!r}")
        missing = [n for n, r in self.names.items() if r not in self.defined]
        if missing:
            raise UnsupportedGrammar(f"the grammar uses undefined rules: {', '.join(missing)}")
        rules = [r if r is not None else [] for r in self.rules]
        return Guide(rules, self.names[root])

    def space(self, newlines: bool) -> None:
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            if ch in " \t" or (newlines and ch in "\r\n"):
                self.i += 1
            elif ch == "#":
                while self.i < len(text) and text[self.i] not in "\r\n":
                    self.i += 1
            else:
                return

    def name(self) -> str:
        start = self.i
        while self.i < len(self.text) and _is_word(self.text[self.i]):
            self.i += 1
        if self.i == start:
            raise self.fail("expected a name")
        return self.text[start : self.i]

    def alternates(self, nested: bool) -> list[tuple[_Chars | int, ...]]:
        out = [self.sequence(nested)]
        while self.i < len(self.text) and self.text[self.i] == "|":
            self.i += 1
            self.space(newlines=True)
            out.append(self.sequence(nested))
        return out

    def sequence(self, nested: bool) -> tuple[_Chars | int, ...]:
        elements: list[_Chars | int] = []
        last = len(elements)  # where the last symbol began (a repetition repeats it)
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            if ch == '"':
                last = len(elements)
                self.i += 1
                while self.i < len(text) and text[self.i] != '"':
                    c = self.char()
                    elements.append(_Chars(((c, c),), False))
                if self.i >= len(text):
                    raise self.fail("unterminated literal")
                self.i += 1
            elif ch == "[":
                last = len(elements)
                elements.append(self.char_class())
            elif _is_word(ch):
                last = len(elements)
                elements.append(self.rule_id(self.name()))
            elif ch == "(":
                last = len(elements)
                self.i += 1
                self.space(newlines=True)
                inner = self.alternates(nested=True)
                if self.i >= len(text) or text[self.i] != ")":
                    raise self.fail("expected )")
                self.i += 1
                elements.append(self.new_rule(inner))
            elif ch == ".":
                last = len(elements)
                self.i += 1
                elements.append(_ANY)
            elif ch in "*+?{":
                if last == len(elements):
                    raise self.fail(f"{ch} follows nothing")
                low, high = self.repetition()
                elements[last:] = self.repeat(tuple(elements[last:]), low, high)
                last = len(elements)
            elif ch == "<":
                raise self.fail("token references are not supported")
            else:
                break
            self.space(newlines=nested)
        return tuple(elements)

    def repetition(self) -> tuple[int, int | None]:
        ch = self.text[self.i]
        self.i += 1
        if ch == "*":
            return 0, None
        if ch == "+":
            return 1, None
        if ch == "?":
            return 0, 1
        self.space(newlines=False)
        low = self.integer()
        high: int | None = low
        self.space(newlines=False)
        if self.text.startswith(",", self.i):
            self.i += 1
            self.space(newlines=False)
            more = self.i < len(self.text) and self.text[self.i].isdigit()
            high = self.integer() if more else None
            self.space(newlines=False)
        if not self.text.startswith("}", self.i):
            raise self.fail("expected }")
        self.i += 1
        if high is not None and high < low:
            raise self.fail("a repetition's maximum is below its minimum")
        if max(low, high or 0) > _MAX_REPEAT:
            raise self.fail(f"a repetition of more than {_MAX_REPEAT:,}")
        return low, high

    def integer(self) -> int:
        start = self.i
        while self.i < len(self.text) and self.text[self.i].isdigit():
            self.i += 1
        if start == self.i:
            raise self.fail("expected a number")
        return int(self.text[start : self.i])

    def repeat(
        self, symbol: tuple[_Chars | int, ...], low: int, high: int | None
    ) -> list[_Chars | int]:
        """llama.cpp's rewriting: `low` copies, then `x*` as R ::= x R | (empty), or the
        optional rest as nested rules R_k ::= x R_(k-1) | (empty)."""
        out: list[_Chars | int] = list(symbol * low)
        if high is None:
            rule = self.new_rule([])
            self.rules[rule] = [(*symbol, rule), ()]
            out.append(rule)
        elif high > low:
            inner: int | None = None
            for _ in range(high - low):
                tail: tuple[_Chars | int, ...] = (inner,) if inner is not None else ()
                inner = self.new_rule([(*symbol, *tail), ()])
            assert inner is not None
            out.append(inner)
        return out

    def char(self) -> int:
        text = self.text
        ch = text[self.i]
        if ch != "\\":
            self.i += 1
            return ord(ch)
        if self.i + 1 >= len(text):
            raise self.fail("a lone backslash")
        kind = text[self.i + 1]
        digits = {"x": 2, "u": 4, "U": 8}.get(kind)
        if digits is not None:
            hexa = text[self.i + 2 : self.i + 2 + digits]
            if len(hexa) != digits or any(h not in "0123456789abcdefABCDEF" for h in hexa):
                raise self.fail("a bad escape")
            self.i += 2 + digits
            return int(hexa, 16)
        if kind in _ESCAPES:
            self.i += 2
            return ord(_ESCAPES[kind])
        raise self.fail(f"unknown escape \\{kind}")

    def char_class(self) -> _Chars:
        text = self.text
        self.i += 1
        negated = self.i < len(text) and text[self.i] == "^"
        if negated:
            self.i += 1
        ranges: list[tuple[int, int]] = []
        while self.i < len(text) and text[self.i] != "]":
            lo = self.char()
            hi = lo
            if text.startswith("-", self.i) and self.i + 1 < len(text) and text[self.i + 1] != "]":
                self.i += 1
                hi = self.char()
            ranges.append((lo, hi))
        if self.i >= len(text):
            raise self.fail("unterminated character class")
        self.i += 1
        return _Chars(tuple(ranges), negated)
