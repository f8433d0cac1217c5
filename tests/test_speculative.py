"""Prompt-lookup decoding: the drafter's guesses, and on the real model, that drafting decodes
what decoding without it does (up to a near tie), in fewer forward passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from planweave.errors import UserError
from planweave.llm.llamacpp import BINDINGS, installed
from planweave.llm.local import resolve_draft_tokens
from planweave.llm.speculative import PromptLookup


def ids(*tokens: int) -> list[int]:
    return list(tokens)


def test_the_most_recent_match_of_the_longest_tail_is_followed() -> None:
    # ... 7 8 9 | 1 2 ... 7 8 4 | 5 6 ... 7 8: the tail "7 8" last led to 4 5 6.
    context = ids(7, 8, 9, 1, 2, 3, 7, 8, 4, 5, 6, 0, 7, 8)
    assert PromptLookup(3, ngram=3, min_ngram=2).find(context) == [4, 5, 6]
    # A longer tail wins over a more recent shorter one: "0 7 8" matched earlier.
    context = ids(0, 7, 8, 1, 1, 7, 8, 2, 2, 0, 7, 8)
    assert PromptLookup(2, ngram=3, min_ngram=2).find(context) == [1, 1]


def test_the_draft_is_bounded_and_may_be_empty() -> None:
    context = ids(1, 2, 3, 4, 5, 6, 7, 1, 2)
    assert PromptLookup(3, ngram=2, min_ngram=2).find(context) == [3, 4, 5]
    assert PromptLookup(8, ngram=2, min_ngram=2).find(ids(5, 6, 7, 8)) == []
    assert PromptLookup(8, ngram=3, min_ngram=2).find(ids(1)) == []
    # A match at the very end has nothing after it to propose.
    assert PromptLookup(4, ngram=1, min_ngram=1).find(ids(3, 3)) == [3]


def test_the_drafter_and_its_setting_refuse_nonsense(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="max_draft"):
        PromptLookup(0)
    with pytest.raises(ValueError, match="min_ngram"):
        PromptLookup(4, ngram=2, min_ngram=3)
    monkeypatch.setenv("PLANWEAVE_DRAFT_TOKENS", "many")
    with pytest.raises(UserError, match="PLANWEAVE_DRAFT_TOKENS must be a whole number"):
        resolve_draft_tokens(None)
    monkeypatch.setenv("PLANWEAVE_DRAFT_TOKENS", "0")
    assert resolve_draft_tokens(None) == 0
    assert resolve_draft_tokens(3) == 3
    with pytest.raises(UserError, match="between 0 and 32"):
        resolve_draft_tokens(99)


_COPY = textwrap.dedent(
    """
    import json, sys
    import anyio
    from planweave.llm.base import LLMRequest, Message
    from planweave.llm.local import LocalLLM

    llm = LocalLLM(draft_tokens=int(sys.argv[1]), prefix_cache_mb=0, prompt_cache_mb=0)
    llm.load()
    llama = llm.engine
    passes = []
    evaluate = llama._decode
    def counted(tokens, **options):
        passes.append(len(tokens))
        evaluate(tokens, **options)
    llama._decode = counted
    text = (
        "1. country_info(\\"Netherlands\\", field=\\"population\\")\\n"
        "2. country_info(\\"Netherlands\\", field=\\"area_km2\\")\\n"
        "3. country_info(\\"Belgium\\", field=\\"population\\")\\n"
        "4. country_info(\\"Belgium\\", field=\\"area_km2\\")"
    )
    messages = [
        Message("system", "You repeat the user's text exactly, and nothing else."),
        Message("user", text),
    ]

    named = {}

    async def main() -> str:
        out = ""
        request = LLMRequest(messages=messages, max_tokens=80, temperature=0.0)
        async for delta in llm.stream(request):
            out += delta.text or ""
            if delta.response_id:
                named.update(id=delta.response_id, model=delta.response_model)
        return out

    out = anyio.run(main)
    print(json.dumps(
        {"text": out, "passes": len(passes) - 1, "batched": max(passes[1:]), "named": named}
    ))
    """
)


@pytest.mark.model
@pytest.mark.timeout(600)
@pytest.mark.parametrize("binding", BINDINGS)
def test_drafting_decodes_the_same_text_in_fewer_forward_passes(binding: str) -> None:
    if not installed(binding):
        pytest.skip(f"{binding} is not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLANWEAVE_", "OPENAI_"))}
    env["PLANWEAVE_LLAMA_BINDING"] = binding

    def run(draft: int) -> dict[str, object]:
        proc = subprocess.run(
            [sys.executable, "-c", _COPY, str(draft)],
            capture_output=True,
            text=True,
            env=env,
            timeout=280,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
        return result

    plain, drafted = run(0), run(4)
    assert "Belgium" in str(plain["text"])
    # The embedded model names each response as an endpoint does (traces read the names).
    assert plain["named"]["model"] == drafted["named"]["model"] == "qwen2.5-coder-1.5b"  # type: ignore[index]
    assert plain["named"]["id"] != drafted["named"]["id"]  # type: ignore[index]
    # Greedy either way: the texts agree until a near tie, where batched and single-token
    # logits (which differ in their last bits) may pick differently ("km²" or "square
    # kilometers" after the same numbers, in one run on CI).
    a, b = str(plain["text"]), str(drafted["text"])
    same = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    assert same >= 60, (plain, drafted)
    # Without drafting one pass per token after the prompt; with it, the words it repeats
    # from the prompt are checked several tokens per pass (56 passes against 68 here).
    assert plain["batched"] == 1
    assert isinstance(drafted["passes"], int)
    assert isinstance(plain["passes"], int)
    assert drafted["passes"] <= 0.9 * plain["passes"], (drafted, plain)
