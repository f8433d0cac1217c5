"""Executors: where tool calls run.  One module per backend, all meeting `base.Backend`:

- `thread` (the default): threads of the runtime's own process;
- `process`: a pool of worker processes on this machine (a crash or a hang fails one task);
- `ray`: Ray tasks on a cluster (`planweave[ray]`).

A new backend is its module and one line in `SHARED` (its name and factory); settings, the CLI's
`--executor` and `@tool(executor=...)` check names against `EXECUTORS`, made from it.

Async tools always run on the event loop.  A sync tool runs on the executor it names
(`@tool(executor=...)`), else on the run's; `@tool(isolate=True)` means "never in the runtime's
process": the process pool when the run's executor is `thread`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..errors import UserError
from ..tools import ExecutorName, Tool
from .base import Backend, Call, NotShippable, RemoteFailure, WorkerLost, failure_kind
from .process import ProcessBackend
from .thread import ThreadBackend

__all__ = [
    "EXECUTORS",
    "SHARED",
    "Backend",
    "Backends",
    "Call",
    "ExecutorName",
    "NotShippable",
    "ProcessBackend",
    "RemoteFailure",
    "ThreadBackend",
    "WorkerLost",
    "failure_kind",
]


class Backends:
    """The isolated backends a runtime's runs share (the process pool, the Ray connection),
    made when a tool first needs them, and the run's `default` executor.  Threads are each
    run's own (`ThreadBackend`).  `max_processes` sizes the pool; `ray_address` is the cluster
    to join (None: env RAY_ADDRESS, else a local Ray started on loopback)."""

    def __init__(
        self,
        default: ExecutorName = "thread",
        *,
        max_processes: int | None = None,
        ray_address: str | None = None,
    ) -> None:
        if default not in EXECUTORS:
            raise UserError(f"executor must be one of {', '.join(EXECUTORS)}, not {default!r}")
        self.default: ExecutorName = default
        self.max_processes = max_processes
        self.ray_address = ray_address
        self._made: dict[ExecutorName, Backend] = {}

    def route(self, tool: Tool) -> ExecutorName:
        """The executor `tool`'s calls run on."""
        if tool.is_async:
            return "thread"  # on the event loop: async tools wait on I/O, not on CPUs
        if tool.context is not None:
            return "thread"  # its RunContext holds this process's handles
        if tool.executor is not None:
            return tool.executor
        if tool.isolate and self.default == "thread":
            return "process"
        return self.default

    def get(self, name: ExecutorName) -> Backend:
        """The shared backend `name` (not `thread`: each run has its own threads)."""
        backend = self._made.get(name)
        if backend is None:
            make = SHARED.get(name)
            if make is None:
                raise ValueError(f"no shared backend {name!r}")
            backend = self._made[name] = make(self)
        return backend

    def check(self, tools: Iterable[Tool]) -> None:
        """Raise UserError for a tool its executor cannot run (a closure sent to a worker
        process, GPUs asked of the process pool): when the runtime is built, not mid-run."""
        for tool in tools:
            name = self.route(tool)
            if name != "thread":
                self.get(name).check(tool)

    def close(self) -> None:
        """Stop the workers (a Ray this started is shut down)."""
        for backend in self._made.values():
            backend.close()
        self._made.clear()


def _ray(backends: Backends) -> Backend:
    from .ray import RayBackend  # planweave[ray]: imported when a tool first runs there

    return RayBackend(backends.ray_address)


# The backends runs share, by executor name ("thread" is each run's own, `ThreadBackend`).
SHARED: dict[ExecutorName, Callable[[Backends], Backend]] = {
    "process": lambda backends: ProcessBackend(backends.max_processes),
    "ray": _ray,
}

# The executor names there are.
EXECUTORS: tuple[ExecutorName, ...] = ("thread", *SHARED)
