"""Executors compared: CPU-bound tools and no-op tools on `thread`, `process` and `ray`, through
the real path (plan text -> parser -> scheduler -> executor -> backend).

    python -m benchmarks.executors [--calls 16] [--seconds 0.5] [--noops 1000] [--repeats 3]
                                   [--backends thread process ray]

The CPU set is `--calls` wide calls of a pure-Python loop sized to take `--seconds` alone (a
fixed amount of work, calibrated once here: a loop that ran for a time would finish on time
under the GIL too).  Reported per backend: the time to start its workers (a first, untimed
wide plan), the CPU set's wall time, its speed-up over `thread` and its time above the ideal
per call (the ideal: every CPU busy with loops, `calls * seconds / min(cpus, calls)`), the
cores it got (the loops' calibrated work over the wall time: at most 1 for threads), and the
no-op set's wall time per task (what one call costs the executor).  The load average before and
after is recorded: the machine may be shared.  Times are medians over `--repeats` runs on the
same workers.
Writes benchmarks/results/executors.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import anyio

from planweave import ToolRegistry, parse_plan, tool
from planweave.events import EventBus
from planweave.executors import Backends, ExecutorName
from planweave.invoker import Invoker
from planweave.scheduler import Scheduler

from .overhead import machine_info

OUT = Path(__file__).parent / "results" / "executors.json"


@tool
def burn(loops: int) -> float:
    """Counts `loops` times in pure Python (holding the GIL); returns the seconds it took."""
    start = time.perf_counter()
    total = 0
    for i in range(loops):
        total += i
    return time.perf_counter() - start


@tool
def noop(i: int) -> int:
    """Does nothing."""
    return i


REGISTRY = ToolRegistry([burn, noop])


def calibrate(seconds: float) -> int:
    """How many loops `burn` needs to take `seconds` alone here (best of three)."""
    probe = 2_000_000
    best = min(burn.fn(probe) for _ in range(3))
    return max(1, int(probe * seconds / best))


async def scheduled(plan: str, backends: Backends) -> tuple[float, Scheduler]:
    scheduler = Scheduler(REGISTRY, Invoker(tool_timeout=600, backends=backends), EventBus())
    began = time.perf_counter()
    async with scheduler.running():
        for task in parse_plan(plan, REGISTRY):
            scheduler.add(task)
    wall = time.perf_counter() - began
    failed = [r.error for r in scheduler.records.values() if r.error is not None]
    if failed:
        raise RuntimeError(f"a benchmark task failed: {failed[0]}")
    return wall, scheduler


def wide(call: str, n: int) -> str:
    return "".join(f"{i}. {call.format(i=i)}\n" for i in range(1, n + 1)) + f"{n + 1}. join()\n"


async def measure(
    name: ExecutorName, calls: int, loops: int, seconds: float, noops: int, repeats: int
) -> dict[str, Any]:
    backends = Backends(name)
    cpus = os.cpu_count() or 2
    cpu_walls, loop_times, noop_walls = [], [], []
    try:
        started, _ = await scheduled(wide("noop({i})", cpus * 2), backends)
        for _ in range(repeats):
            wall, cpu = await scheduled(wide(f"burn({loops})", calls), backends)
            cpu_walls.append(wall)
            loop_times.extend(r.result for r in cpu.records.values())
            noop_walls.append((await scheduled(wide("noop({i})", noops), backends))[0])
    finally:
        backends.close()
    cpu_wall, noop_wall = statistics.median(cpu_walls), statistics.median(noop_walls)
    ideal = calls * seconds / min(cpus, calls)
    return {
        "start_s": round(started, 3),
        "cpu_wall_s": round(cpu_wall, 3),
        "cpu_walls_s": [round(w, 3) for w in cpu_walls],
        "cpu_loop_median_s": round(statistics.median(loop_times), 3),
        "cpu_above_ideal_per_call_ms": round((cpu_wall - ideal) / calls * 1000, 1),
        # The loops' work in quiet-core seconds over the wall time: how many of this machine's
        # cores the set got (at most 1 for threads, whose loops share the GIL).
        "cores_used": round(calls * seconds / cpu_wall, 2),
        "noop_wall_s": round(noop_wall, 3),
        "noop_per_task_ms": round(noop_wall / noops * 1000, 3),
    }


def run(
    calls: int = 16,
    seconds: float = 0.5,
    noops: int = 1000,
    backends: tuple[ExecutorName, ...] = ("thread", "process", "ray"),
    repeats: int = 3,
) -> dict[str, Any]:
    loops = calibrate(seconds)
    load_before = os.getloadavg()
    rows = {
        name: anyio.run(measure, name, calls, loops, seconds, noops, repeats) for name in backends
    }
    if "thread" in rows:
        for row in rows.values():
            row["cpu_speedup_x"] = round(rows["thread"]["cpu_wall_s"] / row["cpu_wall_s"], 2)
    return {
        "machine": machine_info(),
        "cpus": os.cpu_count(),
        "calls": calls,
        "seconds_per_call": seconds,
        "loops_per_call": loops,
        "noops": noops,
        "repeats": repeats,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "backends": rows,
    }


def table(result: dict[str, Any]) -> str:
    lines = [
        f"| executor | start | {result['calls']} CPU calls, wall | speed-up | cores used | above "
        f"ideal, per call | {result['noops']:,} no-ops | per no-op |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, row in result["backends"].items():
        lines.append(
            f"| {name} | {row['start_s']:.2f} s | {row['cpu_wall_s']:.2f} s | "
            f"{row.get('cpu_speedup_x', float('nan')):.2f}x | {row['cores_used']:.2f} | "
            f"{row['cpu_above_ideal_per_call_ms']:.0f} ms | "
            f"{row['noop_wall_s']:.2f} s | {row['noop_per_task_ms']:.2f} ms |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--noops", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", nargs="+", default=["thread", "process", "ray"])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    result = run(args.calls, args.seconds, args.noops, tuple(args.backends), args.repeats)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    print(
        f"load average before {result['load_average_before']}, after "
        f"{result['load_average_after']} on {result['cpus']} CPUs; wrote {args.out}"
    )


if __name__ == "__main__":
    # Run as a module by its package name, so that worker processes and Ray import the tools
    # from `benchmarks.executors`, not from a `__main__` they do not have.
    from benchmarks.executors import main as _main

    _main()
