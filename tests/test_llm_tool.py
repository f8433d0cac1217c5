"""The `llm` built-in tool: one call of the run's own LLM per task, fanned out over a prompt's
items (PARALLELPROMPT), through the scripted SSE server: metered, journaled, bounded, and
assembled into the answer without being written out again."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from planweave import (
    Journal,
    OpenAICompatible,
    Recovery,
    Reply,
    Retry,
    RunResult,
    Runtime,
    Script,
    ScriptedServer,
    UserError,
)
from planweave.builtin import ASK
from planweave.events import Event, LLMCallFinished, LLMCallStarted, LLMRetry
from planweave.llm.base import Message, Purpose

WORDS = [f"word{i}" for i in range(12)]
PLAN = (
    f"1. items({json.dumps(WORDS)})\n"
    '2. llm("Translate into French: {input}", $1[*])\n3. join()\n<END_OF_PLAN>'
)
QUESTION = "Translate each of these words into French: " + ", ".join(WORDS)


def _route(messages: list[Message], purpose: Purpose) -> Reply | str:
    if purpose == "planner":
        return PLAN
    if purpose == "joiner":
        return "Action: Finish(${2})"
    word = messages[-1].content.rsplit(": ", 1)[-1]
    # Slow enough that every call the limit lets through is in flight before one ends.
    return Reply(f"le {word}", chunk_size=2, delay=0.05, ttft=0.2)


def _run(server: ScriptedServer, journal: Path) -> tuple[RunResult, list[Event]]:
    seen: list[Event] = []

    async def go() -> RunResult:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        try:
            runtime = Runtime(ASK, llm, journal=journal, cache=False)
            return await runtime.arun(QUESTION, subscribers=[seen.append])
        finally:
            await llm.aclose()

    return anyio.run(go), seen


def test_a_fan_out_of_llm_calls_runs_bounded_metered_journaled_and_answers_whole(
    tmp_path: Path,
) -> None:
    with ScriptedServer(Script.routed(_route)) as server:
        result, events = _run(server, tmp_path / "runs.db")
    assert result.status == "finished", result.error
    # Filled in from the results, in the list's order, not streamed again by the joiner.
    assert result.answer == "\n".join(f"le {w}" for w in WORDS)
    assert server.script.purposes.count("tool") == 12
    assert result.llm.calls == 14  # planner, 12 items, joiner
    # At most LLM_CONCURRENCY (8) calls of the tool at once, and that many did overlap.
    in_flight = peak = 0
    for event in events:
        if isinstance(event, LLMCallStarted) and event.purpose == "tool":
            in_flight += 1
            peak = max(peak, in_flight)
        elif isinstance(event, LLMCallFinished) and event.purpose == "tool":
            in_flight -= 1
    assert peak == 8
    shown = Journal(tmp_path / "runs.db").show(result.run_id)
    assert [c["purpose"] for c in shown["llm_calls"]].count("tool") == 12
    assert [i["status"] for i in shown["tasks"][1]["items"]] == ["done"] * 12


def test_known_secrets_never_reach_the_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLANWEAVE_TEST_API_KEY", "sk-very-secret-0042")
    plan = '1. llm("Summarize: {input}", "the key is sk-very-secret-0042")\n2. join()'
    script = Script.by_purpose(planner=[plan], tool=["a key"], joiner=["Action: Finish(ok)"])
    with ScriptedServer(script) as server:

        async def go() -> object:
            llm = OpenAICompatible(base_url=server.base_url, model="m")
            try:
                return await Runtime(ASK, llm).arun("Summarize it")
            finally:
                await llm.aclose()

        assert anyio.run(go).status == "finished"
    sent = server.requests[server.script.purposes.index("tool")][-1].content
    assert sent == "Summarize: the key is [redacted]"


def test_the_tool_needs_a_run() -> None:
    with pytest.raises(UserError, match="only runs inside a planweave run"):
        anyio.run(lambda: ASK["llm"].fn("hello"))


def test_a_refused_llm_call_is_retried_like_any_call() -> None:
    refused: list[str] = []

    def route(messages: list[Message], purpose: Purpose) -> Reply | str:
        if purpose == "tool" and not refused:
            refused.append(messages[-1].content)
            return Reply("", status=429, retry_after=0.01)
        return _route(messages, purpose)

    seen: list[Event] = []
    with ScriptedServer(Script.routed(route)) as server:

        async def go() -> RunResult:
            llm = OpenAICompatible(base_url=server.base_url, model="m", max_retries=0)
            try:
                recovery = Recovery().on("llm.rate_limit", Retry(2, base=0.01))
                runtime = Runtime(ASK, llm, recovery=recovery)
                return await runtime.arun(QUESTION, subscribers=[seen.append])
            finally:
                await llm.aclose()

        result = anyio.run(go)
    assert result.status == "finished", result.error
    assert result.answer == "\n".join(f"le {w}" for w in WORDS)
    retries = [e for e in seen if isinstance(e, LLMRetry)]
    assert [(e.purpose, e.category) for e in retries] == [("tool", "llm.rate_limit")]
    assert result.llm.calls == 14  # the retry is part of its call
