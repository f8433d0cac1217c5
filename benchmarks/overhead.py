"""Scheduling overhead per task: N no-op tasks (wide and deep) through the full scheduler path,
against awaiting the same coroutines with asyncio.gather.  Usage: python benchmarks/overhead.py [N]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

import anyio

from planweave import ToolRegistry, parse_plan, tool
from planweave.events import EventBus
from planweave.executor import Executor
from planweave.scheduler import Scheduler


@tool
async def noop(x: int = 0) -> int:
    """Does nothing."""
    return x


def main(n: int = 10_000, repeats: int = 5) -> None:
    registry = ToolRegistry([noop])
    plans = {
        "wide": "".join(f"{i}. noop({i})\n" for i in range(1, n + 1)) + f"{n + 1}. join()\n",
        "deep": "1. noop(1)\n"
        + "".join(f"{i}. noop(${i - 1})\n" for i in range(2, n + 1))
        + f"{n + 1}. join()\n",
    }

    async def scheduled(text: str) -> tuple[float, float]:
        began = time.perf_counter()
        tasks = parse_plan(text, registry)
        parsed = time.perf_counter()
        scheduler = Scheduler(registry, Executor(), EventBus(), max_concurrency=n)
        async with scheduler.running():
            for task in tasks:
                scheduler.add(task)
        return (parsed - began) / n * 1e6, (time.perf_counter() - parsed) / n * 1e6

    async def gathered() -> float:
        began = time.perf_counter()
        await asyncio.gather(*(noop.fn(i) for i in range(n)))
        return (time.perf_counter() - began) / n * 1e6

    base = statistics.median(anyio.run(gathered) for _ in range(repeats))
    print(f"asyncio.gather: {base:.1f} us/task (median of {repeats})")
    for name, text in plans.items():
        runs = [anyio.run(scheduled, text) for _ in range(repeats)]
        parse = statistics.median(r[0] for r in runs)
        sched = statistics.median(r[1] for r in runs)
        print(
            f"{name}: parse {parse:.1f} us/task, schedule+run {sched:.1f} us/task "
            f"({sched / base:.1f}x gather)"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
