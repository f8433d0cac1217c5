"""The peer ports of LLMCompiler in the oracle benchmark.  The oracle's side runs everywhere; the
ports themselves only where their virtualenvs exist (`bash benchmarks/peers/setup.sh`)."""

from __future__ import annotations

import pytest
from benchmarks.__main__ import correct
from benchmarks.oracle import Oracle
from benchmarks.peers.client import PEERS, Peer, PeerRunner, available
from benchmarks.peers.dialects import LLAMAINDEX_JOINER, LLMCOMPILER_JOINER, keyword_call, peer_text
from benchmarks.workloads import Step, generate

from planweave.llm.base import Message
from planweave.prompts import joiner_messages

# What each port gets wrong on the oracle's gold replies (see benchmarks/peers/dialects.py):
# the LlamaIndex pack looks for "Replan" inside Action's parentheses, so it never replans;
# llmcompiler cannot resolve an argument holding two references ("${1} + ${2}").
KNOWN_WRONG = {"llamaindex-port": {"replan"}, "llmcompiler-port": {"fanout", "map"}}


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
