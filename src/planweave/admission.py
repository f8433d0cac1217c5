"""How many runs a process answers at once: `Admission` lets `max_running` runs answer, keeps up
to `max_queued` more waiting their turn (first come, first served), and refuses the rest.

Two steps, because a refusal must come before a run exists: whoever starts runs (the HTTP
server) takes a `place()` for each, which raises `Overloaded` when none is left, and holds it
until the run's session is over; the runtime then waits for the run's `turn()` once the run is
recorded (`Runtime.arun(admission=)`), so a queued run is in the journal, can be listed,
followed and cancelled, and says where it stands (`ahead`).  The turns are a `ModelQueue`
with room for `max_running`: the queue that holds calls waiting for the embedded model.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from .errors import Overloaded, UserError
from .llm.queue import Listener, ModelQueue, listening

__all__ = ["Admission"]

# Weight of the newest turn in the mean time a run holds its turn (for Retry-After).
_RECENT = 0.2


class Admission:
    """At most `max_running` runs answer at once and `max_queued` more wait; see the module."""

    def __init__(self, max_running: int = 8, max_queued: int = 64) -> None:
        for name, value, least in (("max_running", max_running, 1), ("max_queued", max_queued, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise UserError(f"Admission({name}=) must be an integer >= {least}, not {value!r}")
        self.max_running = max_running
        self.max_queued = max_queued
        self._turns = ModelQueue(capacity=max_running)
        self._mutex = threading.Lock()  # runs may be started from several threads
        self._held = 0
        self._ahead: dict[str, int] = {}  # run id -> its place in line, while it waits
        self._mean_turn_s: float | None = None

    @property
    def held(self) -> int:
        """Places taken: runs running, queued, or about to ask for their turn."""
        return self._held

    @property
    def running(self) -> int:
        """Runs that have their turn now."""
        return self._turns.holding

    @property
    def queued(self) -> int:
        """Runs waiting for their turn now."""
        return self._turns.waiting

    def ahead(self, run_id: str) -> int | None:
        """Run `run_id`'s place in line while it waits for its turn (1: next), else None."""
        return self._ahead.get(run_id)

    @property
    def full(self) -> bool:
        """Whether every place is taken (the next `place()` raises Overloaded)."""
        return self._held >= self.max_running + self.max_queued

    def overloaded(self) -> Overloaded:
        """The refusal `place()` raises when every place is taken."""
        message, retry_after = self.refusal()
        return Overloaded(message, retry_after=retry_after)

    def refusal(self) -> tuple[str, int]:
        """What a refusal says, and the seconds it asks the client to wait."""
        return (
            f"this server is answering {self.running} runs and has {self.queued} waiting, as "
            f"many as it holds ({self.max_running} at once, {self.max_queued} queued); try "
            "again later",
            self.retry_after(),
        )

    def retry_after(self) -> int:
        """About how many seconds until a place is free: the mean time a run has held its
        turn lately, shared by the `max_running` turns; at least 1."""
        mean = self._mean_turn_s or 1.0
        return max(1, math.ceil(mean / self.max_running))

    @contextmanager
    def place(self) -> Iterator[None]:
        """A place for one run, held for the block; Overloaded when every place is taken."""
        with self._mutex:
            full = self.full
            if not full:
                self._held += 1
        if full:
            raise self.overloaded()
        try:
            yield
        finally:
            with self._mutex:
                self._held -= 1

    @asynccontextmanager
    async def turn(self, run_id: str, listener: Listener | None = None) -> AsyncIterator[None]:
        """Run `run_id`'s turn, held for the block: at once when fewer than `max_running`
        runs have theirs, else after the runs that asked before it.  `listener` hears the
        wait as a `ModelQueue`'s listener does: `(ahead, 0.0)` as its place changes, then
        `(0, waited)` once it has its turn (nothing when it did not wait)."""

        def heard(ahead: int, waited: float) -> None:
            if ahead:
                self._ahead[run_id] = ahead
            else:
                self._ahead.pop(run_id, None)
            if listener is not None:
                listener(ahead, waited)

        try:
            with listening(heard):
                await self._turns.acquire()
        finally:
            self._ahead.pop(run_id, None)
        began = time.monotonic()
        try:
            yield
        finally:
            self._turns.release()
            spent = time.monotonic() - began
            mean = self._mean_turn_s
            self._mean_turn_s = spent if mean is None else mean + _RECENT * (spent - mean)
