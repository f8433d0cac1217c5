"""Writing a run's event stream to the journal as it happens."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

import anyio

from ..errors import JournalError
from ..events import AnswerDelta, Event, LLMProgress, TaskStarted
from .journal import Journal
from .owner import lease_s

__all__ = ["RunRecorder"]

# How long a run may go without writing before it asks the journal whether it should stop.
IDLE_CHECK_S = 0.5


class RunRecorder:
    """An event-bus subscriber that commits each event of one run before the run goes on.

    If the journal cannot be written, the first failure is raised (ending the run: its
    write-ahead promise cannot be kept) and later events are ignored.

    Each write also reads the run's cancel flag (`planweave runs cancel` from another process
    sets it), so a busy run stops at its next event; `watch_cancel` covers the stretches in which
    nothing is written (a long tool call, a long LLM response), and renews this process's lease
    on the run (`owner`) every third of the lease, stopping the run (`lease_lost`) when another
    process has taken it over.
    """

    def __init__(
        self,
        journal: Journal,
        run_id: str,
        side_effects: Collection[str] = (),
        *,
        session: int = 1,
    ) -> None:
        """`side_effects`: the names of the run's tools with side effects, whose starts are
        fsynced before the tool is called."""
        self.journal = journal
        self.run_id = run_id
        self.session = session
        self.broken: JournalError | None = None
        self._side_effects = frozenset(side_effects)
        self.cancel_asked = False
        self.lease_lost = False
        self._cancel: Callable[[], None] | None = None
        self._last_write = time.monotonic()
        self._renew_every = lease_s() / 3
        self._renewed = time.monotonic()

    def __call__(self, event: Event) -> None:
        # The answer's streamed pieces and a call's progress are not kept: the answer is, whole,
        # a moment later, and the call's counts when it ends.
        if self.broken is not None or isinstance(event, AnswerDelta | LLMProgress):
            return
        durable = isinstance(event, TaskStarted) and event.tool in self._side_effects
        try:
            asked = self.journal.record(self.run_id, self.session, event, durable=durable)
        except JournalError as err:
            self.broken = err
            raise
        self._last_write = time.monotonic()
        if asked:
            self._asked()

    def _asked(self) -> None:
        if not self.cancel_asked:
            self.cancel_asked = True
            if self._cancel is not None:
                self._cancel()

    async def watch_cancel(self, cancel: Callable[[], None]) -> None:
        """Call `cancel` once a stop is asked for (at the next write, or after IDLE_CHECK_S
        without one, when this asks the journal itself) or the lease is lost; and renew the
        lease all along, a stopping run's too, until the session ends (this task is then
        cancelled): a run winding down is still held, never taken for a dead one's."""
        self._cancel = cancel
        if self.cancel_asked:
            cancel()
        step = min(IDLE_CHECK_S, self._renew_every)
        while not self.lease_lost:
            if time.monotonic() - self._renewed >= self._renew_every:
                self._renew()
            idle = time.monotonic() - self._last_write
            asking = not self.cancel_asked and idle >= IDLE_CHECK_S
            if asking and self.journal.cancel_requested(self.run_id):
                self._asked()
            await anyio.sleep(step)

    def _renew(self) -> bool:
        """Renew the lease; False (the run stopped, `lease_lost`) when another process holds it
        now.  A journal that cannot be written now is tried again at the next round."""
        try:
            held = self.journal.renew(self.run_id)
        except JournalError:
            return True
        self._renewed = time.monotonic()
        if not held:
            self.lease_lost = True
            self._asked()
        return held
