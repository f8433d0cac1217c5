"""The README question end to end with the embedded model, prefix cache off, cold and warm.

Each run is a fresh process of `planweave run QUESTION --json --no-journal` (weights already
assembled).  Conditions alternate within each round: off (`PLANWEAVE_PREFIX_CACHE_MB=0`), cold
(the prefix directory emptied first, so the run evaluates and stores), warm (the entries the
cold run stored).  Each process also records every LLM call's prompt tokens, time to its first
token (prompt processing) and duration.

    python benchmarks/embedded_prefix.py --rounds 3 --out benchmarks/results/embedded_prefix.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

QUESTION = (
    "Which has more people per square kilometre, the Netherlands or Belgium, and by how much?"
)


def _child(calls_out: str) -> None:
    """Run the CLI in this process with LocalLLM.stream timed per call."""
    from planweave.cli import main
    from planweave.llm.local import LocalLLM

    calls: list[dict[str, Any]] = []
    original = LocalLLM.stream

    async def timed(self: LocalLLM, request: Any) -> Any:
        began = time.monotonic()
        first: float | None = None
        prompt_tokens: int | None = None
        reuse = self._prefix
        before = (reuse.restored_tokens, reuse.seconds) if reuse else (0, 0.0)
        try:
            async for delta in original(self, request):
                if first is None:
                    first = time.monotonic() - began
                if delta.usage is not None:
                    prompt_tokens = delta.usage.prompt_tokens
                yield delta
        finally:
            # The planner stops reading after join(), before the usage delta.
            after = (reuse.restored_tokens, reuse.seconds) if reuse else (0, 0.0)
            calls.append(
                {
                    "purpose": request.purpose,
                    "prompt_tokens": prompt_tokens,
                    "first_token_s": first,
                    "duration_s": time.monotonic() - began,
                    "restored_tokens": after[0] - before[0],
                    "prefix_io_s": after[1] - before[1],
                }
            )

    LocalLLM.stream = timed  # type: ignore[method-assign]
    try:
        sys.argv = ["planweave", "run", QUESTION, "--json", "--no-journal"]
        main()
    finally:
        Path(calls_out).write_text(json.dumps(calls))


def _one(condition: str, prefix_dir: Path) -> dict[str, Any]:
    env = dict(os.environ)
    if condition == "off":
        env["PLANWEAVE_PREFIX_CACHE_MB"] = "0"
    else:
        env.pop("PLANWEAVE_PREFIX_CACHE_MB", None)
        if condition == "cold":
            shutil.rmtree(prefix_dir, ignore_errors=True)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        calls_file = f.name
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, __file__, "--child", calls_file],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    wall = time.monotonic() - began
    data = json.loads(proc.stdout)
    calls = json.loads(Path(calls_file).read_text())
    os.unlink(calls_file)
    return {
        "condition": condition,
        "process_wall_s": round(wall, 2),
        "run_wall_s": data["wall_s"],
        "timings": data["timings"],
        "answer": data["answer"],
        "llm": data["llm"],
        "calls": calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        _child(args.child)
        return
    from planweave.llm.models import cache_dir

    prefix_dir = cache_dir() / "prefix-states"
    runs: list[dict[str, Any]] = []
    for _ in range(args.rounds):
        for condition in ("off", "cold", "warm"):
            run = _one(condition, prefix_dir)
            runs.append(run)
            firsts = " ".join(f"{c['purpose']}={c['first_token_s']:.2f}" for c in run["calls"])
            print(
                f"{condition:5} process {run['process_wall_s']:6.2f}s  "
                f"planning {run['timings']['planning']:6.2f}  "
                f"joining {run['timings']['joining']:6.2f}  first token: {firsts}",
                flush=True,
            )
    summary: dict[str, dict[str, float]] = {}
    for condition in ("off", "cold", "warm"):
        chosen = [r for r in runs if r["condition"] == condition]

        def med(values: list[float]) -> float:
            return round(statistics.median(values), 2)

        row = {
            "process_wall_s": med([r["process_wall_s"] for r in chosen]),
            "planning_s": med([r["timings"]["planning"] for r in chosen]),
            "joining_s": med([r["timings"]["joining"] for r in chosen]),
        }
        for purpose in ("planner", "joiner"):
            calls = [c for r in chosen for c in r["calls"] if c["purpose"] == purpose]
            if calls:
                row[f"{purpose}_first_token_s"] = med([c["first_token_s"] for c in calls])
                row[f"{purpose}_call_s"] = med([c["duration_s"] for c in calls])
        summary[condition] = row
        print(condition, row)
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
