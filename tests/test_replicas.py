"""Replicas (issue 32): three `planweave serve` processes on one PostgreSQL journal, 200 runs
posted round-robin, one replica killed with SIGKILL twice during the load (and started again
each time).  Every run finishes exactly once, no side effect is repeated without a person's
decision, and every client's event stream ends with its run's answer, wherever it was served."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest

import live_server
from cli_process import Announced
from ledger_tools import TOOLS
from live_server import events
from planweave import Runtime, Script, ScriptedLLM, ScriptedServer
from planweave.llm.base import Message, Purpose
from planweave.server import ServerConfig
from planweave.store import Journal
from postgres_server import PostgresServer

RUNS = 200
TOKEN = "replica-token-0123456789abcdef"
TESTS = Path(__file__).parent


def _question(messages: list[Message]) -> str:
    asked = [m.content for m in messages if m.role == "user" and "Q" in m.content]
    found = re.search(r"\bQ(\d+)\b", asked[-1] if asked else "")
    assert found, messages
    return found[0]


def _reply(messages: list[Message], purpose: Purpose) -> str:
    """Each question's own plan (its message names it, so the ledger tells runs apart)."""
    q = _question(messages)
    if purpose == "planner":
        return (
            f'1. lookup("a")\n2. lookup("b")\n3. add($1, $2)\n4. send("{q} total ${{3}}")\n'
            "5. join()\n<END_OF_PLAN>"
        )
    assert purpose == "joiner", purpose
    return f"Thought: sent.\nAction: Finish({q}: the total is 5, and it was sent.)"


class Replicas:
    """Three `planweave serve` processes on one journal; any of them can be killed and started
    again (on a new port)."""

    def __init__(self, db: str, llm: str, tmp: Path) -> None:
        self.command = [
            sys.executable, "-m", "planweave", "serve", "--port", "0", "--db", db,
            "--tools", "ledger_tools:TOOLS", "--base-url", llm, "--model", "m", "--no-cache",
            "--take-over", "0.5", "--max-running", "16", "--max-queued", "200",
            "--max-replans", "0",
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("PLANWEAVE_")}
        env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
        env |= {
            "PLANWEAVE_TOKEN": TOKEN,
            "PLANWEAVE_TEST_LEDGER": str(tmp / "ledger.txt"),
            "PLANWEAVE_TEST_DELAY": "0.3",
            "PLANWEAVE_LEASE_S": "3",
        }
        self.env = env
        self.servers: list[Announced] = []
        self.killed = 0
        try:
            for _ in range(3):
                self.servers.append(self._start())
        except BaseException:
            self.stop()  # those that did start
            raise

    def _start(self) -> Announced:
        proc = subprocess.Popen(self.command, env=self.env, stderr=subprocess.PIPE, text=True)
        try:
            return Announced(proc, timeout=60)
        except BaseException:
            proc.kill()  # it never said where it listens: not left behind
            proc.wait(timeout=10)
            raise

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]

    def kill_and_restart(self, index: int) -> None:
        dead = self.servers[index]
        dead.proc.send_signal(signal.SIGKILL)
        dead.proc.wait(timeout=10)
        dead.stop()  # closes what it left open
        self.killed += 1
        self.servers[index] = self._start()

    def stop(self) -> None:
        for server in self.servers:
            server.stop()


async def _follow(run_id: str, home: int, replicas: Replicas, seen: dict[str, Any]) -> None:
    """Follow `run_id`'s events from replica `home`; when a stream breaks (its replica died)
    or ends without `run_finished` (the run changed hands), go on from the next replica after
    the last event seen.  Ends with the run's `run_finished`."""
    last: str | None = None
    headers = {"authorization": f"Bearer {TOKEN}"}
    for attempt in range(400):
        url = replicas.urls[(home + attempt) % 3]
        sent = headers | ({"last-event-id": last} if last else {})
        try:
            async with (
                httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(60, connect=5)) as http,
                http.stream("GET", f"/runs/{run_id}/events", headers=sent) as response,
            ):
                assert response.status_code == 200, await response.aread()
                event: dict[str, str] = {}
                async for line in response.aiter_lines():
                    if line:
                        name, _, value = line.partition(": ")
                        event[name] = value
                        continue
                    if "data" in event and "id" in event:
                        last = event["id"]
                        data = json.loads(event["data"])
                        if data["kind"] == "run_finished":
                            seen[run_id] = data
                            return
                    event = {}
        except (httpx.TransportError, httpx.RemoteProtocolError):
            pass  # the replica died under the stream: the next one
        await anyio.sleep(0.2)
    raise AssertionError(f"run {run_id}'s stream never ended with its answer")


@pytest.mark.slow  # three server processes, 200 runs, two kills
@pytest.mark.timeout(600)
def test_three_replicas_finish_every_run_once_through_two_kills(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    db = postgres_server.database()
    with ScriptedServer(Script.routed(_reply)) as llm:
        replicas = Replicas(db, llm.base_url, tmp_path)
        try:
            seen, ids = anyio.run(_load, replicas)
        finally:
            stderr = [s.stop() for s in replicas.servers]
    assert replicas.killed == 2
    journal = Journal(db)
    runs = {r["id"]: r for r in journal.runs(limit=RUNS + 1)}
    assert sorted(runs) == sorted(ids.values())
    # Every run finished, exactly once, and its stream ended with its own answer.
    assert Counter(r["status"] for r in runs.values()) == {"finished": RUNS}, stderr
    for q, run_id in ids.items():
        finished = [e for e in journal.events(run_id) if e["kind"] == "run_finished"]
        assert len(finished) == 1, (q, finished)
        assert seen[run_id]["answer"] == f"{q}: the total is 5, and it was sent.", q
    # No message was sent twice; each run's was sent once (a run that died with its send in
    # flight waited for a decision, and the decision matched what the ledger says happened).
    sent = Counter(
        line
        for line in (tmp_path / "ledger.txt").read_text().splitlines()
        if line.startswith("send ")
    )
    assert sent == {f"send {q} total 5": 1 for q in ids}
    # Some runs changed hands: the kills hit the load.
    sessions = Counter(r["sessions"] for r in runs.values())
    print(f"runs by sessions: {dict(sessions)}")  # what the kills did (pytest -s shows it)
    assert sum(n for s, n in sessions.items() if s > 1) > 0, sessions


async def _load(replicas: Replicas) -> tuple[dict[str, Any], dict[str, str]]:
    """Post the runs round-robin, follow each, kill replica 0 twice on the way; settle the
    runs left waiting for a decision as a person would (by the ledger)."""
    seen: dict[str, Any] = {}
    ids: dict[str, str] = {}
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with anyio.create_task_group() as tg:
        for n in range(RUNS):
            home = n % 3
            q = f"Q{n}"
            async with httpx.AsyncClient(base_url=replicas.urls[home], timeout=30) as http:
                for _ in range(100):
                    try:
                        posted = await http.post(
                            "/runs", json={"question": f"{q}: the total, sent?"}, headers=headers
                        )
                        break
                    except httpx.TransportError:  # the replica is being killed right now
                        await anyio.sleep(0.2)
                assert posted.status_code == 202, posted.text
            ids[q] = posted.json()["id"]
            tg.start_soon(_follow, ids[q], home, replicas, seen)
            if n in (40, 120):
                await anyio.to_thread.run_sync(replicas.kill_and_restart, 0)
            await anyio.sleep(0.01)
        tg.start_soon(_decide, replicas, ids, seen)
    return seen, ids


async def _decide(replicas: Replicas, ids: dict[str, str], seen: dict[str, Any]) -> None:
    """A person at the runs paused for a decision: rerun the send if the ledger shows it never
    went, mark it failed if it did (it was sent; sending again would repeat it)."""
    headers = {"authorization": f"Bearer {TOKEN}"}
    ledger = Path(replicas.env["PLANWEAVE_TEST_LEDGER"])
    while len(seen) < len(ids):
        await anyio.sleep(1.0)
        async with httpx.AsyncClient(base_url=replicas.urls[1], timeout=30) as http:
            for q, run_id in ids.items():
                if run_id in seen:
                    continue
                run = (await http.get(f"/runs/{run_id}", headers=headers)).json()
                if run["status"] != "paused":
                    continue
                text = await anyio.Path(ledger).read_text()
                went = f"send {q} total 5" in text.splitlines()
                body = {"decisions": {"4": "fail" if went else "rerun"}}
                await http.post(f"/runs/{run_id}/resume", json=body, headers=headers)


# ---------------------------------------------------------------------- two servers, one journal

PLAN = '1. lookup("a")\n2. lookup("b")\n3. add($1, $2)\n4. join()\n<END_OF_PLAN>'
FINISH = "Action: Finish(The total is 5.)"


def _server(db: str, **config: Any) -> Any:
    runtime = Runtime(
        TOOLS, ScriptedLLM(Script.by_purpose(planner=[PLAN] * 9, joiner=[FINISH] * 9)), journal=db
    )
    return live_server.serving(runtime, ServerConfig(token=TOKEN, **config))


def test_a_run_paused_on_one_server_is_approved_on_another_and_followed_anywhere(
    journal_db: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PLANWEAVE_TEST_LEDGER", str(tmp_path / "ledger.txt"))
    monkeypatch.setenv("PLANWEAVE_TEST_DELAY", "0.05")
    headers = {"authorization": f"Bearer {TOKEN}"}
    with (
        _server(journal_db) as one,
        _server(journal_db) as two,
        httpx.Client(base_url=one, headers=headers, timeout=20) as a,
        httpx.Client(base_url=two, headers=headers, timeout=20) as b,
    ):
        posted = a.post("/runs", json={"question": "The total?", "approve": "plan"})
        run_id = posted.json()["id"]
        assert events(a, run_id)[-1]["data"]["kind"] == "plan_awaiting_approval"
        assert b.get(f"/runs/{run_id}").json()["status"] == "awaiting_approval"
        assert b.post(f"/runs/{run_id}/approve").status_code == 202
        # The server that paused it follows it to its end, though the other one ran it.
        assert events(a, run_id)[-1]["data"]["answer"] == "The total is 5."
        assert events(b, run_id)[-1]["data"]["answer"] == "The total is 5."


def test_runs_across_the_servers_of_a_journal_are_bounded(
    journal_db: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PLANWEAVE_TEST_LEDGER", str(tmp_path / "ledger.txt"))
    monkeypatch.setenv("PLANWEAVE_TEST_DELAY", "2.0")  # the runs stay running while we ask
    headers = {"authorization": f"Bearer {TOKEN}"}
    with (
        _server(journal_db, max_running_total=2) as one,
        _server(journal_db, max_running_total=2) as two,
        httpx.Client(base_url=one, headers=headers, timeout=20) as a,
        httpx.Client(base_url=two, headers=headers, timeout=20) as b,
    ):
        assert a.post("/runs", json={"question": "one?"}).status_code == 202
        assert b.post("/runs", json={"question": "two?"}).status_code == 202
        refused = a.post("/runs", json={"question": "three?"})
        assert refused.status_code == 503, refused.text
        assert "2 runs are running across the servers of this journal" in refused.text
        assert refused.headers["retry-after"] == "1"
        assert b.post("/runs", json={"question": "three?"}).status_code == 503
