"""The main job end to end: `planweave run` with the embedded model and the built-in tools,
no endpoint, no network; the answer is checked against the data package itself."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from countryinfo import CountryInfo

pytestmark = pytest.mark.model


@pytest.mark.timeout(900)
def test_embedded_model_answers_from_real_data(tmp_path: Path) -> None:
    population = int(CountryInfo("Norway").population())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLANWEAVE_", "OPENAI_"))}
    env["PLANWEAVE_DB"] = str(tmp_path / "runs.db")
    env["PLANWEAVE_LLAMA_BINDING"] = "cyllama"  # what `pip install 'planweave[local]'` brings
    proc = subprocess.run(
        [sys.executable, "-m", "planweave", "run", "What is the population of Norway?", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=850,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    assert data["status"] == "finished"
    lookups = [t for t in data["tasks"] if t["tool"] == "country_info"]
    assert lookups, data["tasks"]
    assert all(t["status"] == "done" for t in data["tasks"])
    assert population in [t["result"] for t in lookups]
    digits = re.sub(r"(?<=\d)[,\s.](?=\d{3}\b)", "", data["answer"])
    assert str(population) in digits, data["answer"]
    # One plan (which may end with its answer), at most one joiner call: nothing to repair.
    assert data["llm"]["calls"] in (1, 2)
    # The run is in the journal, the same object `planweave runs show` gives.
    shown = subprocess.run(
        [sys.executable, "-m", "planweave", "runs", "show", data["id"], "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    recorded = json.loads(shown.stdout)
    assert recorded["answer"] == data["answer"]
    assert [t["result"] for t in recorded["tasks"]] == [t["result"] for t in data["tasks"]]
