"""A model that answers one call at a time, as the embedded model does: its calls take turns in
the same `ModelQueue`, while the replies come from a scripted LLM.  It records the order in
which calls asked for the model and got it, and can hold the first turn until told."""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing

import anyio

from planweave.llm.base import LLM, Delta, LLMRequest
from planweave.llm.queue import ModelQueue


class OneAtATime(LLM):
    """`inner`'s replies, one call at a time.  `label(request)` names a call in `asked` (in the
    order calls asked for the model) and `granted` (the order they got it).  While `hold` is
    not set, the first call to get the model keeps it (set it from any thread)."""

    def __init__(
        self,
        inner: LLM,
        label: Callable[[LLMRequest], str],
        *,
        hold: threading.Event | None = None,
    ) -> None:
        self.inner = inner
        self.model = "one-at-a-time"
        self.label = label
        self.hold = hold
        self.queue = ModelQueue()
        self.asked: list[str] = []
        self.granted: list[str] = []

    async def stream(self, request: LLMRequest) -> AsyncGenerator[Delta, None]:
        who = self.label(request)
        self.asked.append(who)
        await self.queue.acquire()
        try:
            self.granted.append(who)
            if self.hold is not None and len(self.granted) == 1:
                await anyio.to_thread.run_sync(self.hold.wait)
            async with aclosing(self.inner.stream(request)) as deltas:
                async for delta in deltas:
                    yield delta
        finally:
            self.queue.release()
