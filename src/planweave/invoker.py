"""Running one task: argument resolution, validation, timeouts and failure classes, the same
whichever executor backend (`planweave.executors`) runs the call.  A UserError a tool raises
(a package it needs is not installed) is no failure of the call but of the setup: it ends the
run, failed, and is raised to the caller, never shown to the joiner as an observation."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator, Mapping
from typing import Any

import anyio

from .context import RunContext
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
from .executors import (
    Backend,
    Backends,
    Call,
    NotShippable,
    RemoteFailure,
    ThreadBackend,
    failure_kind,
)
from .plan import MAX_ARGUMENT_CHARS, NO_ITEM, Ref, Task, format_args, render_text, resolve
from .records import clip
from .tools import Tool

__all__ = ["DEFAULT_TIMEOUT", "Invoker"]

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


def _whence(task: Task, arguments: Mapping[str, Any], problem: str) -> str:
    """Where the refused argument came from, when it was another task's result: the 1.5B
    model passed a population where a country's name went (`country_info($1)`), and the error
    that names the value is the one it can fix."""
    name = problem.partition(":")[0].strip()
    source = task.bound.get(name)
    if not isinstance(source, Ref) or name not in arguments:
        return ""
    value = arguments[name]
    if isinstance(value, list | tuple) and len(value) > 20:
        value = [*value[:20], "..."]  # the first items say what it is; all of them cost time
    try:
        text = clip(render_text(value), 80)
    except (ValueError, RecursionError):  # an int of 5,000 digits, a list nested 5,000 deep
        text = f"a {type(arguments[name]).__name__}"
    return f" ({name} was {source}, the result of task {source.task_id}: {text})"


class Invoker:
    """Runs a tool call and turns every way it can fail into a `TaskError`.

    Async tools run on the event loop; sync tools run on the executor `backends` route them to:
    threads of this process (at most `max_threads`, so a blocking tool never blocks the loop),
    the process pool or Ray.  Every call runs under its timeout (unless that is infinite): a
    hung async tool is cancelled, a hung sync tool's thread is abandoned, a worker process is
    killed, a Ray task is cancelled, and the run goes on.  Only an isolated executor stops a
    tool that never releases the GIL: its thread would starve the event loop and the timeout.
    A worker that dies fails its task as a ToolCrashed (`cause` WorkerLost).
    """

    def __init__(
        self,
        *,
        tool_timeout: float = DEFAULT_TIMEOUT,
        max_threads: int = 32,
        max_output_chars: int = MAX_OUTPUT_CHARS,
        max_argument_chars: int = MAX_ARGUMENT_CHARS,
        backends: Backends | None = None,
        context: RunContext[Any] | None = None,
    ) -> None:
        self.tool_timeout = tool_timeout
        self.context = context  # the run's, handed to the tools that take it
        self.threads = ThreadBackend(max_threads)
        self.backends = backends if backends is not None else Backends()
        self.max_output_chars = max_output_chars
        self.max_argument_chars = max_argument_chars

    def resolve_arguments(
        self,
        task: Task,
        tool: Tool,
        planned: Mapping[str, Any],
        results: Mapping[int, Any],
        *,
        item: Any = NO_ITEM,
    ) -> dict[str, Any]:
        """Substitute results for the references in a task's bound, planned arguments (`item`:
        the element of a fan-out's list this call is for); texts go into the tool's
        `expressions` as quoted literals (`plan.resolve`)."""
        if not task.deps:
            return dict(planned)
        limit = self.max_argument_chars
        try:
            return {
                name: resolve(value, results, limit, item, expression=name in tool.expressions)
                for name, value in planned.items()
            }
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
        timeout = tool.timeout if tool.timeout is not None else self.tool_timeout
        try:
            positional, keywords = tool.validate(arguments)
        except ValueError as exc:
            raise ToolArgumentError(
                f"invalid arguments: {exc}{_whence(task, arguments, str(exc))}",
                task_id=task.id,
                tool=tool.name,
                arguments=_shown(arguments),
            ) from None
        if tool.context is not None:
            keywords[tool.context] = self._context(task)
        backend = None if tool.is_async else self._backend(tool)
        if backend is not None:
            await backend.ready()  # a cluster's start is not the call's time
        if timeout == math.inf:
            # No deadline to keep: skip the cancel scope, which costs more than a quick call.
            return await self._call(task, tool, arguments, positional, keywords, backend)
        with anyio.move_on_after(timeout) as scope:
            return await self._call(task, tool, arguments, positional, keywords, backend)
        assert scope.cancelled_caught
        raise ToolTimeout(
            f"no result after {timeout:g} s (timeout)",
            task_id=task.id,
            tool=tool.name,
            arguments=_shown(arguments),
            cause="timeout",
        )

    def _context(self, task: Task) -> RunContext[Any]:
        """The run's context as `task`'s call sees it."""
        context = self.context if self.context is not None else RunContext("", None)
        return dataclasses.replace(context, task_id=task.id)

    def _backend(self, tool: Tool) -> Backend:
        """Where a sync tool's call runs."""
        name = self.backends.route(tool)
        return self.threads if name == "thread" else self.backends.get(name)

    async def _call(
        self,
        task: Task,
        tool: Tool,
        arguments: Mapping[str, Any],
        positional: list[Any],
        keywords: dict[str, Any],
        backend: Backend | None,
    ) -> Any:
        try:
            if backend is None:
                result = await tool.fn(*positional, **keywords)
            else:
                result = await backend.run(Call(tool, tuple(positional), keywords))
        except (TaskError, UserError):
            # A UserError is a setup mistake (a package the tool needs is not installed), not
            # the model's: it ends the run, failed, instead of becoming an observation.
            raise
        except NotShippable as exc:
            raise ToolArgumentError(
                f"the arguments cannot be sent to a worker process: {exc}",
                task_id=task.id,
                tool=tool.name,
                arguments=_shown(arguments),
                cause="not_shippable",
            ) from exc
        except Exception as exc:
            raise _error_class(exc)(
                _describe(exc),
                task_id=task.id,
                tool=tool.name,
                arguments=_shown(arguments),
                cause=exc.cause if isinstance(exc, RemoteFailure) else type(exc).__name__,
            ) from exc
        return self.checked(task, tool, arguments, result)


def _describe(exc: Exception) -> str:
    if isinstance(exc, RetryTool | ToolFailed | RemoteFailure):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


_CLASSES: dict[str, type[TaskError]] = {
    "transient": ToolTransient,
    "rejected": ToolRejected,
    "crash": ToolCrashed,
}


def _error_class(exc: Exception) -> type[TaskError]:
    """The failure class of an exception a tool raised (or of its worker's death: a crash)."""
    return _CLASSES[failure_kind(exc)]
