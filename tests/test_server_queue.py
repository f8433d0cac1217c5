"""`planweave serve` on a model that answers one call at a time, as the embedded model does:
runs posted at once over real HTTP to a real server on loopback take turns at the model in the
order they asked, each hears how many calls are ahead of it (its event stream, `GET /runs`),
and a run cancelled while it waits leaves the queue without holding the others up."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx2 as httpx
import pytest
from benchmarks import serve_queue

import live_server
from demo_tools import TOOLS
from live_server import events
from one_model import OneAtATime
from planweave import Reply, Runtime, Script, ScriptedLLM, ScriptedServer
from planweave.llm.base import LLMRequest, Message, Purpose
from planweave.prompts import purpose_of
from planweave.server import ServerConfig

TOKEN = "queue-token-0123456789abcdef"
ANSWER = "About 428 people per km²."
PLAN = (
    '1. population("Netherlands")\n2. area("Netherlands")\n3. divide($1, $2)\n'
    "4. join()\n<END_OF_PLAN>"
)
T = TypeVar("T")


def _reply(messages: list[Message], purpose: Purpose) -> Reply:
    if purpose == "planner":
        return Reply(PLAN, chunk_size=9, delay=0.005)
    if purpose == "joiner":
        return Reply(f"Action: Finish({ANSWER})", chunk_size=4, delay=0.005)
    raise AssertionError(f"no reply for {purpose}")


def _question(n: int) -> str:
    return f"Density of the Netherlands? (asker {n})"


def _label(request: LLMRequest) -> str:
    """A call as `asker N planner`: whose run it is part of and what it is for."""
    found = re.findall(r"\(asker (\d+)\)", "\n".join(m.content for m in request.messages))
    return f"asker {found[-1]} {request.purpose}"


@contextmanager
def _server(db: Path) -> Iterator[tuple[httpx.Client, OneAtATime, threading.Event]]:
    """A server whose model keeps its first turn until the event is set."""
    hold = threading.Event()
    model = OneAtATime(ScriptedLLM(Script.routed(_reply)), _label, hold=hold)
    runtime = Runtime(TOOLS, model, journal=db)
    try:
        with (
            live_server.serving(runtime, ServerConfig(token=TOKEN)) as base,
            httpx.Client(
                base_url=base, headers={"authorization": f"Bearer {TOKEN}"}, timeout=20
            ) as http,
        ):
            yield http, model, hold
    finally:
        hold.set()  # a failed test must not leave the server's model held


def _post_at_once(http: httpx.Client, questions: list[str]) -> list[str]:
    """Post every question at the same moment, each from its own thread; the runs' ids."""
    barrier = threading.Barrier(len(questions))

    def post(question: str) -> str:
        barrier.wait()
        response = http.post("/runs", json={"question": question})
        assert response.status_code == 202, response.text
        return str(response.json()["id"])

    with ThreadPoolExecutor(len(questions)) as pool:
        return list(pool.map(post, questions))


def _until(check: Callable[[], T | None], what: str) -> T:
    """What `check` returns once it is not None (the test watches the server from outside)."""
    deadline = time.monotonic() + 20
    while (found := check()) is None:
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)
    return found


def _waits(http: httpx.Client) -> dict[str, int]:
    """Calls ahead of each run that waits for the model, as `GET /runs` has it."""
    runs = http.get("/runs").json()["runs"]
    return {r["id"]: r["model_wait"]["ahead"] for r in runs if "model_wait" in r}


def _waiting(http: httpx.Client, runs: int) -> dict[str, int] | None:
    """`_waits`, once that many runs wait."""
    waits = _waits(http)
    return waits if len(waits) == runs else None


def _model_events(stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kinds = ("model_waiting", "model_acquired")
    return [e["data"] for e in stream if e["data"]["kind"] in kinds]


def test_five_runs_posted_at_once_take_turns_at_the_model_and_each_is_answered(
    tmp_path: Path,
) -> None:
    with _server(tmp_path / "runs.db") as (http, model, hold):
        ids = _post_at_once(http, [_question(n) for n in range(5)])
        # The first planner call keeps the model until the four others wait behind it.
        waits = _until(lambda: _waiting(http, 4), "4 runs waiting")
        assert sorted(waits.values()) == [1, 2, 3, 4]
        hold.set()
        streams = {run_id: events(http, run_id) for run_id in ids}
        assert _waits(http) == {}  # nobody waits any more
        shown = {run_id: http.get(f"/runs/{run_id}").json() for run_id in ids}

    for run_id in ids:
        finished = streams[run_id][-1]["data"]
        assert finished["kind"] == "run_finished"
        assert (finished["status"], finished["answer"]) == ("finished", ANSWER)
        assert shown[run_id]["status"] == "finished"
        assert "model_wait" not in shown[run_id]

    # First come, first served: the model answered its calls in the order they asked for it.
    assert len(model.asked) == 10  # a planner and a joiner call for each run
    assert model.granted == model.asked
    planners = [who for who in model.asked if who.endswith("planner")]
    for run_id, n in zip(ids, range(5), strict=True):
        place = planners.index(f"asker {n} planner")
        heard = [e for e in _model_events(streams[run_id]) if e["call"] == 1]
        if place == 0:
            assert heard == []  # the model was free
            assert run_id not in waits
            continue
        assert waits[run_id] == place
        # Waiting: `place` calls ahead, fewer as the ones before end, then the model.
        aheads = [e["ahead"] for e in heard if e["kind"] == "model_waiting"]
        assert aheads[0] == place
        assert aheads == sorted(aheads, reverse=True)
        assert heard[-1]["kind"] == "model_acquired"
        assert heard[-1]["purpose"] == "planner"
        assert heard[-1]["waited"] > 0
        # Journaled, like every event of the run: they carry the stream's ids.
        assert all(isinstance(e["seq"], int) for e in heard)
    assert not model.queue.busy
    assert model.queue.waiting == 0


def test_a_run_cancelled_while_it_waits_for_the_model_leaves_the_queue(tmp_path: Path) -> None:
    with _server(tmp_path / "runs.db") as (http, model, hold):
        ids = _post_at_once(http, [_question(n) for n in range(3)])
        waits = _until(lambda: _waiting(http, 2), "2 runs waiting")
        by_place = {place: run_id for run_id, place in waits.items()}
        cancelled, last = by_place[1], by_place[2]
        assert http.post(f"/runs/{cancelled}/cancel").status_code == 200
        # It leaves the queue: the one behind it moves up while the model is still held.
        _until(lambda: True if _waits(http) == {last: 1} else None, "the last run to move up")
        hold.set()
        streams = {run_id: events(http, run_id) for run_id in ids}

    ended = {run_id: stream[-1]["data"] for run_id, stream in streams.items()}
    assert ended[cancelled]["status"] == "cancelled"
    assert [e["kind"] for e in _model_events(streams[cancelled])] == ["model_waiting"]
    for run_id in set(ids) - {cancelled}:
        assert (ended[run_id]["status"], ended[run_id]["answer"]) == ("finished", ANSWER)
    heard = _model_events(streams[last])
    assert [e["ahead"] for e in heard if e["kind"] == "model_waiting"][:2] == [2, 1]
    # The cancelled run asked once and never had the model; the others went in order.
    gone = [who for who in model.asked if who not in model.granted]
    assert len(gone) == 1
    assert gone[0].endswith("planner")
    assert model.granted == [who for who in model.asked if who != gone[0]]
    assert not model.queue.busy
    assert model.queue.waiting == 0


def test_the_benchmark_reports_each_run_s_wait_for_the_model(tmp_path: Path) -> None:
    with _server(tmp_path / "runs.db") as (http, _, hold):
        questions = [_question(n) for n in range(3)]
        barrier = threading.Barrier(len(questions) + 1)
        url = str(http.base_url).rstrip("/")
        with ThreadPoolExecutor(len(questions)) as pool:
            asked = [
                pool.submit(serve_queue.ask, url, q, barrier, 20.0, token=TOKEN) for q in questions
            ]
            barrier.wait()
            _until(lambda: _waiting(http, 2), "2 runs waiting")
            time.sleep(0.2)  # a wait long enough to be seen in the report
            hold.set()
            runs = [a.result() for a in asked]
    assert [r["status"] for r in runs] == ["finished"] * 3
    assert [r["answer"] for r in runs] == [ANSWER] * 3
    assert sorted(r["first_call_ahead"] for r in runs) == [0, 1, 2]
    for r in runs:
        assert r["answer_s"] >= r["model_wait_s"]
        assert [c["purpose"] for c in r["llm_calls"]] == ["planner", "joiner"]
        if r["first_call_ahead"]:
            assert r["model_wait_s"] >= 0.2


@pytest.mark.slow  # 2-8 s
def test_the_benchmark_runs_planweave_serve_on_an_endpoint(tmp_path: Path) -> None:
    def reply(messages: list[Message], purpose: Purpose) -> Reply:
        if purpose == "planner":
            return Reply('1. country_info("Japan", "population")\n2. join()\n<END_OF_PLAN>')
        return Reply("Action: Finish(About 124 million.)")

    out = tmp_path / "serve_queue.json"
    with ScriptedServer(Script.routed(reply), guess=purpose_of) as endpoint:
        args = ["--base-url", endpoint.base_url, "--model", "scripted", "--questions", "2"]
        report = serve_queue.main([*args, "--ready", "60", "--out", str(out)])
    assert json.loads(out.read_text()) == report
    assert (report["backend"], report["questions"], report["finished"]) == ("endpoint", 2, 2)
    for run in report["runs"]:
        assert run["answer"] == "About 124 million."
        assert run["model_wait_s"] == 0.0  # an endpoint serves calls side by side
        assert run["answer_s"] > 0
