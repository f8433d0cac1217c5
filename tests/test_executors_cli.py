"""`--executor` from the command line: recorded with the run, used again when it goes on (the
CLI in this process), and a local Ray started (and stopped) when no cluster is named (in a
real subprocess: Ray belongs to the process that starts it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_process import invoke_cli, run_cli
from planweave import Script, ScriptedServer

TOOLS = ["--tools", "executor_tools:SAFE", "--model", "m"]
PLAN = "1. where()\n2. square(12)\n3. join()\n<END_OF_PLAN>"
FINISH = "Thought: ok\nAction: Finish(144)"


def test_the_executor_is_recorded_and_a_run_goes_on_with_it(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    script = Script.by_purpose(planner=[PLAN], joiner=[FINISH])
    with ScriptedServer(script) as srv:
        url = ["--base-url", srv.base_url, "--db", db]
        paused = invoke_cli("run", "q", *TOOLS, *url, "--executor", "process", "--approve", "plan")
        assert paused.returncode == 3, paused.stderr
        listed = json.loads(invoke_cli("runs", "list", "--db", db, "--json").stdout)
        run_id = listed[0]["id"]
        shown = json.loads(invoke_cli("runs", "show", run_id, "--db", db, "--json").stdout)
        assert shown["settings"]["executor"] == "process"
        # Approving rebuilds the run's runtime from what was recorded: the pool again.
        approved = invoke_cli("runs", "approve", run_id, *TOOLS, *url, "--json")
    assert approved.returncode == 0, approved.stderr
    tasks = {t["id"]: t for t in json.loads(approved.stdout)["tasks"]}
    assert tasks[1]["result"] == "pool"
    assert tasks[2]["result"] == 144


@pytest.mark.ray
def test_without_an_address_the_ray_executor_starts_a_local_ray(tmp_path: Path) -> None:
    script = Script.by_purpose(planner=[PLAN], joiner=[FINISH])
    with ScriptedServer(script) as srv:
        proc = run_cli(
            "run", "q", *TOOLS, "--base-url", srv.base_url, "--executor", "ray", "--json",
            "--db", str(tmp_path / "runs.db"),
            "--timeout", "30",  # not charged with Ray's start; a loaded 2-core machine is slow
            env={"RAY_ADDRESS": ""}, timeout=180,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["answer"] == "144"
    assert [t["result"] for t in out["tasks"]] == ["ray", 144]
    assert "Traceback" not in proc.stderr


def test_an_unknown_executor_is_a_clear_error() -> None:
    proc = invoke_cli(
        "run", "q", *TOOLS, "--base-url", "http://127.0.0.1:9/v1", "--executor", "gpu"
    )
    assert proc.returncode == 2
    assert "--executor must be thread or process or ray" in proc.stderr
