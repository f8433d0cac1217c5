"""An MCP server written with the SDK's `MCPServer` (FastMCP's successor), for the MCP tests:
over stdio when run as a script (`python mcp_demo_server.py`), over streamable HTTP through
`serve_http` (uvicorn on a loopback port, in a thread)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

READ_ONLY = ToolAnnotations(read_only_hint=True)


class City(BaseModel):
    name: str
    country: str
    population: int


CITIES = {
    "Utrecht": City(name="Utrecht", country="Netherlands", population=361_000),
    "Ghent": City(name="Ghent", country="Belgium", population=265_000),
}

server = MCPServer("demo")


@server.tool(annotations=READ_ONLY)
def city(name: str) -> City:
    """A city's country and population."""
    if name not in CITIES:
        raise ToolError(f"no city named {name!r}")
    return CITIES[name]


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    """The sum of two integers."""
    return a + b


@server.tool(annotations=READ_ONLY)
def shout(text: str, mark: Literal["!", "?"] = "!", times: int | None = None) -> str:
    """The text in capitals."""
    return text.upper() + mark * (times or 1)


@server.tool(annotations=READ_ONLY, structured_output=False)
def plain(text: str) -> str:
    """The text, as unstructured content."""
    return f"plain: {text}"


@server.tool(annotations=READ_ONLY)
def whoami() -> int:
    """The server's process id."""
    return os.getpid()


class UnderWay:
    """How many calls of a tool this process is serving now: a test that serves them in its
    own process waits for one (`wait`) to act while a call is in flight."""

    def __init__(self) -> None:
        self._count = 0
        self._changed = threading.Condition()

    def __enter__(self) -> None:
        with self._changed:
            self._count += 1
            self._changed.notify_all()

    def __exit__(self, *exc: object) -> None:
        with self._changed:
            self._count -= 1
            self._changed.notify_all()

    def wait(self, timeout: float = 20) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self._count > 0, timeout)


SLOW_CALLS = UnderWay()


@server.tool(annotations=READ_ONLY)
async def slow(seconds: float) -> str:
    """Waits, then says so."""
    with SLOW_CALLS:
        await anyio.sleep(seconds)
    return f"waited {seconds} s"


@server.tool()
def die() -> str:
    """Ends the server's process in the middle of the call (a crash)."""
    os._exit(3)


@contextmanager
def serve_http() -> Iterator[str]:
    """The server over streamable HTTP on a free loopback port; gives its URL."""
    import uvicorn

    config = uvicorn.Config(
        server.streamable_http_app(), host="127.0.0.1", port=0, log_level="critical", ws="none"
    )
    http = uvicorn.Server(config)
    thread = threading.Thread(target=http.run, name="mcp-demo-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not http.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the MCP demo server did not start")
        time.sleep(0.01)
    port = http.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        http.should_exit = True
        thread.join(timeout=10)


if __name__ == "__main__":
    server.run()
