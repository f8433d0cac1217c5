"""Variations of issue 13's attacks that a hostile review found after the first fixes: escaped
surrogates in plan literals, superscript powers, encoded secrets, terminal control characters,
structured results without a size limit, named tuples the journal could not store."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import NamedTuple

import anyio
import pytest

from cli_process import invoke_cli
from planweave import (
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
    ToolOutputTooLarge,
    ToolRegistry,
    tool,
)
from planweave.builtin.units import convert_units
from planweave.errors import ToolFailed
from planweave.redaction import MASK, redact
from planweave.store import Journal, decode, encode

FINISH = "Thought: done.\nAction: Finish(done)"


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text


class Pair(NamedTuple):
    name: str
    value: int


@tool
def pair(name: str) -> Pair:
    """A named pair."""
    return Pair(name, len(name))


@tool
def giant(n: int) -> dict[str, str]:
    """A structured result of n entries."""
    return {str(i): "x" * 10 for i in range(n)}


TOOLS = ToolRegistry([echo, pair, giant])


@pytest.mark.parametrize(
    "plan",
    [
        '1. echo("a\\ud800b")\n2. join()\n<END_OF_PLAN>',
        '[{"id": 1, "tool": "echo", "args": {"text": "a\\ud800b"}, "thought": "t\\udfff"},'
        ' {"id": 2, "tool": "join"}]',
    ],
)
def test_an_escaped_lone_surrogate_in_a_plan_literal_is_stored_and_printed(
    plan: str, tmp_path: Path
) -> None:
    llm = ScriptedLLM(Script.by_purpose(planner=[plan], joiner=[FINISH]))
    runtime = Runtime(TOOLS, llm, journal=tmp_path / "runs.db")
    result = runtime.run("q")
    assert result.results == {1: "a\ufffdb"}
    shown = Journal(tmp_path / "runs.db").show(result.run_id)
    assert shown["tasks"][0]["result"] == "a\ufffdb"
    json.dumps(result.to_dict(), ensure_ascii=False).encode()  # printable as UTF-8


@pytest.mark.parametrize("unit", ["9⁹⁹⁹⁹⁹⁹⁹⁹⁹ m", "(9)⁹⁹⁹⁹⁹⁹⁹ m", "m/9⁹⁹⁹⁹⁹⁹⁹⁹ "])
def test_a_superscript_power_of_a_number_is_refused_at_once(unit: str) -> None:
    began = time.thread_time()  # CPU time: a loaded machine's waiting is not in it
    with pytest.raises(ToolFailed, match="numbers may not be raised to powers"):
        convert_units.fn(1, unit, "m")
    assert time.thread_time() - began < 2
    assert convert_units.fn(2, "km²", "m²") == pytest.approx(2_000_000)  # still a unit


def test_a_secret_is_masked_however_an_echo_spells_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEW_API_KEY", "sk-atk-0123456789abcdef")
    for spelled in (
        "sk-atk-0123456789abcdef",
        "SK-ATK-0123456789ABCDEF",
        "sk%2Datk%2d0123456789abcdef",
        "sk-\\u0061tk-0123456789\\u0061bcdef",
        "sk\\x2datk-0123456789abcdef",
    ):
        assert redact(f"401: bad key {spelled}!") == f"401: bad key {MASK}!", spelled
    assert redact("sk-atk-0123456789abcde") == "sk-atk-0123456789abcde"  # not the key


def test_control_characters_from_the_model_never_reach_the_terminal(tmp_path: Path) -> None:
    answer = "Thought: ok\nAction: Finish(x\x00y\x1b]0;pwn\x07 and \x1b[2J)"
    plan = '1. echo("a\\x1b[31mred")\n2. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[plan], joiner=[answer])
    with ScriptedServer(script) as server:
        proc = invoke_cli(
            "run", "q", "--tools", "test_hardening_review:TOOLS", "--base-url", server.base_url,
            "--model", "m", env={"PLANWEAVE_DB": str(tmp_path / "runs.db")},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr
    assert "\x00" not in proc.stdout
    assert "pwn" in proc.stdout  # the text is still shown, only the controls are not


def test_a_huge_structured_result_is_too_large_not_a_memory_blow_up() -> None:
    plan = "1. giant(200000)\n2. join()\n<END_OF_PLAN>"
    llm = ScriptedLLM(Script.by_purpose(planner=[plan], joiner=[FINISH]))
    result = Runtime(TOOLS, llm).run("q")
    assert isinstance(result.tasks[0].error, ToolOutputTooLarge)
    small = ScriptedLLM(Script.by_purpose(planner=[plan.replace("200000", "50")], joiner=[FINISH]))
    assert len(Runtime(TOOLS, small).run("q").results[1]) == 50


def test_a_named_tuple_result_is_stored_and_read_back(tmp_path: Path) -> None:
    assert decode(encode(Pair("a", 1))) == Pair("a", 1)
    assert type(decode(encode(Pair("a", 1)))) is Pair
    plan = '1. pair("abc")\n2. echo($1.name)\n3. join()\n<END_OF_PLAN>'
    llm = ScriptedLLM(Script.by_purpose(planner=[plan], joiner=[FINISH]))
    result = anyio.run(
        lambda: Runtime(TOOLS, llm, journal=tmp_path / "runs.db").arun("q", check=False)
    )
    assert result.results == {1: Pair("abc", 3), 2: "abc"}
