"""Replanning as policy: a task the tool refused is planned again with its error in front of
the planner (no joiner call in between) while rounds are left; the joiner answers from a round
without such failures, or from the last round.  A joiner reply that is a directive (a wrapped
`Replan(...)`, a bare tool call) is never taken for the answer."""

from __future__ import annotations

import pytest

from demo_tools import POPULATION, TOOLS
from planweave import Recovery, Runtime, Script, ScriptedLLM, TaskStatus, ToolRegistry, tool
from planweave.events import ReplanEvent
from planweave.replies import parse_decision

FINISH = "Action: Finish(Belgium has 11,800,000 people.)"


def test_a_refused_call_is_planned_again_with_its_error_and_no_joiner_call() -> None:
    first = '1. population("Belgia")\n2. join()\n<END_OF_PLAN>'
    fixed = '3. population("Belgium")\n4. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[first, fixed], joiner=[FINISH])
    result = Runtime(TOOLS, ScriptedLLM(script)).run("How many people live in Belgium?")
    assert script.purposes == ["planner", "planner", "joiner"]
    replan = script.requests[1][-1].content
    assert "no country named 'Belgia'" in replan.split("Why that was not enough:")[1]
    (event,) = [e for e in result.events if isinstance(e, ReplanEvent)]
    assert event.reason.startswith("task 1 failed (no country named 'Belgia'")
    assert result.results == {3: POPULATION["Belgium"]}
    assert result.answer == "Belgium has 11,800,000 people."


def test_a_replan_that_restarts_its_ids_at_one_runs() -> None:
    # The embedded model writes its replan from `1.` whatever the prompt says: the ids follow on.
    first = '1. population("Belgia")\n2. join()\n<END_OF_PLAN>'
    restarted = '1. population("Belgium")\n2. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[first, restarted], joiner=[FINISH])
    result = Runtime(TOOLS, ScriptedLLM(script)).run("How many people live in Belgium?")
    assert script.purposes == ["planner", "planner", "joiner"]
    assert result.results == {3: POPULATION["Belgium"]}
    assert result.answer == "Belgium has 11,800,000 people."


def test_the_last_round_answers_even_with_a_failed_task() -> None:
    plan = '1. population("Atlantis")\n2. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(
        planner=[plan, '3. population("Atlantis ")\n4. join()'],
        joiner=["Action: Finish(Atlantis is not a country.)"],
    )
    result = Runtime(TOOLS, ScriptedLLM(script), max_replans=1).run("Atlantis?")
    assert script.purposes == ["planner", "planner", "joiner"]
    assert "last round" in script.requests[-1][0].content
    assert result.answer == "Atlantis is not a country."


def test_a_crash_is_not_planned_again() -> None:
    @tool
    def crashes(name: str) -> int:
        """Always crashes."""
        raise RuntimeError("the service fell over")

    plan = '1. crashes("x")\n2. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[plan], joiner=["Action: Finish(No answer.)"])
    result = Runtime(ToolRegistry([crashes]), ScriptedLLM(script), recovery=Recovery.none()).run(
        "q"
    )
    assert script.purposes == ["planner", "joiner"]
    assert result.tasks[0].status is TaskStatus.FAILED


@pytest.mark.parametrize(
    ("reply", "action", "text"),
    [
        ('Action: Finish(Replan(country_info("Italy", field="neighbours")))', "replan", None),
        ("Finish(Finish(Rome))", "finish", "Rome"),
        ('country_info("Italy", field="neighbours")', "replan", None),
        ("Thought: need more\ncity_info($1)", "replan", None),
        ("Paris (France) is the capital.", "finish", "Paris (France) is the capital."),
        ("sqrt(2) is about 1.41.", "finish", "sqrt(2) is about 1.41."),
        ("Action: Finish(Rome (2,800,000 people))", "finish", "Rome (2,800,000 people)"),
    ],
)
@pytest.mark.parametrize("bare", [True, False])
def test_a_directive_is_never_an_answer(
    reply: str, action: str, text: str | None, bare: bool
) -> None:
    decision = parse_decision(reply, bare=bare)
    assert decision.action == action
    if text is not None:
        assert decision.text == text


def test_a_directive_in_the_last_round_is_asked_again_for_an_answer() -> None:
    plan = '1. population("Belgium")\n2. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(
        planner=[plan],
        joiner=['Action: Finish(Replan(area("Belgium")))', FINISH],
    )
    result = Runtime(TOOLS, ScriptedLLM(script), max_replans=0).run("Belgium?")
    assert script.purposes == ["planner", "joiner", "joiner"]
    assert "no more plans can run" in script.requests[-1][-1].content
    assert result.answer == "Belgium has 11,800,000 people."


def test_an_argument_refused_for_its_type_names_the_result_it_came_from() -> None:
    # The 1.5B model passed a population where a country's name went: the error the replan
    # reads says which result it was, the one thing it can fix.
    from planweave.builtin import BUILTIN

    first = (
        '1. city_info("Nice", field="population")\n2. country_info($1, field="capital")\n'
        "3. join()\n<END_OF_PLAN>"
    )
    fixed = '4. city_info("Nice", field="country")\n5. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[first, fixed], joiner=["Action: Finish(France.)"])
    Runtime(BUILTIN, ScriptedLLM(script)).run("Which country is Nice in?")
    replan = script.requests[1][-1].content
    assert "(name was $1, the result of task 1: 342669)" in replan


def test_the_refused_argument_s_quote_is_bounded_and_never_raises() -> None:
    # Found by a hostile review: a 5,000-digit int or a list nested 5,000 deep raised inside
    # the error's own message; a 2-million-item list was written out whole first.
    from planweave.invoker import _whence
    from planweave.plan import Ref, Task

    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    task = Task(2, "country_info", (Ref(1),), {}, (1,), None, "2. country_info($1)", 1)
    task.bound = {"name": Ref(1)}
    for value in (10**5000, deep, list(range(2_000_000))):
        said = _whence(task, {"name": value}, "name: Input should be a valid string")
        assert said.startswith(" (name was $1, the result of task 1: ")
        assert len(said) < 200
