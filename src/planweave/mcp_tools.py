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

import inspect
import keyword
import operator
import os
import re
import shlex
import tempfile
import threading
from collections.abc import AsyncIterator, Collection, Iterable, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import reduce
from typing import IO, TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import anyio
import anyio.abc

from .errors import ToolFailed, UserError
from .tools import Param, Tool, ToolRegistry

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
_MAX_DESCRIPTION = 1_000
_STDERR_TAIL = 2_000
_NOT_IDENTIFIER = re.compile(r"\W+")


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


# ---------------------------------------------------------------------- JSON Schema -> Tool


def _annotation(schema: Any, defs: Mapping[str, Any], depth: int = 0) -> Any:
    """The Python type a JSON Schema describes, as far as planning needs it (the server
    validates the rest); Any where it cannot say."""
    if not isinstance(schema, Mapping) or depth > 16:
        return Any
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref.rpartition("/")[2]) if ref.startswith("#/$defs/") else None
        return _annotation(target, defs, depth + 1)
    for key in ("enum", "const"):
        if key in schema:
            values = schema[key] if key == "enum" else [schema[key]]
            if (
                isinstance(values, list)
                and values
                and all(isinstance(v, str | int | bool) or v is None for v in values)
            ):
                return Literal[tuple(values)]
            return Any
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return _union([_annotation(s, defs, depth + 1) for s in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([_annotation({**schema, "type": k}, defs, depth + 1) for k in kind])
    if kind == "array":
        item = _annotation(schema.get("items"), defs, depth + 1)
        return list if item is Any else list[item]  # type: ignore[valid-type]
    simple: dict[Any, Any] = {
        "string": str,
        "integer": int,
        "number": float,
        "boolean": bool,
        "null": type(None),
        "object": dict[str, Any],
    }
    return simple.get(kind, Any)


def _union(options: list[Any]) -> Any:
    if not options or any(o is Any for o in options):
        return Any
    return reduce(operator.or_, options)


def _identifier(name: str) -> str:
    text = _NOT_IDENTIFIER.sub("_", name).strip("_") or "_"
    if text[0].isdigit() or keyword.iskeyword(text):
        text += "_"
    return text


def _one_line(text: str | None, limit: int = _MAX_DESCRIPTION) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _sentence(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text + "." if text and text[-1].isalnum() else text


def _params(schema: Mapping[str, Any]) -> tuple[tuple[Param, ...], dict[str, str]]:
    """The parameters of an input schema, required first; and our names for the server's."""
    defs = schema.get("$defs") or schema.get("definitions") or {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    params: list[Param] = []
    names: dict[str, str] = {}
    for original, prop in properties.items():
        name = _identifier(str(original))
        while name in names:
            name += "_"
        names[name] = str(original)
        prop = prop if isinstance(prop, Mapping) else {}
        annotation = _annotation(prop, defs)
        if original in required:
            default: Any = inspect.Parameter.empty
        elif "default" in prop:
            default = prop["default"]
        else:
            default = None
            if annotation is not Any:
                annotation = annotation | None
        params.append(
            Param(
                name=name,
                annotation=annotation,
                default=default,
                description=_one_line(prop.get("description"), 300),
                positional_only=False,
            )
        )
    params.sort(key=lambda p: not p.required)
    return tuple(params), {k: v for k, v in names.items() if k != v}


def _returns(schema: Mapping[str, Any] | None) -> tuple[Any, bool, str]:
    """The declared return type, whether results are `{"result": x}` to unwrap, and a line
    for the description naming the fields (so the planner can write `$1.field`)."""
    if not isinstance(schema, Mapping):
        return inspect.Parameter.empty, False, ""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return inspect.Parameter.empty, False, ""
    if set(properties) == {"result"}:
        # The SDK's MCPServer wraps a plain return value so: the planner sees the value.
        inner = _annotation(properties["result"], schema.get("$defs") or {})
        return (inspect.Parameter.empty if inner is Any else inner), True, ""
    return dict[str, Any], False, f"Returns {{{', '.join(map(str, properties))}}}."


def _tool(spec: MCPServerSpec, name: str, described: MCPTool) -> Tool:
    params, names = _params(described.input_schema)
    returns, unwrap, fields = _returns(described.output_schema)
    hints = described.annotations
    # Annotations are hints from the server: a tool it calls read-only or idempotent may be
    # called again (retried, re-run on resume); any other may change the world.
    harmless = hints is not None and bool(hints.read_only_hint or hints.idempotent_hint)
    return Tool(
        fn=MCPCall(spec, described.name, names, unwrap),
        name=name,
        description=_one_line(_sentence(described.description) + " " + fields),
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
    return _identifier(name), described


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
            key = _identifier(described.name)
            counts[key] = counts.get(key, 0) + 1
    tools: list[Tool] = []
    taken = set(reserved)
    for spec in specs:
        server_name, described_tools = found[spec]
        for described in described_tools:
            name = _identifier(described.name)
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
