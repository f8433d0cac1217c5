"""MCP servers that misbehave on purpose (issue 28): a handshake that never ends, a schema built
to make reading it explode, names that are not identifiers, children left behind, tool lists
and schemas sized to blow up the planner's prompt.  Each server is a real stdio MCP server
(`mcp_hostile_server.py`, the SDK's low-level `Server`), started as a subprocess."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shlex
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cli_process import invoke_cli, run_cli
from planweave import (
    Budget,
    MCPTools,
    RunFailed,
    RunSettings,
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
    UserError,
    classify,
)
from planweave.tool_schema import SchemaTooLarge, tool_from_schema

TESTS = Path(__file__).parent
FINISH = "Thought: Done.\nAction: Finish(done)"


def server(tmp_path: Path, **spec: Any) -> str:
    """The command line of a hostile server that behaves as `spec` says."""
    path = tmp_path / f"spec{len(list(tmp_path.glob('spec*.json')))}.json"
    path.write_text(json.dumps(spec))
    return shlex.join([sys.executable, str(TESTS / "mcp_hostile_server.py"), str(path)])


def tool(name: str, properties: dict[str, Any] | None = None, **schema: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The {name} tool.",
        "inputSchema": {"type": "object", "properties": properties or {}, **schema},
    }


def scripted(plan: str) -> ScriptedLLM:
    last = max(int(n) for n in re.findall(r"^(\d+)\.", plan, re.M))
    return ScriptedLLM(
        Script.by_purpose(planner=[plan, f"{last + 1}. join()"], joiner=[FINISH] * 2)
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")  # a zombie is not a leak
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


def gone_soon(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# ---------------------------------------------------------------------- handshakes end


@pytest.mark.slow  # 2-8 s
def test_a_server_stalled_in_initialize_is_refused_at_the_deadline(tmp_path: Path) -> None:
    stalled = server(tmp_path, stall="initialize", child=str(tmp_path / "child"))
    started = time.monotonic()
    with pytest.raises(UserError) as caught:
        MCPTools.load(stalled, open_timeout=1)
    # One second of handshake, then the SDK's own bounded shutdown of a stuck process.
    assert time.monotonic() - started < 10
    assert str(caught.value) == (
        f"MCP server {stalled} did not answer its handshake (initialize) within 1 s"
    )
    assert gone_soon(int((tmp_path / "child").read_text()))


def test_an_http_server_that_accepts_and_never_answers_is_refused_at_the_deadline() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(listener.accept()[0])  # read nothing, answer nothing

    threading.Thread(target=accept, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    started = time.monotonic()
    try:
        with pytest.raises(UserError) as caught:
            MCPTools.load(url, open_timeout=1)
    finally:
        listener.close()
        for conn in held:
            conn.close()
    assert time.monotonic() - started < 8
    assert str(caught.value) == (
        f"MCP server {url} did not answer its handshake (initialize) within 1 s"
    )


@pytest.mark.slow  # 2-8 s
def test_the_cli_gives_up_on_a_stalled_server_at_mcp_timeout(tmp_path: Path) -> None:
    stalled = server(tmp_path, stall="initialize")
    started = time.monotonic()
    proc = invoke_cli(
        "run",
        "q",
        "--mcp",
        stalled,
        "--mcp-timeout",
        "1",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
    )
    assert time.monotonic() - started < 20
    assert proc.returncode == 2, proc.stderr
    error = " ".join(proc.stderr.split())
    assert "did not answer its handshake (initialize) within 1 s" in error
    assert "Traceback" not in proc.stderr


@pytest.mark.slow  # 2-8 s
def test_a_run_whose_own_handshake_stalls_fails_the_call_at_the_deadline(tmp_path: Path) -> None:
    later = server(tmp_path, stall="later", starts=str(tmp_path / "starts"), tools=[tool("ping")])
    # The first start answers; 5 s, not 1, so that a loaded machine starts it in time.
    tools = MCPTools.load(later, open_timeout=5)
    runtime = Runtime(tools, scripted("1. ping()\n2. join()\n<END_OF_PLAN>"), tool_timeout=60)
    started = time.monotonic()
    result = runtime.run("q")
    assert time.monotonic() - started < 20
    error = result.tasks[0].error
    assert classify(error) == "tool.crash", error
    assert "did not answer its handshake (initialize) within 5 s" in error.message


@pytest.mark.slow  # 2-8 s
@pytest.mark.parametrize("bound", ["tool_timeout", "wall"])
def test_the_tool_timeout_and_the_wall_budget_end_a_stalled_handshake(
    tmp_path: Path, bound: str
) -> None:
    later = server(tmp_path, stall="later", starts=str(tmp_path / "starts"), tools=[tool("ping")])
    # The handshake's own deadline is far off: the run's limits must end it.
    tools = MCPTools.load(later, open_timeout=600)
    limits: dict[str, Any] = (
        {"tool_timeout": 1} if bound == "tool_timeout" else {"budget": Budget(wall_s=2)}
    )
    runtime = Runtime(tools, scripted("1. ping()\n2. join()\n<END_OF_PLAN>"), **limits)
    started = time.monotonic()
    if bound == "wall":
        with pytest.raises(RunFailed, match="wall-time budget of 2 s"):
            runtime.run("q")
    else:
        result = runtime.run("q")
        assert classify(result.tasks[0].error) == "tool.timeout"
    # The limit, then closing the session: the SDK's bounded shutdown of the stuck server.
    assert time.monotonic() - started < 15


@pytest.mark.slow  # 2-8 s
def test_a_cli_run_over_a_stalled_server_ends_within_max_wall(tmp_path: Path) -> None:
    # The issue's case, as the CLI meets it now that one session serves the listing and the
    # run: the call stalls the server, the call times out (--timeout), the run goes on to its
    # answer, and then closing the stalled session must not outlast --max-wall.
    later = server(tmp_path, stall="call", tools=[tool("ping")])
    script = Script.by_purpose(planner=["1. ping()\n2. join()", "2. join()"], joiner=[FINISH])
    started = time.monotonic()
    with ScriptedServer(script) as llm:
        proc = invoke_cli(
            "run",
            "q",
            "--mcp",
            later,
            "--timeout",
            "1",
            "--max-wall",
            "8",
            "--recovery",
            "none",
            "--base-url",
            llm.base_url,
            "--model",
            "m",
            "--json",
            env={"PLANWEAVE_DB": str(tmp_path / "runs.db")},
        )
    assert time.monotonic() - started < 20  # 8 s, then the stalled server's stop
    assert "Traceback" not in proc.stderr
    data = json.loads(proc.stdout)
    assert data["answer"] == "done"
    assert data["tasks"][0]["error"]["type"] == "ToolTimeout"


@pytest.mark.slow  # 2-8 s
def test_max_wall_bounds_the_listing_of_the_cli(tmp_path: Path) -> None:
    stalled = server(tmp_path, stall="initialize")
    started = time.monotonic()
    proc = invoke_cli(
        "run",
        "q",
        "--mcp",
        stalled,
        "--max-wall",
        "1",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
    )
    assert time.monotonic() - started < 20
    assert proc.returncode == 2
    assert "within 1 s" in " ".join(proc.stderr.split())


# ---------------------------------------------------------------------- children end too


@pytest.mark.slow  # 2-8 s
def test_a_stdio_servers_children_end_with_its_session(tmp_path: Path) -> None:
    child = tmp_path / "child"
    spawning = server(tmp_path, child=str(child), tools=[tool("ping")])
    tools = MCPTools.load(spawning)  # listing: one start, one child, both ended
    assert gone_soon(int(child.read_text()))
    result = Runtime(tools, scripted("1. ping()\n2. join()\n<END_OF_PLAN>")).run("q")
    assert result.tasks[0].error is None
    assert gone_soon(int(child.read_text()))  # the run's own server's child


# ---------------------------------------------------------------------- schemas read in bounds


def _bomb(width: int = 8) -> dict[str, Any]:
    """A few hundred bytes whose naive reading takes width^8 steps."""
    return tool(
        "bomb",
        {"x": {"$ref": "#/$defs/N"}},
        **{"$defs": {"N": {"anyOf": [{"$ref": "#/$defs/N"}] * width}}},
    )


def _wide(width: int = 4, depth: int = 6) -> dict[str, Any]:
    """An inline schema, no references: `width` options at each of `depth` levels (about
    100 kB of JSON)."""
    node: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        node = {"anyOf": [node] * width}  # one object, shared: JSON gives a tree of copies
    return tool("wide", {"x": node})


def test_a_self_referencing_schema_loads_at_once_and_a_wide_one_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tree = tool(
        "tree",
        {"root": {"$ref": "#/$defs/Node"}},
        required=["root"],
        **{
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                }
            }
        },
    )
    spec = server(tmp_path, tools=[_bomb(), _wide(), tree, tool("ping")])
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="planweave.mcp"):
        tools = MCPTools.load(spec)
    assert time.monotonic() - started < 10
    # A reference met inside itself reads as Any: the bomb is cheap and loads.
    assert set(tools) == {"bomb", "tree", "ping"}
    assert tools["tree"].signature_text() == "tree(root: {name: str, children: list})"
    assert tools.skipped == (
        f"MCP server {spec}: tool 'wide' left out: its JSON Schema takes more than 2,000 "
        "steps to read",
    )
    assert tools.skipped[0] in caplog.text


def test_tool_from_schema_names_the_tool_whose_schema_is_too_large() -> None:
    with pytest.raises(SchemaTooLarge, match=r"^tool 'wide': its JSON Schema takes more than"):
        tool_from_schema("wide", "", _wide()["inputSchema"], fn=lambda **kw: kw)


# ---------------------------------------------------------------------- names


NAMES = [
    tool(
        "echo",
        {"self": {"type": "string"}, "1x": {"type": "integer"}, "from": {"type": "string"}},
        required=["self"],
    ),
    tool("évaluer"),
    tool("1tool"),
    tool("a-b"),
    tool("a_b"),
    tool("x" * 5_000),
]


@pytest.mark.slow  # 2-8 s
def test_names_that_are_not_identifiers_work_and_one_bad_tool_is_left_out(tmp_path: Path) -> None:
    spec = server(tmp_path, tools=NAMES)
    tools = MCPTools.load(spec)
    assert set(tools) == {"echo", "evaluer", "_1tool", "a_b"}
    assert tools["echo"].signature_text() == (
        "echo(self: str, _1x: int | None = None, from_: str | None = None)"
    )
    assert tools.skipped[0] == (
        f"MCP server {spec}: tool 'a_b' left out: another tool is named 'a_b' already"
    )
    assert "more than 3,000" in tools.skipped[1]
    plan = '1. echo(self="me", _1x=3, from_="here")\n2. evaluer()\n3. _1tool()\n4. join()'
    result = Runtime(tools, scripted(plan + "\n<END_OF_PLAN>")).run("q")
    assert [t.error for t in result.tasks] == [None] * 3
    # The server hears its own names.
    assert result.results[1] == {
        "tool": "echo",
        "arguments": {"self": "me", "1x": 3, "from": "here"},
    }
    assert result.results[2]["tool"] == "évaluer"
    assert result.results[3]["tool"] == "1tool"


@pytest.mark.slow  # a real process
def test_the_cli_runs_over_a_server_with_unusual_names(tmp_path: Path) -> None:
    plan = '1. hostile_echo(self="me", _1x=3)\n2. join()'  # demo_tools has an echo
    script = Script.by_purpose(planner=[plan], joiner=["Thought: ok\nAction: Finish(echoed)"])
    with ScriptedServer(script) as llm:
        # A real process: the left-out tool's warning reaches its stderr through logging's
        # default handler, which a test's own logging capture would take in this one.
        proc = run_cli(
            "run",
            "q",
            "--tools",
            "demo_tools:TOOLS",
            "--mcp",
            server(tmp_path, tools=NAMES),
            "--base-url",
            llm.base_url,
            "--model",
            "m",
            "--json",
            env={"PLANWEAVE_DB": str(tmp_path / "runs.db")},
        )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    data = json.loads(proc.stdout)
    assert data["tasks"][0]["result"]["arguments"] == {"self": "me", "1x": 3}
    assert "tool 'a_b' left out" in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr


def test_a_schema_naming_a_parameter_self_is_called_with_it() -> None:
    echo = tool_from_schema(
        "echo", "", {"type": "object", "properties": {"self": {"type": "string"}}}, lambda **kw: kw
    )
    assert echo.invoke({"self": "me"}) == {"self": "me"}


# ---------------------------------------------------------------------- the prompt stays small


@pytest.mark.slow  # 2-8 s
def test_ten_thousand_tools_are_cut_to_max_tools(tmp_path: Path) -> None:
    many = server(tmp_path, tools=[tool(f"t{i}") for i in range(10_000)])
    tools = MCPTools.load(many)
    assert list(tools) == [f"t{i}" for i in range(100)]
    assert tools.skipped == (
        f"MCP server {many}: 9,900 of its tools left out: a run takes at most 100 MCP tools "
        "(--mcp-max-tools)",
    )
    assert len(tools.render()) < 100 * 3_000
    few = MCPTools.load(many, max_tools=3)
    assert list(few) == ["t0", "t1", "t2"]


@pytest.mark.slow  # 2-8 s
def test_a_huge_enum_is_shown_as_its_type_and_a_huge_tool_is_left_out(tmp_path: Path) -> None:
    values = [f"value-{i:07d}" for i in range(80_000)]  # about 1 MB of enum
    huge_enum = tool("pick", {"v": {"type": "string", "enum": values}}, required=["v"])
    many_params = tool("wide", {f"p{i}": {"type": "string"} for i in range(1_000)})
    spec = server(tmp_path, tools=[huge_enum, many_params])
    tools = MCPTools.load(spec)
    assert tools["pick"].render() == "pick(v: str): The pick tool."
    assert set(tools) == {"pick"}
    assert tools.skipped == (
        f"MCP server {spec}: tool 'wide' left out: its entry in the planner's prompt would "
        "take 24,910 characters, more than 3,000",
    )
    # The server still checks the value; the planner is told its type.
    result = Runtime(tools, scripted('1. pick("value-0000007")\n2. join()\n<END_OF_PLAN>')).run("q")
    assert result.results[1]["arguments"] == {"v": "value-0000007"}


def test_the_mcp_limits_are_settings_checked_and_bounded_by_the_wall_budget() -> None:
    assert RunSettings().mcp_open_timeout() == 30
    assert RunSettings(mcp_timeout=10, budget=Budget(wall_s=4)).mcp_open_timeout() == 4
    settings = RunSettings(mcp_timeout=2.5, mcp_max_tools=7)
    assert RunSettings.from_dict(settings.to_dict()) == settings
    with pytest.raises(UserError, match="mcp_timeout must be a number of seconds > 0"):
        RunSettings(mcp_timeout=0)
    with pytest.raises(UserError, match="mcp_max_tools must be an integer >= 1"):
        RunSettings(mcp_max_tools=0)
    with pytest.raises(UserError, match="max_tools must be an integer >= 1"):
        MCPTools.load("unused", max_tools=0)


def test_only_a_read_only_mcp_tool_is_free_of_side_effects(tmp_path: Path) -> None:
    """Idempotent is not harmless (deleting twice is idempotent): such a tool waits for
    approval and is never called again unasked (hostile review)."""
    hinted = [
        {**tool("lookup"), "annotations": {"readOnlyHint": True}},
        {
            **tool("delete_account"),
            "annotations": {"idempotentHint": True, "destructiveHint": True},
        },
        {**tool("set_flag"), "annotations": {"idempotentHint": True, "destructiveHint": False}},
        tool("plain"),
    ]
    tools = MCPTools.load(server(tmp_path, tools=hinted))
    assert not tools["lookup"].side_effects
    assert tools["delete_account"].side_effects
    assert tools["set_flag"].side_effects
    assert tools["plain"].side_effects
