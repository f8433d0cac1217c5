"""The plan grammar and the plan parser agree: over generated tool signatures, every call the
grammar lets a model write is one the parser accepts, and every valid call, written the plain
way (double-quoted strings, keywords in the declared order), is one the grammar allows.

The grammar is narrower than the parser on purpose (the parser forgives single quotes, spaces,
keyword order); what it must never do is force a model into a call the parser then refuses, or
make a valid call impossible to write.
"""

from __future__ import annotations

import inspect
import json
import keyword
import random
import re
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gbnf import Grammar
from planweave import PlanError, ToolRegistry
from planweave.grammar import plan_grammar, react_grammar
from planweave.parser import PlanParser, parse_task
from planweave.tools import Tool

_TEXT = st.text(max_size=5)
# Annotations a tool may use, with a strategy for their valid values.
_FLOATS = st.floats(allow_nan=False, allow_infinity=False)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _FLOATS | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)
_QUOTED = Literal["plain", 'he said "hi"', "back\\slash", "two\nlines", 7, None]
_QUOTED_VALUES = ["plain", 'he said "hi"', "back\\slash", "two\nlines", 7, None]
ANNOTATIONS: dict[str, tuple[Any, st.SearchStrategy[Any]]] = {
    "str": (str, st.text(max_size=12)),
    "int": (int, st.integers()),
    "float": (float, _FLOATS),
    "bool": (bool, st.booleans()),
    "list[str]": (list[str], st.lists(st.text(max_size=6), max_size=4)),
    "list[int]": (list[int], st.lists(st.integers(), max_size=4)),
    "set[int]": (set[int], st.lists(st.integers(), max_size=4)),
    "tuple[int, str]": (tuple[int, str], st.tuples(st.integers(), st.text(max_size=6))),
    "dict[str, int]": (dict[str, int], st.dictionaries(_TEXT, st.integers(), max_size=3)),
    "dict[int, str]": (dict[int, str], st.dictionaries(st.integers(), _TEXT, max_size=3)),
    "dict": (dict[str, Any], st.dictionaries(_TEXT, _JSON, max_size=3)),
    "Literal": (Literal["fast", "slow"], st.sampled_from(["fast", "slow"])),
    "Literal quoted": (_QUOTED, st.sampled_from(_QUOTED_VALUES)),
    "int | None": (int | None, st.none() | st.integers()),
    "str | int": (str | int, st.text(max_size=6) | st.integers()),
    "Any": (Any, _JSON),
    "unannotated": (inspect.Parameter.empty, _JSON),
}

# Characters the grammar's negated classes are sampled from: what models and people write,
# and the ones that break things (quotes, backslashes, `$`, control characters).
POOL = "abcXYZ019 _-.,:;!?'\"\\$/{}[]()<>=+*#%&|~`@\t\r\x00\x01\x7féü€日本ßΩ🙂"


def _names() -> st.SearchStrategy[str]:
    return st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,7}", fullmatch=True).filter(
        lambda n: not keyword.iskeyword(n) and n not in ("True", "False", "None", "join")
    )


_KINDS = {
    "positional-only": inspect.Parameter.POSITIONAL_ONLY,
    "either": inspect.Parameter.POSITIONAL_OR_KEYWORD,
    "keyword-only": inspect.Parameter.KEYWORD_ONLY,
}
Spec = tuple[str, str, bool, str]  # name, annotation key, required, kind


@st.composite
def tools(draw: st.DrawFn) -> tuple[Tool, list[Spec]]:
    """A tool with a generated signature, in an order Python allows."""
    names = draw(st.lists(_names(), max_size=5, unique_by=str.lower))
    drawn = [
        (
            name,
            draw(st.sampled_from(sorted(ANNOTATIONS))),
            draw(st.booleans()),
            draw(st.sampled_from(sorted(_KINDS))),
        )
        for name in names
    ]
    order = list(_KINDS)
    drawn.sort(key=lambda s: order.index(s[3]))
    specs: list[Spec] = []
    optional_seen = False
    for name, kind, required, param_kind in drawn:
        if param_kind != "keyword-only":
            # A positional parameter without a default cannot follow one with a default.
            required = required and not optional_seen
            optional_seen |= not required
        specs.append((name, kind, required, param_kind))

    def fn(*args: Any, **kwargs: Any) -> None:
        return None

    params = [
        inspect.Parameter(
            name,
            _KINDS[param_kind],
            default=inspect.Parameter.empty if required else None,
            annotation=ANNOTATIONS[kind][0],
        )
        for name, kind, required, param_kind in specs
    ]
    fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    fn.__annotations__ = {
        p.name: p.annotation for p in params if p.annotation is not inspect.Parameter.empty
    }
    return Tool.from_function(fn, name=draw(_names()), description="generated"), specs


def _string(text: str) -> str:
    """The plain spelling of a string: double quotes, and escapes the grammar allows."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ch == "\x7f":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out) + '"'


def writable(value: Any) -> bool:
    """Whether the grammar can spell `value`.  Its two deliberate gaps, so that a model can
    never write a reference the parser then refuses: a string holding `${` that is not a
    reference, and a dict key holding `$` and a digit (the parser reads `$1` there as one)."""
    if isinstance(value, str):
        return "${" not in value
    if isinstance(value, list | tuple):
        return all(writable(v) for v in value)
    if isinstance(value, dict):
        keys_plain = not any(isinstance(k, str) and re.search(r"\$\d", k) for k in value)
        return keys_plain and all(writable(v) for v in value.values())
    return True


def write(value: Any) -> str:
    """A valid argument value as a plan writes it."""
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(write(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{write(k)}: {write(v)}" for k, v in value.items()) + "}"
    raise AssertionError(value)


@st.composite
def calls(draw: st.DrawFn, tool_and_specs: tuple[Tool, list[Spec]], refs: int = 99) -> str:
    """A valid call of the tool, written plainly: some arguments positional, then keywords in
    the declared order; a value may be a reference to one of tasks 1..`refs`."""
    tool_, specs = tool_and_specs
    values = {}
    skipped_positional_only = False
    for name, kind, required, param_kind in specs:
        # An optional positional-only parameter cannot be given once an earlier one is not.
        if param_kind == "positional-only" and skipped_positional_only:
            continue
        if required or draw(st.booleans()):
            if refs and draw(st.integers(0, 9)) == 0:
                values[name] = f"${draw(st.integers(1, refs))}"
            else:
                value = draw(ANNOTATIONS[kind][1])
                assume(writable(value))
                values[name] = write(value)
        else:
            skipped_positional_only |= param_kind == "positional-only"
    given = [s[0] in values for s in specs]
    must = max(
        (i + 1 for i, s in enumerate(specs) if s[3] == "positional-only" and given[i]), default=0
    )
    prefix = 0
    while prefix < len(specs) and given[prefix] and specs[prefix][3] != "keyword-only":
        prefix += 1
    split = draw(st.integers(must, prefix))
    positional = [values[n] for n, *_ in specs[:split]]
    keywords = [f"{n}={values[n]}" for n, *_ in specs[split:] if n in values]
    return f"{tool_.name}({', '.join([*positional, *keywords])})"


@pytest.mark.slow  # 2-8 s
@given(data=st.data(), tool_and_specs=tools())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_valid_call_written_plainly_is_allowed_by_the_grammar(
    data: st.DataObject, tool_and_specs: tuple[Tool, list[Spec]]
) -> None:
    tool_, _ = tool_and_specs
    call = data.draw(calls(tool_and_specs))
    registry = ToolRegistry(tool_)
    parse_task(call, 100, registry, known=range(1, 100))  # the parser takes it
    grammar = Grammar(plan_grammar(registry))
    assert grammar.accepts(call, "call"), (plan_grammar(registry), call)
    assert Grammar(react_grammar(registry)).accepts(call, "call")


@pytest.mark.slow  # 2-8 s
@given(tool_and_specs=tools(), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_call_the_grammar_allows_is_accepted_by_the_parser(
    tool_and_specs: tuple[Tool, list[Spec]], seed: int
) -> None:
    tool_, _ = tool_and_specs
    registry = ToolRegistry(tool_)
    grammar = Grammar(plan_grammar(registry))
    rng = random.Random(seed)
    for _ in range(5):
        call = grammar.sample(rng, "call", POOL)
        try:
            parse_task(call, 100, registry, known=range(1, 100))
        except PlanError as exc:
            pytest.fail(f"the grammar allowed {call!r}, the parser refused it: {exc}")


@given(data=st.data(), tool_and_specs=tools())
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_whole_plans_agree(data: st.DataObject, tool_and_specs: tuple[Tool, list[Spec]]) -> None:
    """A plan of valid calls whose references point back is parsed and allowed."""
    tool_, _ = tool_and_specs
    registry = ToolRegistry(tool_)
    count = data.draw(st.integers(1, 4))
    lines = [f"{i}. {data.draw(calls(tool_and_specs, refs=i - 1))}" for i in range(1, count + 1)]
    if data.draw(st.booleans()):
        lines.insert(0, "Thought: the plan, in a few steps.")
    plan = "\n".join([*lines, f"{count + 1}. join()<END_OF_PLAN>"])
    parser = PlanParser(registry)
    parser.feed(plan)
    parser.close()
    assert Grammar(plan_grammar(registry)).accepts(plan), plan


def test_the_cases_the_issue_named() -> None:
    """Each once broke the grammar: all-optional parameters, positional-only ones, a dict
    parameter, a quote in a Literal, names that differ only in case; and a keyword-only
    parameter after one with a default could not be a tool at all."""

    def all_optional(a: int = 0, b: int = 1) -> int:
        return a + b

    def positional_only(x: str, /, n: int = 1) -> str:
        return x * n

    def takes_dict(options: dict[str, int]) -> int:
        return len(options)

    def quoted(mode: Literal['say "hi"', "plain"]) -> str:
        return mode

    def keyword_only(a: int = 1, *, b: int) -> int:
        return a + b

    def getData() -> int:  # a tool name as users write them
        return 1

    def getdata() -> int:
        return 2

    registry = ToolRegistry(
        Tool.from_function(all_optional),
        Tool.from_function(positional_only),
        Tool.from_function(takes_dict),
        Tool.from_function(quoted),
        Tool.from_function(keyword_only),
        Tool.from_function(getData),
        Tool.from_function(getdata),
    )
    grammar = Grammar(plan_grammar(registry))
    good = [
        "all_optional()", "all_optional(b=1)", "all_optional(1)", "all_optional(a=1, b=2)",
        'positional_only("x")', 'positional_only("x", 2)', 'positional_only("x", n=2)',
        'takes_dict({"a": 1, "b": $1})', "takes_dict({})", 'quoted("say \\"hi\\"")',
        "getData()", "getdata()", "keyword_only(b=2)", "keyword_only(1, b=2)",
    ]  # fmt: skip
    bad = [
        "all_optional(, b=1)",
        'positional_only(x="x")',
        "takes_dict([1])",
        'quoted("say "hi"")',
        "getDATA()",
        "all_optional(a=1, 2)",
        "keyword_only(1, 2)",
    ]
    for call in good:
        parse_task(call, 2, registry, known=[1])
        assert grammar.accepts(call, "call"), call
    for call in bad:
        assert not grammar.accepts(call, "call"), call
        with pytest.raises(PlanError):
            parse_task(call, 2, registry, known=[1])


def test_a_reference_key_that_is_a_python_word_parses() -> None:
    """`$1.class` is a key named `class`, not a syntax error."""

    def echo(value: Any) -> Any:
        return value

    registry = ToolRegistry(Tool.from_function(echo))
    task = parse_task("echo($1.class)", 2, registry, known=[1])
    assert json.dumps(task.args[0].path) == '["class"]'
    assert Grammar(plan_grammar(registry)).accepts("echo($1.class)", "call")
