"""Running one task: argument resolution, timeouts, thread offload for sync tools and worker
processes for isolated ones."""

from __future__ import annotations

import functools
import importlib
import itertools
import math
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import anyio
import anyio.to_process

from .errors import (
    ProjectionError,
    RetryTool,
    TaskError,
    ToolArgumentError,
    ToolCrashed,
    ToolFailed,
    ToolOutputError,
    ToolOutputTooLarge,
    ToolRejected,
    ToolTimeout,
    ToolTransient,
    UserError,
)
from .plan import MAX_ARGUMENT_CHARS, NO_ITEM, Task, format_args, resolve
from .tools import Tool

__all__ = ["DEFAULT_TIMEOUT", "Executor"]

DEFAULT_TIMEOUT = 60.0
MAX_OUTPUT_CHARS = 1_000_000


def _size_over(value: Any, limit: int) -> int | None:
    """The size of `value` (characters of its text, one per other item, over every item of the
    structures in it) once it passes `limit`; None while it does not.  Walks lazily and stops
    there, so a huge result costs no more than the limit to measure."""
    size = 0
    stack: list[Iterator[Any]] = [iter((value,))]
    while stack:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
            continue
        if isinstance(item, str | bytes | bytearray):
            size += len(item)
        else:
            size += 1
            if isinstance(item, dict):
                stack.append(itertools.chain.from_iterable(item.items()))
            elif isinstance(item, list | tuple | set | frozenset):
                stack.append(iter(item))
            elif hasattr(item, "__dict__") and not isinstance(item, type):
                stack.append(iter(vars(item).values()))
        if size > limit:
            return size
    return None


_END = object()


def _shown(arguments: Mapping[str, Any], limit: int = 300) -> str:
    """Arguments as they appear in an error message; huge inputs are cut short."""
    text = format_args((), arguments)
    return text if len(text) <= limit else text[:limit] + "..."


class Executor:
    """Runs a tool call and turns every way it can fail into a `TaskError`.

    Async tools run on the event loop; sync tools run in worker threads bounded by a
    `CapacityLimiter`, so a blocking tool never blocks the loop; isolated tools (`@tool(isolate=
    True)`) run in a pool of at most `max_processes` worker processes.  Every call runs under its
    timeout (unless that is infinite): a hung async tool is cancelled, a hung sync tool's thread
    is abandoned, an isolated tool's worker is killed, and the run goes on.  Only isolation stops
    a tool that never releases the GIL: its thread would starve the event loop and the timeout.
    """

    def __init__(
        self,
        *,
        default_timeout: float = DEFAULT_TIMEOUT,
        max_threads: int = 32,
        max_processes: int | None = None,
        max_output_chars: int = MAX_OUTPUT_CHARS,
        max_argument_chars: int = MAX_ARGUMENT_CHARS,
    ) -> None:
        self.default_timeout = default_timeout
        self.threads = anyio.CapacityLimiter(max_threads)
        self.processes = anyio.CapacityLimiter(max_processes or os.cpu_count() or 2)
        self.max_output_chars = max_output_chars
        self.max_argument_chars = max_argument_chars

    def resolve_arguments(
        self,
        task: Task,
        planned: Mapping[str, Any],
        results: Mapping[int, Any],
        *,
        item: Any = NO_ITEM,
    ) -> dict[str, Any]:
        """Substitute results for the references in a task's bound, planned arguments (`item`:
        the element of a fan-out's list this call is for)."""
        if not task.deps:
            return dict(planned)
        limit = self.max_argument_chars
        try:
            return {name: resolve(value, results, limit, item) for name, value in planned.items()}
        except (ProjectionError, ToolArgumentError) as err:
            err.task_id, err.tool = task.id, task.tool
            err.arguments = format_args(task.args, task.kwargs)
            raise

    def checked(self, task: Task, tool: Tool, arguments: Mapping[str, Any], result: Any) -> Any:
        """The result, if it is of the tool's declared type and not too large; a result that
        recovery supplies instead of the tool's is held to the same rules."""
        size = _size_over(result, self.max_output_chars)
        if size is not None:
            raise ToolOutputTooLarge(
                f"returned {size:,} characters or more; at most {self.max_output_chars:,} are "
                "accepted from one call (text, or the text of every item of a structure)",
                task_id=task.id,
                tool=tool.name,
                arguments=_shown(arguments),
                cause="output_too_large",
            )
        problem = tool.check_result(result)
        if problem is not None:
            raise ToolOutputError(
                f"returned a value that is not {problem}",
                task_id=task.id,
                tool=tool.name,
                arguments=_shown(arguments),
                cause="wrong_type",
            )
        return result

    async def execute(self, task: Task, tool: Tool, arguments: Mapping[str, Any]) -> Any:
        """Call `tool`; return its result or raise a TaskError naming the task and the cause."""
        timeout = tool.timeout if tool.timeout is not None else self.default_timeout
        try:
            positional, keywords = tool.validate(arguments)
        except ValueError as exc:
            raise ToolArgumentError(
                f"invalid arguments: {exc}",
                task_id=task.id,
                tool=tool.name,
                arguments=_shown(arguments),
            ) from None
        if timeout == math.inf:
            # No deadline to keep: skip the cancel scope, which costs more than a quick call.
            return await self._call(task, tool, arguments, positional, keywords)
        with anyio.move_on_after(timeout) as scope:
            return await self._call(task, tool, arguments, positional, keywords)
        assert scope.cancelled_caught
        raise ToolTimeout(
            f"no result after {timeout:g} s (timeout)",
            task_id=task.id,
            tool=tool.name,
            arguments=_shown(arguments),
            cause="timeout",
        )

    async def _call(
        self,
        task: Task,
        tool: Tool,
        arguments: Mapping[str, Any],
        positional: list[Any],
        keywords: dict[str, Any],
    ) -> Any:
        if tool.isolate and "__main__" not in sys.modules:
            # A worker process is running the parent's main script again (as multiprocessing
            # does) and that script, unguarded, calls the tool: starting another worker would
            # recurse without end.
            raise UserError(
                f"tool {tool.name!r} runs in worker processes, which import the main script "
                "again: guard the script's top-level code with `if __name__ == '__main__':`"
            )
        try:
            if tool.is_async:
                result = await tool.fn(*positional, **keywords)
            elif tool.isolate:
                # cancellable: a timeout (or the run's cancellation) kills the worker.
                result = await anyio.to_process.run_sync(
                    _call_in_worker,
                    tool.fn.__module__,
                    tool.fn.__qualname__,
                    tuple(positional),
                    keywords,
                    cancellable=True,
                    limiter=self.processes,
                )
            else:
                call = functools.partial(tool.fn, *positional, **keywords)
                result = await anyio.to_thread.run_sync(
                    call, abandon_on_cancel=True, limiter=self.threads
                )
        except TaskError:
            raise
        except Exception as exc:
            raise _error_class(exc)(
                _describe(exc),
                task_id=task.id,
                tool=tool.name,
                arguments=_shown(arguments),
                cause=type(exc).__name__,
            ) from exc
        return self.checked(task, tool, arguments, result)


def _call_in_worker(
    module: str, qualname: str, positional: tuple[Any, ...], keywords: dict[str, Any]
) -> Any:
    """In a worker process: import the isolated tool's function again and call it.  (The
    function cannot be pickled itself: its module's name for it is the `Tool`.)"""
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    fn = target.fn if isinstance(target, Tool) else target
    return fn(*positional, **keywords)


def _describe(exc: Exception) -> str:
    if isinstance(exc, RetryTool | ToolFailed):
        return str(exc)
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, anyio.BrokenWorkerProcess) and exc.__cause__ is not None:
        text += f" ({type(exc.__cause__).__name__}: {exc.__cause__})"
    return text


def _error_class(exc: Exception) -> type[TaskError]:
    """The failure class of an exception a tool raised."""
    if isinstance(exc, RetryTool | ConnectionError | TimeoutError):
        return ToolTransient
    if isinstance(exc, ToolFailed):
        return ToolRejected
    return ToolCrashed
