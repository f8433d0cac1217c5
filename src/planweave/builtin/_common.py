"""Shared helpers of the built-in tools: lazy, thread-safe data loads and missing packages."""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..errors import ToolFailed, UserError

T = TypeVar("T")


def missing(package: str) -> UserError:
    """The error raised when an optional package of the built-in tools is not installed."""
    return UserError(
        f"the built-in tools need the {package!r} package: pip install 'planweave[tools]'"
    )


def load_once(fn: Callable[[], T]) -> Callable[[], T]:
    """Cache a zero-argument loader (functools.cache) and let only one thread run it.

    Tools run concurrently in a thread pool; without the lock two first calls would both
    load the same (large) data set.
    """
    cached = functools.cache(fn)
    lock = threading.Lock()

    @functools.wraps(fn)
    def load() -> T:
        with lock:
            return cached()

    return load


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large indexes of many small lists.

    Building them otherwise triggers a collection every few hundred allocations, which can
    triple the build time; nothing built there is cyclic garbage.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def pick_field(value: dict[str, Any], field: str | None, aliases: dict[str, str]) -> Any:
    """`value` itself when no field is asked for, else the one entry `field` names.

    `field` is matched case-insensitively and through `aliases`; an unknown field raises
    ToolFailed naming the valid ones.
    """
    if field is None:
        return value
    key = field.strip().lower().replace(" ", "_").replace("-", "_")
    key = aliases.get(key, key)
    if key not in value or key == "other_matches":
        valid = ", ".join(k for k in value if k != "other_matches")
        raise ToolFailed(f"unknown field {field!r}; valid fields: {valid}")
    return value[key]
