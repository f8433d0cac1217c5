"""Approval from the terminal: `planweave run --approve`, then `runs approve` or `runs reject`,
in this process (typer's runner) against a scripted server on loopback."""

from __future__ import annotations

import json
from pathlib import Path

from cli_process import invoke_cli
from planweave import Script, ScriptedServer

PLAN = (
    '1. population("Netherlands")\n2. area("Netherlands")\n3. divide($1, $2)\n'
    "4. join()\n<END_OF_PLAN>"
)


def test_a_run_waits_then_is_approved_with_a_task_changed(tmp_path: Path) -> None:
    env = {"PLANWEAVE_DB": str(tmp_path / "runs.db")}
    script = Script.by_purpose(planner=[PLAN], joiner=["Action: Finish(about 428)"])
    with ScriptedServer(script) as server:
        base = ["--tools", "demo_tools:TOOLS", "--base-url", server.base_url, "--model", "m"]
        waiting = invoke_cli("run", "density?", *base, "--approve", "plan", env=env)
        assert waiting.returncode == 3, waiting.stderr
        assert "task 1 waits: population" in waiting.stderr
        run_id = json.loads(invoke_cli("runs", "list", "--json", env=env).stdout)[0]["id"]
        assert json.loads(invoke_cli("runs", "list", "--json", env=env).stdout)[0]["status"] == (
            "awaiting_approval"
        )
        bad = invoke_cli("runs", "approve", run_id, *base, "--edit", "1=[1]", env=env)
        assert bad.returncode == 2
        assert "--edit" in bad.stderr
        approved = invoke_cli(
            "runs", "approve", run_id, *base, "--edit", '2={"country": "Belgium"}', "--json",
            env=env,
        )  # fmt: skip
    assert approved.returncode == 0, approved.stderr
    result = json.loads(approved.stdout)
    assert result["status"] == "finished"
    assert result["answer"] == "about 428"
    calls = {t["id"]: t["call"] for t in result["tasks"]}
    assert calls[2] == 'area(country="Belgium")'  # the edit, not the planner's call
    assert script.purposes == ["planner", "joiner"]  # the plan was not asked for again


def test_a_waiting_run_can_be_rejected(tmp_path: Path) -> None:
    env = {"PLANWEAVE_DB": str(tmp_path / "runs.db")}
    script = Script.by_purpose(planner=[PLAN])
    with ScriptedServer(script) as server:
        waiting = invoke_cli(
            "run", "density?", "--tools", "demo_tools:TOOLS", "--base-url", server.base_url,
            "--model", "m", "--approve", "plan", "--json", env=env,
        )  # fmt: skip
    assert waiting.returncode == 3, waiting.stderr
    run_id = json.loads(waiting.stdout)["id"]
    rejected = invoke_cli("runs", "reject", run_id, "--reason", "too costly", env=env)
    assert rejected.returncode == 0, rejected.stderr
    assert "too costly" in rejected.stdout
    shown = json.loads(invoke_cli("runs", "show", run_id, "--json", env=env).stdout)
    assert shown["status"] == "failed"
    assert all(t["status"] != "done" for t in shown["tasks"])
    again = invoke_cli("runs", "reject", run_id, env=env)
    assert again.returncode == 2
    assert "not awaiting approval" in again.stderr
    assert invoke_cli("run", "q", "--approve", "maybe", env=env).returncode == 2
