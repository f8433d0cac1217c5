"""Leases (issue 32): the process that runs a run holds it; another may take it over only once
that holder is gone, and a holder whose run was taken over writes nothing more.  Each test runs
on both journals (`journal_db`: SQLite, PostgreSQL)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import anyio
import pytest

from ledger_tools import FINISH, PLAN, TOOLS
from planweave import Runtime, Script, ScriptedLLM, tool
from planweave.errors import ResumeError
from planweave.events import TaskPlanned, TaskStarted
from planweave.store import Journal
from planweave.store.owner import LEASE_ENV, LeaseLost, holder
from test_journal import edit

SETTINGS: dict[str, object] = {"mode": "compiled"}
DEAD_PID = 2**22 + 12345  # beyond Linux's pid_max: no process has it


def _row(journal: Journal, run_id: str) -> dict[str, object]:
    return dict(journal.read("SELECT * FROM runs WHERE id = ?", (run_id,))[0])


def test_a_new_run_is_held_by_its_process_for_a_lease(
    journal_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LEASE_ENV, "12")
    journal = Journal(journal_db)
    before = time.time()
    journal.create_run("r1", "q", "compiled", SETTINGS)
    row = _row(journal, "r1")
    assert row["holder"] == holder()
    assert str(row["holder"]).startswith(f"{socket.gethostname()}:")
    assert before + 12 <= float(row["lease_until"]) <= time.time() + 12  # type: ignore[arg-type]
    assert journal.orphans() == []  # this process is alive
    assert journal.running_count() == 1


def test_who_may_take_a_run_over(journal_db: str) -> None:
    journal = Journal(journal_db)
    here, now = socket.gethostname(), time.time()
    held = {
        # this host, a pid that runs, its lease on: held
        "alive-here": (here, 1, now + 60),
        # this host, a pid that runs but a lease long out: stalled, or the pid is another's
        "stalled-here": (here, 1, now - 60),
        # this host, a pid that is gone: free at once, whatever its lease says
        "dead-here": (here, DEAD_PID, now + 60),
        # another host: its lease decides
        "lease-on": ("elsewhere", 7, now + 60),
        "lease-out": ("elsewhere", 7, now - 1),
        # another host, from before leases: assumed alive, as it always was
        "no-lease": ("elsewhere", 7, None),
    }
    for run_id, (host, pid, until) in held.items():
        journal.create_run(run_id, "q", "compiled", SETTINGS)
        edit(
            journal_db,
            "UPDATE runs SET host = ?, pid = ?, lease_until = ?, holder = ? WHERE id = ?",
            host,
            pid,
            until,
            f"{host}:{pid}:abcdef01",
            run_id,
        )
    assert sorted(journal.orphans()) == ["dead-here", "lease-out", "stalled-here"]
    # The views say the same: the free ones were interrupted.
    shown = {r["id"]: r["status"] for r in journal.runs(limit=10)}
    assert shown == {
        "alive-here": "running",
        "dead-here": "interrupted",
        "lease-on": "running",
        "lease-out": "interrupted",
        "no-lease": "running",
        "stalled-here": "interrupted",
    }
    for run_id in ("alive-here", "lease-on", "no-lease"):
        with pytest.raises(ResumeError, match="still running"):
            journal.claim(run_id)
    for run_id in ("dead-here", "lease-out", "stalled-here"):
        journal.claim(run_id)
        assert _row(journal, run_id)["holder"] == holder()
    assert journal.orphans() == []


def test_a_holder_whose_run_was_taken_over_writes_nothing_more(journal_db: str) -> None:
    journal = Journal(journal_db)
    journal.create_run("r1", "q", "compiled", SETTINGS)
    planned = TaskPlanned(task_id=1, tool="lookup", call='lookup("a")', deps=[], args={})
    journal.record("r1", 1, planned)
    assert journal.renew("r1")
    # Another process claims it (its lease ran out while this one stalled).
    edit(journal_db, "UPDATE runs SET holder = ? WHERE id = ?", "elsewhere:9:feedbeef", "r1")
    assert not journal.renew("r1")
    later = TaskStarted(task_id=1, tool="lookup", arguments={"key": "a"}, start=0.2)
    with pytest.raises(LeaseLost, match="taken over by elsewhere:9:feedbeef"):
        journal.record("r1", 1, later)
    assert [e["kind"] for e in journal.events("r1")] == ["task_planned"]
    journal.pause("r1")  # nor does it leave the run paused
    assert _row(journal, "r1")["status"] == "running"


def test_a_run_whose_lease_is_taken_stops_and_its_taker_finishes_it(
    journal_db: str, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    """A lease renewed every 0.1 s; while the run's lookups sleep, another process takes the
    run: this one stops at its next renewal and records nothing more, and the run resumed
    (as the taker would) finishes with each finished step kept."""
    monkeypatch.setenv(LEASE_ENV, "0.3")
    monkeypatch.setenv("PLANWEAVE_TEST_LEDGER", str(tmp_path) + "/ledger.txt")
    monkeypatch.setenv("PLANWEAVE_TEST_DELAY", "1.0")
    script = Script.by_purpose(planner=[PLAN] * 2, joiner=[FINISH] * 2)
    runtime = Runtime(TOOLS, ScriptedLLM(script), journal=journal_db)
    journal = runtime.journal
    assert journal is not None

    async def go() -> object:
        async with anyio.create_task_group() as tg:
            outcome: list[object] = []

            async def run() -> None:
                try:
                    outcome.append(await runtime.arun("Total, sent?"))
                except Exception as exc:
                    outcome.append(exc)

            tg.start_soon(run)
            await anyio.sleep(0.5)  # the lookups are under way
            (run_id,) = [r["id"] for r in journal.runs()]
            edit(journal_db, "UPDATE runs SET holder = ? WHERE id = ?", "other:1:0badf00d", run_id)
        return outcome[0]

    ended = anyio.run(go)
    run_id = journal.runs()[0]["id"]
    kinds = [e["kind"] for e in journal.events(run_id)]
    assert "run_finished" not in kinds  # the stopped holder wrote no end
    assert "task_finished" not in kinds  # nor the lookups it was waiting for
    assert ended is not None
    # The taker: the lease is gone (the other "process" never renewed it), and a resume here
    # plays the part of the replica that takes the run over.
    edit(journal_db, "UPDATE runs SET lease_until = ?, host = ? WHERE id = ?", 0.0, "other", run_id)
    assert journal.orphans() == [run_id]
    result = runtime.resume(run_id)
    assert result.status == "finished"
    assert result.answer == "The total is 5, and it was sent."


def test_a_cancelled_run_winding_down_stays_held_and_is_never_taken_over(
    journal_db: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The stop is asked while a tool that cannot be interrupted runs for five leases: the run
    keeps renewing its lease while it winds down, so nobody takes it over (and sends again),
    and it ends cancelled."""
    monkeypatch.setenv(LEASE_ENV, "0.3")
    sent: list[str] = []

    @tool(side_effects=True)
    def slow_send(message: str) -> str:
        """Send a message, slowly."""
        time.sleep(1.5)
        sent.append(message)
        return "sent"

    plan = '1. slow_send("hi")\n2. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[plan], joiner=["Action: Finish(sent)"])
    runtime = Runtime([slow_send], ScriptedLLM(script), journal=journal_db)
    journal = runtime.journal
    assert journal is not None
    seen: list[list[str]] = []

    async def go() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: runtime.arun("Send hi", check=False))
            await anyio.sleep(0.4)  # the send is under way
            (run_id,) = [r["id"] for r in journal.runs()]
            assert journal.request_cancel(run_id) == "cancelling"
            for _ in range(12):  # 1.2 s: four leases while the send goes on
                seen.append(journal.orphans())
                await anyio.sleep(0.1)

    anyio.run(go)
    assert seen == [[]] * 12
    run = journal.runs()[0]
    assert run["status"] == "cancelled"
    assert sent == ["hi"]
    assert journal.orphans() == []


def test_a_run_whose_stop_was_asked_is_cancelled_not_taken_over_when_its_holder_dies(
    journal_db: str,
) -> None:
    journal = Journal(journal_db)
    journal.create_run("r1", "q", "compiled", SETTINGS)
    assert journal.request_cancel("r1") == "cancelling"
    edit(journal_db, "UPDATE runs SET pid = ? WHERE id = ?", DEAD_PID, "r1")  # it died
    assert journal.orphans() == []
    assert journal.runs()[0]["status"] == "cancelled"


def test_a_cancel_while_the_holder_seems_gone_revokes_its_lease(journal_db: str) -> None:
    """Another machine's clock (or a stall) makes a live holder's lease look out: the cancel
    is answered at once, and the holder, if it was only late, can write no more."""
    journal = Journal(journal_db)
    journal.create_run("r1", "q", "compiled", SETTINGS)
    edit(journal_db, "UPDATE runs SET host = ?, lease_until = ? WHERE id = ?", "else", 1.0, "r1")
    assert journal.request_cancel("r1") == "cancelled"
    planned = TaskPlanned(task_id=1, tool="send", call='send("x")', deps=[], args={})
    with pytest.raises(LeaseLost):
        journal.record("r1", 1, planned)
    assert not journal.renew("r1")
    assert journal.runs()[0]["status"] == "cancelled"
    assert journal.orphans() == []


def test_a_holder_in_another_pid_namespace_is_judged_by_its_lease(journal_db: str) -> None:
    """Two containers may share a host name and number their processes alike: a holder in
    another pid namespace is never judged by a local pid."""
    journal = Journal(journal_db)
    here, now = socket.gethostname(), journal.clock()
    for run_id, pid, until in (("far-live", DEAD_PID, now + 60), ("far-out", 1, now - 1)):
        journal.create_run(run_id, "q", "compiled", SETTINGS)
        edit(
            journal_db,
            "UPDATE runs SET pid = ?, lease_until = ?, holder = ? WHERE id = ?",
            pid,
            until,
            f"{here}:{pid}:abcdef01:4026000000",
            run_id,
        )
    # Its pid is no process here, yet its lease is on: held.  A live pid here: not its own.
    assert journal.orphans() == ["far-out"]


def test_only_runs_whose_holder_holds_them_count_as_running(journal_db: str) -> None:
    journal = Journal(journal_db)
    for run_id in ("a", "b"):
        journal.create_run(run_id, "q", "compiled", SETTINGS)
    assert journal.running_count() == 2
    edit(journal_db, "UPDATE runs SET pid = ? WHERE id = ?", DEAD_PID, "b")
    assert journal.running_count() == 1


def test_the_journal_times_leases_by_its_database_s_clock(journal_db: str) -> None:
    journal = Journal(journal_db)
    assert abs(journal.clock() - time.time()) < 5  # the test's server runs on this machine
    journal.create_run("r1", "q", "compiled", SETTINGS)
    until = float(_row(journal, "r1")["lease_until"])  # type: ignore[arg-type]
    assert journal.clock() < until <= journal.clock() + 30
