"""The scheduler's suite on every executor: thread, process and a real Ray cluster of two nodes
on loopback.  The tools are real (CPU work, sleeps, crashes, segfaults, hangs); times compared
are the ones the tools saw where they ran."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import executor_tools
from executor_tools import CRASHING, SAFE
from planweave import (
    Runtime,
    Script,
    ScriptedLLM,
    TaskStatus,
    ToolArgumentError,
    ToolCrashed,
    ToolRegistry,
    ToolRejected,
    ToolTimeout,
    UserError,
    parse_plan,
    tool,
)
from planweave.events import EventBus
from planweave.executors import EXECUTORS, SHARED, Backends, ExecutorName
from planweave.invoker import Invoker
from planweave.scheduler import Scheduler

pytestmark = pytest.mark.anyio

TESTS = Path(__file__).parent
RAY = pytest.param("ray", marks=pytest.mark.ray)
ISOLATED = ["process", RAY]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    """Two Ray nodes on this machine: the head (4 CPUs) and a node that alone has the custom
    resource `node2`.  Started once for this module's tests, shut down after them (it holds
    a few idle processes the other tests need not share the CPUs with)."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    # The nodes' workers import the tests' tools, and this planweave.
    src = str(Path(__import__("planweave").__file__).parents[1])
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(TESTS), src, before or ""])
    common = {"include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 4, **common})
    cluster.add_node(num_cpus=2, resources={"node2": 1}, **common)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


@pytest.fixture(params=["thread", "process", RAY])
def executor(request: pytest.FixtureRequest) -> ExecutorName:
    name: ExecutorName = request.param
    return name


def make_backends(request: pytest.FixtureRequest, name: ExecutorName) -> Backends:
    address = request.getfixturevalue("ray_cluster").address if name == "ray" else None
    backends = Backends(name, max_processes=4, ray_address=address)
    request.addfinalizer(backends.close)
    return backends


async def run_plan(plan: str, backends: Backends, tools: list[Any] | None = None) -> Scheduler:
    registry = ToolRegistry(tools or SAFE)
    backends.check(registry.values())
    scheduler = Scheduler(registry, Invoker(tool_timeout=60, backends=backends), EventBus())
    with anyio.fail_after(120):
        async with scheduler.running():
            for task in parse_plan(plan, registry):
                scheduler.add(task)
    return scheduler


async def test_wide_calls_run_at_the_same_time(
    request: pytest.FixtureRequest, executor: ExecutorName, tmp_path: Path
) -> None:
    backends = make_backends(request, executor)
    # Each call waits where it runs until all three have arrived: calls run one at a time
    # would never all meet, however slow the machine.
    plan = "".join(f'{i}. meet("{tmp_path}", "{i}", 3)\n' for i in (1, 2, 3)) + "4. join()\n"
    s = await run_plan(plan, backends, [executor_tools.meet])
    assert all(s.records[i].error is None for i in (1, 2, 3)), [
        s.records[i].error for i in (1, 2, 3)
    ]
    seen = [s.records[i].result for i in (1, 2, 3)]
    # Every call began, where it ran, before any of them ended.
    assert max(start for _, start, _ in seen) < min(end for _, _, end in seen)
    pids = {int(pid) for pid, _, _ in seen}
    if executor == "thread":
        assert pids == {os.getpid()}
    else:
        assert os.getpid() not in pids
        assert len(pids) == 3  # one worker per call in flight


async def test_results_flow_along_dependencies(
    request: pytest.FixtureRequest, executor: ExecutorName
) -> None:
    s = await run_plan(
        "1. square(3)\n2. square(4)\n3. add($1, $2)\n4. join()\n", make_backends(request, executor)
    )
    assert s.records[3].result == 25
    start, end = s.records[3].start, s.records[1].end
    assert start is not None
    assert end is not None
    assert start >= end


async def test_a_tools_failures_keep_their_classes(
    request: pytest.FixtureRequest, executor: ExecutorName
) -> None:
    s = await run_plan(
        "1. refuse(7)\n2. divide(1, 0)\n3. add($2, 1)\n4. square(6)\n5. join()\n",
        make_backends(request, executor),
    )
    refused = s.records[1].error
    assert isinstance(refused, ToolRejected)
    assert "no answer for 7" in refused.message
    crash = s.records[2].error
    assert isinstance(crash, ToolCrashed)
    assert crash.cause == "ZeroDivisionError"
    assert str(crash).startswith("task 2 divide(a=1, b=0): ZeroDivisionError")
    assert s.records[3].status is TaskStatus.SKIPPED
    assert s.records[4].result == 36


@pytest.mark.parametrize("name", ISOLATED)
async def test_a_call_past_its_timeout_is_stopped_and_the_run_goes_on(
    request: pytest.FixtureRequest, name: ExecutorName, tmp_path: Path
) -> None:
    backends = make_backends(request, name)
    where = tmp_path / "pid"
    s = await run_plan(f'1. hang_recording("{where}")\n2. square(9)\n3. join()\n', backends)
    err = s.records[1].error
    assert isinstance(err, ToolTimeout)
    assert err.cause == "timeout"
    assert s.records[2].result == 81
    # The worker that held the GIL was killed (Ray kills it asynchronously: wait for that).
    pid = int(where.read_text())
    assert await anyio.to_thread.run_sync(_gone, pid)
    after = await run_plan("1. pid()\n2. join()\n", backends)
    assert after.records[1].result not in (pid, os.getpid())


def _gone(pid: int) -> bool:
    """Whether process `pid` ends within 30 s (at once for the pool, which reaps it)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("name", ISOLATED)
async def test_a_worker_that_crashes_fails_its_task_alone(
    request: pytest.FixtureRequest, name: ExecutorName
) -> None:
    backends = make_backends(request, name)
    s = await run_plan(
        "1. hard_exit(3)\n2. segfault()\n3. nap(0.5)\n4. square(5)\n5. join()\n",
        backends,
        [*SAFE, *CRASHING],
    )
    for i in (1, 2):
        err = s.records[i].error
        assert isinstance(err, ToolCrashed)
        assert err.cause == "WorkerLost"
    if name == "process":
        assert "exited with status 3" in str(s.records[1].error)
        assert "killed by SIGSEGV" in str(s.records[2].error)
    assert s.records[3].status is TaskStatus.DONE  # ran beside the crashes, unaffected
    assert s.records[4].result == 25
    again = await run_plan("1. square(11)\n2. join()\n", backends)  # the workers were replaced
    assert again.records[1].result == 121


def runtime_on(request: pytest.FixtureRequest, name: ExecutorName, script: Script) -> Runtime:
    address = request.getfixturevalue("ray_cluster").address if name == "ray" else None
    runtime = Runtime(SAFE + CRASHING, ScriptedLLM(script), executor=name, ray_address=address)
    request.addfinalizer(runtime.close)
    return runtime


def test_recovery_retries_a_transient_failure_on_every_executor(
    request: pytest.FixtureRequest, executor: ExecutorName, tmp_path: Path
) -> None:
    plan = f'1. flaky("{tmp_path / "calls"}", 2)\n2. add($1, 40)\n3. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[plan], joiner=["Thought: 2 has it\nAction: Finish(43)"])
    result = runtime_on(request, executor, script).run("q")
    assert result.answer == "43"
    tasks = {t.task.id: t for t in result.tasks}
    assert tasks[1].attempts == 3  # RetryTool twice (planweave's retries, not Ray's)
    assert tasks[2].result == 43


@pytest.mark.parametrize("name", ISOLATED)
def test_a_run_with_crashing_tools_still_answers_with_the_rest(
    request: pytest.FixtureRequest, name: ExecutorName
) -> None:
    plan = "1. segfault()\n2. hard_exit(1)\n3. square(6)\n4. add($3, 7)\n5. join()\n<END_OF_PLAN>"
    script = Script.by_purpose(planner=[plan], joiner=["Thought: 4 has it\nAction: Finish(43)"])
    runtime = runtime_on(request, name, script)
    result = runtime.run("q")
    assert result.answer == "43"
    tasks = {t.task.id: t for t in result.tasks}
    for i in (1, 2):
        assert isinstance(tasks[i].error, ToolCrashed)
        assert tasks[i].attempts == 1  # a crash is not retried by default
    assert tasks[4].result == 43
    assert runtime.settings.executor == name


def test_a_tool_no_worker_can_import_is_refused_when_the_runtime_is_built() -> None:
    def closure(x: int) -> int:
        """Defined inside a function."""
        return x

    def lambda_default(f: Any = lambda: 1) -> int:
        """A default that does not pickle."""
        return 1

    llm = ScriptedLLM(Script.by_purpose())
    Runtime([closure], llm)  # threads run anything
    with pytest.raises(UserError, match="closure or a lambda"):
        Runtime([closure], llm, executor="process")
    with pytest.raises(UserError, match="does not pickle"):
        Runtime([tool(_with_lambda)], llm, executor="ray")
    with pytest.raises(UserError, match="cannot be isolated"):
        tool(executor="process")(lambda_default)
    with pytest.raises(UserError, match="GPUs"):
        Runtime([tool(gpus=1)(executor_tools.square.fn)], llm, executor="process")
    with pytest.raises(UserError, match="executor must be"):
        Runtime([executor_tools.square], llm, executor="gpu")


def test_every_executor_name_has_its_backend() -> None:
    # A new backend is its module and one line in SHARED: the names come from it.
    assert EXECUTORS[0] == "thread"
    assert sorted(SHARED) == sorted(EXECUTORS[1:])


def _with_lambda(x: int, f: Any = lambda: 1) -> int:
    """A top-level function whose default is a lambda."""
    return x


async def test_a_tool_pinned_to_the_process_pool_runs_there_whatever_the_run_uses(
    request: pytest.FixtureRequest,
) -> None:
    s = await run_plan(
        "1. pinned_to_process()\n2. pid()\n3. join()\n",
        make_backends(request, "thread"),
        [executor_tools.pinned_to_process, *SAFE],
    )
    assert s.records[1].result != os.getpid()
    assert s.records[2].result == os.getpid()


async def test_the_process_pool_bounds_a_calls_memory(request: pytest.FixtureRequest) -> None:
    s = await run_plan(
        "1. allocate(10)\n2. allocate(4000)\n3. join()\n", make_backends(request, "process")
    )
    assert s.records[1].result == 10_000_000
    err = s.records[2].error
    assert isinstance(err, ToolCrashed)
    assert err.cause == "MemoryError"


@pytest.mark.ray
async def test_a_task_needing_a_resource_of_the_second_ray_node_lands_there(
    request: pytest.FixtureRequest,
) -> None:
    cluster = request.getfixturevalue("ray_cluster")
    (node2,) = cluster.worker_nodes
    s = await run_plan(
        "1. on_node2()\n2. on_node2()\n3. join()\n",
        make_backends(request, "ray"),
        [executor_tools.on_node2, executor_tools.node_id],
    )
    assert s.records[1].result == s.records[2].result == node2.node_id


@pytest.mark.ray
async def test_a_task_no_ray_node_can_hold_fails_at_once(request: pytest.FixtureRequest) -> None:
    s = await run_plan(
        "1. on_node3()\n2. node_id()\n3. join()\n",
        make_backends(request, "ray"),
        [executor_tools.on_node3, executor_tools.node_id],
    )
    err = s.records[1].error
    assert isinstance(err, ToolCrashed)  # not a timeout: Ray would have queued it for ever
    assert err.cause == "unplaceable"
    assert "no node of the Ray cluster has node3=1" in err.message
    assert s.records[2].status is TaskStatus.DONE


async def test_a_call_holds_as_many_pool_workers_as_it_needs_cpus(
    request: pytest.FixtureRequest,
) -> None:
    backends = Backends("process", max_processes=2)
    request.addfinalizer(backends.close)
    plan = "1. nap(0.4)\n2. nap_wide(0.4)\n3. nap(0.4)\n4. join()\n"
    s = await run_plan(plan, backends, [executor_tools.nap, executor_tools.nap_wide])
    (_, wide_start, wide_end) = s.records[2].result
    for i in (1, 3):
        _, start, end = s.records[i].result
        assert end <= wide_start or start >= wide_end  # never beside the two-CPU call


async def test_arguments_that_cannot_travel_are_an_argument_error(
    request: pytest.FixtureRequest,
) -> None:
    s = await run_plan(
        "1. make_lock()\n2. describe($1)\n3. join()\n", make_backends(request, "process")
    )
    err = s.records[2].error
    assert isinstance(err, ToolArgumentError)
    assert err.cause == "not_shippable"
    assert "cannot be sent to a worker process" in err.message
