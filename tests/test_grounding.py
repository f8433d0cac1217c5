"""The grounding check: an answer's numbers must come from the results or the question."""

from __future__ import annotations

from typing import Any

import pytest

from demo_tools import POPULATION, TOOLS, population
from planweave import RunSettings, Runtime, Script, ScriptedLLM, TaskStatus, tool
from planweave.builtin import rank
from planweave.cli.view import DagView
from planweave.errors import ToolFailed
from planweave.events import AnswerDelta, AnswerUngrounded
from planweave.grounding import fallback_answer, numbers, ungrounded, unnamed
from planweave.plan import Task
from planweave.records import TaskRecord


def done(result: Any, task_id: int = 1) -> TaskRecord:
    return TaskRecord(task=Task(id=task_id, tool="t"), status=TaskStatus.DONE, result=result)


@pytest.mark.parametrize(
    ("answer", "result"),
    [
        ("About 428 people per km².", 427.71),  # rounded to its last digit
        ("17.9 million people", 17_912_345),  # a scale word
        ("17,900,000 people", 17_912_345),  # trailing zeros: rounded to the hundred thousand
        ("It is 15.3% of the total", 0.1531),  # a percentage of a fraction
        ("It is 15.3 percent", 15.3),
        ("The difference is 816,025.", {"difference": 816025}),
        ("Paris is at 48.8566 N", {"city": "Paris", "lat": 48.8566}),
        ("Lyon has 522,250 inhabitants", "Lyon: population 522250 (2020)"),  # numbers in text
        ("Austria has 8 neighbours", ["Germany"] * 8),  # a list's length
        ("It has 12 neighbours", [f"c{i}" for i in range(12)]),
        ("2 of the 3 cities", None),  # small whole numbers are free
        ("1.5e6 items", 1_500_000),
        ("The date is 2026-12-01", "2026-12-01T10:00:00"),
        ("a negative -3.5 change", -3.5),
    ],
)
def test_grounded_answers(answer: str, result: Any) -> None:
    records = [done(result)] if result is not None else []
    assert ungrounded(answer, "a question", records) == []


@pytest.mark.parametrize(
    ("answer", "result", "missing"),
    [
        ("The difference is 8,160,250.", 816025, ["8,160,250"]),  # a digit re-typed wrong
        ("About 5,000 people per km²", 504.2, ["5,000"]),  # ten times off
        ("It has 13 neighbours", [f"c{i}" for i in range(12)], ["13"]),  # counted one too many
        ("Roughly 37% of the total", 0.27, ["37%"]),
        ("About 428.5 and 428.5 again", 427.71, ["428.5"]),  # each number once
        ("The answer is 3.0", 4.0, ["3.0"]),  # a decimal is not a free small number
    ],
)
def test_ungrounded_answers(answer: str, result: Any, missing: list[str]) -> None:
    assert ungrounded(answer, "a question", [done(result)]) == missing


def test_numbers_from_the_question_and_only_finished_results_count() -> None:
    failed = TaskRecord(task=Task(id=1, tool="t"), status=TaskStatus.FAILED, result=99)
    assert ungrounded("Of 250 people, 99 came", "What share of 250 people came?", [failed]) == [
        "99"
    ]


def test_numbers_reads_precision_and_scale() -> None:
    read = {n.text: (n.value, n.tolerance, n.percent) for n in numbers("3.5 billion, 12 %, 430")}
    assert read == {
        "3.5 billion": (3.5e9, 0.05e9, False),
        "12 %": (12.0, 0.5, True),
        "430": (430.0, 5.0, False),
    }


PLAN = '1. population("France")\n2. population("Belgium")\n3. join()\n<END_OF_PLAN>'
TOTAL = POPULATION["France"] + POPULATION["Belgium"]


def finish(text: str) -> str:
    return f"Thought: x\nAction: Finish({text})"


def test_an_ungrounded_answer_is_withdrawn_and_the_joiner_asked_again() -> None:
    # In the last round there is nothing left to plan: the joiner is asked once more.
    wrong = finish("Together 97,300,000 people.")  # added in prose, and wrong
    right = finish(f"France has {POPULATION['France']:,}, Belgium {POPULATION['Belgium']:,}.")
    script = Script.by_purpose(planner=[PLAN], joiner=[wrong, right])
    runtime = Runtime(TOOLS, ScriptedLLM(script), grounding=True, max_replans=0)
    result = runtime.run("How many people live in France and Belgium?")
    assert result.answer == right.split("Finish(")[1][:-1]
    withdrawn = [e for e in result.events if isinstance(e, AnswerUngrounded)]
    assert [(e.numbers, e.retry) for e in withdrawn] == [(["97,300,000"], True)]
    redo_prompt = script.requests[-1][-1].content
    assert "states 97,300,000, which no result and not the question gives" in redo_prompt
    # The pieces streamed after the withdrawal add up to the answer.
    after = result.events[result.events.index(withdrawn[0]) :]
    assert "".join(e.text for e in after if isinstance(e, AnswerDelta)) == result.answer


@pytest.mark.parametrize("placeholder", ["${<id>}", "${17819054 / 2}%", "About ${<the answer>}."])
def test_a_placeholder_left_in_the_answer_is_withdrawn(placeholder: str) -> None:
    # The 1.5B joiner answered `${<id>}`, the rule's own words, and it was the run's answer.
    right = finish(f"France has {POPULATION['France']:,} people.")
    script = Script.by_purpose(planner=[PLAN], joiner=[finish(placeholder), right])
    result = Runtime(TOOLS, ScriptedLLM(script), grounding=True).run("People in France?")
    assert result.answer == right.split("Finish(")[1][:-1]
    (withdrawn,) = [e for e in result.events if isinstance(e, AnswerUngrounded)]
    assert withdrawn.names
    assert withdrawn.names[0].startswith("${")
    twice = Script.by_purpose(planner=[PLAN], joiner=[finish(placeholder)] * 2)
    fallback = Runtime(TOOLS, ScriptedLLM(twice), grounding=True).run("People in France?")
    assert "${" not in fallback.answer


def test_twice_ungrounded_answers_with_what_was_found_and_what_was_not() -> None:
    plan = '1. population("France")\n2. population("Atlantis")\n3. join()\n<END_OF_PLAN>'
    invented = finish("Atlantis has 42% of France's population.")
    # Asked again after task 2's error, and again for what the answer lacked, the planner gives
    # up each time: the joiner answers, is withdrawn, asked once more, withdrawn.
    script = Script.by_purpose(
        planner=[plan, "4. join()", "5. join()"], joiner=[invented, invented, invented]
    )
    result = Runtime(TOOLS, ScriptedLLM(script), grounding=True).run("Atlantis vs France?")
    withdrawn = [e for e in result.events if isinstance(e, AnswerUngrounded)]
    assert [(e.numbers, e.retry) for e in withdrawn] == [
        (["42%"], True),
        (["42%"], True),
        (["42%"], False),
    ]
    assert result.replans == 2
    answer = result.answer or ""
    assert answer.startswith("I could not give an answer supported by the results")
    assert f'population("France") -> {POPULATION["France"]}' in answer
    assert 'What could not be found: population("Atlantis") -> ERROR: no country named' in answer
    assert "42" not in answer  # the invented number is not repeated, not even to disown it


def test_what_an_ungrounded_answer_lacked_is_planned_while_rounds_are_left() -> None:
    # The 1.5B joiner adds in prose (wrong); asked again it re-types.  The planner, told which
    # number no result gives, plans the missing calculation, and the next answer quotes it.
    wrong = finish("Together 97,300,000 people.")
    second = "4. add($1, $2)\n5. join()\n<END_OF_PLAN>"
    right = finish(f"Together {TOTAL:,} people.")
    script = Script.by_purpose(planner=[PLAN, second], joiner=[wrong, right])
    result = Runtime([*TOOLS, add], ScriptedLLM(script), grounding=True).run("Total?")
    assert result.answer == f"Together {TOTAL:,} people."
    assert result.replans == 1
    assert result.results[4] == TOTAL
    replan_prompt = "\n".join(m.content for m in script.requests[2])
    assert "no result gives the numbers 97,300,000" in replan_prompt
    assert "Plan only what is missing" in replan_prompt
    withdrawn = [e for e in result.events if isinstance(e, AnswerUngrounded)]
    assert [(e.numbers, e.retry) for e in withdrawn] == [(["97,300,000"], True)]


def test_the_asked_again_joiner_may_replan_to_compute_the_number() -> None:
    # Misnaming is the joiner's to mend; a joiner asked again may still replan itself.
    wrong = finish("Together 97,300,000 people.")
    second = "4. add($1, $2)\n5. join()\n<END_OF_PLAN>"
    right = finish(f"Together {TOTAL:,} people.")
    script = Script.by_purpose(
        planner=[PLAN, second],
        joiner=[wrong, "Thought: add them\nAction: Replan(add the two with a tool)", right],
    )
    runtime = Runtime([*TOOLS, add], ScriptedLLM(script), grounding=True, max_replans=1)
    result = runtime.run("Total?")
    assert result.answer == f"Together {TOTAL:,} people."
    assert result.replans == 1
    assert result.results[4] == TOTAL


@tool
def add(a: int, b: int) -> int:
    """a plus b."""
    return a + b


def test_grounding_is_on_for_the_embedded_model_only_by_default_and_recorded() -> None:
    script = Script.by_purpose(planner=[PLAN], joiner=[finish("Together 97,300,000 people.")])
    endpoint = Runtime(TOOLS, ScriptedLLM(script))
    assert endpoint.compiled.grounding is False
    assert endpoint.settings.grounding is False
    assert endpoint.run("q").answer == "Together 97,300,000 people."  # unchecked

    class Embedded(ScriptedLLM):
        embedded = True

    assert Runtime(TOOLS, Embedded(script)).settings.grounding is True
    assert RunSettings.from_dict({"mode": "compiled"}).grounding is False  # an older journal
    with pytest.raises(Exception, match="grounding"):
        RunSettings(grounding="yes")  # type: ignore[arg-type]


def test_the_live_view_drops_a_withdrawn_answer() -> None:
    view = DagView()
    view(AnswerDelta(text="Together 97,"))
    view(AnswerUngrounded(answer="Together 97,300,000", numbers=["97,300,000"], retry=True))
    view(AnswerDelta(text="France has"))
    assert view.answer == "France has"
    assert any("withdrawn" in note for note in view.notes)


def test_a_tool_error_is_not_a_source() -> None:
    @tool
    def lookup(name: str) -> int:
        """Always fails."""
        raise ToolFailed("nothing about 4242 here")

    plan = '1. lookup("x")\n2. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(
        planner=[plan, "3. join()", "4. join()"], joiner=[finish("It is 4242.")] * 3
    )
    result = Runtime([lookup], ScriptedLLM(script), grounding=True).run("q")
    assert (result.answer or "").startswith("I could not give an answer supported")


def test_react_sends_an_ungrounded_answer_back_once() -> None:
    step = 'Thought: the population.\nAction: population("France")'
    wrong = "Thought: done.\nAction: Finish(France has 6,837,309 people.)"  # digits retyped wrong
    right = f"Thought: copied.\nAction: Finish(France has {POPULATION['France']:,} people.)"
    script = Script.by_purpose(react=[step, wrong, right])
    result = Runtime(TOOLS, ScriptedLLM(script), mode="react", grounding=True).run("France?")
    assert result.answer == f"France has {POPULATION['France']:,} people."
    withdrawn = [e for e in result.events if isinstance(e, AnswerUngrounded)]
    assert [(e.numbers, e.retry) for e in withdrawn] == [(["6,837,309"], True)]
    told = script.requests[-1][-1].content
    assert told.startswith("Observation: Your answer")
    assert "call a tool (the calculator) to do it" in told
    assert "writing ${<id>} where an action's result goes" in told
    # Quoted by its action's id, the result goes in as written, and is grounded.
    quoted = "Thought: quoted.\nAction: Finish(France has ${1} people.)"
    script = Script.by_purpose(react=[step, wrong, quoted])
    result = Runtime(TOOLS, ScriptedLLM(script), mode="react", grounding=True).run("France?")
    assert result.answer == f"France has {POPULATION['France']:,} people."
    # An action that did not parse takes its id as the prompt counts them: ${2} is the
    # population, and ${1} (no result) stays as written instead of reading as the number 1.
    bad = "Thought: oops.\nAction: population(France"
    both = "Thought: q.\nAction: Finish(France has ${2} people, not ${1}.)"
    script = Script.by_purpose(react=[bad, step, both])
    result = Runtime(TOOLS, ScriptedLLM(script), mode="react").run("France?")
    assert result.answer == f"France has {POPULATION['France']:,} people, not ${{1}}."
    # Twice: the run answers with what was found instead.
    again = Script.by_purpose(react=[step, wrong, wrong])
    fallback = Runtime(TOOLS, ScriptedLLM(again), mode="react", grounding=True).run("France?")
    assert (fallback.answer or "").startswith("I could not give an answer supported by")
    assert f'population("France") -> {POPULATION["France"]}' in (fallback.answer or "")
    # Off: the answer stands as written.
    plain = Script.by_purpose(react=[step, wrong])
    assert Runtime(TOOLS, ScriptedLLM(plain), mode="react").run("France?").answer == (
        "France has 6,837,309 people."
    )


def test_right_arithmetic_between_a_few_results_is_grounded_and_wrong_is_not() -> None:
    results = [done(66_000_000, 1), done(10_409_800, 2)]
    assert ungrounded("France has 55,590,200 more people.", "q", results) == []
    assert ungrounded("About 6.34 times as many.", "q", results) == []  # 66,000,000 / 10,409,800
    assert ungrounded("76,409,800 together", "q", results) == []
    assert ungrounded("France has 55,950,200 more people.", "q", results) == ["55,950,200"]
    assert ungrounded("About 6.43 times as many.", "q", results) == ["6.43"]
    assert ungrounded("About 56 million more.", "q", results) == []  # two results: may be round
    # Among many results a chance match is likely: a round number is not derived, and past
    # MAX_DERIVED_SOURCES arithmetic is not tried at all.
    some = [done(float(1000 + 37 * i), i) for i in range(1, 13)]
    assert ungrounded("The sum is 2,111.", "q", some[:2]) == []  # 1037 + 1074
    assert ungrounded("The sum is about 2,100.", "q", some[:2]) == []
    assert ungrounded("The sum is about 2,100.", "q", some) == ["2,100"]
    many = [done(float(1000 + 37 * i), i) for i in range(1, 40)]
    assert ungrounded("The sum is 2,111.", "q", many) == ["2,111"]


def test_the_fallback_keeps_the_answer_s_words_without_its_numbers() -> None:
    answer = "France has more people than Portugal, by 55,950,200."
    text = fallback_answer([done(66_000_000, 1)], ["55,950,200"], answer)
    assert "The answer without them: France has more people than Portugal, by [?]." in text
    assert "55,950,200" not in text


def test_the_joiner_asked_again_may_quote_results_by_id() -> None:
    wrong = finish("France has 6,837,309 people.")  # digits retyped wrong
    quoted = finish("France has ${1} people, Belgium ${2}.")
    script = Script.by_purpose(planner=[PLAN], joiner=[wrong, quoted])
    result = Runtime(TOOLS, ScriptedLLM(script), grounding=True).run("France and Belgium?")
    assert (
        result.answer
        == f"France has {POPULATION['France']:,} people, Belgium {POPULATION['Belgium']:,}."
    )
    assert "writing ${<id>} where a task's result goes" in script.requests[-1][-1].content
    assert len([e for e in result.events if isinstance(e, AnswerUngrounded)]) == 1


def test_a_quoted_value_that_is_no_task_id_reads_as_the_value() -> None:
    from planweave.joiner import fill_answer

    failed = TaskRecord(task=Task(id=2, tool="t"), status=TaskStatus.FAILED)
    records = [done(377_930, 1), failed]
    assert fill_answer("Japan: ${1} km²", records) == "Japan: 377,930 km²"
    assert fill_answer("Japan: ${377930} km²", records) == "Japan: 377930 km²"
    # Any length: a population of eight digits stayed `${11225469}` in an answer.
    assert fill_answer("Belgium has ${11225469} people", records) == "Belgium has 11225469 people"
    assert fill_answer("Greece: ${2}", records) == "Greece: ${2}"  # a task that gave nothing
    # The 1.5B model wrapped a ratio it had copied: a value, read readably.
    assert fill_answer("the ratio is ${2.6524753261185934}.", records) == "the ratio is 2.65."


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (60_769_102, "60,769,102"),
        (403.3725169, "403.37"),
        (1964375.0, "1,964,375"),
        (0.002479, "0.002479"),
        (0.5, "0.5"),
        (-35.6617, "-35.66"),
        (1.2e20, "1.2e+20"),
    ],
)
def test_a_quoted_number_reads_as_an_answer_writes_it_and_stays_grounded(
    value: float, text: str
) -> None:
    from planweave.joiner import fill_answer

    records = [done(value, 1)]
    answer = fill_answer("It is ${1}.", records)
    assert answer == f"It is {text}."
    assert ungrounded(answer, "q", records) == []


def ranking(order: list[str], key: str = "largest") -> dict[str, Any]:
    return {key: order[0], "value": 2.0, "order": order, "values": dict.fromkeys(order, 1.0)}


@pytest.mark.parametrize(
    ("question", "answer", "result", "expected"),
    [
        # The answer names first the one the ranking puts at the end the question asks for.
        ("Which has more people, Norway or Brazil?", "Brazil has more people.", None, None),
        (
            "Which has more people, Norway or Brazil?",
            "Norway has more people than Brazil.",
            None,
            "Brazil",
        ),
        # Asked the other way, the other end of the same ranking is the answer.
        ("Which has fewer people, Norway or Brazil?", "Norway has fewer people.", None, None),
        (
            "Which has the fewest people, Norway or Brazil?",
            "Brazil, with 203,586,000.",
            None,
            "Norway",
        ),
        # A ranking by the smallest: its first name is the bottom.
        ("Which has the fewest people?", "Norway.", ["Norway", "Brazil"], None),
        ("Which has the fewest people?", "brazil has the fewest.", ["Norway", "Brazil"], "Norway"),
        (
            "Which city is further north, Osaka or Bergen?",
            "Osaka is further north.",
            ["Osaka", "Bergen"],
            "Bergen",
        ),
        # Nothing to tell: no direction word, both directions, no candidate named, a tie.
        ("Norway or Brazil: which?", "Norway.", None, None),
        ("Which is larger but less dense?", "Norway.", None, None),
        ("Which has more people?", "The second one.", None, None),
    ],
)
def test_an_answer_must_name_the_ranking_s_answer_first(
    question: str, answer: str, result: list[str] | None, expected: str | None
) -> None:
    from planweave.grounding import misnamed

    order = ["Brazil", "Norway"]
    value = ranking(order) if result is None else ranking(result, "smallest")
    found = misnamed(answer, question, [done(203_586_000, 1), done(value, 3)])
    assert (found.expected if found else None) == expected
    if found is not None:
        assert found.task_id == 3
    tie = {"largest": ["Brazil", "Norway"], "value": 1.0, "order": order, "values": {}}
    assert misnamed("Norway has more people.", "Which has more?", [done(tie, 1)]) is None


def ranked_plan(a: str, b: str) -> str:
    """Look up two populations and rank them."""
    return (
        f'1. population("{a}")\n2. population("{b}")\n'
        f'3. rank(["{a}", "{b}"], [$1, $2])\n4. join()\n<END_OF_PLAN>'
    )


def test_a_misnamed_winner_is_withdrawn_then_the_results_answer() -> None:
    tools = [population, rank]
    plan = ranked_plan("France", "Belgium")
    wrong = finish("Belgium has more people than France.")
    script = Script.by_purpose(
        planner=[plan, plan], joiner=[wrong, finish("France.")] + [wrong] * 2
    )
    runtime = Runtime(tools, ScriptedLLM(script), grounding=True)
    result = runtime.run("Which has more people, France or Belgium?")
    assert result.answer == "France."
    (event,) = [e for e in result.events if isinstance(e, AnswerUngrounded)]
    assert event.misnamed == "it names Belgium where the ranking of task 3 gives France"
    assert event.numbers == []
    assert "naming France first" in script.requests[2][-1].content
    # Twice wrong: the run answers with the ranking, not the wrong name.
    again = Runtime(
        tools, ScriptedLLM(Script.by_purpose(planner=[plan], joiner=[wrong] * 2)), grounding=True
    ).run("Which has more people, France or Belgium?")
    assert again.answer is not None
    assert again.answer.startswith("The results rank France where the question asks (task 3)")
    assert "Belgium has more people" not in again.answer


def test_an_answer_withdrawn_for_its_numbers_still_leads_with_the_ranking_s_answer() -> None:
    # The 1.5B model named the right city but added a latitude difference no result gave;
    # its fallback listed the results in plan order, so the wrong city came first.
    tools = [population, rank]
    plan = ranked_plan("Belgium", "France")
    made_up = finish("France has more people, by 12,345,678.")
    script = Script.by_purpose(planner=[plan], joiner=[made_up] * 2)
    result = Runtime(tools, ScriptedLLM(script), grounding=True, max_replans=0).run(
        "Which has more people, Belgium or France?"
    )
    assert result.answer is not None
    assert result.answer.startswith("By the ranking of task 3, the answer is France. ")
    assert "12,345,678" not in result.answer
    # No ranking asked for: the fallback starts as before.
    text = fallback_answer([done(66_000_000, 1)], ["5"], "It is 5.")
    assert text.startswith("I could not give an answer supported by the results")


def test_the_fallback_leads_with_the_last_round_s_ranking_and_its_own_words_are_no_claims() -> None:
    from planweave.grounding import check, stated

    first = TaskRecord(
        task=Task(id=3, tool="rank"), status=TaskStatus.DONE, result=ranking(["Belgium", "x"])
    )
    later = TaskRecord(
        task=Task(id=12, tool="rank"), status=TaskStatus.DONE, result=ranking(["France", "x"])
    )
    found = check("France, by 4,444,444.", "Which has more people?", [first, later])
    text = found.fallback([first, later])
    assert text.startswith("By the ranking of task 12, the answer is France.")
    # The fallback's own sentences (task 12, "it stated 1 number") state nothing.
    assert stated(text) == "France, by [?]."
    assert ungrounded(stated(text), "Which has more people?", [first, later]) == []
    counted = fallback_answer([done(["a", "b"], 1)], ["3"], "It has 3 neighbours.")
    assert ungrounded(stated(counted), "How many border it?", [done(["a", "b"], 1)]) == []
    assert stated("The results rank France where the question asks (task 3); ...") == ""


def test_the_fallback_takes_out_whole_numbers_and_its_quotes_are_no_statements() -> None:
    from planweave.grounding import stated

    records = [done(1_371_498, 1)]
    answer = "Milan has 1371498 people, by 1 person (1371498 - 1)."
    text = fallback_answer(records, ["1"], answer)
    kept = "The answer without them: Milan has 1371498 people, by [?] person (1371498 - [?])."
    assert kept in text
    assert "What was found: t() -> 1371498." in text
    # What the fallback quotes of the results is the plan's and the tools' words, not a claim.
    quoted = fallback_answer([done(7.5, 1)], ["3"], "It is 3.").replace("t()", 't("x * 100")')
    assert ungrounded(quoted, "q", [done(7.5, 1)]) == ["100"]
    assert ungrounded(stated(quoted), "q", [done(7.5, 1)]) == []
    assert stated("Plain answer: 4.") == "Plain answer: 4."


def test_react_sends_a_misnamed_winner_back_once() -> None:
    tools = [population, rank]
    steps = [
        'Thought: France.\nAction: population("France")',
        'Thought: Belgium.\nAction: population("Belgium")',
        'Thought: rank them.\nAction: rank(["France", "Belgium"], [$1, $2])',
    ]
    wrong = "Thought: done.\nAction: Finish(Belgium has more people than France.)"
    right = "Thought: done.\nAction: Finish(France has more people than Belgium.)"
    script = Script.by_purpose(react=[*steps, wrong, right])
    runtime = Runtime(tools, ScriptedLLM(script), mode="react", grounding=True)
    result = runtime.run("Which has more people, France or Belgium?")
    assert result.answer == "France has more people than Belgium."
    (event,) = [e for e in result.events if isinstance(e, AnswerUngrounded)]
    assert event.misnamed == "it names Belgium where the ranking of task 3 gives France"
    assert "naming France first" in script.requests[-1][-1].content


def test_a_count_asked_for_must_come_from_the_results() -> None:
    neighbours = [done(["Belgium", "Germany"], 1)]
    # Small whole numbers are free in general ("2 of the 3 cities")...
    assert ungrounded("It has 4 neighbours.", "Which neighbours has it?", neighbours) == []
    # ...but not as the answer to "how many": the 1.5B model counted 4 in a list of two.
    assert ungrounded("It has 4 neighbours.", "How many countries border it?", neighbours) == ["4"]
    assert ungrounded("It has 2 neighbours.", "How many countries border it?", neighbours) == []
    # Nor is a count derived from two others: 10 is 9 + 1, but no list has 10 items.
    nine = [done([f"c{i}" for i in range(9)], 1), done(["x"], 2)]
    assert ungrounded("There are 10 countries.", "How many countries border it?", nine) == ["10"]
    assert ungrounded("There are 9 countries.", "How many countries border it?", nine) == []
    # Other plain numbers in such an answer: a rounded fraction, a difference given negative.
    density = [*nine, done(232.6, 3), done(-7, 4)]
    said = "9 countries border it; its density is 233 people per km², and Poland has 7 more."
    assert ungrounded(said, "How many countries border it?", density) == []
    people = [*nine, done(177_453_549, 3)]
    said = "They have about 177.5 million people, 177,000,000 in all."
    assert ungrounded(said, "How many people live in its neighbours?", people) == []
    # "How many more / times" asks for a difference or a ratio, not a count.
    assert ungrounded("3 times as large.", "How many times larger is it?", neighbours) == []
    # Nor is a count asked for where no result is a list: "how many people" is a number.
    people = [done(1_371_498, 1)]
    assert ungrounded("About 1.4 million, 1 city.", "How many people live in Milan?", people) == []


def test_the_joiner_reads_floats_short_and_the_checks_keep_them_exact() -> None:
    from planweave.plan import render_text
    from planweave.records import shown

    density = 403.36917562724017
    record = done({"largest": "Netherlands", "values": [density, 367.7105935534591]})
    assert record.observation() == '{"largest": "Netherlands", "values": [403.369, 367.711]}'
    assert done(0.000123456789).observation() == "0.000123457"
    # Whole digits are never rounded away, however many; integers and texts are as they were.
    assert shown(123456789.123) == 123456789.12
    assert shown(39964076.666666664) == 39964076.67
    assert shown([16881000, "16881000.123456"]) == [16881000, "16881000.123456"]
    # What a later call gets, and what an answer is checked against, is the exact value.
    assert render_text(density) == "403.36917562724017"
    assert not ungrounded("The Netherlands: 403.37 per km².", "Which is denser?", [done(density)])


def test_a_result_nested_too_deeply_reads_as_such() -> None:
    deep: Any = [1.5]
    for _ in range(100_000):
        deep = [deep]
    assert done(deep).observation() == "[a list nested too deeply to show]"


@pytest.mark.parametrize(
    ("answer", "names"),
    [
        ("Belgium has 11,800,000 people.", []),
        ("The Belgium of today has 11,800,000 people.", []),  # "The" opens the sentence
        ("The Netherlands has 17,900,000 people.", ["Netherlands"]),
        ("Belgium pays in Euro.", ["Euro"]),  # no result and not the question says it
        ("Yes. However, Germany borders France.", ["Germany"]),  # France is in the question
        ("It uses USD, as Ecuador does.", ["USD", "Ecuador"]),
        ("Approximately 12 million people live in Belgium, together.", []),
    ],
)
def test_a_name_no_result_gives_is_found_offline(answer: str, names: list[str]) -> None:
    plan = '1. population("Belgium")\n2. area("Belgium")\n3. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[plan], joiner=[finish("x")])
    records = Runtime(TOOLS, ScriptedLLM(script)).run("Belgium or France?").tasks
    assert unnamed(answer, "Belgium or France?", records) == names


def test_an_answer_naming_what_no_result_gives_is_withdrawn_then_kept_without_it() -> None:
    invented = finish("France has more people; both pay in Euro.")
    right = finish("France has more people.")
    script = Script.by_purpose(planner=[PLAN], joiner=[invented, right])
    result = Runtime(TOOLS, ScriptedLLM(script), grounding=True).run(
        "Which has more people, France or Belgium?"
    )
    assert result.answer == "France has more people."
    (event,) = [e for e in result.events if isinstance(e, AnswerUngrounded)]
    assert (event.names, event.numbers, event.retry) == (["Euro"], [], True)
    redo_prompt = script.requests[-1][-1].content
    assert "names Euro, which no result and not the question gives" in redo_prompt
    # Twice: the fallback keeps the answer's words with the name taken out.
    again = Script.by_purpose(planner=[PLAN], joiner=[invented, invented])
    fallback = Runtime(TOOLS, ScriptedLLM(again), grounding=True).run(
        "Which has more people, France or Belgium?"
    )
    answer = fallback.answer or ""
    assert answer.startswith(
        "I could not give an answer supported by the results: it stated 1 name"
    )
    assert "The answer without them: France has more people; both pay in [?]." in answer
    assert "Euro" not in answer


_COMPARED = (
    '1. country_info("Germany", field="population")\n'
    '2. country_info("France", field="population")\n'
    '3. country_info("Argentina", field="population")\n'
    '4. calculator("${1} > ${2} + ${3}")\n5. join()\n<END_OF_PLAN>'
)
_COMBINED = "Is the population of Germany bigger than that of France and Argentina taken together?"


def test_a_yes_that_the_comparison_s_result_contradicts_is_withdrawn() -> None:
    # The 1.5B joiner said "Yes, ... bigger" over a calculator's False (fresh3, yes/no).
    from planweave.builtin import BUILTIN

    said_yes = finish("Yes, Germany has more people than France and Argentina together.")
    said_no = finish("No, Germany has fewer people than France and Argentina together.")
    script = Script.by_purpose(planner=[_COMPARED], joiner=[said_yes, said_no])
    result = Runtime(BUILTIN, ScriptedLLM(script), grounding=True).run(_COMBINED)
    assert result.answer == said_no.split("Finish(")[1][:-1]
    (withdrawn,) = [e for e in result.events if isinstance(e, AnswerUngrounded)]
    assert withdrawn.misnamed is not None
    assert "gives False" in withdrawn.misnamed
    assert "begin with No" in script.requests[-1][-1].content
    # Said twice, the comparison's own result answers.
    twice = Script.by_purpose(planner=[_COMPARED], joiner=[said_yes, said_yes])
    answer = Runtime(BUILTIN, ScriptedLLM(twice), grounding=True).run(_COMBINED).answer or ""
    assert answer.startswith("No: by task 4, calculator(")
    assert "Yes, Germany" not in answer


def test_a_yes_no_answer_is_not_held_to_a_result_where_nothing_tells() -> None:
    from planweave.grounding import contradicted

    compared = TaskRecord(
        task=Task(id=4, tool="calculator", args={"expression": "1 > 2"}),
        status=TaskStatus.DONE,
        result=False,
    )
    assert contradicted("Yes, it is.", "Is Germany bigger than France?", [compared]) is not None
    assert contradicted("No, it is not.", "Is Germany bigger than France?", [compared]) is None
    # A question that negates, two decisions, a question that is not yes/no: nothing tells.
    assert contradicted("Yes.", "Isn't Germany bigger than France?", [compared]) is None
    assert contradicted("Yes.", "Is Germany not bigger than France?", [compared]) is None
    other = TaskRecord(task=Task(id=5, tool="calculator"), status=TaskStatus.DONE, result=True)
    assert contradicted("Yes.", "Is Germany bigger than France?", [compared, other]) is None
    assert contradicted("Yes.", "Which is bigger, Germany or France?", [compared]) is None


def test_the_joiner_is_told_which_of_the_question_s_names_a_list_result_holds() -> None:
    # The 1.5B joiner counted "How many of Malta, Hungary, Ukraine and Bulgaria share a border
    # with Romania?" as 1, then 4, over Romania's neighbours (fresh3, count).
    from planweave.builtin import BUILTIN
    from planweave.grounding import held_names

    question = "How many of Malta, Hungary, Ukraine and Bulgaria share a border with Romania?"
    plan = '1. country_info("Romania", field="neighbours")\n2. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[plan], joiner=[finish("3 of them.")])
    result = Runtime(BUILTIN, ScriptedLLM(script), grounding=True).run(question)
    told = script.requests[-1][-1].content
    assert (
        "Note: task 1's result holds 3 of Malta, Hungary, Ukraine, Bulgaria: Hungary, Ukraine, "
        "Bulgaria; not Malta." in told
    )
    assert result.answer == "3 of them."
    # Nothing is said where the question lists no names the result holds.
    languages = done(["English", "Swahili"], task_id=3)
    listed = "Which of these have English as an official language: Denmark, India and Kenya?"
    assert held_names(listed, [languages]) == []
    assert held_names("Which countries border Romania?", [done(["Hungary"])]) == []


def test_a_count_of_equal_results_or_of_the_question_s_names_is_grounded() -> None:
    # "In how many of Porto, Toulouse, Sydney, Salzburg and Florence is the euro the currency?"
    # over five lookups, four of which gave ["EUR"]: "4 out of 5" was withdrawn (fresh4).
    question = (
        "On a trip through Porto, Toulouse, Sydney, Salzburg and Florence, in how many of "
        "those cities is the euro the official currency?"
    )
    found = [["EUR"], ["EUR"], ["AUD"], ["EUR"], ["EUR"]]
    records = [
        TaskRecord(task=Task(id=i, tool="country_info"), status=TaskStatus.DONE, result=r)
        for i, r in enumerate(found, 1)
    ]
    assert ungrounded("In 4 of the 5 cities.", question, records) == []
    assert ungrounded("In 3 of the 5 cities.", question, records) == ["3"]
    # Equal results of different tools are not one tally.
    mixed = [
        records[0],
        TaskRecord(task=Task(id=9, tool="t"), status=TaskStatus.DONE, result=["EUR"]),
    ]
    assert ungrounded("In 2 of them.", question, mixed) == ["2"]


_AMONG = (
    "Count the countries with between 20 and 80 million inhabitants among Morocco, Bangladesh, "
    "Cuba, the Czech Republic and Uruguay."
)


def test_an_answer_to_how_many_of_the_listed_names_must_give_a_count_of_them() -> None:
    from planweave.grounding import overcounted

    # The 1.5B plan summed the five populations and answered the sum as the count (fresh4).
    summed = "Morocco, Bangladesh, Cuba, Czech Republic, Uruguay: 216,086,853 countries."
    assert overcounted(summed, _AMONG) == 5
    assert overcounted("Only Morocco (33,465,000 people) is between them.", _AMONG) is None
    assert overcounted("1 of them: Morocco, with 33,465,000 people.", _AMONG) is None
    assert overcounted("None of them.", _AMONG) is None  # no number: nothing to hold
    assert overcounted("Between 20 and 80 million: Morocco.", _AMONG) is None  # the question's
    in_how_many = "In how many of Porto, Sydney and Lyon is the euro the currency?"
    assert overcounted("In 7 of them.", in_how_many) == 3
    assert overcounted("In 2 of them.", in_how_many) is None
    # A question that lists names but counts something else is not held to it.
    people = "How many people live in Lyon and Nice together?"
    assert overcounted("1,861,000 people.", people) is None
    capitals = "How many people live in the capitals of Austria and South Korea together?"
    assert overcounted("11,600,000 people.", capitals) is None


def test_a_sum_answered_for_a_count_is_withdrawn_then_the_joiner_asked_for_the_count() -> None:
    from planweave.builtin import BUILTIN

    plan = "\n".join(
        [
            *(
                f'{i}. country_info("{c}", field="population")'
                for i, c in enumerate(["Morocco", "Bangladesh", "Cuba"], 1)
            ),
            '4. calculator("${1} + ${2} + ${3}")',
            "5. join()",
            "<END_OF_PLAN>",
        ]
    )
    question = "Count the countries with over 20 million people among Morocco, Bangladesh and Cuba."
    total = sum(
        BUILTIN["country_info"].invoke({"name": c, "field": "population"})
        for c in ["Morocco", "Bangladesh", "Cuba"]
    )
    summed = finish(f"{total:,} countries.")
    counted = finish("2 of them: Morocco and Bangladesh.")
    script = Script.by_purpose(planner=[plan], joiner=[summed, counted])
    result = Runtime(BUILTIN, ScriptedLLM(script), grounding=True).run(question)
    assert result.answer == "2 of them: Morocco and Bangladesh."
    (withdrawn,) = [e for e in result.events if isinstance(e, AnswerUngrounded)]
    assert withdrawn.numbers == []  # the sum is a result: grounded, yet no count
    assert withdrawn.misnamed is not None
    assert "no count of the 3 names" in withdrawn.misnamed
    assert "say how many of them" in script.requests[-1][-1].content
    # Twice: the fallback does not keep the sum as if it were the count.
    twice = Script.by_purpose(planner=[plan], joiner=[summed, summed])
    answer = Runtime(BUILTIN, ScriptedLLM(twice), grounding=True).run(question).answer or ""
    assert answer.startswith("I could not give an answer supported by the results: it gives no")
    assert "countries." not in answer.split("What was found")[0]


def test_an_answer_leaving_out_one_the_ranking_listed_above_the_mark_is_withdrawn() -> None:
    # "Which of Mongolia, Colombia, Indonesia, Poland and Iceland are more populous than Sao
    # Paulo?": rank(..., above=$6) listed three; the 1.5B joiner named only the first.
    from planweave.grounding import check

    listed = {
        "largest": "Indonesia",
        "order": ["Indonesia", "Colombia", "Poland", "Mongolia", "Iceland"],
        "above": ["Indonesia", "Colombia", "Poland"],
        "count_above": 3,
    }
    records = [TaskRecord(task=Task(id=7, tool="rank"), status=TaskStatus.DONE, result=listed)]
    question = "Of Mongolia, Colombia, Indonesia, Poland and Iceland, which are more populous?"
    short = check("Indonesia is more populous.", question, records)
    assert short.wrong is not None
    assert short.wrong.expected == "Indonesia, Colombia and Poland"
    assert short.wrong.named == "Indonesia"
    assert "naming Indonesia, Colombia and Poland first" in short.note()
    whole = check("Indonesia, Poland and Colombia; not Mongolia or Iceland.", question, records)
    assert whole.ok
    # A question for one end names one: "which is the largest of those above" is not checked.
    largest = "Which is the largest of those more populous than Sao Paulo?"
    assert check("Indonesia.", largest, records).ok


def test_a_yes_that_the_quoted_result_puts_below_the_question_s_mark_is_withdrawn() -> None:
    # "Does Germany have more than 500 people per km²?": the plan divided (226.211), the
    # 1.5B joiner answered "Yes ... (226.211 against 500)".
    from planweave.grounding import check

    density = TaskRecord(task=Task(id=3, tool="calculator"), status=TaskStatus.DONE, result=226.211)
    question = "Does Germany have more than 500 people per square kilometre?"
    found = check("Yes, Germany has 226.211 people/km² against 500.", question, [density])
    assert found.opposite is not None
    assert (found.opposite.expected, found.opposite.task_id) == ("No", 3)
    assert "226.211, not more than 500" in found.note()
    assert found.fallback([density]).startswith("No: by task 3")
    assert check("No: 226.211 people per km².", question, [density]).ok
    under = "Does Germany have fewer than 500 people per square kilometre?"
    assert check("Yes, 226.211 per km².", under, [density]).ok
    assert check("No, 226.211 per km².", under, [density]).opposite is not None
    # Two quoted results, or no mark: nothing tells.
    area = TaskRecord(task=Task(id=2, tool="country_info"), status=TaskStatus.DONE, result=357114)
    two = check("Yes: 226.211 people on 357,114 km².", question, [area, density])
    assert two.opposite is None
    assert check("Yes, 226.211.", "Is Germany dense?", [density]).opposite is None
