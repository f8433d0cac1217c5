"""Fan-out (`$N[*]`): one call per element of a list result, all at once, each its own sub-task
(events, attempts, recovery, journal record), results in order; through the scripted SSE server
and real tools with controlled latency."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.console import Console

import demo_tools
import fanout_tools
from cli_process import invoke_cli, run_cli
from fanout_tools import FINISH, PLAN, TOOLS
from planweave import (
    OpenAICompatible,
    PlanError,
    Runtime,
    Script,
    ScriptedServer,
    ToolRegistry,
    parse_plan,
    tool,
)
from planweave.cli.view import DagView
from planweave.events import (
    Event,
    EventBus,
    TaskFailed,
    TaskFinished,
    TaskRecovery,
    TaskStarted,
)
from planweave.invoker import Invoker
from planweave.parser import parse_json_plan
from planweave.scheduler import Scheduler
from planweave.store import Journal


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    script = Script.by_purpose(planner=[PLAN] * 2, joiner=[FINISH] * 2)
    with ScriptedServer(script) as srv:
        yield srv


def _run(server: ScriptedServer, **options: Any) -> tuple[Any, list[Event]]:
    seen: list[Event] = []

    async def go() -> Any:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        try:
            runtime = Runtime(TOOLS, llm, **options)
            return await runtime.arun(
                "Population of Austria's neighbours?", subscribers=[seen.append]
            )
        finally:
            await llm.aclose()

    return anyio.run(go), seen


def _items(events: list[Event], kind: type[Event]) -> dict[int, Any]:
    return {e.item: e for e in events if isinstance(e, kind) and getattr(e, "item", None)}


def test_elements_run_at_once_each_a_sub_task_and_results_keep_the_list_order(
    server: ScriptedServer,
) -> None:
    result, events = _run(server)
    assert result.status == "finished", result.error
    fan = next(r for r in result.tasks if r.task.id == 2)
    assert fan.result == [83, 11, 5, 10]  # the list's order, though Hungary answered first
    assert next(r for r in result.tasks if r.task.id == 3).result == 109

    started, finished = _items(events, TaskStarted), _items(events, TaskFinished)
    assert sorted(started) == sorted(finished) == [1, 2, 3, 4]
    assert [started[k].arguments for k in (1, 2, 3, 4)] == [
        {"country": c} for c in ("Germany", "Czechia", "Slovakia", "Hungary")
    ]
    # Every element started before any ended: they ran at the same time.
    assert max(e.start for e in started.values()) < min(e.end for e in finished.values())
    assert [finished[k].result for k in (4, 3, 2, 1)] == [10, 5, 11, 83]
    whole = next(e for e in events if isinstance(e, TaskStarted) and e.task_id == 2)
    assert whole.items == 4
    assert whole.item is None
    # The joiner reads the whole list, each result beside the name it was called for, and
    # which is largest and smallest: the 1.5B joiner misread bare lists.
    joiner = server.requests[-1]
    assert (
        '[83, 11, 5, 10] ("Germany": 83; "Czechia": 11; "Slovakia": 5; "Hungary": 10; '
        'largest: "Germany"; smallest: "Slovakia")'
    ) in joiner[-1].content
    # A name a tool gave is quoted (it cannot forge the line), and a whole number too large
    # for a float is still ranked, not a crash.
    from planweave.records import TaskRecord, TaskStatus

    rec = TaskRecord(fan.task, status=TaskStatus.DONE, result=[10**400, 5])
    rec.items = [TaskRecord(fan.task, item=k, label=n) for k, n in ((1, "A; largest: B"), (2, "B"))]
    assert rec.observation().endswith(
        '("A; largest: B": 1' + "0" * 400 + '; "B": 5; largest: "A; largest: B"; smallest: "B")'
    )
    shown = fan.to_dict()
    assert [i["call"] for i in shown["items"]] == [
        f'population(country="{c}")' for c in ("Germany", "Czechia", "Slovakia", "Hungary")
    ]
    # The live view shows each element under its task, as the recorded view does.
    live = DagView()
    for event in events:
        live(event)
    recorded = DagView.from_tasks([r.to_dict() for r in result.tasks])
    for view in (live, recorded):
        console = Console(width=120, record=True)
        console.print(view.render())
        text = console.export_text()
        rows = [line.split()[0] for line in text.splitlines()[1:] if line.strip()]
        assert rows[:6] == ["1", "2", "2.1", "2.2", "2.3", "2.4"]
        assert 'population(country="Slovakia")' in text


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """This test's own set of countries whose first lookup fails with a transient error."""
    countries: set[str] = set()
    monkeypatch.setattr(fanout_tools, "FLAKY", countries)
    return countries


def test_a_failing_element_is_retried_alone(
    server: ScriptedServer, flaky: set[str], journal_db: str
) -> None:
    flaky.add("Slovakia")
    result, events = _run(server, journal=journal_db)
    assert result.status == "finished", result.error
    fan = next(r for r in result.tasks if r.task.id == 2)
    assert fan.result == [83, 11, 5, 10]
    assert [sub.attempts for sub in fan.items] == [1, 1, 2, 1]
    recovery = [e for e in events if isinstance(e, TaskRecovery)]
    assert [(e.task_id, e.item, e.pattern) for e in recovery] == [(2, 3, "retry")]
    assert fan.items[2].recovery[0]["pattern"] == "retry"
    # The journal keeps it with the element, as the run reported it.
    (_, _, slovakia, _) = Journal(journal_db).show(result.run_id)["tasks"][1]["items"]
    assert [r["pattern"] for r in slovakia["recovery"]] == ["retry"]
    assert slovakia["attempts"] == 2


def _scheduler(tools: list[Any], **options: Any) -> tuple[Scheduler, EventBus]:
    bus = EventBus()
    return Scheduler(ToolRegistry(tools), Invoker(), bus, **options), bus


async def _plan(plan: str, tools: list[Any], **options: Any) -> tuple[Scheduler, EventBus]:
    scheduler, bus = _scheduler(tools, **options)
    with anyio.fail_after(20):
        async with scheduler.running():
            for task in parse_plan(plan, scheduler.tools):
                scheduler.add(task)
    return scheduler, bus


TOOL_FNS = [fanout_tools.neighbours, fanout_tools.population, fanout_tools.total]


def test_an_empty_list_is_an_empty_result() -> None:
    plan = '1. neighbours("Iceland")\n2. population($1[*])\n3. total($2)\n4. join()'
    scheduler, bus = anyio.run(_plan, plan, TOOL_FNS)
    assert scheduler.records[2].result == []
    assert scheduler.records[3].result == 0
    assert not any(getattr(e, "item", None) for e in bus.events)


def test_a_list_wider_than_the_bound_fails_the_task_with_a_clear_error() -> None:
    plan = '1. neighbours("Wide")\n2. population($1[*])\n3. join()'
    scheduler, bus = anyio.run(lambda: _plan(plan, TOOL_FNS, max_fanout=64))
    error = scheduler.records[2].error
    assert error is not None
    assert error.cause == "fan_out_too_wide"
    assert "$1[*] has 70 items; one task fans out over at most 64" in error.message
    assert not any(isinstance(e, TaskStarted) and e.task_id == 2 for e in bus.events)


def test_a_result_that_is_not_a_list_fails_the_task() -> None:
    @tool
    def lookup(key: str) -> Any:
        """Anything."""
        return {"a": 1}

    plan = '1. lookup("x")\n2. population($1[*])\n3. join()'
    scheduler, _ = anyio.run(lambda: _plan(plan, [lookup, fanout_tools.population]))
    error = scheduler.records[2].error
    assert error is not None
    assert "$1[*] fans out over a list, but $1 is a dict" in error.message


def test_the_tools_own_limit_holds_across_elements_and_other_tasks() -> None:
    gauge = demo_tools.Gauge()

    @tool
    def names(n: int) -> list[int]:
        """A list."""
        return list(range(n))

    @tool(max_concurrency=2)
    async def slow(i: int) -> int:
        """At most two at once."""
        with gauge:
            await anyio.sleep(0.01)
        return i * 10

    plan = "1. names(9)\n2. slow($1[*])\n3. slow(7)\n4. slow(8)\n5. join()"
    scheduler, _ = anyio.run(lambda: _plan(plan, [names, slow]))
    assert scheduler.records[2].result == [i * 10 for i in range(9)]
    assert scheduler.records[3].result == 70
    assert scheduler.records[4].result == 80
    assert gauge.calls == 11
    assert gauge.peak == 2


def test_an_element_that_fails_for_good_fails_the_task_after_the_others_end() -> None:
    plan = '1. neighbours("Austria")\n2. population($1[*])\n3. join()'
    original = dict(fanout_tools.POPULATION)
    del fanout_tools.POPULATION["Czechia"]
    try:
        scheduler, bus = anyio.run(lambda: _plan(plan, TOOL_FNS))
    finally:
        fanout_tools.POPULATION.update(original)
    rec = scheduler.records[2]
    assert rec.error is not None
    assert rec.error.message.startswith("item 2 of 4:")
    assert [sub.status.value for sub in rec.items] == ["done", "failed", "done", "done"]
    assert list(_items(bus.events, TaskFailed)) == [2]


def test_two_lists_go_pairwise_and_must_be_as_long() -> None:
    @tool
    def pair(a: str, b: int) -> str:
        """Both."""
        return f"{a}={b}"

    @tool
    def nums(n: int) -> list[int]:
        """A list."""
        return list(range(n))

    plan = '1. neighbours("Austria")\n2. nums(4)\n3. pair($1[*], $2[*])\n4. nums(3)\n'
    plan += "5. pair($1[*], b=$4[*])\n6. join()"
    scheduler, _ = anyio.run(lambda: _plan(plan, [*TOOL_FNS, pair, nums]))
    assert scheduler.records[3].result == ["Germany=0", "Czechia=1", "Slovakia=2", "Hungary=3"]
    error = scheduler.records[5].error
    assert error is not None
    assert error.cause == "fan_out_lengths"
    assert "they differ in length ($1[*] 4, $4[*] 3)" in error.message


def test_the_json_form_fans_out_too() -> None:
    plan = json.dumps(
        [
            {"id": 1, "tool": "neighbours", "args": {"country": "Austria"}},
            {"id": 2, "tool": "population", "args": {"country": "$1[*]"}},
            {"id": 3, "tool": "join"},
        ]
    )
    tasks = parse_json_plan(plan, ToolRegistry(TOOL_FNS))
    assert str(tasks[1].fan_out) == "$1"
    assert tasks[1].deps == (1,)


def planweave(tmp: Path, *args: str, fault: str | None = None, db: str | None = None) -> Any:
    env = {
        "PLANWEAVE_DB": db or str(tmp / "runs.db"),
        "PLANWEAVE_TEST_LEDGER": str(tmp / "ledger.txt"),
        "PLANWEAVE_TEST_DELAY": "2",
    }
    # A real process only where it is killed; the CLI's logic in this one.
    return run_cli(*args, env=env, fault=fault) if fault else invoke_cli(*args, env=env)


@pytest.mark.slow  # a real process
def test_resume_after_a_kill_reruns_only_the_unfinished_elements(
    tmp_path: Path, server: ScriptedServer, journal_db: str
) -> None:
    args = ["--tools", "fanout_tools:TOOLS", "--base-url", server.base_url, "--model", "m"]
    # task_finished 1 is task 1; 2 and 3 are the first two elements (Hungary, then Slovakia).
    question = "Population of Austria's neighbours?"
    killed = planweave(
        tmp_path, "run", question, *args, "--json", fault="task_finished:3", db=journal_db
    )
    assert killed.returncode == -9, killed.stderr
    run_id = json.loads(planweave(tmp_path, "runs", "list", "--json", db=journal_db).stdout)[0][
        "id"
    ]
    before = Journal(journal_db).show(run_id)
    done = [i["call"] for i in before["tasks"][1]["items"] if i["status"] == "done"]
    assert done == ['population(country="Slovakia")', 'population(country="Hungary")']

    resumed = planweave(tmp_path, "runs", "resume", run_id, *args, "--json", db=journal_db)
    assert resumed.returncode == 0, resumed.stderr
    data = json.loads(resumed.stdout)
    assert data["status"] == "finished"
    assert [t["result"] for t in data["tasks"]] == [
        ["Germany", "Czechia", "Slovakia", "Hungary"],
        [83, 11, 5, 10],
        109,
    ]
    ran = Counter((tmp_path / "ledger.txt").read_text().splitlines())
    assert ran["neighbours Austria"] == 1
    assert ran["population Hungary"] == ran["population Slovakia"] == 1
    assert ran["population Germany"] == ran["population Czechia"] == 2  # in flight when killed
    shown = Journal(journal_db).show(run_id)
    assert [i["status"] for i in shown["tasks"][1]["items"]] == ["done"] * 4


@pytest.mark.parametrize(
    ("plan", "error"),
    [
        ('1. population("x")\n2. population($1[*])', "returns int, not a list"),
        ('1. neighbours("a")\n2. population($1[*][*])', "one [*] per reference"),
    ],
)
def test_the_parser_refuses_fan_outs_it_can_tell_are_wrong(plan: str, error: str) -> None:
    with pytest.raises(PlanError, match=re.escape(error)):
        parse_plan(plan + "\n9. join()", ToolRegistry(TOOL_FNS))


def test_fan_out_forms_read_the_same_in_code_strings_and_json() -> None:
    registry = ToolRegistry(TOOL_FNS)
    text = parse_plan(
        '1. neighbours("a")\n2. population($1[*])\n3. population("${1[*]}")\n'
        '4. population("Land: $1[*]")\n5. population(${1[*]})\n6. join()',
        registry,
    )
    assert [str(t) for t in text[1:5]] == [
        "2. population($1[*])",
        '3. population("${1[*]}")',
        '4. population("Land: ${1[*]}")',
        "5. population($1[*])",
    ]
    assert all(str(t.fan_out) == "$1" for t in text[1:5])
    assert text[0].fan_out is None
    # A plan's text form round-trips (the plan cache and approval edits rely on it).
    again = parse_plan("\n".join(str(t) for t in text), registry)
    assert [str(t) for t in again] == [str(t) for t in text]


def test_the_plan_grammar_allows_the_fan_out_forms_and_one_star_per_reference() -> None:
    from gbnf import Grammar
    from planweave.grammar import plan_grammar

    grammar = Grammar(plan_grammar(ToolRegistry(TOOL_FNS)))
    head = '1. neighbours("Austria")\n'
    for line in ("2. population($1[*])", '2. population("${1[*]}")', "2. total($1[*].n)"):
        assert grammar.accepts(f"{head}{line}\n3. join()<END_OF_PLAN>"), line
    assert not grammar.accepts(f"{head}2. population($1[*][*])\n3. join()<END_OF_PLAN>")
