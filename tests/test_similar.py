"""Worked plans chosen per question from a tool set's bank (planweave.similar): by the words
that say a question's shape, never by its names; shown as earlier turns after the planner's
fixed instructions, which stay the same for every question."""

from __future__ import annotations

import pytest

from planweave import Runtime
from planweave.builtin import BUILTIN
from planweave.errors import UserError
from planweave.llm.scripted import Script, ScriptedLLM
from planweave.similar import MAX_COMPARED_CHARS, ExampleBank, shape_words
from planweave.tools import ToolRegistry, tool

BANK = [
    'Question: Which currency is used in Peru?\n1. money("Peru")\n2. join()\n<END_OF_PLAN>',
    "Question: How many people live in the capital of Kenya?\n"
    '1. capital("Kenya")\n2. people($1)\n3. join("${2} people.")\n<END_OF_PLAN>',
    'Question: Does Austria border Hungary?\n1. borders("Austria")\n2. join()\n<END_OF_PLAN>',
]


def test_shape_words_leave_names_out() -> None:
    assert shape_words("Which currency does Peru use, and does South Korea?") == {
        "which",
        "currency",
        "doe",  # a plural's s dropped, as "borders" and "border" are one word
        "use",
        "and",
    }
    # A capital opening a sentence is kept (a name there weighs nothing unless the bank has it);
    # °C and °F are the scales' words.
    assert shape_words("Is it cold? Oslo is at -3 °C.") == {
        "is",
        "it",
        "cold",
        "oslo",
        "at",
        "celsius",
    }


def test_the_nearest_example_is_the_one_of_the_same_shape_not_the_same_names() -> None:
    bank = ExampleBank(BANK)
    # Peru is named in the first example; the question is the second's shape.
    (chosen,) = bank.nearest("How many people live in the capital of Peru?", 1, 0.0)
    assert chosen[0] == "How many people live in the capital of Kenya?"
    assert chosen[1].startswith('1. capital("Kenya")')
    # Two asked for: the nearest comes last, just before the question.
    question = "Which currency do people use in the capital of Chile?"
    two = bank.nearest(question, 2, 0.0)
    scores = {e.question: bank.score(question, e) for e in bank.examples}
    assert [q for q, _ in two] == sorted(scores, key=scores.__getitem__)[-2:]
    assert scores[two[0][0]] < scores[two[1][0]]


def test_an_example_too_unlike_the_question_is_not_shown() -> None:
    bank = ExampleBank(BANK)
    assert bank.nearest("Tell me about Peru and Kenya.", 2, 0.35) == []
    assert bank.nearest("Does Austria border Hungary?", 0, 0.0) == []
    assert ExampleBank([]).nearest("Does Spain border France?", 2, 0.0) == []
    # A text without a plan is no example.
    assert len(ExampleBank(["Question: What now?", "no plan here", BANK[0]])) == 1


@tool
def money(country: str) -> str:
    """A country's currency."""
    return {"Chile": "CLP", "Peru": "PEN"}[country]


@tool
def capital(country: str) -> str:
    """A country's capital."""
    return {"Chile": "Santiago", "Kenya": "Nairobi"}[country]


@tool
def people(city: str) -> int:
    """How many people live in a city."""
    return {"Santiago": 6_000_000, "Nairobi": 4_400_000}[city]


def test_the_planner_is_shown_the_banks_nearest_plans_after_its_fixed_instructions() -> None:
    tools = ToolRegistry([money, capital, people], bank=BANK)
    script = Script.by_purpose(
        planner=['1. capital("Chile")\n2. people($1)\n3. join("${2} people.")\n<END_OF_PLAN>'] * 2
    )
    runtime = Runtime(tools, ScriptedLLM(script), similar_examples=2)
    result = runtime.run("How many people live in the capital of Chile?")
    assert result.answer == "6,000,000 people."
    sent = script.requests[0]
    assert [m.role for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[1].content == "Question: How many people live in the capital of Kenya?"
    # The example whose plan calls a tool the registry lacks (borders) is never shown; the
    # bank's answer is shown only where plans may end with one.
    assert "borders" not in " ".join(m.content for m in sent)
    assert sent[2].content.endswith('3. join("${2} people.")\n<END_OF_PLAN>')
    assert sent[3].content == "Question: How many people live in the capital of Chile?"
    # The instructions are those of a planner shown none: the same text for every question.
    alone = Runtime(tools, ScriptedLLM(script), similar_examples=0)
    assert alone.planner.messages("How many people live in Peru?")[0] == sent[0]
    assert len(alone.planner.messages("How many people live in the capital of Peru?")) == 2
    # Off by default (see planweave.similar.SIMILAR).
    default = Runtime(tools, ScriptedLLM(script))
    assert len(default.planner.messages("How many people live in the capital of Peru?")) == 2
    answers_off = Runtime(tools, ScriptedLLM(script), plan_answers=False, similar_examples=2)
    shown = answers_off.planner.messages("How many people live in the capital of Peru?")
    assert shown[2].content.endswith("3. join()\n<END_OF_PLAN>")


def test_the_builtin_tools_bank_runs_and_is_chosen_by_shape() -> None:
    runtime = Runtime(BUILTIN, ScriptedLLM(Script.by_purpose()), similar_examples=2)
    sent = runtime.planner.messages(
        "What currency is used in whichever of Spain, Italy and Greece has the most people?"
    )
    assert "rank(" in sent[-2].content
    assert "$4.largest" in sent[-2].content
    with pytest.raises(UserError, match="similar_examples must be at most 8"):
        Runtime(BUILTIN, ScriptedLLM(Script.by_purpose()), similar_examples=9)


def test_only_a_questions_opening_is_compared() -> None:
    # A long question costs no more than its opening (the shape is said there).
    far = "How many people live there? " * 100 + "Which currency?"
    assert len(far) > MAX_COMPARED_CHARS
    assert "currency" not in shape_words(far)
    assert "currency" in shape_words(far[-40:])


@pytest.mark.parametrize("bank", ["Question: one text\n1. f()", [None], [b"Question: x"], [5]])
def test_a_bank_is_a_list_of_texts(bank: object) -> None:
    with pytest.raises(UserError, match="bank must be a list of worked plans"):
        ToolRegistry([money], bank=bank)  # type: ignore[arg-type]


def test_registries_merge_their_banks_once() -> None:
    merged = ToolRegistry(ToolRegistry([money], bank=BANK), ToolRegistry([capital], bank=BANK))
    assert merged.bank == BANK


def test_an_entry_holding_two_examples_is_two_examples() -> None:
    bank = ExampleBank(["\n\n".join(BANK[:2]), BANK[2]])
    assert [e.question for e in bank.examples] == [
        "Which currency is used in Peru?",
        "How many people live in the capital of Kenya?",
        "Does Austria border Hungary?",
    ]
    assert bank.examples[0].plan == '1. money("Peru")\n2. join()\n<END_OF_PLAN>'
