"""Writing a run's event stream to the journal as it happens."""

from __future__ import annotations

import os
import signal

from ..errors import JournalError
from ..events import Event, TaskStarted
from ..tools import ToolRegistry
from .journal import Journal

__all__ = ["FAULT_ENV", "RunRecorder"]

# Fault injection for crash tests: "KIND:N" kills this process with SIGKILL right after the N-th
# event of KIND (e.g. "task_started:2") has been committed.
FAULT_ENV = "PLANWEAVE_FAULT"


class RunRecorder:
    """An event-bus subscriber that commits each event of one run before the run goes on.

    If the journal cannot be written, the first failure is raised (ending the run: its
    write-ahead promise cannot be kept) and later events are ignored.
    """

    def __init__(self, journal: Journal, run_id: str, tools: ToolRegistry, *, session: int = 1):
        self.journal = journal
        self.run_id = run_id
        self.session = session
        self.broken: JournalError | None = None
        self._side_effects = {t.name for t in tools.values() if t.side_effects}
        kind, _, count = (os.environ.get(FAULT_ENV) or "").partition(":")
        self._fault_kind = kind
        self._fault_left = int(count or 1)

    def __call__(self, event: Event) -> None:
        if self.broken is not None:
            return
        durable = isinstance(event, TaskStarted) and event.tool in self._side_effects
        try:
            self.journal.record(self.run_id, self.session, event, durable=durable)
        except JournalError as err:
            self.broken = err
            raise
        if event.kind == self._fault_kind:
            self._fault_left -= 1
            if self._fault_left == 0:
                os.kill(os.getpid(), signal.SIGKILL)
