"""The `process` executor: a pool of worker processes on this machine.

Each call runs in a worker that runs nothing else meanwhile; a worker that crashes, exits or is
killed fails only the call it was running (`WorkerLost`) and is not reused: a new worker takes
its place at the next call.  A call that is cancelled (its timeout, the run's cancellation) has
its worker killed, so a tool that never returns, or never releases the GIL, is stopped.  Each
worker leads a process group of its own, and the whole group is killed: the processes a tool
started (a subprocess it waits on) end with it, unless one made a session of its own.
Workers start from a fork server that has planweave loaded, so a new one starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import pickle
import signal
import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterator
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import Any, ClassVar

import anyio

from ..errors import UserError
from ..tools import ExecutorName, Tool
from .base import Backend, Call, NotShippable, Outcome, RemoteFailure, WorkerLost, call_target

__all__ = ["ProcessBackend"]


class ProcessBackend(Backend):
    """Runs calls in at most `max_workers` worker processes (default: one per CPU).  A tool's
    `cpus` are worker slots its call holds (so a call that runs threads of its own keeps other
    calls off those CPUs); its `memory` bounds the worker's address space during the call (a
    MemoryError past it).  The pool has no GPUs and no custom resources: those are Ray's."""

    name: ClassVar[ExecutorName] = "process"
    isolated: ClassVar[bool] = True

    def __init__(self, max_workers: int | None = None) -> None:
        self.size = max_workers or os.cpu_count() or 2
        if self.size < 1:
            raise UserError(f"the process pool needs at least one worker, not {self.size}")
        methods = multiprocessing.get_all_start_methods()
        self._context = multiprocessing.get_context(
            "forkserver" if "forkserver" in methods else "spawn"
        )
        if "forkserver" in methods:
            # Forked from a server that imported these once; the main script is loaded there so
            # that tools defined in it are found (it is imported, as `__mp_main__`, not run).
            self._context.set_forkserver_preload(["__main__", __name__])
        self._slots = _Slots(self.size)
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()
        self._finalizer = weakref.finalize(self, _stop_all, self._workers)

    def check(self, tool: Tool) -> None:
        super().check(tool)
        placement = tool.placement
        if placement.gpus:
            raise UserError(
                f"tool {tool.name!r} needs GPUs, which the process pool does not have: run it on "
                "the ray executor"
            )
        if placement.resources:
            raise UserError(
                f"tool {tool.name!r} needs resources {dict(placement.resources)}, which only the "
                "ray executor places"
            )
        if _slots_for(tool) > self.size:
            raise UserError(
                f"tool {tool.name!r} needs {placement.cpus:g} CPUs; the process pool has "
                f"{self.size} workers"
            )

    async def run(self, call: Call) -> Any:
        fn = call.tool.fn
        try:
            payload = pickle.dumps(
                (
                    (fn.__module__, fn.__qualname__),
                    call.positional,
                    call.keywords,
                    call.tool.placement.memory,
                ),
                pickle.HIGHEST_PROTOCOL,
            )
        except Exception as exc:
            raise NotShippable(f"{type(exc).__name__}: {exc}") from exc
        async with self._slots.hold(_slots_for(call.tool)):
            worker = await self._take()
            try:
                kind, value = await worker.call(payload)
            except BaseException:
                # Timed out, cancelled or dead: its state is unknown, so it is never reused.
                self._workers.discard(worker)
                worker.kill()
                raise
            self._idle.append(worker)
        if kind == "raised":
            raise value
        return value

    async def _take(self) -> _Worker:
        while self._idle:
            worker = self._idle.pop()
            if worker.process.is_alive():
                return worker
            self._workers.discard(worker)  # died while idle (killed from outside)
            worker.kill()
        # Shielded: a worker started for a call cancelled meanwhile is still one to stop.
        with anyio.CancelScope(shield=True):
            worker = await anyio.to_thread.run_sync(_Worker, self._context)
        self._workers.add(worker)
        return worker

    def close(self) -> None:
        self._idle.clear()
        self._finalizer()


def _slots_for(tool: Tool) -> int:
    return max(1, math.ceil(tool.placement.cpus))


def _stop_all(workers: set[_Worker]) -> None:
    for worker in list(workers):
        worker.stop()
    workers.clear()


class _Slots:
    """A weighted capacity: a call holds as many of the pool's slots as it needs, and calls get
    them in the order they asked (a big call is not starved by small ones)."""

    def __init__(self, total: int) -> None:
        self.free = total
        self._waiting: deque[tuple[int, anyio.Event]] = deque()

    @contextlib.asynccontextmanager
    async def hold(self, need: int) -> AsyncIterator[None]:
        if self._waiting or self.free < need:
            entry = (need, anyio.Event())
            self._waiting.append(entry)
            try:
                await entry[1].wait()
            except BaseException:
                if entry in self._waiting:
                    self._waiting.remove(entry)
                else:  # granted as it was cancelled: hand the slots on
                    self._release(need)
                raise
        else:
            self.free -= need
        try:
            yield
        finally:
            self._release(need)

    def _release(self, count: int) -> None:
        self.free += count
        while self._waiting and self._waiting[0][0] <= self.free:
            need, granted = self._waiting.popleft()
            self.free -= need
            granted.set()


class _Worker:
    """One worker process and the pipe its calls go through."""

    def __init__(self, context: BaseContext) -> None:
        self.conn, child = context.Pipe()
        process: BaseProcess = context.Process(  # type: ignore[attr-defined]
            target=_serve, args=(child,), name="planweave worker", daemon=True
        )
        self.process = process
        process.start()
        child.close()

    async def call(self, payload: bytes) -> Outcome:
        try:
            self.conn.send_bytes(payload)
            # Event-driven: the loop wakes when the answer (or the pipe's end) arrives.
            await anyio.wait_readable(self.conn.fileno())
            outcome: Outcome = pickle.loads(self.conn.recv_bytes())
        except (EOFError, OSError):
            raise WorkerLost(self._ended()) from None
        return outcome

    def _ended(self) -> str:
        self.process.join(5)
        code = self.process.exitcode
        if code is None:
            return "the worker process closed its pipe"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"the worker process was killed by {signal.Signals(-code).name}"
        return f"the worker process exited with status {code}"

    def kill(self) -> None:
        _kill_group(self.process)
        self.process.kill()
        self.process.join(5)
        self.conn.close()
        self.process.close()

    def stop(self) -> None:
        """Let an idle worker end on its own (it ends when its pipe closes); kill it if not."""
        self.conn.close()
        self.process.join(2)
        if self.process.exitcode is None:
            _kill_group(self.process)
            self.process.kill()
            self.process.join(2)
        self.process.close()


def _kill_group(process: BaseProcess) -> None:
    """SIGKILL the process group `process` leads, with whatever its tool started in it.  Only
    a group it leads: before the worker has made its own (it does so first thing), it shares
    its parent's, and nothing of a tool runs yet.  Only while it lives: a dead worker's id may
    name another process by now."""
    pid = process.pid
    if pid is None or not hasattr(os, "killpg") or process.exitcode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)


def _serve(conn: Connection) -> None:
    """A worker's life: run calls one at a time until the runtime closes the pipe."""
    if hasattr(os, "setpgid"):
        # A group of its own, which the processes its tools start join: killed together.
        os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the runtime's to handle
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            target, positional, keywords, memory = pickle.loads(data)
        except Exception as exc:
            outcome: Outcome = ("raised", _failure("the arguments cannot be read here", exc))
        else:
            with _address_space(memory):
                outcome = call_target(target, positional, keywords)
        try:
            answer = pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            answer = pickle.dumps(("raised", _failure("the result cannot be sent back", exc)))
        conn.send_bytes(answer)


def _failure(what: str, exc: Exception) -> RemoteFailure:
    return RemoteFailure(f"{what}: {type(exc).__name__}: {exc}", type(exc).__name__, "crash")


@contextlib.contextmanager
def _address_space(limit: int | None) -> Iterator[None]:
    """Bound the worker's address space to `limit` bytes while a call runs (where the platform
    lets a process limit itself)."""
    if limit is None:
        yield
        return
    try:
        import resource
    except ImportError:  # not on this platform
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard < 0 else min(limit, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
