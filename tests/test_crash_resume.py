"""Kill a real `planweave run` with SIGKILL at several points, resume it in a new process, and
prove: the answer is right, every task that had finished ran exactly once, and the
side-effecting tool never ran twice."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_process import invoke_cli, run_cli
from ledger_tools import FINISH, PLAN
from planweave import Reply, Script, ScriptedServer
from planweave.store import Journal

TESTS = Path(__file__).parent
QUESTION = "What is a plus b? Send it."
CALLS = {1: "lookup a", 2: "lookup b", 3: "add 2 3", 4: "send total 5"}


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    # The plan streams slowly enough for tasks to start while it is still being written.
    script = Script.by_purpose(
        planner=[Reply(PLAN, chunk_size=6, delay=0.02)] * 2, joiner=[FINISH] * 2
    )
    with ScriptedServer(script) as srv:
        yield srv


def planweave(
    tmp: Path, *args: str, fault: str | None = None, db: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        "PLANWEAVE_DB": db or str(tmp / "runs.db"),
        "PLANWEAVE_TEST_LEDGER": str(tmp / "ledger.txt"),
        "PLANWEAVE_TEST_DELAY": "0.3",
    }
    # A real process only where it is killed; the CLI's logic in this one.
    return run_cli(*args, env=env, fault=fault) if fault else invoke_cli(*args, env=env)


def ledger(tmp: Path) -> Counter[str]:
    path = tmp / "ledger.txt"
    return Counter(path.read_text().splitlines() if path.exists() else [])


@pytest.mark.parametrize(
    ("fault", "stage"),
    [
        ("task_planned:2", "planning"),  # the planner is still streaming
        ("task_finished:1", "executing"),  # one lookup done, the other in flight
        ("task_finished:3", "executing"),  # add done, send not yet started
        ("llm_call_started:2", "joining"),  # every task done, the joiner just asked
    ],
)
@pytest.mark.slow  # a real process
def test_killed_run_resumes_without_lost_or_repeated_work(
    tmp_path: Path, server: ScriptedServer, fault: str, stage: str, journal_db: str
) -> None:
    """On either journal (`journal_db`: SQLite, PostgreSQL), named by PLANWEAVE_DB."""
    killed = planweave(
        tmp_path,
        "run",
        QUESTION,
        "--tools",
        "ledger_tools:TOOLS",
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--json",
        fault=fault,
        db=journal_db,
    )
    assert killed.returncode == -9, killed.stderr  # SIGKILL, at the injected point

    listed = json.loads(planweave(tmp_path, "runs", "list", "--json", db=journal_db).stdout)
    assert [r["status"] for r in listed] == ["interrupted"]
    run_id = listed[0]["id"]
    before = Journal(journal_db).show(run_id)
    finished_before = {t["id"] for t in before["tasks"] if t["status"] == "done"}
    if stage == "joining":
        assert finished_before == {1, 2, 3, 4}

    # Where it reaches is given again: the journal's own record of it is not trusted.
    reach = ["--tools", "ledger_tools:TOOLS", "--base-url", server.base_url]
    resumed = planweave(tmp_path, "runs", "resume", run_id, *reach, "--json", db=journal_db)
    assert resumed.returncode == 0, resumed.stderr
    data = json.loads(resumed.stdout)
    assert data["id"] == run_id
    assert data["status"] == "finished"
    assert data["answer"] == "The total is 5, and it was sent."
    assert {t["id"]: t["result"] for t in data["tasks"]} == {1: 2, 2: 3, 3: 5, 4: "sent"}

    ran = ledger(tmp_path)
    for task_id in finished_before:
        assert ran[CALLS[task_id]] == 1, (task_id, ran)
    assert ran["send total 5"] == 1
    assert ran["add 2 3"] == 1

    shown = json.loads(planweave(tmp_path, "runs", "show", run_id, "--json", db=journal_db).stdout)
    assert shown["status"] == "finished"
    assert shown["sessions"] == 2
    assert [t["status"] for t in shown["tasks"]] == ["done"] * 4


@pytest.mark.slow  # a real process
def test_a_side_effect_in_flight_is_only_rerun_when_asked(
    tmp_path: Path, server: ScriptedServer
) -> None:
    args = ["--tools", "ledger_tools:TOOLS", "--base-url", server.base_url, "--model", "m"]
    killed = planweave(tmp_path, "run", QUESTION, *args, "--json", fault="task_started:4")
    assert killed.returncode == -9
    run_id = json.loads(planweave(tmp_path, "runs", "list", "--json").stdout)[0]["id"]

    paused = planweave(tmp_path, "runs", "resume", run_id, *args, "--json")
    assert paused.returncode == 3
    assert json.loads(paused.stdout)["error"]["tasks"][0]["call"] == 'send("total ${3}")'
    assert "send total 5" not in ledger(tmp_path)
    listed = planweave(tmp_path, "runs", "list")
    assert "paused" in listed.stdout

    resumed = planweave(tmp_path, "runs", "resume", run_id, *args, "--rerun", "4", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["answer"] == "The total is 5, and it was sent."
    assert ledger(tmp_path)["send total 5"] == 1
    assert ledger(tmp_path)["lookup a"] == 1

    shown = planweave(tmp_path, "runs", "show", run_id)
    assert shown.returncode == 0
    assert "The total is 5" in shown.stdout
    assert "send" in shown.stdout


@pytest.mark.slow  # a real process
def test_runs_cancel_marks_a_stopped_run(tmp_path: Path, server: ScriptedServer) -> None:
    args = ["--tools", "ledger_tools:TOOLS", "--base-url", server.base_url, "--model", "m"]
    assert planweave(tmp_path, "run", QUESTION, *args, fault="task_finished:1").returncode == -9
    run_id = json.loads(planweave(tmp_path, "runs", "list", "--json").stdout)[0]["id"]
    cancelled = planweave(tmp_path, "runs", "cancel", run_id[:5])
    assert cancelled.returncode == 0
    assert "cancelled" in cancelled.stdout
    assert json.loads(planweave(tmp_path, "runs", "list", "--json").stdout)[0]["status"] == (
        "cancelled"
    )
    unknown = planweave(tmp_path, "runs", "show", "zzzz")
    assert unknown.returncode == 2
    assert "no run 'zzzz'" in unknown.stderr


@pytest.mark.slow  # a real process
def test_resume_uses_the_recorded_settings(tmp_path: Path, server: ScriptedServer) -> None:
    killed = planweave(
        tmp_path, "run", QUESTION, "--tools", "ledger_tools:TOOLS", "--base-url",
        server.base_url, "--model", "m", "--max-replans", "1", "--recovery", "none",
        "--max-llm-calls", "1", "--timeout", "9", "--no-stream-dispatch", "--json",
        "--llm-chunk-timeout", "30", "--max-argument-chars", "5000", "--max-concurrency", "3",
        "--react-max-steps", "4", "--price", "0.5/2", fault="task_finished:1",
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    run_id = json.loads(planweave(tmp_path, "runs", "list", "--json").stdout)[0]["id"]

    shown = json.loads(planweave(tmp_path, "runs", "show", run_id, "--json").stdout)
    assert shown["settings"] == {
        "mode": "compiled",
        "model": "m",
        "base_url": server.base_url,
        "grammar": True,
        "grammar_field": None,
        "prompt_style": "compact",  # an endpoint's default, recorded for the resume
        "tools": ["ledger_tools:TOOLS"],
        "mcp": [],
        "mcp_timeout": 30.0,
        "mcp_max_tools": 100,
        "files": None,
        "max_replans": 1,
        "max_repairs": 2,
        "tool_timeout": 9.0,
        "max_argument_chars": 5000,
        "max_fanout": 64,
        "max_fanout_total": 256,
        "max_concurrency": 3,
        "react_max_steps": 4,
        "examples": None,
        "similar_examples": 0,
        "streaming": False,
        "join_replan": True,
        "grounding": False,  # off for an endpoint unless asked
        "plan_answers": True,  # on for an endpoint
        "cache": True,
        "cache_adapt": False,
        "recovery": "none",
        "decompose": False,
        "ask": False,
        "budget": {"llm_calls": 1, "tokens": None, "wall_s": None, "decomposition_depth": 2},
        "llm_first_token_timeout": 120.0,
        "llm_chunk_timeout": 30.0,
        "llm_call_timeout": 600.0,
        "approve": None,
        "executor": "thread",
        "llm_backend": "auto",
        "output_schema": None,
        "thread": None,
        "user": None,
        "price": "0.5/2",
    }

    # The planner's call is replayed and counts: the recorded budget of one LLM call leaves
    # nothing for the joiner.  (Where it reaches is accepted from the record: see
    # tests/test_journal_trust.py for what a journal may not decide alone.)
    resumed = planweave(tmp_path, "runs", "resume", run_id, "--accept-recorded-settings", "--json")
    assert resumed.returncode == 1, resumed.stderr
    data = json.loads(resumed.stdout)
    assert data["error"]["type"] == "BudgetExceeded"
    assert data["error"]["limit"] == "llm_calls"
    assert {t["id"]: t["result"] for t in data["tasks"]} == {1: 2, 2: 3, 3: 5, 4: "sent"}
    assert ledger(tmp_path)["lookup a"] == 1
    assert len(server.bodies) == 1  # only the first session's planner reached the server


@pytest.mark.slow  # a real process
def test_resume_overrides_the_recorded_endpoint_and_model(
    tmp_path: Path, server: ScriptedServer
) -> None:
    args = ["--tools", "ledger_tools:TOOLS", "--base-url", "http://127.0.0.1:9/v1"]
    killed = planweave(
        tmp_path, "run", QUESTION, *args, "--model", "gone", "--json", fault="llm_call_started:1"
    )
    assert killed.returncode == -9, killed.stderr
    run_id = json.loads(planweave(tmp_path, "runs", "list", "--json").stdout)[0]["id"]
    resumed = planweave(
        tmp_path, "runs", "resume", run_id, "--base-url", server.base_url, "--model", "m",
        "--tools", "ledger_tools:TOOLS", "--json",
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["answer"] == "The total is 5, and it was sent."
    assert {body["model"] for body in server.bodies} == {"m"}
