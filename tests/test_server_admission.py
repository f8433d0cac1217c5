"""`planweave serve` under load and abuse, over real HTTP on loopback: a few runs answer at once,
a bounded queue waits behind them, the rest are refused (503, Retry-After) before anything is
recorded; a slow client is dropped; the OpenAI endpoint refuses what it cannot answer; the
access log never shows the token; `planweave mcp`'s `ask` does not act without approval."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import pickle
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2 as httpx
import pytest
import uvicorn
from mcp import Client

import live_server
from demo_tools import TOOLS
from live_server import events
from planweave import Reply, Runtime, Script, ScriptedLLM, ScriptedServer, UserError, tool
from planweave.admission import Admission
from planweave.errors import Overloaded
from planweave.llm.base import Message, Purpose
from planweave.llm.openai_compat import OpenAICompatible
from planweave.mcp_server import create_server
from planweave.prompts import purpose_of
from planweave.server import ServerConfig, create_app
from planweave.server.transport import ACCESS_LOG, masked_target, uvicorn_config

TOKEN = "admission-token-0123456789abcdef"
AUTH = {"authorization": f"Bearer {TOKEN}"}
HOLD = threading.Event()  # `gate` returns once it is set
SENT: list[str] = []  # what `send` sent
T = TypeVar("T")


@tool
async def gate(label: str) -> str:
    """Waits until the test opens the gate, then returns its label.

    Args:
        label: what to return
    """
    await anyio.to_thread.run_sync(HOLD.wait, abandon_on_cancel=True)
    return label


@tool(side_effects=True)
def send(text: str) -> str:
    """Sends a message (a side effect).

    Args:
        text: the message
    """
    SENT.append(text)
    return "sent"


def _reply(messages: list[Message], purpose: Purpose) -> Reply | str:
    text = "\n".join(m.content for m in messages if isinstance(m.content, str))
    if purpose == "planner":
        if "send" in text:
            return '1. send("hello")\n2. join()\n<END_OF_PLAN>'
        return '1. gate("opened")\n2. join()\n<END_OF_PLAN>'
    return "Action: Finish(opened)"


@pytest.fixture(autouse=True)
def _gate() -> Iterator[None]:
    HOLD.clear()
    SENT.clear()
    yield
    HOLD.set()  # a failed test must not leave the server's runs waiting


@contextmanager
def _server(db: Path, **config: Any) -> Iterator[httpx.Client]:
    runtime = Runtime([*TOOLS, gate], ScriptedLLM(Script.routed(_reply)), journal=db)
    with (
        live_server.serving(runtime, ServerConfig(token=TOKEN, **config)) as base,
        httpx.Client(base_url=base, headers=AUTH, timeout=20) as http,
    ):
        yield http


@contextmanager
def _served(db: Path, **config: Any) -> Iterator[httpx.Client]:
    """As `_server`, with the app run as `planweave serve` runs it (see `_uvicorn`)."""
    with (
        _uvicorn(db, request_timeout_s=30, **config) as base,
        httpx.Client(base_url=base, headers=AUTH, timeout=20) as http,
    ):
        yield http


def _until(check: Callable[[], T | None], what: str) -> T:
    deadline = time.monotonic() + 20
    while (found := check()) is None:
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)
    return found


def _queued(http: httpx.Client) -> dict[str, int]:
    runs = http.get("/runs").json()["runs"]
    return {r["id"]: r["queued"]["ahead"] for r in runs if "queued" in r}


def test_past_the_running_and_queued_runs_the_server_refuses_with_503(tmp_path: Path) -> None:
    with _server(tmp_path / "runs.db", max_running=2, max_queued=2) as http:
        accepted = [http.post("/runs", json={"question": f"gate {n}"}) for n in range(4)]
        assert [r.status_code for r in accepted] == [202] * 4
        ids = [r.json()["id"] for r in accepted]
        # The first two answer; the next two wait, in the order they came.
        assert [r.json().get("queued") for r in accepted] == [
            None,
            None,
            {"ahead": 1},
            {"ahead": 2},
        ]
        assert _queued(http) == {ids[2]: 1, ids[3]: 2}
        health = http.get("/healthz").json()
        assert health["runs"] == {"running": 2, "queued": 2, "max_running": 2, "max_queued": 2}

        refused = http.post("/runs", json={"question": "one too many"})
        assert refused.status_code == 503
        assert int(refused.headers["retry-after"]) >= 1
        assert refused.json()["error"]["type"] == "overloaded"
        # The OpenAI endpoint goes through the same door.
        chat = {"model": "planweave", "messages": [{"role": "user", "content": "gate chat"}]}
        refused_chat = http.post("/v1/chat/completions", json=chat)
        assert refused_chat.status_code == 503
        assert "retry-after" in refused_chat.headers
        # Nothing was recorded for what was refused.
        listed = http.get("/runs").json()["runs"]
        assert sorted(r["id"] for r in listed) == sorted(ids)

        HOLD.set()
        streams = {run_id: events(http, run_id) for run_id in ids}
        again = http.post("/runs", json={"question": "gate again"})
        assert again.status_code == 202
        events(http, again.json()["id"])
        assert http.get("/healthz").json()["runs"]["running"] == 0

    for n, run_id in enumerate(ids):
        kinds = [e["data"]["kind"] for e in streams[run_id]]
        assert kinds[-1] == "run_finished"
        assert streams[run_id][-1]["data"]["status"] == "finished"
        if n < 2:
            assert "run_queued" not in kinds
            continue
        # Waited, journaled like any event: queued before it planned, admitted after.
        queued = next(e["data"] for e in streams[run_id] if e["data"]["kind"] == "run_queued")
        assert queued["ahead"] == n - 1
        assert (
            kinds.index("run_queued")
            < kinds.index("run_admitted")
            < kinds.index("llm_call_started")
        )


def test_a_queued_run_that_is_cancelled_leaves_the_queue(tmp_path: Path) -> None:
    with _server(tmp_path / "runs.db", max_running=1, max_queued=3) as http:
        ids = [http.post("/runs", json={"question": f"gate {n}"}).json()["id"] for n in range(3)]
        assert _queued(http) == {ids[1]: 1, ids[2]: 2}
        assert http.post(f"/runs/{ids[1]}/cancel").status_code == 200
        _until(lambda: True if _queued(http) == {ids[2]: 1} else None, "the last to move up")
        assert http.get("/healthz").json()["runs"]["queued"] == 1
        HOLD.set()
        ended = {run_id: events(http, run_id)[-1]["data"]["status"] for run_id in ids}
    assert ended == {ids[0]: "finished", ids[1]: "cancelled", ids[2]: "finished"}


@pytest.mark.slow  # 2-8 s
@pytest.mark.parametrize("served", ["app", "serve"])
def test_a_thousand_posted_runs_keep_healthz_fast_and_the_rest_are_refused(
    tmp_path: Path, served: str
) -> None:
    """The app under any server (the door as middleware), and as `planweave serve` runs it (the
    door answering in the protocol)."""
    db = tmp_path / "runs.db"
    with (
        _server(db, max_running=4, max_queued=16)
        if served == "app"
        else _served(db, max_running=4, max_queued=16)
    ) as http:
        codes: list[int] = []
        during: list[int] = []  # for each probe: how many posts were answered while it waited
        watching, flooding = threading.Event(), threading.Event()

        def watch() -> None:
            with httpx.Client(base_url=http.base_url, headers=AUTH, timeout=20) as probe:
                while not flooding.is_set():
                    before = len(codes)
                    assert probe.get("/healthz").status_code == 200
                    during.append(len(codes) - before)
                    watching.set()
                    time.sleep(0.02)

        async def flood() -> None:
            limits = httpx.Limits(max_connections=50)
            async with httpx.AsyncClient(
                base_url=http.base_url, headers=AUTH, timeout=60, limits=limits
            ) as client:

                async def post(n: int) -> None:
                    response = await client.post("/runs", json={"question": f"gate {n}"})
                    codes.append(response.status_code)

                async with anyio.create_task_group() as group:
                    for n in range(1000):
                        group.start_soon(post, n)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            assert watching.wait(20)  # the probes are under way before the flood begins
            anyio.run(flood)
        finally:
            flooding.set()
            watcher.join()
        HOLD.set()
    assert codes.count(202) == 20
    assert codes.count(503) == 980
    # No probe waited behind the flood: while any one waited, fewer than half the posts were
    # answered.  Counted in answers, not seconds, so a slow machine slows both alike (the
    # benchmark measures the seconds).
    assert len(during) > 1
    assert max(during) < 500, during


def _raw(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _closed_within(conn: socket.socket, seconds: float, trickle: bytes = b"") -> float:
    """Seconds until the server closes `conn`, trickling `trickle` a byte at a time."""
    began = time.monotonic()
    conn.setblocking(False)
    sent = 0
    while time.monotonic() - began < seconds:
        if sent < len(trickle):
            try:
                conn.send(trickle[sent : sent + 1])
                sent += 1
            except (BrokenPipeError, ConnectionResetError):
                return time.monotonic() - began
        try:
            data = conn.recv(4096)
        except BlockingIOError:
            time.sleep(0.05)
            continue
        except ConnectionResetError:
            return time.monotonic() - began
        if data == b"":
            return time.monotonic() - began
    raise AssertionError(f"the server kept the connection open past {seconds} s")


@contextmanager
def _uvicorn(
    db: Path, request_timeout_s: float, log_level: str = "warning", **config: Any
) -> Iterator[str]:
    """The app as `planweave serve` runs it (its uvicorn settings, the door's early answers), on
    a free loopback port."""
    runtime = Runtime([*TOOLS, gate], ScriptedLLM(Script.routed(_reply)), journal=db)
    settings = ServerConfig(token=TOKEN, request_timeout_s=request_timeout_s, **config)
    app = create_app(runtime, settings)
    server = uvicorn.Server(
        uvicorn_config(
            app,
            host="127.0.0.1",
            port=0,
            log_level=log_level,
            request_timeout_s=request_timeout_s,
            early=app.state.door.early,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    _until(lambda: True if server.started else None, "the server to start")
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        assert runtime.journal is not None
        runtime.journal.close()


@pytest.mark.slow  # 2-8 s
def test_slow_clients_are_dropped_and_a_prompt_one_is_answered(tmp_path: Path) -> None:
    with _uvicorn(tmp_path / "runs.db", request_timeout_s=0.5) as base:
        # Connects and says nothing.
        with _raw(base) as conn:
            assert _closed_within(conn, 5) < 3
        # Trickles its request's head.
        head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 200
        with _raw(base) as conn:
            assert _closed_within(conn, 5, head) < 3
        # Sends its head at once, then trickles the body of a run.
        body = json.dumps({"question": "gate slow"}).encode()
        post = (
            b"POST /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body) + 500}\r\n\r\n".encode()
        )
        with _raw(base) as conn:
            conn.sendall(post)
            assert _closed_within(conn, 5, body + b" " * 500) < 3
        # Idle after an answer (kept alive) is bounded too.
        with _raw(base) as conn:
            conn.sendall(
                b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()
            )
            assert _closed_within(conn, 8, b"GET /healthz HTTP/1.1\r\n") < 6
        with httpx.Client(base_url=base, headers=AUTH, timeout=10) as http:
            assert http.get("/healthz").status_code == 200
            # The trickled run never started.
            assert http.get("/runs").json()["runs"] == []
            # An event stream is an answer being sent: not cut by the deadline.
            run_id = http.post("/runs", json={"question": "gate follow"}).json()["id"]
            threading.Timer(1.5, HOLD.set).start()
            assert events(http, run_id)[-1]["data"]["status"] == "finished"


def _answers(conn: socket.socket, count: int) -> list[tuple[int, dict[str, str], bytes]]:
    """The next `count` answers on `conn` (status, headers, body), read as they come."""
    found: list[tuple[int, dict[str, str], bytes]] = []
    data = b""
    while len(found) < count:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            lines = head.decode("latin-1").split("\r\n")
            headers = dict(line.lower().split(": ", 1) for line in lines[1:])
            size = int(headers.get("content-length", "0"))
            if len(rest) >= size:
                found.append((int(lines[0].split()[1]), headers, rest[:size]))
                data = rest[size:]
                continue
        chunk = conn.recv(65536)
        assert chunk, f"the connection ended after {len(found)} answers"
        data += chunk
    return found


def test_a_full_server_refuses_a_run_before_its_body_comes(tmp_path: Path) -> None:
    """The door answers from the request's head: a flood's refusals cost no body, no routing,
    no ASGI task, and the connection goes on serving.  The guard still comes first."""
    body = json.dumps({"question": "gate late"}).encode()
    head = (
        b"POST /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n".encode()
    )
    with _uvicorn(tmp_path / "runs.db", request_timeout_s=20, max_running=1, max_queued=0) as base:
        with httpx.Client(base_url=base, headers=AUTH, timeout=10) as http:
            assert http.post("/runs", json={"question": "gate first"}).status_code == 202
        with _raw(base) as conn:
            began = time.monotonic()
            conn.sendall(head + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode())
            [(status, headers, answer)] = _answers(conn, 1)
            assert time.monotonic() - began < 20  # answered before the body's 20 s deadline
            assert status == 503
            assert int(headers["retry-after"]) >= 1
            assert json.loads(answer)["error"]["type"] == "overloaded"
            # The body that follows is not taken for a request; the next request is answered.
            conn.sendall(body + b"GET /runs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            conn.sendall(f"Authorization: Bearer {TOKEN}\r\n\r\n".encode())
            [(status, _, listed)] = _answers(conn, 1)
            assert status == 200
            assert [r["question"] for r in json.loads(listed)["runs"]] == ["gate first"]
        # Without the token: the guard's refusal, and not a word about the load.
        with _raw(base) as conn:
            conn.sendall(head + b"\r\n" + body)
            [(status, headers, answer)] = _answers(conn, 1)
            assert status == 401
            assert "retry-after" not in headers
            assert b"running" not in answer


def test_healthz_is_answered_from_the_head_as_the_app_answers_it(tmp_path: Path) -> None:
    """/healthz from the protocol (`planweave serve`) says what the app's route says, behind
    the same guard; pipelined probes and a probe that closes are each answered."""
    probe = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    with _uvicorn(tmp_path / "runs.db", request_timeout_s=5, max_running=1, max_queued=3) as base:
        with httpx.Client(base_url=base, headers=AUTH, timeout=10) as http:
            for n in range(2):
                assert http.post("/runs", json={"question": f"gate {n}"}).status_code == 202
            _until(lambda: True if _queued(http) else None, "the second run to wait")
            health = http.get("/healthz")
            assert health.status_code == 200
            assert health.headers["content-type"] == "application/json"
            assert health.json() == {
                "status": "ok",
                "model": "scripted",
                "runs": {"running": 1, "queued": 1, "max_running": 1, "max_queued": 3},
            }
            assert (
                http.get("/healthz", headers={"authorization": "Bearer wrong"}).status_code == 401
            )
            other = {"origin": "http://attacker.example"}
            assert http.get("/healthz", headers=other).status_code == 403
        with _raw(base) as conn:
            auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
            conn.sendall((probe + auth + b"\r\n") * 3 + probe + auth + b"Connection: close\r\n\r\n")
            answers = _answers(conn, 4)
            assert [status for status, _, _ in answers] == [200] * 4
            assert answers[-1][1]["connection"] == "close"
            assert all(json.loads(body)["runs"]["queued"] == 1 for _, _, body in answers)
            assert _closed_within(conn, 3) < 2
        HOLD.set()


def test_a_start_that_fails_before_its_run_opens_lets_the_next_one_open(tmp_path: Path) -> None:
    """Runs open one at a time (see `RunService`): a resume or approval refused before its
    session opens leaves the way free."""
    with _server(tmp_path / "runs.db") as http:
        HOLD.set()
        run_id = http.post("/runs", json={"question": "gate done"}).json()["id"]
        assert events(http, run_id)[-1]["data"]["status"] == "finished"
        for _ in range(3):
            assert http.post(f"/runs/{run_id}/resume").status_code == 409
            assert http.post(f"/runs/{run_id}/approve", json={}).status_code in (409, 422)
        again = http.post("/runs", json={"question": "gate again"})
        assert again.status_code == 202
        assert events(http, again.json()["id"])[-1]["data"]["status"] == "finished"


@pytest.mark.slow  # 2-8 s
def test_a_client_that_never_reads_its_answers_is_dropped(tmp_path: Path) -> None:
    """200 pipelined requests for the page's script (24 KB each, served without the token),
    never read: the answers fill the connection's buffers, and the server drops it once they
    have waited past the deadline, instead of holding megabytes for as long as the client
    likes (hostile review)."""
    request = b"GET /page.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with _uvicorn(tmp_path / "runs.db", request_timeout_s=0.5) as base:
        size = len(httpx.get(f"{base}/page.js").content)
        host, port = base.removeprefix("http://").split(":")
        conn = socket.socket()
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        conn.connect((host, int(port)))
        with conn:
            conn.sendall(request * 200)
            time.sleep(4)  # reads nothing: far past the deadline
            conn.settimeout(5)
            received = 0
            with contextlib.suppress(ConnectionResetError, TimeoutError):
                while chunk := conn.recv(1 << 20):
                    received += len(chunk)
        assert received < 200 * size  # not all were sent: the connection was dropped
        assert httpx.get(f"{base}/healthz", headers=AUTH).status_code == 200


@pytest.mark.parametrize("content", ["", "   ", None, [], [{"type": "text", "text": ""}]], ids=repr)
def test_the_openai_endpoint_refuses_an_empty_question(tmp_path: Path, content: Any) -> None:
    with _server(tmp_path / "runs.db") as http:
        chat = {"model": "planweave", "messages": [{"role": "user", "content": content}]}
        response = http.post("/v1/chat/completions", json=chat)
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error"
        assert error["param"] == "messages"
        assert "empty" in error["message"]
        assert http.get("/runs").json()["runs"] == []


@pytest.mark.parametrize("n", [0, 3])
def test_the_openai_endpoint_refuses_more_than_one_choice(tmp_path: Path, n: int) -> None:
    with _server(tmp_path / "runs.db") as http:
        chat = {"model": "planweave", "n": n, "messages": [{"role": "user", "content": "hi"}]}
        response = http.post("/v1/chat/completions", json=chat)
        assert response.status_code == 400
        assert f"n={n}" in response.json()["error"]["message"]
        assert http.get("/runs").json()["runs"] == []


def test_the_access_log_never_shows_the_token(tmp_path: Path) -> None:
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(logging.Formatter("%(message)s"))
    with _uvicorn(tmp_path / "runs.db", request_timeout_s=5, log_level="info") as base:
        logging.getLogger(ACCESS_LOG).addHandler(handler)
        try:
            with httpx.Client(base_url=base, headers=AUTH, timeout=10) as http:
                encoded = "".join(f"%{b:02X}" for b in TOKEN.encode())
                for target in (
                    f"/healthz?token={TOKEN}",
                    f"/healthz?access_token={TOKEN.upper()}",
                    f"/healthz?q={encoded}",
                    f"/runs/{TOKEN}",
                    "/healthz?api-key=other-secret-value",
                ):
                    http.get(target)
        finally:
            logging.getLogger(ACCESS_LOG).removeHandler(handler)
    logged = lines.getvalue()
    assert logged.count("GET") == 5
    for form in (TOKEN, TOKEN.upper(), TOKEN[:20], "other-secret-value", "%61%64%6D"):
        assert form.lower() not in logged.lower()
    assert "[redacted]" in logged
    assert masked_target("/runs?limit=5&before=abc") == "/runs?limit=5&before=abc"


def test_overloaded_pickles_with_its_retry_after() -> None:
    admission = Admission(max_running=1, max_queued=0)
    with admission.place(), pytest.raises(Overloaded) as refused, admission.place():
        pass
    again = pickle.loads(pickle.dumps(refused.value))
    assert (type(again), again.retry_after) == (Overloaded, 1)
    assert admission.held == 0
    with pytest.raises(UserError):
        Admission(max_running=0)


def _mcp_runtime(db: Path, **kwargs: Any) -> Runtime:
    return Runtime([*TOOLS, send], ScriptedLLM(Script.routed(_reply)), journal=db, **kwargs)


def test_mcp_ask_pauses_before_a_side_effect_for_the_operator(tmp_path: Path) -> None:
    runtime = _mcp_runtime(tmp_path / "runs.db")

    async def ask(allow: bool) -> Any:
        server = create_server(runtime, allow_side_effects=allow)
        async with Client(server) as client:
            return await client.call_tool("ask", {"question": "send hello"})

    paused = anyio.run(ask, False)
    assert paused.is_error
    text = paused.content[0].text
    assert "waits for the operator's approval" in text
    assert 'send("hello")' in text
    assert SENT == []  # nothing was sent
    run_id = re.search(r"run (\w+) waits", text)[1]  # type: ignore[index]
    assert runtime.journal is not None
    assert runtime.journal.show(run_id)["status"] == "awaiting_approval"
    # The operator approves: then it is sent, once.
    runtime.approve(run_id)
    assert SENT == ["hello"]
    # An operator who opted in lets `ask` act.
    allowed = anyio.run(ask, True)
    assert not allowed.is_error
    assert SENT == ["hello", "hello"]


def test_mcp_refuses_side_effects_it_cannot_pause_for(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--allow-side-effects"):
        create_server(_mcp_runtime(tmp_path / "runs.db", mode="react"))
    create_server(_mcp_runtime(tmp_path / "runs.db", mode="react"), allow_side_effects=True)


def test_the_admission_holds_on_an_endpoint_that_streams_slowly(tmp_path: Path) -> None:
    """The same admission with planweave's own HTTP client against the scripted endpoint:
    the queued runs are answered once the first ones are, in order."""

    def reply(messages: list[Message], purpose: Purpose) -> Reply:
        if purpose == "planner":
            return Reply('1. population("France")\n2. join()\n<END_OF_PLAN>', delay=0.01)
        return Reply("Action: Finish(68 million)", delay=0.01)

    with ScriptedServer(Script.routed(reply), guess=purpose_of) as endpoint:
        llm = OpenAICompatible(base_url=endpoint.base_url, model="scripted", max_retries=0)
        runtime = Runtime(TOOLS, llm, journal=tmp_path / "runs.db")
        config = ServerConfig(token=TOKEN, max_running=1, max_queued=5)
        with (
            live_server.serving(runtime, config) as base,
            httpx.Client(base_url=base, headers=AUTH, timeout=20) as http,
        ):
            ids = [http.post("/runs", json={"question": f"q{n}"}).json()["id"] for n in range(6)]
            assert http.post("/runs", json={"question": "q6"}).status_code in (202, 503)
            finals = [events(http, run_id)[-1]["data"] for run_id in ids]
    assert [f["answer"] for f in finals] == ["68 million"] * 6


def test_the_server_sets_up_its_llm_client_before_it_answers(tmp_path: Path) -> None:
    """The client's one-time set-up (the CA bundle, the lazily imported SDK modules: ~150 ms
    that paused the event loop when the first runs of a flood paid it) is done at startup: the
    first request finds the client built, and the runs use that one client."""
    with ScriptedServer(
        Script.routed(
            lambda m, p: (
                "Action: Finish(done)"
                if p == "joiner"
                else '1. population("France")\n2. join()\n<END_OF_PLAN>'
            )
        ),
        guess=purpose_of,
    ) as endpoint:
        llm = OpenAICompatible(base_url=endpoint.base_url, model="scripted", max_retries=0)
        runtime = Runtime(TOOLS, llm, journal=tmp_path / "runs.db")
        assert llm._client is None  # nothing built before the server starts
        with (
            live_server.serving(runtime, ServerConfig(token=TOKEN)) as base,
            httpx.Client(base_url=base, headers=AUTH, timeout=20) as http,
        ):
            built = llm._client
            assert built is not None
            run_id = http.post("/runs", json={"question": "q"}).json()["id"]
            assert events(http, run_id)[-1]["data"]["answer"] == "done"
            assert llm._client is built
