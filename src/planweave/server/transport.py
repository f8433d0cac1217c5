"""uvicorn as planweave's servers run it: every request must arrive whole within a deadline,
and the access log shows no secret.

uvicorn bounds only the idle time between two requests on a kept-alive connection; a client
that connects and sends nothing, trickles a request's head a byte at a time, or trickles its
body, holds the connection (a file descriptor, a buffer) for as long as it likes.  Here a
connection waiting for a request gets `request_timeout_s` for all of it, head and body, from the
moment it could send it (the connection opened, or the previous answer ended); past that the
connection is closed.  An answer being sent (an event stream) is not bounded by it, but a client
that stops reading is: once the answers waiting for it fill the connection's buffer, it has the
same `request_timeout_s` to take some before the connection is dropped (otherwise a client that
pipelines requests and never reads pins the buffer, megabytes a connection, for ever).  At most
`MAX_CONNECTIONS` connections are served at once; uvicorn answers 503 past that.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..redaction import redact, redact_url

__all__ = [
    "ACCESS_LOG",
    "MAX_CONNECTIONS",
    "RequestDeadline",
    "masked_access_log",
    "masked_target",
    "uvicorn_config",
]

ACCESS_LOG = "uvicorn.access"
# Connections (and their requests in progress) a server holds at once.
MAX_CONNECTIONS = 1000
# The states in which the client has sent all of its request (or can send nothing more).
_SENT = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR)


class RequestDeadline(H11Protocol):
    """uvicorn's HTTP/1.1 protocol (h11), closing a connection whose request has not arrived
    whole `request_timeout_s` after the connection could send it.  Made for a deadline by
    `with_deadline` (uvicorn builds its protocol from a class)."""

    request_timeout_s: float = 30.0
    _deadline: asyncio.TimerHandle | None = None
    _stalled: asyncio.TimerHandle | None = None

    @classmethod
    def with_deadline(cls, seconds: float) -> type[RequestDeadline]:
        return type("RequestDeadline", (cls,), {"request_timeout_s": seconds})

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._reading_again()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stalled is None:
            self._stalled = self.loop.call_later(self.request_timeout_s, self._not_reading)

    def resume_writing(self) -> None:
        self._reading_again()
        super().resume_writing()

    def _reading_again(self) -> None:
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None

    def _not_reading(self) -> None:
        self._stalled = None
        if not self.transport.is_closing():
            self.logger.info(
                "dropping a connection that read nothing of its answers for %gs",
                self.request_timeout_s,
            )
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state in _SENT:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # Waiting for the next request, or still for the rest of this one (answered early).
        if not self.transport.is_closing() and self.conn.their_state not in _SENT:
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.request_timeout_s, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.logger.info(
                "closing a connection whose request took over %gs", self.request_timeout_s
            )
            self.transport.close()


def masked_target(target: str) -> str:
    """A request's path and query as a log may show them: the value of every query parameter
    named like a token, key, secret or password masked, and every known secret (the server's
    token among them) masked however it is spelled."""
    if not target.startswith("/"):
        return redact(target)
    return redact_url(f"http://host{target}").removeprefix("http://host")


class _MaskedAccess(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(masked_target(a) if isinstance(a, str) else a for a in record.args)
        return True


@contextmanager
def masked_access_log() -> Iterator[None]:
    """A scope in which uvicorn's access log masks what `masked_target` masks."""
    log = logging.getLogger(ACCESS_LOG)
    masking = _MaskedAccess()
    log.addFilter(masking)
    try:
        yield
    finally:
        log.removeFilter(masking)


def uvicorn_config(
    app: Any, *, host: str, port: int, log_level: str, request_timeout_s: float
) -> uvicorn.Config:
    """How planweave's servers run `app`: h11 with the request deadline, no Server header, and
    a few seconds for open event streams to end when the server does."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        server_header=False,
        http=RequestDeadline.with_deadline(request_timeout_s),
        ws="none",
        timeout_graceful_shutdown=5,
        limit_concurrency=MAX_CONNECTIONS,
    )
