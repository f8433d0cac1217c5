"""`planweave serve` for real: uvicorn on a free loopback port, the scripted LLM, tools with
controlled latency, and real clients against it: httpx2 (the HTTP client the `openai` SDK is
built on) and the official `openai` SDK."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import openai
import pytest

import live_server
from cli_process import Announced, invoke_cli
from demo_tools import TOOLS
from live_server import events
from planweave import (
    Journal,
    Reply,
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
    UserError,
    tool,
)
from planweave.llm.base import Message, Purpose
from planweave.server import ServerConfig, check_bind, serve

TOKEN = "test-token-0123456789abcdef"
ANSWER = "About 428 (people) per km²."
PLAN = (
    '1. population("Netherlands")\n2. area("Netherlands")\n3. divide($1, $2)\n'
    "4. join()\n<END_OF_PLAN>"
)


class Naps:
    """A test's own `nap` tool: it sleeps until woken (`wake`, from any thread; with `together`,
    once that many naps are under way at once) or for `seconds`, then returns its label.  It
    counts how many naps were under way at once (`most`)."""

    def __init__(self, seconds: float = 30.0, *, together: int = 0) -> None:
        self.seconds = seconds
        self.together = together
        self.woken = threading.Event()
        self.under_way = 0
        self.most = 0

        @tool
        async def nap(label: str) -> str:
            """Sleeps a while, then returns its label.

            Args:
                label: what to return
            """
            self.under_way += 1  # on the server's event loop: no lock needed
            self.most = max(self.most, self.under_way)
            if self.together and self.under_way >= self.together:
                self.woken.set()
            try:
                await anyio.to_thread.run_sync(
                    self.woken.wait, self.seconds, abandon_on_cancel=True
                )
            finally:
                self.under_way -= 1
            return label

        self.tool = nap

    def wake(self) -> None:
        self.woken.set()


def _reply(messages: list[Message], purpose: Purpose) -> Reply | str:
    text = "\n".join(m.content for m in messages if isinstance(m.content, str))
    if "broken" in text:
        return Reply(status=400)  # the endpoint refuses: the run ends without an answer
    if purpose == "planner":
        if "hang up" in text:  # one quick lookup, one long nap
            return '1. population("Netherlands")\n2. nap("done")\n3. join()\n<END_OF_PLAN>'
        if "slow" in text:
            return '1. nap("done")\n2. join()\n<END_OF_PLAN>'
        return Reply(PLAN, chunk_size=9, delay=0.005)
    if purpose == "joiner":
        answer = "napped" if "slow" in text else ANSWER
        return Reply(f"Action: Finish({answer})", chunk_size=3, delay=0.005)
    if purpose == "react":
        return (
            "Action: Finish(11.8 million)"
            if "11800000" in text
            else ('Action: population("Belgium")')
        )
    raise AssertionError(f"no reply for {purpose}")


@contextmanager
def serving(journal: Path, config: ServerConfig, naps: Naps | None = None) -> Iterator[str]:
    """A real server on a free loopback port; yields its base URL."""
    nap = (naps or Naps()).tool
    runtime = Runtime([*TOOLS, nap], ScriptedLLM(Script.routed(_reply)), journal=journal)
    with live_server.serving(runtime, config) as url:
        yield url


@pytest.fixture
def naps() -> Iterator[Naps]:
    """The served runtime's `nap` tool; a test may change it before it is first called."""
    naps = Naps()
    yield naps
    naps.wake()  # no sleeping thread outlives the test


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
def base(db: Path, naps: Naps) -> Iterator[str]:
    config = ServerConfig(token=TOKEN, max_body_bytes=100_000, max_question_chars=500)
    with serving(db, config, naps) as url:
        yield url


@pytest.fixture
def http(base: str) -> Iterator[httpx.Client]:
    headers = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=base, headers=headers, timeout=20) as client:
        yield client


def start(http: httpx.Client, question: str, **body: Any) -> str:
    response = http.post("/runs", json={"question": question, **body})
    assert response.status_code == 202, response.text
    data = response.json()
    assert data["status"] == "running"
    return str(data["id"])


def test_a_run_over_rest_is_the_journal_s_run(http: httpx.Client, db: Path) -> None:
    run_id = start(http, "density of the Netherlands?")
    stream = events(http, run_id)
    assert stream[-1]["data"]["kind"] == "run_finished"
    shown = http.get(f"/runs/{run_id}").json()
    with Journal(db) as journal:
        assert shown == json.loads(json.dumps(journal.show(run_id)))
    assert shown["status"] == "finished"
    assert shown["answer"] == ANSWER
    assert [t["status"] for t in shown["tasks"]] == ["done"] * 3
    assert http.get(f"/runs/{run_id[:6]}").json()["id"] == run_id  # a prefix will do
    missing = http.get("/runs/nosuchrun")
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "not_found"


def test_runs_are_listed_newest_first_in_pages(http: httpx.Client) -> None:
    ids = [start(http, f"density of the Netherlands, take {i}?") for i in range(3)]
    for run_id in ids:
        events(http, run_id)
    first = http.get("/runs", params={"limit": 2}).json()
    assert [r["id"] for r in first["runs"]] == ids[::-1][:2]
    assert first["next"] == ids[1]
    rest = http.get("/runs", params={"limit": 2, "before": first["next"]}).json()
    assert [r["id"] for r in rest["runs"]] == [ids[0]]
    assert rest["next"] is None
    assert http.get("/runs", params={"limit": 1000}).status_code == 422


def test_events_stream_in_journal_order_with_the_answer_s_pieces(
    http: httpx.Client, db: Path
) -> None:
    run_id = start(http, "density of the Netherlands?")
    stream = events(http, run_id)
    recorded = [e for e in stream if e["id"] is not None]
    with Journal(db) as journal:
        journal_events = journal.events(run_id)
    # Every recorded event, in order, each with its sequence number as the SSE id.
    assert [e["data"] for e in recorded] == json.loads(json.dumps(journal_events))
    assert [int(e["id"]) for e in recorded] == list(range(1, len(journal_events) + 1))
    kinds = [e["data"]["kind"] for e in stream]
    assert kinds[0] == "run_started"
    assert kinds[-1] == "run_finished"
    for kind in ("task_planned", "task_started", "task_finished", "llm_call_finished", "answer"):
        assert kind in kinds
    # The answer's pieces (live only, no id) add up to the answer, while the joiner decodes.
    pieces = [i for i, e in enumerate(stream) if e["data"]["kind"] == "answer_delta"]
    assert len(pieces) > 1
    assert "".join(stream[i]["data"]["text"] for i in pieces) == ANSWER
    assert all(stream[i]["id"] is None for i in pieces)
    joiner_start = max(
        i
        for i, e in enumerate(stream)
        if e["data"]["kind"] == "llm_call_started" and e["data"]["purpose"] == "joiner"
    )
    assert joiner_start < pieces[0]
    assert pieces[-1] < kinds.index("answer")


def test_reconnecting_with_last_event_id_gets_exactly_the_rest(http: httpx.Client) -> None:
    run_id = start(http, "density of the Netherlands?")
    whole = [e for e in events(http, run_id) if e["id"] is not None]
    cut = len(whole) // 2
    rest = events(http, run_id, **{"Last-Event-ID": whole[cut - 1]["id"]})
    # The run has finished: a late reconnect gets the recorded rest, and the stream ends.
    assert rest == whole[cut:]
    assert events(http, run_id, **{"Last-Event-ID": whole[-1]["id"]}) == []
    assert [e["id"] for e in events(http, run_id)] == [e["id"] for e in whole]
    bad = http.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "x"})
    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "invalid_event_id"


def test_cancel_a_running_run_then_resume_it(http: httpx.Client, naps: Naps) -> None:
    run_id = start(http, "a slow question")
    seen: list[dict[str, Any]] = []
    cancelled = False
    with http.stream("GET", f"/runs/{run_id}/events") as response:
        event: dict[str, str] = {}
        for line in response.iter_lines():
            if line.startswith("data: "):
                event["data"] = line[6:]
            elif line.startswith("id: "):
                event["id"] = line[4:]
            elif not line and event:
                seen.append({"id": event.get("id"), "data": json.loads(event["data"])})
                event = {}
                if seen[-1]["data"]["kind"] == "task_started" and not cancelled:
                    answer = http.post(f"/runs/{run_id}/cancel")
                    assert answer.json() == {"id": run_id, "status": "cancelling"}
                    cancelled = True
    assert cancelled
    assert seen[-1]["data"]["kind"] == "run_finished"
    assert seen[-1]["data"]["status"] == "cancelled"
    # Stopped mid-nap, on the run's own clock: not after the 30 s nap it was in.
    assert seen[-1]["data"]["t"] < naps.seconds
    assert naps.under_way == 0
    assert http.get(f"/runs/{run_id}").json()["status"] == "cancelled"
    assert http.post(f"/runs/{run_id}/cancel").json()["status"] == "cancelled"

    naps.wake()  # the nap, run again, returns at once
    resumed = http.post(f"/runs/{run_id}/resume")
    assert resumed.status_code == 202
    assert resumed.json() == {"id": run_id, "status": "running"}
    after = events(http, run_id, **{"Last-Event-ID": seen[-1]["id"]})
    assert after[0]["data"]["kind"] == "run_resumed"
    assert after[-1]["data"]["kind"] == "run_finished"
    assert after[-1]["data"]["status"] == "finished"
    run = http.get(f"/runs/{run_id}").json()
    assert run["status"] == "finished"
    assert run["answer"] == "napped"
    assert run["sessions"] == 2
    again = http.post(f"/runs/{run_id}/resume")
    assert again.status_code == 409
    assert "already finished" in again.json()["error"]["message"]
    assert http.post("/runs/nosuchrun/resume").status_code == 404


def test_every_request_needs_the_token(base: str) -> None:
    with httpx.Client(base_url=base, timeout=10) as anonymous:
        for method, path in [
            ("GET", "/healthz"),
            ("GET", "/runs"),
            ("POST", "/runs"),
            ("GET", "/runs/x/events"),
            ("GET", "/v1/models"),
            ("POST", "/v1/chat/completions"),
        ]:
            for headers in (
                {},
                {"authorization": "Bearer wrong-token-0123456789"},
                {"authorization": TOKEN},
            ):
                response = anonymous.request(method, path, headers=headers, json={})
                assert response.status_code == 401, (method, path, headers)
                assert response.headers["www-authenticate"] == "Bearer"
                error = response.json()["error"]
                # The OpenAI routes answer in OpenAI's shape: the name is its `code`.
                name = error["code"] if path.startswith("/v1/") else error["type"]
                assert name == "unauthorized"
                assert TOKEN not in response.text
        good = anonymous.get("/healthz", headers={"authorization": f"Bearer {TOKEN}"})
        assert good.status_code == 200
        assert good.json()["status"] == "ok"


def test_off_loopback_without_a_token_is_refused(db: Path) -> None:
    with pytest.raises(UserError, match="token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(UserError, match="at least 16"):
        check_bind("0.0.0.0", "short")
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        check_bind(host, None)
    runtime = Runtime(TOOLS, ScriptedLLM([]), journal=db)
    with pytest.raises(UserError, match="token"):
        serve(runtime, host="192.0.2.1", port=0)
    proc = invoke_cli("serve", "--host", "0.0.0.0", "--db", str(db), "--tools", "demo_tools:TOOLS")
    assert proc.returncode == 2
    assert "give a token" in proc.stderr
    assert "Uvicorn running" not in proc.stderr


def test_without_a_token_only_loopback_names_and_same_origin_are_served(db: Path) -> None:
    with serving(db, ServerConfig()) as url, httpx.Client(base_url=url, timeout=10) as client:
        assert client.get("/healthz").status_code == 200
        rebound = client.get("/healthz", headers={"host": "attacker.example"})
        assert rebound.status_code == 403
        foreign = client.post(
            "/runs", json={"question": "q"}, headers={"origin": "https://attacker.example"}
        )
        assert foreign.status_code == 403
        assert "origin" in foreign.json()["error"]["message"]
        assert client.get("/runs").json()["runs"] == []  # nothing was started


def test_oversized_requests_are_refused(http: httpx.Client) -> None:
    big = http.post("/runs", json={"question": "x" * 200_000})
    assert big.status_code == 413
    assert big.json()["error"]["type"] == "request_too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"question": "'
        for _ in range(30):
            yield b"y" * 10_000
        yield b'"}'

    streamed = http.post("/runs", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413
    long = http.post("/runs", json={"question": "z" * 501})
    assert long.status_code == 422
    assert "at most 500" in long.json()["error"]["message"]
    assert http.post("/runs", json={"question": "q", "mode": "guess"}).status_code == 422
    assert http.post("/runs", content=b"{not json").status_code == 415  # not even said to be
    assert http.post("/runs", json={"question": ""}).status_code == 422
    assert http.get("/runs").json()["runs"] == []


@pytest.fixture
def sdk(base: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{base}/v1", api_key=TOKEN, max_retries=0) as client:
        yield client


def test_the_openai_sdk_gets_a_completion(sdk: openai.OpenAI, http: httpx.Client) -> None:
    completion = sdk.chat.completions.create(
        model="planweave",
        messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "density of the Netherlands?"},
        ],
    )
    assert completion.choices[0].message.content == ANSWER
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.total_tokens > 0
    detail = (completion.model_extra or {})["planweave"]
    assert [t["tool"] for t in detail["tasks"]] == ["population", "area", "divide"]
    run = http.get(f"/runs/{detail['run_id']}").json()
    assert run["answer"] == ANSWER
    assert run["question"] == "density of the Netherlands?"


def test_the_openai_sdk_streams_the_answer_as_it_is_decoded(sdk: openai.OpenAI) -> None:
    stream = sdk.chat.completions.create(
        model="planweave",
        messages=[{"role": "user", "content": "density of the Netherlands?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    texts = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(texts) == ANSWER
    assert len(texts) > 1
    finished = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    assert len(finished) == 1
    assert (finished[0].model_extra or {})["planweave"]["status"] == "finished"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens > 0


def test_the_openai_sdk_lists_models_and_runs_react(sdk: openai.OpenAI) -> None:
    assert {m.id for m in sdk.models.list()} == {"planweave", "planweave-react"}
    completion = sdk.chat.completions.create(
        model="planweave-react",
        messages=[{"role": "user", "content": [{"type": "text", "text": "people in Belgium?"}]}],
    )
    assert completion.choices[0].message.content == "11.8 million"
    assert (completion.model_extra or {})["planweave"]["mode"] == "react"
    with pytest.raises(openai.NotFoundError):
        sdk.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "q"}])
    with pytest.raises(openai.BadRequestError, match="no user message"):
        sdk.chat.completions.create(
            model="planweave", messages=[{"role": "system", "content": "q"}]
        )


def test_a_run_without_an_answer_is_an_error_for_the_sdk(sdk: openai.OpenAI) -> None:
    with pytest.raises(openai.UnprocessableEntityError, match="without an answer") as caught:
        sdk.chat.completions.create(
            model="planweave", messages=[{"role": "user", "content": "a broken question"}]
        )
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["type"] == "server_error"
    assert body["code"] == "run_failed"
    assert body["planweave"]["status"] == "failed"
    stream = sdk.chat.completions.create(
        model="planweave",
        messages=[{"role": "user", "content": "another broken question"}],
        stream=True,
    )
    with pytest.raises(openai.APIError, match="without an answer"):
        list(stream)


@pytest.mark.slow  # a real process
def test_the_serve_command_serves_the_run_options(tmp_path: Path) -> None:
    """`planweave serve` in its own process, configured like `planweave run`."""
    script = Script.by_purpose(planner=[PLAN], joiner=[f"Action: Finish({ANSWER})"])
    with ScriptedServer(script) as llm:
        command = [sys.executable, "-m", "planweave", "serve", "--port", "0"]
        command += ["--tools", "demo_tools:TOOLS", "--base-url", llm.base_url, "--model", "m"]
        command += ["--db", str(tmp_path / "runs.db"), "--max-question-chars", "50"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PLANWEAVE_")}
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env.get("PYTHONPATH", "")])
        env["PLANWEAVE_TOKEN"] = TOKEN
        server = Announced(subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True))
        try:
            headers = {"authorization": f"Bearer {TOKEN}"}
            with httpx.Client(base_url=server.url, headers=headers) as http:
                assert http.get("/healthz").json()["model"] == "m"
                run_id = start(http, "density of the Netherlands?")
                assert events(http, run_id)[-1]["data"]["status"] == "finished"
                run = http.get(f"/runs/{run_id}").json()
                assert run["answer"] == ANSWER
                assert run["settings"]["tools"] == ["demo_tools:TOOLS"]
                assert http.post("/runs", json={"question": "q" * 51}).status_code == 422
        finally:
            err = server.stop()
        assert TOKEN not in err


def test_reconnecting_mid_run_misses_nothing(http: httpx.Client, db: Path, naps: Naps) -> None:
    run_id = start(http, "a slow question")
    seen: list[dict[str, Any]] = []
    with http.stream("GET", f"/runs/{run_id}/events") as response:
        event: dict[str, str] = {}
        for line in response.iter_lines():  # leave once the tool has started
            if line.startswith(("data: ", "id: ")):
                name, _, value = line.partition(": ")
                event[name] = value
            elif not line and event:
                seen.append({"id": event.get("id"), "data": json.loads(event["data"])})
                event = {}
                if seen[-1]["data"]["kind"] == "task_started":
                    break
    assert http.get(f"/runs/{run_id}").json()["status"] == "running"  # napping till woken
    naps.wake()
    rest = events(http, run_id, **{"Last-Event-ID": seen[-1]["id"]})
    assert rest[-1]["data"]["kind"] == "run_finished"
    with Journal(db) as journal:
        recorded = json.loads(json.dumps(journal.events(run_id)))
    assert [e["data"] for e in seen + rest if e["id"] is not None] == recorded
    by_query = http.get(f"/runs/{run_id}/events", params={"after": len(recorded) - 1})
    assert [
        json.loads(line[6:])["kind"]
        for line in by_query.text.splitlines()
        if line.startswith("data: ")
    ] == ["run_finished"]


def test_many_runs_at_once_are_kept_apart(http: httpx.Client, naps: Naps) -> None:
    # Each nap waits until all six are under way at once: runs taken one at a time would
    # each nap the full 10 s alone.
    naps.seconds, naps.together = 10.0, 6
    questions = [f"a slow question, number {i}" for i in range(6)]
    questions += [f"density of the Netherlands, number {i}?" for i in range(6)]
    ids = [start(http, q) for q in questions]
    finals = [events(http, run_id)[-1]["data"] for run_id in ids]
    assert naps.most == 6  # the naps overlapped
    assert [f["answer"] for f in finals] == ["napped"] * 6 + [ANSWER] * 6
    listed = http.get("/runs", params={"limit": 100}).json()["runs"]
    assert {r["id"]: r["question"] for r in listed} == dict(zip(ids, questions, strict=True))


@pytest.mark.parametrize("stream", [True, False])
def test_a_chat_client_that_hangs_up_cancels_its_run(
    base: str, http: httpx.Client, stream: bool
) -> None:
    """A real socket asks for a completion and closes once the run is under way: nobody
    wants that answer any more, so the run ends `cancelled`, keeping what it found."""
    messages = [{"role": "user", "content": "hang up"}]
    body = json.dumps({"model": "planweave", "stream": stream, "messages": messages}).encode()
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as conn:
        conn.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n".encode()
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        if stream:
            received = b""
            while b"\n\n" not in received.partition(b"data: ")[2]:  # the first chunk, whole
                data = conn.recv(65536)
                assert data, received
                received += data
            assert received.startswith(b"HTTP/1.1 200")
            first = json.loads(received.partition(b"data: ")[2].partition(b"\n\n")[0])
            run_id = first["planweave"]["run_id"]
        else:  # nothing comes back before the answer: the run is the server's only one
            deadline = time.monotonic() + 20
            while not (runs := http.get("/runs").json()["runs"]):
                assert time.monotonic() < deadline
                time.sleep(0.01)
            run_id = runs[0]["id"]
        seen: list[dict[str, Any]] = []
        with http.stream("GET", f"/runs/{run_id}/events") as response:
            for line in response.iter_lines():  # until the lookup is done and the nap runs
                if line.startswith("data: "):
                    seen.append(json.loads(line[6:]))
                    kinds = {(e["kind"], e.get("task_id")) for e in seen}
                    if {("task_finished", 1), ("task_started", 2)} <= kinds:
                        break
        assert http.get(f"/runs/{run_id}").json()["status"] == "running"
    # The socket is closed; the run notices and stops (its stream ends with run_finished).
    rest = events(http, run_id)
    assert rest[-1]["data"]["kind"] == "run_finished"
    assert rest[-1]["data"]["status"] == "cancelled"
    run = http.get(f"/runs/{run_id}").json()
    assert run["status"] == "cancelled"
    tasks = {t["id"]: t for t in run["tasks"]}
    assert tasks[1]["status"] == "done"
    assert tasks[1]["result"] == 17_900_000  # kept: a resume would not look it up again
    assert tasks[2]["status"] != "done"
