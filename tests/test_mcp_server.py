"""`planweave mcp`: planweave itself as an MCP server, used through the official SDK's client:
in process, over stdio (the command in a subprocess, the scripted LLM server as its endpoint)
and over streamable HTTP behind the token."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from cli_process import TESTS, run_cli
from demo_tools import TOOLS
from planweave import Budget, Runtime, Script, ScriptedLLM, ScriptedServer
from planweave.mcp_server import create_server

PLAN = '1. population("France")\n2. population("Belgium")\n3. join()\n<END_OF_PLAN>'
QUESTION = "Which has more people, France or Belgium?"
TOKEN = "mcp-test-token-0123456789"


def script() -> Script:
    return Script.by_purpose(planner=[PLAN] * 2, joiner=["Action: Finish(France)"] * 2)


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLANWEAVE_", "OTEL_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    return env


async def ask_and_read(client: Client) -> tuple[dict[str, object], dict[str, object]]:
    """Ask the question; give the tool's structured answer and the run's resource."""
    reply = await client.call_tool("ask", {"question": QUESTION})
    assert not reply.is_error, reply.content
    answer = reply.structured_content
    assert answer is not None
    resource = await client.read_resource(f"planweave://runs/{answer['run_id']}")
    (content,) = resource.contents
    assert content.mime_type == "application/json"
    return answer, json.loads(content.text)  # type: ignore[union-attr]


def test_ask_answers_with_the_run_id_and_the_runs_are_resources(tmp_path: Path) -> None:
    runtime = Runtime(TOOLS, ScriptedLLM(script()), journal=tmp_path / "runs.db")

    async def main() -> None:
        async with Client(create_server(runtime)) as client:
            (tool,) = (await client.list_tools()).tools
            assert tool.name == "ask"
            assert "population" in (client.instructions or "")
            answer, run = await ask_and_read(client)
            assert answer["answer"] == "France"
            assert answer["status"] == "finished"
            assert answer["tasks"] == 2
            assert run == runtime.journal.show(str(answer["run_id"]))  # type: ignore[union-attr]
            assert [t["tool"] for t in run["tasks"]] == ["population", "population"]  # type: ignore[index]
            listed = await client.list_resources()
            assert [str(r.uri) for r in listed.resources] == ["planweave://runs"]
            templates = await client.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == [
                "planweave://runs/{run_id}"
            ]
            (runs,) = (await client.read_resource("planweave://runs")).contents
            assert [r["id"] for r in json.loads(runs.text)] == [answer["run_id"]]  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="no run"):
                await client.read_resource("planweave://runs/nope")

    anyio.run(main)


def test_a_run_without_an_answer_is_a_tool_error_naming_the_run(tmp_path: Path) -> None:
    runtime = Runtime(
        TOOLS, ScriptedLLM(script()), journal=tmp_path / "runs.db", budget=Budget(llm_calls=1)
    )

    async def main() -> None:
        async with Client(create_server(runtime, max_question_chars=100)) as client:
            reply = await client.call_tool("ask", {"question": QUESTION})
            assert reply.is_error
            text = reply.content[0].text  # type: ignore[union-attr]
            (run,) = runtime.journal.runs()  # type: ignore[union-attr]
            assert f"run {run['id']} ended without an answer" in text
            assert "llm_calls" in text or "LLM calls" in text
            assert "68000000" in text  # what it found before it stopped
            reply = await client.call_tool("ask", {"question": "q" * 101})
            assert reply.is_error
            assert "longer than 100 characters" in reply.content[0].text  # type: ignore[union-attr]
            assert len(runtime.journal.runs()) == 1  # type: ignore[union-attr]

    anyio.run(main)


def test_planweave_mcp_over_stdio(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with ScriptedServer(script()) as llm:
        args = ["-m", "planweave", "mcp", "--tools", "demo_tools:TOOLS", "--db", str(db)]
        args += ["--base-url", llm.base_url, "--model", "m"]
        params = StdioServerParameters(command=sys.executable, args=args, env=environment())

        async def main() -> tuple[dict[str, object], dict[str, object]]:
            async with Client(params) as client:
                return await ask_and_read(client)

        answer, run = anyio.run(main)
    assert answer["answer"] == "France"
    shown = run_cli("runs", "show", str(answer["run_id"]), "--json", "--db", str(db))
    assert json.loads(shown.stdout) == run
    assert run["settings"]["tools"] == ["demo_tools:TOOLS"]  # type: ignore[index]


def test_planweave_mcp_over_streamable_http_needs_the_token(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    with ScriptedServer(script()) as llm:
        command = [sys.executable, "-m", "planweave", "mcp", "--transport", "http"]
        command += ["--port", str(port), "--tools", "demo_tools:TOOLS", "--model", "m"]
        command += ["--base-url", llm.base_url, "--db", str(tmp_path / "runs.db")]
        env = environment() | {"PLANWEAVE_TOKEN": TOKEN}
        proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
                    break
                except httpx.TransportError:
                    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
            assert refused.status_code == 401
            assert refused.json()["error"]["type"] == "unauthorized"

            async def main() -> tuple[dict[str, object], dict[str, object]]:
                headers = {"Authorization": f"Bearer {TOKEN}"}
                async with (
                    httpx.AsyncClient(headers=headers, timeout=30) as http,
                    Client(streamable_http_client(url, http_client=http)) as client,
                ):
                    return await ask_and_read(client)

            answer, run = anyio.run(main)
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=15)
    assert answer["answer"] == "France"
    assert run["id"] == answer["run_id"]
    assert TOKEN not in err


def test_planweave_mcp_refuses_other_addresses_without_a_token(tmp_path: Path) -> None:
    proc = run_cli(
        "mcp", "--transport", "http", "--host", "0.0.0.0", "--db", str(tmp_path / "runs.db")
    )
    assert proc.returncode == 2
    assert "give a token" in proc.stderr
