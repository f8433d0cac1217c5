"""MCP tools in: every tool of a Model Context Protocol server as a planweave `Tool`.

A server is named by a spec: a URL (`http://host/mcp`, streamable HTTP) or a command line
(`mcp-server-time --local-timezone UTC`, stdio).  `MCPTools.load(...)` connects, lists the
servers' tools and builds a registry of them: each tool's arguments come from its JSON Schema,
so validation, the planner's grammar, timeouts, recovery, the journal and the live view treat
them like Python tools.

Sessions: a run opens one session per server at the first call of one of its tools and closes
them all when it ends (`Runtime` does this for every registry that holds MCP tools);
`async with mcp_sessions():` keeps them open across several runs, and for `MCPTools.aload`.

Results and failures:

- `structuredContent` is the result (a dict; the `{"result": x}` that the SDK's `MCPServer`
  wraps a plain return value in is unwrapped to `x`); otherwise the text of the content.
- `isError` results and MCP protocol errors (an unknown tool, invalid parameters) raise
  `ToolFailed`: `tool.permanent`.  A request the server let time out is a `TimeoutError`:
  `tool.transient`.
- A server that cannot be started, exits or drops the connection raises `MCPServerGone`:
  `tool.crash`, for the calls in flight and every later call of its tools in that run (it is
  not restarted within a run; the next run starts it again).  A call that hangs ends at the
  tool's timeout like any other (`tool.timeout`).

The `mcp` SDK is imported only when a server is reached, so planweave imports without the
`mcp` extra.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
import threading
from collections.abc import AsyncIterator, Collection, Iterable, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import anyio.abc

from .errors import ToolFailed, UserError
from .tool_schema import identifier, one_line, schema_params, schema_returns, sentence
from .tools import Tool, ToolRegistry

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult
    from mcp.types import Tool as MCPTool

__all__ = [
    "MCPServerGone",
    "MCPServerSpec",
    "MCPTools",
    "mcp_servers",
    "mcp_sessions",
]

OPEN_TIMEOUT = 60.0
_STDERR_TAIL = 2_000


class MCPServerGone(Exception):
    """An MCP server could not be started, exited, or dropped the connection.  A foreign
    failure: the executor turns it into `ToolCrashed` (`tool.crash`) like any other crash."""


@dataclass(frozen=True, slots=True)
class MCPServerSpec:
    """How to reach one MCP server: `url` (streamable HTTP) or `command` (stdio, started with
    the SDK's default environment: PATH, HOME, USER and the like, no secrets)."""

    url: str | None = None
    command: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.url is None) == (not self.command):
            raise UserError("an MCP server is a URL or a command, exactly one of them")

    @classmethod
    def parse(cls, spec: str | MCPServerSpec) -> MCPServerSpec:
        """`http(s)://...` is a streamable HTTP endpoint; anything else a command line."""
        if isinstance(spec, MCPServerSpec):
            return spec
        if not isinstance(spec, str) or not spec.strip():
            raise UserError(f"--mcp expects a command line or an http(s) URL, not {spec!r}")
        if re.match(r"^https?://", spec.strip(), re.I):
            return cls(url=spec.strip())
        try:
            command = tuple(shlex.split(spec))
        except ValueError as exc:
            raise UserError(f"--mcp {spec!r}: cannot split the command line: {exc}") from None
        return cls(command=command)

    def __str__(self) -> str:
        return self.url if self.url is not None else shlex.join(self.command)

    def fallback_name(self) -> str:
        """A name for the server when it does not say its own: the URL's host, or the
        command's program."""
        if self.url is not None:
            return urlsplit(self.url).hostname or "mcp"
        return os.path.basename(self.command[0])


# ---------------------------------------------------------------------- sessions


class _Server:
    """One server's session, held open by its own task (so that the transport's task groups
    and cancel scopes nest there, whichever task calls a tool)."""

    def __init__(self, spec: MCPServerSpec) -> None:
        self.spec = spec
        self.client: Client | None = None
        self.error: BaseException | None = None
        self.opened = anyio.Event()
        self.closing = anyio.Event()
        self.stderr: IO[str] | None = None
        self.last_words = ""

    async def hold(self) -> None:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        # A stdio server's log goes to a file, not over the live view; its end says why a
        # server failed.
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                if self.spec.url is not None:
                    client = Client(self.spec.url)
                else:
                    self.stderr = errlog
                    program, *args = self.spec.command
                    params = StdioServerParameters(command=program, args=args)
                    client = Client(stdio_client(params, errlog=errlog))
                async with client:
                    self.client = client
                    self.opened.set()
                    await self.closing.wait()
            except Exception as exc:  # whatever the transport raises, the server is gone
                self.error = exc
            finally:
                self.client = None
                self.last_words = self.stderr_tail()
                self.stderr = None
                self.opened.set()

    def gone(self, what: str, cause: BaseException | None = None) -> MCPServerGone:
        text = f"MCP server {self.spec} {what}"
        cause = cause or self.error
        if cause is not None:
            text += f": {_error_text(cause)}"
        tail = self.stderr_tail()
        if tail:
            text += f" (its stderr ends: {tail})"
        return MCPServerGone(text)

    def stderr_tail(self) -> str:
        if self.stderr is None or self.stderr.closed:
            return self.last_words
        try:
            self.stderr.flush()
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - _STDERR_TAIL))
            return " ".join(self.stderr.read().split())[-_STDERR_TAIL:]
        except (OSError, ValueError):
            return ""


class MCPSessions:
    """The open sessions of one scope (`mcp_sessions()`): at most one per server, opened at
    its first use, all closed when the scope ends."""

    def __init__(self, group: anyio.abc.TaskGroup) -> None:
        self._group = group
        self._servers: dict[MCPServerSpec, _Server] = {}

    async def client(self, spec: MCPServerSpec) -> tuple[Client, _Server]:
        server = self._servers.get(spec)
        if server is None:
            server = self._servers[spec] = _Server(spec)
            self._group.start_soon(server.hold, name=f"mcp session {spec}")
        await server.opened.wait()
        if server.client is None:
            raise server.gone("could not be reached" if server.error else "is closed")
        return server.client, server

    def close(self) -> None:
        for server in self._servers.values():
            server.closing.set()


_SESSIONS: ContextVar[MCPSessions | None] = ContextVar("planweave_mcp_sessions", default=None)


@asynccontextmanager
async def mcp_sessions() -> AsyncIterator[MCPSessions]:
    """A scope in which each MCP server has one session, opened at its first call and closed
    when the scope ends; inside another such scope, that one's sessions."""
    current = _SESSIONS.get()
    if current is not None:
        yield current
        return
    async with anyio.create_task_group() as group:
        sessions = MCPSessions(group)
        token = _SESSIONS.set(sessions)
        try:
            yield sessions
        finally:
            _SESSIONS.reset(token)
            sessions.close()


def mcp_servers(tools: Iterable[Tool]) -> list[MCPServerSpec]:
    """The MCP servers whose tools are among `tools`, in order."""
    found: dict[MCPServerSpec, None] = {}
    for t in tools:
        if isinstance(t.fn, MCPCall):
            found[t.fn.server] = None
    return list(found)


# ---------------------------------------------------------------------- calling a tool


@dataclass(frozen=True, eq=False)
class MCPCall:
    """The function behind an MCP tool: calls `tool` on `server` in the current scope's session
    (or, outside any, in a session of its own)."""

    server: MCPServerSpec
    tool: str
    names: Mapping[str, str] = field(default_factory=dict)  # our parameter name -> the server's
    unwrap: bool = False

    async def __call__(self, **arguments: Any) -> Any:
        sessions = _SESSIONS.get()
        if sessions is None:
            async with mcp_sessions() as sessions:
                return await self._call(sessions, arguments)
        return await self._call(sessions, arguments)

    async def _call(self, sessions: MCPSessions, arguments: Mapping[str, Any]) -> Any:
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        client, server = await sessions.client(self.server)
        sent = {self.names.get(k, k): v for k, v in arguments.items()}
        try:
            result = await client.call_tool(self.tool, sent)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise server.gone("closed the connection", exc) from exc
            if exc.code == REQUEST_TIMEOUT:
                raise TimeoutError(f"MCP server {self.server}: {exc.message}") from exc
            raise ToolFailed(f"MCP error {exc.code}: {exc.message}") from exc
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise server.gone("dropped the connection", exc) from exc
        return _result(result, unwrap=self.unwrap)


def _result(result: CallToolResult, *, unwrap: bool) -> Any:
    if result.is_error:
        raise ToolFailed(_content_text(result) or "the MCP tool reported an error")
    value = result.structured_content
    if value is None:
        return _content_text(result)
    if unwrap and isinstance(value, dict) and set(value) == {"result"}:
        return value["result"]
    return value


def _content_text(result: CallToolResult) -> str:
    """The content blocks as text: text as it is, other blocks described in a line."""
    from mcp.types import EmbeddedResource, ResourceLink, TextContent, TextResourceContents

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(resource.text)
            else:
                parts.append(f"[resource {resource.uri} ({resource.mime_type or 'binary'})]")
        elif isinstance(block, ResourceLink):
            parts.append(f"[resource link {block.uri}]")
        else:
            parts.append(f"[{block.type} {block.mime_type}, {len(block.data)} base64 characters]")
    return "\n".join(parts)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_error_text(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _tool(spec: MCPServerSpec, name: str, described: MCPTool) -> Tool:
    params, names = schema_params(described.input_schema)
    returns, unwrap, fields = schema_returns(described.output_schema)
    hints = described.annotations
    # Annotations are hints from the server: a tool it calls read-only or idempotent may be
    # called again (retried, re-run on resume); any other may change the world.
    harmless = hints is not None and bool(hints.read_only_hint or hints.idempotent_hint)
    return Tool(
        fn=MCPCall(spec, described.name, names, unwrap),
        name=name,
        description=one_line(sentence(described.description) + " " + fields),
        params=params,
        returns=returns,
        side_effects=not harmless,
        is_async=True,
    )


class MCPTools(ToolRegistry):
    """A registry of the tools of MCP servers (`servers`).  Build one with `load` (blocking)
    or `await aload(...)`; a tool whose name another server's tool or a `reserved` name has
    too is named `<server>_<tool>`, the server's own name (from its `serverInfo`) made an
    identifier."""

    def __init__(self, tools: Iterable[Tool] = (), servers: Iterable[MCPServerSpec] = ()):
        super().__init__(list(tools))
        self.servers = tuple(servers)

    @classmethod
    def load(
        cls,
        *servers: str | MCPServerSpec,
        reserved: Collection[str] = (),
        open_timeout: float = OPEN_TIMEOUT,
    ) -> MCPTools:
        """Connect to each server, list its tools, disconnect.  Blocks; from async code, use
        `aload` (which can keep the sessions open for the runs that follow)."""

        async def listing() -> MCPTools:
            return await cls.aload(*servers, reserved=reserved, open_timeout=open_timeout)

        try:
            anyio.get_current_task()
        except RuntimeError:
            return anyio.run(listing)
        # Called from async code (a runtime built from settings there): the listing runs on
        # an event loop of its own, in a thread this one waits for.
        box: list[MCPTools | BaseException] = []

        def in_thread() -> None:
            try:
                box.append(anyio.run(listing))
            except BaseException as exc:
                box.append(exc)

        worker = threading.Thread(target=in_thread, name="planweave-mcp-listing")
        worker.start()
        worker.join()
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    @classmethod
    async def aload(
        cls,
        *servers: str | MCPServerSpec,
        reserved: Collection[str] = (),
        open_timeout: float = OPEN_TIMEOUT,
    ) -> MCPTools:
        """`load` in async code: inside `mcp_sessions()`, the sessions it opens stay open
        for the runs in that scope."""
        try:
            from mcp import MCPError
        except ImportError:
            raise UserError("MCP tools need the mcp extra: pip install 'planweave[mcp]'") from None
        specs = list(dict.fromkeys(MCPServerSpec.parse(s) for s in servers))
        found: dict[MCPServerSpec, tuple[str, list[MCPTool]]] = {}
        failed: dict[MCPServerSpec, str] = {}

        async def list_one(sessions: MCPSessions, spec: MCPServerSpec) -> None:
            try:
                found[spec] = await _list_tools(sessions, spec)
            except MCPServerGone as exc:
                failed[spec] = str(exc)
            except MCPError as exc:
                failed[spec] = f"MCP server {spec}: {_error_text(exc)}"

        async with mcp_sessions() as sessions:
            with anyio.move_on_after(open_timeout):
                async with anyio.create_task_group() as group:
                    for spec in specs:
                        group.start_soon(list_one, sessions, spec)
        if failed:
            raise UserError("; ".join(failed.values()))
        if len(found) < len(specs):
            late = ", ".join(str(s) for s in specs if s not in found)
            raise UserError(f"MCP server {late} did not list its tools within {open_timeout:g} s")
        named: dict[MCPServerSpec, tuple[str, list[MCPTool]]] = {}
        used: set[str] = set()
        for spec in specs:  # two servers that call themselves the same get _2, _3, ...
            name, described = found[spec]
            unique, n = name, 1
            while unique in used:
                n += 1
                unique = f"{name}_{n}"
            used.add(unique)
            named[spec] = (unique, described)
        return cls(_named(specs, named, reserved), specs)


async def _list_tools(sessions: MCPSessions, spec: MCPServerSpec) -> tuple[str, list[MCPTool]]:
    """The server's name and every tool it lists (all pages)."""
    client, _ = await sessions.client(spec)
    described: list[MCPTool] = []
    cursor: str | None = None
    for _ in range(1_000):
        page = await client.list_tools(cursor=cursor)
        described.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    info = client.server_info
    name = info.name if info is not None and info.name else spec.fallback_name()
    return identifier(name), described


def _named(
    specs: list[MCPServerSpec],
    found: Mapping[MCPServerSpec, tuple[str, list[MCPTool]]],
    reserved: Collection[str],
) -> list[Tool]:
    """Each server's tools, named; a name two servers (or a reserved name) share is prefixed
    with the server's name."""
    counts: dict[str, int] = {}
    for spec in specs:
        for described in found[spec][1]:
            key = identifier(described.name)
            counts[key] = counts.get(key, 0) + 1
    tools: list[Tool] = []
    taken = set(reserved)
    for spec in specs:
        server_name, described_tools = found[spec]
        for described in described_tools:
            name = identifier(described.name)
            if counts[name] > 1 or name in reserved or name == "join":
                name = f"{server_name}_{name}"
            if name in taken:
                raise UserError(
                    f"MCP server {spec}: two tools would be named {name!r}; give the servers "
                    "different names"
                )
            taken.add(name)
            tools.append(_tool(spec, name, described))
    return tools
