"""Plan answers: a plan whose answer is its results in set words ends with it
(`join("... ${3} ...")`) and the run answers without a joiner call, unless a task of its round
did not finish; and the compact joiner's Replan comes without a thought."""

from __future__ import annotations

import json
import random
from pathlib import Path

import anyio
import pytest

from cli_process import invoke_cli
from demo_tools import TOOLS
from gbnf import Grammar
from planweave import (
    AnswerDelta,
    OpenAICompatible,
    Reply,
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
    ToolRegistry,
)
from planweave.errors import ArgumentError
from planweave.events import Event
from planweave.grammar import joiner_grammar, plan_grammar
from planweave.parser import PlanParser
from planweave.plan import Ref, Template
from planweave.prompts import PLAN_ANSWER, THOUGHT_BEFORE_REPLAN
from planweave.replies import parse_decision

QUESTION = "Density of the Netherlands?"
SAYS = '4. join("About ${3} people per km² in the Netherlands.")\n<END_OF_PLAN>'
PLAN = '1. population("Netherlands")\n2. area("Netherlands")\n3. divide($1, $2)\n' + SAYS
FINISH = "Action: Finish(About 428 people per km².)"


def _run(
    llm: OpenAICompatible | ScriptedLLM, question: str = QUESTION, **options: object
) -> tuple[str | None, list[Event]]:
    runtime = Runtime(TOOLS, llm, **options)  # type: ignore[arg-type]
    seen: list[Event] = []

    async def go() -> str | None:
        try:
            result = await runtime.arun(question, subscribers=[seen.append], check=False)
        finally:
            await llm.aclose()
        return result.answer

    return anyio.run(go), seen


def test_a_plan_that_ends_with_its_answer_needs_no_joiner_over_http() -> None:
    # No joiner reply is scripted: asking the joiner would fail the run.
    script = Script.by_purpose(planner=[Reply(PLAN, chunk_size=7)])
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        answer, events = _run(llm)
    density = 17_900_000 / 41_850
    assert answer == f"About {density:,.2f} people per km² in the Netherlands."  # as said
    assert script.purposes == ["planner"]
    assert PLAN_ANSWER in server.requests[0][0].content  # the planner is told it may
    # The answer reaches the event stream as a whole once the results are in.
    assert [e.text for e in events if isinstance(e, AnswerDelta)] == [answer]


def test_a_failed_task_is_planned_again_and_that_plan_answers() -> None:
    failing = PLAN.replace('population("Netherlands")', 'population("Atlantis")')
    fixed = '5. population("Netherlands")\n6. divide($5, $2)\n7. join("About ${6} people.")\n'
    script = Script.by_purpose(planner=[failing, fixed], joiner=[FINISH])
    answer, _ = _run(ScriptedLLM(script), prompt_style="compact")
    assert answer == "About 427.72 people."
    assert script.purposes == ["planner", "planner"]  # no joiner call at all
    assert "no country named 'Atlantis'" in script.requests[1][-1].content


def test_a_failed_task_the_planner_cannot_fix_sends_the_plan_to_the_joiner() -> None:
    failing = PLAN.replace('population("Netherlands")', 'population("Atlantis")')
    script = Script.by_purpose(planner=[failing, "5. join()"], joiner=[FINISH])
    answer, _ = _run(ScriptedLLM(script), prompt_style="compact")
    assert answer == "About 428 people per km²."
    assert script.purposes == ["planner", "planner", "joiner"]


def test_an_answer_the_results_do_not_ground_goes_to_the_joiner() -> None:
    # A number in the template that no result gives: with grounding on, the joiner answers.
    plan = PLAN.replace("About ${3}", "About ${3} (12 more than last year)")
    script = Script.by_purpose(planner=[plan], joiner=[FINISH])
    answer, _ = _run(ScriptedLLM(script), prompt_style="compact", grounding=True)
    assert answer == "About 428 people per km²."
    assert script.purposes == ["planner", "joiner"]


def test_a_projection_that_does_not_resolve_goes_to_the_joiner() -> None:
    plan = PLAN.replace("${3}", "${3.value}")
    script = Script.by_purpose(planner=[plan], joiner=[FINISH])
    answer, _ = _run(ScriptedLLM(script), prompt_style="compact")
    assert answer == "About 428 people per km²."
    assert script.purposes == ["planner", "joiner"]


def test_off_the_planner_is_not_told_and_an_answer_in_join_is_repaired() -> None:
    plain = PLAN.replace(SAYS, "4. join()\n<END_OF_PLAN>")
    script = Script.by_purpose(planner=[PLAN], repair=["4. join()\n<END_OF_PLAN>"], joiner=[FINISH])
    answer, _ = _run(ScriptedLLM(script), prompt_style="compact", plan_answers=False)
    assert answer == "About 428 people per km²."
    assert script.purposes == ["planner", "repair", "joiner"]
    assert PLAN_ANSWER not in script.requests[0][0].content
    assert plain  # the plan the repair completed


def test_a_replan_carried_by_the_joiner_may_end_with_the_answer() -> None:
    """The compact joiner replans without a thought, its reply carries the next plan, and that
    plan's answer ends the run: two LLM calls for two rounds."""
    first = '1. population("Netherlands")\n2. join()\n<END_OF_PLAN>'
    replan = (
        "Action: Replan(look up the area)\n"
        '3. area("Netherlands")\n4. divide($1, $3)\n5. join("${4} people per km²")\n<END_OF_PLAN>'
    )
    script = Script.by_purpose(planner=[first], joiner=[Reply(replan, chunk_size=5)])
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        answer, events = _run(llm)
    assert answer == f"{17_900_000 / 41_850:,.2f} people per km²"
    assert script.purposes == ["planner", "joiner"]
    joiner = server.requests[1][0].content
    assert THOUGHT_BEFORE_REPLAN not in joiner  # compact: the Replan comes alone
    assert PLAN_ANSWER in joiner  # and its plan may end with the answer
    assert {e.task_id for e in events if e.kind == "task_finished"} == {1, 3, 4}  # type: ignore[attr-defined]


def test_the_full_style_keeps_the_thought_before_a_replan() -> None:
    runtime = Runtime(TOOLS, ScriptedLLM([]), prompt_style="full")
    system = runtime.joiner.messages("q", [], last_round=False)[0].content
    assert THOUGHT_BEFORE_REPLAN + "Action: Replan(" in system
    compact = Runtime(TOOLS, ScriptedLLM([]), prompt_style="compact")
    system = compact.joiner.messages("q", [], last_round=False)[0].content
    assert "Action: Replan(" in system
    assert THOUGHT_BEFORE_REPLAN not in system
    decision = parse_decision("Action: Replan(look up the area)")
    assert (decision.action, decision.text, decision.thought) == (
        "replan",
        "look up the area",
        None,
    )


def test_the_parser_takes_one_answer_in_join_only_when_asked() -> None:
    tools = ToolRegistry(TOOLS)
    parser = PlanParser(tools, plan_answers=True)
    (_, join) = parser.feed('1. population("France")\n2. join("France: ${1} people")\n')
    assert join.answer == Template(("France: ", Ref(1), " people"))
    assert join.deps == (1,)
    (_, join) = PlanParser(tools, plan_answers=True).feed('1. population("France")\n2. join($1)\n')
    assert join.answer == Ref(1)
    for bad in ('join("a", "b")', "join(answer='a')", "join(3)"):
        with pytest.raises(ArgumentError):
            PlanParser(tools, plan_answers=True).feed(f'1. population("France")\n2. {bad}\n')
    with pytest.raises(ArgumentError, match="no arguments"):
        PlanParser(tools).feed('1. population("France")\n2. join("${1}")\n')
    # An answer quoting a result the plan lacks (the join's own id) leaves a bare join: the
    # joiner answers, and no repair is asked for.
    (_, join) = PlanParser(tools, plan_answers=True).feed(
        '1. population("France")\n2. join("${1} live in France: ${2} people.")\n'
    )
    assert (join.is_join, join.answer, join.deps) == (True, None, ())


def test_the_grammar_allows_an_answer_in_join_only_when_asked() -> None:
    tools = ToolRegistry(TOOLS)
    plan = '1. population("France")\n2. join("France: ${1} people")\n<END_OF_PLAN>'
    assert Grammar(plan_grammar(tools, plan_answers=True)).accepts(plan)
    assert Grammar(plan_grammar(tools, plan_answers=True)).accepts(
        plan.replace('"France: ${1} people"', "$1")
    )
    assert not Grammar(plan_grammar(tools)).accepts(plan)
    reply = "Action: Replan(the area)\n" + plan.replace("1.", "3.").replace("2.", "4.")
    assert Grammar(joiner_grammar("compact", tools, plan_answers=True)).accepts(
        reply.replace("${1}", "${3}")
    )


def test_what_the_answer_grammar_allows_the_parser_accepts() -> None:
    """Random join lines of the answer grammar parse after a first task (those naming results
    by reference are left to the tests above: their ids must name earlier tasks)."""
    tools = ToolRegistry(TOOLS)
    grammar = Grammar(plan_grammar(tools, plan_answers=True))
    rng = random.Random(11)
    pool = 'ab "\\$n{}1()é\t'
    checked = 0
    for _ in range(400):
        line = grammar.sample(rng, "join", pool)
        if "$" in line:
            continue
        parser = PlanParser(tools, plan_answers=True)
        parser.feed('1. population("France")\n2. ' + line.split(". ", 1)[1])
        parser.close()
        assert parser.joined, line
        checked += 1
    assert checked > 50


@pytest.mark.parametrize("flag", ["--plan-answers", "--no-plan-answers"])
def test_plan_answers_are_chosen_on_the_command_line_and_recorded(
    flag: str, tmp_path: Path
) -> None:
    says = '1. population("France")\n2. join("France has ${1} people.")\n<END_OF_PLAN>'
    plain = '1. population("France")\n2. join()\n<END_OF_PLAN>'
    on = flag == "--plan-answers"
    script = Script.by_purpose(
        planner=[says if on else plain], joiner=["Action: Finish(France has 68 million people.)"]
    )
    db = str(tmp_path / "runs.db")
    with ScriptedServer(script) as srv:
        tools = ("--tools", "demo_tools:TOOLS", "--model", "m")
        ran = invoke_cli("run", "q", *tools, "--base-url", srv.base_url, "--db", db, "--json", flag)
    assert ran.returncode == 0, ran.stderr
    assert "France has" in json.loads(ran.stdout)["answer"]
    assert script.purposes == (["planner"] if on else ["planner", "joiner"])
    shown = json.loads(
        invoke_cli("runs", "show", json.loads(ran.stdout)["id"], "--db", db, "--json").stdout
    )
    assert shown["settings"]["plan_answers"] is on


def test_a_plan_answer_says_results_as_a_sentence_does() -> None:
    from planweave.replies import spoken

    assert spoken(17_900_000) == "17,900,000"
    assert spoken(427.7222) == "427.72"
    assert spoken(True) == "yes"
    assert spoken(False) == "no"
    assert spoken(["German", "French"]) == "German, French"
    assert spoken([66_078_000, 549_700]) == "66,078,000, 549,700"
    assert spoken({"a": 1}) == '{"a": 1}'


def test_a_record_quoted_whole_is_no_plan_answer() -> None:
    # The 1.5B model wrote `join("... ${7}.")` over a rank's whole result: the joiner answers.
    from planweave.builtin import BUILTIN

    plan = '1. rank(["A", "B"], [1, 2])\n2. join("The larger: ${1}.")\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[plan], joiner=["Action: Finish(B is larger.)"])
    result = Runtime(BUILTIN, ScriptedLLM(script), plan_answers=True).run("A or B?")
    assert result.answer == "B is larger."
    assert script.purposes == ["planner", "joiner"]
    named = Script.by_purpose(planner=[plan.replace("${1}", "${1.largest}")])
    assert Runtime(BUILTIN, ScriptedLLM(named), plan_answers=True).run("A or B?").answer == (
        "The larger: B."
    )


@pytest.mark.parametrize("join", ['join("${<id>}")', 'join("<the answer, ${1} here>")'])
def test_the_rule_s_placeholder_copied_is_no_plan_answer(join: str) -> None:
    # The 1.5B model once ended a plan with `join("${<id>}")`, the rule's own words.
    from planweave.builtin import BUILTIN

    plan = f'1. country_info("Australia", field="capital")\n2. {join}\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[plan], joiner=["Action: Finish(Canberra.)"])
    result = Runtime(BUILTIN, ScriptedLLM(script), plan_answers=True).run("Australia's capital?")
    assert result.answer == "Canberra."
    assert script.purposes == ["planner", "joiner"]


def test_a_yes_no_question_s_fill_in_must_say_yes_or_no() -> None:
    # The 1.5B model ended "are they in the same country?" with a ranking's winner: the joiner
    # answers instead; a fill-in that says yes or no stands.
    from planweave.builtin import BUILTIN

    lookups = (
        '1. city_info("Marseille", field="country")\n2. city_info("Hamburg", field="country")\n'
    )
    ranked = lookups + '3. rank(["Marseille", "Hamburg"], [$1, $2])\n4. join("${3.largest}.")\n'
    script = Script.by_purpose(planner=[ranked], joiner=["Action: Finish(No: France and Germany.)"])
    question = "Are Marseille and Hamburg in the same country?"
    assert Runtime(BUILTIN, ScriptedLLM(script), plan_answers=True).run(question).answer == (
        "No: France and Germany."
    )
    assert script.purposes == ["planner", "joiner"]
    # Yes or No in the plan's own words is a guess made before the results: the joiner reads
    # them; a comparison's result filled in first is the answer.
    guessed = lookups + '3. join("Yes: ${1} and ${2}.")\n'
    script = Script.by_purpose(planner=[guessed], joiner=["Action: Finish(No: France, Germany.)"])
    assert Runtime(BUILTIN, ScriptedLLM(script), plan_answers=True).run(question).answer == (
        "No: France, Germany."
    )
    compared = lookups + "3. calculator(\"'${1}' == '${2}'\")\n4. join(\"${3}: ${1} and ${2}.\")\n"
    script = Script.by_purpose(planner=[compared])
    assert Runtime(BUILTIN, ScriptedLLM(script), plan_answers=True).run(question).answer == (
        "no: France and Germany."
    )


@pytest.mark.parametrize(
    ("question", "answer", "fits"),
    [
        ("Is Lyon or Nice larger?", "Lyon.", True),  # a choice, not yes/no
        ("Which is larger, is it Lyon?", "Lyon.", True),
        ("Does Norway use the euro?", "Norway uses NOK.", False),
        ("does norway use the euro", "no, the krone", True),
        ("I'm in Medellin. Is this a country next to Brazil?", "Colombia.", False),
        ("I live in Lyon. Is Lyon or Nice larger?", "Lyon.", True),
        ("How many countries border Chile?", "Argentina, Bolivia and Peru.", False),
        ("How many countries border Chile?", "3: Argentina, Bolivia and Peru.", True),
        ("What is the capital of Chile?", "Santiago.", True),
    ],
)
def test_fits_question(question: str, answer: str, fits: bool) -> None:
    from planweave.joiner import fits_question

    assert fits_question(question, answer) is fits


def test_a_plan_answer_that_fills_in_one_result_twice_is_left_to_the_joiner() -> None:
    # The 1.5B model answered "which two are the most populous?" with
    # `join("${6.largest} and ${6.largest} ...")`: "Germany and Germany".
    from planweave.builtin import BUILTIN

    plan = (
        '1. rank(["Iceland", "Germany", "Romania"], [328170, 80783000, 19942642])\n'
        '2. join("${1.largest} and ${1.largest} are the most populous.")\n<END_OF_PLAN>'
    )
    joined = "Action: Finish(Germany and Romania are the most populous.)"
    script = Script.by_purpose(planner=[plan], joiner=[joined])
    question = "Of Iceland, Germany and Romania, which two are the most populous?"
    answer = Runtime(BUILTIN, ScriptedLLM(script), plan_answers=True).run(question).answer
    assert answer == "Germany and Romania are the most populous."
    assert script.purposes == ["planner", "joiner"]
    # Two different fills stand without the joiner.
    distinct = plan.replace("${1.largest} and ${1.largest}", "${1.order[0]} and ${1.order[1]}")
    script = Script.by_purpose(planner=[distinct])
    answer = Runtime(BUILTIN, ScriptedLLM(script), plan_answers=True).run(question).answer
    assert answer == "Germany and Romania are the most populous."
    assert script.purposes == ["planner"]
