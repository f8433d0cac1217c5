"""Scheduling overhead and scale: synthetic DAGs of no-op tasks (wide, deep, and a seeded random
DAG where each task depends on 0-3 earlier ones) through the real path (plan text -> parser ->
scheduler -> executor), against awaiting the same coroutines with asyncio.gather.

    python -m benchmarks.overhead [--sizes 1000 10000] [--repeats 5]
    python benchmarks/overhead.py  (the same)
    python -m benchmarks.overhead --profile --shapes wide --sizes 10000  (cProfile, no timing)

Writes benchmarks/results/overhead.json and overhead.md (with machine info).  Times are medians
over the repeats; ratios against gather are taken per repeat (each planweave run next to a
gather run) and their median reported.  Memory is the tracemalloc peak of one extra, untimed
run (tracemalloc slows everything down), divided by the number of tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import platform
import pstats
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from planweave import ToolRegistry, parse_plan, tool
from planweave.events import EventBus
from planweave.invoker import Invoker
from planweave.scheduler import Scheduler, TaskStatus

SHAPES = ("wide", "deep", "random")
TARGET_US = 100.0
TARGET_X_GATHER = 3.0
DEFAULT_CONCURRENCY = 64  # Runtime's default max_concurrency


@tool
async def noop(i: int, after: tuple[int, ...] = ()) -> int:
    """Does nothing.

    Args:
        i: this task's number
        after: the results of the tasks it waits for
    """
    return i


REGISTRY = ToolRegistry([noop])


def dag(shape: str, n: int, seed: int = 2026) -> list[list[int]]:
    """The dependencies of tasks 1..n (index 0 is task 1)."""
    if shape == "wide":
        return [[] for _ in range(n)]
    if shape == "deep":
        return [[i - 1] if i > 1 else [] for i in range(1, n + 1)]
    if shape == "random":
        rng = random.Random(seed)
        return [
            sorted(rng.sample(range(1, i), rng.randint(0, min(3, i - 1)))) for i in range(1, n + 1)
        ]
    raise ValueError(f"unknown shape {shape!r}")


def plan_text(deps: Sequence[Sequence[int]]) -> str:
    lines = [
        f"{i}. noop({i}, [{', '.join(f'${d}' for d in ds)}])\n" if ds else f"{i}. noop({i})\n"
        for i, ds in enumerate(deps, 1)
    ]
    return "".join(lines) + f"{len(deps) + 1}. join()\n"


def depth(deps: Sequence[Sequence[int]]) -> int:
    """The number of tasks on the longest dependency chain."""
    level: list[int] = []
    for ds in deps:
        level.append(1 + max((level[d - 1] for d in ds), default=0))
    return max(level, default=0)


async def scheduled(text: str, max_concurrency: int = DEFAULT_CONCURRENCY) -> dict[str, float]:
    """Parse and run a plan; seconds for each part, and how many tasks finished."""
    began = time.perf_counter()
    tasks = parse_plan(text, REGISTRY)
    parsed = time.perf_counter()
    scheduler = Scheduler(REGISTRY, Invoker(), EventBus(), max_concurrency=max_concurrency)
    async with scheduler.running():
        for task in tasks:
            scheduler.add(task)
    ended = time.perf_counter()
    ran = sum(rec.status is TaskStatus.DONE for rec in scheduler.records.values())
    return {"parse_s": parsed - began, "schedule_s": ended - parsed, "ran": ran}


async def gathered(deps: Sequence[Sequence[int]]) -> dict[str, float]:
    """The same coroutines, with the arguments the scheduler would pass, under asyncio.gather."""
    began = time.perf_counter()
    results = await asyncio.gather(*(noop.fn(i, tuple(ds)) for i, ds in enumerate(deps, 1)))
    return {"gather_s": time.perf_counter() - began, "ran": len(results)}


def peak_bytes(fn: Callable[..., Any], *args: Any) -> int:
    """The tracemalloc peak above the starting point while `anyio.run(fn, *args)` runs."""
    gc.collect()
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        anyio.run(fn, *args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - start


def measure(
    shape: str,
    n: int,
    repeats: int,
    seed: int = 2026,
    max_concurrency: int = DEFAULT_CONCURRENCY,
) -> dict[str, Any]:
    deps = dag(shape, n, seed)
    text = plan_text(deps)
    runs: list[dict[str, float]] = []
    for _ in range(repeats):
        gc.collect()
        ours = anyio.run(scheduled, text, max_concurrency)
        gc.collect()
        base = anyio.run(gathered, deps)
        if ours["ran"] != n or base["ran"] != n:
            raise RuntimeError(f"{shape} {n}: ran {ours['ran']} tasks, gather {base['ran']}")
        runs.append(ours | base)

    def med(values: list[float]) -> float:
        return statistics.median(values)

    us = {key: [r[f"{key}_s"] / n * 1e6 for r in runs] for key in ("parse", "schedule", "gather")}
    us["total"] = [p + s for p, s in zip(us["parse"], us["schedule"], strict=True)]
    return {
        "shape": shape,
        "n": n,
        "edges": sum(len(ds) for ds in deps),
        "depth": depth(deps),
        "ran": n,
        "parse_us": med(us["parse"]),
        "schedule_us": med(us["schedule"]),
        "total_us": med(us["total"]),
        "gather_us": med(us["gather"]),
        "x_gather": med([s / g for s, g in zip(us["schedule"], us["gather"], strict=True)]),
        "total_x_gather": med([t / g for t, g in zip(us["total"], us["gather"], strict=True)]),
        "peak_bytes_per_task": peak_bytes(scheduled, text, max_concurrency) / n,
        "gather_peak_bytes_per_task": peak_bytes(gathered, deps) / n,
        "repeats_us": us,
    }


def machine_info() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "processor": platform.processor(),
    }


def run(
    sizes: Sequence[int] = (1_000, 10_000),
    shapes: Sequence[str] = SHAPES,
    repeats: int = 5,
    seed: int = 2026,
    max_concurrency: int = DEFAULT_CONCURRENCY,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    rows = []
    for n in sizes:
        for shape in shapes:
            rows.append(measure(shape, n, repeats, seed, max_concurrency))
            if progress:
                progress(rows[-1])
    return {
        "machine": machine_info(),
        "settings": {
            "sizes": list(sizes),
            "shapes": list(shapes),
            "repeats": repeats,
            "seed": seed,
            "max_concurrency": max_concurrency,
        },
        "targets": {"schedule_us": TARGET_US, "x_gather": TARGET_X_GATHER},
        "memory": "tracemalloc peak of one untimed parse+schedule+run, bytes per task",
        "rows": rows,
    }


def row_line(r: dict[str, Any]) -> str:
    return (
        f"| {r['shape']} | {r['n']:,} | {r['depth']:,} | {r['parse_us']:.1f} | "
        f"{r['schedule_us']:.1f} | {r['total_us']:.1f} | {r['gather_us']:.1f} | "
        f"{r['x_gather']:.1f}x | {r['total_x_gather']:.1f}x | "
        f"{r['peak_bytes_per_task']:,.0f} | {r['gather_peak_bytes_per_task']:,.0f} |"
    )


def render(result: dict[str, Any]) -> str:
    m, s = result["machine"], result["settings"]
    rows = result["rows"]
    lines = [
        "| shape | tasks | depth | parse µs/task | schedule+run µs/task | total µs/task | "
        "gather µs/task | schedule+run / gather | total / gather | peak B/task | "
        "gather peak B/task |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *(row_line(r) for r in rows),
    ]
    met_us = sum(r["schedule_us"] < TARGET_US for r in rows)
    met_x = sum(r["x_gather"] <= TARGET_X_GATHER for r in rows)
    return (
        "\n".join(lines)
        + f"\n\nTargets: schedule+run below {TARGET_US:g} µs per task (met in {met_us} of "
        f"{len(rows)} rows); within {TARGET_X_GATHER:g}x of asyncio.gather (met in {met_x} of "
        f"{len(rows)}).\n\nMedians of {s['repeats']} repeats; ratios are medians of per-repeat "
        "ratios, each planweave run next to a gather run. Parse = plan text to validated tasks; "
        "schedule+run = scheduler and executor from the first task added to the last finished "
        "(events, dependency tracking, argument validation, a timeout scope per call), with "
        f"max_concurrency {s['max_concurrency']} (the Runtime default is 64). Random "
        f"DAGs: seed {s['seed']}, each task waits on 0-3 earlier tasks. Peak memory: "
        f"{result['memory']}. Python {m['python']}, {m['cpus']} CPUs ({m['machine']}).\n"
    )


def write(result: dict[str, Any], out: Path) -> str:
    table = render(result)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    out.with_suffix(".md").write_text(table)
    return table


def profile(shape: str, n: int, max_concurrency: int = DEFAULT_CONCURRENCY, top: int = 30) -> None:
    """Print where one parse+schedule+run of `n` tasks spends its time (cProfile)."""
    text = plan_text(dag(shape, n))
    profiler = cProfile.Profile()
    profiler.runcall(anyio.run, scheduled, text, max_concurrency)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--max-concurrency", type=int, default=DEFAULT_CONCURRENCY)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/overhead"))
    parser.add_argument(
        "--profile", action="store_true", help="profile the first shape at the last size instead"
    )
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.shapes[0], args.sizes[-1], args.max_concurrency)
        return
    result = run(
        args.sizes,
        args.shapes,
        args.repeats,
        args.seed,
        args.max_concurrency,
        progress=lambda r: print(row_line(r), flush=True),
    )
    print(write(result, args.out))


if __name__ == "__main__":
    main()
