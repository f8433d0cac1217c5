"""A smoke run of the oracle benchmark: every contestant answers every shape correctly through
the real HTTP path.  Speed is not asserted here (the benchmark reports it)."""

from __future__ import annotations

import pytest
from benchmarks.__main__ import CONTESTANTS, correct, critical_path_limit, run_contestant
from benchmarks.oracle import Oracle
from benchmarks.workloads import bench_tools, generate, latency

from planweave import OpenAICompatible


def test_workloads_are_seeded_and_split() -> None:
    first, again = generate(30, seed=5), generate(30, seed=5)
    assert [q.text for q in first] == [q.text for q in again]
    assert {q.kind for q in first} == {"comparison", "pick4", "fanout", "chain", "map", "replan"}
    assert sum(q.split == "heldout" for q in first) == 6


def test_critical_path_limit_follows_the_slowest_chain() -> None:
    oracle = Oracle([], ttft=0.5, tps=10.0)
    (chain,) = [q for q in generate(6, seed=1) if q.kind == "chain"]
    limit = critical_path_limit(chain, oracle, "web")
    assert limit is not None
    lookups = sum(latency("web", s.tool, s.args[0].strip('"')) for s in chain.steps)
    assert limit > lookups + 2 * oracle.ttft  # a pure chain: every latency adds up


@pytest.mark.timeout(120)
def test_every_contestant_answers_every_shape_on_the_oracle() -> None:
    questions = generate(6, seed=3)
    oracle = Oracle(questions, ttft=0.0, tps=2000.0)
    tools = bench_tools("zero")
    with oracle.server() as server:
        llm = OpenAICompatible(base_url=server.base_url, model="oracle", max_retries=0)
        for q in questions:
            for name in CONTESTANTS:
                outcome = run_contestant(name, q.text, llm, server.base_url, tools)
                assert correct(q, outcome.answer), (q.kind, name, outcome.answer)
                if name == "native":
                    # One model turn per dependency level, plus the answer.
                    assert outcome.calls >= 2
                elif name != "react" and q.kind != "replan":
                    assert outcome.calls == 2
