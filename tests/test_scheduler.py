"""The scheduler and executor with real tools of controlled latency (no LLM involved)."""

from __future__ import annotations

import os
import threading
from typing import Any

import anyio
import pytest

import demo_tools
from demo_tools import AREA, GAUGE, ISOLATED, POPULATION, TOOLS
from planweave import (
    DependencyFailed,
    ProjectionError,
    TaskStatus,
    ToolArgumentError,
    ToolCrashed,
    ToolRegistry,
    ToolRejected,
    ToolTimeout,
    parse_plan,
    tool,
)
from planweave.events import EventBus, TaskFinished, TaskSkipped, TaskStarted
from planweave.invoker import Invoker
from planweave.scheduler import Scheduler

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def run_plan(
    plan: str,
    tools: list[Any] | None = None,
    *,
    max_concurrency: int = 64,
    tool_timeout: float = 30,
) -> Scheduler:
    registry = ToolRegistry(tools or TOOLS)
    scheduler = Scheduler(
        registry,
        Invoker(tool_timeout=tool_timeout),
        EventBus(),
        max_concurrency=max_concurrency,
    )
    async with scheduler.running():
        for task in parse_plan(plan, registry):
            scheduler.add(task)
    return scheduler


def span(s: Scheduler, task_id: int) -> tuple[float, float]:
    rec = s.records[task_id]
    assert rec.start is not None
    assert rec.end is not None
    return rec.start, rec.end


async def test_three_independent_half_second_tools_overlap() -> None:
    s = await run_plan(
        '1. population("France", delay=0.5)\n'
        '2. area("France", delay=0.5)\n'
        '3. population("Belgium", delay=0.5)\n'
        "4. join()\n"
    )
    spans = [span(s, i) for i in (1, 2, 3)]
    assert all(s.records[i].status is TaskStatus.DONE for i in (1, 2, 3))
    # Every task started before any of them ended: they ran at the same time.
    assert max(start for start, _ in spans) < min(end for _, end in spans)
    assert GAUGE.peak == 3


async def test_dependent_task_sees_inputs_and_waits_for_them() -> None:
    s = await run_plan(
        '1. population("Netherlands")\n2. area("Netherlands", delay=0.1)\n3. divide($1, $2)\n'
        "4. join()\n"
    )
    assert s.records[3].result == pytest.approx(POPULATION["Netherlands"] / AREA["Netherlands"])
    assert span(s, 3)[0] >= max(span(s, 1)[1], span(s, 2)[1])
    assert s.records[3].task.deps == (1, 2)


async def test_whole_reference_passes_the_object_and_projection_reaches_in() -> None:
    s = await run_plan(
        '1. facts("Belgium")\n2. divide($1.population, $1["area"])\n'
        '3. echo("Belgium: ${1.population} people")\n4. join()\n'
    )
    assert s.records[2].result == pytest.approx(POPULATION["Belgium"] / AREA["Belgium"])
    assert s.records[3].result == f"Belgium: {POPULATION['Belgium']} people"


async def test_failed_dependency_skips_dependents_but_not_independent_tasks() -> None:
    s = await run_plan(
        '1. population("Atlantis")\n2. divide($1, 2)\n3. echo("${2}")\n'
        '4. population("France")\n5. join()\n'
    )
    assert s.records[1].status is TaskStatus.FAILED
    assert isinstance(s.records[1].error, ToolRejected)  # the tool raised ToolFailed
    assert "Atlantis" in s.records[1].error.message
    for i in (2, 3):
        assert s.records[i].status is TaskStatus.SKIPPED
        assert isinstance(s.records[i].error, DependencyFailed)
        assert s.records[i].start is None  # never ran
    assert "task 2" in str(s.records[3].error)  # the chain names its direct upstream
    assert s.records[4].result == POPULATION["France"]


async def test_hanging_async_and_sync_tools_time_out_without_hanging_the_run() -> None:
    release = threading.Event()

    @tool(timeout=0.3)
    async def hang_async(x: int) -> int:
        """Never returns."""
        await anyio.sleep(3600)
        return x

    @tool(timeout=0.3)
    def hang_sync(x: int) -> int:
        """Blocks its thread until released."""
        release.wait(30)
        return x

    try:
        s = await run_plan(
            '1. hang_async(1)\n2. hang_sync(2)\n3. population("France")\n4. join()\n',
            [hang_async, hang_sync, *TOOLS],
        )
    finally:
        release.set()
    # On the run's clock: the hung tools were given up after their timeouts, and the run did
    # not wait for the sync one's thread (released only after it, at 30 s).
    assert max(span(s, i)[1] for i in (1, 2, 3)) < 30
    for i in (1, 2):
        err = s.records[i].error
        assert isinstance(err, ToolTimeout)
        assert err.task_id == i
        assert err.cause == "timeout"
    assert s.records[3].status is TaskStatus.DONE


async def test_an_isolated_tool_holding_the_gil_times_out_and_the_run_goes_on() -> None:
    # Were it not killed, the backtracking would outlast the test's own timeout.
    s = await run_plan(
        "1. backtrack(40)\n"  # 2**40 steps in one C call: only killing its process stops it
        '2. population("France", delay=0.2)\n'
        "3. isolated_divide(6, 3)\n"
        "4. isolated_divide(1, 0)\n"
        "5. worker_pid()\n"
        "6. join()\n",
        [*ISOLATED, *TOOLS],
    )
    err = s.records[1].error
    assert isinstance(err, ToolTimeout)
    assert err.cause == "timeout"
    assert "0.5 s" in err.message
    assert s.records[2].status is TaskStatus.DONE
    # The event loop was never starved by the backtracking: the 0.2 s lookup ended before the
    # backtracking's 0.5 s were up.
    assert span(s, 2)[1] < span(s, 1)[1]
    assert s.records[3].result == 2.0
    assert isinstance(s.records[4].error, ToolRejected)  # ToolFailed, raised in the worker
    assert "cannot divide by zero" in s.records[4].error.message
    assert s.records[5].result != os.getpid()


async def test_sync_tool_does_not_block_the_event_loop() -> None:
    s = await run_plan(
        '1. area("France", delay=0.6)\n2. population("France", delay=0.05)\n3. join()\n'
    )
    # The async lookup finished while the blocking one was still sleeping in its thread.
    assert span(s, 2)[1] < span(s, 1)[1]


async def test_global_concurrency_limit_is_respected() -> None:
    plan = "".join(f'{i}. population("France", delay=0.05)\n' for i in range(1, 11))
    s = await run_plan(plan + "11. join()\n", max_concurrency=3)
    assert GAUGE.calls == 10
    assert GAUGE.peak == 3
    assert all(r.status is TaskStatus.DONE for r in s.records.values())


async def test_per_tool_concurrency_limit_is_respected() -> None:
    gauge = demo_tools.Gauge()

    @tool(max_concurrency=2)
    async def limited(i: int) -> int:
        """A tool that allows two calls at once."""
        with gauge:
            await anyio.sleep(0.05)
        return i

    plan = "".join(f"{i}. limited({i})\n" for i in range(1, 9))
    plan += "".join(f'{i}. population("France")\n' for i in range(9, 13))
    s = await run_plan(plan + "13. join()\n", [limited, *TOOLS])
    assert gauge.peak == 2
    assert GAUGE.peak == 4  # other tools are not held back by the per-tool limit
    assert [s.records[i].result for i in range(1, 9)] == list(range(1, 9))


async def test_cancelling_the_run_cancels_tools_in_flight_and_keeps_finished_results() -> None:
    cancelled, under_way, first_done = anyio.Event(), anyio.Event(), anyio.Event()

    @tool
    async def slow(x: int) -> int:
        """Takes a long time."""
        under_way.set()
        try:
            await anyio.sleep(3600)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return x

    registry = ToolRegistry([slow, *TOOLS])
    bus = EventBus()
    bus.subscribe(
        lambda e: first_done.set() if isinstance(e, TaskFinished) and e.task_id == 1 else None
    )
    scheduler = Scheduler(registry, Invoker(), bus)
    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:

            async def cancel_once_under_way() -> None:
                # Cancelled from outside once the lookup is done and `slow` runs, however long
                # a loaded machine takes to get there.
                await first_done.wait()
                await under_way.wait()
                group.cancel_scope.cancel()

            group.start_soon(cancel_once_under_way)
            async with scheduler.running():
                for task in parse_plan(
                    '1. population("France", delay=0.01)\n2. slow(1)\n3. divide($2, 1)\n'
                    "4. join()\n",
                    registry,
                ):
                    scheduler.add(task)
    assert cancelled.is_set()
    assert scheduler.records[1].status is TaskStatus.DONE
    assert scheduler.records[1].result == POPULATION["France"]
    assert scheduler.records[2].status is TaskStatus.CANCELLED
    assert scheduler.records[3].status is TaskStatus.CANCELLED


async def test_tool_errors_name_task_tool_arguments_and_cause() -> None:
    s = await run_plan(
        '1. divide(1, 0)\n2. facts("France")\n3. echo($2)\n4. divide($2.gdp, 1)\n5. join()\n'
    )
    crash = s.records[1].error
    assert isinstance(crash, ToolCrashed)
    assert crash.cause == "ZeroDivisionError"
    assert str(crash).startswith("task 1 divide(a=1, b=0): ZeroDivisionError")
    wrong_type = s.records[3].error
    assert isinstance(wrong_type, ToolArgumentError)  # a dict where a str is expected
    assert wrong_type.tool == "echo"
    projection = s.records[4].error
    assert isinstance(projection, ProjectionError)
    assert "gdp" in projection.message
    assert "population" in projection.message
    assert projection.task_id == 4


async def test_result_is_announced_before_any_dependent_starts() -> None:
    order: list[tuple[str, int]] = []
    registry = ToolRegistry(TOOLS)
    bus = EventBus(
        [
            lambda e: (
                order.append(("finished", e.task_id)) if isinstance(e, TaskFinished) else None
            ),
            lambda e: order.append(("started", e.task_id)) if isinstance(e, TaskStarted) else None,
        ]
    )
    scheduler = Scheduler(registry, Invoker(), bus)
    async with scheduler.running():
        for task in parse_plan('1. population("France")\n2. divide($1, 2)\n3. join()\n', registry):
            scheduler.add(task)
    assert order.index(("finished", 1)) < order.index(("started", 2))


async def test_a_long_chain_whose_root_fails_is_skipped_without_recursion() -> None:
    chain = "".join(f'{i}. echo("${{{i - 1}}}")\n' for i in range(2, 2_002))
    s = await run_plan(f'1. population("Atlantis")\n{chain}2002. join()\n')
    assert s.records[1].status is TaskStatus.FAILED
    assert all(s.records[i].status is TaskStatus.SKIPPED for i in range(2, 2_002))
    assert "task 2000" in str(s.records[2001].error)


async def test_a_task_reached_twice_by_a_failure_is_skipped_once() -> None:
    # 3 depends on 1 directly and through 2: one TaskSkipped each for 2 and 3.
    bus = EventBus()
    registry = ToolRegistry(TOOLS)
    scheduler = Scheduler(registry, Invoker(), bus)
    plan = '1. population("Atlantis")\n2. echo("${1}")\n3. divide($1, $2)\n4. join()\n'
    async with scheduler.running():
        for task in parse_plan(plan, registry):
            scheduler.add(task)
    assert [e.task_id for e in bus.events if isinstance(e, TaskSkipped)] == [2, 3]


@tool
def length(text: str) -> int:
    """The length of a text."""
    return len(text)


@tool
def count(items: list[str]) -> int:
    """How many items a list has."""
    return len(items)


async def test_interpolation_cannot_amplify_a_plan_into_a_huge_argument() -> None:
    # Each task doubles its input: 30 lines of plan would make a billion characters.
    doubling = "".join(f'{i}. echo("${{{i - 1}}}${{{i - 1}}}")\n' for i in range(2, 31))
    s = await run_plan(f'1. echo("{"x" * 1000}")\n{doubling}31. join()\n', [*TOOLS, length])
    # Task 10 has 1,000 * 2**9 characters; task 11's doubling is refused before its call.
    assert s.records[10].result == "x" * 1000 * 2**9
    rec = s.records[11]
    assert rec.status is TaskStatus.FAILED
    assert rec.start is not None
    assert isinstance(rec.error, ToolArgumentError)
    assert rec.error.cause == "argument_too_large"
    assert "more than 1,000,000 characters" in str(rec.error)
    assert rec.error.task_id == 11
    assert all(s.records[i].status is TaskStatus.SKIPPED for i in range(12, 31))


async def test_a_reference_repeated_in_a_list_is_bounded_as_well() -> None:
    refs = ", ".join(["$2"] * 40)
    plan = f'1. echo("{"x" * 1000}")\n2. echo("{"${1}" * 32}")\n3. count([{refs}])\n'
    s = await run_plan(plan + '4. length("${2}")\n5. join()\n', [*TOOLS, length, count])
    assert isinstance(s.records[3].error, ToolArgumentError)
    assert s.records[4].result == 32_000
