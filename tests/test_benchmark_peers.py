"""The peer ports of LLMCompiler in the oracle benchmark.  The oracle's side runs everywhere; the
ports themselves only where their virtualenvs exist (`bash benchmarks/peers/setup.sh`)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from benchmarks.__main__ import correct
from benchmarks.oracle import Oracle
from benchmarks.peers import original_runner
from benchmarks.peers.client import PEERS, Peer, PeerRunner, available
from benchmarks.peers.dialects import (
    LLAMAINDEX_JOINER,
    LLMCOMPILER_JOINER,
    ORIGINAL_PLANNER,
    PLANNER_HEAD,
    keyword_call,
    peer_text,
)
from benchmarks.workloads import Step, generate
from benchmarks.world import facts, tool_functions

from planweave.llm.base import Message
from planweave.prompts import joiner_messages

# What each port gets wrong on the oracle's gold replies (see benchmarks/peers/dialects.py):
# the LlamaIndex pack looks for "Replan" inside Action's parentheses, so it never replans;
# llmcompiler cannot resolve an argument holding two references ("${1} + ${2}").
KNOWN_WRONG = {
    "llamaindex-port": {"replan"},
    "llmcompiler-port": {"fanout", "map"},
    "llmcompiler-original": set(),
}


def test_a_peer_without_its_virtualenv_is_skipped_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "original" / "bin").mkdir(parents=True)  # a folder, but no python in it
    present, skipped = available(tmp_path)
    assert present == []
    assert len(skipped) == len(PEERS)
    (line,) = [s for s in skipped if "llmcompiler-original" in s]
    assert "\n" not in line
    assert str(tmp_path / "original" / "bin" / "python") in line
    assert line.endswith("benchmarks/peers/setup.sh original")
    (tmp_path / "original" / "bin" / "python").touch()
    present, skipped = available(tmp_path)
    assert [p.contestant for p in present] == ["llmcompiler-original"]
    assert len(skipped) == len(PEERS) - 1


def test_world_tools_take_the_originals_tool_form() -> None:
    """What the original's planner prompt lists for each tool, what its joiner prompt shows
    of a call, and the coroutine its task fetching unit awaits with a plan's arguments."""
    functions = tool_functions("zero")
    assert original_runner.describe("population", functions["population"]) == (
        "population(country: str) -> int:\n - The population of a country.\n"
    )
    rank = original_runner.describe("rank", functions["rank"])
    assert rank.startswith("rank(names: list[str], values: list[float]) -> dict[str, Any]:\n - ")
    assert rank.count("\n") == 2  # the docstring's two lines as one note
    assert original_runner.stringify("population")(["France"]) == "population(France)"
    assert original_runner.stringify("rank")([["a", "b"], [1, 2]]) == "rank(['a', 'b'], [1, 2])"

    async def run() -> tuple[int, dict[str, object]]:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=2))
        population = original_runner.awaitable(functions["population"])
        ranked = original_runner.awaitable(functions["rank"])
        return await population("France"), await ranked(["France", "Peru"], [3, 5])

    people, ranked = asyncio.run(run())
    assert people == facts("France")["population"]
    assert ranked["largest"] == "Peru"
    assert ranked["order"] == ["Peru", "France"]


def test_the_original_is_not_loaded_from_a_folder_without_its_checkout(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"setup\.sh"):
        original_runner.load(tmp_path)


def test_the_originals_second_plan_starts_at_one_after_a_thought() -> None:
    """Its task fetching unit makes join wait on every id below its own, so the second plan
    is numbered from 1 (and opens with the thought its replanning prompt asks for)."""
    (q,) = [q for q in generate(6, seed=3) if q.kind == "replan"]
    oracle = Oracle([q])
    system = Message("system", f"{PLANNER_HEAD} ...\n - {ORIGINAL_PLANNER}\n")
    first = peer_text(oracle, q, [system, Message("user", f"Question: {q.text}")])
    assert first == f"1. {q.steps[0].call()}\n2. join()\n<END_OF_PLAN>"
    context = f"Question: {q.text}\nPrevious Plan:\n\n1. capital(...)\n\nCurrent Plan:\n\n"
    second = peer_text(oracle, q, [system, Message("user", context)])
    assert second is not None
    thought, plan = second.split("\n", 1)
    assert thought.startswith("Thought: ")
    assert plan == f"1. {q.steps[1].call()}\n2. join()\n<END_OF_PLAN>"


def test_keyword_calls_quote_bare_references() -> None:
    assert keyword_call(Step("country_of", ("$1",))) == 'country_of(city="${1}")'
    assert keyword_call(Step("calculator", ('"${1} + ${2}"',))) == (
        'calculator(expression="${1} + ${2}")'
    )


def test_planweave_requests_are_not_taken_for_a_peer() -> None:
    (q,) = [q for q in generate(6, seed=3) if q.kind == "replan"]
    oracle = Oracle([q])
    assert oracle.plan(q, second=False) == f"1. {q.steps[0].call()}\n2. join()\n<END_OF_PLAN>"
    assert oracle.plan(q, second=True) == f"3. {q.steps[1].call()}\n4. join()\n<END_OF_PLAN>"
    asked = [Message("system", "You are a planner."), Message("user", f"Question: {q.text}")]
    assert peer_text(oracle, q, asked) is None


def test_peers_get_planweaves_joiner_words() -> None:
    """Where the formats allow, a peer's joiner reply is planweave's, character for character
    (a longer Replan reply would slow the peers' replan rows for nothing)."""
    (q,) = [q for q in generate(6, seed=3) if q.kind == "replan"]
    oracle = Oracle([q])
    first = f"Question: {q.text}\n1. capital: {q.meta['capital']}"
    # Planweave's full-style joiner prompt, whose Replan form has a thought, as the peers' do.
    full = joiner_messages(q.text, [], last_round=False)[0]
    ours = oracle.joiner_text(q, [full, Message("user", first)])
    assert "Replan(" in ours
    llamaindex = [Message("system", LLAMAINDEX_JOINER), Message("user", first)]
    assert peer_text(oracle, q, llamaindex) == ours
    asked = [Message("system", LLMCOMPILER_JOINER), Message("user", first)]
    llmcompiler = peer_text(oracle, q, asked)
    assert llmcompiler is not None
    thought, action = ours.removeprefix("Thought: ").split("\nAction: Replan(")
    assert f'"_thought_": "{thought}"' in llmcompiler
    assert f'"_replan_": "{action[:-1]}"' in llmcompiler
    done = f"{first}\n3. city_population({q.meta['capital']}): {q.answer}"
    ours = oracle.joiner_text(q, [Message("user", done)])
    assert ours.endswith(f"Finish({q.answer})")
    llamaindex = [Message("system", LLAMAINDEX_JOINER), Message("user", done)]
    assert peer_text(oracle, q, llamaindex) == ours


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("peer", PEERS, ids=lambda p: p.contestant)
def test_peer_port_answers_every_shape_on_the_oracle(peer: Peer) -> None:
    present, _ = available()
    if peer not in present:
        pytest.skip(f"no virtualenv for {peer.contestant}: bash benchmarks/peers/setup.sh")
    questions = generate(6, seed=3)
    oracle = Oracle(questions, ttft=0.0, tps=2000.0)
    with oracle.server() as server, PeerRunner(peer, server.base_url, "zero") as runner:
        for q in questions:
            outcome = runner.ask(q.text)
            wrong = q.kind in KNOWN_WRONG[peer.contestant]
            assert correct(q, outcome.answer) is not wrong, (q.kind, outcome)
            assert outcome.calls >= 2
