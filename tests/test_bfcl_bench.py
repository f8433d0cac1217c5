"""The BFCL benchmark's own parts, without the model and without BFCL: function documents as
tools, the planner's plan (scripted) in BFCL's output form, BFCL's answers written as plans."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from benchmarks.bfcl import (
    Question,
    bfcl_output,
    digest,
    examples_for,
    excluded,
    first_plan,
    functions,
    gold_plan,
    native_turn,
    read_plan,
    round_robin,
    sample,
    summarize,
)

from planweave import Reply, Runtime, ScriptedLLM
from planweave.native import NATIVE_SYSTEM

# Function documents in BFCL's form (made up here): dotted names, its loose type names, an
# argument whose name is no identifier, a nested object.
DOCS: list[dict[str, Any]] = [
    {
        "name": "geo.distance",
        "description": "Distance between two cities in km.",
        "parameters": {
            "type": "dict",
            "properties": {
                "origin": {"type": "string", "description": "From."},
                "destination": {"type": "string", "description": "To."},
                "round-to": {"type": "integer", "description": "Digits kept."},
            },
            "required": ["origin", "destination"],
        },
    },
    {
        "name": "trip.plan",
        "description": "Plan a trip.",
        "parameters": {
            "type": "dict",
            "properties": {
                "km": {"type": "float", "description": "Length."},
                "stops": {"type": "tuple", "items": {"type": "string"}},
                "budget": {
                    "type": "dict",
                    "properties": {"eur": {"type": "integer"}, "flexible": {"type": "boolean"}},
                },
            },
            "required": ["km"],
        },
    },
]


def _planned(reply: str | list[str], question: str = "How far, and plan it?") -> Any:
    fns = functions(DOCS)
    replies = [reply] if isinstance(reply, str) else reply
    runtime = Runtime(
        fns.registry, ScriptedLLM(replies), examples=examples_for("none", fns.registry)
    )
    try:
        return fns, anyio.run(first_plan, runtime, question)
    finally:
        runtime.close()


def test_function_documents_become_tools_named_as_identifiers() -> None:
    fns = functions(DOCS)
    assert list(fns.registry) == ["geo_distance", "trip_plan"]
    assert fns.names == {"geo_distance": "geo.distance", "trip_plan": "trip.plan"}
    assert fns.params["geo_distance"] == {"round_to": "round-to"}


def test_a_plan_reads_as_bfcl_output_under_bfcl_names() -> None:
    fns, planned = _planned(
        '1. geo_distance("Paris", destination="Lyon", round_to=1)\n'
        '2. geo_distance(origin="Lyon", destination="Nice")\n'
        "3. trip_plan(km=$1, stops=[\"Lyon\"], budget={'eur': 300, 'flexible': True})\n"
        "4. join()\n<END_OF_PLAN>"
    )
    assert planned.plan_error is None
    assert bfcl_output(planned.tasks, fns) == [
        {"geo.distance": {"origin": "Paris", "destination": "Lyon", "round-to": 1}},
        {"geo.distance": {"origin": "Lyon", "destination": "Nice"}},
        # A reference to another task's result stays as written: BFCL wants a literal.
        {"trip.plan": {"km": "$1", "stops": ["Lyon"], "budget": {"eur": 300, "flexible": True}}},
    ]
    assert len(planned.responses) == 1


def test_a_native_turn_s_calls_read_as_native_mode_reads_them() -> None:
    fns = functions(DOCS)
    reply = Reply(
        "",
        tool_calls=[
            ("geo_distance", {"origin": "Paris", "destination": "Lyon", "round_to": 1}),
            ("fly", {"to": "Nice"}),  # no such function: refused as native mode refuses it
            ("trip_plan", {"km": 465, "stops": ["Lyon"]}),
        ],
    )
    llm = ScriptedLLM([reply])
    q = Question("multiple_1", "multiple", "How far, and plan it?", DOCS, [])
    planned = anyio.run(native_turn, llm, q, fns)
    assert planned.plan_error is None
    assert bfcl_output(planned.tasks, fns) == [
        {"geo.distance": {"origin": "Paris", "destination": "Lyon", "round-to": 1}},
        {"trip.plan": {"km": 465, "stops": ["Lyon"]}},
    ]
    assert len(planned.invalid) == 1
    assert "unknown tool 'fly'" in planned.invalid[0]
    # Native mode's own request: its instructions, no planner's.
    (asked,) = llm.script.requests
    assert asked[0].content == NATIVE_SYSTEM
    assert planned.responses[0].count("<tool_call>") == 3


def test_an_invalid_line_is_repaired_as_a_run_would() -> None:
    fns, planned = _planned(
        [
            '1. geo_distance(origin="Paris", destination="Lyon")\n2. fly(to="Nice")\n',
            "2. trip_plan(km=465)\n3. join()\n<END_OF_PLAN>",
        ]
    )
    assert len(planned.responses) == 2
    assert len(planned.invalid) == 1
    assert "fly" in planned.invalid[0]
    assert bfcl_output(planned.tasks, fns) == [
        {"geo.distance": {"origin": "Paris", "destination": "Lyon"}},
        {"trip.plan": {"km": 465}},
    ]


def test_bfcl_answers_written_as_plans_read_back_as_themselves() -> None:
    answer = [
        {"geo.distance": {"origin": ["Paris"], "destination": ["Lyon"], "round-to": ["", 2]}},
        {
            "trip.plan": {
                "km": [465.0],
                "stops": [["Lyon", "Nice"]],
                "budget": [{"eur": [300], "flexible": ["", False]}],
            }
        },
    ]
    q = Question("parallel_multiple_0", "parallel_multiple", "?", DOCS, answer)
    fns = functions(DOCS)
    planned = read_plan(gold_plan(q, fns), fns.registry)
    assert planned.plan_error is None
    assert bfcl_output(planned.tasks, fns) == [
        {"geo.distance": {"origin": "Paris", "destination": "Lyon", "round-to": 2}},
        {
            "trip.plan": {
                "km": 465.0,
                "stops": ["Lyon", "Nice"],
                "budget": {"eur": 300, "flexible": False},
            }
        },
    ]


def test_a_plan_the_tools_refuse_is_reported_with_what_was_accepted() -> None:
    fns = functions(DOCS)
    planned = read_plan(
        '1. geo_distance(origin="Paris", destination="Lyon")\n2. trip_plan(km="far")\n',
        fns.registry,
    )
    assert planned.plan_error is not None
    assert "km" in planned.plan_error
    assert bfcl_output(planned.tasks, fns) == [
        {"geo.distance": {"origin": "Paris", "destination": "Lyon"}}
    ]


def test_examples_setting() -> None:
    registry = functions(DOCS).registry
    assert examples_for("default", registry) is None
    assert examples_for("none", registry) == ""
    synthesized = examples_for("synthesized", registry)
    assert synthesized is not None
    assert "1. geo_distance(" in synthesized


def test_unlisted_examples_are_the_default_ones_without_their_opening_thoughts() -> None:
    registry = functions(DOCS).registry
    runtime = Runtime(registry, ScriptedLLM([]), prompt_style="full")
    default = runtime.planner.examples
    runtime.close()
    unlisted = examples_for("unlisted", registry)
    assert unlisted is not None
    assert "Thought:" not in unlisted
    assert default.count("Question:") == unlisted.count("Question:") == 4
    kept = [line for line in default.splitlines() if not line.startswith("Thought:")]
    assert unlisted.splitlines() == kept


def test_a_saved_run_s_questions_can_be_left_out(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({"questions": {"multiple_3": {}, "parallel_7": {}}}))
    seen = excluded([saved])
    assert seen == {"multiple_3", "parallel_7"}
    qs = [Question(f"multiple_{i}", "multiple", "?", [], []) for i in range(6)]
    left = sample([q for q in qs if q.id not in seen], 5, seed=0)
    assert len(left) == 5
    assert "multiple_3" not in {q.id for q in left}
    # Two runs that leave out as many questions, but others, are told apart on --resume.
    assert digest(seen) != digest({"multiple_3", "parallel_8"})
    assert digest(seen) == digest(["parallel_7", "multiple_3"])
    assert digest([]) is None
    with pytest.raises(SystemExit, match="not a saved run"):
        excluded([tmp_path / "missing.json"])


def test_samples_are_seeded_per_category() -> None:
    qs = [Question(f"multiple_{i}", "multiple", "?", [], []) for i in range(50)]
    first = [q.id for q in sample(qs, 5, seed=0)]
    assert first == [q.id for q in sample(qs, 5, seed=0)]
    assert first != [q.id for q in sample(qs, 5, seed=1)]
    assert len(set(first)) == 5
    assert sample(qs, 0, seed=0) == qs


def test_categories_take_turns() -> None:
    chosen = {
        c: [Question(f"{c}_{i}", c, "?", [], []) for i in range(n)]
        for c, n in (("simple_python", 3), ("parallel", 1), ("multiple", 2))
    }
    assert [q.id for q in round_robin(chosen)] == [
        "simple_python_0",
        "parallel_0",
        "multiple_0",
        "simple_python_1",
        "multiple_1",
        "simple_python_2",
    ]


def test_times_count_only_a_question_s_first_setting() -> None:
    def r(seconds: float, warm: bool, valid: bool) -> dict[str, Any]:
        return {
            "seconds": seconds,
            "warm": warm,
            "valid": valid,
            "references": 0,
            "plan_error": None,
            "repairs": [],
            "error_type": None if valid else "simple_function_checker:wrong_count",
        }

    s = summarize([r(40.0, False, True), r(2.0, True, False), r(60.0, False, False)])
    assert (s["n"], s["valid"], s["timed"]) == (3, 1, 2)
    assert s["median_s"] == 50.0
    assert s["error_types"] == {"simple_function_checker:wrong_count": 2}
