"""Prompts, the parsers of the replies, and requests that carry their purpose to the fakes."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import anyio
import pytest

from demo_tools import TOOLS
from planweave import OpenAICompatible, Runtime, Script, ScriptedLLM, ScriptedServer, UserError
from planweave.events import EventBus, LLMCallStarted
from planweave.llm.base import PURPOSE_HEADER, Message, Purpose
from planweave.llm.scripted import LLMRequest
from planweave.meter import MeteredLLM
from planweave.prompts import (
    JOINER_HEAD,
    PLANNER_HEAD,
    REACT_HEAD,
    REPAIR_HEAD,
    purpose_of,
)
from planweave.replies import JoinReplyStream, parse_action, parse_decision

PLAN = '1. population("France")\n2. join()\n<END_OF_PLAN>'
FINISH = "Thought: Done.\nAction: Finish(68 million.)"
# A joiner's prompt by its text: only the purpose it is sent with says it is a planner request.
LOOKS_LIKE_JOINER = [Message("system", f"{JOINER_HEAD}\n(custom)"), Message("user", "Question: q")]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    script = Script.by_purpose(planner=["the planner's reply"], joiner=["the joiner's reply"])
    with ScriptedServer(script, guess=purpose_of) as srv:
        yield srv


async def _text(llm: OpenAICompatible | ScriptedLLM, request: LLMRequest) -> str:
    parts = []
    async for delta in llm.stream(request):
        parts.append(delta.text)
    await llm.aclose()
    return "".join(parts)


def test_the_purpose_header_routes_a_request_over_http(server: ScriptedServer) -> None:
    llm = OpenAICompatible(base_url=server.base_url, model="scripted")
    request = LLMRequest(messages=LOOKS_LIKE_JOINER, purpose="planner")

    assert anyio.run(_text, llm, request) == "the planner's reply"
    assert server.script.purposes == ["planner"]


def test_a_request_without_the_header_is_routed_by_its_text(server: ScriptedServer) -> None:
    body = {"model": "scripted", "messages": [m.to_dict() for m in LOOKS_LIKE_JOINER]}
    post = urllib.request.Request(
        f"{server.base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(post, timeout=10) as response:
        answer = json.load(response)

    assert answer["choices"][0]["message"]["content"] == "the joiner's reply"
    assert server.script.purposes == ["joiner"]


def test_a_run_over_http_sends_each_request_with_its_purpose() -> None:
    with ScriptedServer(Script.by_purpose(planner=[PLAN], joiner=[FINISH])) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="scripted")
        result = Runtime(TOOLS, llm).run("How many live in France?")

    assert result.answer == "68 million."
    assert [h.get(PURPOSE_HEADER.lower()) for h in server.headers] == ["planner", "joiner"]
    assert server.script.purposes == ["planner", "joiner"]


def test_scripted_llm_routes_by_the_request_purpose() -> None:
    llm = ScriptedLLM(Script.by_purpose(joiner=["the joiner's reply"]))
    request = LLMRequest(messages=[Message("system", PLANNER_HEAD)], purpose="joiner")

    assert anyio.run(_text, llm, request) == "the joiner's reply"
    assert llm.script.purposes == ["joiner"]


def test_a_routed_responder_learns_the_purpose() -> None:
    seen: list[tuple[int, Purpose]] = []

    def respond(messages: list[Message], purpose: Purpose) -> str:
        seen.append((len(messages), purpose))
        return f"for the {purpose}"

    llm = ScriptedLLM(Script.routed(respond))
    text = anyio.run(_text, llm, LLMRequest(messages=[], purpose="decompose"))

    assert text == "for the decompose"
    assert seen == [(0, "decompose")]


def test_the_meter_reports_the_request_purpose() -> None:
    bus = EventBus()
    metered = MeteredLLM(ScriptedLLM(Script.by_purpose(react=["ok"])), bus)

    async def call() -> str:
        return await metered.complete(LLMRequest(messages=[], purpose="react"))

    assert anyio.run(call) == "ok"
    assert [e.purpose for e in bus.events if isinstance(e, LLMCallStarted)] == ["react"]


def test_by_purpose_rejects_an_unknown_purpose() -> None:
    with pytest.raises(UserError, match="plannner"):
        Script.by_purpose(plannner=[PLAN])


def test_purpose_of_tells_planweave_prompts_apart() -> None:
    planner = Message("system", f"{PLANNER_HEAD}\nTools: ...")
    assert purpose_of([planner, Message("user", "Question: q")]) == "planner"
    assert purpose_of([planner, Message("user", f"{REPAIR_HEAD} 2. x(")]) == "repair"
    assert purpose_of([Message("system", JOINER_HEAD)]) == "joiner"
    assert purpose_of([Message("system", REACT_HEAD)]) == "react"
    assert purpose_of([Message("system", "Given a user query, create a plan")]) == "other"
    assert purpose_of([]) == "other"


def test_parse_action_reads_a_call_or_finishes() -> None:
    assert parse_action('Thought: t\nAction: area("France")\nObservation: x') == 'area("France")'
    assert parse_action("Thought: t\nAction: Finish(42)") is None
    assert parse_action("no action at all") is None


def test_parse_decision_keeps_the_whole_answer() -> None:
    decision = parse_decision("Thought: t\nAction: Finish(a (b) c)")
    assert (decision.action, decision.text, decision.thought) == ("finish", "a (b) c", "t")
    assert parse_decision("Action: Replan(more)").action == "replan"
    assert parse_decision("just an answer").text == "just an answer"


COMBINED = (
    "Thought: the capital is known now.\n"
    "Action: Replan(look up its (city) population)\n"
    '3. population("Paris")\n'
    "4. join()\n"
    "<END_OF_PLAN>"
)


def test_a_replan_reply_with_plan_lines_ends_its_reason_at_its_line() -> None:
    decision = parse_decision(COMBINED)
    assert decision.action == "replan"
    assert decision.text == "look up its (city) population"
    assert decision.plan is not None
    assert decision.plan.startswith('3. population("Paris")')
    # Today's replies read as before: no plan, the reason up to the last parenthesis.
    plain = parse_decision("Thought: x\nAction: Replan(more (of it))\n")
    assert (plain.text, plain.plan) == ("more (of it)", None)
    prose = parse_decision("Action: Replan(a)\nthen b)")
    assert (prose.text, prose.plan) == ("a)\nthen b", None)
    assert parse_decision(FINISH + "\n1. x()").plan is None


@pytest.mark.parametrize("size", [1, 2, 3, 7, 50, len(COMBINED)])
def test_the_reply_stream_hands_over_the_plan_whatever_the_chunking(size: int) -> None:
    reply = JoinReplyStream()
    plan = []
    for i in range(0, len(COMBINED), size):
        plan.append(reply.feed(COMBINED[i : i + size]))
    assert reply.planning
    assert "".join(plan) == COMBINED[COMBINED.index("3. pop") :]
    decision = reply.decision()
    assert (decision.action, decision.text) == ("replan", "look up its (city) population")


@pytest.mark.parametrize(
    "text",
    [
        FINISH + '\n3. population("Paris")\n',
        "Action: Replan(more)\n",
        "Action: Replan(a)\nb\n3. x()\n",
    ],
)
def test_the_reply_stream_gives_no_plan_for_a_finish_or_a_bare_replan(text: str) -> None:
    reply = JoinReplyStream()
    assert "".join(reply.feed(c) for c in text) == ""
    assert not reply.planning
    assert reply.decision() == parse_decision(text)
