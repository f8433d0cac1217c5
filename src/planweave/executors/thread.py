"""The `thread` executor, the default: calls run in the runtime's own process, on threads
bounded by a `CapacityLimiter`, so a blocking tool never blocks the event loop."""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import anyio

from ..tools import ExecutorName
from .base import Backend, Call

__all__ = ["ThreadBackend"]


class ThreadBackend(Backend):
    """At most `max_threads` calls at once.  A call that times out has its thread abandoned (a
    thread cannot be stopped): only an isolated executor stops a tool that never returns."""

    name: ClassVar[ExecutorName] = "thread"
    isolated: ClassVar[bool] = False

    def __init__(self, max_threads: int = 32) -> None:
        self.limiter = anyio.CapacityLimiter(max_threads)

    async def run(self, call: Call) -> Any:
        fn = functools.partial(call.tool.fn, *call.positional, **call.keywords)
        return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True, limiter=self.limiter)
