"""MCP servers' tools as planweave tools, against real servers: `mcp-server-time` and
`mcp-server-git` from PyPI over stdio, and a server written with the SDK's `MCPServer`
(`mcp_demo_server.py`) over stdio and over streamable HTTP on loopback."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import anyio
import pytest

from cli_process import invoke_cli
from gbnf import Grammar
from mcp_demo_server import SLOW_CALLS, serve_http
from planweave import (
    MCPServerSpec,
    MCPTools,
    Recovery,
    Reply,
    RunFailed,
    RunResult,
    RunSettings,
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
    ToolRegistry,
    UserError,
    classify,
    mcp_sessions,
)
from planweave.grammar import plan_grammar
from planweave.parser import parse_plan
from planweave.store import Journal
from planweave.tool_schema import schema_params as _params

TESTS = Path(__file__).parent
TIME_SERVER = shlex.join([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])
DEMO_STDIO = shlex.join([sys.executable, str(TESTS / "mcp_demo_server.py")])
FINISH = "Thought: Done.\nAction: Finish(done)"


@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    with serve_http() as url:
        yield url


@pytest.fixture(scope="module")
def demo_http(demo_url: str) -> MCPTools:
    return MCPTools.load(demo_url)


@pytest.fixture(scope="module")
def demo_stdio() -> MCPTools:
    return MCPTools.load(DEMO_STDIO)


def scripted(plan: str, *, joiner: list[str] | None = None) -> ScriptedLLM:
    # Asked again after a task failed for good, the planner gives up (a plan of join alone).
    last = max(int(n) for n in re.findall(r"^(\d+)\.", plan, re.M))
    giving_up = f"{last + 1}. join()"
    return ScriptedLLM(Script.by_purpose(planner=[plan, giving_up], joiner=joiner or [FINISH]))


def records(result: object) -> dict[int, object]:
    return {r.task.id: r for r in result.tasks}  # type: ignore[attr-defined]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by the SDK's process handling) is not a leak.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


# ---------------------------------------------------------------------- mcp-server-time, stdio


@pytest.mark.slow  # 2-8 s
def test_the_time_servers_tools_are_planned_and_run_with_structured_results() -> None:
    tools = MCPTools.load(TIME_SERVER)
    assert list(tools) == ["get_current_time", "convert_time"]
    convert = tools["convert_time"]
    assert [p.name for p in convert.params] == ["source_timezone", "time", "target_timezone"]
    assert all(p.required and p.annotation is str for p in convert.params)
    assert "Returns {source, target, time_difference}" in convert.description
    assert not convert.side_effects  # the server marks it read-only
    grammar = plan_grammar(tools)
    assert Grammar(grammar).accepts('convert_time("Europe/Paris", "10:00", "Asia/Tokyo")', "call")

    plan = (
        '1. get_current_time("Asia/Tokyo")\n'
        '2. convert_time("UTC", "12:00", target_timezone=$1.timezone)\n'
        "3. join()\n<END_OF_PLAN>"
    )
    result = Runtime(tools, scripted(plan)).run("What is 12:00 UTC in Tokyo?")
    now, converted = result.results[1], result.results[2]
    assert now["timezone"] == "Asia/Tokyo"
    assert now["datetime"].endswith("+09:00")
    assert converted["target"]["datetime"].endswith("T21:00:00+09:00")
    assert converted["time_difference"] == "+9.0h"


@pytest.mark.slow  # 2-8 s
def test_an_is_error_result_is_a_permanent_tool_failure() -> None:
    tools = MCPTools.load(TIME_SERVER)
    plan = '1. get_current_time("Nowhere/Atlantis")\n2. join()\n<END_OF_PLAN>'
    result = Runtime(tools, scripted(plan), recovery=Recovery.default()).run("time?")
    failed = records(result)[1]
    assert failed.status == "failed"  # type: ignore[attr-defined]
    assert classify(failed.error) == "tool.permanent"  # type: ignore[attr-defined]
    assert "Invalid timezone" in str(failed.error)  # type: ignore[attr-defined]
    assert failed.attempts == 1  # type: ignore[attr-defined]  # permanent: never retried


# ---------------------------------------------------------------------- mcp-server-git, stdio


@pytest.mark.slow  # 2-8 s
def test_the_git_server_reads_a_repository_the_test_made(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "notes.md").write_text("planweave\n")
    subprocess.run([*git, "add", "notes.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Add the notes"], check=True)
    (repo / "todo.txt").write_text("more\n")

    spec = shlex.join([sys.executable, "-m", "mcp_server_git", "--repository", str(repo)])
    tools = MCPTools.load(spec)
    assert {"git_log", "git_status", "git_commit"} <= set(tools)
    assert tools["git_commit"].side_effects  # not marked read-only or idempotent
    assert not tools["git_status"].side_effects

    path = str(repo).replace("\\", "\\\\")
    plan = (
        f'1. git_log("{path}", max_count=5)\n'
        f'2. git_status(repo_path="{path}")\n'
        "3. join()\n<END_OF_PLAN>"
    )
    result = Runtime(tools, scripted(plan)).run("What changed?")
    assert "Message: Add the notes" in result.results[1]
    assert "todo.txt" in result.results[2]


# ---------------------------------------------------------------------- MCPServer over HTTP


def test_arguments_come_from_the_json_schema(demo_http: MCPTools) -> None:
    shout = demo_http["shout"]
    assert shout.signature_text() == (
        "shout(text: str, mark: '!' | '?' = '!', times: int | None = None) -> str"
    )
    assert demo_http["add"].signature_text() == "add(a: int, b: int) -> int"
    # The same validation as a Python tool's, before any request goes out.
    with pytest.raises(ValueError, match="mark"):
        shout.validate({"text": "hi", "mark": "~"})
    with pytest.raises(ValueError, match="a"):
        demo_http["add"].validate({"a": "seven", "b": 1})
    assert '"\\"!\\"" | "\\"?\\""' in plan_grammar(demo_http)
    with pytest.raises(Exception, match="add"):
        parse_plan('1. add("x", 2)\n2. join()', demo_http)


def test_names_that_are_not_identifiers_are_mapped_back() -> None:
    params, names = _params(
        {
            "type": "object",
            "properties": {
                "repo-path": {"type": "string"},
                "from": {"$ref": "#/$defs/Day"},
                "count": {"type": ["integer", "null"], "default": 2},
                "tags": {"type": "array", "items": {"type": "string"}},
                "mode": {"anyOf": [{"const": "fast"}, {"const": "slow"}]},
            },
            "required": ["from", "repo-path"],
            "$defs": {"Day": {"enum": ["mon", "tue"]}},
        }
    )
    shown = {p.name: (p.annotation, p.required) for p in params}
    assert [p.name for p in params][:2] == ["repo_path", "from_"]  # required first
    assert shown["repo_path"] == (str, True)
    assert str(shown["from_"][0]) == "typing.Literal['mon', 'tue']"
    assert shown["count"] == (int | None, False)
    assert shown["tags"] == (list[str] | None, False)
    assert names == {"repo_path": "repo-path", "from_": "from"}


def test_a_plan_over_http_tools_runs_with_structured_and_text_results(
    demo_http: MCPTools,
) -> None:
    plan = (
        '1. city("Utrecht")\n'
        "2. add($1.population, 1000)\n"
        '3. shout("ok", mark="?")\n'
        '4. plain("words")\n'
        '5. city("Atlantis")\n'
        "6. join()\n<END_OF_PLAN>"
    )
    result = Runtime(demo_http, scripted(plan)).run("q")
    assert result.results[1] == {"name": "Utrecht", "country": "Netherlands", "population": 361000}
    assert result.results[2] == 362000  # {"result": ...} unwrapped, an int
    assert result.results[3] == "OK?"
    assert result.results[4] == "plain: words"  # text content, as text
    failed = records(result)[5]
    assert classify(failed.error) == "tool.permanent"  # type: ignore[attr-defined]
    assert "no city named 'Atlantis'" in str(failed.error)  # type: ignore[attr-defined]


def test_a_hung_call_times_out_and_the_session_stays_usable(demo_http: MCPTools) -> None:
    plan = "1. slow(30)\n2. add(1, 2)\n3. add($2, 1)\n4. join()\n<END_OF_PLAN>"
    runtime = Runtime(demo_http, scripted(plan), tool_timeout=0.5, recovery=Recovery.none())
    result = runtime.run("q")
    assert result.wall_s < 30  # on the run's clock: the 30 s call was given up
    assert classify(records(result)[1].error) == "tool.timeout"  # type: ignore[attr-defined]
    assert result.results[3] == 4


@pytest.mark.slow  # 2-8 s
def test_two_servers_with_the_same_tools_get_prefixed_names(demo_url: str) -> None:
    tools = MCPTools.load(demo_url, DEMO_STDIO, reserved={"whoami"})
    assert {"demo_add", "demo_2_add", "demo_whoami"} <= set(tools)
    assert "whoami" not in tools
    plan = "1. demo_whoami()\n2. demo_2_whoami()\n3. join()\n<END_OF_PLAN>"
    result = Runtime(tools, scripted(plan)).run("q")
    assert result.results[1] == os.getpid()  # the HTTP server runs in this process
    assert result.results[2] != os.getpid()  # the stdio one in its own


# ---------------------------------------------------------------------- sessions and dead servers


@pytest.mark.slow  # 2-8 s
def test_one_session_per_server_per_run_and_no_process_left(demo_stdio: MCPTools) -> None:
    plan = "1. whoami()\n2. whoami()\n3. add($1, 0)\n4. join()\n<END_OF_PLAN>"
    runtime = Runtime(
        demo_stdio, ScriptedLLM(Script.by_purpose(planner=[plan] * 4, joiner=[FINISH] * 4))
    )
    first = runtime.run("q").results
    assert first[1] == first[2] == first[3]  # one server process for the whole run
    assert not alive(first[1])  # closed with the run
    second = runtime.run("q").results
    assert second[1] != first[1]

    async def two_runs_in_one_scope() -> tuple[int, int]:
        async with mcp_sessions():
            a = await runtime.arun("q")
            b = await runtime.arun("q")
            return a.results[1], b.results[1]

    a, b = anyio.run(two_runs_in_one_scope)
    assert a == b
    assert not alive(a)


def test_a_server_that_dies_mid_call_is_a_crash_not_a_hang(demo_stdio: MCPTools) -> None:
    plan = "1. die()\n2. slow(20)\n3. add(1, 2)\n4. join()\n<END_OF_PLAN>"
    runtime = Runtime(demo_stdio, scripted(plan), tool_timeout=30)
    result = runtime.run("q")
    assert result.wall_s < 20  # on the run's clock: the 20 s call ended with its server
    by_id = records(result)
    for task_id in (1, 2):
        error = by_id[task_id].error  # type: ignore[attr-defined]
        assert classify(error) == "tool.crash", error
        assert error.cause == "MCPServerGone"
        assert "closed the connection" in error.message
    assert result.answer == "done"  # the joiner still answered


def test_a_server_that_cannot_start_is_a_clear_error() -> None:
    with pytest.raises(UserError, match=r"could not be reached.*stderr ends: no config"):
        MCPTools.load(shlex.join([sys.executable, "-c", "import sys; sys.exit('no config')"]))
    with pytest.raises(UserError, match="no-such-mcp-server"):
        MCPTools.load("no-such-mcp-server --flag")
    with pytest.raises(UserError, match="URL or a command"):
        MCPServerSpec()


# ---------------------------------------------------------------------- settings, journal, resume


@pytest.mark.slow  # 2-8 s
def test_settings_record_the_servers_and_resume_reconnects(tmp_path: Path, demo_url: str) -> None:
    settings = RunSettings(tools=("demo_tools:TOOLS",), mcp=(demo_url, TIME_SERVER))
    assert RunSettings.from_dict(settings.to_dict()) == settings
    plan = '1. city("Ghent")\n2. get_current_time("UTC")\n3. join()\n<END_OF_PLAN>'
    first = Script.by_purpose(planner=[plan], joiner=[Reply(status=503)])
    journal = Journal(tmp_path / "runs.db")
    runtime = Runtime.from_settings(settings, llm=ScriptedLLM(first), journal=journal)
    assert {"city", "get_current_time", "population"} <= set(runtime.tools)
    with pytest.raises(RunFailed):  # the endpoint went away before the joiner answered
        runtime.run("q")
    run_id = journal.runs(1)[0]["id"]
    assert journal.show(run_id)["settings"]["mcp"] == [demo_url, TIME_SERVER]

    recorded = RunSettings.from_dict(journal.show(run_id)["settings"])
    again = Runtime.from_settings(
        recorded, llm=ScriptedLLM(Script.by_purpose(joiner=[FINISH])), journal=journal
    )
    result = again.resume(run_id)
    assert result.answer == "done"
    assert result.results[1]["country"] == "Belgium"
    assert [r.reused for r in result.tasks] == [True, True]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_runtime_from_settings_can_be_built_in_async_code(
    demo_url: str, anyio_backend: str
) -> None:
    runtime = Runtime.from_settings(
        RunSettings(tools=(), mcp=(demo_url,)), llm=scripted("1. add(2, 3)\n2. join()")
    )
    result = await runtime.arun("q")
    assert result.results[1] == 5


# ---------------------------------------------------------------------- the CLI


@pytest.mark.slow  # 2-8 s
def test_the_cli_plans_over_mcp_tools_and_records_the_servers(tmp_path: Path) -> None:
    plan = '1. get_current_time("Europe/Amsterdam")\n2. population("Netherlands")\n3. join()'
    script = Script.by_purpose(
        planner=[plan], joiner=["Thought: ok\nAction: Finish(It is evening there.)"]
    )
    env = {"PLANWEAVE_DB": str(tmp_path / "runs.db")}
    with ScriptedServer(script) as server:
        proc = invoke_cli(
            "run",
            "What time is it in Amsterdam?",
            "--tools",
            "demo_tools:TOOLS",
            "--mcp",
            TIME_SERVER,
            "--base-url",
            server.base_url,
            "--model",
            "m",
            "--json",
            env=env,
        )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["answer"] == "It is evening there."
    first = data["tasks"][0]
    assert first["tool"] == "get_current_time"
    assert first["status"] == "done"
    assert first["result"]["timezone"] == "Europe/Amsterdam"
    shown = invoke_cli("runs", "show", data["id"], "--json", env=env)
    assert json.loads(shown.stdout)["settings"]["mcp"] == [TIME_SERVER]


@pytest.mark.slow  # 2-8 s
def test_the_cli_lists_and_calls_a_server_s_tools_in_one_session(tmp_path: Path) -> None:
    # Each start of the server adds a line to `starts`.
    starts = tmp_path / "starts"
    command = f"echo up >> {shlex.quote(str(starts))}; exec {DEMO_STDIO}"
    spec = shlex.join(["sh", "-c", command])
    script = Script.by_purpose(planner=["1. add(2, 3)\n2. join()"], joiner=[FINISH])
    with ScriptedServer(script) as server:
        proc = invoke_cli(
            "run", "2 + 3?", "--tools", "demo_tools:TOOLS", "--mcp", spec, "--base-url",
            server.base_url, "--model", "m", "--json",
            env={"PLANWEAVE_DB": str(tmp_path / "runs.db")},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tasks"][0]["result"] == 5
    assert starts.read_text().splitlines() == ["up"]  # listed and called on one connection

    # A run paused for approval, then approved: each command starts the server once.
    starts.unlink()
    script = Script.by_purpose(planner=["1. add(4, 5)\n2. join()"], joiner=[FINISH])
    env = {"PLANWEAVE_DB": str(tmp_path / "runs.db")}
    with ScriptedServer(script) as server:
        reach = ["--tools", "demo_tools:TOOLS", "--mcp", spec, "--base-url", server.base_url]
        paused = invoke_cli("run", "4 + 5?", *reach, "--model", "m", "--approve", "plan", "--json",
                         env=env)  # fmt: skip
        assert paused.returncode == 3, paused.stderr
        run_id = json.loads(paused.stdout)["id"]
        approved = invoke_cli("runs", "approve", run_id, *reach, "--json", env=env)
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout)["tasks"][0]["result"] == 9
    assert starts.read_text().splitlines() == ["up", "up"]


def test_the_cli_names_a_server_it_cannot_start() -> None:
    proc = invoke_cli(
        "run",
        "q",
        "--mcp",
        "no-such-mcp-server",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
    )
    assert proc.returncode == 2
    error = " ".join(proc.stderr.split())  # as the terminal wrapped it
    assert "error: MCP server no-such-mcp-server could not be reached: FileNotFoundError" in error


@pytest.mark.slow  # 2-8 s
def test_an_http_server_that_goes_away_is_a_crash_in_flight_and_after() -> None:
    plans = ["1. slow(2)\n2. join()\n<END_OF_PLAN>", "1. add(1, 2)\n2. join()\n<END_OF_PLAN>"]
    serving = serve_http()  # a server of its own, stopped while a call is in flight
    tools = MCPTools.load(serving.__enter__())
    script = Script.by_purpose(planner=plans, joiner=[FINISH] * 2)
    runtime = Runtime(tools, ScriptedLLM(script), tool_timeout=20)

    async def run_and_stop() -> RunResult:
        async with anyio.create_task_group() as group:
            group.start_soon(stop_soon)
            return await runtime.arun("q")

    async def stop_soon() -> None:
        # Stopped once the server is serving the call (it runs in this process), not after a
        # guess at how long the call takes to get there.
        assert await anyio.to_thread.run_sync(SLOW_CALLS.wait)
        await anyio.to_thread.run_sync(serving.__exit__, None, None, None)

    in_flight = anyio.run(run_and_stop)
    after = runtime.run("q")
    assert after.wall_s < 20  # on the run's clock: refused at once, not left to the timeout
    first, second = records(in_flight)[1].error, records(after)[1].error  # type: ignore[attr-defined]
    assert classify(first) == "tool.crash"
    assert "closed the connection" in first.message
    assert classify(second) == "tool.crash"
    assert "could not be reached: ConnectError" in second.message


# ---------------------------------------------------------------------- the embedded model

TIME_EXAMPLES = [
    "Question: What is the date in Sydney right now?\n"
    "Thought: One lookup of the current time there.\n"
    '1. get_current_time("Australia/Sydney")\n2. join()\n<END_OF_PLAN>',
    "Question: When it is 08:15 in Chicago, what time is it in Berlin?\n"
    '1. convert_time("America/Chicago", "08:15", "Europe/Berlin")\n2. join()\n<END_OF_PLAN>',
]


@pytest.mark.model
@pytest.mark.timeout(900)
def test_the_embedded_model_answers_with_the_time_server() -> None:
    from planweave.llm.local import LocalLLM

    def weekday() -> str:
        return datetime.now(ZoneInfo("Asia/Tokyo")).strftime("%A")

    tools = ToolRegistry(MCPTools.load(TIME_SERVER), examples=TIME_EXAMPLES)
    before = weekday()
    result = Runtime(tools, LocalLLM("qwen2.5-coder-1.5b")).run(
        "What day of the week is it now in Tokyo?"
    )
    days = {before, weekday()}
    lookups = [r for r in result.tasks if r.task.tool == "get_current_time"]
    assert lookups, result.tasks
    assert lookups[0].result["timezone"] == "Asia/Tokyo"
    assert lookups[0].result["day_of_week"] in days
    assert any(day in (result.answer or "") for day in days), result.answer
