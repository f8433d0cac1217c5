"""The grammar guide (`llm.llamacpp.guide`) reads GBNF as llama.cpp does and allows exactly the
texts the grammar describes, token by token, whatever the split of the text into tokens: over
hand-written grammars of each construct and over the grammars planweave generates for its
planner, joiner and ReAct prompts.  (That it picks what llama.cpp's sampler picks on the real
model is tests/test_llamacpp.py.)"""

from __future__ import annotations

import random

import pytest

from planweave.builtin import builtin_tools
from planweave.grammar import joiner_grammar, plan_grammar, react_grammar
from planweave.llm.llamacpp.guide import Guide, GuideState, UnsupportedGrammar


def _feed(guide: Guide, pieces: list[bytes]) -> GuideState | None:
    state: GuideState | None = guide.start()
    for piece in pieces:
        assert state is not None
        state = guide.step(state, piece)
        if state is None:
            return None
    return state


def complete(grammar: str, text: str, *, split: int | None = None) -> bool:
    """Whether `text` is a whole sentence of the grammar, fed in pieces of up to `split`
    bytes (at random places), or one character at a time."""
    guide = Guide.compile(grammar)
    data = text.encode()
    if split is None:
        pieces = [ch.encode() for ch in text]
    else:
        rng = random.Random(split)
        pieces, at = [], 0
        while at < len(data):
            size = rng.randint(1, split)
            pieces.append(data[at : at + size])
            at += size
    state = _feed(guide, pieces)
    return state is not None and guide.can_end(state)


def prefix(grammar: str, text: str) -> bool:
    """Whether the grammar allows `text` so far (a sentence may follow)."""
    return _feed(Guide.compile(grammar), [text.encode()]) is not None


@pytest.mark.parametrize(
    ("grammar", "good", "bad"),
    [
        ('root ::= "ab" "c"', ["abc"], ["ab", "abcd", "abd", ""]),
        ("root ::= [a-c]+ [0-9]", ["a1", "cab9"], ["1", "ad1", "a"]),
        ('root ::= [^a-z\\n]* "!"', ["!", "AB C!", "é²!"], ["a!", "A\n!"]),
        ('root ::= ("x" | "yz")* "."', [".", "xyzx."], ["y.", "xy."]),
        ('root ::= "a"? "b"', ["b", "ab"], ["aab"]),
        ('root ::= "a"{2} "b"{1,3} "c"{2,}', ["aabcc", "aabbbccccc"], ["abcc", "aabbbbcc", "aabc"]),
        ('root ::= [0-9]{0,3} "."', [".", "1.", "123."], ["1234."]),
        ('root ::= item ("," item)*\nitem ::= "\\"" [^"]* "\\""', ['"a"', '"a","b c"'], ['"a",']),
        ('root ::= . "\\x41\\u00e9\\t"', ["zAé\t", "\u20acAé\t"], ["zAe\t"]),
        ('# a comment\nroot ::= ( "a"\n  | "b" ) # trailing\n', ["a", "b"], ["ab"]),
        ('root ::= "[" inner "]"\ninner ::= "\\[" [\\]x]', ["[[]]", "[[x]"], ["[]]"]),
    ],
)
def test_each_construct_allows_its_sentences_and_no_others(
    grammar: str, good: list[str], bad: list[str]
) -> None:
    for text in good:
        for split in (None, 2, 3):
            assert complete(grammar, text, split=split), (grammar, text, split)
    for text in bad:
        assert not complete(grammar, text), (grammar, text)


def test_a_token_that_ends_inside_a_character_is_allowed_where_one_can_follow() -> None:
    guide = Guide.compile('root ::= "km" [\\u00b2\\u00b3] "."')
    state = _feed(guide, [b"km", b"\xc2"])
    assert state is not None
    assert state.pending == b"\xc2"
    assert not guide.can_end(state)
    assert guide.step(state, b"\xb2.") is not None
    assert guide.step(state, b"\xb9.") is None  # ¹ is not in the class
    # No character of the class begins with E2 (three-byte characters).
    assert _feed(guide, [b"km", b"\xe2"]) is None
    # Bytes that are not UTF-8, empty pieces and pieces from a zero byte are refused.
    assert _feed(guide, [b"km", b"\xff"]) is None
    assert _feed(guide, [b""]) is None
    assert _feed(Guide.compile("root ::= [^a]*"), [b"\x00"]) is None


def test_the_end_is_allowed_only_where_the_grammar_is_complete() -> None:
    guide = Guide.compile('root ::= "a" "b"?')
    start = guide.start()
    assert not guide.can_end(start)
    after_a = guide.step(start, b"a")
    assert after_a is not None
    assert guide.can_end(after_a)
    after_b = guide.step(after_a, b"b")
    assert after_b is not None
    assert guide.can_end(after_b)
    assert guide.step(after_b, b"b") is None


@pytest.mark.parametrize(
    "grammar",
    [
        'root ::= "a" missing',
        'root ::= "a',
        "root ::= [a-",
        'root ::= "a" | <[123]>',
        'root ::= "a"{3,1}',
        'root ::= "\\q"',
        'other ::= "a"',
        'root ::= "a"{99999999999}',
    ],
)
def test_what_it_cannot_read_is_said(grammar: str) -> None:
    with pytest.raises(UnsupportedGrammar):
        Guide.compile(grammar)


def test_left_recursion_is_refused_not_looped() -> None:
    guide = Guide.compile('root ::= root "a" | "b"')
    with pytest.raises(UnsupportedGrammar, match="left recursion"):
        guide.start()


PLAN = """\
Thought: Two lookups, then a ratio.
1. country_info("Netherlands")
2. country_info($1.neighbours[*], field="population")
3. calculator("${1.population} / ${1.area_km2} + ${2[0]}")
4. rank(["Netherlands", "Belgium"], [$3, 2.5e3])
5. convert_units(41850, "km²", to_unit="mi2")
6. join("${4.largest} has ${3} people per km² — ¹²³ “quoted” \\"text\\".")
<END_OF_PLAN>"""


def test_the_planner_s_own_grammar_allows_its_plans_in_any_split() -> None:
    tools = builtin_tools()
    answers = plan_grammar(tools, plan_answers=True)
    for split in (None, 1, 2, 4, 7):
        assert complete(answers, PLAN, split=split), split
    plain = PLAN.replace(PLAN.splitlines()[-2], "6. join()")
    assert complete(plan_grammar(tools), plain)
    # Without plan answers, join takes nothing; a tool that does not exist, a field that is
    # not the record's, a reference to no task and an unclosed string are refused.
    assert not complete(plan_grammar(tools), PLAN)
    assert not prefix(answers, '1. weather("Paris")')
    assert not prefix(answers, '1. country_info("Chile", field="mountains")')
    assert not prefix(answers, "1. calculator($x)")
    assert not prefix(answers, '1. calculator("2 + 2\n')
    assert prefix(answers, '1. country_info("Chile", field="area_km2")\n2. ')


def test_the_joiner_and_react_grammars_allow_their_replies() -> None:
    joiner = joiner_grammar()
    assert complete(joiner, "Thought: The results say so.\nAction: Finish(Peru, by 12 km².)")
    assert complete(joiner, "Thought: \nAction: Replan(task 2 failed)")
    assert not complete(joiner, "Thought: x\nAction: Finish()")
    assert not complete(joiner, "Thought: x\nAction: Finish(a\nb)")
    react = react_grammar(builtin_tools())
    assert prefix(react, 'Thought: first Chile.\nAction: country_info("Chile", field="area_km2")')
    assert not prefix(react, "Thought: x\nAction: launch()")
