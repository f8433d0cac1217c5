"""Following a run: its recorded events from the journal, then each new one the moment it is
recorded, with the answer's pieces (which the journal does not keep) in their places.

The journal is the one record: a follower reads events from it, by sequence number, and is only
woken by the runs this server is running.  So a follower that arrives late, or comes back with
the last sequence number it saw, misses nothing, and a slow one never holds a run up.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..events import (
    AnswerDelta,
    Event,
    LLMCallFinished,
    ModelAcquired,
    ModelWaiting,
    RunResumed,
    RunStarted,
)
from ..store import Journal

__all__ = ["BATCH", "POLL_S", "Live", "Session"]

# How often a run that another process is recording is read again (nothing here hears it).
POLL_S = 0.5
# Events read from the journal at once.
BATCH = 500
# Answer pieces held for one follower between two of its reads; a follower that falls that far
# behind gets no more pieces of this answer (the answer itself still comes, whole).
MAX_PENDING = 10_000


@dataclass(eq=False, slots=True)
class _Follower:
    wake: anyio.Event = field(default_factory=anyio.Event)
    # (sequence number of the recorded event the piece came after, the piece)
    pieces: deque[tuple[int, dict[str, Any]]] = field(default_factory=deque)
    behind: bool = False

    def piece(self, after: int, data: dict[str, Any]) -> None:
        if len(self.pieces) >= MAX_PENDING:
            self.behind = True
        if not self.behind:
            self.pieces.append((after, data))


class Live:
    """The runs in a session in this process, and who follows which run.

    Each session of a run subscribes a `session()` to its event stream, after the journal's
    recorder; `follow(run_id)` gives a run's events to any number of followers, and
    `model_wait(run_id)` says whether the run waits for the model now."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        # Whether this server takes over runs whose holder is gone (a follower of one then
        # waits for the run to go on, here or on another replica).
        self.taking_over = False
        self._last: dict[str, int] = {}  # run id -> its last recorded event's seq, while live
        self._followers: dict[str, set[_Follower]] = {}
        # run id -> {its LLM call that waits for the model: how many calls are ahead of it}
        self._waiting: dict[str, dict[int, int]] = {}

    def session(self) -> Session:
        return Session(self)

    def running(self, run_id: str) -> bool:
        """Whether a session of run `run_id` is going on in this process."""
        return run_id in self._last

    def model_wait(self, run_id: str) -> dict[str, int] | None:
        """`{"ahead": N}` while a call of run `run_id` waits for the model (`ModelWaiting`),
        N calls before it (the nearest of its waiting calls); None otherwise."""
        calls = self._waiting.get(run_id)
        return {"ahead": min(calls.values())} if calls else None

    def _wake(self, run_id: str) -> None:
        for follower in self._followers.get(run_id, ()):
            follower.wake.set()

    async def follow(self, run_id: str, *, after: int = 0) -> AsyncIterator[dict[str, Any]]:
        """Run `run_id`'s events after sequence number `after` (the journal's form: `seq`,
        `session`, `t`, `kind` and the event's fields), then each as it is recorded, and the
        answer's pieces (`answer_delta`, no `seq`) as they are decoded.  Ends after the run's
        `run_finished` once no session of it is going on here; a run that stopped without one
        (interrupted, cancelled while nobody ran it) ends with its last event.  `run_id` is a
        full id (`Journal.find`)."""
        follower = _Follower()
        self._followers.setdefault(run_id, set()).add(follower)
        last, last_kind = after, None
        pending: deque[tuple[int, dict[str, Any]]] = deque()
        try:
            while True:
                follower.wake = anyio.Event()
                live = self.running(run_id)
                pending.extend(follower.pieces)
                follower.pieces.clear()
                rows = self.journal.events(run_id, after=last, limit=BATCH)
                for row in rows:
                    while pending and pending[0][0] < row["seq"]:
                        seq, piece = pending.popleft()
                        if seq == last:  # an earlier one came before where this follower began
                            yield piece
                    yield row
                    last, last_kind = row["seq"], row["kind"]
                while pending and pending[0][0] <= last:
                    seq, piece = pending.popleft()
                    if seq == last:
                        yield piece
                if len(rows) == BATCH:
                    continue
                if live:
                    await follower.wake.wait()
                    continue
                if last_kind is None and last > 0:
                    before = self.journal.events(run_id, after=last - 1, limit=1)
                    last_kind = before[0]["kind"] if before else None
                if last_kind == "run_finished":
                    return
                if self._stopped(run_id):
                    # It may have written its last events between the read above and this:
                    # those first (then it ends here, at its run_finished or its last event).
                    if self.journal.events(run_id, after=last, limit=1):
                        continue
                    return
                # Another process is running it: read again now and then.
                with anyio.move_on_after(POLL_S):
                    await follower.wake.wait()
        finally:
            followers = self._followers.get(run_id, set())
            followers.discard(follower)
            if not followers:
                self._followers.pop(run_id, None)

    def _stopped(self, run_id: str) -> bool:
        """Whether run `run_id` will record nothing more for now: not running, or running
        with its holder gone when no server here takes such runs over (`taking_over`)."""
        state = self.journal.state(run_id)
        return state != "running" and not (state == "interrupted" and self.taking_over)


class Session:
    """The subscriber for one session of one run: counts its recorded events (the journal's
    recorder, subscribed before it, has committed each by the time it is seen here) and wakes
    the run's followers.  `close()` once the session is over."""

    def __init__(self, live: Live) -> None:
        self.live = live
        self.run_id: str | None = None

    def __call__(self, event: Event) -> None:
        live = self.live
        if self.run_id is None:
            if not isinstance(event, RunStarted | RunResumed):
                return
            self.run_id = event.run_id
            live._last[self.run_id] = live.journal.last_seq(self.run_id)
        elif isinstance(event, AnswerDelta):
            after = live._last[self.run_id]
            piece = {"kind": event.kind, "t": event.t, "text": event.text}
            for follower in live._followers.get(self.run_id, ()):
                follower.piece(after, piece)
        else:
            live._last[self.run_id] += 1
            self._model(event)
        live._wake(self.run_id)

    def _model(self, event: Event) -> None:
        assert self.run_id is not None
        waiting = self.live._waiting
        if isinstance(event, ModelWaiting):
            waiting.setdefault(self.run_id, {})[event.call] = event.ahead
        elif isinstance(event, ModelAcquired | LLMCallFinished):
            calls = waiting.get(self.run_id, {})
            calls.pop(event.call, None)
            if not calls:
                waiting.pop(self.run_id, None)

    def close(self) -> None:
        if self.run_id is not None:
            self.live._last.pop(self.run_id, None)
            self.live._waiting.pop(self.run_id, None)
            self.live._wake(self.run_id)
