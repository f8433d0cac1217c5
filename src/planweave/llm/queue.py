"""One model, one call at a time: a first-come-first-served queue for it, and how a caller hears
that its call waits in it.

The embedded model is shared by every run in the process and streams one response at a time;
its calls take turns in a `ModelQueue`, in the order they asked.  A call that has to wait tells
the `Listener` in effect where it asked (`listening`): how many calls are ahead of it, again each
time that number changes, then how long it waited once it has the model.  The meter listens for
each call of a run and puts what it hears on the run's event stream, so the backend knows
nothing of runs or events.

The same queue, with room for more than one at a time (`capacity`), holds the runs a server
admits (`planweave.admission`): a run that has to wait hears its place in line the same way.

The queue works across threads and event loops (runs of `Runtime.run` in two threads share one
model): its state is guarded by a thread lock, and a waiter is woken in its own event loop.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from contextvars import ContextVar

import anyio
import anyio.lowlevel

__all__ = ["Listener", "ModelQueue", "listening"]

Listener = Callable[[int, float], None]
"""Hears a call's wait: `(ahead, 0.0)` when it starts waiting with `ahead` calls before it (the
one using the model counted) and again when it sees that number go down (two changes before it
looks are heard as one), then `(0, waited)` once it has the model after `waited` seconds.  A
call that gets the model at once is not heard."""

_LISTENER: ContextVar[Listener | None] = ContextVar("planweave_model_listener", default=None)


@contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    """A scope in which calls that wait for a model tell `listener`.  Set it around each step
    of a backend's stream (`await anext(stream)`), not around a consumer of the stream: whatever
    the consumer starts between steps (tasks of a run) must not inherit it."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


class _Ticket:
    """One waiting call: where to wake it (its event loop) and whether it has the model."""

    __slots__ = ("changed", "granted", "thread", "token")

    def __init__(self) -> None:
        self.changed = anyio.Event()  # replaced each time the waiter looks at the queue
        self.granted = False
        self.thread = threading.get_ident()
        self.token = anyio.lowlevel.current_token()

    def wake(self) -> None:
        """Wake the waiter (from any thread) to look at the queue again."""
        changed = self.changed
        if threading.get_ident() == self.thread:
            changed.set()
            return
        # Its event loop may be gone, and its wait with it.
        with suppress(anyio.RunFinishedError):
            self.token.backend_class.run_sync_soon(changed.set, (), self.token.native_token)


class ModelQueue:
    """Turns at one model, first come first served.  `await acquire()`, then `release()` once
    done (or `async with turn()`).  A waiter that is cancelled leaves the queue; one cancelled
    just as its turn came passes the turn on, so the model is never left held.

    `capacity` turns may be held at once (1: one model, one call); a waiter's `ahead` is its
    place in line, so with one turn it counts the call the model is answering too."""

    def __init__(self, capacity: int = 1) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"a queue's capacity must be an integer >= 1, not {capacity!r}")
        self.capacity = capacity
        self._mutex = threading.Lock()
        self._holding = 0
        self._waiting: deque[_Ticket] = deque()

    @property
    def waiting(self) -> int:
        """How many calls wait now."""
        with self._mutex:
            return len(self._waiting)

    @property
    def busy(self) -> bool:
        """Whether a call has the model now."""
        with self._mutex:
            return self._holding > 0

    @property
    def holding(self) -> int:
        """How many turns are held now."""
        with self._mutex:
            return self._holding

    async def acquire(self) -> None:
        """Wait for the model's turn, behind every call that asked before."""
        listener = _LISTENER.get()
        with self._mutex:
            if self._holding < self.capacity and not self._waiting:
                self._holding += 1
                return
            ticket = _Ticket()
            self._waiting.append(ticket)
        began = time.monotonic()
        try:
            told = 0
            while True:
                with self._mutex:
                    if ticket.granted:
                        break
                    ahead = self._waiting.index(ticket) + 1
                    changed = ticket.changed = anyio.Event()
                if ahead != told and listener is not None:
                    listener(ahead, 0.0)
                told = ahead
                await changed.wait()
            if listener is not None:
                listener(0, time.monotonic() - began)
        except BaseException:
            with self._mutex:
                if ticket.granted:
                    self._pass_on()
                else:
                    self._waiting.remove(ticket)
                    self._wake_all()
            raise

    def release(self) -> None:
        """End the current turn: the longest waiting call gets the model."""
        with self._mutex:
            if not self._holding:
                raise RuntimeError("release() of a model queue nobody holds")
            self._pass_on()

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        await self.acquire()
        try:
            yield
        finally:
            self.release()

    def _pass_on(self) -> None:
        if self._waiting:
            granted = self._waiting.popleft()
            granted.granted = True
            granted.wake()
        else:
            self._holding -= 1
        self._wake_all()

    def _wake_all(self) -> None:
        """Wake the waiters, whose places moved up."""
        for ticket in self._waiting:
            ticket.wake()
