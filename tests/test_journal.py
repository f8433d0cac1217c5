"""The durable journal through the Python API: what is recorded, resuming, bad files."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import os
import sqlite3
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel

import ledger_tools
from ledger_tools import FINISH, PLAN, TOOLS
from planweave import Budget, Reply, RunFailed, Runtime, Script, ScriptedLLM, tool
from planweave.builtin import ASK
from planweave.cli.view import DagView
from planweave.errors import (
    BudgetExceeded,
    DecisionNeeded,
    JournalError,
    PlanDiverged,
    ResultNotStorable,
    ResumeError,
)
from planweave.events import Event, LLMReplayDiverged, TaskStarted
from planweave.store import Journal, Unstorable, decode, encode
from planweave.store.schema import KEYS, MIGRATIONS, POSTGRES_BASE, POSTGRES_MIGRATIONS
from planweave.tools import ToolRegistry
from postgres_server import PostgresServer

TESTS = Path(__file__).parent


@pytest.fixture(autouse=True)
def _ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANWEAVE_TEST_LEDGER", str(tmp_path / "ledger.txt"))
    monkeypatch.setenv("PLANWEAVE_TEST_DELAY", "0.05")


@pytest.fixture
def journal(journal_db: str) -> Journal:
    """The test's journal, on each backend in turn (`journal_db`: SQLite, PostgreSQL)."""
    return Journal(journal_db)


def edit(journal_db: str, sql: str, *params: object) -> None:
    """Change the journal at `journal_db` behind planweave's back (`?` placeholders)."""
    if journal_db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(journal_db, autocommit=True) as conn:
            conn.execute(sql.replace("?", "%s"), params)
    else:
        with sqlite3.connect(journal_db) as conn:
            conn.execute(sql, params)


def script(planner: int = 2, joiner: int = 2) -> Script:
    return Script.by_purpose(planner=[PLAN] * planner, joiner=[FINISH] * joiner)


# ---------------------------------------------------------------------- the value codec


class Colour(enum.Enum):
    RED = "red"


class Point(BaseModel):
    x: int
    y: float


@dataclasses.dataclass
class Box:
    name: str
    size: tuple[int, int]


@pytest.mark.parametrize(
    "value",
    [
        None,
        {"a": [1, 2.5, "x", True, None]},
        (1, "two", (3,)),
        {1: "int key", (2, 3): "tuple key"},
        {"__pw__": "a user's own key"},
        {1, 2, 3},
        frozenset({"a"}),
        b"\x00\xff",
        bytearray(b"ab"),
        float("inf"),
        dt.datetime(2026, 11, 29, 12, 30, tzinfo=dt.UTC),
        dt.date(2026, 1, 2),
        dt.timedelta(seconds=90.5),
        decimal.Decimal("1.10"),
        uuid.UUID(int=7),
        Path("/tmp/x"),
        Colour.RED,
        Point(x=1, y=2.5),
        Box("b", (1, 2)),
        [Point(x=0, y=0), {"nested": (Colour.RED,)}],
    ],
)
def test_codec_gives_back_the_same_kind_of_value(value: object) -> None:
    back = decode(encode(value))
    assert back == value
    assert type(back) is type(value)


def test_codec_refuses_what_it_cannot_rebuild() -> None:
    @dataclasses.dataclass
    class Local:
        x: int

    with pytest.raises(Unstorable, match="inside a function"):
        encode(Local(1))
    with pytest.raises(Unstorable, match="TextIOWrapper"), Path(__file__).open() as f:
        encode({"file": f})


# ---------------------------------------------------------------------- recording


def test_a_journaled_run_records_tasks_llm_calls_and_events(journal: Journal) -> None:
    runtime = Runtime(TOOLS, ScriptedLLM(script()), journal=journal, max_replans=1)
    result = runtime.run("What is a plus b? Send it.")
    shown = journal.show(result.run_id)
    assert shown["status"] == "finished"
    assert shown["answer"] == result.answer
    assert shown["settings"] == runtime.settings.to_dict()
    assert shown["settings"]["max_replans"] == 1
    # Task objects have the fields of `planweave run --json`, with the same values.
    live = result.to_dict()["tasks"]
    for recorded, mine in zip(shown["tasks"], live, strict=True):
        assert recorded.keys() == mine.keys()
        for key in ("id", "tool", "args", "call", "dependencies", "status", "result"):
            assert recorded[key] == mine[key]
        assert recorded["start"] == pytest.approx(mine["start"], abs=0.05)
    assert [c["purpose"] for c in shown["llm_calls"]] == ["planner", "joiner"]
    assert shown["llm_calls"][0]["text"].startswith('1. lookup("a")')
    assert shown["llm"]["calls"] == 2
    kinds = [e["kind"] for e in journal.events(result.run_id)]
    assert kinds[0] == "run_started"
    assert kinds[-1] == "run_finished"
    # Write-ahead: each task's start is recorded before its finish, and a result before any
    # dependent starts.
    order = [(e["kind"], e.get("task_id")) for e in journal.events(result.run_id)]
    assert order.index(("task_finished", 1)) < order.index(("task_started", 3))
    assert order.index(("task_finished", 3)) < order.index(("task_started", 4))
    assert journal.runs()[0]["id"] == result.run_id


def test_a_result_the_journal_cannot_store_fails_its_task_clearly(journal: Journal) -> None:
    @tool
    def opener(path: str) -> object:
        """Open something."""
        return sqlite3.connect(":memory:")

    llm = ScriptedLLM(
        Script.by_purpose(
            planner=['1. opener("x")\n2. join()\n<END_OF_PLAN>'],
            joiner=["Thought: it failed.\nAction: Finish(no)"],
        )
    )
    result = Runtime(ToolRegistry([opener]), llm, journal=journal).run("open x")
    error = result.tasks[0].error
    assert isinstance(error, ResultNotStorable)
    assert "sqlite3.Connection" in str(error)
    assert journal.show(result.run_id)["tasks"][0]["status"] == "failed"


def test_many_runs_at_once_in_one_process_share_the_journal(journal: Journal) -> None:
    runtime = Runtime(TOOLS, ScriptedLLM(script(planner=12, joiner=12)), journal=journal)

    async def many() -> list[str]:
        ids: list[str] = []

        async def one() -> None:
            ids.append((await runtime.arun("q")).run_id)

        async with anyio.create_task_group() as tg:
            for _ in range(12):
                tg.start_soon(one)
        return ids

    ids = anyio.run(many)
    runs = {r["id"]: r for r in journal.runs(limit=50)}
    assert set(ids) <= runs.keys()
    assert all(runs[i]["status"] == "finished" and runs[i]["tasks"] == {"done": 4} for i in ids)


@pytest.mark.slow  # a real process
def test_several_processes_write_one_journal_without_losing_writes(journal_db: str) -> None:
    db = journal_db
    worker = (
        "import sys; sys.path.insert(0, sys.argv[2])\n"
        "from ledger_tools import TOOLS, PLAN, FINISH\n"
        "from planweave import Runtime, Script, ScriptedLLM\n"
        "llm = ScriptedLLM(Script.by_purpose(planner=[PLAN] * 15, joiner=[FINISH] * 15))\n"
        "rt = Runtime(TOOLS, llm, journal=sys.argv[1])\n"
        "for _ in range(15):\n"
        "    assert rt.run('q').status == 'finished'\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", worker, str(db), str(TESTS)]) for _ in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    journal = Journal(db)
    runs = journal.runs(limit=100)
    assert len(runs) == 60
    assert all(r["status"] == "finished" and r["tasks"] == {"done": 4} for r in runs)
    assert all(len(journal.events(r["id"])) > 10 for r in runs)


# ---------------------------------------------------------------------- resuming


def failed_at_joiner(journal: Journal) -> str:
    """A run whose tasks all finished but whose joiner call failed (the endpoint went away)."""
    llm = ScriptedLLM(Script.by_purpose(planner=[PLAN], joiner=[Reply(status=503)]))
    with pytest.raises(RunFailed) as failed:
        Runtime(TOOLS, llm, journal=journal).run("What is a plus b? Send it.")
    return failed.value.result.run_id


def test_resume_replays_the_plan_and_reuses_every_finished_result(journal: Journal) -> None:
    run_id = failed_at_joiner(journal)
    ran = ledger_tools.ledger()
    assert sorted(ran) == ["add 2 3", "lookup a", "lookup b", "send total 5"]
    assert journal.runs()[0]["status"] == "failed"

    # No planner reply is left in this script: asking the planner again would fail the run.
    llm = ScriptedLLM(Script.by_purpose(joiner=[FINISH]))
    result = Runtime(TOOLS, llm, journal=journal).resume(run_id[:6])
    assert result.run_id == run_id
    assert result.answer == "The total is 5, and it was sent."
    assert ledger_tools.ledger() == ran  # nothing ran again
    assert [r.reused for r in result.tasks] == [True] * 4
    assert result.results == {1: 2, 2: 3, 3: 5, 4: "sent"}
    shown = journal.show(run_id)
    assert shown["status"] == "finished"
    assert shown["sessions"] == 2
    assert [c["purpose"] for c in shown["llm_calls"]] == ["planner", "joiner", "joiner"]
    assert [c["status"] for c in shown["llm_calls"]] == ["done", "failed", "done"]
    # Times keep counting from the run's start.
    assert all(t["start"] is not None and t["start"] < 5 for t in shown["tasks"])


def test_resume_says_precisely_when_the_tools_no_longer_fit(journal: Journal) -> None:
    run_id = failed_at_joiner(journal)
    llm = ScriptedLLM(Script.by_purpose(joiner=[FINISH]))
    without_send = ToolRegistry([ledger_tools.lookup, ledger_tools.add])
    with pytest.raises(ResumeError, match=r"task 4 `send\(\"total \$\{3\}\"\)`.*send"):
        Runtime(without_send, llm, journal=journal).resume(run_id)
    assert journal.runs()[0]["status"] == "paused"  # nothing was lost; it can still resume
    assert Runtime(TOOLS, llm, journal=journal).resume(run_id).status == "finished"


def test_resume_refuses_unknown_and_finished_runs(journal: Journal) -> None:
    runtime = Runtime(TOOLS, ScriptedLLM(script()), journal=journal)
    done = runtime.run("q")
    with pytest.raises(ResumeError, match="already finished"):
        runtime.resume(done.run_id)
    with pytest.raises(ResumeError, match="no run 'nope'"):
        runtime.resume("nope")


def test_a_resumed_plan_that_writes_another_call_under_a_finished_id_is_refused(
    journal: Journal, journal_db: str
) -> None:
    run_id = failed_at_joiner(journal)
    # As if the process had died while the planner still streamed: its response is not
    # recorded, so the resumed run asks the planner again, and this time it writes another
    # side effect under task 4, which already ran.
    edit(journal_db, "UPDATE llm_calls SET status = 'streaming' WHERE purpose = 'planner'")
    journal.seal(run_id)  # an edit its owner vouches for (tests/test_journal_trust.py: others)
    other = PLAN.replace('send("total ${3}")', 'send("total 6")')
    llm = ScriptedLLM(Script.by_purpose(planner=[other], joiner=[FINISH]))
    with pytest.raises(RunFailed) as failed:
        Runtime(TOOLS, llm, journal=journal).resume(run_id)
    error = failed.value.cause
    assert isinstance(error, PlanDiverged)
    assert (error.task_id, error.recorded, error.call) == (
        4,
        'send("total ${3}")',
        'send("total 6")',
    )
    assert ledger_tools.ledger().count("send total 5") == 1
    assert "send total 6" not in ledger_tools.ledger()
    shown = journal.show(run_id)
    assert shown["tasks"][3]["call"] == 'send("total ${3}")'
    assert (shown["tasks"][3]["status"], shown["tasks"][3]["result"]) == ("done", "sent")
    assert shown["status"] == "failed"
    assert shown["error"]["type"] == "PlanDiverged"


def test_resume_refuses_a_run_still_running_and_an_ambiguous_prefix(journal: Journal) -> None:
    journal.create_run("abc111", "q", "compiled", {})  # running, in this live process
    journal.create_run("abc222", "q", "compiled", {})
    runtime = Runtime(TOOLS, ScriptedLLM(script()), journal=journal)
    with pytest.raises(ResumeError, match="names more than one run"):
        runtime.resume("abc")
    with pytest.raises(ResumeError, match=f"still running \\(process {os.getpid()}"):
        runtime.resume("abc1")
    assert journal.show("abc1")["status"] == "running"  # left as it was


def test_a_recorded_result_that_cannot_be_read_back_pauses_the_resume(
    journal: Journal, journal_db: str
) -> None:
    run_id = failed_at_joiner(journal)
    edit(
        journal_db, "UPDATE tasks SET result = ? WHERE id = 3", '{"__pw__": "no-such-kind", "v": 1}'
    )
    journal.seal(run_id)  # an edit its owner vouches for (tests/test_journal_trust.py: others)
    runtime = Runtime(TOOLS, ScriptedLLM(script()), journal=journal)
    with pytest.raises(ResumeError, match=r"result of task 3 `add\(\$1, \$2\)` cannot be read"):
        runtime.resume(run_id)
    assert journal.show(run_id)["status"] == "paused"
    assert ledger_tools.ledger().count("send total 5") == 1


def test_a_recorded_response_whose_request_changed_is_asked_again(
    journal: Journal, journal_db: str
) -> None:
    run_id = failed_at_joiner(journal)
    edit(journal_db, "UPDATE llm_calls SET request_hash = 'other' WHERE purpose = 'planner'")
    journal.seal(run_id)  # an edit its owner vouches for (tests/test_journal_trust.py: others)
    ran = ledger_tools.ledger()
    llm = ScriptedLLM(script(planner=1, joiner=1))
    result = Runtime(TOOLS, llm, journal=journal).resume(run_id)
    assert llm.script.purposes == ["planner", "joiner"]  # the planner's was not replayed
    assert result.status == "finished"
    assert ledger_tools.ledger() == ran  # the same plan: every finished task reused
    assert [r.reused for r in result.tasks] == [True] * 4


@tool
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


def test_a_recorded_planner_call_for_another_prompt_is_a_divergence_and_is_asked_again(
    journal: Journal,
) -> None:
    run_id = failed_at_joiner(journal)
    recorded_hash = journal.recorded_calls(run_id)[1].request_hash
    ran = ledger_tools.ledger()
    # One more tool: the planner's prompt lists it, so the recorded planner call answered
    # another prompt than the one the resumed run sends.
    more = ToolRegistry([*TOOLS.values(), shout])
    llm = ScriptedLLM(script(planner=1, joiner=1))
    result = Runtime(more, llm, journal=journal).resume(run_id)

    diverged = [e for e in result.events if isinstance(e, LLMReplayDiverged)]
    assert [(e.call, e.purpose, e.recorded_purpose) for e in diverged] == [
        (1, "planner", "planner")
    ]
    assert diverged[0].recorded_hash == recorded_hash != diverged[0].request_hash
    assert diverged[0].decision == "ask_again"
    view = DagView()
    for event in result.events:
        view(event)
    assert "planner call 1: its recorded response answered another request, asked again" in (
        view.notes
    )
    stored = [e for e in journal.events(run_id) if e["kind"] == "llm_replay_diverged"]
    assert [(e["call"], e["recorded_hash"], e["session"]) for e in stored] == [
        (1, recorded_hash, 2)
    ]
    # Asked again (an LLM call has no side effects); the plan it gave is held to the steps
    # that ran, and is the same, so every finished task is reused.
    assert llm.script.purposes == ["planner", "joiner"]
    assert result.status == "finished"
    assert ledger_tools.ledger() == ran
    assert [r.reused for r in result.tasks] == [True] * 4


def test_a_resume_that_reuses_a_task_which_called_the_llm_asks_the_joiner_again(
    journal: Journal,
) -> None:
    # Calls are numbered as they are made: the task's own LLM call was call 2, and once the
    # task is reused the joiner's is.  A divergence a resume cannot avoid, so it must not stop
    # the run (nor every later resume of it).
    plan = '1. llm("Say hello")\n2. join()\n<END_OF_PLAN>'
    first = Script.by_purpose(planner=[plan], tool=["hello"], joiner=[Reply(status=503)])
    with pytest.raises(RunFailed) as failed:
        Runtime(ASK, ScriptedLLM(first), journal=journal).run("Say hello")
    run_id = failed.value.result.run_id

    llm = ScriptedLLM(Script.by_purpose(joiner=["Action: Finish(hello)"]))
    result = Runtime(ASK, llm, journal=journal).resume(run_id)
    assert result.status == "finished"
    assert result.answer == "hello"
    assert llm.script.purposes == ["joiner"]  # the planner's call replayed, the task reused
    assert [
        (e.call, e.purpose, e.recorded_purpose)
        for e in result.events
        if isinstance(e, LLMReplayDiverged)
    ] == [(2, "joiner", "tool")]


def test_a_cancelled_run_resumes_once_and_then_is_finished(journal: Journal) -> None:
    run_id = failed_at_joiner(journal)
    journal.pause(run_id)  # as a resume that needed a decision leaves it
    assert journal.request_cancel(run_id) == "cancelled"
    runtime = Runtime(TOOLS, ScriptedLLM(script()), journal=journal)
    assert runtime.resume(run_id).status == "finished"
    with pytest.raises(ResumeError, match="already finished"):
        runtime.resume(run_id)
    assert journal.show(run_id)["sessions"] == 2


def test_replayed_llm_calls_count_against_the_budget_of_a_resumed_run(journal: Journal) -> None:
    run_id = failed_at_joiner(journal)
    # The replayed planner response is the run's first call; the joiner's would be its second.
    runtime = Runtime(TOOLS, ScriptedLLM(script()), journal=journal, budget=Budget(llm_calls=1))
    with pytest.raises(RunFailed) as failed:
        runtime.resume(run_id)
    assert isinstance(failed.value.cause, BudgetExceeded)
    assert failed.value.cause.limit == "llm_calls"
    assert failed.value.result.results == {1: 2, 2: 3, 3: 5, 4: "sent"}  # all reused


def killed_while_sending(tmp_path: Path) -> tuple[Path, str]:
    """A run killed (SIGKILL) right after the start of the side-effecting task was recorded."""
    db = tmp_path / "runs.db"
    child = (
        "import sys; sys.path.insert(0, sys.argv[2])\n"
        "import fault; fault.install('task_started:4')\n"
        "from ledger_tools import TOOLS, PLAN, FINISH\n"
        "from planweave import Runtime, Script, ScriptedLLM\n"
        "llm = ScriptedLLM(Script.by_purpose(planner=[PLAN], joiner=[FINISH]))\n"
        "Runtime(TOOLS, llm, journal=sys.argv[1]).run('What is a plus b? Send it.')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", child, str(db), str(TESTS)],
        timeout=60,
    )
    assert proc.returncode == -9
    return db, Journal(db).runs()[0]["id"]


def test_a_side_effect_in_flight_pauses_the_resume_until_someone_decides(
    tmp_path: Path,
) -> None:
    db, run_id = killed_while_sending(tmp_path)
    journal = Journal(db)
    assert journal.runs()[0]["status"] == "interrupted"
    runtime = Runtime(TOOLS, ScriptedLLM(Script.by_purpose(joiner=[FINISH] * 2)), journal=journal)
    with pytest.raises(DecisionNeeded) as paused:
        runtime.resume(run_id)
    assert paused.value.tasks == [{"id": 4, "tool": "send", "call": 'send("total ${3}")'}]
    assert journal.runs()[0]["status"] == "paused"

    asked: list[dict[str, object]] = []

    def decide(task: dict[str, object]) -> str:
        asked.append(task)
        return "rerun"

    result = runtime.resume(run_id, decisions=decide)  # type: ignore[arg-type]
    assert [t["id"] for t in asked] == [4]
    assert result.answer == "The total is 5, and it was sent."
    assert ledger_tools.ledger().count("send total 5") == 1
    assert [r.reused for r in result.tasks] == [True, True, True, False]


def test_marking_the_in_flight_side_effect_failed_keeps_it_from_running(tmp_path: Path) -> None:
    db, run_id = killed_while_sending(tmp_path)
    journal = Journal(db)
    llm = ScriptedLLM(Script.by_purpose(joiner=["Thought: not sent.\nAction: Finish(5, unsent)"]))
    result = Runtime(TOOLS, llm, journal=journal).resume(run_id, decisions={4: "fail"})
    assert "send total 5" not in ledger_tools.ledger()
    assert result.tasks[3].status == "failed"
    assert "marked failed on resume" in str(result.tasks[3].error)
    assert journal.show(run_id)["tasks"][3]["status"] == "failed"


def test_cancel_through_the_journal_stops_a_live_run(journal: Journal, journal_db: str) -> None:
    started = anyio.Event()

    @tool
    async def wait() -> str:
        """Wait a long time."""
        started.set()
        await anyio.sleep(30)
        return "waited"

    llm = ScriptedLLM(Script.by_purpose(planner=["1. wait()\n2. join()\n<END_OF_PLAN>"]))
    runtime = Runtime(ToolRegistry([wait]), llm, journal=journal)

    async def go() -> str:
        with anyio.fail_after(10):
            return await cancel_soon()

    async def cancel_soon() -> str:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: runtime.arun("q", check=False))
            await started.wait()  # the run's task is recorded as started: it is in flight
            other = Journal(journal_db)  # another connection, as another process
            run_id = other.runs()[0]["id"]
            assert other.request_cancel(run_id) == "cancelling"
        return run_id

    run_id = anyio.run(go)
    shown = journal.show(run_id)
    assert shown["status"] == "cancelled"
    assert shown["error"]["type"] == "RunCancelled"
    assert shown["tasks"][0]["status"] == "cancelled"


def test_a_cancelled_side_effect_in_flight_is_not_run_again_without_a_decision(
    journal: Journal, journal_db: str
) -> None:
    started = anyio.Event()

    @tool(side_effects=True)
    async def transfer(amount: int) -> str:
        """Move money (a side effect), slowly."""
        ledger_tools._ledger(f"transfer {amount}")
        started.set()
        await anyio.sleep(30)
        return "moved"

    tools = ToolRegistry([transfer])
    plan = "1. transfer(5)\n2. join()\n<END_OF_PLAN>"
    llm = ScriptedLLM(Script.by_purpose(planner=[plan], joiner=[FINISH]))
    runtime = Runtime(tools, llm, journal=journal)

    async def cancel_in_flight() -> str:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: runtime.arun("q", check=False))
                await started.wait()
                other = Journal(journal_db)
                run_id = other.runs()[0]["id"]
                assert other.request_cancel(run_id) == "cancelling"
        return run_id

    run_id = anyio.run(cancel_in_flight)
    task = journal.show(run_id)["tasks"][0]
    assert (task["status"], task["start"] is not None) == ("cancelled", True)
    with pytest.raises(DecisionNeeded) as paused:
        runtime.resume(run_id)
    assert paused.value.tasks == [{"id": 1, "tool": "transfer", "call": "transfer(5)"}]
    assert ledger_tools.ledger() == ["transfer 5"]  # once, and not again
    assert journal.show(run_id)["status"] == "paused"


# ---------------------------------------------------------------------- bad files


def test_a_file_that_is_not_a_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"not a database at all, " * 200)
    before = path.read_bytes()
    with pytest.raises(JournalError, match="not a usable planweave journal"):
        Journal(path)
    assert path.read_bytes() == before


def test_another_applications_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER)")
    before = path.read_bytes()
    with pytest.raises(JournalError, match="another application"):
        Journal(path)
    assert path.read_bytes() == before


def set_version(journal_db: str, version: int) -> None:
    """Stamp the journal at `journal_db` with schema `version`, behind planweave's back."""
    if journal_db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(journal_db, autocommit=True) as conn:
            conn.execute("UPDATE planweave_schema SET version = %s", (version,))
    else:
        with sqlite3.connect(journal_db) as conn:
            conn.execute(f"PRAGMA user_version = {version}")


def test_a_journal_from_a_newer_planweave_is_refused(journal_db: str) -> None:
    journal = Journal(journal_db)
    run_id = Runtime(TOOLS, ScriptedLLM(script()), journal=journal).run("q").run_id
    journal.close()
    set_version(journal_db, 99)
    with pytest.raises(JournalError, match=r"newer planweave.*schema 99"):
        Journal(journal_db)
    with pytest.raises(JournalError, match=r"newer planweave.*schema 99"):
        Journal.for_reading(journal_db)
    set_version(journal_db, len(MIGRATIONS))
    assert Journal(journal_db).show(run_id)["status"] == "finished"


def test_a_full_journal_ends_the_run_clearly_and_keeps_what_was_recorded(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    conn = journal._backend._conn  # type: ignore[attr-defined]
    first = Runtime(TOOLS, ScriptedLLM(script()), journal=journal).run("q")

    @tool
    def big() -> str:
        """Return a large text."""
        return "x" * 300_000

    def fill_up(event: Event) -> None:
        # SQLite's own size limit makes the next growth fail exactly as a full disk does.
        if isinstance(event, TaskStarted):
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {pages}")

    llm = ScriptedLLM(Script.by_purpose(planner=["1. big()\n2. join()\n<END_OF_PLAN>"]))
    runtime = Runtime(ToolRegistry([big]), llm, journal=journal, subscribers=[fill_up])
    with pytest.raises(RunFailed) as failed:
        runtime.run("q")
    cause = failed.value.cause
    assert isinstance(cause, JournalError)
    assert "is full" in str(cause)
    # The run stopped at once: the joiner was never asked.
    assert failed.value.result.llm.calls == 1
    with pytest.raises((JournalError, RunFailed), match="is full"):
        Runtime(TOOLS, ScriptedLLM(script()), journal=journal).run("another")
    conn.execute("PRAGMA max_page_count = 1073741823")
    assert journal.show(first.run_id)["tasks"][3]["result"] == "sent"
    started = journal.show(failed.value.result.run_id)["tasks"][0]
    assert started["status"] == "running"  # recorded as in flight: resumable


def test_a_react_run_resumes_from_its_recorded_steps(journal: Journal) -> None:
    steps = ['Thought: a first.\nAction: lookup("a")', 'Thought: then b.\nAction: lookup("b")']
    llm = ScriptedLLM(Script.by_purpose(react=[*steps, Reply(status=503)]))
    with pytest.raises(RunFailed) as failed:
        Runtime(TOOLS, llm, mode="react", journal=journal).run("a and b?")
    run_id = failed.value.result.run_id
    assert sorted(ledger_tools.ledger()) == ["lookup a", "lookup b"]

    # Only the last step is asked again; both lookups keep their results.
    again = ScriptedLLM(Script.by_purpose(react=["Thought: done.\nAction: Finish(2 and 3)"]))
    result = Runtime(TOOLS, again, mode="react", journal=journal).resume(run_id)
    assert result.answer == "2 and 3"
    assert result.results == {1: 2, 2: 3}
    assert sorted(ledger_tools.ledger()) == ["lookup a", "lookup b"]


def test_a_journal_of_an_older_schema_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # what planweave wrote before migration 2
        for statement in MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("PRAGMA user_version = 1")
        conn.execute("PRAGMA application_id = 0x706C7776")
        conn.execute(
            "INSERT INTO runs (id, question, mode, status, created, updated) "
            "VALUES ('old1', 'q', 'compiled', 'finished', 0, 0)"
        )
    journal = Journal(path)
    assert journal.show("old1")["status"] == "finished"
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        columns = [row[1] for row in conn.execute("PRAGMA table_info(tasks)")]
    assert "recovery" in columns


# ---------------------------------------------------------------------- on PostgreSQL


def test_both_databases_hold_the_same_tables_at_the_same_version(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    import psycopg

    Journal(tmp_path / "runs.db").close()
    url = postgres_server.database()
    Journal(url).close()
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        lite = {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t in KEYS}
        lite_version = conn.execute("PRAGMA user_version").fetchone()[0]
    with psycopg.connect(url) as conn:
        pg = {
            t: {
                r[0]
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = %s",
                    (t,),
                )
            }
            for t in KEYS
        }
        (pg_version,) = conn.execute("SELECT version FROM planweave_schema").fetchone()  # type: ignore[misc]
    assert pg == lite
    assert pg_version == lite_version == POSTGRES_BASE + len(POSTGRES_MIGRATIONS)


def test_of_two_claims_of_one_run_at_once_one_wins(journal_db: str) -> None:
    """A claim reads the run and takes it in one write transaction: two processes resuming
    the same run at once never both run it (on PostgreSQL, the run's lock serializes them)."""
    journal = Journal(journal_db)
    handles = [Journal(journal_db) for _ in range(4)]  # each its own connection
    for n in range(10):
        run_id = f"race{n}"
        journal.create_run(run_id, "q", "compiled", {})
        journal.pause(run_id)
        start = threading.Barrier(len(handles))
        won: list[bool] = []

        def claim(
            handle: Journal,
            run_id: str = run_id,
            start: threading.Barrier = start,
            won: list[bool] = won,
        ) -> None:
            start.wait()
            try:
                handle.claim(run_id)
            except ResumeError:
                won.append(False)
            else:
                won.append(True)

        threads = [threading.Thread(target=claim, args=(h,)) for h in handles]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(won) == [False, False, False, True], n
        assert journal.show(run_id)["sessions"] == 2


def test_a_postgresql_url_s_password_is_never_shown(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    unreachable = f"postgresql://me:hunter2-secret@/journal?host={tmp_path}"  # no server there
    unreadable = "postgresql://me:hunter2-secret@/journal?sslmode=bogus&odd words"
    for url, said in [
        (unreachable, "cannot open the journal postgresql://[redacted]@/journal"),
        (unreadable, "is not a PostgreSQL URL this can read"),
    ]:
        with pytest.raises(JournalError) as failed:
            Journal(url)
        assert "hunter2" not in str(failed.value)
        assert "hunter2" not in (failed.value.path or "")
        assert said in str(failed.value)


def test_a_postgresql_url_without_psycopg_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as in an install without the extra
    with pytest.raises(JournalError, match=r"pip install 'planweave\[postgres\]'") as failed:
        Journal("postgres://me:hunter2-secret@db.example/journal")
    assert "hunter2" not in str(failed.value)


def test_planweave_db_names_a_postgresql_journal(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = postgres_server.database()
    monkeypatch.setenv("PLANWEAVE_DB", url)
    run_id = Runtime(TOOLS, ScriptedLLM(script()), journal=Journal()).run("q").run_id
    assert Journal(url).show(run_id)["status"] == "finished"
    assert Journal().path == url.replace("postgres@", "[redacted]@")  # shown as redact_url does


def test_another_applications_runs_table_in_postgresql_is_refused_untouched(
    postgres_server: PostgresServer,
) -> None:
    import psycopg

    url = postgres_server.database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER, customer TEXT)")
    with pytest.raises(JournalError, match="another application"):
        Journal(url)
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    assert tables == [("runs",)]


def test_a_read_only_postgresql_journal_reads_and_refuses_writes(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.database()
    with pytest.raises(JournalError, match="there is no journal"):
        Journal(url, read_only=True)
    run_id = Runtime(TOOLS, ScriptedLLM(script()), journal=url).run("q").run_id
    reader = Journal(url, read_only=True)
    assert reader.show(run_id)["status"] == "finished"
    with pytest.raises(JournalError, match="open read-only here"):
        reader.pause(run_id)
    assert Journal.for_reading(url).show(run_id)["status"] == "finished"


def test_a_lost_connection_fails_one_call_and_the_next_connects_again(
    postgres_server: PostgresServer,
) -> None:
    import psycopg

    url = postgres_server.database()
    journal = Journal(url)
    run_id = Runtime(TOOLS, ScriptedLLM(script()), journal=journal).run("q").run_id
    with psycopg.connect(url, autocommit=True) as conn:  # as a server restart would
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
            "'planweave' AND datname = current_database()"
        )
    with pytest.raises(JournalError, match="cannot read the journal"):
        journal.show(run_id)
    assert journal.show(run_id)["status"] == "finished"
    assert Runtime(TOOLS, ScriptedLLM(script()), journal=journal).run("q").status == "finished"


def test_text_postgresql_cannot_hold_is_stored_as_the_replacement_character(
    journal_db: str,
) -> None:
    journal = Journal(journal_db)
    journal.create_run("nul1", "a\0b", "compiled", {})
    expected = "a\ufffdb" if journal_db.startswith("postgresql://") else "a\0b"
    assert journal.show("nul1")["question"] == expected
    journal.verify("nul1")  # sealed as stored
