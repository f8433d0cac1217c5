"""Hostile streams thrown at the plan parser: whatever a model writes, the outcome is a valid
plan or a PlanError, every accepted task is handed out, and work grows linearly with input."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planweave import PlanError, Task, ToolRegistry, parse_json_plan, tool
from planweave.parser import MAX_NESTING, MAX_TASK_ID, PlanParser


@tool
def store(value: Any = None, note: str = "") -> Any:
    """Returns its value."""
    return value


@tool
def search(query: str, k: int = 3) -> list[str]:
    """Searches the web."""
    return []


TOOLS = ToolRegistry(store, search)
FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Characters a hostile endpoint may send: lone surrogates, control characters, NUL, quotes,
# brackets, reference syntax and line breaks of every kind.
HOSTILE_CHARS = st.one_of(
    st.sampled_from(list("\ud800\udfff\x00\x1b\x7f\r\n\t\u2028\x85\"'()[]{}$.,=:#\\")),
    st.characters(codec="utf-8"),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    st.characters(max_codepoint=0x1F),
)
int_ids = st.one_of(
    st.integers(min_value=0, max_value=12),
    st.sampled_from([MAX_TASK_ID, MAX_TASK_ID + 1, 2**63 - 1, 2**63, 2**64, 10**300]),
)
# As written in a plan: also more digits than Python converts to an int.
ids = st.one_of(int_ids.map(str), st.just("9" * 5000))


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


fragments = st.one_of(
    st.text(HOSTILE_CHARS, max_size=30),
    ids.map(lambda i: f"{i}. store("),
    ids.map(lambda i: f"${i}"),
    ids.map(lambda i: f"${{{i}.a[0]}}"),
    st.integers(min_value=1, max_value=300).map(_nested),
    st.integers(min_value=1, max_value=300).map(lambda n: "-" * n + "1"),
    st.sampled_from(
        [
            '1. store("a")\n',
            "2. search(query=$1, k=2)\n",
            '3. store("${1} and ${2.x}")\n',
            "4. join()\n",
            "Thought: fine\n",
            "<END_OF_PLAN>",
            "<END_OF",
            "```json\n",
            '[{"id": 1, "tool": "store", "args": ["$1"]}]',
            "\n",
            "9" * 4400,
        ]
    ),
)
streams = st.lists(fragments, max_size=25).map("".join)


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


def _parse_stream(chunks: list[str]) -> tuple[list[Task], PlanError | None, PlanParser]:
    """Feed `chunks` the way the planner does: every task handed out, errors caught."""
    parser = PlanParser(TOOLS, max_line_chars=2_000)
    handed: list[Task] = []
    try:
        for chunk in chunks:
            handed.extend(parser.feed(chunk))
            if parser.done:
                break
        handed.extend(parser.close())
    except PlanError as err:
        handed.extend(parser.drain())
        return handed, err, parser
    return handed, None, parser


@FUZZ
@given(streams, st.lists(st.integers(min_value=0, max_value=20_000), max_size=30))
def test_any_stream_in_any_chunking_is_a_plan_or_a_plan_error(text: str, cuts: list[int]) -> None:
    handed, error, parser = _parse_stream(_chunks(text, cuts))
    # Every accepted task is handed out exactly once, nothing more.
    assert [t.id for t in handed] == list(parser.tasks)
    assert all(0 < t.id <= MAX_TASK_ID for t in handed)
    if error is None:
        assert handed
        assert handed[-1].is_join
    else:
        assert str(error)
        json.dumps(error.report())  # reportable as it is


@FUZZ
@given(streams, st.lists(st.integers(min_value=0, max_value=20_000), max_size=30))
def test_the_chunking_never_changes_the_outcome(text: str, cuts: list[int]) -> None:
    whole_tasks, whole_error, _ = _parse_stream([text])
    tasks, error, _ = _parse_stream(_chunks(text, cuts))
    assert [(t.id, t.tool, t.args, t.kwargs) for t in tasks] == [
        (t.id, t.tool, t.args, t.kwargs) for t in whole_tasks
    ]
    assert type(error) is type(whole_error)


@pytest.mark.parametrize("cut", [0, 5, 13, 14, 3000])
@pytest.mark.parametrize("newline", ["", "\n"])
def test_the_end_of_plan_closes_the_plan_before_a_line_too_long(cut: int, newline: str) -> None:
    # Found by the fuzz test: whole, the text failed on the long line; cut after
    # <END_OF_PLAN>, on the missing join.  The plan ends at <END_OF_PLAN> either way.
    text = "<END_OF_PLAN>" + "x" * 200_000 + newline
    whole_tasks, whole_error, _ = _parse_stream([text])
    tasks, error, _ = _parse_stream(_chunks(text, [cut]))
    assert type(error) is type(whole_error)
    assert "join" in str(whole_error)
    assert tasks == whole_tasks == []


json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(HOSTILE_CHARS, max_size=20),
    ids.map(lambda i: f"${i}"),
)
json_values = st.recursive(
    json_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=30,
)
json_tasks = st.fixed_dictionaries(
    {"id": int_ids, "tool": st.sampled_from(["store", "search", "join", "nope"])},
    optional={
        "args": st.one_of(json_values, st.lists(json_values, max_size=3)),
        "thought": json_values,
    },
)


@FUZZ
@given(st.one_of(st.lists(json_tasks, max_size=6), json_values))
def test_any_json_plan_is_a_plan_or_a_plan_error(data: Any) -> None:
    for form in (data, json.dumps(data)):
        try:
            tasks = parse_json_plan(form, TOOLS)
        except PlanError as err:
            tasks, message = [], str(err)
        else:
            message = ""
        assert message or tasks[-1].is_join


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 300, 5_000, 100_000])
@pytest.mark.parametrize(("opening", "closing"), [("[", "]"), ('{"a": ', "}")])
def test_deep_json_nesting_is_a_plan_error(depth: int, opening: str, closing: str) -> None:
    inner = opening * depth + "1" + closing * depth
    text = '[{"id": 1, "tool": "store", "args": [' + inner + ']}, {"id": 2, "tool": "join"}]'
    with pytest.raises(PlanError, match="nest deeper"):
        parse_json_plan(text, TOOLS)


# Input shapes whose naive handling is quadratic: one long line in tiny chunks, long runs of
# whitespace, many unclosed references, a long JSON plan.
def _line(body: str) -> str:
    return f"1. store({body})\n2. join()\n"


SHAPES: dict[str, Callable[[int], str]] = {
    "long string": lambda n: _line('"' + "x" * n + '"'),
    "inner spaces": lambda n: _line('"a",' + " " * n + 'note="b"'),
    "unclosed refs": lambda n: _line('"a"' + " ${1[" * (n // 5)),
    "bare refs": lambda n: _line('"' + "$1." * (n // 3) + '"'),
    "json": lambda n: json.dumps(
        [{"id": 1, "tool": "store", "args": ["x" * n]}, {"id": 2, "tool": "join"}]
    ),
}


def _seconds(text: str) -> float:
    """The CPU time this thread spends parsing `text` (best of two): time spent waiting for a
    core on a loaded machine is not in it."""
    best = float("inf")
    for _ in range(2):
        parser = PlanParser(TOOLS, max_line_chars=10**7, max_json_chars=10**8)
        start = time.thread_time()
        try:
            for i in range(0, len(text), 16):
                parser.feed(text[i : i + 16])
            parser.close()
        except PlanError:
            pass
        best = min(best, time.thread_time() - start)
    return best


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_parse_time_grows_linearly_with_the_input(shape: str) -> None:
    make = SHAPES[shape]
    small, large = _seconds(make(100_000)), _seconds(make(400_000))
    # Four times the input: about four times the time; quadratic work would be sixteen.
    assert large / max(small, 1e-4) < 9, (small, large)
