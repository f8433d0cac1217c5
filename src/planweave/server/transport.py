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

A request that `early` can answer from its head alone (see the server's door) is answered here,
in the turn of the event loop that read it, instead of becoming an ASGI task.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.flow_control import CLOSE_HEADER
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

from ..redaction import redact, redact_url
from .security import Answer

__all__ = [
    "ACCESS_LOG",
    "MAX_CONNECTIONS",
    "Early",
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

# The answer to a request (method, path, headers) from its head alone: status, headers, body; or
# None to leave it to the app.
Early = Callable[[str, str, list[tuple[bytes, bytes]]], Answer | None]


class RequestDeadline(H11Protocol):
    """uvicorn's HTTP/1.1 protocol (h11), closing a connection whose request has not arrived
    whole `request_timeout_s` after the connection could send it.  Made for a deadline by
    `with_deadline` (uvicorn builds its protocol from a class)."""

    request_timeout_s: float = 30.0
    early: Early | None = None
    _deadline: asyncio.TimerHandle | None = None
    _stalled: asyncio.TimerHandle | None = None
    _answer: Answer | None = None

    @classmethod
    def with_deadline(cls, seconds: float, early: Early | None = None) -> type[RequestDeadline]:
        attributes = {"request_timeout_s": seconds, "early": staticmethod(early) if early else None}
        return type("RequestDeadline", (cls,), attributes)

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

    # uvicorn asks `_should_upgrade` of each request's head (in `self.scope`) before it makes the
    # request an ASGI task, and hands the request to `handle_websocket_upgrade` instead when it
    # says yes.  This server takes no upgrade (ws="none"), so the pair is the place to answer a
    # request early.
    def _should_upgrade(self) -> bool:
        if self.early is not None:
            scope = self.scope
            self._answer = self.early(scope["method"], scope["path"], self.headers)
            if self._answer is not None:
                return True
        return super()._should_upgrade()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        answer, self._answer = self._answer, None
        if answer is None:
            super().handle_websocket_upgrade(event)
            return
        status, headers, body = answer
        headers = self.server_state.default_headers + headers
        if CLOSE_HEADER in self.scope["headers"]:
            headers.append(CLOSE_HEADER)
        if self.access_log:
            self.access_logger.info(
                '%s - "%s %s HTTP/%s" %d',
                get_client_addr(self.scope),
                self.scope["method"],
                get_path_with_query_string(self.scope),
                self.scope["http_version"],
                status,
            )
        conn = self.conn
        response = h11.Response(status_code=status, headers=headers, reason=STATUS_PHRASES[status])
        self.transport.write(
            conn.send(response) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
        )
        if conn.our_state is h11.MUST_CLOSE:
            conn.send(h11.ConnectionClosed())
            self.transport.close()
        self.on_response_complete()
        # What the client sent after the head (a body, the next request) is read in the
        # next turn, as after an answer from the app.
        if not self.transport.is_closing():
            self.loop.call_soon(self._go_on)

    def _go_on(self) -> None:
        if not self.transport.is_closing():
            self.handle_events()

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
    app: Any,
    *,
    host: str,
    port: int,
    log_level: str,
    request_timeout_s: float,
    early: Early | None = None,
) -> uvicorn.Config:
    """How planweave's servers run `app`: h11 with the request deadline and `early`'s answers,
    no Server header, and a few seconds for open event streams to end when the server does."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        server_header=False,
        http=RequestDeadline.with_deadline(request_timeout_s, early),
        ws="none",
        timeout_graceful_shutdown=5,
        limit_concurrency=MAX_CONNECTIONS,
    )
