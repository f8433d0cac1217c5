"""What the durable journal costs: per task, and end to end on the oracle workloads.

    python -m benchmarks.journal [--tasks 2000] [--n 12] [--repeats 5] [--db postgresql://...]

1. Per task: a wide plan of no-op tasks through the full runtime (scripted planner and joiner,
   no latency), with and without a journal; the difference per task, median of repeats.
2. End to end: oracle questions (web latency profile) answered with and without a journal,
   interleaved; the ratio of medians.
Targets (issue 5): below 1 ms per task and below 5 % end to end.
Writes benchmarks/results/journal.json and journal.md (with --db, a PostgreSQL database to journal
in instead of a temporary SQLite file: journal-postgres.json and .md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from planweave import OpenAICompatible, Runtime, Script, ScriptedLLM, ToolRegistry, tool
from planweave.store import Journal

from .oracle import Oracle
from .workloads import bench_tools, generate


@tool
async def noop(x: int = 0) -> int:
    """Does nothing."""
    return x


def per_task(n: int, repeats: int, db: Path | str) -> dict[str, float]:
    plan = "".join(f"{i}. noop({i})\n" for i in range(1, n + 1)) + f"{n + 1}. join()\n"
    finish = "Thought: done.\nAction: Finish(done)"

    def once(journal: Journal | None) -> float:
        llm = ScriptedLLM(Script.by_purpose(planner=[plan], joiner=[finish]))
        runtime = Runtime(ToolRegistry([noop]), llm, journal=journal, max_concurrency=n)
        began = time.perf_counter()
        result = runtime.run("q")
        took = time.perf_counter() - began
        assert result.status == "finished"
        assert len(result.results) == n
        return took

    journal = Journal(db)
    plain, journaled = [], []
    for _ in range(repeats):  # interleaved
        plain.append(once(None))
        journaled.append(once(journal))
    base, with_journal = statistics.median(plain), statistics.median(journaled)
    return {
        "tasks": n,
        "without_s": base,
        "with_s": with_journal,
        "us_per_task_without": base / n * 1e6,
        "us_per_task_with": with_journal / n * 1e6,
        "journal_us_per_task": (with_journal - base) / n * 1e6,
    }


def end_to_end(n: int, db: Path | str) -> dict[str, Any]:
    questions = generate(max(n, 6), 2026)[:n]
    oracle = Oracle(questions)
    tools = bench_tools("web")
    journal = Journal(db)
    walls: dict[str, list[float]] = {"without": [], "with": []}
    with oracle.server() as server:
        for q in questions:
            for label, j in (("without", None), ("with", journal)):
                llm = OpenAICompatible(base_url=server.base_url, model="oracle", max_retries=0)
                runtime = Runtime(tools, llm, grammar=False, journal=j)
                result = runtime.run(q.text)
                walls[label].append(result.wall_s)
    without, with_ = statistics.median(walls["without"]), statistics.median(walls["with"])
    return {
        "questions": n,
        "median_without_s": without,
        "median_with_s": with_,
        "ratio": with_ / without,
        "per_question_ratio_median": statistics.median(
            w / b for w, b in zip(walls["with"], walls["without"], strict=True)
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n", type=int, default=12)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--db", default=None, help="a PostgreSQL URL to journal in")
    args = parser.parse_args()
    name = "journal-postgres" if args.db else "journal"
    args.out = args.out or Path("benchmarks/results") / name
    with tempfile.TemporaryDirectory() as tmp:
        tasks = per_task(args.tasks, args.repeats, args.db or Path(tmp) / "tasks.db")
        e2e = end_to_end(args.n, args.db or Path(tmp) / "e2e.db")
    machine = {"python": platform.python_version(), "cpus": os.cpu_count()}
    report = (
        "| measure | without journal | with journal | cost |\n|---|---|---|---|\n"
        f"| {tasks['tasks']} no-op tasks, µs per task | {tasks['us_per_task_without']:.0f} | "
        f"{tasks['us_per_task_with']:.0f} | {tasks['journal_us_per_task']:.0f} µs per task "
        "(target < 1000) |\n"
        f"| oracle questions (web latency), median s | {e2e['median_without_s']:.2f} | "
        f"{e2e['median_with_s']:.2f} | {100 * (e2e['ratio'] - 1):+.1f} % (per-question median "
        f"{100 * (e2e['per_question_ratio_median'] - 1):+.1f} %; target < 5 %) |\n"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(
        json.dumps({"machine": machine, "per_task": tasks, "end_to_end": e2e}, indent=1)
    )
    args.out.with_suffix(".md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
