"""Human approval through the real server: a run that pauses before its tasks (or its tasks with
side effects) run, approved as it is or with edits, rejected, and still paused after a restart."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2 as httpx
import pytest

import live_server
from demo_tools import TOOLS
from live_server import events
from planweave import Journal, Runtime, Script, ScriptedLLM, UserError, tool
from planweave.cli.view import DagView
from planweave.llm.base import Message, Purpose
from planweave.server import ServerConfig

TOKEN = "test-token-0123456789abcdef"
PLAN = (
    '1. population("Netherlands")\n2. area("Netherlands")\n3. divide($1, $2)\n'
    "4. join()\n<END_OF_PLAN>"
)
NOTIFY_PLAN = '1. population("Netherlands")\n2. notify("people: ${1}")\n3. join()\n<END_OF_PLAN>'
SENT: list[str] = []


@tool(side_effects=True)
def notify(text: str) -> str:
    """Sends a message to the team (a side effect).

    Args:
        text: the message
    """
    SENT.append(text)
    return "sent"


def _reply(messages: list[Message], purpose: Purpose) -> str:
    text = "\n".join(m.content for m in messages if isinstance(m.content, str))
    if purpose == "planner":
        return NOTIFY_PLAN if "tell the team" in text else PLAN
    if purpose == "joiner":
        return "Action: Finish(done)"
    raise AssertionError(f"no reply for {purpose}")


@pytest.fixture(autouse=True)
def _clear_sent() -> None:
    SENT.clear()


def runtime(db: str) -> Runtime:
    return Runtime([*TOOLS, notify], ScriptedLLM(Script.routed(_reply)), journal=db)


@pytest.fixture
def db(journal_db: str) -> str:
    """The journal, on each backend in turn (SQLite, PostgreSQL)."""
    return journal_db


@pytest.fixture
def http(db: str) -> Iterator[httpx.Client]:
    with live_server.serving(runtime(db), ServerConfig(token=TOKEN)) as url:
        headers = {"authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=url, headers=headers, timeout=20) as client:
            yield client


def paused(http: httpx.Client, question: str, approve: str = "plan") -> str:
    """Start a run that waits for approval; returns its id once it waits."""
    answer = http.post("/runs", json={"question": question, "approve": approve})
    assert answer.status_code == 202, answer.text
    run_id = str(answer.json()["id"])
    stream = events(http, run_id)  # ends when the run pauses
    assert stream[-1]["data"]["kind"] == "plan_awaiting_approval"
    return run_id


def kinds(stream: list[dict[str, Any]]) -> list[str]:
    return [e["data"]["kind"] for e in stream]


def test_a_plan_waits_whole_then_runs_with_an_edit(http: httpx.Client) -> None:
    run_id = paused(http, "density of the Netherlands?")
    stream = events(http, run_id)
    assert "task_started" not in kinds(stream)
    assert kinds(stream).count("task_planned") == 3
    run = http.get(f"/runs/{run_id}").json()
    assert run["status"] == "awaiting_approval"
    assert [t["status"] for t in run["tasks"]] == ["pending"] * 3
    waiting = run["awaiting"]
    assert waiting["approve"] == "plan"
    assert [(t["id"], t["call"]) for t in waiting["tasks"]] == [
        (1, 'population("Netherlands")'),
        (2, 'area("Netherlands")'),
        (3, "divide($1, $2)"),
    ]
    assert waiting["tasks"][2]["args"] == {"a": "$1", "b": "$2"}
    assert run["llm"]["calls"] == 1  # the planner's, recorded with the pause

    approved = http.post(f"/runs/{run_id}/approve", json={"edits": {"2": {"country": "Belgium"}}})
    assert approved.status_code == 202, approved.text
    rest = events(http, run_id, **{"Last-Event-ID": stream[-1]["id"]})
    assert kinds(rest)[:2] == ["run_resumed", "plan_approved"]
    assert rest[1]["data"]["edits"] == {"2": 'area(country="Belgium")'}
    assert rest[-1]["data"]["status"] == "finished"
    run = http.get(f"/runs/{run_id}").json()
    assert run["status"] == "finished"
    assert "awaiting" not in run
    tasks = {t["id"]: t for t in run["tasks"]}
    assert tasks[2]["call"] == 'area(country="Belgium")'
    assert tasks[3]["result"] == pytest.approx(17_900_000 / 30_689)
    assert run["llm"]["calls"] == 2  # the planner's (replayed) and the joiner's


def test_dropping_tasks_and_bad_edits(http: httpx.Client, db: str) -> None:
    run_id = paused(http, "density of the Netherlands?")
    refused = http.post(f"/runs/{run_id}/approve", json={"drop": [1]})
    assert refused.status_code == 422
    message = refused.json()["error"]["message"]
    assert "task 3 uses the result of task 1 ($1)" in message
    assert refused.json()["error"]["type"] == "invalid_approval"
    for body, why in [
        ({"edits": {"2": {"nation": "Belgium"}}}, "task 2 as edited is not valid"),
        ({"edits": {"3": {"a": "$4"}}}, "$4 refers to a task that is not earlier"),
        ({"edits": {"1": {"delay": "slow"}}}, "task 1 as edited is not valid"),
        ({"drop": [7]}, "cannot drop task 7"),
    ]:
        answer = http.post(f"/runs/{run_id}/approve", json=body)
        assert answer.status_code == 422, body
        assert why in answer.json()["error"]["message"]
    # Nothing refused changed the run: it still waits, and a plain resume is not an approval.
    assert http.get(f"/runs/{run_id}").json()["status"] == "awaiting_approval"
    assert http.post(f"/runs/{run_id}/resume").status_code == 409

    assert http.post(f"/runs/{run_id}/approve", json={"drop": [3]}).status_code == 202
    rest = events(http, run_id)
    assert rest[-1]["data"]["status"] == "finished"
    run = http.get(f"/runs/{run_id}").json()
    assert [t["id"] for t in run["tasks"]] == [1, 2]  # task 3 is no longer part of the plan
    assert http.post(f"/runs/{run_id}/approve").status_code == 409
    with Journal(db) as journal:
        (approval,) = journal.approvals(run_id)
    assert approval | {"t": 0} == {"t": 0, "approved": [1, 2, 3], "edits": {}, "dropped": [3]}


def test_a_rejected_plan_never_runs(http: httpx.Client) -> None:
    run_id = paused(http, "density of the Netherlands?")
    rejected = http.post(f"/runs/{run_id}/reject", json={"reason": "wrong country"})
    assert rejected.status_code == 200
    assert rejected.json()["error"]["type"] == "PlanRejected"
    run = http.get(f"/runs/{run_id}").json()
    assert run["status"] == "failed"
    assert run["error"]["message"] == "the plan was rejected: wrong country"
    assert {t["status"] for t in run["tasks"]} == {"cancelled"}
    stream = events(http, run_id)
    assert kinds(stream)[-2:] == ["plan_rejected", "run_finished"]
    assert http.post(f"/runs/{run_id}/reject").status_code == 409
    assert http.post(f"/runs/{run_id}/approve").status_code == 409
    assert http.post(f"/runs/{run_id}/resume").status_code == 202  # a failed run may resume


def test_only_side_effects_wait_and_the_rest_runs(http: httpx.Client) -> None:
    run_id = paused(http, "tell the team how many people live in the Netherlands", "side_effects")
    stream = events(http, run_id)
    started = [e["data"]["task_id"] for e in stream if e["data"]["kind"] == "task_started"]
    assert started == [1]
    assert [t["id"] for t in stream[-1]["data"]["tasks"]] == [2]
    assert SENT == []
    assert http.post(f"/runs/{run_id}/approve").status_code == 202
    rest = events(http, run_id, **{"Last-Event-ID": stream[-1]["id"]})
    assert rest[-1]["data"]["status"] == "finished"
    assert SENT == ["people: 17900000"]
    run = http.get(f"/runs/{run_id}").json()
    assert [t["status"] for t in run["tasks"]] == ["done", "done"]
    assert run["settings"]["approve"] == "side_effects"
    # Without side effects in its plan, a run in that mode never waits.
    answer = http.post(
        "/runs", json={"question": "density of the Netherlands?", "approve": "side_effects"}
    )
    assert events(http, answer.json()["id"])[-1]["data"]["status"] == "finished"


def test_the_pause_outlives_the_server(db: str) -> None:
    headers = {"authorization": f"Bearer {TOKEN}"}
    with (
        live_server.serving(runtime(db), ServerConfig(token=TOKEN)) as url,
        httpx.Client(base_url=url, headers=headers, timeout=20) as http,
    ):
        run_id = paused(http, "density of the Netherlands?")
    with (
        live_server.serving(runtime(db), ServerConfig(token=TOKEN)) as url,
        httpx.Client(base_url=url, headers=headers, timeout=20) as http,
    ):
        run = http.get(f"/runs/{run_id}").json()
        assert run["status"] == "awaiting_approval"
        assert len(run["awaiting"]["tasks"]) == 3
        assert http.post(f"/runs/{run_id}/approve").status_code == 202
        assert events(http, run_id)[-1]["data"]["status"] == "finished"
        assert http.get(f"/runs/{run_id}").json()["answer"] == "done"


def test_approval_from_python(db: str) -> None:
    rt = runtime(db)
    result = rt.run("density of the Netherlands?", approve="plan")
    assert result.status == "awaiting_approval"
    assert [t["id"] for t in result.waiting] == [1, 2, 3]
    assert result.answer is None
    assert result.to_dict()["status"] == "awaiting_approval"
    view = DagView()
    for event in result.events:
        view(event)
    assert view.notes[-1] == "awaiting approval (plan): tasks 1, 2, 3"
    assert {row.note for row in view.rows.values()} == {"awaiting approval"}
    done = rt.approve(result.run_id, edits={1: {"country": "Belgium"}}, drop=[3])
    assert done.status == "finished"
    for event in done.events:
        view(event)
    assert view.notes[-1] == "approved, edited 1, dropped 3"
    assert sorted(view.rows) == [1, 2]
    assert done.results[1] == 11_800_000
    with pytest.raises(UserError, match="compiled runs"):
        Runtime(TOOLS, ScriptedLLM([]), journal=db, mode="react", approve="plan")
    with pytest.raises(UserError, match="journal"):
        Runtime(TOOLS, ScriptedLLM([]), approve="plan")
    with pytest.raises(UserError, match="approve must be"):
        Runtime(TOOLS, ScriptedLLM([]), journal=db, approve="yes")  # type: ignore[arg-type]


def test_a_paused_session_ends_its_trace_span(db: str) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rt = Runtime([*TOOLS, notify], ScriptedLLM(Script.routed(_reply)), journal=db, tracing=provider)
    paused_run = rt.run("density of the Netherlands?", approve="plan")
    runs = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert [s.attributes["planweave.run.status"] for s in runs] == ["awaiting_approval"]
    assert list(runs[0].attributes["planweave.approval.waiting"]) == [1, 2, 3]
    rt.approve(paused_run.run_id)
    runs = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert [s.attributes["planweave.run.status"] for s in runs] == ["awaiting_approval", "finished"]
    assert "plan_approved" in [e.name for e in runs[1].events]
    provider.shutdown()
