"""The server's door: what it answers from a request's head alone, before the request costs more.

A request that would start a run while the admission has no place left is refused (503,
Retry-After) before its body is read, routed or validated, and `/healthz` says how the server
stands; both are answered by the protocol itself (`early`), in the same turn of the event loop
that read the request, so that under a flood of runs a probe is not queued behind the flood's
requests as ASGI tasks.  Behind the protocol (and under any other ASGI server) the door is also
middleware (`middleware`), in front of the guard's reading of the body: one decision serves
both.  Neither way answers a request whose head the guard refuses (its token, host, origin):
the guard answers it, so an unauthenticated client learns nothing of the load.
"""

from __future__ import annotations

import asyncio

from .security import (
    Answer,
    ASGIApp,
    Guard,
    Receive,
    Scope,
    Send,
    error_answer,
    json_answer,
    send_answer,
)
from .service import RunService

__all__ = ["Door"]

HEALTH = ("GET", "/healthz")
# The requests that start a run.
STARTS = frozenset({("POST", "/runs"), ("POST", "/v1/chat/completions")})


class Door:
    """The door of `service`'s server; `guard` (the app's guard, known once the app's middleware
    is built) decides who may come in."""

    def __init__(self, service: RunService) -> None:
        self.service = service
        self.guard: Guard | None = None
        # Starts let in whose place is not yet taken: without them a flood's requests would all
        # pass before the first of them takes its place.  `_passing`: those in the app (one
        # that has taken its place counts twice until it is answered: the door errs on
        # refusing); `_arriving`: those `early` let through in this turn of the event loop,
        # which reach the app (and `_passing`) in the next.
        self._passing = 0
        self._arriving = 0

    def refusal(self, arriving: int = 0) -> tuple[str, int] | None:
        """What a start is refused with now (message, seconds to wait), or None; `arriving`:
        starts let in that are not yet counted as passing."""
        admission = self.service.admission
        if admission is None:
            return None
        taken = admission.held + self._passing + arriving
        if taken < admission.max_running + admission.max_queued:
            return None
        return admission.refusal()

    def early(self, method: str, path: str, headers: list[tuple[bytes, bytes]]) -> Answer | None:
        """The answer to a request from its head alone, or None when the app must answer it
        (the guard's refusals among them: they say why)."""
        if (method, path) == HEALTH:
            guard = self.guard
            if guard is None or guard.head_refusal(method, path, headers) is not None:
                return None
            return json_answer(200, self.service.health())
        if (method, path) not in STARTS:
            return None
        answer = self._refused(method, path, headers, self._arriving)
        if answer is None:
            if not self._arriving:
                # Runs before the tasks of this turn's requests take their first step.
                asyncio.get_running_loop().call_soon(self._arrived)
            self._arriving += 1
        return answer

    def _arrived(self) -> None:
        self._arriving = 0

    def _refused(
        self, method: str, path: str, headers: list[tuple[bytes, bytes]], arriving: int
    ) -> Answer | None:
        """The refusal (503) of a start that finds no place, once the guard has let its head
        in; else None."""
        guard = self.guard
        if guard is None or guard.head_refusal(method, path, headers) is not None:
            return None
        refusal = self.refusal(arriving)
        if refusal is None:
            return None
        message, retry_after = refusal
        return error_answer(path, 503, message, "overloaded", {"retry-after": str(retry_after)})

    def middleware(self, app: ASGIApp) -> ASGIApp:
        """The door as ASGI middleware in front of `app` (the guard and what it guards): a
        start is counted from the moment it passes, before its body is read."""

        async def door(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http" or (scope["method"], scope["path"]) not in STARTS:
                await app(scope, receive, send)
                return
            answer = self._refused(scope["method"], scope["path"], scope["headers"], 0)
            if answer is not None:
                await send_answer(send, answer)
                return
            self._passing += 1
            try:
                await app(scope, receive, send)
            finally:
                self._passing -= 1

        return door
