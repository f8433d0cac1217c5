"""What a broken or hostile endpoint can send, over real HTTP: text no encoder takes, a stream
that never ends, events that are not chat completion chunks, an error body that echoes the key.
Each must end in a precise planweave error (or a recovery), with the journal intact."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest

from cli_process import invoke_cli
from demo_tools import TOOLS
from planweave import (
    Journal,
    LLMMalformedStream,
    LLMTimeout,
    OpenAICompatible,
    Recovery,
    Reply,
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
)
from planweave.events import LLMRetry
from planweave.llm.base import Deadlines, LLMRequest, Message
from planweave.recovery import classify

PLAN = '1. population("Netherlands")\n2. join()\n<END_OF_PLAN>'
FINISH = "Thought: Done.\nAction: Finish(17.9 million)"
KEY = "sk-planweave-test-0123456789abcdef"


# ---------------------------------------------------------------------- a raw endpoint

Handler = Callable[[BaseHTTPRequestHandler], None]


@pytest.fixture
def raw_endpoint() -> Iterator[Callable[[Handler], str]]:
    """Serves each POST with the given function, which writes whatever bytes it likes."""
    servers: list[ThreadingHTTPServer] = []

    def start(handle: Handler) -> str:
        class Endpoint(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["content-length"]))
                # The client may give up first, as it should on a deadline.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    handle(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
        server.daemon_threads = True
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_port}/v1"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def sse(*events: bytes, pause: float = 0.0) -> Handler:
    def handle(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("content-type", "text/event-stream")
        request.end_headers()
        for event in events:
            request.wfile.write(event)
            request.wfile.flush()
            time.sleep(pause)

    return handle


def chunk(content: str | None = None, finish: str | None = None) -> bytes:
    data = {"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]}
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def stream_all(llm: OpenAICompatible) -> list[str]:
    async def go() -> list[str]:
        request = LLMRequest([Message("user", "q")])
        try:
            return [d.text async for d in llm.stream(request)]
        finally:
            await llm.aclose()

    return anyio.run(go)


# ---------------------------------------------------------------------- 8: lone surrogates


def test_lone_surrogates_from_the_model_are_journaled_and_printable(tmp_path: Path) -> None:
    plan = 'Thought: look \ud800 up\n1. population("Nether\udc00lands")\n2. join()\n<END_OF_PLAN>'
    finish = "Thought: ok \ud800\nAction: Finish(about \ud800 17.9 million)"
    llm = ScriptedLLM(Script.by_purpose(planner=[plan, "3. join()"], joiner=[finish]))
    runtime = Runtime(TOOLS, llm, journal=tmp_path / "runs.db", recovery=Recovery.none())
    result = runtime.run("q")
    assert result.answer == "about \ufffd 17.9 million"
    json.dumps(result.to_dict(), ensure_ascii=False).encode()  # what --json writes
    shown = Journal(tmp_path / "runs.db").show(result.run_id)
    assert shown["status"] == "finished"
    assert shown["answer"] == result.answer
    assert shown["tasks"][0]["args"] == {"country": "Nether\ufffdlands"}


def test_a_surrogate_pair_split_across_chunks_is_joined(tmp_path: Path) -> None:
    finish = "Action: Finish(smile \ud83d\ude00)"
    llm = ScriptedLLM(Script.by_purpose(planner=[PLAN], joiner=[Reply(finish, chunk_size=1)]))
    result = Runtime(TOOLS, llm, journal=tmp_path / "runs.db").run("q")
    assert result.answer == "smile \U0001f600"


def test_an_escaped_surrogate_over_http_is_replaced(
    raw_endpoint: Callable[[Handler], str], tmp_path: Path
) -> None:
    plan = b'data: {"choices": [{"delta": {"content": "1. population(\\"N\\ud800\\")\\n2. join()\\n"}, "finish_reason": "stop"}]}\n\n'  # noqa: E501
    base_url = raw_endpoint(sse(plan, b"data: [DONE]\n\n"))
    llm = OpenAICompatible(base_url=base_url, model="m")
    runtime = Runtime(TOOLS, llm, journal=tmp_path / "runs.db", recovery=Recovery.none())
    result = anyio.run(lambda: runtime.arun("q", check=False))
    assert result.tasks[0].task.args == ("N\ufffd",)
    assert Journal(tmp_path / "runs.db").show(result.run_id)["tasks"][0]["args"] == {
        "country": "N\ufffd"
    }


# ---------------------------------------------------------------------- 9: deadlines


@pytest.mark.parametrize(
    ("reply", "deadlines", "limit"),
    [
        (Reply(PLAN, ttft=3), Deadlines(first_token=0.3), "first_token"),
        (Reply(PLAN, chunk_size=4, delay=3), Deadlines(between_chunks=0.3), "between_chunks"),
        (
            Reply(PLAN * 4, chunk_size=1, delay=0.05),
            Deadlines(between_chunks=1, call=0.6),
            "call",
        ),
    ],
)
def test_a_slow_endpoint_meets_its_deadline(reply: Reply, deadlines: Deadlines, limit: str) -> None:
    with ScriptedServer([reply]) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m", deadlines=deadlines)
        started = time.monotonic()
        with pytest.raises(LLMTimeout) as info:
            stream_all(llm)
        # Cut when the deadline passed, not noticed once what it waited for came: the first
        # token or the next chunk at 3 s, the reply's end at 10 s.
        assert time.monotonic() - started < 3.0
    assert info.value.limit == limit
    assert classify(info.value) == "llm.timeout"


def test_keep_alives_do_not_count_as_a_first_token(raw_endpoint: Callable[[Handler], str]) -> None:
    base_url = raw_endpoint(sse(*[b": keep-alive\n\n", chunk("")] * 100, pause=0.05))
    llm = OpenAICompatible(base_url=base_url, model="m", deadlines=Deadlines(first_token=0.5))
    started = time.monotonic()
    with pytest.raises(LLMTimeout) as info:
        stream_all(llm)
    assert info.value.limit == "first_token"
    assert time.monotonic() - started < 5.0  # before the 5 s of keep-alives ran out


def test_a_first_token_timeout_is_retried_by_default() -> None:
    script = Script.by_purpose(planner=[Reply(PLAN, ttft=3), PLAN], joiner=[FINISH])
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(
            base_url=server.base_url, model="m", deadlines=Deadlines(first_token=0.3)
        )
        result = Runtime(TOOLS, llm).run("q")
    assert result.answer == "17.9 million"
    retries = [e for e in result.events if isinstance(e, LLMRetry)]
    assert [r.category for r in retries] == ["llm.timeout"]


# ---------------------------------------------------------------------- 11: malformed SSE


@pytest.mark.parametrize(
    "event",
    [
        b"data: not json\n\n",
        b'data: {"choices": "x"}\n\n',
        b"data: [1, 2]\n\n",
        b"data: 5\n\n",
        b'data: {"choices": [null]}\n\n',
        b'data: {"choices": [{"delta": {"content": 5}}]}\n\n',
        b'data: {"choices": [{"delta": "hi"}]}\n\n',
        b'data: {"choices": [], "usage": {"prompt_tokens": "many"}}\n\n',
        b'data: {"choices": [{"delta": {"content": "\xff\xfe"}}]}\n\n',  # not UTF-8
    ],
)
def test_a_malformed_stream_is_an_llm_error(
    raw_endpoint: Callable[[Handler], str], event: bytes
) -> None:
    base_url = raw_endpoint(sse(chunk("1. "), event, chunk("x", "stop"), b"data: [DONE]\n\n"))
    with pytest.raises(LLMMalformedStream) as info:
        stream_all(OpenAICompatible(base_url=base_url, model="m"))
    assert "the endpoint sent" in info.value.message


def test_a_malformed_stream_ends_the_run_as_a_recorded_llm_failure(
    raw_endpoint: Callable[[Handler], str], tmp_path: Path
) -> None:
    base_url = raw_endpoint(sse(b"data: {oops\n\n"))
    llm = OpenAICompatible(base_url=base_url, model="m")
    runtime = Runtime(TOOLS, llm, journal=tmp_path / "runs.db", recovery=Recovery.none())
    result = anyio.run(lambda: runtime.arun("q", check=False))
    assert isinstance(result.error, LLMMalformedStream)
    shown = Journal(tmp_path / "runs.db").show(result.run_id)
    assert shown["status"] == "failed"
    assert shown["error"]["type"] == "LLMMalformedStream"


# ---------------------------------------------------------------------- 21: secrets


def echo_key(request: BaseHTTPRequestHandler) -> None:
    """A 401 whose body repeats the key it was sent, as some gateways do."""
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}}).encode()
    request.send_response(401)
    request.send_header("content-type", "application/json")
    request.send_header("content-length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)


def test_an_echoed_api_key_is_in_no_journal_and_no_json(
    raw_endpoint: Callable[[Handler], str], tmp_path: Path
) -> None:
    base_url = raw_endpoint(echo_key)
    db = tmp_path / "runs.db"

    def planweave(*args: str) -> subprocess.CompletedProcess[str]:
        return invoke_cli(*args, env={"PLANWEAVE_API_KEY": KEY, "PLANWEAVE_DB": str(db)})

    run = planweave("run", "q", "-t", "demo_tools:TOOLS", "--base-url", base_url, "--model", "m")
    assert run.returncode == 1
    ran = planweave(
        "run", "q", "-t", "demo_tools:TOOLS", "--base-url", base_url, "--model", "m", "--json"
    )
    assert ran.returncode == 1
    error = json.loads(ran.stdout)["error"]
    assert "Incorrect API key provided: [redacted]" in error["message"]
    shown = planweave("runs", "show", json.loads(ran.stdout)["id"], "--json")
    assert shown.returncode == 0, shown.stderr
    for out in (run.stdout + run.stderr, ran.stdout + ran.stderr, shown.stdout + shown.stderr):
        assert "401" in out
        assert KEY not in out
    for stored in tmp_path.iterdir():  # the database and its write-ahead log
        assert KEY.encode() not in stored.read_bytes()


def test_a_key_given_in_python_is_redacted_too(
    raw_endpoint: Callable[[Handler], str], tmp_path: Path
) -> None:
    key = "sk-given-in-python-9876543210"
    llm = OpenAICompatible(base_url=raw_endpoint(echo_key), model="m", api_key=key)
    runtime = Runtime(TOOLS, llm, journal=tmp_path / "runs.db", recovery=Recovery.none())
    result = anyio.run(lambda: runtime.arun("q", check=False))
    assert result.error is not None
    assert key not in str(result.error)
    assert key not in json.dumps(result.to_dict())
    assert key not in json.dumps(Journal(tmp_path / "runs.db").show(result.run_id))


def test_the_cli_deadline_is_kept_for_resume(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    script = Script.by_purpose(planner=[Reply(PLAN, ttft=3)])
    with ScriptedServer(script) as server:
        command = ["run", "q", "-t", "demo_tools:TOOLS"]
        command += ["--base-url", server.base_url, "--model", "m", "--db", str(db), "--json"]
        command += ["--recovery", "none", "--llm-first-token-timeout", "0.4"]
        proc = invoke_cli(*command)
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["error"]["type"] == "LLMTimeout"
    assert data["error"]["limit"] == "first_token"
    settings = Journal(db).show(data["id"])["settings"]
    assert settings["llm_first_token_timeout"] == 0.4
    bad = invoke_cli(*command[:-2], "--llm-first-token-timeout", "nan")
    assert bad.returncode == 2
    assert "llm_first_token_timeout must be a number of seconds > 0" in bad.stderr


def test_every_run_shares_one_verifying_tls_context() -> None:
    """Each run's new SDK client reuses the process's TLS context instead of loading the CA
    bundle again before its first request; verification is the HTTP library's default."""
    import ssl

    from planweave.llm import openai_compat

    context = openai_compat._tls_context()
    assert context is openai_compat._tls_context()
    assert context is not None
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname
    script = Script.by_purpose(
        planner=['1. population("France")\n2. join()\n<END_OF_PLAN>'] * 2,
        joiner=["Action: Finish(68 million)"] * 2,
    )
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        runtime = Runtime(TOOLS, llm, plan_answers=False)
        assert [runtime.run("q").answer for _ in range(2)] == ["68 million"] * 2
