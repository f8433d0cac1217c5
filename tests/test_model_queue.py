"""The one model's queue (`planweave.llm.queue`): turns first come first served, what a waiting
call hears, cancellation that leaves no turn held, two event loops in two threads, and the
events a run's meter makes of it."""

from __future__ import annotations

import threading
import time

import anyio
import pytest
from anyio.abc import TaskGroup

from one_model import OneAtATime
from planweave import ModelAcquired, ModelWaiting, Reply, ScriptedLLM
from planweave.cli.view import DagView
from planweave.events import Event, EventBus, LLMCallFinished, LLMCallStarted
from planweave.llm.base import LLMRequest, Message
from planweave.llm.queue import ModelQueue, listening
from planweave.meter import MeteredLLM

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Ear:
    """A listener that keeps what it heard and can be waited on until it hears a place."""

    def __init__(self) -> None:
        self.heard: list[tuple[int, float]] = []
        self._news = anyio.Event()

    def __call__(self, ahead: int, waited: float) -> None:
        self.heard.append((ahead, waited))
        self._news.set()
        self._news = anyio.Event()

    @property
    def aheads(self) -> list[int]:
        return [ahead for ahead, _ in self.heard]

    async def hears(self, ahead: int) -> None:
        with anyio.fail_after(5):
            while ahead not in self.aheads:
                await self._news.wait()


async def _queue_up(
    group: TaskGroup, queue: ModelQueue, name: str, got: list[str], ear: Ear
) -> anyio.CancelScope:
    """Start call `name`: it waits its turn, notes in `got` that it has it, holds it a moment;
    returns its cancel scope once it waits in the queue."""
    scope = anyio.CancelScope()

    async def call() -> None:
        with scope, listening(ear):
            await queue.acquire()
            try:
                got.append(name)
                await anyio.sleep(0.01)
            finally:
                queue.release()

    group.start_soon(call)
    await ear.hears(queue.waiting + 1)
    return scope


async def test_calls_get_the_model_in_the_order_they_asked_and_hear_their_place() -> None:
    queue = ModelQueue()
    await queue.acquire()  # someone has the model
    got: list[str] = []
    ears = {name: Ear() for name in "abcde"}
    async with anyio.create_task_group() as group:
        for name, ear in ears.items():
            await _queue_up(group, queue, name, got, ear)
        assert queue.waiting == 5
        assert [ear.aheads for ear in ears.values()] == [[1], [2], [3], [4], [5]]
        queue.release()
    assert got == list("abcde")
    for i, ear in enumerate(ears.values()):
        # its place as each call before it ended, then 0: it has the model
        assert ear.aheads == [*range(i + 1, 0, -1), 0]
        assert ear.heard[-1][1] >= 0.01 * i  # how long it waited
    assert not queue.busy
    assert queue.waiting == 0


async def test_a_call_that_gets_the_model_at_once_hears_nothing() -> None:
    queue = ModelQueue()
    ear = Ear()
    with listening(ear):
        async with queue.turn():
            assert queue.busy
    assert ear.heard == []
    assert not queue.busy


async def test_a_cancelled_waiter_leaves_the_queue_and_the_others_move_up() -> None:
    queue = ModelQueue()
    await queue.acquire()
    got: list[str] = []
    ears = {name: Ear() for name in "abc"}
    async with anyio.create_task_group() as group:
        scopes = {name: await _queue_up(group, queue, name, got, ears[name]) for name in "abc"}
        scopes["b"].cancel()
        await ears["c"].hears(2)  # b left: c moved up
        assert queue.waiting == 2
        queue.release()
    assert got == ["a", "c"]
    assert ears["b"].heard == [(2, 0.0)]  # it never had the model
    assert ears["c"].aheads == [3, 2, 1, 0]
    assert not queue.busy
    assert queue.waiting == 0


async def test_a_waiter_cancelled_as_its_turn_comes_passes_it_on() -> None:
    queue = ModelQueue()
    await queue.acquire()
    got: list[str] = []
    async with anyio.create_task_group() as group:
        first = await _queue_up(group, queue, "a", got, Ear())
        await _queue_up(group, queue, "b", got, Ear())
        # a is cancelled, and the turn goes to it before it runs again: b must get it.
        first.cancel()
        queue.release()
    assert got == ["b"]
    assert not queue.busy
    assert queue.waiting == 0


async def test_cancelling_the_holder_s_consumer_releases_the_model() -> None:
    queue = ModelQueue()
    got: list[str] = []
    async with anyio.create_task_group() as group:
        hold = anyio.Event()

        async def holder() -> None:
            async with queue.turn():
                hold.set()
                await anyio.sleep(3600)

        group.start_soon(holder)
        await hold.wait()
        await _queue_up(group, queue, "next", got, Ear())
        group.cancel_scope.cancel()
    assert not queue.busy
    async with queue.turn():  # nothing was left held
        pass


def test_two_event_loops_in_two_threads_take_turns() -> None:
    queue = ModelQueue()
    inside = threading.Lock()
    overlaps: list[str] = []
    turns: list[str] = []

    def loop(name: str) -> None:
        def work() -> None:  # the model's work, in a worker thread as the embedded model's
            if not inside.acquire(blocking=False):
                overlaps.append(name)
                return
            turns.append(name)
            time.sleep(0.001)
            inside.release()

        async def main() -> None:
            for _ in range(20):
                async with queue.turn():
                    await anyio.to_thread.run_sync(work)
                await anyio.lowlevel.checkpoint()

        anyio.run(main)

    threads = [threading.Thread(target=loop, args=(n,)) for n in ("x", "y")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not any(t.is_alive() for t in threads), "a waiter in the other loop was never woken"
    assert overlaps == []
    assert sorted(turns) == ["x"] * 20 + ["y"] * 20
    assert not queue.busy


async def test_a_run_s_meter_reports_its_call_s_wait_as_events() -> None:
    # Each reply takes a moment, so that the third call hears its place move up.
    replies = ScriptedLLM(lambda messages: Reply("ok", ttft=0.05))
    model = OneAtATime(replies, lambda r: r.messages[0].content)
    runs = ("second", "third")
    buses = {name: EventBus() for name in runs}
    queued = {name: anyio.Event() for name in runs}
    for name in runs:
        buses[name].subscribe(
            lambda e, name=name: isinstance(e, ModelWaiting) and queued[name].set()
        )

    async def ask(name: str) -> None:
        request = LLMRequest([Message("user", name)], purpose="joiner")
        await MeteredLLM(model, buses[name]).complete(request)

    await model.queue.acquire()  # another run's call has the model
    async with anyio.create_task_group() as group:
        for name in runs:
            group.start_soon(ask, name)
            with anyio.fail_after(5):
                await queued[name].wait()
        model.queue.release()

    def kinds(name: str) -> list[tuple[str, int | None]]:
        out: list[tuple[str, int | None]] = []
        event: Event
        for event in buses[name].events:
            assert isinstance(
                event, LLMCallStarted | LLMCallFinished | ModelWaiting | ModelAcquired
            )
            out.append((event.kind, getattr(event, "ahead", None)))
        return out

    assert model.granted == ["second", "third"]
    started, finished = ("llm_call_started", None), ("llm_call_finished", None)
    assert kinds("second") == [started, ("model_waiting", 1), ("model_acquired", None), finished]
    assert kinds("third") == [
        started,
        ("model_waiting", 2),
        ("model_waiting", 1),
        ("model_acquired", None),
        finished,
    ]
    third = next(e for e in buses["third"].events if isinstance(e, ModelAcquired))
    assert third.call == 1
    assert third.purpose == "joiner"
    assert third.waited > 0


def test_the_terminal_s_live_view_says_a_call_waits_for_the_model() -> None:
    view = DagView()
    view(LLMCallStarted(call=1, purpose="planner", model="qwen"))
    view(ModelWaiting(call=1, purpose="planner", ahead=2))
    assert view.llm_state == "planner waiting for the model (qwen), 2 ahead…"
    view(ModelWaiting(call=1, purpose="planner", ahead=1))
    assert view.llm_state.endswith("1 ahead…")
    view(ModelAcquired(call=1, purpose="planner", waited=1.5))
    assert view.llm_state == "planner (qwen) streaming…"
