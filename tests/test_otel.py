"""OpenTelemetry traces of runs: the span tree, GenAI attributes, links for `$N`, the overlap of
parallel tasks, recovery and cache decisions as events; in the SDK's in-memory exporter, and
from the CLI over OTLP/HTTP to a receiver on loopback."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from cli_process import invoke_cli, run_cli
from demo_tools import TOOLS
from planweave import (
    Budget,
    Fallback,
    OpenAICompatible,
    Recovery,
    Retry,
    RunFailed,
    RunSettings,
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
    ToolFailed,
    tool,
)
from planweave.otel import CAPTURE_CONTENT_ENV, OPENINFERENCE_ENV
from planweave.session import trace

PARALLEL = (
    '1. population("France", 0.3)\n2. population("Belgium", 0.3)\n3. divide($1, $2)\n'
    "4. join()\n<END_OF_PLAN>"
)
CALLS: Counter[str] = Counter()


@tool
async def flaky(key: str) -> int:
    """Drops the connection twice, then answers."""
    CALLS["flaky"] += 1
    if CALLS["flaky"] <= 2:
        raise ConnectionError("connection reset by peer")
    return 7


@tool(timeout=0.2)
async def hang(key: str) -> int:
    """Never answers."""
    await anyio.sleep(30)
    return 0


@tool
async def mirror(key: str) -> int:
    """Answers what `hang` would."""
    return 11


@tool
def broken(key: str) -> int:
    """Its service is down."""
    raise ToolFailed("the service is down")


@tool
def double(x: int) -> int:
    """Twice x."""
    return 2 * x


MORE = [*TOOLS, flaky, hang, mirror, broken, double]


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


@pytest.fixture(autouse=True)
def _no_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    monkeypatch.delenv(OPENINFERENCE_ENV, raising=False)
    CALLS.clear()


def runtime(provider: TracerProvider, script: Script, **kwargs: object) -> Runtime:
    return Runtime(MORE, ScriptedLLM(script, model="m"), tracing=provider, **kwargs)  # type: ignore[arg-type]


def by_operation(spans: Sequence[ReadableSpan], operation: str) -> list[ReadableSpan]:
    found = [
        s for s in spans if s.attributes and s.attributes["gen_ai.operation.name"] == operation
    ]
    return sorted(found, key=lambda s: s.start_time or 0)


def tool_spans(spans: Sequence[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    """The execute_tool spans by task id, in the order they began."""
    out: dict[str, list[ReadableSpan]] = {}
    for span in by_operation(spans, "execute_tool"):
        assert span.attributes is not None
        out.setdefault(str(span.attributes["gen_ai.tool.call.id"]), []).append(span)
    return out


def bounds(span: ReadableSpan) -> tuple[int, int]:
    assert span.start_time is not None
    assert span.end_time is not None
    return span.start_time, span.end_time


def test_a_parallel_run_is_a_tree_of_genai_spans_with_links_for_its_inputs(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    script = Script.by_purpose(planner=[PARALLEL], joiner=["Action: Finish(5.76)"])
    result = runtime(provider, script).run("How many times more people in France than Belgium?")
    spans = exporter.get_finished_spans()

    (run,) = by_operation(spans, "invoke_agent")
    assert run.name == "invoke_agent planweave"
    assert run.parent is None
    assert run.attributes is not None
    assert run.attributes["gen_ai.agent.name"] == "planweave"
    assert run.attributes["gen_ai.conversation.id"] == result.run_id
    assert run.attributes["gen_ai.request.model"] == "m"
    assert run.attributes["gen_ai.usage.input_tokens"] == result.llm.prompt_tokens
    assert run.attributes["gen_ai.usage.output_tokens"] == result.llm.completion_tokens
    assert run.status.status_code is StatusCode.UNSET
    assert {s.context.trace_id for s in spans} == {run.context.trace_id}
    children = [s for s in spans if s is not run]
    assert {s.parent.span_id if s.parent else None for s in children} == {run.context.span_id}

    chats = by_operation(spans, "chat")
    assert [c.name for c in chats] == ["chat m", "chat m"]
    assert [c.attributes["planweave.llm.purpose"] for c in chats if c.attributes] == [
        "planner",
        "joiner",
    ]
    for chat in chats:
        assert chat.attributes is not None
        assert chat.attributes["gen_ai.request.model"] == "m"
        assert int(chat.attributes["gen_ai.usage.input_tokens"]) > 0  # type: ignore[arg-type]
        assert int(chat.attributes["gen_ai.usage.output_tokens"]) > 0  # type: ignore[arg-type]
        assert "gen_ai.output.messages" not in chat.attributes  # no content unless asked
    # The planner's stream is left once the plan is whole; the joiner's is read to its end.
    assert chats[1].attributes is not None
    assert chats[1].attributes["gen_ai.response.finish_reasons"] == ("stop",)

    tasks = tool_spans(spans)
    assert sorted(tasks) == ["1", "2", "3"]
    (france,), (belgium,), (divide,) = tasks["1"], tasks["2"], tasks["3"]
    assert [france.name, divide.name] == ["execute_tool population", "execute_tool divide"]
    assert divide.attributes is not None
    assert divide.attributes["gen_ai.tool.name"] == "divide"
    assert "gen_ai.tool.call.arguments" not in divide.attributes
    # The two lookups ran at once: each began before the other ended.
    (f0, f1), (b0, b1) = bounds(france), bounds(belgium)
    assert max(f0, b0) < min(f1, b1)
    # The division took both results: it links to both spans and began after both ended.
    linked = {
        (link.context.span_id, (link.attributes or {})["planweave.task.id"])
        for link in divide.links
    }
    assert linked == {(france.context.span_id, 1), (belgium.context.span_id, 2)}
    assert bounds(divide)[0] >= max(f1, b1)
    # The spans' times are the run's own, on one clock: each task's span lasts as its record.
    records = {r.task.id: r for r in result.tasks}
    for task_id, (span,) in tasks.items():
        rec = records[int(task_id)]
        assert rec.start is not None
        assert rec.end is not None
        start, end = bounds(span)
        assert abs((end - start) - round((rec.end - rec.start) * 1e9)) <= 2
        assert bounds(run)[0] <= start
        assert end <= bounds(run)[1]
    assert bounds(chats[0])[0] <= f0  # tasks start while the plan streams in
    assert bounds(chats[1])[0] >= bounds(divide)[1]  # the joiner reads every result


def test_content_is_recorded_only_when_capture_is_asked_for(
    provider: TracerProvider, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    script = Script.by_purpose(planner=[PARALLEL], joiner=["Action: Finish(5.76)"])
    runtime(provider, script).run("How many times more people in France than Belgium?")
    spans = exporter.get_finished_spans()
    (run,) = by_operation(spans, "invoke_agent")
    assert run.attributes is not None
    asked = json.loads(str(run.attributes["gen_ai.input.messages"]))
    assert asked[0]["role"] == "user"
    assert asked[0]["parts"][0]["content"].startswith("How many times more people")
    answered = json.loads(str(run.attributes["gen_ai.output.messages"]))
    assert answered[0]["parts"][0]["content"] == "5.76"
    france = tool_spans(spans)["1"][0]
    assert france.attributes is not None
    assert json.loads(str(france.attributes["gen_ai.tool.call.arguments"])) == {
        "country": "France",
        "delay": 0.3,
    }
    assert json.loads(str(france.attributes["gen_ai.tool.call.result"])) == 68_000_000
    planner = by_operation(spans, "chat")[0]
    assert planner.attributes is not None
    reply = json.loads(str(planner.attributes["gen_ai.output.messages"]))
    # The reply as far as it was read: the planner stops at the plan's end.
    assert reply[0]["parts"][0]["content"].startswith(PARALLEL.split("<END_OF_PLAN>")[0])


SECRET = "sk-otel-0123456789abcdef"


def every_value(spans: Sequence[ReadableSpan]) -> str:
    """Every attribute of every span, its events' and its status's, as one text."""
    parts: list[str] = []
    for span in spans:
        parts.append(json.dumps(dict(span.attributes or {}), default=str))
        parts.extend(json.dumps(dict(e.attributes or {}), default=str) for e in span.events)
        parts.append(span.status.description or "")
    return "\n".join(parts)


def test_chat_and_tool_spans_carry_the_genai_and_openinference_attributes(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    script = Script.by_purpose(planner=[PARALLEL], joiner=["Action: Finish(5.76)"])
    with ScriptedServer(script) as server:
        # A credential in the endpoint's URL never reaches an attribute.
        url = server.base_url.replace("http://", "http://weaver:hunter2-password@")
        llm = OpenAICompatible(base_url=url, model="m")
        result = Runtime(MORE, llm, tracing=provider).run("How many more people in France?")
    port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    spans = exporter.get_finished_spans()
    assert "hunter2" not in every_value(spans)

    (run,) = by_operation(spans, "invoke_agent")
    assert run.attributes is not None
    assert run.attributes["openinference.span.kind"] == "AGENT"
    assert run.attributes["session.id"] == result.run_id
    assert "input.value" not in run.attributes  # content only when asked for

    planner, joiner = by_operation(spans, "chat")
    for n, chat in enumerate((planner, joiner), 1):
        a = chat.attributes
        assert a is not None
        assert a["gen_ai.provider.name"] == "openai"
        assert (a["server.address"], a["server.port"]) == ("127.0.0.1", port)
        assert a["gen_ai.request.temperature"] == 0.0
        assert int(a["gen_ai.request.max_tokens"]) > 0  # type: ignore[arg-type]
        assert a["gen_ai.request.stop_sequences"] == ("<END_OF_PLAN>",)
        assert a["gen_ai.response.id"] == f"chatcmpl-scripted-{n}"
        assert a["gen_ai.response.model"] == "m"
        assert a["openinference.span.kind"] == "LLM"
        assert (a["llm.model_name"], a["llm.provider"]) == ("m", "openai")
        assert json.loads(str(a["llm.invocation_parameters"]))["stop"] == ["<END_OF_PLAN>"]
        prompt, completion = a["llm.token_count.prompt"], a["llm.token_count.completion"]
        assert (prompt, completion) == (
            a["gen_ai.usage.input_tokens"],
            a["gen_ai.usage.output_tokens"],
        )
        assert a["llm.token_count.total"] == prompt + completion  # type: ignore[operator]
        assert not [k for k in a if "messages" in k or k in ("input.value", "output.value")]

    divide = tool_spans(spans)["3"][0]
    a = divide.attributes
    assert a is not None
    assert a["gen_ai.tool.description"] == "a divided by b."
    assert a["openinference.span.kind"] == "TOOL"
    assert (a["tool.name"], a["tool.description"]) == ("divide", "a divided by b.")
    schema = json.loads(str(a["tool.parameters"]))["function"]
    assert (schema["name"], sorted(schema["parameters"]["properties"])) == ("divide", ["a", "b"])
    assert "input.value" not in a


def test_a_priced_model_s_calls_and_run_carry_their_cost(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    script = Script.by_purpose(planner=[PARALLEL], joiner=["Action: Finish(5.76)"])
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        runtime = Runtime(MORE, llm, RunSettings(price="2/10"), tracing=provider)
        result = runtime.run("How many more people in France?")
    spans = exporter.get_finished_spans()
    costs = []
    for chat in by_operation(spans, "chat"):
        a = chat.attributes
        assert a is not None
        # $2 per million prompt tokens, $10 per million completion tokens.
        cost = (
            2 * int(a["gen_ai.usage.input_tokens"]) + 10 * int(a["gen_ai.usage.output_tokens"])
        ) / 1e6  # type: ignore[arg-type]
        assert a["gen_ai.usage.cost"] == a["llm.cost.total"] == pytest.approx(cost)
        costs.append(cost)
    (run,) = by_operation(spans, "invoke_agent")
    assert run.attributes is not None
    assert run.attributes["gen_ai.usage.cost"] == pytest.approx(sum(costs)) == result.llm.cost
    assert result.llm.to_dict()["cost"] == pytest.approx(sum(costs))


def test_an_unpriced_model_s_spans_carry_no_cost(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    script = Script.by_purpose(planner=[PARALLEL], joiner=["Action: Finish(5.76)"])
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        result = Runtime(MORE, llm, tracing=provider).run("How many more people in France?")
    assert not [k for s in exporter.get_finished_spans() for k in s.attributes or {} if "cost" in k]
    assert result.llm.cost is None
    assert "cost" not in result.llm.to_dict()


def test_captured_content_is_in_both_conventions_with_secrets_masked(
    provider: TracerProvider, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    monkeypatch.setenv("PLANWEAVE_OTEL_TEST_TOKEN", SECRET)
    plan = f'1. echo("the key is {SECRET}")\n2. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[plan], joiner=[f"Action: Finish(it is {SECRET})"])
    runtime(provider, script).run(f"What does echo say of {SECRET}?")
    spans = exporter.get_finished_spans()
    assert SECRET not in every_value(spans)
    assert "[redacted]" in every_value(spans)

    (run,) = by_operation(spans, "invoke_agent")
    assert run.attributes is not None
    assert run.attributes["input.value"] == "What does echo say of [redacted]?"
    assert run.attributes["output.value"] == "it is [redacted]"
    planner = by_operation(spans, "chat")[0]
    a = planner.attributes
    assert a is not None
    asked = json.loads(str(a["gen_ai.input.messages"]))
    assert [m["role"] for m in asked] == ["system", "user"]
    assert a["llm.input_messages.0.message.role"] == "system"
    assert a["llm.input_messages.0.message.content"] == asked[0]["parts"][0]["content"]
    assert a["llm.input_messages.1.message.content"] == asked[1]["parts"][0]["content"]
    assert [m["content"] for m in json.loads(str(a["input.value"]))] == [
        m["parts"][0]["content"] for m in asked
    ]
    assert a["llm.output_messages.0.message.role"] == "assistant"
    assert str(a["llm.output_messages.0.message.content"]).startswith(
        '1. echo("the key is [redacted]")'
    )
    assert a["output.value"] == a["llm.output_messages.0.message.content"]
    echo = tool_spans(spans)["1"][0]
    assert echo.attributes is not None
    assert json.loads(str(echo.attributes["input.value"])) == {"text": "the key is [redacted]"}
    assert json.loads(str(echo.attributes["output.value"])) == "the key is [redacted]"


def test_openinference_attributes_are_left_out_when_switched_off(
    provider: TracerProvider, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    monkeypatch.setenv(OPENINFERENCE_ENV, "false")
    script = Script.by_purpose(planner=[PARALLEL], joiner=["Action: Finish(5.76)"])
    runtime(provider, script).run("How many times more people in France than Belgium?")
    spans = exporter.get_finished_spans()
    assert len(spans) == 6
    theirs = ("openinference.", "llm.", "tool.", "input.", "output.", "session.", "agent.")
    for span in spans:
        assert span.attributes is not None
        assert not [k for k in span.attributes if k.startswith(theirs)], span.name
    chat = by_operation(spans, "chat")[0]
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.provider.name"] == "planweave.scripted"
    assert "gen_ai.input.messages" in chat.attributes


def test_each_call_of_a_retried_task_is_a_span_and_failures_carry_their_class(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    plan = (
        '1. flaky("k")\n2. double($1)\n3. hang("k")\n4. broken("k")\n5. double($4)\n'
        "6. join()\n<END_OF_PLAN>"
    )
    recovery = (
        Recovery()
        .on("tool.transient", Retry(3, base=0.05, jitter=0))
        .on("tool.timeout", Fallback("mirror"))
    )
    # Task 4 fails for good: the planner, asked again with its error, gives up.
    script = Script.by_purpose(planner=[plan, "7. join()"], joiner=["Action: Finish(14)"])
    result = runtime(provider, script, recovery=recovery).run("What is twice the flaky value?")
    spans = exporter.get_finished_spans()
    tasks = tool_spans(spans)

    # Three calls of flaky: two dropped connections, retried after 0.05 s then 0.1 s.
    calls = tasks["1"]
    assert [c.attributes["planweave.task.attempt"] for c in calls if c.attributes] == [1, 2, 3]
    for failed in calls[:2]:
        assert failed.status.status_code is StatusCode.ERROR
        assert failed.attributes is not None
        assert failed.attributes["error.type"] == "tool.transient"
        (event,) = failed.events
        assert event.name == "task_recovery"
        assert event.attributes is not None
        assert event.attributes["planweave.recovery.pattern"] == "retry"
    assert calls[2].status.status_code is StatusCode.UNSET
    for before, after, delay in ((calls[0], calls[1], 0.05), (calls[1], calls[2], 0.1)):
        assert bounds(after)[0] - bounds(before)[1] >= delay * 1e9 - 1e6
    # The dependent links to the call that produced the result.
    (doubled,) = tasks["2"]
    assert [link.context.span_id for link in doubled.links] == [calls[2].context.span_id]

    # A timeout, then the fallback tool under the same task id.
    timed_out, fallback = tasks["3"]
    assert timed_out.name == "execute_tool hang"
    assert timed_out.attributes is not None
    assert timed_out.attributes["error.type"] == "tool.timeout"
    assert bounds(timed_out)[1] - bounds(timed_out)[0] >= 0.19e9
    assert fallback.name == "execute_tool mirror"
    assert fallback.status.status_code is StatusCode.UNSET

    # A failure no pattern takes: the span is an error with the exception; its dependent
    # never ran, so it is an event of the run, not a span.
    (failed,) = tasks["4"]
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes is not None
    assert failed.attributes["error.type"] == "tool.permanent"
    (exception,) = [e for e in failed.events if e.name == "exception"]
    assert exception.attributes is not None
    assert exception.attributes["exception.type"] == "ToolRejected"
    # The error's text is content (it may quote the arguments): not without capture.
    assert "exception.message" not in exception.attributes
    assert failed.status.description == "ToolRejected"
    assert "5" not in tasks
    (run,) = by_operation(spans, "invoke_agent")
    (skipped,) = [e for e in run.events if e.name == "task_skipped"]
    assert skipped.attributes is not None
    assert skipped.attributes["gen_ai.tool.call.id"] == "5"
    assert skipped.attributes["error.type"] == "tool.dependency"
    assert result.answer == "14"


def test_a_run_that_fails_is_an_error_span_with_its_class(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    script = Script.by_purpose(planner=[PARALLEL], joiner=["Action: Finish(5.76)"])
    with pytest.raises(RunFailed):
        runtime(provider, script, budget=Budget(llm_calls=1)).run("How many times more?")
    (run,) = by_operation(exporter.get_finished_spans(), "invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes is not None
    assert run.attributes["error.type"] == "budget"
    assert run.attributes["planweave.run.status"] == "failed"


def test_plan_cache_decisions_are_events_of_the_run_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    plan = '1. population("France")\n2. population("Belgium")\n3. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(
        planner=[plan], joiner=["Action: Finish(France)", "Action: Finish(Netherlands)"]
    )
    rt = runtime(provider, script, journal=tmp_path / "runs.db")
    rt.run("Which has more people, France or Belgium?")
    first = exporter.get_finished_spans()
    exporter.clear()
    second = rt.run("Which has more people, Netherlands or Belgium?")
    spans = exporter.get_finished_spans()

    (run,) = by_operation(first, "invoke_agent")
    (miss,) = [e for e in run.events if e.name.startswith("cache_")]
    assert miss.name == "cache_miss"
    assert miss.attributes is not None
    assert miss.attributes["planweave.cache.reason"] == "no template of this question's shape"
    (run,) = by_operation(spans, "invoke_agent")
    (hit,) = [e for e in run.events if e.name.startswith("cache_")]
    assert hit.name == "cache_hit"
    assert second.cache is not None
    assert hit.attributes is not None
    assert hit.attributes["planweave.cache.template_id"] == second.cache["template_id"]
    # The plan came from the cache: the only LLM call is the joiner's.
    chats = by_operation(spans, "chat")
    assert [c.attributes["planweave.llm.purpose"] for c in chats if c.attributes] == ["joiner"]
    assert hit.timestamp <= bounds(by_operation(spans, "execute_tool")[0])[0]


def test_tracing_off_makes_no_spans_even_with_a_global_provider(
    provider: TracerProvider, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `provider`, its exporter attached, stands as the process's global provider, as
    # `trace.set_tracer_provider` would make it (which a process can do only once).
    monkeypatch.setattr(otel_trace, "get_tracer_provider", lambda: provider)
    script = Script.by_purpose(planner=[PARALLEL] * 2, joiner=["Action: Finish(5.76)"] * 2)
    off = Runtime(MORE, ScriptedLLM(script), tracing=False)
    assert off.run("How many times more?").answer == "5.76"
    assert trace(off) == []  # the session subscribes no span maker
    assert exporter.get_finished_spans() == ()
    # Left to the default, the same run is traced through the global provider: the exporter
    # hears what tracing=False kept from it.
    on = Runtime(MORE, ScriptedLLM(script))
    assert on.run("How many times more?").answer == "5.76"
    assert len(by_operation(exporter.get_finished_spans(), "invoke_agent")) == 1


# ------------------------------------------------------------------ the CLI, over OTLP/HTTP
# In real processes: --otel sets the process's global provider, once, and sends the queued
# spans when the process ends.


COMMAND = ("run", "How many times more?", "--tools", "demo_tools:TOOLS", "--model", "m", "--json")


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: keeps each export request, decoded."""

    requests: list[ExportTraceServiceRequest]
    paths: list[str]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.paths.append(self.path)
        self.requests.append(ExportTraceServiceRequest.FromString(body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[type[_Receiver]]:
    handler = type("Receiver", (_Receiver,), {"requests": [], "paths": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    handler.port = server.server_address[1]  # type: ignore[attr-defined]
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow  # a real process
def test_the_cli_sends_the_run_over_otlp_http(receiver: type[_Receiver], tmp_path: Path) -> None:
    script = Script.by_purpose(planner=[PARALLEL], joiner=["Action: Finish(5.76)"])
    port = receiver.port  # type: ignore[attr-defined]
    with ScriptedServer(script) as server:
        proc = run_cli(
            *COMMAND,
            "--base-url",
            server.base_url,
            "--otel",
            "otlp",
            env={
                "PLANWEAVE_DB": str(tmp_path / "runs.db"),
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
                "OTEL_SERVICE_NAME": "weave-test",
                CAPTURE_CONTENT_ENV: "false",
            },
        )
    assert proc.returncode == 0, proc.stderr
    run_id = json.loads(proc.stdout)["id"]
    assert set(receiver.paths) == {"/v1/traces"}
    spans = []
    for request in receiver.requests:
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            assert resource["service.name"] == "weave-test"
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "planweave"
                spans.extend(scope_spans.spans)
    names = Counter(s.name for s in spans)
    assert names == {
        "invoke_agent planweave": 1,
        "chat m": 2,
        "execute_tool population": 2,
        "execute_tool divide": 1,
    }

    def attrs(span: object) -> dict[str, object]:
        out: dict[str, object] = {}
        for a in span.attributes:  # type: ignore[attr-defined]
            kind = a.value.WhichOneof("value")
            value = getattr(a.value, kind)
            out[a.key] = list(value.values) if kind == "array_value" else value
        return out

    (run,) = [s for s in spans if s.name == "invoke_agent planweave"]
    assert attrs(run)["gen_ai.conversation.id"] == run_id
    assert {s.trace_id for s in spans} == {run.trace_id}
    assert all(s.parent_span_id == run.span_id for s in spans if s is not run)
    tools = {str(attrs(s)["gen_ai.tool.call.id"]): s for s in spans if s.name.startswith("exec")}
    assert {link.span_id for link in tools["3"].links} == {tools["1"].span_id, tools["2"].span_id}
    france, belgium = tools["1"], tools["2"]
    # The two lookups ran at once: each began before the other ended.
    assert max(france.start_time_unix_nano, belgium.start_time_unix_nano) < min(
        france.end_time_unix_nano, belgium.end_time_unix_nano
    )
    assert "gen_ai.tool.call.arguments" not in attrs(france)


@pytest.mark.slow  # a real process
def test_the_cli_prints_spans_on_stderr_with_otel_console(tmp_path: Path) -> None:
    script = Script.by_purpose(planner=[PARALLEL], joiner=["Action: Finish(5.76)"])
    with ScriptedServer(script) as server:
        proc = run_cli(
            *COMMAND,
            "--base-url",
            server.base_url,
            "--otel",
            "console",
            env={"PLANWEAVE_DB": str(tmp_path / "runs.db")},
        )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["answer"] == "5.76"  # stdout stays the answer's
    assert '"name": "invoke_agent planweave"' in proc.stderr
    assert proc.stderr.count('"name": "execute_tool population"') == 2


def test_an_unknown_otel_exporter_is_refused() -> None:
    proc = invoke_cli("run", "q?", "--otel", "jaeger", "--base-url", "http://127.0.0.1:9/v1")
    assert proc.returncode == 2
    assert "--otel must be console or otlp" in proc.stderr
