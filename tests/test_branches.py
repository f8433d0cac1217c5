"""Branches in the plan language (`N. tool(...) if <condition>`) and the `decide` step: each
side taken with real tools and a scripted planner, the journal's record of a skipped side (with
its reason), a decision among fixed options answered by a scripted LLM, the parser refusing bad
and hostile conditions with the line named, the opt-in grammar, and a run killed in the middle
of a branch that resumes without repeating finished steps or taking the skipped side."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import AsyncGenerator
from pathlib import Path

import anyio
import pytest

import branch_tools
from branch_tools import DISK_PLAN, FINISH, TOOLS
from cli_process import invoke_cli, run_cli
from gbnf import Grammar
from planweave import (
    BranchNotTaken,
    ConditionError,
    Journal,
    PlanError,
    Reply,
    RunResult,
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
    ToolRegistry,
    tool,
)
from planweave.cache.template import NotATemplate, extract
from planweave.grammar import plan_grammar
from planweave.llm.base import Delta, LLMRequest, Message, Purpose
from planweave.parser import parse_json_plan, parse_plan
from planweave.records import TaskStatus


@pytest.fixture(autouse=True)
def _ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANWEAVE_TEST_LEDGER", str(tmp_path / "ledger.txt"))


def _run(plan: str, journal: Path, tool_replies: list[str] | None = None) -> RunResult:
    replies = list(tool_replies or [])

    def route(messages: list[Message], purpose: Purpose) -> str:
        if purpose == "planner":
            return plan
        if purpose == "tool":
            return replies.pop(0)
        return FINISH

    runtime = Runtime(TOOLS, ScriptedLLM(Script.routed(route)), journal=journal, cache=False)
    return anyio.run(runtime.arun, "Run the disk runbook for db-3")


def _statuses(result: RunResult) -> dict[int, str]:
    return {r.task.id: r.status.value for r in result.tasks}


@pytest.mark.parametrize(("pct", "taken"), [("95", "rotate"), ("85", "notify")])
def test_each_side_of_a_branch_is_taken_and_the_other_recorded_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pct: str, taken: str
) -> None:
    monkeypatch.setenv("PLANWEAVE_TEST_DISK_PCT", pct)
    result = _run(DISK_PLAN, tmp_path / "runs.db")
    assert result.status == "finished", result.error
    ran = branch_tools.ledger()
    records = {r.task.id: r for r in result.tasks}
    if taken == "rotate":
        assert ran == ["disk_usage db-3", "rotate_logs db-3", "report db-3: rotated db-3"]
        assert _statuses(result) == {1: "done", 2: "done", 3: "skipped", 4: "done"}
        skipped = records[3]
        assert skipped.error is not None
        assert skipped.error.message == "condition false: $1.disk_pct <= 90 ($1.disk_pct is 95)"
    else:
        assert ran == ["disk_usage db-3", "notify db-3 disk ok"]
        # The report gathers the branch: its own condition reads the side not taken as None.
        assert _statuses(result) == {1: "done", 2: "skipped", 3: "done", 4: "skipped"}
        assert records[2].error is not None
        assert records[2].error.message == ("condition false: $1.disk_pct > 90 ($1.disk_pct is 85)")
        assert records[4].error is not None
        assert records[4].error.message == "condition false: $2 != None ($2 is None)"
    # A branch not taken is no failure: no replan, and the joiner reads why it was skipped.
    assert [r.plan_round for r in result.tasks] == [0, 0, 0, 0]
    shown = Journal(tmp_path / "runs.db").show(result.run_id)
    rows = {t["id"]: t for t in shown["tasks"]}
    not_taken = 3 if taken == "rotate" else 2
    assert rows[not_taken]["status"] == "skipped"
    assert rows[not_taken]["error"]["type"] == "BranchNotTaken"
    assert rows[not_taken]["error"]["message"].startswith("condition false: $1.disk_pct")
    assert rows[not_taken]["call"].endswith(
        " if $1.disk_pct " + ("<= 90" if taken == "rotate" else "> 90")
    )


def test_the_joiner_reads_a_branch_not_taken_as_not_done_without_its_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 1.5B joiner answered with the message of a notify() that was never sent."""
    monkeypatch.setenv("PLANWEAVE_TEST_DISK_PCT", "95")
    asked: list[str] = []

    def route(messages: list[Message], purpose: Purpose) -> str:
        if purpose == "joiner":
            asked.append(messages[-1].content)
        return DISK_PLAN if purpose == "planner" else FINISH

    runtime = Runtime(TOOLS, ScriptedLLM(Script.routed(route)), journal=None, cache=False)
    result = anyio.run(runtime.arun, "Run the disk runbook for db-3")
    assert result.status == "finished", result.error
    (shown,) = asked
    assert '2. rotate_logs("db-3") if $1.disk_pct > 90\nObservation: rotated db-3' in shown
    assert (
        "3. notify(...) if $1.disk_pct <= 90\nObservation: NOT DONE (this step did not happen): "
        "SKIPPED: condition false: $1.disk_pct <= 90 ($1.disk_pct is 95)"
    ) in shown
    assert "disk ok" not in shown


def test_a_task_reading_a_branch_not_taken_is_skipped_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLANWEAVE_TEST_DISK_PCT", "50")
    plan = (
        '1. disk_usage("db-3")\n2. rotate_logs("db-3") if $1.disk_pct > 90\n'
        '3. report("after ${2}")\n4. join()\n<END_OF_PLAN>'
    )
    result = _run(plan, tmp_path / "runs.db")
    assert result.status == "finished", result.error
    assert _statuses(result) == {1: "done", 2: "skipped", 3: "skipped"}
    downstream = next(r for r in result.tasks if r.task.id == 3)
    assert isinstance(downstream.error, BranchNotTaken)
    assert "reads task 2 (rotate_logs), a branch not taken" in downstream.error.message
    assert branch_tools.ledger() == ["disk_usage db-3"]


def test_a_condition_that_cannot_be_evaluated_fails_its_task(tmp_path: Path) -> None:
    plan = (
        '1. disk_usage("db-3")\n2. rotate_logs("db-3") if $1.disk_pct > "ninety"\n'
        "3. join()\n<END_OF_PLAN>"
    )
    result = _run(plan, tmp_path / "runs.db")
    failed = next(r for r in result.tasks if r.task.id == 2)
    assert failed.status is TaskStatus.FAILED
    assert isinstance(failed.error, ConditionError)
    assert "cannot compare int with a text by >" in failed.error.message
    assert "rotate_logs db-3" not in branch_tools.ledger()


DECISION_PLAN = """1. disk_usage("db-3")
2. decide("Is the failure a timeout or a crash?", $1, options=["timeout", "crash"])
3. restart("db-3") if $2 == "timeout"
4. notify("db-3 crashed") if $2 == "crash"
5. join()
<END_OF_PLAN>"""


@pytest.mark.parametrize(
    ("replies", "chosen"),
    [
        (["timeout"], "timeout"),
        (['"Crash."'], "crash"),
        (["It is a crash, I think", "crash"], "crash"),
    ],
)
def test_a_decision_step_answered_by_the_llm_takes_one_side(
    tmp_path: Path, replies: list[str], chosen: str
) -> None:
    result = _run(DECISION_PLAN, tmp_path / "runs.db", replies)
    assert result.status == "finished", result.error
    assert next(r.result for r in result.tasks if r.task.id == 2) == chosen
    ran = branch_tools.ledger()
    if chosen == "timeout":
        assert ran == ["disk_usage db-3", "restart db-3"]
        assert _statuses(result)[4] == "skipped"
    else:
        assert ran == ["disk_usage db-3", "notify db-3 crashed"]
        assert _statuses(result)[3] == "skipped"


def test_a_decision_outside_its_options_twice_fails_clearly(tmp_path: Path) -> None:
    result = _run(DECISION_PLAN, tmp_path / "runs.db", ["maybe", "a hang"])
    decision = next(r for r in result.tasks if r.task.id == 2)
    assert decision.status is TaskStatus.FAILED
    assert decision.error is not None
    assert "'a hang'" in decision.error.message
    assert '"timeout", "crash"' in decision.error.message
    assert _statuses(result)[3] == _statuses(result)[4] == "skipped"
    assert "restart db-3" not in branch_tools.ledger()


def test_the_decision_request_is_constrained_to_its_options() -> None:
    """The request `decide` sends carries a grammar that derives its options and nothing
    else (a backend that takes grammars decodes only those)."""
    seen: list[LLMRequest] = []

    class Seeing(ScriptedLLM):
        def stream(self, request: LLMRequest) -> AsyncGenerator[Delta, None]:
            seen.append(request)
            return super().stream(request)

    def route(messages: list[Message], purpose: Purpose) -> str:
        return {"planner": DECISION_PLAN, "tool": "crash"}.get(purpose, FINISH)

    runtime = Runtime(TOOLS, Seeing(Script.routed(route)), cache=False, journal=None)
    result = anyio.run(runtime.arun, "Decide")
    assert result.status == "finished", result.error
    (asked,) = [r for r in seen if r.purpose == "tool"]
    assert asked.grammar is not None
    grammar = Grammar(asked.grammar)
    assert grammar.accepts("crash")
    assert grammar.accepts("timeout")
    assert not grammar.accepts("a crash")
    assert not grammar.accepts("Timeout")


# --------------------------------------------------------------------------- the parser


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('2. rotate_logs("a") if $1.disk_pct >', "not a tool call"),
        ('2. rotate_logs("a") if $1 > 90 else notify("x")', "with no `else`"),
        ('2. rotate_logs("a") if $3 > 90', "$3 refers to a task that is not earlier than task 2"),
        ('2. rotate_logs("a") if $2 > 90', "$2 refers to a task that is not earlier than task 2"),
        ('2. rotate_logs("a") if __import__("os").system("id")', "only these functions may be"),
        ('2. rotate_logs("a") if open("/etc/passwd") == 1', "only these functions may be called"),
        ('2. rotate_logs("a") if exec("1") == 1', "only these functions may be called"),
        ('2. rotate_logs("a") if (1).real > 0', "attribute access is not allowed"),
        ('2. rotate_logs("a") if x > 0', "unknown name 'x'"),
        ('2. rotate_logs("a") if $1 > {"a": 1}', "a record is not a number"),
        ('2. rotate_logs("a") if (lambda: 1)() == 1', "only these functions may be called"),
        ('2. rotate_logs("a") if [x for x in $1 for y in $1]', "one `for` only"),
        ('2. rotate_logs("a") if $1[*] > 0', "a condition reads whole results, not $1[*]"),
        ("2. join() if $1 > 0", "join() takes no condition"),
        # Each comparison its own (the same one 100 times over is a loop, refused as one).
        (
            '2. rotate_logs("a") if ' + " or ".join(f"$1 > {i}" for i in range(100)),
            "longer than 500 characters",
        ),
        ('2. rotate_logs("a") if ' + " or ".join(["$1 > 1"] * 100), "over and over"),
        ('2. rotate_logs("a") if ' + "not " * 40 + "$1", "nests deeper than 32 levels"),
        ('2. rotate_logs("a") if ' + "(" * 60 + "$1" + " + 1)" * 60 + " > 1", "nests deeper"),
        ('2. rotate_logs("a") if ' + "(" * 500 + "1" + ")" * 500, "not a tool call"),
    ],
)
def test_a_bad_or_hostile_condition_is_refused_naming_the_line(line: str, says: str) -> None:
    plan = f'1. disk_usage("db-3")\n{line}\n3. join()\n'
    with pytest.raises(PlanError) as caught:
        parse_plan(plan, TOOLS)
    assert says in caught.value.message, caught.value.message
    assert caught.value.lineno == 2


def test_a_condition_reads_back_as_written_and_its_references_are_dependencies() -> None:
    tasks = parse_plan(DISK_PLAN, TOOLS)
    assert [t.deps for t in tasks[:4]] == [(), (1,), (1,), (2,)]
    assert [str(t.condition) for t in tasks[:4]] == [
        "None",
        "$1.disk_pct > 90",
        "$1.disk_pct <= 90",
        "$2 != None",
    ]
    # The call with its condition is the step's identity, and parses back the same.
    again = parse_plan(
        "\n".join(f"{t.id}. {t.call_text()}" for t in tasks[:4]) + "\n5. join()", TOOLS
    )
    assert [t.call_text() for t in again] == [t.call_text() for t in tasks]


def test_the_json_form_takes_a_condition_as_if() -> None:
    plan = [
        {"id": 1, "tool": "disk_usage", "args": {"host": "db-3"}},
        {"id": 2, "tool": "rotate_logs", "args": {"host": "db-3"}, "if": "$1.disk_pct > 90"},
        {"id": 3, "tool": "join"},
    ]
    tasks = parse_json_plan(plan, TOOLS)
    assert tasks[1].call_text() == 'rotate_logs(host="db-3") if $1.disk_pct > 90'
    assert tasks[1].deps == (1,)
    for bad, says in [(90, "written as a string"), ("$1 >", "is not an expression")]:
        with pytest.raises(PlanError, match=says):
            parse_json_plan([plan[0], {**plan[1], "if": bad}, plan[2]], TOOLS)
    with pytest.raises(PlanError, match="not earlier than task 2"):
        parse_json_plan([plan[0], {**plan[1], "if": "$2 > 1"}, plan[2]], TOOLS)


def test_two_sides_may_make_the_same_call_of_a_pure_tool() -> None:
    plan = (
        '1. disk_usage("a")\n2. calculator("1 + 1") if $1.disk_pct > 90\n'
        '3. calculator("1 + 1") if $1.disk_pct <= 90\n4. join()'
    )
    from planweave.builtin import calculator

    tasks = parse_plan(plan, TOOLS.__class__(TOOLS, calculator))
    assert len(tasks) == 4


def test_a_plan_with_branches_is_never_made_a_cache_template() -> None:
    """The cache's templates write calls without conditions: the round trip sees the
    difference, so a branch's condition is never dropped from a cached plan."""
    plan = '1. disk_usage("db-3")\n2. rotate_logs("db-3") if $1.disk_pct > 90\n3. join()'
    with pytest.raises(NotATemplate, match="does not give back the plan"):
        extract("Rotate the logs of db-3 if its disk is full", parse_plan(plan, TOOLS), TOOLS)


def test_the_branch_grammar_is_opt_in() -> None:
    plain, branching = plan_grammar(TOOLS), plan_grammar(TOOLS, branches=True)
    assert "condition" not in plain
    text = DISK_PLAN.split("\n", 1)[1]  # the grammar's thought line is its own
    assert Grammar(branching).accepts(text)
    assert not Grammar(plain).accepts(text)
    decision = DECISION_PLAN
    assert Grammar(branching).accepts(decision)
    parse_plan(decision, TOOLS)  # what the grammar allows, the parser reads
    # The first task has no earlier result to read: the grammar gives it no condition.
    first, rest = text.split("\n", 1)
    assert not Grammar(branching).accepts(f"{first} if ${{1.disk_pct}} > 90\n{rest}")


# --------------------------------------------------------------------------- kill and resume


def _cli(tmp: Path, *args: str, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        "PLANWEAVE_DB": str(tmp / "runs.db"),
        "PLANWEAVE_TEST_LEDGER": str(tmp / "ledger.txt"),
        "PLANWEAVE_TEST_DELAY": "0.5",
    }
    return run_cli(*args, env=env, fault=fault) if fault else invoke_cli(*args, env=env)


@pytest.mark.parametrize(
    ("fault", "rotations"),
    [
        ("task_skipped:1", 2),  # the other side just skipped, rotate_logs in flight: run again
        ("task_finished:2", 1),  # rotate_logs finished, the report not yet run
    ],
)
@pytest.mark.slow  # a real process
def test_a_run_killed_in_a_branch_resumes_without_repeating_or_taking_the_other_side(
    tmp_path: Path, fault: str, rotations: int
) -> None:
    script = Script.by_purpose(planner=[Reply(DISK_PLAN)] * 2, joiner=[FINISH] * 2)
    with ScriptedServer(script) as server:
        reach = ["--tools", "branch_tools:TOOLS", "--base-url", server.base_url]
        killed = _cli(tmp_path, "run", "Run the disk runbook", *reach, "--model", "m", fault=fault)
        assert killed.returncode == -9, killed.stderr
        run_id = json.loads(_cli(tmp_path, "runs", "list", "--json").stdout)[0]["id"]
        before = Journal(tmp_path / "runs.db").show(run_id)
        assert {t["id"]: t["status"] for t in before["tasks"]}[3] == "skipped"

        resumed = _cli(tmp_path, "runs", "resume", run_id, *reach, "--json")
        assert resumed.returncode == 0, resumed.stderr
        assert server.script.purposes.count("planner") == 1  # the plan is replayed
    data = json.loads(resumed.stdout)
    assert data["status"] == "finished"
    assert {t["id"]: t["status"] for t in data["tasks"]} == {
        1: "done",
        2: "done",
        3: "skipped",
        4: "done",
    }
    ran = Counter((tmp_path / "ledger.txt").read_text().splitlines())
    assert ran["disk_usage db-3"] == 1
    assert ran["rotate_logs db-3"] == rotations
    assert ran["report db-3: rotated db-3"] == 1
    assert ran["notify db-3 disk ok"] == 0
    shown = Journal(tmp_path / "runs.db").show(run_id)
    skipped = {t["id"]: t for t in shown["tasks"]}[3]
    assert skipped["error"]["message"] == "condition false: $1.disk_pct <= 90 ($1.disk_pct is 95)"


PAGED: list[str] = []


@tool(side_effects=True)
def page(text: str) -> str:
    """Page the on-call person (a side effect).

    Args:
        text: the message
    """
    PAGED.append(text)
    return "paged"


def test_an_approved_edit_keeps_the_condition_its_call_runs_under(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person edits the arguments of a waiting task with a condition: the condition stays,
    so a false one still skips the side effect."""
    monkeypatch.setenv("PLANWEAVE_TEST_DISK_PCT", "50")
    plan = '1. disk_usage("db-3")\n2. page("disk full on db-3") if $1.disk_pct > 90\n3. join()'
    script = Script.routed(lambda messages, purpose: plan if purpose == "planner" else FINISH)
    runtime = Runtime(
        ToolRegistry(TOOLS, page), ScriptedLLM(script), journal=tmp_path / "runs.db", cache=False
    )
    paused = runtime.run("Page if the disk is full", approve="side_effects")
    assert paused.status == "awaiting_approval"
    assert [t["call"] for t in paused.waiting] == ['page("disk full on db-3") if $1.disk_pct > 90']
    done = runtime.approve(paused.run_id, edits={2: {"text": "DISK FULL on db-3"}})
    assert done.status == "finished", done.error
    skipped = next(r for r in done.tasks if r.task.id == 2)
    assert skipped.task.call_text() == 'page(text="DISK FULL on db-3") if $1.disk_pct > 90'
    assert skipped.status is TaskStatus.SKIPPED
    assert PAGED == []


@pytest.mark.slow  # a real process
def test_a_decision_made_before_a_kill_is_replayed_not_asked_again(tmp_path: Path) -> None:
    """Killed right after the decision's LLM call was recorded: on resume the decision is
    replayed from the journal (the script would now answer "crash"), so the same side runs."""
    script = Script.by_purpose(
        planner=[DECISION_PLAN] * 2, tool=["timeout", "crash"], joiner=[FINISH] * 2
    )
    with ScriptedServer(script) as server:
        reach = ["--tools", "branch_tools:TOOLS", "--base-url", server.base_url]
        killed = _cli(
            tmp_path, "run", "Decide", *reach, "--model", "m", fault="llm_call_finished:2"
        )
        assert killed.returncode == -9, killed.stderr
        run_id = json.loads(_cli(tmp_path, "runs", "list", "--json").stdout)[0]["id"]
        resumed = _cli(tmp_path, "runs", "resume", run_id, *reach, "--json")
        assert resumed.returncode == 0, resumed.stderr
        assert server.script.purposes.count("tool") == 1
    data = json.loads(resumed.stdout)
    assert {t["id"]: t["status"] for t in data["tasks"]} == {
        1: "done",
        2: "done",
        3: "done",
        4: "skipped",
    }
    assert {t["id"]: t.get("result") for t in data["tasks"]}[2] == "timeout"
    ran = Counter((tmp_path / "ledger.txt").read_text().splitlines())
    assert ran == Counter({"disk_usage db-3": 1, "restart db-3": 1})
