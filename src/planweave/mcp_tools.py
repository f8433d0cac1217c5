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

import contextlib
import logging
import math
import os
import re
import shlex
import signal
import sys
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
    "CLOSE_TIMEOUT",
    "MAX_TOOLS",
    "MAX_TOOL_CHARS",
    "OPEN_TIMEOUT",
    "MCPServerGone",
    "MCPServerSpec",
    "MCPTools",
    "mcp_servers",
    "mcp_sessions",
]

# Seconds an MCP server has for each step of being reached: its handshake (initialize), the
# listing of its tools, and, at a run's first call of one of its tools, the run's own handshake.
OPEN_TIMEOUT = 30.0
# Seconds a session has to close (the stdio transport's own shutdown, bounded by the SDK, comes
# on top: stdin closed, 2 s to exit, then the process group ended).
CLOSE_TIMEOUT = 5.0
# Seconds the rest of a stdio server's process group has between SIGTERM and SIGKILL.
_GROUP_GRACE = 1.0
# A run's MCP tools, and how long one tool's entry in the planner's prompt may be (its
# signature, description and parameters' descriptions): a server lists what it likes.
MAX_TOOLS = 100
MAX_TOOL_CHARS = 3_000
_STDERR_TAIL = 2_000

log = logging.getLogger("planweave.mcp")


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
    and cancel scopes nest there, whichever task calls a tool).  Its handshake has a deadline
    (`open_timeout`); closing it ends a handshake still under way, and a stdio server's
    process group goes with it."""

    def __init__(self, spec: MCPServerSpec, open_timeout: float = OPEN_TIMEOUT) -> None:
        self.spec = spec
        self.open_timeout = open_timeout
        self.client: Client | None = None
        self.error: BaseException | None = None
        self.failure = "is closed"
        self.opened = anyio.Event()
        self.closing = anyio.Event()
        self.scope = anyio.CancelScope()
        self.stderr: IO[str] | None = None
        self.last_words = ""

    async def hold(self) -> None:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        _watch_spawns()
        spawned: list[int] = []
        token = _SPAWNED.set(spawned)
        # A stdio server's log goes to a file, not over the live view; its end says why a
        # server failed.
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                with self.scope:
                    self.scope.deadline = anyio.current_time() + self.open_timeout
                    try:
                        if self.spec.url is not None:
                            client = Client(self.spec.url)
                        else:
                            self.stderr = errlog
                            program, *args = self.spec.command
                            params = StdioServerParameters(command=program, args=args)
                            client = Client(stdio_client(params, errlog=errlog))
                        async with client:
                            self.scope.deadline = math.inf
                            self.client = client
                            self.opened.set()
                            await self.closing.wait()
                            self.scope.deadline = anyio.current_time() + CLOSE_TIMEOUT
                    except Exception as exc:  # whatever the transport raises, the server is gone
                        self.error = exc
                        self.failure = "could not be reached"
                if self.scope.cancel_called and not self.opened.is_set():
                    self.error = None
                    self.failure = (
                        "was closed before its handshake (initialize) ended"
                        if self.closing.is_set()
                        else "did not answer its handshake (initialize) within "
                        f"{self.open_timeout:g} s"
                    )
            finally:
                _SPAWNED.reset(token)
                self.client = None
                self.last_words = self.stderr_tail()
                self.stderr = None
                self.opened.set()
                for pid in spawned:
                    await _end_group(pid)

    def close(self) -> None:
        """End the session: its handshake if it is still under way, else the session (its
        transport's own shutdown, within `CLOSE_TIMEOUT`)."""
        self.closing.set()
        if not self.opened.is_set():
            self.scope.cancel()

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


# The stdio servers the SDK starts in this context (their pids, each its own process group's
# id: the SDK starts every server in a session of its own).
_SPAWNED: ContextVar[list[int] | None] = ContextVar("planweave_mcp_spawned", default=None)


def _watch_spawns() -> None:
    """Have the SDK's stdio transport tell `_SPAWNED` which process it started.  It kills a
    server's process group only when the server outlives its closed stdin; a server that
    exits at once would leave its children running, so planweave ends the group itself, and
    it needs the id.  The SDK names no public hook: its spawning function is wrapped (where
    it is missing, servers still run, without the group's end)."""
    import mcp.client.stdio as stdio

    spawn = getattr(stdio, "_create_platform_compatible_process", None)
    if spawn is None or getattr(spawn, "planweave_watch", False):
        return

    async def spawning(*args: Any, **kwargs: Any) -> Any:
        process = await spawn(*args, **kwargs)
        found = _SPAWNED.get()
        if found is not None:
            found.append(process.pid)
        return process

    spawning.planweave_watch = True  # type: ignore[attr-defined]
    stdio._create_platform_compatible_process = spawning


async def _end_group(pgid: int) -> None:
    """End what is left of a stdio server's process group: SIGTERM, then SIGKILL to those
    still there after `_GROUP_GRACE` seconds."""
    if sys.platform == "win32":  # the SDK's job object already ended the tree
        return
    with anyio.CancelScope(shield=True):
        try:
            os.killpg(pgid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            return  # nothing left of it
        deadline = anyio.current_time() + _GROUP_GRACE
        while anyio.current_time() < deadline:
            await anyio.sleep(0.02)  # a process's end sends no event to wait for
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


class MCPSessions:
    """The open sessions of one scope (`mcp_sessions()`): at most one per server, opened at
    its first use, all closed when the scope ends."""

    def __init__(self, group: anyio.abc.TaskGroup) -> None:
        self._group = group
        self._servers: dict[MCPServerSpec, _Server] = {}
        # What each server listed in this scope (its name, its tools, whether the listing was
        # cut), by server and the most tools asked for: a registry built again in the scope
        # (`MCPTools.load` inside it) reads it from here instead of asking again.
        self.listed: dict[tuple[MCPServerSpec, int], tuple[str, list[MCPTool], bool]] = {}

    async def client(
        self, spec: MCPServerSpec, open_timeout: float = OPEN_TIMEOUT
    ) -> tuple[Client, _Server]:
        """The server's session, opened at the first ask (its handshake within
        `open_timeout` seconds); MCPServerGone if it cannot be had."""
        server = self._servers.get(spec)
        if server is None:
            server = self._servers[spec] = _Server(spec, open_timeout)
            self._group.start_soon(server.hold, name=f"mcp session {spec}")
        await server.opened.wait()
        if server.client is None:
            raise server.gone(server.failure)
        return server.client, server

    def close(self) -> None:
        for server in self._servers.values():
            server.close()


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
    open_timeout: float = OPEN_TIMEOUT  # for the session's handshake, when this call opens it

    # `self` positional-only: a tool's schema may name an argument `self`.
    async def __call__(self, /, **arguments: Any) -> Any:
        sessions = _SESSIONS.get()
        if sessions is None:
            async with mcp_sessions() as sessions:
                return await self._call(sessions, arguments)
        return await self._call(sessions, arguments)

    async def _call(self, sessions: MCPSessions, arguments: Mapping[str, Any]) -> Any:
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        client, server = await sessions.client(self.server, self.open_timeout)
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


def _tool(spec: MCPServerSpec, name: str, described: MCPTool, open_timeout: float) -> Tool:
    params, names = schema_params(described.input_schema)
    returns, unwrap, fields = schema_returns(described.output_schema)
    hints = described.annotations
    # Annotations are hints from the server: only a tool it calls read-only is free of side
    # effects.  An idempotent one still changes the world (deleting twice is idempotent), so it
    # waits for approval like any other that may, and is never called again unasked.
    harmless = hints is not None and bool(hints.read_only_hint)
    return Tool(
        fn=MCPCall(spec, described.name, names, unwrap, open_timeout),
        name=name,
        description=one_line(sentence(described.description) + " " + fields),
        params=params,
        returns=returns,
        side_effects=not harmless,
        is_async=True,
    )


@dataclass(frozen=True, slots=True)
class _Limits:
    open_timeout: float
    max_tools: int
    max_tool_chars: int


class MCPTools(ToolRegistry):
    """A registry of the tools of MCP servers (`servers`).  Build one with `load` (blocking)
    or `await aload(...)`; a tool whose name another server's tool or a `reserved` name has
    too is named `<server>_<tool>`, the server's own name (from its `serverInfo`) made an
    identifier.

    A server is not trusted to keep the planner's prompt small or its schemas legible: a tool
    that cannot be planned (a schema too costly to read, an entry in the prompt longer than
    `max_tool_chars`, a name that collides) is left out, and so is every tool past the first
    `max_tools`; each is said in `skipped` and logged as a warning (logger `planweave.mcp`),
    and the others load."""

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        servers: Iterable[MCPServerSpec] = (),
        skipped: Iterable[str] = (),
    ):
        super().__init__(list(tools))
        self.servers = tuple(servers)
        self.skipped = tuple(skipped)

    @classmethod
    def load(
        cls,
        *servers: str | MCPServerSpec,
        reserved: Collection[str] = (),
        open_timeout: float = OPEN_TIMEOUT,
        max_tools: int = MAX_TOOLS,
        max_tool_chars: int = MAX_TOOL_CHARS,
    ) -> MCPTools:
        """Connect to each server, list its tools, disconnect.  Blocks; from async code, use
        `aload` (which can keep the sessions open for the runs that follow).  Called in an
        `mcp_sessions()` scope where `aload` has listed these servers already, it builds the
        registry from that listing and connects to nothing."""

        async def listing() -> MCPTools:
            return await cls.aload(
                *servers,
                reserved=reserved,
                open_timeout=open_timeout,
                max_tools=max_tools,
                max_tool_chars=max_tool_chars,
            )

        try:
            anyio.get_current_task()
        except RuntimeError:
            return anyio.run(listing)
        specs = list(dict.fromkeys(MCPServerSpec.parse(s) for s in servers))
        limits = _Limits(open_timeout, max_tools, max_tool_chars)
        known = cls._listed(specs, reserved, limits)
        if known is not None:
            return known
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
        max_tools: int = MAX_TOOLS,
        max_tool_chars: int = MAX_TOOL_CHARS,
    ) -> MCPTools:
        """`load` in async code: inside `mcp_sessions()`, the sessions it opens stay open
        for the runs in that scope.  Each server's handshake, and then its listing, must end
        within `open_timeout` seconds (UserError naming the server and the step otherwise);
        the tools' own sessions in runs get the same for their handshake.  At most
        `max_tools` tools load, each shown to the planner in at most `max_tool_chars`
        characters."""
        try:
            from mcp import MCPError
        except ImportError:
            raise UserError("MCP tools need the mcp extra: pip install 'planweave[mcp]'") from None
        if not (isinstance(open_timeout, int | float) and open_timeout > 0):
            raise UserError(f"the MCP open timeout must be seconds > 0, not {open_timeout!r}")
        for what, value in (("max_tools", max_tools), ("max_tool_chars", max_tool_chars)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"MCP {what} must be an integer >= 1, not {value!r}")
        limits = _Limits(float(open_timeout), max_tools, max_tool_chars)
        specs = list(dict.fromkeys(MCPServerSpec.parse(s) for s in servers))
        found: dict[MCPServerSpec, tuple[str, list[MCPTool]]] = {}
        failed: dict[MCPServerSpec, str] = {}
        cut: set[MCPServerSpec] = set()

        async def list_one(sessions: MCPSessions, spec: MCPServerSpec) -> None:
            try:
                found[spec] = await _list_tools(sessions, spec, limits, cut)
            except MCPServerGone as exc:
                failed[spec] = str(exc)
            except MCPError as exc:
                failed[spec] = f"MCP server {spec}: {_error_text(exc)}"

        async with mcp_sessions() as sessions, anyio.create_task_group() as group:
            for spec in specs:
                group.start_soon(list_one, sessions, spec)
        if failed:
            raise UserError("; ".join(failed[s] for s in specs if s in failed))
        return cls._named_registry(specs, found, reserved, limits, cut)

    @classmethod
    def _listed(
        cls, specs: list[MCPServerSpec], reserved: Collection[str], limits: _Limits
    ) -> MCPTools | None:
        """The registry from what the current `mcp_sessions()` scope has listed already, or
        None when it has not listed every one of `specs` (or there is no scope)."""
        sessions = _SESSIONS.get()
        if sessions is None:
            return None
        listed = [sessions.listed.get((spec, limits.max_tools)) for spec in specs]
        found: dict[MCPServerSpec, tuple[str, list[MCPTool]]] = {}
        cut: set[MCPServerSpec] = set()
        for spec, entry in zip(specs, listed, strict=True):
            if entry is None:
                return None
            found[spec] = entry[:2]
            if entry[2]:
                cut.add(spec)
        return cls._named_registry(specs, found, reserved, limits, cut)

    @classmethod
    def _named_registry(
        cls,
        specs: list[MCPServerSpec],
        found: Mapping[MCPServerSpec, tuple[str, list[MCPTool]]],
        reserved: Collection[str],
        limits: _Limits,
        cut: set[MCPServerSpec],
    ) -> MCPTools:
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
        skipped: list[str] = []
        tools = _named(specs, named, reserved, limits, cut, skipped)
        for line in skipped:
            log.warning("%s", line)
        return cls(tools, specs, skipped)


async def _list_tools(
    sessions: MCPSessions, spec: MCPServerSpec, limits: _Limits, cut: set[MCPServerSpec]
) -> tuple[str, list[MCPTool]]:
    """The server's name and the tools it lists: all pages, or those up to the page that
    passes `max_tools` (the server then joins `cut`).  Listed once in a scope (`listed`)."""
    known = sessions.listed.get((spec, limits.max_tools))
    if known is not None:
        if known[2]:
            cut.add(spec)
        return known[0], known[1]
    client, _ = await sessions.client(spec, limits.open_timeout)
    described: list[MCPTool] = []
    cursor: str | None = None
    with anyio.move_on_after(limits.open_timeout) as listing:
        for _ in range(1_000):
            page = await client.list_tools(cursor=cursor)
            described.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
            if len(described) > limits.max_tools:
                cut.add(spec)
                break
    if listing.cancelled_caught:
        raise MCPServerGone(
            f"MCP server {spec} did not list its tools (tools/list) within "
            f"{limits.open_timeout:g} s"
        )
    info = client.server_info
    name = identifier(info.name if info is not None and info.name else spec.fallback_name())
    sessions.listed[(spec, limits.max_tools)] = (name, described, spec in cut)
    return name, described


def _named(
    specs: list[MCPServerSpec],
    found: Mapping[MCPServerSpec, tuple[str, list[MCPTool]]],
    reserved: Collection[str],
    limits: _Limits,
    cut: Collection[MCPServerSpec],
    skipped: list[str],
) -> list[Tool]:
    """Each server's tools, named; a name two servers (or a reserved name) share is prefixed
    with the server's name (two tools of one server that read as one name: the second is
    left out).  A tool that cannot be planned is left out with a line in
    `skipped`, and so is every tool past `limits.max_tools` (`cut`: the servers whose listing
    was stopped there)."""
    servers: dict[str, set[MCPServerSpec]] = {}
    for spec in specs:
        for described in found[spec][1]:
            servers.setdefault(identifier(described.name), set()).add(spec)
    tools: list[Tool] = []
    taken = set(reserved)
    for spec in specs:
        server_name, described_tools = found[spec]
        for i, described in enumerate(described_tools):
            if len(tools) == limits.max_tools:
                rest = len(described_tools) - i
                more = f"{rest:,} or more" if spec in cut else f"{rest:,}"
                skipped.append(
                    f"MCP server {spec}: {more} of its tools left out: a run takes at most "
                    f"{limits.max_tools} MCP tools (--mcp-max-tools)"
                )
                break
            why = ""
            name = identifier(described.name)
            if len(servers[name]) > 1 or name in reserved or name == "join":
                name = f"{server_name}_{name}"
            if name in taken:
                why = f"another tool is named {name!r} already"
            else:
                try:
                    tool = _tool(spec, name, described, limits.open_timeout)
                except (UserError, ValueError, TypeError, RecursionError) as exc:
                    why = str(exc) or type(exc).__name__
                else:
                    shown = len(tool.render())
                    if shown > limits.max_tool_chars:
                        why = (
                            f"its entry in the planner's prompt would take {shown:,} "
                            f"characters, more than {limits.max_tool_chars:,}"
                        )
            if why:
                skipped.append(f"MCP server {spec}: tool {described.name[:100]!r} left out: {why}")
                continue
            taken.add(name)
            tools.append(tool)
    return tools
