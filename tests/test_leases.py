"""Leases (issue 32): the process that runs a run holds it; another may take it over only once
that holder is gone, and a holder whose run was taken over writes nothing more.  Each test runs
on both journals (`journal_db`: SQLite, PostgreSQL)."""

from __future__ import annotations

import socket
import time

import anyio
import pytest

from ledger_tools import FINISH, PLAN, TOOLS
from planweave import Runtime, Script, ScriptedLLM
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
        # this host, a pid that runs: held, whatever its lease says
        "alive-here": (here, 1, now - 60),
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
    assert sorted(journal.orphans()) == ["dead-here", "lease-out"]
    # The views say the same: the free ones were interrupted.
    shown = {r["id"]: r["status"] for r in journal.runs(limit=10)}
    assert shown == {
        "alive-here": "running",
        "dead-here": "interrupted",
        "lease-on": "running",
        "lease-out": "interrupted",
        "no-lease": "running",
    }
    for run_id in ("alive-here", "lease-on", "no-lease"):
        with pytest.raises(ResumeError, match="still running"):
            journal.claim(run_id)
    for run_id in ("dead-here", "lease-out"):
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
