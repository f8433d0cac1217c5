"""`planweave mcp`: planweave itself as an MCP server, used through the official SDK's client:
in process, over stdio (the command in a subprocess, the scripted LLM server as its endpoint)
and over streamable HTTP behind the token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from cli_process import TESTS, Announced, invoke_cli
from demo_tools import TOOLS
from planweave import Budget, Runtime, Script, ScriptedLLM, ScriptedServer, Tool, tool
from planweave.mcp_server import MAX_TOOL_LINE, MAX_TOOL_LINES, ask_description, create_server

PLAN = '1. population("France")\n2. population("Belgium")\n3. join()\n<END_OF_PLAN>'
QUESTION = "Which has more people, France or Belgium?"
TOKEN = "mcp-test-token-0123456789"


def script() -> Script:
    return Script.by_purpose(planner=[PLAN] * 2, joiner=["Action: Finish(France)"] * 2)


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLANWEAVE_", "OTEL_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    return env


async def ask_and_read(
    client: Client, progress: list[tuple[float, float | None]] | None = None
) -> tuple[dict[str, object], dict[str, object]]:
    """Ask the question; give the tool's structured answer and the run's resource.
    `progress`: where the progress notifications go, (progress, total) each."""

    async def heard(done: float, total: float | None, message: str | None) -> None:
        assert progress is not None
        progress.append((done, total))

    reply = await client.call_tool(
        "ask", {"question": QUESTION}, progress_callback=None if progress is None else heard
    )
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
            # The output schema tells a client what the structured answer holds.
            assert tool.output_schema is not None
            assert "tasks" in tool.output_schema["required"]
            answer, run = await ask_and_read(client)
            assert answer["answer"] == "France"
            assert answer["status"] == "finished"
            # The calls it made, as structured content: what each was and gave.
            tasks = answer["tasks"]
            assert isinstance(tasks, list)
            assert [(t["id"], t["tool"], t["call"], t["status"], t["result"]) for t in tasks] == [
                (1, "population", 'population("France")', "done", 68_000_000),
                (2, "population", 'population("Belgium")', "done", 11_800_000),
            ]
            assert all(t["error"] is None and 0 <= t["seconds"] < 5 for t in tasks)
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


def test_ask_s_tasks_say_what_failed_and_cut_a_long_result(tmp_path: Path) -> None:
    long = "x" * 5000
    plan = f'1. echo("{long}")\n2. divide(1, 0)\n3. join()\n<END_OF_PLAN>'
    llm = ScriptedLLM(
        Script.by_purpose(planner=[plan, "4. join()"], joiner=["Action: Finish(done)"])
    )
    runtime = Runtime(TOOLS, llm, journal=tmp_path / "runs.db")

    async def main() -> dict[str, object]:
        async with Client(create_server(runtime)) as client:
            return (await ask_and_read(client))[0]

    answer = anyio.run(main)
    echoed, divided = answer["tasks"]  # type: ignore[misc]
    assert (echoed["status"], echoed["truncated"]) == ("done", True)
    assert len(echoed["result"]) == 4000
    assert echoed["result"].startswith('"xxx')
    assert (divided["status"], divided["result"]) == ("failed", None)
    assert "division by zero" in divided["error"]


@tool(side_effects=True)
def send_note(text: str) -> str:
    """Sends a note to the team.  It goes to everyone on the list.

    Args:
        text: what the note says
    """
    return text


def test_ask_s_description_says_which_tools_stand_behind_it(tmp_path: Path) -> None:
    runtime = Runtime([*TOOLS, send_note], ScriptedLLM([]), journal=tmp_path / "runs.db")

    async def main() -> str:
        async with Client(create_server(runtime)) as client:
            (ask,) = (await client.list_tools()).tools
            assert ask.input_schema["properties"]["question"]["description"]
            return ask.description or ""

    description = anyio.run(main)
    assert not any(line.startswith(" ") for line in description.splitlines())  # dedented
    assert "\n\nIts tools:\n" in description
    assert "- population: The population of a country.\n" in description
    assert "- divide: a divided by b.\n" in description
    # One sentence a tool, and what waits for the operator says so.
    assert "- send_note: Sends a note to the team. (waits for the operator's approval)" in (
        description
    )
    assert "everyone" not in description
    listed = [line.split(":")[0][2:] for line in description.splitlines() if line.startswith("- ")]
    assert listed == list(runtime.tools)


def test_ask_s_description_of_many_tools_is_bounded(tmp_path: Path) -> None:
    many = {
        f"tool_{n:03}": Tool.from_schema(
            f"tool_{n:03}", "Looks things up " * 40, {"type": "object"}, lambda: None
        )
        for n in range(300)
    }
    description = ask_description(many)
    tools = description.partition("Its tools:\n")[2]
    lines = tools.splitlines()
    assert all(len(line) <= MAX_TOOL_LINE for line in lines[:-1])
    assert len(tools) < MAX_TOOL_LINES + 5 * MAX_TOOL_LINE
    shown = len(lines) - 1
    assert 10 < shown < 300
    assert lines[-1].startswith(f"- and {300 - shown} more: tool_{shown:03}, ")
    assert ask_description({}).endswith("timing and result).")  # no tools, no list


def test_ask_reports_progress_while_the_run_goes(tmp_path: Path) -> None:
    plan = (
        '1. population("France")\n2. population("Belgium")\n3. divide($1, $2)\n'
        "4. join()\n<END_OF_PLAN>"
    )
    script = Script.by_purpose(planner=[plan], joiner=["Action: Finish(about 5.8 times)"])
    runtime = Runtime(TOOLS, ScriptedLLM(script), journal=tmp_path / "runs.db")
    heard: list[tuple[float, float | None, str | None, str]] = []

    async def progressed(progress: float, total: float | None, message: str | None) -> None:
        (run,) = runtime.journal.runs()  # type: ignore[union-attr]
        heard.append((progress, total, message, run["status"]))

    async def main() -> dict[str, object]:
        async with Client(create_server(runtime)) as client:
            reply = await client.call_tool(
                "ask", {"question": QUESTION}, progress_callback=progressed
            )
            assert not reply.is_error, reply.content
            assert reply.structured_content is not None
            return reply.structured_content

    answer = anyio.run(main)
    assert answer["answer"] == "about 5.8 times"
    # One notification a task, while the run went; the count only grows, and ends at the total.
    # (The total is what was planned by then: the plan streams in as tasks run.)
    assert [progress for progress, *_ in heard] == [1, 2, 3]
    totals = [total for _, total, *_ in heard]
    assert totals == sorted(totals)
    assert all(t is not None and p <= t for p, t, *_ in heard)
    assert totals[-1] == 3
    assert {status for *_, status in heard} == {"running"}
    assert heard[-1][2] == "3/3 tasks done; task 3 (divide) finished"


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


@pytest.mark.slow  # a real process
def test_planweave_mcp_over_stdio(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with ScriptedServer(script()) as llm:
        args = ["-m", "planweave", "mcp", "--tools", "demo_tools:TOOLS", "--db", str(db)]
        args += ["--base-url", llm.base_url, "--model", "m"]
        params = StdioServerParameters(command=sys.executable, args=args, env=environment())
        progress: list[tuple[float, float | None]] = []

        async def main() -> tuple[dict[str, object], dict[str, object]]:
            async with Client(params) as client:
                return await ask_and_read(client, progress)

        answer, run = anyio.run(main)
    assert answer["answer"] == "France"
    # Notifications on the wire, one a task (the total: what was planned by then).
    assert [done for done, _ in progress] == [1, 2]
    assert progress[-1] == (2, 2)
    shown = invoke_cli("runs", "show", str(answer["run_id"]), "--json", "--db", str(db))
    assert json.loads(shown.stdout) == run
    assert run["settings"]["tools"] == ["demo_tools:TOOLS"]  # type: ignore[index]


@pytest.mark.slow  # a real process
def test_planweave_mcp_over_streamable_http_needs_the_token(tmp_path: Path) -> None:
    with ScriptedServer(script()) as llm:
        command = [sys.executable, "-m", "planweave", "mcp", "--transport", "http"]
        command += ["--port", "0", "--tools", "demo_tools:TOOLS", "--model", "m"]
        command += ["--base-url", llm.base_url, "--db", str(tmp_path / "runs.db")]
        env = environment() | {"PLANWEAVE_TOKEN": TOKEN}
        server = Announced(subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True))
        url = f"{server.url}/mcp"
        try:
            refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
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
            err = server.stop()
    assert answer["answer"] == "France"
    assert run["id"] == answer["run_id"]
    assert TOKEN not in err


def test_planweave_mcp_refuses_other_addresses_without_a_token(tmp_path: Path) -> None:
    proc = invoke_cli(
        "mcp", "--transport", "http", "--host", "0.0.0.0", "--db", str(tmp_path / "runs.db")
    )
    assert proc.returncode == 2
    assert "give a token" in proc.stderr
