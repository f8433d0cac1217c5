"""Secure by default: who may bind where, who may ask, and how much they may send.

- Only loopback without a token.  Any other address needs one, and then every request must
  carry `Authorization: Bearer TOKEN` (compared in constant time).
- Without a token, only requests addressed to a loopback name are taken (`Host`), so a web page
  cannot reach the server through a DNS name rebound to 127.0.0.1.
- A request from a browser page of another origin (`Origin`) is refused: there is no CORS.
- Request headers (431) and bodies (413) are bounded before any of them reaches a handler; a
  body is JSON (415 otherwise) of valid Unicode (400 otherwise), so no handler meets bytes,
  broken JSON or a lone surrogate that the journal could not store.
- The web page's own files (`public`: no data, no secret) are served without the token, since
  a browser cannot send a header when it opens a page; everything the page reads needs it.
- With users (`users.Users`: a users file, the operator's token), a request's token says who
  it comes from: the guard puts that `User` in the request's scope (`CALLER`), and `caller`
  gives it to the routes, which show each user only their own runs (`users.find_run`,
  `users.runs_of`).  Without a token, the caller is the operator (loopback only).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection

from ..errors import UserError
from ..redaction import add_secret
from ..users import OPERATOR, User, Users

__all__ = [
    "CALLER",
    "MAX_HEADER_BYTES",
    "MIN_TOKEN_CHARS",
    "Answer",
    "Guard",
    "Refusal",
    "caller",
    "check_bind",
    "error_answer",
    "error_body",
    "is_loopback",
    "is_openai_path",
    "json_answer",
    "send_answer",
    "send_error",
]

MIN_TOKEN_CHARS = 16
# All of a request's header names and values together (uvicorn's h11 refuses a head of 16 KiB
# with a bare 400 before this sees it; httptools would take any size).
MAX_HEADER_BYTES = 8192

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
# Where the guard leaves the request's `User` in its ASGI scope.
CALLER = "planweave.caller"
UNAUTHORIZED = "a valid `Authorization: Bearer TOKEN` header is required"
# A refusal: status, message, the error's type, headers to send with it.
Refusal = tuple[int, str, str, dict[str, str]]
# An answer as the protocol sends it: status, headers, body.
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 in brackets or not) is this machine only."""
    host = host.strip().lower().removeprefix("[").removesuffix("]")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None, users: Users | None = None) -> None:
    """Refuse to serve on `host` without a token (or users, each with theirs) unless it is
    loopback; refuse a short token."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise UserError(
            f"the token must have at least {MIN_TOKEN_CHARS} characters; make one with "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
        )
    if token is None and users is None and not is_loopback(host):
        raise UserError(
            f"serving on {host} lets other machines in: give a token (--token or env "
            "PLANWEAVE_TOKEN) that every request must carry, or users (--users), or bind to "
            "127.0.0.1"
        )
    add_secret(token)


def caller(connection: HTTPConnection) -> User:
    """Who the request comes from, as the guard found it (a FastAPI dependency of every route
    that reads or starts runs).  A request the guard let in without one (a page file) has
    none: 401, never a default."""
    user = connection.scope.get(CALLER)
    if not isinstance(user, User):
        raise HTTPException(401, UNAUTHORIZED, headers={"www-authenticate": "Bearer"})
    return user


def is_openai_path(path: str) -> bool:
    """Whether `path` is one of the OpenAI-compatible routes (`/v1/...`), whose errors are in
    OpenAI's shape."""
    return path == "/v1" or path.startswith("/v1/")


# The class of error OpenAI's clients see, where the HTTP status does not say it.
_OPENAI_TYPES = {"run_failed": "server_error"}


def error_body(
    status: int,
    message: str,
    kind: str,
    *,
    openai: bool = False,
    param: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Every error the server answers, `kind` its name.  Its API's shape: `{"error":
    {"message", "type": kind, "code": status}}`.  On the OpenAI routes (`openai`), OpenAI's:
    `type` the class (`invalid_request_error` for a 4xx, `server_error` for what the server
    could not do), `code` the name, `param` the request field at fault or null."""
    if not openai:
        return {"error": {"message": message, "type": kind, "code": status, **extra}}
    default = "server_error" if status >= 500 else "invalid_request_error"
    kind_of = _OPENAI_TYPES.get(kind, default)
    return {"error": {"message": message, "type": kind_of, "param": param, "code": kind, **extra}}


class Guard:
    """ASGI middleware in front of everything the server answers (the events stream too)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        max_body_bytes: int,
        public: frozenset[str] = frozenset(),
        users: Users | None = None,
    ) -> None:
        """`token`: the operator's; `users`: the users file's (either, both, or neither:
        then loopback only, every caller the operator)."""
        self.app = app
        self.users = (users or Users()).with_operator(token)
        self.max_body_bytes = max_body_bytes
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal, user = self._admit(scope["method"], scope["path"], scope["headers"])
        if refusal is not None:
            await send_error(scope, send, *refusal)
            return
        if user is not None:
            scope[CALLER] = user
        if scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope["headers"]}
        body = await self._body(headers, receive)
        if body is _GONE:  # the client left (or was dropped) before its body had come whole
            return
        if body is None:
            await send_error(
                scope,
                send,
                413,
                f"the request body is larger than {self.max_body_bytes} bytes",
                "request_too_large",
            )
            return
        problem = _body_problem(headers, body)
        if problem is not None:
            await send_error(scope, send, *problem)
            return
        await self.app(scope, _replay(body, receive), send)

    def head_refusal(
        self, method: str, path: str, raw: list[tuple[bytes, bytes]]
    ) -> Refusal | None:
        """Why a request is refused from its head alone (the size of its headers, its host,
        token and origin), or None.  What comes after (the body) is checked as it arrives."""
        return self._admit(method, path, raw)[0]

    def _admit(
        self, method: str, path: str, raw: list[tuple[bytes, bytes]]
    ) -> tuple[Refusal | None, User | None]:
        """Why the request is refused from its head alone, or None and who it comes from (None
        for a public file asked for without a valid token)."""
        size = sum(len(k) + len(v) for k, v in raw)
        if size > MAX_HEADER_BYTES:
            refusal: Refusal = (
                431,
                f"the request's headers have {size} bytes; this server takes at most "
                f"{MAX_HEADER_BYTES}",
                "headers_too_large",
                {},
            )
            return refusal, None
        headers = {k.decode("latin-1").lower(): v for k, v in raw}
        public = method in ("GET", "HEAD") and path in self.public
        return self._refusal(headers, token=not public)

    def _refusal(
        self, headers: dict[str, bytes], *, token: bool = True
    ) -> tuple[Refusal | None, User | None]:
        """Why the request is refused, or None and its user; `token`: whether it must carry
        a valid token."""
        host = headers.get("host", b"").decode("latin-1")
        user: User | None = OPERATOR
        if self.users.required:
            scheme, _, given = headers.get("authorization", b"").partition(b" ")
            user = self.users.authenticate(given.strip()) if scheme.lower() == b"bearer" else None
            if token and user is None:
                refusal = (401, UNAUTHORIZED, "unauthorized", {"www-authenticate": "Bearer"})
                return refusal, None
        elif not is_loopback(urlsplit(f"//{host}").hostname or ""):
            return (
                403,
                "this server answers requests to a loopback name only",
                "forbidden",
                {},
            ), None
        origin = headers.get("origin")
        if origin is not None and urlsplit(origin.decode("latin-1")).netloc.lower() != host.lower():
            return (
                403,
                "requests from another origin are not allowed (no CORS)",
                "forbidden",
                {},
            ), None
        return None, user

    async def _body(self, headers: dict[str, bytes], receive: Receive) -> bytes | None:
        """The whole body, None once it is larger than the bound, or _GONE when the
        connection ends before it is whole (never a part of it taken for the whole)."""
        try:
            declared = int(headers.get("content-length", b"0"))
        except ValueError:
            declared = 0
        if declared > self.max_body_bytes:
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return _GONE
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


# What `Guard._body` gives for a body whose client went away before it was whole.
_GONE = b"\0gone"


def _body_problem(headers: dict[str, bytes], body: bytes) -> tuple[int, str, str] | None:
    """Why a request body cannot be taken (status, message, type), or None.  Every body this
    server reads is JSON; an empty one is no body."""
    if not body:
        return None
    media = headers.get("content-type", b"").decode("latin-1").partition(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        shown = repr(media[:80]) if media else "none"
        message = f"send the body as application/json (its Content-Type is {shown})"
        return 415, message, "unsupported_media_type"
    try:
        value = json.loads(body.decode("utf-8"), parse_constant=_not_json)
        # JSON may escape half a surrogate pair ("\ud800"): no text can hold that.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeDecodeError as exc:
        return 400, f"the body is not UTF-8 (byte {exc.start} is not valid)", "invalid_json"
    except UnicodeEncodeError:
        return 400, "the body's text holds half a surrogate pair (\\uD800-\\uDFFF)", "invalid_json"
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        return 400, f"the body is not valid JSON: {exc.msg} at {where}", "invalid_json"
    except RecursionError:
        return 400, "the body is not valid JSON: it nests too deeply", "invalid_json"
    except ValueError as exc:  # _not_json
        return 400, f"the body is not valid JSON: {exc}", "invalid_json"
    return None


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` that gives `body` first, then what the connection says (a disconnect)."""
    given = False

    async def again() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


async def send_error(
    scope: Scope,
    send: Send,
    status: int,
    message: str,
    kind: str,
    headers: dict[str, str] | None = None,
) -> None:
    """Answer the request of `scope` with an error (in its route's shape) straight from ASGI."""
    await send_answer(send, error_answer(scope["path"], status, message, kind, headers))


async def send_answer(send: Send, answer: Answer) -> None:
    """Send `answer` (status, headers, body) as the answer to a request, from ASGI."""
    status, headers, body = answer
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def error_answer(
    path: str, status: int, message: str, kind: str, headers: dict[str, str] | None = None
) -> Answer:
    """An error answer to a request for `path`, in its route's shape (see `error_body`)."""
    body = error_body(status, message, kind, openai=is_openai_path(path))
    return json_answer(status, body, headers)


def json_answer(status: int, body: Any, headers: dict[str, str] | None = None) -> Answer:
    """`body` as a JSON answer (ASCII: no text it holds can fail to encode)."""
    payload = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    return status, raw, payload
