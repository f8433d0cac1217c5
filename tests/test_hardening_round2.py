"""Issue 28, second hardening round (items 6, 9, 10, 11, 17, 18, 19): each test reproduces a
defect on the real thing (a killed `planweave` process and its SQLite journal, the scripted SSE
server, real worker processes) and fails on the code before the fix."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import fanout_tools
import round2_tools
from cli_process import invoke_cli, run_cli
from planweave import (
    Decompose,
    InvalidApproval,
    PlanCache,
    Recovery,
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
    ToolFailed,
    ToolRegistry,
    UserError,
    parse_plan,
    tool,
)
from planweave.cache.template import extract
from planweave.events import CacheAdapted, EventBus, RunFinished, TaskPlanned, TaskStarted
from planweave.invoker import Invoker
from planweave.scheduler import Scheduler
from planweave.settings import RunSettings
from planweave.store import Journal

# ------------------------------------------------------------------ 6: fan-out elements in flight


@pytest.fixture
def letters() -> Iterator[ScriptedServer]:
    script = Script.by_purpose(planner=[round2_tools.PLAN] * 2, joiner=[round2_tools.FINISH] * 2)
    with ScriptedServer(script) as srv:
        yield srv


def _cli(tmp: Path, *args: str, fault: str | None = None) -> Any:
    env = {
        "PLANWEAVE_DB": str(tmp / "runs.db"),
        "PLANWEAVE_TEST_LEDGER": str(tmp / "ledger.txt"),
        "PLANWEAVE_TEST_DELAY": "0.3",
    }
    # A real process only where it is killed; the CLI's logic in this one.
    return run_cli(*args, env=env, fault=fault) if fault else invoke_cli(*args, env=env)


def _elements(tmp: Path, run_id: str) -> list[str]:
    shown = Journal(tmp / "runs.db").show(run_id)
    return [i["status"] for i in shown["tasks"][1]["items"] or []]


def _killed_run(tmp: Path, server: ScriptedServer, fault: str) -> tuple[str, list[str]]:
    args = ["--tools", "round2_tools:TOOLS", "--base-url", server.base_url, "--model", "m"]
    killed = _cli(tmp, "run", "Write to everyone.", *args, "--json", fault=fault)
    assert killed.returncode == -9, killed.stderr
    run_id = json.loads(_cli(tmp, "runs", "list", "--json").stdout)[0]["id"]
    return run_id, args


@pytest.mark.slow  # a real process
def test_an_element_waiting_for_its_slot_is_not_in_flight_after_a_kill(
    tmp_path: Path, letters: ScriptedServer
) -> None:
    # `send` runs one call at a time: killed as the first letter is recorded sent, the other
    # three were waiting for the slot, never started.
    run_id, args = _killed_run(tmp_path, letters, "task_finished:2")
    assert _elements(tmp_path, run_id) == ["done"]
    # Nothing of the fan-out can have taken effect unseen: no question, the rest just runs.
    resumed = _cli(tmp_path, "runs", "resume", run_id, *args, "--json")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "finished"
    sent = Counter((tmp_path / "ledger.txt").read_text().splitlines())
    assert sent == {f"send {name}": 1 for name in round2_tools.NAMES}
    assert _elements(tmp_path, run_id) == ["done"] * 4


@pytest.mark.slow  # a real process
def test_failing_an_element_in_flight_leaves_no_row_running(
    tmp_path: Path, letters: ScriptedServer
) -> None:
    # Killed as the second letter starts: only it was in flight.
    run_id, args = _killed_run(tmp_path, letters, "task_started:4")
    assert _elements(tmp_path, run_id) == ["done", "running"]
    paused = _cli(tmp_path, "runs", "resume", run_id, *args, "--json")
    assert paused.returncode == 3, paused.stdout + paused.stderr
    error = json.loads(paused.stdout)["error"]
    assert [(t["id"], t["items"]) for t in error["tasks"]] == [(2, [2])]
    assert "element 2 in flight" in error["message"]

    failed = _cli(tmp_path, "runs", "resume", run_id, *args, "--fail", "2", "--json")
    assert failed.returncode in (0, 1), failed.stdout + failed.stderr
    shown = Journal(tmp_path / "runs.db").show(run_id)
    assert shown["status"] in ("finished", "failed")
    assert _elements(tmp_path, run_id) == ["done", "failed"]
    # Killed as bob's start was recorded, before his letter went: failed, not sent again.
    sent = Counter((tmp_path / "ledger.txt").read_text().splitlines())
    assert sent == {"send ann": 1}


def test_an_ended_run_keeps_no_step_running_or_pending(tmp_path: Path) -> None:
    """Whatever a session did not reach (a shorter list, a dropped task) ends with the run."""
    journal = Journal(tmp_path / "runs.db")
    journal.create_run("r1", "q", "compiled", RunSettings(tools=("x:Y",)).to_dict())
    for task_id, call in ((1, "names()"), (2, "send($1[*])"), (3, "names()")):
        journal.record(
            "r1",
            1,
            TaskPlanned(task_id=task_id, tool=call.split("(")[0], call=call, deps=[], args={}),
        )
    journal.record("r1", 1, TaskStarted(task_id=2, tool="send", arguments={}, start=0.1))
    for item in (1, 2):
        started = TaskStarted(task_id=2, tool="send", arguments={"name": "x"}, start=0.2, item=item)
        journal.record("r1", 1, started)
    journal.record("r1", 2, RunFinished(status="finished", answer="a", wall_s=1.0, llm={}))
    shown = journal.show("r1")
    assert [t["status"] for t in shown["tasks"]] == ["cancelled"] * 3
    assert [i["status"] for i in shown["tasks"][1]["items"]] == ["cancelled"] * 2


# ------------------------------------------------------------------ 18: fan-out calls per run


def _plan(plan: str, tools: list[Any], **options: Any) -> tuple[Scheduler, EventBus]:
    bus = EventBus()
    scheduler = Scheduler(ToolRegistry(tools), Invoker(), bus, **options)

    async def go() -> None:
        with anyio.fail_after(20):
            async with scheduler.running():
                for task in parse_plan(plan, scheduler.tools):
                    scheduler.add(task)

    anyio.run(go)
    return scheduler, bus


FOUR = [fanout_tools.neighbours, fanout_tools.population, fanout_tools.total]


def test_the_fan_outs_of_a_run_are_bounded_together() -> None:
    os.environ.pop("PLANWEAVE_TEST_LEDGER", None)
    plan = (
        '1. neighbours("Austria")\n2. population($1[*])\n3. population($1[*])\n'
        "4. population($1[*])\n5. join()"
    )
    scheduler, bus = _plan(plan, FOUR, max_fanout_total=10)
    done = [scheduler.records[i].status.value for i in (2, 3, 4)]
    assert sorted(done) == ["done", "done", "failed"]  # 4 + 4 pass, the third would make 12
    failed = next(scheduler.records[i] for i in (2, 3, 4) if scheduler.records[i].error)
    assert failed.error is not None
    assert failed.error.cause == "fan_out_total"
    assert "this run has made 8 of the 10 fan-out calls one run may make" in failed.error.message
    assert "(max_fanout_total)" in failed.error.message
    calls = [e for e in bus.events if isinstance(e, TaskStarted) and e.item is not None]
    assert len(calls) == 8


def test_a_decomposed_sub_plan_counts_against_the_runs_fan_out_bound() -> None:
    """A failing task decomposed (twice deep), each sub-plan fanning out again: the sub-plans
    share the run's count, so max_fanout_total=4 means 4 element calls, not 12 (hostile
    review)."""
    calls: Counter[str] = Counter()

    @tool
    def items() -> list[str]:
        """Four item names."""
        return ["a", "b", "c", "d"]

    @tool
    def work(x: str) -> str:
        """Work on one item."""
        calls["work"] += 1
        return x

    @tool
    def broken(n: int) -> int:
        """Always down."""
        raise ToolFailed("down")

    plan = "1. items()\n2. work($1[*])\n3. broken(1)\n4. join()\n<END_OF_PLAN>"
    llm = ScriptedLLM(Script.by_purpose(planner=[plan] * 3, joiner=["Action: Finish(x)"] * 3))
    rt = Runtime(
        ToolRegistry([items, work, broken]),
        llm,
        max_fanout_total=4,
        recovery=Recovery().on("tool.permanent", Decompose()),
    )
    rt.run("q")
    assert calls["work"] == 4


def test_max_fanout_total_is_a_setting_and_an_option(tmp_path: Path) -> None:
    assert RunSettings.from_dict({"max_fanout_total": 5}).max_fanout_total == 5
    assert RunSettings().max_fanout_total == 256
    with pytest.raises(Exception, match="max_fanout_total must be an integer >= 0"):
        RunSettings(max_fanout_total=-1)
    script = Script.by_purpose(
        planner=[fanout_tools.PLAN, "5. join()\n<END_OF_PLAN>"] * 2,
        joiner=["Action: Finish(too many)"] * 4,
    )
    rt = Runtime(fanout_tools.TOOLS, ScriptedLLM(script), max_fanout_total=3)
    assert rt.settings.max_fanout_total == 3
    result = rt.run("Population of Austria's neighbours?")
    fan = next(r for r in result.tasks if r.task.id == 2)
    assert fan.error is not None
    assert fan.error.cause == "fan_out_total"
    shown = invoke_cli("run", "--help").stdout
    assert "--max-fanout-total" in shown


# ------------------------------------------------------------------ 9, 19: --cache-adapt


@tool
def people(country: str) -> int:
    """How many people live in a country."""
    return {"France": 68, "Belgium": 12, "Spain": 48, "Peru": 34}[country]


@tool
def land(country: str) -> int:
    """A country's area in km²."""
    return {"France": 551_695, "Belgium": 30_689, "Spain": 505_990, "Peru": 1_285_216}[country]


PRIVATE = (
    "My PIN is 4821 and my IBAN is DE89370400440532013000: which has more people, France or "
    "Belgium?"
)
OTHER = "My PIN is 1111 and my IBAN is GB29NWBK60161331926819: which has more land, Spain or Peru?"


def _texts(value: object) -> list[str]:
    """Every string in a JSON-like value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (*_texts(k), *_texts(v))]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _texts(v)]
    return []


def test_an_adapted_example_carries_no_text_of_another_users_question(tmp_path: Path) -> None:
    script = Script.by_purpose(
        planner=[
            '1. people("France")\n2. people("Belgium")\n3. join()\n<END_OF_PLAN>',
            '1. land("Spain")\n2. land("Peru")\n3. join()\n<END_OF_PLAN>',
        ],
        joiner=["Action: Finish(France)", "Action: Finish(Peru)"],
    )
    cache = PlanCache(tmp_path / "runs.db", adapt=True)
    tools = ToolRegistry([people, land])
    rt = Runtime(tools, ScriptedLLM(script), journal=cache.journal, cache=cache)
    rt.run(PRIVATE)  # one user's question, with a PIN and an IBAN: it makes a template
    result = rt.run(OTHER)  # another user's, worded much like it
    assert result.cache is not None
    assert result.cache["adapted"] is True
    (adapted,) = [e for e in result.events if isinstance(e, CacheAdapted)]
    # The template is the example: slots as placeholders, the earlier values nowhere.
    assert adapted.question == "… is … and … is …: which has more people, <A> or <B>"
    assert adapted.plan == '1. people("<A>")\n2. people("<B>")\n3. join()\n<END_OF_PLAN>'
    prompt = " ".join(m.content for m in script.requests[2])
    # Every text the journal holds (not its numbers: a timestamp's digits may spell "4821").
    journaled = " ".join(_texts(cache.journal.events(result.run_id, after=0, limit=1000)))
    assert "Peru" in journaled  # the texts are read
    for private in ("4821", "DE89370400440532013000", "France", "Belgium"):
        assert private not in prompt
        assert private not in journaled
    # The adapted example stands in for the examples on other tools, a longer text.
    planner = rt.planner
    assert adapted.tokens_saved == planner.prompt_tokens(OTHER) - planner.prompt_tokens(
        OTHER, (adapted.question, adapted.plan)
    )
    assert adapted.tokens_saved > 0
    assert result.cache["tokens_saved"] == adapted.tokens_saved


def test_a_template_whose_plan_writes_the_earlier_questions_words_is_not_shown() -> None:
    @tool
    def note(text: str, to: str) -> str:
        """Write a note."""
        return text

    tools = ToolRegistry([note])
    question = "Send the confidential merger report to accounting"
    tasks = parse_plan('1. note("merger report, confidential", to="accounting")\n2. join()', tools)
    made = extract(question, tasks, tools)
    # The note's text is no slot: its words stay in the plan, licensed by that question alone.
    assert "merger report, confidential" in made.plan
    assert made.shown_example("Send the weekly sales report to accounting", tools) is None
    # Asked in the same words too: showing it would confirm the asker's guesses.
    assert made.shown_example("Send the confidential merger report to legal", tools) is None


def test_an_adapted_example_confirms_none_of_the_askers_guesses() -> None:
    """A later asker who writes every digit word and a guessed address learns nothing of the
    earlier question from the example (the hostile review read the PIN back in order)."""
    tools = ToolRegistry([people, land])
    earlier = (
        "my pin is four eight two one and my mail is alice.smith@example.org: which has more "
        "people, France or Belgium?"
    )
    made = extract(
        earlier, parse_plan('1. people("France")\n2. people("Belgium")\n3. join()', tools), tools
    )
    guess = (
        "zero one two three four five six seven eight nine alice smith example org mail pin: "
        "which has more people, Spain or Peru?"
    )
    shown = made.shown_example(guess, tools)
    assert shown is not None
    for word in ("four", "eight", "two", "one", "alice", "smith", "example", "mail", "pin"):
        assert word not in shown[0].split(), shown[0]
    assert shown[1].startswith('1. people("<A>")\n2. people("<B>")\n3. join()')


# ------------------------------------------------------------------ 19: approval edits


@tool
def greeting() -> str:
    """A greeting."""
    return "hello"


@tool
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


def test_an_approval_edit_is_validated_as_a_plan_is(tmp_path: Path) -> None:
    plan = '1. greeting()\n2. shout("x")\n3. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[plan] * 2, joiner=["Action: Finish(HELLO)"] * 2)
    rt = Runtime([greeting, shout], ScriptedLLM(script), journal=tmp_path / "runs.db")
    paused = rt.run("Shout the greeting.", approve="plan")
    assert paused.status == "awaiting_approval"
    # `greeting` returns a str: fanning out over it is refused when approving, as the plan
    # parser refuses it in a plan, and the run still waits.
    with pytest.raises(InvalidApproval, match=r"\$1\[\*\] fans out over the result of greeting"):
        rt.approve(paused.run_id, edits={2: {"text": "$1[*]"}})
    assert Journal(tmp_path / "runs.db").show(paused.run_id)["status"] == "awaiting_approval"
    done = rt.approve(paused.run_id, edits={2: {"text": "$1"}})
    assert done.status == "finished"
    assert done.results[2] == "HELLO"


# ------------------------------------------------------------------ 11: secrets and content

TOKEN = "tok-5ecret-0f-the-service"


def test_a_token_a_tool_returns_is_neither_journaled_nor_printed(tmp_path: Path) -> None:
    script = Script.by_purpose(
        planner=['1. api_token()\n2. join("The token is ${1}.")\n<END_OF_PLAN>'],
        joiner=["Action: Finish(The token is ${1}.)"],
    )
    with ScriptedServer(script) as server:
        env = {"PLANWEAVE_DB": str(tmp_path / "runs.db"), "ROUND2_SERVICE_TOKEN": TOKEN}
        args = ["--tools", "round2_tools:SECRETS", "--base-url", server.base_url, "--model", "m"]
        shown = invoke_cli("run", "What is the service token?", *args, "--json", env=env)
        assert shown.returncode == 0, shown.stderr
        plain = invoke_cli("run", "What is the service token?", *args, "--no-cache", env=env)
    data = json.loads(shown.stdout)
    assert data["tasks"][0]["result"] == "[redacted]"
    assert data["answer"] == "The token is [redacted]."
    for printed in (shown.stdout, shown.stderr, plain.stdout, plain.stderr):
        assert TOKEN not in printed
    journaled = b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))
    assert TOKEN.encode() not in journaled
    assert b"[redacted]" in journaled


def test_a_tools_error_text_stays_out_of_traces_without_content_capture(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from planweave.otel import CAPTURE_CONTENT_ENV

    plan = '1. check_pin("4821")\n2. join()\n<END_OF_PLAN>'
    for capture in ("", "true"):
        monkeypatch.setenv(CAPTURE_CONTENT_ENV, capture)
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        script = Script.by_purpose(
            planner=[plan, "2. join()\n<END_OF_PLAN>"], joiner=["Action: Finish(no)"] * 2
        )
        Runtime(round2_tools.SECRETS, ScriptedLLM(script), tracing=provider).run("Is 4821 ok?")
        provider.shutdown()
        (span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool check_pin"]
        (raised,) = [e for e in span.events if e.name == "exception"]
        assert raised.attributes is not None
        traced = f"{span.status.description} {dict(raised.attributes)}"
        if capture:
            assert "the PIN 4821 was refused" in traced
        else:
            assert "4821" not in traced
            assert span.status.description == "ToolRejected"
            assert raised.attributes["exception.type"] == "ToolRejected"


# ------------------------------------------------------------------ 10: a timeout's children


def _ended(pid: int, within: float = 10.0) -> bool:
    """Whether process `pid` is gone (or a zombie nobody reaped yet) within `within` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
@pytest.mark.slow  # waits out a 6 s tool timeout
def test_a_process_pool_timeout_ends_the_processes_the_tool_started(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    plan = f'1. spawn_and_hang("{marker}")\n2. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(
        planner=[plan, "2. join()\n<END_OF_PLAN>"], joiner=["Action: Finish(x)"] * 2
    )
    tools = ToolRegistry([round2_tools.spawn_and_hang])
    rt = Runtime(tools, ScriptedLLM(script), executor="process", recovery=Recovery.none())
    try:
        result = rt.run("Start it.")
    finally:
        rt.close()
    hung = next(r for r in result.tasks if r.task.id == 1)
    assert hung.error is not None
    assert hung.error.cause == "timeout"
    child = int(marker.read_text())
    try:
        assert _ended(child), "the tool's child process outlived its worker"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


# ------------------------------------------------------------------ 17: a tool's missing extra


@pytest.mark.parametrize("executor", ["thread", "process"])
def test_a_tool_whose_package_is_missing_fails_the_run_naming_the_extra(
    tmp_path: Path, executor: str
) -> None:
    script = Script.by_purpose(
        planner=['1. needs_extra("Lyon")\n2. join()\n<END_OF_PLAN>'],
        joiner=["Action: Finish(Lyon has no people.)"],
    )
    with ScriptedServer(script) as server:
        env = {"PLANWEAVE_DB": str(tmp_path / "runs.db")}
        args = ["--tools", "round2_tools:EXTRA", "--base-url", server.base_url, "--model", "m"]
        proc = invoke_cli("run", "How many live in Lyon?", *args, "--executor", executor, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    hint = "pip install 'planweave[tools]'"
    said = [line for line in proc.stderr.splitlines() if hint in line]
    assert len(said) == 1
    assert said[0].startswith("error:")
    assert "has no people" not in proc.stdout  # no answer made up from a broken call
    (run,) = Journal(tmp_path / "runs.db").runs()
    assert run["status"] == "failed"
    assert hint in Journal(tmp_path / "runs.db").show(run["id"])["error"]["message"]


def test_every_element_of_a_fan_out_missing_its_package_is_one_error(tmp_path: Path) -> None:
    plan = "1. names()\n2. needs_extra($1[*])\n3. join()\n<END_OF_PLAN>"
    script = Script.by_purpose(planner=[plan], joiner=["Action: Finish(made up)"])
    tools = ToolRegistry([round2_tools.names, round2_tools.needs_extra])
    rt = Runtime(tools, ScriptedLLM(script), journal=tmp_path / "runs.db")
    with pytest.raises(UserError, match=r"pip install 'planweave\[tools\]'"):
        rt.run("How many live in each?")
    (run,) = Journal(tmp_path / "runs.db").runs()
    assert run["status"] == "failed"
