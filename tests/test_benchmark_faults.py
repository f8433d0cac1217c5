"""A smoke run of the fault benchmark: injected transient failures are the same for every
contestant, the oracle answers only from successful results, and recovery wins them back."""

from __future__ import annotations

import pytest
from benchmarks.faults import Faults, run, summary, table
from benchmarks.oracle import GIVE_UP, Oracle
from benchmarks.workloads import generate

from planweave.llm.base import Message


def test_faults_are_fixed_by_the_call_and_nested_across_rates() -> None:
    faults = Faults(seed=1)
    faults.begin("q", 0.3)
    first = [faults.fails("population", "France") for _ in range(20)]
    faults.begin("q", 0.3)
    assert [faults.fails("population", "France") for _ in range(20)] == first
    assert faults.calls == 20
    assert faults.injected == sum(first)
    draws = [faults.draw("population", "France", k) for k in range(200)]
    assert len(set(draws)) == 200
    assert all(0 <= d < 1 for d in draws)
    # A call that fails at 10 % fails at 30 % too.
    faults.begin("q", 0.1)
    low = [faults.fails("population", "France") for _ in range(20)]
    assert all(f for lo, f in zip(low, first, strict=True) if lo)


def test_the_oracle_gives_up_on_a_failed_result() -> None:
    (q,) = [q for q in generate(6, seed=3) if q.kind == "comparison"]
    oracle = Oracle([q])
    results = f"Question: {q.text}\n\nPlan and results:\n1. {q.steps[0].call()}\nObservation: "
    failed = Message("user", results + "ERROR: ConnectionError: connection reset")
    assert oracle.joiner_text(q, [failed]) == GIVE_UP
    assert oracle.joiner_text(q, [Message("user", results + "68000000")]).endswith(
        f"Finish({q.answer})"
    )
    assert oracle.react_text(q, [Message("user", "Observation: ERROR: reset")]) == GIVE_UP


@pytest.mark.timeout(60)
def test_recovery_wins_back_injected_failures() -> None:
    questions = [q for q in generate(6, seed=3) if q.kind in ("comparison", "chain", "replan")]
    names = ["compiled+retry", "compiled-none", "react+retry"]
    rows = run(questions, [0.3], names, profile="zero", ttft=0.0, tps=2000.0, fault_seed=1)
    assert [(r["question"], r["contestant"]) for r in rows] == [
        (q.id, name) for q in questions for name in names
    ]
    by = {(r["question"], r["contestant"]): r for r in rows}
    for q in questions:
        with_retry, without = by[(q.id, "compiled+retry")], by[(q.id, "compiled-none")]
        # Without recovery, a run is right exactly when no call failed.
        assert without["correct"] == (without["injected"] == 0)
        assert with_retry["correct"] >= without["correct"]
        # Both modes make the same calls, so they meet the same failures.
        react = by[(q.id, "react+retry")]
        assert (react["injected"], react["attempts"]) == (
            with_retry["injected"],
            with_retry["attempts"],
        )
    success = {s["contestant"]: s["success"] for s in summary(rows)["overall"]}
    assert success["compiled+retry"] > success["compiled-none"]  # this seed injects faults
    assert success["compiled+retry"] == success["react+retry"]
    assert "| 30% | compiled-none |" in table(rows)
