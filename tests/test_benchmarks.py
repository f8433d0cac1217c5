"""A smoke run of the oracle benchmark: every contestant answers every shape correctly through
the real HTTP path.  Speed is not asserted here (the benchmark reports it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmarks import overhead
from benchmarks.__main__ import (
    CONTESTANTS,
    correct,
    critical_path_limit,
    prefill_rate,
    race,
    run_contestant,
    shortest_prompt,
    summarize,
    summarize_splits,
)
from benchmarks.oracle import PREFILL, Oracle
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


@pytest.mark.slow
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
                if name in ("native", "planweave-native"):
                    # One model turn per dependency level, plus the answer.
                    assert outcome.calls >= 2
                elif name != "react" and q.kind != "replan":
                    # A plan whose answer is a result as it stands ends with it: no joiner.
                    assert outcome.calls == (1 if q.answer_step else 2)
                elif name != "react":
                    # plan, join + replan in one reply whose plan ends with the answer; or a
                    # separate planner call for that plan.
                    assert outcome.calls == (3 if name == "compiled-separate-replan" else 2)


def test_comparisons_rank_their_lookups_and_answer_with_the_winner_in_one_call() -> None:
    """Every contestant has the world's rank tool; a plan that may end with its answer ranks
    the lookups and ends with the winner's name, so compiled asks the model once; without plan
    answers the plan has no use for the rank and the joiner names the winner."""
    from benchmarks.world import tool_functions

    questions = [q for q in generate(12, seed=4) if q.kind in ("comparison", "pick4")]
    world = tool_functions("zero")
    for q in questions:
        figures = [world[s.tool](s.args[0].strip('"')) for s in q.steps]
        (rank,) = q.answer_steps
        names = [s.args[0].strip('"') for s in q.steps]
        assert world["rank"](names, figures)["largest"] == q.gold
        n = len(q.steps) + 1
        plan = Oracle([q]).plan(q, second=False, answers=True).splitlines()
        assert plan[-3:] == [
            f"{n}. {rank.call()}",
            f'{n + 1}. join("${{{n}.largest}}")',
            "<END_OF_PLAN>",
        ]
        assert "rank" not in Oracle([q]).plan(q, second=False)
    oracle = Oracle(questions, ttft=0.0, tps=2000.0)
    tools = bench_tools("zero")
    assert "rank" in tools
    with oracle.server() as server:
        llm = OpenAICompatible(base_url=server.base_url, model="oracle", max_retries=0)
        for q in questions:
            rows = race(
                q, ["compiled", "compiled-before"], oracle, "zero", llm, server.base_url, tools
            )
            assert [r["purposes"] for r in rows] == [["planner"], ["planner", "joiner"]]
            assert all(r["correct"] for r in rows), rows


def test_native_calling_reads_the_capital_before_it_asks_for_its_population() -> None:
    """A replan question's second lookup names what the first found: native calling asks for
    it only in its second turn (three turns in all), and the lower bound chains both."""
    from benchmarks.__main__ import longest_chain

    (q,) = [q for q in generate(6, seed=3) if q.kind == "replan"]
    assert q.deps(2) == [1]
    oracle = Oracle([q], ttft=0.0, tps=2000.0)
    tools = bench_tools("zero")
    with oracle.server() as server:
        llm = OpenAICompatible(base_url=server.base_url, model="oracle", max_retries=0)
        outcome = run_contestant("native", q.text, llm, server.base_url, tools)
    assert correct(q, outcome.answer)
    assert outcome.calls == 3
    assert longest_chain(q, "web") == pytest.approx(
        sum(latency("web", s.tool, s.args[0].strip('"')) for s in q.steps)
    )


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_prefill_and_the_new_columns_on_every_shape() -> None:
    """With a prefill rate, every request's first token waits for its whole prompt (the tools'
    schemas included for native calling); every contestant's first answer token comes before
    its whole answer, and no one beats the lower bound."""
    questions = generate(6, seed=3)
    oracle = Oracle(questions, ttft=0.0, tps=2000.0, prefill=5000.0)
    tools = bench_tools("zero")
    rows = []
    with oracle.server() as server:
        llm = OpenAICompatible(base_url=server.base_url, model="oracle", max_retries=0)
        for q in questions:
            rows += race(q, list(CONTESTANTS), oracle, "zero", llm, server.base_url, tools)
    assert {e.ttft for e in oracle.log} == {e.prompt_tokens / 5000.0 for e in oracle.log}
    # Native calling's first request is two short messages (about 30 tokens): the rest is
    # the tools' schemas.
    first_native = next(e for e in oracle.log if e.purpose == "native")
    assert first_native.prompt_tokens > 300
    for q in questions:
        assert shortest_prompt(q) < min(r["first_prompt_tokens"] for r in rows)
    for r in rows:
        assert r["correct"], r
        # A plan that ended with its answer streamed none apart: it comes whole at the end.
        assert r["answer_tokens"] >= 1 or r["plan_answered"], r
        assert r["call_tokens"] >= 1
        assert 0 < r["first_answer_s"] <= r["wall_s"] + 0.01, r
        # Every request waited for its prompt's prefill before its first token.
        assert r["wall_s"] >= sum(r["prompt_tokens"]) / 5000.0, r
        assert 0 < r["bound_first_s"] <= r["bound_s"] <= r["wall_s"], r
        assert r["first_answer_s"] >= r["bound_first_s"], r
        if r["kind"] == "replan":
            assert r["limit_s"] is None
        else:
            assert r["bound_s"] <= r["limit_s"], r
    table = summarize(rows)
    assert "| compiled / lower bound |" in table
    assert (
        "| shape | lower bound | compiled | compiled-nostream | compiled-separate-replan | react "
        "| native |" in table
    )


def test_prefill_profiles() -> None:
    assert prefill_rate("hosted") == PREFILL["hosted"] == 4_500.0
    assert prefill_rate("embedded") == 60.0
    assert prefill_rate("off") == 0.0
    assert prefill_rate("250") == 250.0
    oracle = Oracle([], ttft=0.25, prefill=100.0)
    assert oracle.first_token_s(50) == pytest.approx(0.75)
    assert Oracle([], ttft=0.25).first_token_s(10_000) == 0.25


def test_overhead_runs_every_task_in_every_shape(tmp_path: Path) -> None:
    result = overhead.run(sizes=[50], repeats=1)
    assert [r["shape"] for r in result["rows"]] == list(overhead.SHAPES)
    for row in result["rows"]:
        assert row["n"] == row["ran"] == 50
        assert row["schedule_us"] > 0
        assert row["gather_us"] > 0
        assert row["x_gather"] > 0
        assert row["peak_bytes_per_task"] > 0
    depth = {r["shape"]: r["depth"] for r in result["rows"]}
    assert depth["wide"] == 1
    assert depth["deep"] == 50
    assert 1 < depth["random"] < 50
    assert {"python", "cpus"} <= result["machine"].keys()
    table = overhead.write(result, tmp_path / "overhead")
    assert (tmp_path / "overhead.json").exists()
    assert table.count("| random | 50 |") == 1


def test_random_dag_waits_on_zero_to_three_earlier_tasks() -> None:
    deps = overhead.dag("random", 500, seed=1)
    assert deps == overhead.dag("random", 500, seed=1)
    assert all(len(ds) <= 3 and all(0 < d < i for d in ds) for i, ds in enumerate(deps, 1))
    assert {len(ds) for ds in deps[10:]} == {0, 1, 2, 3}


def test_summary_has_a_table_per_split() -> None:
    rows = [
        {"kind": "chain", "split": split, "contestant": name, "wall_s": 1.0, "limit_s": 0.5}
        | {"correct": name == "compiled", "tokens": 10}
        for split in ("heldout", "tune")
        for name in CONTESTANTS
    ]
    splits = summarize_splits(rows).splitlines()
    assert "| tune | compiled | 1 | 100% | 1.00 | 2.00x |" in splits
    assert "| heldout | react | 1 | 0% | 1.00 | 2.00x |" in splits
    assert splits.index("| tune | compiled | 1 | 100% | 1.00 | 2.00x |") < splits.index(
        "| heldout | compiled | 1 | 100% | 1.00 | 2.00x |"
    )


def test_plots_are_written(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from benchmarks.plot import plot_all

    rows = [
        {"question": f"{kind}-{i}", "kind": kind, "split": "tune", "contestant": name}
        | {"wall_s": 1.0 + i, "limit_s": None if kind == "replan" else 0.8, "correct": True}
        for kind in ("chain", "replan")
        for i in range(2)
        for name in ("compiled", "react", "some-peer")
    ]
    (tmp_path / "oracle.json").write_text(json.dumps({"rows": rows}))
    overhead.write(overhead.run(sizes=[20], shapes=["wide"], repeats=1), tmp_path / "overhead")
    written = plot_all(tmp_path / "oracle.json", tmp_path / "overhead.json")
    assert written == [tmp_path / "oracle.png", tmp_path / "overhead.png"]
    for png in written:
        assert png.read_bytes().startswith(b"\x89PNG")
        assert png.stat().st_size > 1000


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_prompt_levers_alone_and_together() -> None:
    """Each lever variant answers every shape; the oracle serves the compact joiner its answer
    without a thought (the same answer text), and the compact planner's prompt is shorter."""
    from benchmarks.__main__ import LEVERS, summarize_levers

    questions = generate(6, seed=3)
    oracle = Oracle(questions, ttft=0.0, tps=2000.0, prefill=5000.0)
    tools = bench_tools("zero")
    names = ["compiled", "react", "native", *LEVERS]
    rows = []
    with oracle.server() as server:
        llm = OpenAICompatible(base_url=server.base_url, model="oracle", max_retries=0)
        for q in questions:
            rows += race(q, names, oracle, "zero", llm, server.base_url, tools)
    assert all(r["correct"] for r in rows), [r for r in rows if not r["correct"]]
    by = {(r["question"], r["contestant"]): r for r in rows}
    for q in questions:
        full, joiner = by[(q.id, "compiled-full")], by[(q.id, "compiled-joiner")]
        planner, both = by[(q.id, "compiled-planner")], by[(q.id, "compiled")]
        # The compact planner drops the worked examples: the benchmark's tools bring none of
        # their own, so the full one shows the examples on other tools, which it leaves out.
        assert planner["prompt_tokens"][0] < full["prompt_tokens"][0]
        assert both["prompt_tokens"][0] == planner["prompt_tokens"][0]
        if "joiner" not in full["purposes"][-1:]:
            continue  # the plan ended with its answer: no joiner to compare
        assert joiner["prompt_tokens"][-1] < full["prompt_tokens"][-1]
        # The answer comes first: fewer tokens streamed before it, the same answer after.
        assert joiner["call_tokens"] < full["call_tokens"]
        assert joiner["answer_tokens"] == full["answer_tokens"]
    table = summarize_levers(rows)
    assert "| comparison | compiled-joiner |" in table
    assert "| replan | compiled |" in table


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_answer_levers_alone_and_together() -> None:
    """Each answer lever variant answers every shape right: plan answers drop the joiner call
    where the answer is a result as it stands, the Replan without a thought and the bare
    answer stream less."""
    from benchmarks.__main__ import ANSWER_LEVERS, summarize_levers

    questions = generate(6, seed=3)
    oracle = Oracle(questions, ttft=0.0, tps=2000.0, prefill=5000.0)
    tools = bench_tools("zero")
    names = ["compiled", "react", "native", *ANSWER_LEVERS]
    rows = []
    with oracle.server() as server:
        llm = OpenAICompatible(base_url=server.base_url, model="oracle", max_retries=0)
        for q in questions:
            rows += race(q, names, oracle, "zero", llm, server.base_url, tools)
    assert all(r["correct"] for r in rows), [r for r in rows if not r["correct"]]
    by = {(r["question"], r["contestant"]): r for r in rows}
    for q in questions:
        before, answers = by[(q.id, "compiled-before")], by[(q.id, "compiled-plan-answers")]
        bare, both = by[(q.id, "compiled-bare-replan")], by[(q.id, "compiled")]
        saved = 1 if q.answer_step else 0
        assert answers["llm_calls"] == both["llm_calls"] == before["llm_calls"] - saved
        assert bare["llm_calls"] == before["llm_calls"]
        if q.kind == "replan":
            assert bare["call_tokens"] < before["call_tokens"]
        else:
            assert bare["call_tokens"] == before["call_tokens"]
        # Bare answers: the same calls, and no `Action: Finish(` before a joiner's answer.
        plain, wrapped = by[(q.id, "compiled-bare-answers")], by[(q.id, "compiled-finish-wrapper")]
        assert plain["llm_calls"] == before["llm_calls"]
        assert wrapped["llm_calls"] == both["llm_calls"]
        if before["purposes"][-1] == "joiner":
            assert plain["call_tokens"] < before["call_tokens"]
        if both["purposes"][-1] == "joiner" and q.kind != "replan":  # (its plan answers)
            assert both["call_tokens"] < wrapped["call_tokens"]
    table = summarize_levers(rows)
    assert "| replan | compiled-plan-answers |" in table


def test_the_answer_eval_holds_out_a_fixed_part_and_scores_honestly() -> None:
    from benchmarks.answer_eval import TEMPLATES, Question, correct, questions

    qs = questions(10, seed=12)
    assert len(qs) >= 100
    assert len({q.template for q in qs}) == len(TEMPLATES) >= 12
    assert sum(q.heldout for q in qs) / len(qs) == pytest.approx(0.4)
    assert [q.text for q in questions(10, seed=12)] == [q.text for q in qs]  # seeded
    number = Question("t", "q", 17_900_000.0, (), False)
    assert correct(number, "about 17.9 million people")
    assert not correct(number, "about 19 million people")  # more than 2 % off
    which = Question("t", "q", "Bergen", ("Osaka", "Bergen"), False)
    assert correct(which, "Bergen is further north than Osaka.")
    assert not correct(which, "Osaka is further north than Bergen.")
    assert not correct(which, None)
    capital = next(q for q in qs if q.template == "capital")
    assert correct(capital, f"The capital of {capital.text.split()[-1][:-1]} is {capital.gold}.")


def test_the_answer_eval_rescores_a_saved_run(tmp_path: Path) -> None:
    from benchmarks.answer_eval import questions, rescore

    q = next(q for q in questions(5, seed=12) if q.template == "capital")
    row = {"question": q.text, "answer": f"{q.text.split()[-1][:-1]}'s capital is {q.gold}."}
    saved = tmp_path / "saved.json"
    saved.write_text(
        json.dumps(
            {
                "args": {"per_template": 5, "seed": 12},
                "questions": [{"text": q.text}],
                "results": [{"model": "m", "mode": "compiled", "grounding": True, "rows": [
                    {**row, "template": "capital", "heldout": q.heldout, "correct": False,
                     "wall_s": 1.0, "llm_calls": 2, "withdrawn": 0, "ungrounded": []}
                ]}],
            }
        )
    )  # fmt: skip
    rescore(saved, tmp_path / "out.json")
    rows = json.loads((tmp_path / "out.json").read_text())["results"][0]["rows"]
    assert rows[0]["correct"] is True


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_fan_out_benchmark_answers_every_list_shape_and_item_count() -> None:
    from benchmarks import fanout

    questions = fanout.list_questions(1)
    assert {q.id.split("-")[0] for q in questions} == {"neighbours", "cities", "files"}
    oracle = fanout.FanOracle(questions, [8], ttft=0.0, tps=2000.0)
    tools = fanout.list_tools("zero")
    with oracle.server() as server:
        rows = [
            fanout.run_list_contestant(name, q, server.base_url, tools)
            for q in questions
            for name in fanout.LIST_CONTESTANTS
        ]
        items = fanout.run_items(8, server.base_url, wide=16)
    assert all(r["correct"] for r in rows), rows
    replans = {r["contestant"]: r["replans"] for r in rows}
    assert replans["compiled-fanout"] == 0
    assert replans["compiled-replan"] == 1
    assert all(r["answer_equal"] for r in items), items
    # One call; then planner, 8 items, joiner, with each bound.
    assert [r["llm_calls"] for r in items] == [1, 10, 10]
    summary = fanout.summarize(rows, items)
    assert summary["items"][8]["answers_equal"] is True


def test_the_executors_benchmark_runs_at_a_tiny_size(tmp_path: Path) -> None:
    from benchmarks import executors

    out = tmp_path / "executors.json"
    executors.main(
        ["--calls", "2", "--seconds", "0.02", "--noops", "10", "--repeats", "1", "--backends",
         "thread", "process",
         "--out", str(out)]
    )  # fmt: skip
    result = json.loads(out.read_text())
    rows = result["backends"]
    assert set(rows) == {"thread", "process"}
    for row in rows.values():
        assert row["cpu_wall_s"] > 0
        assert len(row["cpu_walls_s"]) == 1  # one repeat
        assert row["cpu_loop_median_s"] > 0  # the calls burned in that backend
        assert row["noop_per_task_ms"] > 0
        # Each backend's speed-up is over the thread backend's wall time for the same calls.
        assert row["cpu_speedup_x"] == round(rows["thread"]["cpu_wall_s"] / row["cpu_wall_s"], 2)
    assert "| process |" in executors.table(result)


def test_the_threads_benchmark_recalls_what_a_conversation_looked_up(tmp_path: Path) -> None:
    from benchmarks import threads

    out = tmp_path / "threads.json"
    threads.main(
        ["--conversations", "2", "--tool-latency", "0", "--ttft", "0", "--tps", "5000",
         "--out", str(out)]
    )  # fmt: skip
    result = json.loads(out.read_text())
    with_, without = (result["median_per_conversation"][k] for k in ("thread", "no_thread"))
    # Ten lookups a conversation; six of them repeat an earlier turn's and are recalled.
    assert (without["tool_calls"], without["recalled"]) == (10, 0)
    assert (with_["tool_calls"], with_["recalled"]) == (4, 6)
    assert with_["prompt_tokens"] > without["prompt_tokens"]  # the earlier turns are read
    assert result["ratios"]["tool_calls"] == 0.4


@pytest.mark.slow  # five `planweave serve` processes and a PostgreSQL server
@pytest.mark.timeout(300)
def test_the_replicas_benchmark_checks_every_run_on_both_journals(tmp_path: Path) -> None:
    from benchmarks import replicas

    from postgres_server import find_bin

    if find_bin() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    out = tmp_path / "replicas"
    result = replicas.main(["--quick", "--out", str(out)])
    assert set(result["throughput"]) == {"sqlite-1", "postgres-1", "postgres-3", "postgres-1-wide"}
    for row in result["throughput"].values():
        # Every run finished and answered right, or there is no throughput to report.
        assert row["all_finished"]
        assert row["finished"] == row["right"] == row["runs"] == 6
        assert row["runs_per_s"] > 0
    delivery = result["delivery"]
    assert delivery["finished"] == delivery["runs"] == 3
    assert delivery["run_finished_b_minus_a_s"]["max"] < 5
    assert result["journal_per_task"]["postgres"]["journal_us_per_task"] > 0
    assert "| postgres-3 | 3 × 16 | 6/6 (6) |" in out.with_suffix(".md").read_text()


def test_the_runbook_benchmark_takes_each_branch_side_right_every_way(tmp_path: Path) -> None:
    """Quick (tool latencies x0.01, the runbook oracle instant): three runbooks, each parameter
    set run three ways; every run takes exactly the expected side effects (a branch not taken
    does nothing) and names its outcome, and the named plan makes no planner call."""
    from benchmarks import runbook_bench
    from benchmarks.runbooks import BY_NAME

    out = tmp_path / "runbooks"
    names = ["disk_full", "incident_triage", "deploy_check"]
    result = runbook_bench.main(["--quick", "--runbooks", *names, "--out", str(out)])
    rows = result["rows"]
    ways = result["ways"]
    assert len(rows) == len(ways) * sum(len(BY_NAME[n].cases) for n in names)
    assert all(r["correct"] for r in rows), [r for r in rows if not r["correct"]]
    # Each side of each branch is taken by one parameter set.
    for name in names:
        sides = {r["side"] for r in rows if r["runbook"] == name}
        assert len(sides) == len(BY_NAME[name].cases)
    calls = {w: sum(r["llm_calls"] for r in rows if r["way"] == w) for w in ways}
    assert calls["plan each time"] < calls["react"]
    if "named plan" in ways:  # no planner call per run: only the joiner (and decide)
        assert calls["named plan"] == calls["plan each time"] - len(rows) // len(ways)
        assert [c["error"] for c in result["compiles"]] == [None] * len(names)
    assert "| runbook | side |" in out.with_suffix(".md").read_text()


def test_the_held_out_runbooks_take_each_branch_side_right_every_way(tmp_path: Path) -> None:
    """`--part heldout`: the five held-out runbooks (their own tools, registered when the
    catalog loads), each parameter set run three ways on the quick oracle: every run takes
    exactly the expected side effects and names its outcome, and each runbook's two sides are
    taken."""
    from benchmarks import runbook_bench
    from benchmarks.runbooks import RUNBOOKS

    heldout = [r for r in RUNBOOKS if r.part == "heldout"]
    assert len(heldout) == 5
    assert all(r.path.parent.name == "heldout" for r in heldout)
    out = tmp_path / "heldout"
    result = runbook_bench.main(["--quick", "--part", "heldout", "--out", str(out)])
    rows = result["rows"]
    ways = result["ways"]
    assert {r["runbook"] for r in rows} == {r.name for r in heldout}
    assert len(rows) == len(ways) * sum(len(r.cases) for r in heldout)
    assert all(r["correct"] for r in rows), [r for r in rows if not r["correct"]]
    for rb in heldout:
        sides = {r["side"] for r in rows if r["runbook"] == rb.name}
        assert sides == {c.side for c in rb.cases}
        assert len(sides) == 2
    if "named plan" in ways:
        assert [c["error"] for c in result["compiles"]] == [None] * len(heldout)
