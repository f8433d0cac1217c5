"""Prompt styles: compact prompts (no worked examples, the answer first) for endpoints, the full
ones for the embedded model, and the answer streamed onto the event stream as it is decoded."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from demo_tools import TOOLS
from gbnf import Grammar
from planweave import (
    AnswerDelta,
    AnswerEvent,
    Journal,
    OpenAICompatible,
    Reply,
    RunSettings,
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
    ToolRegistry,
    UserError,
    tool,
)
from planweave.builtin import builtin_tools
from planweave.cli.view import DagView
from planweave.events import Event
from planweave.grammar import joiner_grammar
from planweave.planner import opens_with_thought
from planweave.prompts import ANSWER_FIRST
from planweave.replies import AnswerStream, parse_decision

PLAN = '1. population("Netherlands")\n2. area("Netherlands")\n3. divide($1, $2)\n4. join()\n'
PLAN += "<END_OF_PLAN>"
ANSWER = "About 428 people per km² (17,900,000 / 41,850)."
COMPACT = f"Action: Finish({ANSWER})"
FULL = f"Thought: Done.\nAction: Finish({ANSWER})"


def _run(llm: OpenAICompatible | ScriptedLLM, **options: object) -> tuple[str | None, list[Event]]:
    runtime = Runtime(TOOLS, llm, **options)  # type: ignore[arg-type]
    seen: list[Event] = []

    async def go() -> str | None:
        try:
            result = await runtime.arun("Density of the Netherlands?", subscribers=[seen.append])
        finally:
            await llm.aclose()
        return result.answer

    return anyio.run(go), seen


def test_an_endpoint_gets_compact_prompts_and_streams_the_answer() -> None:
    # Small chunks: the answer must arrive in several pieces, while the reply is decoded.
    script = Script.by_purpose(planner=[PLAN], joiner=[Reply(COMPACT, chunk_size=3)])
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        answer, events = _run(llm)
    assert answer == ANSWER
    planner, joiner = server.requests[0], server.requests[-1]
    assert "Examples:" not in planner[0].content
    assert "Rules:" in planner[0].content  # the plan language's rules stay
    assert ANSWER_FIRST in joiner[0].content
    assert [m.role for m in joiner] == ["system", "user"]  # no worked exchange
    pieces = [e.text for e in events if isinstance(e, AnswerDelta)]
    assert len(pieces) > 3
    assert "".join(pieces) == ANSWER
    kinds = [e.kind for e in events]
    # Every piece comes before the whole answer, which is still sent as before.
    assert kinds.index("answer") > max(i for i, k in enumerate(kinds) if k == "answer_delta")
    assert [e.answer for e in events if isinstance(e, AnswerEvent)] == [ANSWER]


def test_the_embedded_path_keeps_the_full_prompts() -> None:
    llm = ScriptedLLM(Script.by_purpose(planner=[PLAN], joiner=[FULL]))
    answer, events = _run(llm)
    assert answer == ANSWER
    planner, joiner = llm.script.requests[0], llm.script.requests[-1]
    # The demo tools bring no examples: none is made up from them (a small model copies its
    # shape onto tools it does not fit), the examples are on other tools, named as such.
    examples = planner[0].content.split("Examples:\n", 1)[1]
    assert examples.startswith("(These examples use other tools: weather(city)")
    assert not any(f"{name}(" in examples for name in TOOLS)
    assert ANSWER_FIRST not in joiner[0].content
    assert [m.role for m in joiner] == ["system", "user", "assistant", "user"]
    # The full reply streams its answer too, once its Finish( has come.
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == ANSWER


def test_examples_on_other_tools_give_way_to_a_tool_of_their_name() -> None:
    @tool
    def weather(city: str) -> str:
        """Today's weather in a city."""
        return "sunny"

    # The registry's own `weather` would make the example a call the model can copy as is.
    runtime = Runtime(ToolRegistry(TOOLS, weather), ScriptedLLM([]), prompt_style="full")
    assert "Examples:" not in runtime.planner.system_prompt()
    assert (
        "Examples:" in Runtime(TOOLS, ScriptedLLM([]), prompt_style="full").planner.system_prompt()
    )


def test_a_style_can_be_chosen_against_the_backend_default() -> None:
    script = Script.by_purpose(planner=[PLAN], joiner=[FULL])
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        answer, _ = _run(llm, prompt_style="full")
    assert answer == ANSWER
    assert ANSWER_FIRST not in server.requests[-1][0].content
    assert len(server.requests[-1]) == 4  # the full joiner's worked exchange
    compact = Runtime(TOOLS, ScriptedLLM([]), prompt_style="compact")
    assert "Examples:" not in compact.planner.system_prompt()
    assert compact.settings.prompt_style == "compact"
    with pytest.raises(UserError, match="prompt_style"):
        Runtime(TOOLS, ScriptedLLM([]), prompt_style="terse")  # type: ignore[arg-type]


def test_a_replan_streams_no_answer_and_keeps_its_thought() -> None:
    replan = "Thought: the area is missing.\nAction: Replan(find the area)"
    # Replan in the last round is asked once more for an answer: it replans again.
    script = Script.by_purpose(planner=[PLAN, PLAN.replace("1.", "5.", 1)], joiner=[replan, replan])
    llm = ScriptedLLM(script)
    runtime = Runtime(TOOLS, llm, prompt_style="compact", max_replans=0)
    seen: list[Event] = []
    result = anyio.run(lambda: runtime.arun("q?", subscribers=[seen.append], check=False))
    assert result.answer is None
    assert not [e for e in seen if isinstance(e, AnswerDelta)]


@pytest.mark.parametrize(
    "reply",
    [
        COMPACT,
        FULL,
        "Action: Finish(The Amur (4,444 km) is longer than the Lena (4,400 km).)",
        "Action: Finish(Paris)\n",
        "Action: Finish(Paris) and some words after it",
        'Action: Finish("quoted (with a paren)")',
        "Action: Finish(  spaced answer   )",
        "Action: Finish(no closing parenthesis",
        "Thought: Finish( in a thought is not an action\nAction: Finish(x)",
        "Just an answer without an action.",
        "Thought: missing.\nAction: Replan(more)",
    ],
)
def test_the_streamed_pieces_add_up_to_the_parsed_answer(reply: str) -> None:
    for size in (1, 2, 5, len(reply)):
        reading = AnswerStream()
        pieces = [reading.feed(reply[i : i + size]) for i in range(0, len(reply), size)]
        decision, rest = reading.close()
        assert decision == parse_decision(reply)
        streamed = "".join(pieces) + rest
        assert streamed == (decision.text if decision.action == "finish" else "")
        # What was given before the end is always a prefix of the answer.
        assert decision.text.startswith("".join(pieces))


def test_the_compact_grammar_lets_the_thought_go() -> None:
    assert '( "Thought: " text "\\n" )?' in joiner_grammar("compact")
    assert joiner_grammar().startswith('root ::= "Thought: " text "\\n" "Action: "')


def test_settings_keep_the_style_for_resume(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="prompt_style"):
        RunSettings(prompt_style="terse")  # type: ignore[arg-type]
    settings = RunSettings(prompt_style="compact")
    assert RunSettings.from_dict(settings.to_dict()) == settings
    # A journal from before prompt styles ran with the full prompts.
    old = {k: v for k, v in settings.to_dict().items() if k != "prompt_style"}
    assert RunSettings.from_dict(old).prompt_style == "full"
    # The runtime records the style it resolved, so a resume uses the same prompts.
    runtime = Runtime.from_settings(
        RunSettings(tools=("demo_tools:TOOLS",)),
        llm=OpenAICompatible(base_url="http://127.0.0.1:9/v1", model="m"),
        journal=tmp_path / "j.db",
    )
    assert runtime.settings.prompt_style == "compact"
    assert isinstance(runtime.journal, Journal)


def test_the_live_view_shows_the_answer_while_it_streams() -> None:
    view = DagView()
    view(AnswerDelta(text="About 428 "))
    view(AnswerDelta(text="people"))
    assert view.answer == "About 428 people"
    assert "About 428 people" in _text(view)
    view(AnswerEvent(answer="About 428 people per km²."))
    assert view.answer == ""  # printed whole, apart, once the run has it


def _text(view: DagView) -> str:
    from rich.console import Console

    console = Console(record=True, width=100)
    console.print(view.render())
    return console.export_text()


def test_the_journal_keeps_the_answer_not_its_pieces(tmp_path: Path) -> None:
    llm = ScriptedLLM(Script.by_purpose(planner=[PLAN], joiner=[Reply(COMPACT, chunk_size=2)]))
    runtime = Runtime(TOOLS, llm, prompt_style="compact", journal=tmp_path / "j.db")
    result = runtime.run("Density of the Netherlands?")
    assert runtime.journal is not None
    kinds = [e["kind"] for e in runtime.journal.events(result.run_id)]
    assert "answer" in kinds
    assert "answer_delta" not in kinds
    stored = runtime.journal.show(result.run_id)
    assert json.dumps(stored["settings"]["prompt_style"]) == '"compact"'


def test_compact_prompts_and_join_replan_together_over_http() -> None:
    """Both endpoint defaults at once: the first join replans with the next plan in its reply,
    the second answers first with no thought, and the answer streams in pieces."""
    first = '1. population("Netherlands")\n2. join()\n<END_OF_PLAN>'
    replan = (
        "Thought: the area is missing.\nAction: Replan(look up the area)\n"
        '3. area("Netherlands")\n4. divide($1, $3)\n5. join()\n<END_OF_PLAN>'
    )
    script = Script.by_purpose(
        planner=[first], joiner=[Reply(replan, chunk_size=5), Reply(COMPACT, chunk_size=3)]
    )
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        answer, events = _run(llm)
    assert answer == ANSWER
    assert [m[0].role for m in server.requests] == ["system"] * 3  # plan, join+plan, join
    assert server.script.purposes == ["planner", "joiner", "joiner"]
    deltas = [e.text for e in events if e.kind == "answer_delta"]  # type: ignore[attr-defined]
    assert len(deltas) > 1
    assert "".join(deltas) == ANSWER
    finished = {e.task_id for e in events if e.kind == "task_finished"}  # type: ignore[attr-defined]
    assert finished == {1, 3, 4}


THOUGHT_PLAN = 'Thought: It asks for 1 thing: the population.\n1. population("France")\n2. join()'
BARE_PLAN = '1. population("France")\n2. join()'


def test_a_plan_opens_as_its_examples_do() -> None:
    """Examples on other tools open by listing what the question asks for, so the planner's
    grammar asks for that thought; tools with examples of their own that do not all open with
    one (the built-in tools'), no examples, or the compact style leave it optional."""
    listed = Runtime(ToolRegistry(TOOLS), ScriptedLLM([]), prompt_style="full")
    assert opens_with_thought(listed.planner.examples)
    assert "Thought: It asks for 2 things:" in listed.planner.system_prompt()
    grammar = Grammar(listed.planner.grammar or "")
    assert grammar.accepts(THOUGHT_PLAN + "\n<END_OF_PLAN>")
    assert not grammar.accepts(BARE_PLAN + "\n<END_OF_PLAN>")
    others = [
        Runtime(builtin_tools(), ScriptedLLM([]), prompt_style="full"),
        Runtime(ToolRegistry(TOOLS), ScriptedLLM([]), prompt_style="full", examples=""),
        Runtime(ToolRegistry(TOOLS), ScriptedLLM([]), prompt_style="compact"),
    ]
    for runtime in others:
        grammar = Grammar(runtime.planner.grammar or "")
        plan = (
            BARE_PLAN.replace("population", "country_info")
            if "country_info" in runtime.tools
            else BARE_PLAN
        )
        assert grammar.accepts(plan + "\n<END_OF_PLAN>"), runtime.tools
        runtime.close()
    listed.close()


def test_every_example_must_open_with_a_thought_for_the_grammar_to_ask_for_one() -> None:
    one = "Question: a?\nThought: It asks for 1 thing.\n1. f()\n2. join()\n<END_OF_PLAN>"
    bare = "Question: b?\n1. f()\n2. join()\n<END_OF_PLAN>"
    assert opens_with_thought(one)
    assert opens_with_thought(f"(These examples use other tools: f().)\n{one}\n\n{one}")
    assert not opens_with_thought(f"{one}\n\n{bare}")
    assert not opens_with_thought("")
    assert not opens_with_thought("Thought: no question at all.")
