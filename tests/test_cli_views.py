"""The terminal's view of a run as a person reads it: the LLM's progress while it streams, what
`runs show` prints of a recorded run, the plan cache's commands."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from subprocess import CompletedProcess

import anyio
import pytest
from rich.console import Console

from cli_process import invoke_cli, run_cli
from planweave import Reply, ScriptedLLM, ScriptedServer
from planweave.cli.view import DagView
from planweave.events import EventBus, LLMCallFinished, LLMCallStarted, LLMProgress
from planweave.llm.base import LLMRequest, Message
from planweave.llm.scripted import Script
from planweave.meter import MeteredLLM
from planweave.store import Journal


def _text(view: DagView) -> str:
    console = Console(width=120, record=True, file=None)
    with console.capture() as captured:
        console.print(view.render())
    return captured.get()


def test_a_streaming_call_reports_its_tokens_as_they_come_and_the_view_shows_them() -> None:
    # 30 chunks of 4 characters, 30 ms apart: about 0.9 s of streaming.
    reply = Reply("abcd" * 30, chunk_size=4, delay=0.03)
    bus = EventBus()
    view = DagView()
    shown: list[str] = []

    def watch(event: object) -> None:
        if isinstance(event, LLMProgress):
            shown.append(_text(view))

    bus.subscribe(view)
    bus.subscribe(watch)
    metered = MeteredLLM(ScriptedLLM(Script([reply])), bus)
    request = LLMRequest(messages=[Message("user", "go")], purpose="planner")

    async def call() -> str:
        return await metered.complete(request)

    assert anyio.run(call) == "abcd" * 30
    progress = [e for e in bus.events if isinstance(e, LLMProgress)]
    # Every 0.25 s of the call's own clock, not every chunk: a slow machine streams longer and
    # so reports more often, never more often than that.
    assert 2 <= len(progress) < 30
    assert all(b.elapsed - a.elapsed >= 0.25 - 1e-9 for a, b in itertools.pairwise(progress))
    assert [p.tokens for p in progress] == sorted(p.tokens for p in progress)
    # ~1 token a chunk of 4 characters; on a slow machine the last report may fall on the last
    # chunk, so it may count them all, never more.
    assert 0 < progress[0].tokens < progress[-1].tokens <= 30
    assert all(p.purpose == "planner" and p.call == 1 for p in progress)
    assert progress[0].elapsed >= 0.25
    # While it streamed the view said for how long and how many tokens so far.
    assert f"~{progress[-1].tokens} tokens" in shown[-1]
    assert "planner (scripted) streaming… 0." in shown[0]
    # Once it ended: the run's LLM totals, the call's line gone.
    finished = next(e for e in bus.events if isinstance(e, LLMCallFinished))
    after = _text(view)
    assert "streaming" not in after
    assert f"LLM: 1 call · {finished.prompt_tokens}+{finished.completion_tokens} tokens" in after


def test_the_live_view_s_clock_runs_on_between_events() -> None:
    view = DagView()
    view(LLMCallStarted(call=1, purpose="joiner", model="qwen", t=2.0))
    assert "joiner (qwen) streaming… 0.0 s" in _text(view)
    view.ticking = True
    view._heard -= 3.0  # as if three seconds went by with no event
    assert "joiner (qwen) streaming… 3.0 s" in _text(view)
    view(LLMProgress(call=1, purpose="joiner", tokens=17, elapsed=3.5, t=5.5))
    assert "streaming… 3.5 s · ~17 tokens" in _text(view)


TOOLS = ["--tools", "demo_tools:TOOLS", "--model", "m"]
PLAN = '1. population("France")\n2. population("Atlantis")\n3. join()\n<END_OF_PLAN>'
FINISH = "Thought: France's count is known, Atlantis has none.\nAction: Finish(About 68 million.)"


def planweave(db: Path, *args: str, fault: str | None = None) -> CompletedProcess[str]:
    """The CLI in this process; with `fault`, in a subprocess killed at that point."""
    env = {"COLUMNS": "200", "PLANWEAVE_DB": str(db)}
    return run_cli(*args, env=env, fault=fault) if fault else invoke_cli(*args, env=env)


def test_runs_show_prints_the_results_and_the_llm_s_text_and_lists_say_what_failed(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    # The failed lookup is planned again once: the planner gives up on it.
    script = Script.by_purpose(planner=[PLAN, "3. join()"], joiner=[FINISH])
    with ScriptedServer(script) as server:
        ran = planweave(db, "run", "How many people?", *TOOLS, "--base-url", server.base_url)
    assert ran.returncode == 0, ran.stderr
    run_id = json.loads(planweave(db, "runs", "list", "--json").stdout)[0]["id"]

    shown = planweave(db, "runs", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"{run_id}  finished, 1 failed  ")
    assert "task 1 result: 68000000" in lines
    assert "task 2 failed: no country named 'Atlantis'" in shown.stdout
    calls = json.loads(planweave(db, "runs", "show", run_id, "--json").stdout)["llm_calls"]
    planner, _, joiner = calls
    head = f"LLM call 1 (planner)  m · {planner['prompt_tokens']}+{planner['completion_tokens']}"
    assert any(line.startswith(head) for line in lines), shown.stdout
    at = next(i for i, line in enumerate(lines) if line.startswith("LLM call 1 (planner)"))
    assert lines[at + 1 : at + 4] == [f"  {line}" for line in PLAN.splitlines()[:3]]
    assert any(
        line.startswith(f"LLM call 3 (joiner)  m · {joiner['prompt_tokens']}+") for line in lines
    )
    assert "  Action: Finish(About 68 million.)" in lines
    assert "answer: About 68 million." in lines

    listed = planweave(db, "runs", "list")
    row = next(line for line in listed.stdout.splitlines() if line.startswith(run_id))
    assert "finished, 1 failed" in row
    assert " 1/2 " in row


def test_a_priced_model_s_cost_is_in_the_result_the_view_and_runs_show(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    script = Script.by_purpose(planner=[PLAN, "3. join()"], joiner=[FINISH])
    with ScriptedServer(script) as server:
        url = ["--base-url", server.base_url, "--price", "2/10"]
        ran = planweave(db, "run", "How many people?", *TOOLS, *url, "--json")
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    llm = result["llm"]
    # $2 per million prompt tokens, $10 per million completion tokens, over the run's calls.
    cost = (2 * llm["prompt_tokens"] + 10 * llm["completion_tokens"]) / 1e6
    assert cost > 0
    assert llm["cost"] == pytest.approx(cost)

    shown = planweave(db, "runs", "show", result["id"]).stdout
    assert f"{llm['prompt_tokens']}+{llm['completion_tokens']} tokens · ${cost:,.6f}" in shown
    calls = json.loads(planweave(db, "runs", "show", result["id"], "--json").stdout)
    first = calls["llm_calls"][0]
    each = (2 * first["prompt_tokens"] + 10 * first["completion_tokens"]) / 1e6
    assert (
        f"m · {first['prompt_tokens']}+{first['completion_tokens']} tokens · ${each:,.6f}" in shown
    )

    view = DagView()
    view(
        LLMCallFinished(
            call=1,
            purpose="planner",
            model="m",
            prompt_tokens=1000,
            completion_tokens=100,
            duration=1.0,
            text="",
            cost=0.003,
            t=1.0,
        )
    )
    assert "LLM: 1 call · 1000+100 tokens · $0.003000" in _text(view)


@pytest.mark.parametrize("price", ["cheap", "1/2/3", "-1/2", "nan/1", "1e9/1"])
def test_a_price_that_is_not_one_is_refused_saying_how_to_write_it(
    tmp_path: Path, price: str
) -> None:
    ran = planweave(tmp_path / "runs.db", "run", "How many people?", *TOOLS, "--price", price)
    assert ran.returncode == 2
    assert "write dollars per million prompt and completion tokens as INPUT/OUTPUT" in ran.stderr


@pytest.mark.slow  # a real process
def test_a_resumed_run_s_time_leaves_out_the_time_it_lay_dead(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    script = Script.by_purpose(planner=[PLAN, "3. join()"] * 2, joiner=[FINISH] * 2)
    with ScriptedServer(script) as server:
        reach = [*TOOLS, "--base-url", server.base_url]
        killed = planweave(db, "run", "How many people?", *reach, fault="task_finished:1")
        assert killed.returncode == -9, killed.stderr
        run_id = json.loads(planweave(db, "runs", "list", "--json").stdout)[0]["id"]
        with Journal.for_reading(db) as journal:
            before = journal.elapsed(run_id)  # its first life: its latest event's time
        time.sleep(3.0)  # dead
        began = time.monotonic()
        resumed = planweave(db, "runs", "resume", run_id, *reach, "--json")
        resuming_s = time.monotonic() - began
    assert resumed.returncode == 0, resumed.stderr
    data = json.loads(resumed.stdout)
    assert data["status"] == "finished"
    # The run's clock: its first life, then no more than the resume command took.  Counting
    # the three seconds it lay dead would pass that bound by all but the command's start-up;
    # a slow machine cannot break it: both sides are measured.
    assert before > 0
    bound = before + resuming_s
    assert before <= data["wall_s"] <= bound, (before, resuming_s, data["wall_s"])
    assert all(t["end"] is not None and t["end"] <= bound for t in data["tasks"]), data["tasks"]
    shown = json.loads(planweave(db, "runs", "show", run_id, "--json").stdout)
    assert shown["wall_s"] == data["wall_s"]


def test_cache_clear_of_an_unknown_id_fails_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    cleared = planweave(db, "cache", "clear", "nosuchid")
    assert cleared.returncode == 2
    assert "no template has the id 'nosuchid'" in cleared.stderr
    assert planweave(db, "cache", "clear").returncode == 0  # all of none: nothing is wrong


COMPARE = "Which has more people, France or Belgium?"
COMPARE_PLAN = '1. population("France")\n2. population("Belgium")\n3. join()\n<END_OF_PLAN>'


def test_cache_list_names_the_tool_set_and_a_miss_for_another_says_so(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    script = Script.by_purpose(planner=[COMPARE_PLAN] * 2, joiner=["Action: Finish(France)"] * 2)
    with ScriptedServer(script) as server:
        made = planweave(db, "run", COMPARE, *TOOLS, "--base-url", server.base_url)
        assert made.returncode == 0, made.stderr
        # Another tool set (its population tool is described otherwise): its plans may differ.
        other = ["--tools", "test_cache:TOOLS"]
        asked = planweave(
            db, "run", "Which has more people, Spain or Peru?", *other, "--model", "m",
            "--base-url", server.base_url, "--json",
        )  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    [stored] = json.loads(planweave(db, "cache", "list", "--json").stdout)
    reason = json.loads(asked.stdout)["cache"]["reason"]
    assert reason.startswith("no template of this question's shape for these tools (tool set ")
    assert f"template {stored['id']} of its shape was made for another tool set " in reason
    assert f"({stored['tools'][:8]})" in reason
    assert script.purposes.count("planner") == 2  # planned anew

    listed = planweave(db, "cache", "list")
    row = next(line for line in listed.stdout.splitlines() if line.startswith(stored["id"][:12]))
    assert f"{stored['tools'][:8]} (population)" in row
    shown = planweave(db, "cache", "show", stored["id"])
    assert f"tool set: {stored['tools'][:8]} (population)" in shown.stdout
