"""Bare answers: the compact joiner answers as plain text, with no `Action: Finish(` wrapper to
decode first.  A reply that starts with an action (`Action:`, `Finish(`, `Replan(`, after an
optional thought line) is read as before, so a Replan, with or without plan lines, and an
old-style Finish still work; the answer streams as it is decoded, and a Replan is never
streamed as one.  A reply with no answer in it is a `JoinerError`, not an empty answer."""

from __future__ import annotations

import random

import anyio
import pytest

from demo_tools import TOOLS
from gbnf import Grammar
from planweave import (
    AnswerDelta,
    Budget,
    Decompose,
    JoinerError,
    OpenAICompatible,
    Recovery,
    Reply,
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
    TaskStatus,
    ToolFailed,
    ToolRegistry,
    tool,
)
from planweave.events import Event
from planweave.grammar import joiner_grammar
from planweave.prompts import ANSWER_FIRST, BARE_ANSWER, joiner_messages
from planweave.replies import AnswerStream, JoinReplyStream, parse_decision

QUESTION = "Density of the Netherlands?"
PLAN = '1. population("Netherlands")\n2. area("Netherlands")\n3. divide($1, $2)\n4. join()\n'
PLAN += "<END_OF_PLAN>"
ANSWER = "About 428 people per km² (17,900,000 / 41,850)."
FIRST = '1. population("Netherlands")\n2. join()\n<END_OF_PLAN>'
REPLAN = (
    "Action: Replan(look up the area)\n"
    '3. area("Netherlands")\n4. divide($1, $3)\n5. join()\n<END_OF_PLAN>'
)


def _run(
    llm: OpenAICompatible | ScriptedLLM, **options: object
) -> tuple[str | None, list[Event], object]:
    runtime = Runtime(TOOLS, llm, **options)  # type: ignore[arg-type]
    seen: list[Event] = []

    async def go() -> tuple[str | None, object]:
        try:
            result = await runtime.arun(QUESTION, subscribers=[seen.append], check=False)
        finally:
            await llm.aclose()
        return result.answer, result.error

    answer, error = anyio.run(go)
    return answer, seen, error


def _deltas(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, AnswerDelta)]


def test_a_bare_answer_finishes_and_streams_over_http() -> None:
    script = Script.by_purpose(planner=[PLAN], joiner=[Reply(ANSWER, chunk_size=3)])
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        answer, events, error = _run(llm)
    assert error is None
    assert answer == ANSWER
    system = server.requests[-1][0].content
    assert BARE_ANSWER in system
    assert "Action: Finish(" not in system  # not even shown
    pieces = _deltas(events)
    assert len(pieces) > 5  # piece by piece, as decoded
    assert "".join(pieces) == ANSWER


def test_a_replan_carrying_a_plan_is_not_streamed_as_an_answer() -> None:
    script = Script.by_purpose(
        planner=[FIRST], joiner=[Reply(REPLAN, chunk_size=2), Reply(ANSWER, chunk_size=2)]
    )
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m", max_retries=0)
        answer, events, error = _run(llm)
    assert error is None
    assert answer == ANSWER
    assert script.purposes == ["planner", "joiner", "joiner"]  # the plan came with the Replan
    assert "".join(_deltas(events)) == ANSWER  # nothing of the Replan reply
    finished = {e.task_id for e in events if e.kind == "task_finished"}  # type: ignore[attr-defined]
    assert finished == {1, 3, 4}


def test_a_replan_without_a_plan_goes_to_the_planner() -> None:
    second = '3. area("Netherlands")\n4. divide($1, $3)\n5. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(
        planner=[FIRST, second],
        joiner=[Reply("Action: Replan(look up the area)", chunk_size=1), ANSWER],
    )
    answer, events, error = _run(ScriptedLLM(script), prompt_style="compact", join_replan=False)
    assert error is None
    assert answer == ANSWER
    assert script.purposes == ["planner", "joiner", "planner", "joiner"]
    assert "".join(_deltas(events)) == ANSWER


@pytest.mark.parametrize(
    "reply",
    [
        f"Action: Finish({ANSWER})",
        f"Thought: divide the two.\nAction: Finish({ANSWER})",
        f"Finish({ANSWER})",
        f"Thought: divide the two.\n{ANSWER}",
    ],
)
def test_old_style_replies_and_a_thought_still_work(reply: str) -> None:
    script = Script.by_purpose(planner=[PLAN], joiner=[Reply(reply, chunk_size=4)])
    answer, events, error = _run(ScriptedLLM(script), prompt_style="compact")
    assert error is None
    assert answer == ANSWER
    assert "".join(_deltas(events)) == ANSWER


@pytest.mark.parametrize(
    "reply", ["", "   \n ", "Action:", "Action: ", "Thought: no answer", "Action: Finish()"]
)
def test_a_reply_without_an_answer_is_a_joiner_error(reply: str) -> None:
    script = Script.by_purpose(planner=[PLAN], joiner=[reply])
    answer, events, error = _run(ScriptedLLM(script), prompt_style="compact")
    assert answer is None
    assert isinstance(error, JoinerError)
    assert "gives no answer" in str(error)
    assert not _deltas(events)
    # With join and replan in one call too (an endpoint's default).
    script = Script.by_purpose(planner=[FIRST], joiner=[Reply(reply or " ", chunk_size=1)])
    answer, _, error = _run(ScriptedLLM(script), prompt_style="compact", join_replan=True)
    assert isinstance(error, JoinerError)


@tool
def total(keys: list[str]) -> int:
    """The sum of the numbers under several keys (its service is down)."""
    raise ToolFailed("the totals service is down")


@tool
def lookup(key: str) -> int:
    """The number under a key."""
    return 5


def test_a_sub_goal_whose_joiner_gives_no_answer_gave_none() -> None:
    """A decomposed task's sub-goal whose joiner replies with nothing fails that task the way
    a sub-goal without an answer does; the run's joiner still answers from what is left."""
    script = Script.by_purpose(
        planner=[
            '1. total(["a"])\n2. join()\n<END_OF_PLAN>',
            '1. lookup("a")\n2. join()',  # the sub-goal's plan
            "3. join()",  # asked again after task 1 failed, the planner gives up
        ],
        joiner=["Action:", "The total is unknown."],
    )
    runtime = Runtime(
        ToolRegistry([total, lookup]),
        ScriptedLLM(script),
        prompt_style="compact",
        recovery=Recovery().on("tool.permanent", Decompose()),
        budget=Budget(decomposition_depth=1),
    )
    result = runtime.run("What is the total of a?")
    assert result.answer == "The total is unknown."
    rec = result.tasks[0]
    assert rec.status is TaskStatus.FAILED
    assert "gave no answer: the joiner's reply gives no answer" in str(rec.error)


def test_the_last_round_asks_for_the_answer_and_its_grammar_allows_only_one() -> None:
    system = joiner_messages("q", [], last_round=True, style="compact")[0].content
    assert "You must reply with the answer," in system
    assert "Finish" not in system
    wrapped = joiner_messages("q", [], last_round=True, style="compact", bare_answers=False)
    assert ANSWER_FIRST in wrapped[0].content
    assert BARE_ANSWER not in wrapped[0].content
    assert "You must reply with Action: Finish(...)" in wrapped[0].content
    full = joiner_messages("q", [], last_round=True, style="full", bare_answers=True)
    assert BARE_ANSWER not in full[0].content  # the full style keeps its form

    last = Grammar(joiner_grammar("compact", ToolRegistry(TOOLS), finish_only=True))
    for text in [ANSWER, "A", "Action", "Actions speak louder.", "Finished in 3 days.", "T"]:
        assert last.accepts(text), text
        assert last.accepts(f"Thought: x\n{text}"), text
    assert last.accepts(f"Action: Finish({ANSWER})")
    for text in [
        "Action: Replan(more)",
        "action : Replan(more)",
        "Replan(more)",
        "REPLAN\t(more)",
        "Thought: x\nReplan (more)",
        "Finish(x)",
        "Thought: y",
        " leading blank",
        "",
    ]:
        assert not last.accepts(text), text


def test_the_bare_knob_keeps_the_wrapped_compact_form() -> None:
    script = Script.by_purpose(planner=[PLAN], joiner=[f"Action: Finish({ANSWER})"])
    llm = ScriptedLLM(script)
    runtime = Runtime(TOOLS, llm, prompt_style="compact")
    assert runtime.joiner.bare
    runtime.joiner.bare_answers = False
    result = runtime.run(QUESTION)
    assert result.answer == ANSWER
    system = script.requests[-1][0].content
    assert ANSWER_FIRST in system
    assert BARE_ANSWER not in system
    assert not Runtime(TOOLS, ScriptedLLM([]), prompt_style="full").joiner.bare


@pytest.mark.parametrize(
    ("reply", "action", "text"),
    [
        (ANSWER, "finish", ANSWER),
        ("  Paris\n", "finish", "Paris"),
        ("A", "finish", "A"),
        ("Action", "finish", "Action"),
        ("Thoughtful words.", "finish", "Thoughtful words."),
        ("Thought: easy.\nParis", "finish", "Paris"),
        ("Paris.\nReplan(more)", "finish", "Paris.\nReplan(more)"),  # bare: read as it stands
        ("Action: Finish(Paris (France))", "finish", "Paris (France)"),
        ("Action: Paris", "finish", "Paris"),
        ("Action: Replan(more)", "replan", "more"),
        ("action : replan (more)", "replan", "more"),
        ("Thought: t\nAction: Replan(more)", "replan", "more"),
        ("${2}", "finish", "${2}"),
    ],
)
def test_bare_replies_parse(reply: str, action: str, text: str) -> None:
    decision = parse_decision(reply, bare=True)
    assert (decision.action, decision.text) == (action, text)
    if reply.startswith("Thought: easy."):
        assert decision.thought == "easy."


def test_a_replan_s_plan_is_read_and_a_bare_answer_never_plans() -> None:
    decision = parse_decision(REPLAN, bare=True)
    assert decision.action == "replan"
    assert decision.plan is not None
    assert decision.plan.startswith("3. area(")
    for reply, planning in [(REPLAN, True), ('Paris\n1. area("x")\n2. join()', False)]:
        stream = JoinReplyStream(bare=True)
        for i in range(0, len(reply), 3):
            stream.feed(reply[i : i + 3])
        assert stream.planning is planning
    assert parse_decision('Paris\n1. area("x")', bare=True).plan is None


REPLIES = [
    ANSWER,
    f"Action: Finish({ANSWER})",
    f"Thought: t\n{ANSWER}",
    f"Thought: t\nAction: Finish({ANSWER})",
    "Action: Replan(more)",
    "Thought: t\nAction: Replan(more)",
    REPLAN,
    "Replan(more)",
    "  Paris  \n",
    "A",
    "Act",
    "Action",
    "Actions speak.",
    "The Amur (4,444 km) is longer.",
    '"Paris"',
    "Action: Finish('quoted')",
    "Paris.\nAction: Replan(more)",
]


@pytest.mark.parametrize("reply", REPLIES)
def test_the_streamed_pieces_add_up_and_a_replan_streams_nothing(reply: str) -> None:
    for size in (1, 2, 3, 5, len(reply)):
        reading = AnswerStream(bare=True)
        pieces = [reading.feed(reply[i : i + size]) for i in range(0, len(reply), size)]
        decision, rest = reading.close()
        assert decision == parse_decision(reply, bare=True)
        streamed = "".join(pieces)
        if decision.action == "replan":
            assert streamed == rest == ""
            continue
        assert decision.text.startswith(streamed)
        assert streamed + rest == decision.text


def test_a_bare_answer_is_held_back_only_for_its_first_word() -> None:
    reading = AnswerStream(bare=True)
    assert reading.feed("Ac") == ""  # could still be `Action:`
    assert reading.feed("me has 428 ") == "Acme has 428"  # trailing blanks wait for more
    assert reading.feed("people") == " people"
    reading = AnswerStream(bare=True)
    assert reading.feed("Paris") == "Paris"  # no action starts with a P


def test_what_the_compact_grammar_allows_the_parser_reads_the_same_way() -> None:
    """Over random texts the grammar lets a model write: a bare answer is read as that answer,
    and in the last round nothing parses as a Replan."""
    tools = ToolRegistry(TOOLS)
    pool = "aAcCtTiIoOnNfFsShHrReEpPlLuUgGxX :(\t\r)é1$"
    rng = random.Random(7)
    usual = Grammar(joiner_grammar("compact", tools))
    last = Grammar(joiner_grammar("compact", tools, finish_only=True))
    for _ in range(400):
        text = usual.sample(rng, "bare", pool)
        assert usual.accepts(text)
        decision = parse_decision(text, bare=True)
        assert (decision.action, decision.text) == ("finish", text.strip()), repr(text)
        reply = last.sample(rng, "root", pool)
        try:
            assert parse_decision(reply, bare=True).action == "finish", repr(reply)
        except JoinerError:  # only a Finish whose answer is blank gives none
            assert "Action: Finish(" in reply, repr(reply)
