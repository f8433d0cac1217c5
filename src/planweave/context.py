"""What a tool may know of the run that calls it (issue 31): declare a parameter typed
`RunContext` (or `RunContext[MyDeps]`) and planweave fills it in at each call.

    @tool
    def orders(customer: str, ctx: RunContext[Database]) -> list[str]:
        return ctx.deps.orders(customer, asked_by=ctx.user)

The plan never writes it: the tool's schema, its line in the planner's prompt and the plan's
grammar show only the other parameters, and the journal records only those.  `deps` is the
object given to `Runtime(deps=...)` (a database handle, a client): a handle of this process, so
such a tool runs in the runtime's process (on its threads or event loop), never in a worker
process or on Ray.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["RunContext", "is_context"]

DepsT = TypeVar("DepsT")


@dataclass(frozen=True, slots=True)
class RunContext(Generic[DepsT]):
    """The calling run: its id, the thread it is a turn of, the user it answers (both None
    when not given), the runtime's `deps`, and the task calling."""

    run_id: str
    deps: DepsT
    thread: str | None = None
    user: str | None = None
    task_id: int | None = None


def is_context(annotation: Any) -> bool:
    """Whether a parameter's annotation is `RunContext` (bare or parameterised, or optional:
    a run always gives one)."""
    if annotation is RunContext or typing.get_origin(annotation) is RunContext:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(is_context(a) for a in typing.get_args(annotation))
    return False
