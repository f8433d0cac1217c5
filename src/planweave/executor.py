"""Running one task: argument resolution, timeouts, and thread offload for sync tools."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import anyio

from .errors import (
    ProjectionError,
    TaskError,
    ToolArgumentError,
    ToolCrashed,
    ToolTimeout,
)
from .plan import Task, format_args, resolve
from .tools import Tool

__all__ = ["DEFAULT_TIMEOUT", "Executor"]

DEFAULT_TIMEOUT = 60.0


def _shown(arguments: Mapping[str, Any], limit: int = 300) -> str:
    """Arguments as they appear in an error message; huge inputs are cut short."""
    text = format_args((), arguments)
    return text if len(text) <= limit else text[:limit] + "..."


class Executor:
    """Runs a tool call and turns every way it can fail into a `TaskError`.

    Async tools run on the event loop; sync tools run in worker threads bounded by a
    `CapacityLimiter`, so a blocking tool never blocks the loop.  Every call runs under a timeout:
    a hung async tool is cancelled, a hung sync tool's thread is abandoned and the run goes on.
    """

    def __init__(self, *, default_timeout: float = DEFAULT_TIMEOUT, max_threads: int = 32) -> None:
        self.default_timeout = default_timeout
        self.threads = anyio.CapacityLimiter(max_threads)

    def resolve_arguments(
        self, task: Task, planned: Mapping[str, Any], results: Mapping[int, Any]
    ) -> dict[str, Any]:
        """Substitute results for the references in a task's bound, planned arguments."""
        if not task.deps:
            return dict(planned)
        try:
            return {name: resolve(value, results) for name, value in planned.items()}
        except ProjectionError as err:
            err.task_id, err.tool = task.id, task.tool
            err.arguments = format_args(task.args, task.kwargs)
            raise

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
        with anyio.move_on_after(timeout) as scope:
            try:
                if tool.is_async:
                    return await tool.fn(*positional, **keywords)
                call = functools.partial(tool.fn, *positional, **keywords)
                return await anyio.to_thread.run_sync(
                    call, abandon_on_cancel=True, limiter=self.threads
                )
            except TaskError:
                raise
            except Exception as exc:
                raise ToolCrashed(
                    f"{type(exc).__name__}: {exc}",
                    task_id=task.id,
                    tool=tool.name,
                    arguments=_shown(arguments),
                    cause=type(exc).__name__,
                ) from exc
        assert scope.cancelled_caught
        raise ToolTimeout(
            f"no result after {timeout:g} s (timeout)",
            task_id=task.id,
            tool=tool.name,
            arguments=_shown(arguments),
            cause="timeout",
        )
