"""The executor contract: a `Backend` runs one call of a sync tool and returns its outcome.

A backend only runs the callable.  Everything else about a task (argument checks, timeouts,
cancellation, failure classes, events, recovery) is the `Invoker`'s and the scheduler's, the
same whichever backend a call runs on.  A backend that runs calls outside the runtime's process
(`isolated`) ships a reference to the tool's function, never the function itself, and brings back
what the call returned or raised as an `Outcome`; when the process running the call dies, `run`
raises `WorkerLost`.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..errors import RetryTool, ToolFailed, UserError
from ..tools import ExecutorName, Tool

__all__ = [
    "Backend",
    "Call",
    "NotShippable",
    "Outcome",
    "RemoteFailure",
    "WorkerLost",
    "call_target",
    "check_shippable",
    "failure_kind",
]


class WorkerLost(Exception):
    """The process running a call died before it answered (a crash, a hard exit, a kill)."""


class NotShippable(Exception):
    """A call's arguments cannot be sent to the worker (they do not pickle)."""


class RemoteFailure(Exception):
    """What a tool raised in a worker, when the exception itself could not be sent back:
    `cause` is its type's name, `kind` how the runtime classifies it."""

    def __init__(self, message: str, cause: str, kind: FailureKind):
        super().__init__(message)
        self.cause = cause
        self.kind = kind

    def __reduce__(self) -> tuple[Any, ...]:
        return (RemoteFailure, (str(self), self.cause, self.kind))


@dataclass(frozen=True, slots=True)
class Call:
    """One call of a sync tool, its arguments validated."""

    tool: Tool
    positional: tuple[Any, ...]
    keywords: dict[str, Any]


# The target of a call sent to another process: (module, qualname) of the tool's function, or
# the function itself where the worker can take it by value (Ray's cloudpickle, `__main__`).
Target = tuple[str, str] | Callable[..., Any]
# What a worker sends back: ("ok", result) or ("raised", exception).
Outcome = tuple[Literal["ok", "raised"], Any]


class Backend(ABC):
    """Where calls of sync tools run.  `isolated`: outside the runtime's process, so each tool
    sent there must be importable by its worker (`check`)."""

    name: ClassVar[ExecutorName]
    isolated: ClassVar[bool]

    def check(self, tool: Tool) -> None:
        """Raise UserError if `tool` cannot run on this backend; called when a runtime (or a
        scheduler) is built, not at run time."""
        if self.isolated:
            check_shippable(tool, self.name)

    async def ready(self) -> None:
        """Make the backend able to run calls (join a cluster): awaited before a call's timeout
        starts, so that a slow start is not charged to the first task."""
        return None

    @abstractmethod
    async def run(self, call: Call) -> Any:
        """Run `call`; return its result or raise what the tool raised (`RemoteFailure` when
        that could not travel), `WorkerLost` or `NotShippable`.  Cancellation stops the call
        (a worker running it is killed)."""

    def close(self) -> None:
        """Release the backend's workers (idempotent); a backend without any has none."""
        return None


def check_shippable(tool: Tool, executor: str) -> None:
    """A tool can run in another process when its function is found again there by module and
    name, and its default values pickle (a positional-only default travels with the call)."""
    fn = tool.fn
    where = f"tool {tool.name!r} cannot run on the {executor} executor"
    if tool.is_async:
        raise UserError(f"{where}: it is async (async tools run on the event loop)")
    if "<" in fn.__qualname__:
        raise UserError(
            f"{where}: {fn.__qualname__} is a closure or a lambda, which a worker process cannot "
            "import; define it at the top level of a module"
        )
    module = sys.modules.get(fn.__module__)
    if fn.__module__ == "__main__" and not getattr(module, "__file__", None):
        raise UserError(f"{where}: it is defined in an interactive session; put it in a module")
    found = _lookup(module, fn.__qualname__) if module is not None else None
    if found is not fn and not (isinstance(found, Tool) and found.fn is fn):
        raise UserError(
            f"{where}: {fn.__module__}.{fn.__qualname__} names another object, so a worker "
            "process would not find this function"
        )
    for param in tool.params:
        if param.default is inspect.Parameter.empty:
            continue
        try:
            pickle.dumps(param.default)
        except Exception as exc:
            raise UserError(
                f"{where}: the default of {param.name!r} ({param.default!r}) does not pickle "
                f"({type(exc).__name__}: {exc})"
            ) from None


def _lookup(module: object, qualname: str) -> object:
    target: object = module
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target


def call_target(target: Target, positional: tuple[Any, ...], keywords: dict[str, Any]) -> Outcome:
    """In a worker: find the tool's function and call it; what it raised comes back as the
    outcome, made picklable (a `RemoteFailure`) when it is not."""
    try:
        found: object = target
        if not callable(target):
            found = _lookup(importlib.import_module(target[0]), target[1])
            if isinstance(found, Tool):
                found = found.fn
        if not callable(found):
            raise RuntimeError(f"{target!r} names no function in the worker")
        return ("ok", found(*positional, **keywords))
    except Exception as exc:
        return ("raised", portable(exc))


def portable(exc: Exception) -> Exception:
    """`exc` if it survives a pickle round trip, else a RemoteFailure that says the same."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RemoteFailure(f"{type(exc).__name__}: {exc}", type(exc).__name__, failure_kind(exc))
    return exc


FailureKind = Literal["transient", "rejected", "crash"]


def failure_kind(exc: Exception) -> FailureKind:
    """How the runtime classes an exception a tool raised, wherever it ran."""
    if isinstance(exc, RemoteFailure):
        return exc.kind
    if isinstance(exc, RetryTool | ConnectionError | TimeoutError):
        return "transient"
    if isinstance(exc, ToolFailed):
        return "rejected"
    return "crash"
