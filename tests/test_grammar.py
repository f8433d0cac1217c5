"""Grammars generated from tool registries parse in llama.cpp's GBNF parser, checked against
the real embedded model's vocabulary."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import pytest

from demo_tools import TOOLS
from planweave import ToolRegistry, UserError, tool
from planweave.grammar import (
    joiner_grammar,
    plan_grammar,
    react_grammar,
    schema_grammar,
    yes_no_answers,
)
from planweave.llm.llamacpp import BINDINGS, Engine, installed
from planweave.llm.models import DEFAULT_MODEL, resolve_model
from planweave.step_grammar import Earlier, step_grammar


@tool
def varied(
    name: str,
    count: int,
    ratio: float,
    flag: bool,
    items: list[str],
    mode: Literal["fast", "slow"],
    anything: Any,
    maybe: str | None = None,
    either: int | str = 3,
) -> dict[str, Any]:
    """Every kind of parameter the grammar knows."""
    return {}


@tool
def no_args() -> int:
    """Takes nothing."""
    return 1


REGISTRIES = {
    "demo": ToolRegistry(TOOLS),
    "varied": ToolRegistry(varied, no_args),
    "empty": ToolRegistry(),
}


@pytest.fixture(scope="module", params=BINDINGS)
def vocab_model(request: pytest.FixtureRequest) -> Iterator[Engine]:
    if not installed(request.param):
        pytest.skip(f"{request.param} is not installed")
    # cyllama's llama.cpp aborts on a vocabulary-only load, so a small context instead.
    engine = Engine(resolve_model(DEFAULT_MODEL), n_ctx=256, n_batch=32, binding=request.param)
    yield engine
    engine.close()


@pytest.mark.model
@pytest.mark.parametrize("name", sorted(REGISTRIES))
def test_plan_and_react_grammars_parse(name: str, vocab_model: Any) -> None:
    registry = REGISTRIES[name]
    vocab_model.check_grammar(plan_grammar(registry))
    # A runbook's: branches, parameters, and the first task's copy of the call rules.
    vocab_model.check_grammar(plan_grammar(registry, branches=True, params=["host", "limit"]))
    # A runbook's step, compiled by itself: its first task reads nothing, a later one earlier ones.
    vocab_model.check_grammar(step_grammar(registry, first_id=1))
    vocab_model.check_grammar(step_grammar(registry, first_id=4, params=["host"]))
    # ... reading each earlier result as its tool declares, with the runbook's numbers only.
    called = dict(enumerate(registry.values(), 1))
    earlier = Earlier(called, frozenset(list(called)[-1:]))
    typed = step_grammar(
        registry,
        first_id=len(called) + 1,
        params=["host"],
        earlier=earlier,
        numbers=["0", "1", "90"],
        words=["timeout", "a-b", 'q"x\\'],
        terms=2,
    )
    vocab_model.check_grammar(typed)
    vocab_model.check_grammar(react_grammar(registry))
    vocab_model.check_grammar(joiner_grammar("full", registry))  # a Replan carrying a plan
    vocab_model.check_grammar(joiner_grammar("compact", registry, plan_answers=True))  # and bare


@pytest.mark.model
def test_typed_answer_grammars_parse(vocab_model: Any) -> None:
    from pydantic import BaseModel

    class Leaf(BaseModel):
        name: str
        size: float | None = None
        kind: Literal["a", "b c", 'q"uote']

    class Tree(BaseModel):
        leaves: list[Leaf]
        children: list[Tree]
        tags: dict[str, int]
        pair: tuple[int, str]

    vocab_model.check_grammar(schema_grammar(Tree.model_json_schema()))  # recursive, nested
    vocab_model.check_grammar(schema_grammar({}))  # any JSON value


@pytest.mark.model
def test_joiner_grammar_parses(vocab_model: Any) -> None:
    vocab_model.check_grammar(joiner_grammar())
    vocab_model.check_grammar(joiner_grammar("compact", finish_only=True))


@pytest.mark.parametrize("style", ["full", "compact"])
def test_the_last_round_s_joiner_grammar_only_answers(style: Any) -> None:
    from gbnf import Grammar

    finish = "Thought: nothing more can run.\nAction: Finish(Paris, as far as was found.)"
    replan = "Thought: the population is missing.\nAction: Replan(the population)"
    with_plan = f'{replan}\n1. population("France")\n2. join()\n<END_OF_PLAN>'
    tools = ToolRegistry(TOOLS)
    usual = Grammar(joiner_grammar(style, tools))
    last = Grammar(joiner_grammar(style, tools, finish_only=True))
    assert usual.accepts(finish)
    assert usual.accepts(replan)
    assert usual.accepts(with_plan)
    assert last.accepts(finish)
    assert not last.accepts(replan)
    assert not last.accepts(with_plan)


@pytest.mark.parametrize("style", ["full", "compact"])
def test_a_yes_no_question_s_answer_starts_with_yes_or_no(style: Any) -> None:
    from gbnf import Grammar

    tools = ToolRegistry(TOOLS)
    for base in (joiner_grammar(style), joiner_grammar(style, tools, finish_only=True)):
        grammar = Grammar(yes_no_answers(base))
        assert grammar.accepts("Thought: France and Germany.\nAction: Finish(No: France, Germany.)")
        assert grammar.accepts("Thought: both France.\nAction: Finish(Yes.)")
        assert not grammar.accepts("Thought: x\nAction: Finish(Hamburg is in Germany.)")
    grammar = Grammar(yes_no_answers(joiner_grammar(style, tools)))
    assert grammar.accepts("Thought: x\nAction: Replan(the countries)")  # a Replan is as before
    if style == "compact":
        assert grammar.accepts("No, France and Germany.")  # bare
        assert not grammar.accepts("France and Germany.")


def test_the_joiner_is_held_to_yes_or_no_on_a_yes_no_question_only() -> None:
    from gbnf import Grammar
    from planweave import Runtime, Script, ScriptedLLM
    from planweave.llm.base import LLMRequest

    class Checked(ScriptedLLM):
        """Refuses a joiner reply its request's grammar does not allow, as llama.cpp would."""

        def stream(self, request: LLMRequest) -> Any:
            if request.purpose == "joiner":
                assert request.grammar is not None
                self.grammars.append(Grammar(request.grammar))
            return super().stream(request)

    plan = '1. population("France")\n2. join()\n<END_OF_PLAN>'
    reply = "Thought: t\nAction: Finish(France has 66,000,000 people.)"
    for question, held in [
        ("Do more than 60 million live in France?", True),
        ("Is France or Chile bigger?", False),
    ]:
        llm = Checked(Script.by_purpose(planner=[plan], joiner=[reply]))
        llm.grammars = []
        Runtime(ToolRegistry(TOOLS), llm).run(question)
        assert llm.grammars[0].accepts(reply) is not held


@pytest.mark.model
def test_a_broken_grammar_is_a_clear_error(vocab_model: Any) -> None:
    with pytest.raises(UserError, match="does not parse"):
        vocab_model.check_grammar('root ::= "a" undefined-rule')


def test_plan_grammar_names_every_tool_and_typed_arguments() -> None:
    text = plan_grammar(REGISTRIES["varied"])
    assert 'call-1-varied ::= "varied("' in text
    assert 'call-2-no-args ::= "no_args(" ")"' in text
    assert '"\\"fast\\""' in text  # Literal values are spelled out
    assert "( int | ref )" in text
    assert '", maybe="' in text
