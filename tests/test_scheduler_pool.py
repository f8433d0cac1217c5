"""The scheduler's worker pool: limits, fairness, cancellation and ordering of many ready tasks."""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest

import demo_tools
from demo_tools import TOOLS
from planweave import TaskStatus, ToolRegistry, parse_plan, tool
from planweave.events import Event, EventBus, TaskCancelled, TaskFinished, TaskStarted
from planweave.invoker import Invoker
from planweave.scheduler import Scheduler

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def run_plan(
    plan: str, tools: list[Any], *, max_concurrency: int = 64, bus: EventBus | None = None
) -> Scheduler:
    registry = ToolRegistry(tools)
    scheduler = Scheduler(registry, Invoker(), bus or EventBus(), max_concurrency=max_concurrency)
    with anyio.fail_after(20):
        async with scheduler.running():
            for task in parse_plan(plan, registry):
                scheduler.add(task)
    return scheduler


async def test_global_limit_holds_exactly_under_a_burst_of_ready_tasks() -> None:
    gauge = demo_tools.Gauge()

    @tool
    async def work(i: int) -> int:
        """Takes a moment."""
        with gauge:
            await anyio.sleep(0.001)
        return i

    plan = "".join(f"{i}. work({i})\n" for i in range(1, 501)) + "501. join()\n"
    s = await run_plan(plan, [work], max_concurrency=7)
    assert gauge.calls == 500
    assert gauge.peak == 7
    assert [s.records[i].result for i in range(1, 501)] == list(range(1, 501))


async def test_tool_at_its_own_limit_does_not_hold_back_other_tools() -> None:
    gauge = demo_tools.Gauge()
    others_done = anyio.Event()
    others = 0

    @tool(max_concurrency=1)
    async def single(i: int) -> int:
        """One call at a time; the first waits until every `other` call has ended."""
        with gauge:
            if i == 1:
                await others_done.wait()
            await anyio.sleep(0.001)
        return i

    @tool
    async def other(i: int) -> int:
        """Ends after a moment."""
        nonlocal others
        await anyio.sleep(0.005)
        others += 1
        if others == 8:
            others_done.set()
        return i

    # Three slots: one holds `single`, and the three `single` calls queued behind it must not
    # take the other two, or the `other` calls never run and the first `single` never ends.
    plan = "".join(f"{i}. single({i})\n" for i in range(1, 5))
    plan += "".join(f"{i}. other({i})\n" for i in range(5, 13)) + "13. join()\n"
    s = await run_plan(plan, [single, other], max_concurrency=3)
    assert gauge.peak == 1
    assert all(r.status is TaskStatus.DONE for r in s.records.values())
    singles = sorted((s.records[i].start or 0.0, i) for i in range(1, 5))
    assert [i for _, i in singles] == [1, 2, 3, 4]  # a tool's waiting calls keep their order
    assert max(s.records[i].end or 0.0 for i in range(5, 13)) <= (s.records[2].start or 0.0)


async def test_cancelling_marks_running_parked_and_queued_tasks_and_the_scheduler_runs_on() -> None:
    called: list[int] = []
    both = anyio.Event()  # both slots taken

    @tool(max_concurrency=1)
    async def slow(x: int) -> int:
        """Never returns."""
        called.append(x)
        if len(called) == 2:
            both.set()
        await anyio.sleep(3600)
        return x

    @tool
    async def hang(x: int) -> int:
        """Never returns."""
        called.append(x)
        if len(called) == 2:
            both.set()
        await anyio.sleep(3600)
        return x

    registry = ToolRegistry([slow, hang, *TOOLS])
    bus = EventBus()
    scheduler = Scheduler(registry, Invoker(), bus, max_concurrency=2)
    tasks = parse_plan(
        "1. slow(1)\n2. slow(2)\n3. hang(3)\n"
        '4. population("France")\n5. area("France")\n6. population("Belgium")\n7. join()\n',
        registry,
    )
    # 1 and 3 take both slots, 2 waits for `slow`, and 4 and 5 wait for a slot: cancelled
    # once both slots are taken, however long a loaded machine takes to get there.
    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:

            async def cancel_once_both_run() -> None:
                await both.wait()
                group.cancel_scope.cancel()

            group.start_soon(cancel_once_both_run)
            async with scheduler.running():
                for task in tasks[:5]:
                    scheduler.add(task)
    assert called == [1, 3]
    for i in (1, 3):
        assert scheduler.records[i].status is TaskStatus.CANCELLED
        assert scheduler.records[i].end is not None
    for i in (2, 4, 5):
        assert scheduler.records[i].status is TaskStatus.CANCELLED
        assert scheduler.records[i].start is None  # never ran
    cancelled = [e.task_id for e in bus.events if isinstance(e, TaskCancelled)]
    assert sorted(cancelled) == [1, 2, 3, 4, 5]

    # Nothing of the cancelled session is left over for the next one.
    with anyio.fail_after(10):
        async with scheduler.running():
            scheduler.add(tasks[5])
    assert scheduler.records[6].status is TaskStatus.DONE
    assert called == [1, 3]


async def test_no_task_starts_before_its_dependencies_are_announced() -> None:
    order: list[tuple[str, int]] = []

    def watch(event: Event) -> None:
        if isinstance(event, TaskStarted):
            order.append(("started", event.task_id))
        elif isinstance(event, TaskFinished):
            order.append(("finished", event.task_id))

    @tool
    async def step(i: int, after: list[int] | None = None, pause: bool = False) -> int:
        """Returns at once or after yielding to the loop."""
        order.append(("called", i))
        if pause:
            await anyio.lowlevel.checkpoint()
        return i

    rng = random.Random(7)
    deps = [rng.sample(range(1, i), rng.randint(0, min(3, i - 1))) for i in range(1, 301)]
    plan = "".join(
        f"{i}. step({i}, [{', '.join(f'${d}' for d in ds)}], {rng.random() < 0.5})\n"
        for i, ds in enumerate(deps, 1)
    )
    s = await run_plan(plan + "301. join()\n", [step], max_concurrency=8, bus=EventBus([watch]))
    assert all(r.status is TaskStatus.DONE for r in s.records.values())
    at = {entry: n for n, entry in enumerate(order)}
    for i, ds in enumerate(deps, 1):
        assert at[("started", i)] < at[("called", i)] < at[("finished", i)]
        for d in ds:
            assert at[("finished", d)] < at[("started", i)]


async def test_a_long_chain_of_instant_tasks_lets_the_loop_run() -> None:
    @tool
    async def instant(i: int, after: int = 0) -> int:
        """Returns without yielding."""
        return i

    ticks = 0
    done = False

    async def ticker() -> None:
        nonlocal ticks
        while not done:
            ticks += 1
            await anyio.lowlevel.checkpoint()

    plan = "1. instant(1)\n" + "".join(f"{i}. instant({i}, ${i - 1})\n" for i in range(2, 2001))
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        s = await run_plan(plan + "2001. join()\n", [instant])
        done = True
    assert s.records[2000].status is TaskStatus.DONE
    assert ticks >= 50  # the chain gave the loop a turn every few tasks
