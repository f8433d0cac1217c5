"""The `planweave` command against hostile text and broken journal files, in real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from planweave import Script, ScriptedServer

TESTS = Path(__file__).parent
HOSTILE = "[/bold] :x: [local]"
TOOLS = ["--tools", "demo_tools:TOOLS", "--model", "m"]


def planweave(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PLANWEAVE_")}
    environ["PYTHONPATH"] = os.pathsep.join([str(TESTS), environ.get("PYTHONPATH", "")])
    environ["COLUMNS"] = "400"  # no wrapping inside what the tests look for
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "planweave", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=timeout,
    )


@pytest.fixture
def hostile() -> Iterator[ScriptedServer]:
    """A model that puts Rich markup and emoji codes in an argument and in its answer."""
    script = Script.by_purpose(
        planner=[f'1. population("{HOSTILE}")\n2. join()\n<END_OF_PLAN>'] * 2,
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


def test_the_install_hint_keeps_its_brackets(tmp_path: Path) -> None:
    # The embedded backend without llama-cpp-python (hidden here by a module that fails to
    # import) names the extra to install; Rich markup used to eat the `[local]`.
    hide = tmp_path / "hide"
    (hide / "llama_cpp").mkdir(parents=True)
    (hide / "llama_cpp" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    path = os.pathsep.join([str(hide), str(TESTS), os.environ.get("PYTHONPATH", "")])
    proc = planweave(
        "run", "q", "--model", str(model), "--db", str(tmp_path / "r.db"), env={"PYTHONPATH": path}
    )
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'planweave[local]'" in proc.stderr
