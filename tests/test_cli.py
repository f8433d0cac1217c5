"""The `planweave` command against a scripted server on loopback: its options, output and exit
status in this process (typer's runner), its worker processes in a real subprocess."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cli_process import invoke_cli, run_cli
from demo_tools import AREA, POPULATION
from gbnf import Grammar
from planweave import Reply, Script, ScriptedServer

PLAN = (
    '1. population("Netherlands")\n2. area("Netherlands")\n3. divide($1, $2)\n'
    '4. population("Atlantis")\n5. join()\n<END_OF_PLAN>'
)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    script = Script.by_purpose(
        # Task 4 fails for good: the planner is asked again with its error, and gives up.
        planner=[Reply(PLAN, chunk_size=7, delay=0.01), "6. join()\n<END_OF_PLAN>"] * 3,
        joiner=["Thought: ok\nAction: Finish(About 428 (people) per km².)"] * 3,
        react=['Action: population("Belgium")', "Action: Finish(11.8 million)"],
    )
    with ScriptedServer(script) as srv:
        yield srv


Planweave = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def planweave(tmp_path: Path) -> Planweave:
    """The CLI in this process, journaling into the test's own file."""
    journal = tmp_path / "runs.db"

    def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return invoke_cli(*args, env={"PLANWEAVE_DB": str(journal), **(env or {})})

    return cli


def test_json_output_has_the_documented_fields(
    server: ScriptedServer, planweave: Planweave
) -> None:
    proc = planweave(
        "run",
        "density?",
        "--tools",
        "demo_tools:TOOLS",
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["answer"] == "About 428 (people) per km²."
    assert data["mode"] == "compiled"
    assert data["llm"]["calls"] == 3  # plan, plan again after task 4's error, join
    assert data["wall_s"] > 0
    tasks = {t["id"]: t for t in data["tasks"]}
    assert tasks[3]["result"] == pytest.approx(POPULATION["Netherlands"] / AREA["Netherlands"])
    assert tasks[3]["dependencies"] == [1, 2]
    assert tasks[4]["status"] == "failed"
    assert "Atlantis" in tasks[4]["error"]["message"]
    for task in data["tasks"]:
        assert set(task) >= {"id", "tool", "args", "dependencies", "status", "start", "end"}
        assert task["status"] in {"pending", "running", "done", "failed", "skipped", "cancelled"}


def test_terminal_output_shows_dag_failure_and_answer(
    server: ScriptedServer, planweave: Planweave
) -> None:
    proc = planweave(
        "run",
        "density?",
        "-t",
        "demo_tools:TOOLS",
        "--model",
        "m",
        env={"PLANWEAVE_BASE_URL": server.base_url},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "About 428 (people) per km²."
    assert 'population("Netherlands")' in proc.stderr
    assert "task 4 failed" in proc.stderr
    assert "Atlantis" in proc.stderr
    assert "LLM calls" in proc.stderr


def test_react_mode_from_the_cli(server: ScriptedServer, planweave: Planweave) -> None:
    proc = planweave(
        "run",
        "Belgium?",
        "--tools",
        "demo_tools:TOOLS",
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--mode",
        "react",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["mode"] == "react"
    assert data["answer"] == "11.8 million"
    assert [t["tool"] for t in data["tasks"]] == ["population"]


def test_tools_given_several_times_are_combined(
    server: ScriptedServer, planweave: Planweave
) -> None:
    proc = planweave(
        "run",
        "q",
        "--tools",
        "demo_tools:population",
        "--tools",
        "demo_tools:area",
        "--tools",
        "demo_tools:divide",
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--json",
    )
    # population, area and divide are enough for tasks 1-3; task 4 uses population too.
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tasks"][2]["status"] == "done"


def test_failed_run_exits_non_zero_with_the_cause(planweave: Planweave) -> None:
    # planweave's recovery sends a rate-limited request 4 times in all (after Retry-After).
    with ScriptedServer([Reply(status=429, retry_after=0.1)] * 4) as srv:
        proc = planweave(
            "run",
            "q",
            "--tools",
            "demo_tools:TOOLS",
            "--base-url",
            srv.base_url,
            "--model",
            "m",
            "--json",
        )
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["status"] == "failed"
    assert data["error"]["type"] == "LLMRateLimitError"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--tools", "nonexistent_module:X", "--base-url", "http://127.0.0.1:9/v1"],
            "cannot import",
        ),
        (["--tools", "demo_tools", "--base-url", "http://127.0.0.1:9/v1"], "MODULE:ATTR"),
        (["--tools", "demo_tools:TOOLS", "--mode", "fast"], "--mode"),
        (["--tools", "demo_tools:TOOLS", "--timeout", "nan"], "tool_timeout must be"),
        (["--tools", "demo_tools:TOOLS", "--timeout", "-5"], "tool_timeout must be"),
    ],
)
def test_bad_options_are_clear_errors(args: list[str], message: str, planweave: Planweave) -> None:
    proc = planweave("run", "q", "--model", "m", *args)
    assert proc.returncode == 2
    assert message in proc.stderr


@pytest.mark.slow  # a real process
def test_isolated_builtin_tools_run_in_worker_processes_of_the_cli(tmp_path: Path) -> None:
    plan = '1. calculator("6 * 7")\n2. convert_units(5, "km", "m")\n3. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[plan], joiner=["Thought: ok\nAction: Finish(42)"])
    with ScriptedServer(script) as srv:
        # A real process: the worker processes are its children.
        proc = run_cli(
            "run", "q", "--tools", "builtin", "--base-url", srv.base_url, "--model", "m", "--json",
            env={"PLANWEAVE_DB": str(tmp_path / "runs.db")},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    tasks = {t["id"]: t for t in json.loads(proc.stdout)["tasks"]}
    assert (tasks[1]["result"], tasks[2]["result"]) == (42, 5000.0)


def test_grammar_is_sent_in_the_named_field(server: ScriptedServer, planweave: Planweave) -> None:
    proc = planweave(
        "run", "q", "--tools", "demo_tools:TOOLS", "--base-url", server.base_url,
        "--model", "m", "--json", "--grammar-field", "grammar",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    planner, joiner = server.bodies[0], server.bodies[2]
    assert Grammar(planner["grammar"]).accepts('population("France")', "call")
    assert '"Finish(" finish-answer ")"' in joiner["grammar"]


def test_no_grammar_is_sent_unless_asked(server: ScriptedServer, planweave: Planweave) -> None:
    proc = planweave(
        "run", "q", "--tools", "demo_tools:TOOLS", "--base-url", server.base_url,
        "--model", "m", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert all("grammar" not in body for body in server.bodies)


def test_a_budget_ends_the_run_with_its_partial_results(
    server: ScriptedServer, planweave: Planweave
) -> None:
    proc = planweave(
        "run",
        "density?",
        "--tools",
        "demo_tools:TOOLS",
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--max-llm-calls",
        "1",
        "--json",
    )
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["error"]["type"] == "BudgetExceeded"
    assert data["error"]["limit"] == "llm_calls"
    assert 'population("Netherlands") = 17' in data["partial"]
    assert data["tasks"][0]["attempts"] == 1


def test_unknown_recovery_name_is_a_usage_error(
    server: ScriptedServer, planweave: Planweave
) -> None:
    proc = planweave(
        "run", "q", "--base-url", server.base_url, "--model", "m", "--recovery", "sometimes"
    )
    assert proc.returncode == 2
    assert "--recovery must be default or none" in proc.stderr


def test_an_unusable_default_journal_is_a_warning_not_a_failure(
    server: ScriptedServer, tmp_path: Path, planweave: Planweave
) -> None:
    (tmp_path / "planweave").mkdir()
    (tmp_path / "planweave" / "runs.db").write_bytes(b"junk" * 500)
    args = ["--tools", "demo_tools:TOOLS", "--base-url", server.base_url, "--model", "m"]
    proc = invoke_cli("run", "density?", *args, "--json", env={"XDG_DATA_HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "not a usable planweave journal" in proc.stderr
    assert "this run is not recorded" in proc.stderr
    assert (tmp_path / "planweave" / "runs.db").read_bytes() == b"junk" * 500
    # Asked for explicitly, the same file is an error.
    explicit = planweave("run", "q", *args, "--db", str(tmp_path / "planweave" / "runs.db"))
    assert explicit.returncode == 2
    assert "not a usable planweave journal" in explicit.stderr


def test_runs_show_json_is_the_run_json_field_for_field(
    server: ScriptedServer, planweave: Planweave
) -> None:
    ran = planweave(
        "run", "density?", "--tools", "demo_tools:TOOLS", "--base-url", server.base_url,
        "--model", "m", "--json",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    reported = json.loads(ran.stdout)
    shown_proc = planweave("runs", "show", reported["id"], "--json")
    assert shown_proc.returncode == 0, shown_proc.stderr
    shown = json.loads(shown_proc.stdout)
    assert {key: shown[key] for key in reported} == reported
    assert {"created", "sessions", "settings", "llm_calls"} <= set(shown) - set(reported)


def test_runs_show_names_a_failed_task_by_its_message(
    server: ScriptedServer, planweave: Planweave
) -> None:
    ran = planweave(
        "run", "density?", "--tools", "demo_tools:TOOLS", "--base-url", server.base_url,
        "--model", "m", "--json",
    )  # fmt: skip
    run_id = json.loads(ran.stdout)["id"]
    shown = planweave("runs", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    line = next(x for x in shown.stdout.splitlines() if x.startswith("task 4 failed:"))
    assert "Atlantis" in line
    assert "{" not in line  # the message, not the error's dict


def test_prompt_style_option(server: ScriptedServer, planweave: Planweave) -> None:
    base = ["run", "density?", "--tools", "demo_tools:TOOLS", "--base-url", server.base_url]
    proc = planweave(*base, "--model", "m", "--prompt-style", "full", "--json")
    assert proc.returncode == 0, proc.stderr
    # Asked for, against the default: the full joiner shows one worked exchange.
    assert len(server.requests[2]) == 4
    proc = planweave(*base, "--model", "m", "--json")
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests[5]) == 2  # an endpoint's default: compact, no worked exchange
    bad = planweave(*base, "--prompt-style", "terse")
    assert bad.returncode == 2
    assert "--prompt-style must be full or compact" in bad.stderr


def test_react_steps_and_worked_examples_are_options_the_run_keeps(
    server: ScriptedServer, tmp_path: Path, planweave: Planweave
) -> None:
    args = ["--tools", "demo_tools:TOOLS", "--base-url", server.base_url, "--model", "m"]
    cut = planweave("run", "Belgium?", *args, "--mode", "react", "--react-max-steps", "1", "--json")
    assert cut.returncode == 1, cut.stderr
    data = json.loads(cut.stdout)
    assert data["error"]["limit"] == "react_steps"  # one step, then no room to finish
    assert [t["tool"] for t in data["tasks"]] == ["population"]

    example = 'Question: How many people live in Peru?\n1. population("Peru")\n2. join()'
    (tmp_path / "examples.txt").write_text(example)
    given = ["--examples", str(tmp_path / "examples.txt"), "--prompt-style", "full"]
    proc = planweave("run", "density?", *args, *given)
    assert proc.returncode == 0, proc.stderr
    asked = zip(server.requests, server.script.purposes, strict=True)
    planner = next(r for r, p in asked if p == "planner")
    assert any("How many people live in Peru?" in m.content for m in planner)
    shown = planweave("runs", "list", "--json")
    run_id = json.loads(shown.stdout)[0]["id"]
    settings = json.loads(planweave("runs", "show", run_id, "--json").stdout)["settings"]
    assert (settings["examples"], settings["react_max_steps"]) == (example, 10)


@pytest.mark.parametrize(
    "flags", [("--tool-timeout", "--max-decomposition-depth"), ("--timeout", "--max-depth")]
)
def test_tool_timeout_and_decomposition_depth_answer_to_their_names_and_the_old_ones(
    server: ScriptedServer, planweave: Planweave, flags: tuple[str, str]
) -> None:
    args = ["--tools", "demo_tools:TOOLS", "--base-url", server.base_url, "--model", "m"]
    proc = planweave("run", "density?", *args, flags[0], "7", flags[1], "1")
    assert proc.returncode == 0, proc.stderr
    run_id = json.loads(planweave("runs", "list", "--json").stdout)[0]["id"]
    settings = json.loads(planweave("runs", "show", run_id, "--json").stdout)["settings"]
    assert (settings["tool_timeout"], settings["budget"]["decomposition_depth"]) == (7, 1)
