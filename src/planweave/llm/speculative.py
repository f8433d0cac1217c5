"""Prompt-lookup (speculative) decoding for the embedded model.

Plans copy tool names, argument spellings and `$N` patterns from the prompt; answers copy
numbers and names from the results.  A drafter guesses the next few tokens by finding the
last tokens written earlier in the context and proposing what followed them there; the model
then checks all the guesses in one batch, which on a CPU costs little more than one token,
and keeps the ones it would have written itself (greedy decoding, the grammar applied to each).
The output is the same as without drafting; only the number of forward passes changes.

llama-cpp-python's own draft path asks for the logits of every token ever evaluated
(`logits_all`), a copy of n_ctx x vocabulary floats (5 GB for Qwen at 8,192 tokens) and an
output-layer product per prompt token.  `speculative_llama` keeps the draft path but asks for
all logits only in the short batches that verify a draft.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

# A batch this short is a draft being verified (a prompt is read in n_batch-token batches).
_VERIFY_BATCH = 32


class PromptLookup:
    """Drafts up to `max_draft` tokens by matching the context's last `ngram`..`min_ngram`
    tokens against earlier context, the most recent match first (a plan's previous line is a
    better guess than a worked example's)."""

    def __init__(self, max_draft: int = 8, *, ngram: int = 3, min_ngram: int = 2) -> None:
        if max_draft < 1 or not 1 <= min_ngram <= ngram:
            raise ValueError("need max_draft >= 1 and 1 <= min_ngram <= ngram")
        self.max_draft = max_draft
        self.ngram = ngram
        self.min_ngram = min_ngram
        self.drafted = 0

    def __call__(self, input_ids: npt.NDArray[np.intc], /, **_: Any) -> npt.NDArray[np.intc]:
        draft = self.find(input_ids)
        self.drafted += len(draft)
        return draft

    def find(self, input_ids: npt.NDArray[np.intc]) -> npt.NDArray[np.intc]:
        n = len(input_ids)
        for size in range(min(self.ngram, n - 1), self.min_ngram - 1, -1):
            tail = input_ids[n - size :]
            windows = np.lib.stride_tricks.sliding_window_view(input_ids[: n - 1], size)
            hits = np.flatnonzero((windows == tail).all(axis=1))
            for start in hits[::-1]:
                follow = input_ids[start + size : min(n, start + size + self.max_draft)]
                if len(follow):
                    return follow.copy()
        return np.empty(0, dtype=np.intc)


def speculative_llama(llama_cpp: Any) -> type:
    """A `Llama` subclass whose `eval` returns logits for every token of a short batch (a
    draft to verify) and only the last token's otherwise; nothing is copied out, since the
    sampler reads the logits from the context itself."""

    class SpeculativeLlama(llama_cpp.Llama):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._logits_all = False  # no logits copies, no logits_all prompt reads

        def eval(self, tokens: Sequence[int]) -> None:
            self._ctx.kv_cache_seq_rm(-1, self.n_tokens, -1)
            every = len(tokens) <= _VERIFY_BATCH
            for i in range(0, len(tokens), self.n_batch):
                batch = tokens[i : min(len(tokens), i + self.n_batch)]
                n_past = self.n_tokens
                self._batch.set_batch(batch=batch, n_past=n_past, logits_all=every)
                self._ctx.decode(self._batch)
                self.input_ids[n_past : n_past + len(batch)] = batch
                self.n_tokens += len(batch)
                self._requires_eval = False

    return SpeculativeLlama
