"""A run's trace in a real Arize Phoenix: `phoenix serve` from its own virtualenv
(`.venv-phoenix`, which `.ci/run` makes: Phoenix's dependencies would clash with planweave's),
started on loopback with a working directory of its own; planweave sends the run's spans over
OTLP/HTTP to its `/v1/traces` and reads them back through its REST API.

Skipped where `.venv-phoenix` is missing, and never in CI (`.ci/run` sets
PLANWEAVE_REQUIRE_PHOENIX).  Phoenix takes about 15 s to start here; the module starts it
once."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from demo_tools import TOOLS
from planweave import OpenAICompatible, Runtime, Script, ScriptedServer
from planweave.otel import CAPTURE_CONTENT_ENV, OPENINFERENCE_ENV

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

PHOENIX = Path(__file__).resolve().parents[1] / ".venv-phoenix" / "bin" / "phoenix"
PLAN = (
    '1. population("France", 0.01)\n2. population("Belgium", 0.01)\n3. divide($1, $2)\n'
    "4. join()\n<END_OF_PLAN>"
)
QUESTION = "How many times more people in France than Belgium?"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Phoenix's base URL, once it answers."""
    if not PHOENIX.exists():
        if os.environ.get("PLANWEAVE_REQUIRE_PHOENIX"):
            pytest.fail(f"no Phoenix at {PHOENIX}; .ci/run installs it")
        pytest.skip(
            f"no Phoenix at {PHOENIX} (python3 -m venv .venv-phoenix && "
            ".venv-phoenix/bin/pip install arize-phoenix, as .ci/run does)"
        )
    home = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))}
    env |= {
        "PHOENIX_WORKING_DIR": str(home),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        # Nothing leaves the machine: no usage reports, no downloads.
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    }
    log = (home / "phoenix.log").open("w")
    proc = subprocess.Popen(
        [str(PHOENIX), "serve"], env=env, cwd=home, stdout=log, stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2):
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                tail = (home / "phoenix.log").read_text(errors="replace")[-3000:]
                pytest.fail(f"phoenix serve did not answer (exit {proc.returncode}):\n{tail}")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _traced_run(base: str, project: str) -> str:
    """Run the question with the scripted endpoint and real tools, its spans sent to
    Phoenix's project `project`; the run's id."""
    resource = Resource.create({"service.name": "planweave", "openinference.project.name": project})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{base}/v1/traces")))
    script = Script.by_purpose(planner=[PLAN], joiner=["Action: Finish(5.76)"])
    try:
        with ScriptedServer(script) as server:
            llm = OpenAICompatible(base_url=server.base_url, model="m")
            result = Runtime(TOOLS, llm, tracing=provider).run(QUESTION)
    finally:
        provider.shutdown()
    assert result.answer == "5.76"
    return result.run_id


def _spans(base: str, project: str, count: int) -> list[dict[str, Any]]:
    """The project's spans as Phoenix's REST API gives them, once all `count` are stored
    (Phoenix takes spans in and writes them a moment later)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            spans: list[dict[str, Any]] = _get(f"{base}/v1/projects/{project}/spans?limit=1000")[
                "data"
            ]
        except urllib.error.HTTPError as exc:
            if exc.code != 404:  # the project exists once its first span is stored
                raise
            spans = []
        if len(spans) >= count or time.monotonic() > deadline:
            return spans
        time.sleep(0.2)


def _by_kind(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        kinds.setdefault(span["span_kind"], []).append(span)
    return kinds


def test_phoenix_shows_the_run_as_typed_spans_with_tokens_and_messages(
    phoenix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    monkeypatch.delenv(OPENINFERENCE_ENV, raising=False)
    run_id = _traced_run(phoenix, "captured")
    spans = _spans(phoenix, "captured", 6)
    kinds = _by_kind(spans)
    assert {k: len(v) for k, v in kinds.items()} == {"AGENT": 1, "LLM": 2, "TOOL": 3}
    (agent,) = kinds["AGENT"]
    assert agent["name"] == "invoke_agent planweave"
    assert agent["parent_id"] is None
    assert agent["attributes"]["session.id"] == run_id
    assert agent["attributes"]["input.value"] == QUESTION
    assert agent["attributes"]["output.value"] == "5.76"
    assert {s["parent_id"] for s in spans if s is not agent} == {agent["context"]["span_id"]}

    purposes = {s["attributes"]["planweave.llm.purpose"]: s for s in kinds["LLM"]}
    for llm in purposes.values():
        a = llm["attributes"]
        assert a["llm.model_name"] == "m"
        assert a["llm.token_count.prompt"] > 0
        assert a["llm.token_count.completion"] > 0
        assert a["llm.token_count.total"] == (
            a["llm.token_count.prompt"] + a["llm.token_count.completion"]
        )
        assert a["llm.input_messages.0.message.role"] == "system"
        assert a["llm.input_messages.1.message.role"] == "user"
        assert QUESTION in a["llm.input_messages.1.message.content"]
        assert a["llm.output_messages.0.message.role"] == "assistant"
        assert a["gen_ai.response.id"].startswith("chatcmpl-scripted-")
        assert a["server.address"] == "127.0.0.1"
    joiner = purposes["joiner"]["attributes"]
    assert joiner["llm.output_messages.0.message.content"] == "Action: Finish(5.76)"
    assert "Observation: 68000000" in joiner["llm.input_messages.1.message.content"]

    tools = {s["attributes"]["gen_ai.tool.call.id"]: s["attributes"] for s in kinds["TOOL"]}
    assert sorted(tools) == ["1", "2", "3"]
    assert tools["3"]["tool.name"] == "divide"
    assert tools["3"]["tool.description"] == "a divided by b."
    assert json.loads(tools["1"]["input.value"]) == {"country": "France", "delay": 0.01}
    assert json.loads(tools["1"]["output.value"]) == 68_000_000


def test_phoenix_shows_no_content_when_capture_is_off(
    phoenix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    monkeypatch.delenv(OPENINFERENCE_ENV, raising=False)
    _traced_run(phoenix, "uncaptured")
    spans = _spans(phoenix, "uncaptured", 6)
    kinds = _by_kind(spans)
    assert {k: len(v) for k, v in kinds.items()} == {"AGENT": 1, "LLM": 2, "TOOL": 3}
    for llm in kinds["LLM"]:
        assert llm["attributes"]["llm.token_count.total"] > 0
    # Neither the prompts nor the replies, the question, the answer, a tool's arguments or
    # results.  (Phoenix makes an `output.value` of its own from the response's id and model.)
    for span in spans:
        shown = json.dumps(span["attributes"])
        assert "message.content" not in shown
        for content in ("France", "Finish", "5.76", "68000000", "You are a planner"):
            assert content not in shown, (span["name"], content)
