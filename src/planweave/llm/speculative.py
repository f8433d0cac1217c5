"""Prompt-lookup drafts for the embedded model's speculative decoding.

Plans copy tool names, argument spellings and `$N` patterns from the prompt; answers copy
numbers and names from the results.  A drafter guesses the next few tokens by finding the
last tokens written earlier in the context and proposing what followed them there; the engine
(`llamacpp.Engine.generate`) then checks all the guesses in one batch, which on a CPU costs
little more than one token, and keeps the ones the model would have written itself (greedy
decoding, the grammar applied to each).
"""

from __future__ import annotations

from collections.abc import Sequence


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

    def __call__(self, context: Sequence[int], /) -> list[int]:
        draft = self.find(context)
        self.drafted += len(draft)
        return draft

    def find(self, context: Sequence[int]) -> list[int]:
        ids = list(context)
        n = len(ids)
        for size in range(min(self.ngram, n - 1), self.min_ngram - 1, -1):
            tail = ids[n - size :]
            first = tail[0]
            for start in range(n - size - 1, -1, -1):
                if ids[start] == first and ids[start : start + size] == tail:
                    follow = ids[start + size : min(n, start + size + self.max_draft)]
                    if follow:
                        return follow
        return []
