"""The `planweave` command against hostile text and broken journal files (in this process, but
for the install hint, which needs an interpreter whose bindings are hidden)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_process import invoke_cli, run_cli
from planweave import Reply, Script, ScriptedServer

TESTS = Path(__file__).parent
HOSTILE = "[/bold] :x: [local]"
TOOLS = ["--tools", "demo_tools:TOOLS", "--model", "m"]


def planweave(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # No wrapping inside what the tests look for.
    return invoke_cli(*args, env={"COLUMNS": "400", **(env or {})})


@pytest.fixture
def hostile() -> Iterator[ScriptedServer]:
    """A model that puts Rich markup and emoji codes in an argument and in its answer."""
    script = Script.by_purpose(
        planner=[f'1. population("{HOSTILE}")\n2. join()\n<END_OF_PLAN>', "3. join()"] * 2,
        joiner=[f"Thought: ok\nAction: Finish({HOSTILE} is not a country)"] * 2,
    )
    with ScriptedServer(script) as srv:
        yield srv


def test_model_text_is_printed_as_it_is_never_as_markup_or_emoji(
    hostile: ScriptedServer, tmp_path: Path
) -> None:
    db = str(tmp_path / "runs.db")
    proc = planweave("run", "q", *TOOLS, "--base-url", hostile.base_url, "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{HOSTILE} is not a country\n"
    assert f"no country named '{HOSTILE}'" in proc.stderr  # the task's failure, as it is
    assert "❌" not in proc.stdout + proc.stderr

    run_id = json.loads(planweave("runs", "list", "--json", "--db", db).stdout)[0]["id"]
    listed = planweave("runs", "list", "--db", db)
    assert listed.returncode == 0, listed.stderr
    shown = planweave("runs", "show", run_id, "--db", db)
    assert shown.returncode == 0, shown.stderr
    assert f"answer: {HOSTILE} is not a country" in shown.stdout
    assert f"no country named '{HOSTILE}'" in shown.stdout
    assert "❌" not in shown.stdout


@pytest.mark.slow  # a real process
def test_the_install_hint_keeps_its_brackets(tmp_path: Path) -> None:
    # The embedded backend without its bindings, cyllama and llama-cpp-python (hidden here by
    # modules that fail to import) names the extra to install; Rich markup used to eat the
    # `[local]`.
    hide = tmp_path / "hide"
    for name in ("cyllama", "llama_cpp"):
        (hide / name).mkdir(parents=True)
        (hide / name / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    path = os.pathsep.join([str(hide), str(TESTS), os.environ.get("PYTHONPATH", "")])
    proc = run_cli(
        "run", "q", "--model", str(model), "--db", str(tmp_path / "r.db"), env={"PYTHONPATH": path}
    )
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'planweave[local]'" in proc.stderr


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    script = Script.by_purpose(
        planner=['1. population("France")\n2. join()\n<END_OF_PLAN>'] * 3,
        joiner=["Thought: ok\nAction: Finish(68 million)"] * 3,
    )
    with ScriptedServer(script) as srv:
        yield srv


def damage(db: Path) -> None:
    """Overwrite every page but the first: the file still opens, its tables cannot be read."""
    data = bytearray(db.read_bytes())
    data[4096:] = b"\xff" * (len(data) - 4096)
    db.write_bytes(data)


def test_a_damaged_journal_is_a_clear_error_for_every_command(
    server: ScriptedServer, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    first = planweave("run", "q", *TOOLS, "--base-url", server.base_url, "--db", str(db))
    assert first.returncode == 0, first.stderr
    damage(db)
    ran = planweave("run", "q", *TOOLS, "--base-url", server.base_url, "--db", str(db))
    listed = planweave("runs", "list", "--db", str(db))
    resumed = planweave("runs", "resume", "abc", "--db", str(db))
    for proc in (ran, listed, resumed):
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        assert "the file is damaged" in proc.stderr
    # Where the damage lies decides whether opening or reading the file meets it.
    assert re.search(r"cannot (open|read) the journal", listed.stderr), listed.stderr


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder nobody may write, root included (chattr +i); its files too."""
    folder = tmp_path / "ro"
    folder.mkdir()
    yield folder
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(folder)], check=False)
    folder.chmod(0o755)


def make_read_only(folder: Path) -> None:
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(folder)], check=False).returncode != 0:
            pytest.skip("cannot make a folder read-only for root here (chattr +i)")
    else:
        for file in folder.iterdir():
            file.chmod(0o444)
        folder.chmod(0o555)


def test_history_stays_readable_from_a_read_only_folder(
    server: ScriptedServer, read_only_folder: Path
) -> None:
    db = str(read_only_folder / "runs.db")
    first = planweave("run", "q", *TOOLS, "--base-url", server.base_url, "--db", db, "--json")
    assert first.returncode == 0, first.stderr
    run_id = json.loads(first.stdout)["id"]
    make_read_only(read_only_folder)

    listed = planweave("runs", "list", "--db", db, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == [run_id]
    shown = planweave("runs", "show", run_id[:5], "--db", db, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["answer"] == "68 million"
    # Writing stays impossible, and says so.
    ran = planweave("run", "q", *TOOLS, "--base-url", server.base_url, "--db", db)
    assert ran.returncode == 2
    assert "read-only" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_an_uncreatable_journal_folder_is_a_warning_by_default_and_an_error_when_asked(
    server: ScriptedServer, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    default = planweave(
        "run", "q", *TOOLS, "--base-url", server.base_url, "--json",
        env={"XDG_DATA_HOME": str(blocker)},
    )  # fmt: skip
    assert default.returncode == 0, default.stderr
    assert "this run is not recorded" in default.stderr
    assert json.loads(default.stdout)["answer"] == "68 million"

    below = str(blocker / "runs.db")
    asked = planweave("run", "q", *TOOLS, "--base-url", server.base_url, "--db", below)
    listed = planweave("runs", "list", "--db", below)
    for proc in (asked, listed):
        assert proc.returncode == 2
        assert "cannot create the journal's folder" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_runs_commands_on_unknown_or_finished_runs_exit_2_with_the_reason(
    server: ScriptedServer, journal_db: str
) -> None:
    db = journal_db
    ran = planweave("run", "q", *TOOLS, "--base-url", server.base_url, "--db", db, "--json")
    run_id = json.loads(ran.stdout)["id"]
    cases = [
        (["runs", "cancel", "nope"], "no run 'nope'"),
        (["runs", "resume", "nope"], "no run 'nope'"),
        (["runs", "show", "nope"], "no run 'nope'"),
        (["runs", "resume", run_id], "already finished"),
    ]
    for args, message in cases:
        proc = planweave(*args, "--db", db)
        assert proc.returncode == 2, (args, proc.stderr)
        assert message in proc.stderr, args
        assert "Traceback" not in proc.stderr
    assert planweave("runs", "cancel", run_id, "--db", db).stdout == f"{run_id}: finished\n"


def test_a_failed_run_without_json_exits_1_with_the_cause(tmp_path: Path) -> None:
    with ScriptedServer(Script.by_purpose(planner=[Reply(status=400)] * 4)) as srv:
        proc = planweave(
            "run", "q", *TOOLS, "--base-url", srv.base_url, "--db", str(tmp_path / "r.db")
        )
    assert proc.returncode == 1, proc.stderr
    assert "error: " in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("flag", ["--join-replan", "--no-join-replan"])
def test_join_replan_is_chosen_on_the_command_line_and_recorded(flag: str, tmp_path: Path) -> None:
    first = '1. population("France")\n2. join()\n<END_OF_PLAN>'
    second = '3. area("France")\n4. join()\n<END_OF_PLAN>'
    replan = "Thought: x\nAction: Replan(the area)"
    joined = f"{replan}\n{second}" if flag == "--join-replan" else replan
    script = Script.by_purpose(
        planner=[first, second], joiner=[joined, "Thought: ok\nAction: Finish(done)"]
    )
    db = str(tmp_path / "runs.db")
    with ScriptedServer(script) as srv:
        ran = planweave("run", "q", *TOOLS, "--base-url", srv.base_url, "--db", db, "--json", flag)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["answer"] == "done"
    separate = flag == "--no-join-replan"
    assert script.purposes.count("planner") == (2 if separate else 1)
    shown = json.loads(
        planweave("runs", "show", json.loads(ran.stdout)["id"], "--db", db, "--json").stdout
    )
    assert shown["settings"]["join_replan"] is not separate
