"""`planweave serve` against hostile HTTP, for real (uvicorn on a loopback port): every class of
bad request gets a precise 4xx in the server's error shape, no answer reveals a file path or a
stack trace, and the server goes on answering."""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

import live_server
from demo_tools import TOOLS
from live_server import events
from planweave import Runtime, Script, ScriptedLLM
from planweave.server import ServerConfig

TOKEN = "hostile-token-0123456789abcdef"
PLAN = '1. population("Netherlands")\n2. join()\n<END_OF_PLAN>'


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "journal" / "runs.db"


@pytest.fixture
def base(db: Path) -> Iterator[str]:
    db.parent.mkdir()
    script = Script.by_purpose(planner=[PLAN] * 10, joiner=["Action: Finish(17.9 million)"] * 10)
    runtime = Runtime(TOOLS, ScriptedLLM(script), journal=db)
    config = ServerConfig(token=TOKEN, max_body_bytes=100_000, max_question_chars=500)
    with live_server.serving(runtime, config) as url:
        yield url


@pytest.fixture
def http(base: str) -> Iterator[httpx.Client]:
    headers = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=base, headers=headers, timeout=20) as client:
        yield client


@pytest.fixture
def run_id(http: httpx.Client) -> str:
    """A finished run."""
    response = http.post("/runs", json={"question": "people in the Netherlands?"})
    assert response.status_code == 202, response.text
    run = str(response.json()["id"])
    assert events(http, run)[-1]["data"]["status"] == "finished"
    return run


def refused(response: httpx.Response, status: int, kind: str, db: Path) -> str:
    """Checks the refusal (on the OpenAI routes, in OpenAI's shape); returns its message."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    if response.request.url.path.startswith("/v1/"):
        assert (error["type"], error["code"]) == ("invalid_request_error", kind), error
    else:
        assert error["type"] == kind, error
        assert error["code"] == status
    for leak in (str(db.parent), "Traceback", 'File "', TOKEN):
        assert leak not in response.text
    return str(error["message"])


def still_up(http: httpx.Client, runs: int = 0) -> None:
    """The server answers, and the refused requests started nothing."""
    assert http.get("/healthz").json()["status"] == "ok"
    assert len(http.get("/runs").json()["runs"]) == runs


def test_malformed_json_is_a_400_that_says_where(http: httpx.Client, db: Path) -> None:
    for body, where in [
        (b"{not json", "line 1 column 2"),
        (b'{"question": "q"', "line 1 column 17"),
        (b'{"question": "q"} trailing', "line 1 column 19"),
        (b"{\n \"question\": 'q'\n}", "line 2 column 14"),
        (b"[" * 50_000, "nests too deeply"),
        (b"nope", "line 1 column 1"),
        (b'{"question": NaN}', "NaN is not a JSON number"),
        (b'{"edits": {"1": {"x": -Infinity}}}', "-Infinity is not a JSON number"),
    ]:
        response = http.post("/runs", content=body, headers={"content-type": "application/json"})
        message = refused(response, 400, "invalid_json", db)
        assert message.startswith("the body is not valid JSON")
        assert where in message
    # Well-formed JSON of the wrong shape is the schema's business: it names the field.
    for body in ({"question": 5}, {"question": "q", "extra": 1}, ["question"], "question", {}):
        response = http.post("/runs", json=body)
        assert "invalid request" in refused(response, 422, "invalid_request", db)
    still_up(http)


def test_a_body_that_is_not_json_is_a_415(http: httpx.Client, db: Path) -> None:
    body = json.dumps({"question": "people in the Netherlands?"}).encode()
    for media in (
        "text/plain",
        "application/x-www-form-urlencoded",  # what a form on another site posts
        "multipart/form-data; boundary=x",
        "application/jsonp",
        None,
    ):
        headers = {} if media is None else {"content-type": media}
        for path in ("/runs", "/v1/chat/completions", "/runs/x/approve"):
            response = http.post(path, content=body, headers=headers)
            message = refused(response, 415, "unsupported_media_type", db)
            assert "application/json" in message
    still_up(http)
    # JSON by any of its names is taken.
    response = http.post(
        "/runs", content=body, headers={"content-type": "Application/JSON; charset=utf-8"}
    )
    assert response.status_code == 202


@pytest.mark.slow  # 2-8 s
def test_huge_headers_are_refused_before_anything_reads_them(
    base: str, http: httpx.Client, db: Path
) -> None:
    big = {"x-junk": "j" * 9000}
    for method, path in [("GET", "/runs"), ("POST", "/runs"), ("GET", "/"), ("GET", "/healthz")]:
        response = http.request(method, path, headers=big, json={"question": "q"})
        assert "at most 8192" in refused(response, 431, "headers_too_large", db)
    many = {f"x-junk-{i}": "j" * 90 for i in range(100)}
    refused(http.get("/runs", headers=many), 431, "headers_too_large", db)
    # Past what uvicorn's HTTP parser buffers at once (16 KiB), uvicorn may refuse the request
    # itself, with a bare 400: a 4xx either way.
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Junk: " + b"j" * 20_000 + b"\r\n\r\n"
        )
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    assert reply.startswith((b"HTTP/1.1 400 ", b"HTTP/1.1 431 "))
    assert b"Traceback" not in reply
    still_up(http)


@pytest.mark.parametrize(
    "given",
    ["x", "-1", "1.5", "１", "0x1", "99999999999999999999999", "9" * 5000, "", " ", "1\x002"],
)
def test_an_invalid_last_event_id_is_a_400(
    http: httpx.Client, db: Path, run_id: str, given: str
) -> None:
    last = sum(e["id"] is not None for e in events(http, run_id))
    ways: list[tuple[dict[str, bytes], dict[str, str]]] = [({}, {"after": given})]
    if given.strip() == given and "\x00" not in given:  # what HTTP lets a header hold
        ways.append(({"last-event-id": given.encode()}, {}))
    for headers, params in ways:
        response = http.get(f"/runs/{run_id}/events", headers=headers, params=params)
        message = refused(response, 400, "invalid_event_id", db)
        assert f"a whole number from 0 to {last}" in message
        assert len(message) < 300
    still_up(http, runs=1)


def test_a_last_event_id_past_the_run_s_last_event_is_a_400(
    http: httpx.Client, db: Path, run_id: str
) -> None:
    recorded = [e for e in events(http, run_id) if e["id"] is not None]
    last = int(recorded[-1]["id"])
    response = http.get(f"/runs/{run_id}/events", headers={"last-event-id": str(last + 1)})
    refused(response, 400, "invalid_event_id", db)
    # The last one itself, or one with blanks around it, is where a stream may resume.
    assert events(http, run_id, **{"last-event-id": str(last)}) == []
    after = http.get(f"/runs/{run_id}/events", params={"after": f" {last} "})
    assert after.status_code == 200
    assert "data:" not in after.text
    assert events(http, run_id, **{"last-event-id": str(last - 1)})[-1] == recorded[-1]


def test_the_event_stream_tells_clients_when_to_reconnect(http: httpx.Client, run_id: str) -> None:
    with http.stream("GET", f"/runs/{run_id}/events") as response:
        first = next(response.iter_lines())
    assert first == "retry: 1000"


def test_unicode_junk_is_refused_or_kept_exactly(http: httpx.Client, db: Path) -> None:
    broken = [
        b'{"question": "\\ud800 half a pair"}',  # an escaped lone surrogate
        b'{"question": "\\udfff\\ud800"}',
        b'{"\\ud83d": "q"}',  # in a key
    ]
    for body in broken:
        response = http.post("/runs", content=body, headers={"content-type": "application/json"})
        assert "surrogate" in refused(response, 400, "invalid_json", db)
    for body in (b'{"question": "caf\xe9"}', b"\xff\xfe{}", b'{"question": "\xed\xa0\x80"}'):
        response = http.post("/runs", content=body, headers={"content-type": "application/json"})
        assert "not UTF-8" in refused(response, 400, "invalid_json", db)
    bom = "\ufeff" + json.dumps({"question": "q"})
    response = http.post(
        "/runs", content=bom.encode(), headers={"content-type": "application/json"}
    )
    refused(response, 400, "invalid_json", db)
    still_up(http)
    # Text that is odd but valid Unicode is a question like any other, kept as it came.
    odd = "people in the Netherlands? \u202e\u200d\U0001f4a9 e\u0301 \x00 \ufffd \U0010fffd"
    response = http.post("/runs", json={"question": odd})
    assert response.status_code == 202, response.text
    run = response.json()["id"]
    assert events(http, run)[-1]["data"]["status"] == "finished"
    assert http.get(f"/runs/{run}").json()["question"] == odd
    # In a path, it names no run.
    message = refused(http.get("/runs/%F0%9F%92%A9"), 404, "not_found", db)
    assert message == "no run '\U0001f4a9'"
    refused(http.get("/runs/%ff%fe"), 404, "not_found", db)
    still_up(http, runs=1)


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/runs/..%2F..%2Fetc%2Fpasswd", "http_error"),  # no such route
        ("/runs/%2e%2e", "not_found"),
        ("/runs/..%5C..%5Cwindows", "not_found"),
        ("/runs/a%00b", "not_found"),
        ("/runs/%25", "not_found"),  # no LIKE wildcard: it matches no run
        ("/runs/%27%20OR%201%3D1%20--", "not_found"),
        ("/runs/" + "r" * 5000, "not_found"),
        ("/runs/..%2F..%2Fetc%2Fpasswd/events", "http_error"),
        ("/runs/%2e%2e/events", "not_found"),
        ("/runs?before=..%2Fruns.db", "not_found"),
        ("/nosuchpage", "http_error"),
    ],
)
def test_a_run_id_with_path_characters_is_a_404_without_a_path(
    http: httpx.Client, db: Path, run_id: str, path: str, kind: str
) -> None:
    message = refused(http.get(path), 404, kind, db)
    assert len(message) < 200
    for action in ("cancel", "resume", "approve", "reject"):
        if "/events" not in path and path.startswith("/runs/"):
            refused(http.post(f"{path}/{action}"), 404, kind, db)
    still_up(http, runs=1)
    assert http.get(f"/runs/{run_id}").json()["status"] == "finished"


def test_a_failure_of_the_server_itself_is_a_bare_500(
    http: httpx.Client, db: Path, run_id: str
) -> None:
    """A journal damaged under the server: the request fails, the answer says only that."""
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET settings = '{damaged' WHERE id = ?", (run_id,))
    response = http.get(f"/runs/{run_id}")
    message = refused(response, 500, "server_error", db)
    assert message == "the server failed to answer this request; its log says why"
    assert "damaged" not in response.text
    assert http.get("/healthz").status_code == 200
