"""A hostile MCP server over stdio, for tests/test_mcp_hostile.py: `python mcp_hostile_server.py
SPEC.json`, where the JSON object says how it misbehaves.

- `tools`: the tool definitions it lists, as raw JSON (any name, any schema); a call answers
  `{"tool": name, "arguments": {...}}` as structured content, the arguments as they arrived.
- `stall`: "initialize" answers nothing at all (a server stuck before its handshake);
  "later" answers the first start normally and stalls every later one (it counts its starts
  in `starts`, a file); "call" answers the handshake and the listing, then a call blocks the
  whole server (its event loop sleeps: no answer, no cancellation, stdin's end unnoticed).
- `child`: a file; the server starts a child process that sleeps, writes the child's pid
  there, and exits as soon as its stdin closes, leaving the child behind.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def stall() -> None:
    """Read the client's messages and answer none, until stdin closes; then linger."""
    for _ in sys.stdin:
        pass
    time.sleep(600)


def serve(spec: dict[str, Any]) -> None:
    described = [types.Tool.model_validate(t) for t in spec.get("tools", [])]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=described)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if spec.get("stall") == "call":
            time.sleep(600)  # noqa: ASYNC251 -- blocking the loop is the point
        value = {"tool": params.name, "arguments": params.arguments or {}}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(value))],
            structured_content=value,
        )

    server: Server[Any] = Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    spec = json.loads(Path(sys.argv[1]).read_text())
    if spec.get("child"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        Path(spec["child"]).write_text(str(child.pid))
    if spec.get("stall") == "initialize":
        stall()
    elif spec.get("stall") == "later":
        starts = Path(spec["starts"])
        count = int(starts.read_text() or 0) + 1 if starts.exists() else 1
        starts.write_text(str(count))
        if count > 1:
            stall()
    serve(spec)
