"""The embedded engine on each llama.cpp binding, with the real default model: both bindings
decode the same greedy text under a grammar, refuse a broken grammar with llama.cpp's reason,
keep the KV cache's tokens exact across reused prefixes and saved states, and report a prompt
longer than the context as such."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from planweave.errors import LLMContextOverflow, UserError
from planweave.llm.llamacpp import BINDINGS, Engine, Sampling, resolve_binding
from planweave.llm.llamacpp import cyllama as cyllama_binding
from planweave.llm.llamacpp import llama_cpp_python as lcp_binding
from planweave.llm.models import DEFAULT_MODEL, resolve_model
from planweave.llm.speculative import PromptLookup

INSTALLED = {
    cyllama_binding.NAME: cyllama_binding.available(),
    lcp_binding.NAME: lcp_binding.available(),
}
MESSAGES = [
    {"role": "system", "content": "You answer with a plan of tool calls, one per line."},
    {"role": "user", "content": "Population of France and of Spain?"},
]
GRAMMAR = r"""
root ::= line line "join()"
line ::= "country_info(\"" [A-Z] [a-z]+ "\", field=\"population\")\n"
"""


@pytest.fixture(scope="module", params=BINDINGS)
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    if not INSTALLED[request.param]:
        pytest.skip(f"{request.param} is not installed")
    loaded = Engine(resolve_model(DEFAULT_MODEL), n_ctx=1024, n_batch=64, binding=request.param)
    yield loaded
    loaded.close()


def _text(engine: Engine, tokens: list[int]) -> str:
    return b"".join(engine.piece(t) for t in tokens).decode()


def test_a_grammar_shapes_greedy_decoding_alike_on_both_bindings(engine: Engine) -> None:
    prompt = engine.tokenize(engine.render(MESSAGES))
    outcome: dict[str, object] = {}
    text = _text(engine, list(engine.generate(prompt, Sampling(GRAMMAR), outcome=outcome)))
    assert text.startswith('country_info("France", field="population")\ncountry_info("')
    assert text.endswith("join()")
    assert outcome["finish_reason"] == "stop"
    # The KV cache holds the prompt and what was decoded after it, exactly.
    assert engine.tokens[: len(prompt)] == prompt
    # The same request again reads only the prompt's last token and decodes the same text.
    again = _text(engine, list(engine.generate(prompt, Sampling(GRAMMAR), outcome=outcome)))
    assert again == text
    assert outcome["prompt_evaluated"] == 1


def test_drafts_keep_the_text_and_save_passes(engine: Engine) -> None:
    prompt = engine.tokenize(engine.render(MESSAGES))
    engine.evaluate([])  # an empty cache: both runs read the whole prompt
    plain: dict[str, int] = {}
    text = _text(engine, list(engine.generate(prompt, Sampling(GRAMMAR), outcome=plain)))
    engine.evaluate([])
    drafted: dict[str, int] = {}
    tokens = engine.generate(prompt, Sampling(GRAMMAR), drafter=PromptLookup(6), outcome=drafted)
    assert _text(engine, list(tokens)) == text
    assert drafted["accepted"] > 0
    assert drafted["passes"] < plain["passes"]


def test_a_saved_state_restores_the_same_continuation(engine: Engine) -> None:
    prompt = engine.tokenize(engine.render(MESSAGES))
    engine.evaluate(prompt[:-1])
    state = engine.save_state()
    assert state
    first = _text(engine, list(engine.generate(prompt, Sampling(GRAMMAR))))
    engine.evaluate([])
    assert engine.load_state(prompt[:-1], state)
    assert engine.tokens == prompt[:-1]
    assert _text(engine, list(engine.generate(prompt, Sampling(GRAMMAR)))) == first
    # A state that is not one: refused, and the sequence is empty rather than half-loaded.
    assert not engine.load_state(prompt[:-1], b"\x00" * 64)
    assert engine.tokens == []


def test_a_broken_grammar_and_a_long_prompt_are_refused(engine: Engine) -> None:
    with pytest.raises(UserError, match="the grammar does not parse: expecting"):
        engine.check_grammar('root ::= "a" (')
    with pytest.raises(LLMContextOverflow, match="context holds 1024"):
        list(engine.generate(list(range(10, 1100)), Sampling()))


def test_the_binding_is_chosen_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANWEAVE_LLAMA_BINDING", "cyllama")
    assert resolve_binding() == "cyllama"
    assert resolve_binding("llama-cpp-python") == "llama-cpp-python"
    monkeypatch.setenv("PLANWEAVE_LLAMA_BINDING", "llamafile")
    with pytest.raises(UserError, match=r"unknown llama\.cpp binding 'llamafile'"):
        resolve_binding()
    monkeypatch.delenv("PLANWEAVE_LLAMA_BINDING")
    expected = "llama-cpp-python" if INSTALLED["llama-cpp-python"] else "cyllama"
    assert resolve_binding() == expected
