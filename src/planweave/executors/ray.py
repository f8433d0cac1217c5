"""The `ray` executor: each call a Ray task (`planweave[ray]`), placed by the tool's `cpus`,
`gpus`, `memory` and custom `resources`.

Ray joins the cluster at `address` (or env RAY_ADDRESS); without one it starts a local Ray on
loopback, with no dashboard and no worker logs copied to the terminal, and shuts it down on
`close`.  planweave keeps its own retries and timeouts: a task is never retried by Ray, and one
that times out is cancelled with `force=True` (its worker is killed).  Ray's errors are
translated here, once: a dead worker, node or object is `WorkerLost`, a task Ray could not run is
a `RemoteFailure`; no Ray exception reaches the runtime.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from types import ModuleType
from typing import Any, ClassVar

import anyio

from ..errors import UserError
from ..tools import ExecutorName
from .base import Backend, Call, NotShippable, RemoteFailure, Target, WorkerLost, call_target

__all__ = ["RayBackend"]

_INSTALL = "the ray executor needs Ray: pip install 'planweave[ray]'"
_LOCAL_CPUS = 8


def _ray() -> ModuleType:
    try:
        import ray
    except ImportError as exc:
        raise UserError(f"{_INSTALL} ({exc})") from None
    return ray


class RayBackend(Backend):
    """Runs calls as Ray tasks on the cluster at `address` (None: env RAY_ADDRESS, else a local
    Ray with `num_cpus` CPUs, default this machine's up to 8: Ray starts a worker process per
    CPU, and a larger machine is better served by a cluster started with `ray start`)."""

    name: ClassVar[ExecutorName] = "ray"
    isolated: ClassVar[bool] = True

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None) -> None:
        _ray()  # fail now, with the install line, rather than at the first call
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.num_cpus = num_cpus
        self._started = False  # a local Ray this backend started (and shuts down)
        self._lock = threading.Lock()
        self._remote: Any = None
        self._placeable: set[frozenset[tuple[str, float]]] = set()

    def connect(self) -> None:
        """Join the cluster, or start the local Ray (blocking; done once, at the first call)."""
        with self._lock:
            if self._remote is not None:
                return
            ray = _ray()
            if not ray.is_initialized():
                try:
                    if self.address is None:
                        self._start_local(ray)
                    else:
                        ray.init(
                            address=self.address,
                            log_to_driver=False,
                            logging_level=logging.WARNING,
                        )
                except Exception as exc:  # whatever Ray raises, said once, as ours
                    where = self.address or "a local Ray"
                    raise UserError(f"the ray executor cannot start {where}: {exc}") from exc
            self._remote = ray.remote(max_retries=0, retry_exceptions=False)(call_target)

    def _start_local(self, ray: ModuleType) -> None:
        # Workers find the tools' modules where this process does.
        path = os.pathsep.join(p for p in sys.path if p)
        ray.init(
            address="local",
            num_cpus=self.num_cpus or min(os.cpu_count() or 2, _LOCAL_CPUS),
            include_dashboard=False,
            log_to_driver=False,
            # Quiet: Ray's notes on signal handlers and tokens are not the user's business.
            logging_level=logging.ERROR,
            _node_ip_address="127.0.0.1",
            runtime_env={"env_vars": {"PYTHONPATH": path}},
        )
        self._started = True

    async def ready(self) -> None:
        if self._remote is None:
            await anyio.to_thread.run_sync(self.connect)

    async def run(self, call: Call) -> Any:
        await self.ready()
        ray = _ray()
        placement = call.tool.placement
        options: dict[str, Any] = {
            "num_cpus": placement.cpus,
            "num_gpus": placement.gpus,
            "name": f"planweave:{call.tool.name}",
        }
        if placement.memory is not None:
            options["memory"] = placement.memory
        if placement.resources:
            options["resources"] = dict(placement.resources)
        needs = _needs(options)
        if needs not in self._placeable:
            # A task no node can hold would wait in Ray's queue until its timeout: say why now.
            missing = await anyio.to_thread.run_sync(_unplaceable, ray, needs)
            if missing:
                raise RemoteFailure(
                    f"no node of the Ray cluster has {missing}", "unplaceable", "crash"
                )
            self._placeable.add(needs)
        fn = call.tool.fn
        # A function of the main script goes by value: a Ray worker does not run that script.
        target: Target = fn if fn.__module__ == "__main__" else (fn.__module__, fn.__qualname__)
        try:
            ref = self._remote.options(**options).remote(target, call.positional, call.keywords)
        except TypeError as exc:  # Ray's word for an argument it cannot serialize
            raise NotShippable(str(exc).splitlines()[0]) from exc
        try:
            kind, value = await asyncio.wrap_future(ref.future())
        except ray.exceptions.RayError as exc:
            raise _translated(ray, exc) from exc
        except BaseException:
            # Cancelled (a timeout, the run's cancellation): stop the task where it runs.
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
            raise
        if kind == "raised":
            raise value
        return value

    def close(self) -> None:
        with self._lock:
            if self._started:
                _ray().shutdown()
                self._started = False
            self._remote = None


def _needs(options: dict[str, Any]) -> frozenset[tuple[str, float]]:
    """What a task asks of one node, in Ray's resource names."""
    needs = {"CPU": options["num_cpus"], "GPU": options["num_gpus"]}
    needs["memory"] = options.get("memory", 0)
    needs.update(options.get("resources", {}))
    return frozenset((k, float(v)) for k, v in needs.items() if v)


def _unplaceable(ray: ModuleType, needs: frozenset[tuple[str, float]]) -> str | None:
    """None if some live node has all of `needs`; else what the closest node lacks."""
    shortfalls = []
    for node in ray.nodes():
        if node.get("Alive"):
            have = node.get("Resources", {})
            shortfalls.append([f"{k}={v:g}" for k, v in sorted(needs) if have.get(k, 0) < v])
    if not shortfalls:
        return "no live node"
    closest = min(shortfalls, key=len)
    return ", ".join(closest) if closest else None


def _translated(ray: ModuleType, exc: Exception) -> Exception:
    """A Ray error as one of the executor contract's."""
    first = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, ray.exceptions.RayTaskError):
        cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) else exc
        return RemoteFailure(f"the Ray task failed: {first}", type(cause).__name__, "crash")
    return WorkerLost(f"{type(exc).__name__}: {first}")
