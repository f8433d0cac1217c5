"""The embedded engine: one model's KV cache as a token list, prompts read keeping the prefix it
already holds, greedy decoding under a GBNF grammar, prompt-lookup drafts checked in one batch,
the sequence's state saved and restored.  The same for every binding (`base.Binding`)."""

from __future__ import annotations

import atexit
import heapq
import itertools
import os
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ...errors import LLMContextOverflow, LLMError
from .base import Binding, LoadOptions, Sampler, Sampling
from .guide import Guide, GuideState, UnsupportedGrammar

__all__ = ["Drafter", "Engine", "common_prefix"]

Drafter = Callable[[Sequence[int]], Sequence[int]]
_OPEN: weakref.WeakSet[Engine] = weakref.WeakSet()


def _close_all() -> None:
    for engine in list(_OPEN):
        engine.close()


atexit.register(_close_all)


class Engine:
    """One GGUF model and one context (a single sequence, id 0), through `binding`: a name
    (see `open_binding`) or a loaded `Binding`.

    `tokens` is exactly what the KV cache holds, in order; every method keeps it so.  Not
    thread-safe: the caller holds a lock around each use (one model, one stream at a time)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        n_ctx: int = 8192,
        n_batch: int = 256,
        n_threads: int | None = None,
        extra_buffers: bool = True,
        flash_attention: bool | None = None,
        binding: str | Binding | None = None,
    ) -> None:
        from . import open_binding

        options = LoadOptions(
            n_ctx=n_ctx,
            n_batch=n_batch,
            n_threads=n_threads or os.cpu_count() or 2,
            extra_buffers=extra_buffers,
            flash_attention=flash_attention,
        )
        self.binding: Binding = (
            binding if isinstance(binding, Binding) else open_binding(path, options, binding)
        )
        self.n_ctx = self.binding.n_ctx
        self.n_batch = n_batch
        self.tokens: list[int] = []
        self._pieces: dict[int, bytes] = {}
        self._checked: set[str] = set()  # grammars llama.cpp has read
        _OPEN.add(self)

    def close(self) -> None:
        """Free the context before the model it was made from (the bindings' own teardown at
        exit does not keep that order)."""
        self.binding.close()
        self.tokens.clear()
        _OPEN.discard(self)

    def version(self) -> str:
        return self.binding.version()

    # -- text and tokens ------------------------------------------------------------------

    def render(self, messages: Sequence[dict[str, str]], *, open_turn: bool = True) -> str:
        """The chat in the model's own template (llama.cpp's reading of the GGUF's template,
        ChatML for Qwen), with the assistant's turn opened."""
        return self.binding.render(messages, open_turn)

    def tokenize(self, text: str) -> list[int]:
        """The tokens of a rendered prompt (special tokens such as <|im_start|> read as such)."""
        return self.binding.tokenize(text)

    def piece(self, token: int) -> bytes:
        """The bytes one token stands for (a piece of a UTF-8 character, possibly)."""
        cached = self._pieces.get(token)
        if cached is None:
            cached = self._pieces[token] = self.binding.piece(token)
        return cached

    def check_grammar(self, text: str) -> None:
        """UserError, with llama.cpp's reason, unless the GBNF grammar parses against this
        model's vocabulary (llama.cpp would otherwise fail only once sampling starts)."""
        self.binding.sampler(Sampling(text)).close()

    # -- the KV cache ---------------------------------------------------------------------

    def _truncate(self, keep: int) -> None:
        """Keep the sequence's first `keep` tokens.  Where llama.cpp cannot drop part of a
        sequence (recurrent and hybrid models), it is cleared and the kept part read again."""
        if keep < len(self.tokens):
            kept = self.tokens[:keep]
            if self.binding.trim(keep):
                del self.tokens[keep:]
                return
            self.binding.clear()
            self.tokens.clear()
            self._decode(kept)

    def _decode(self, tokens: Sequence[int], *, every_logit: bool = False) -> None:
        """Append `tokens` to the sequence in batches of n_batch; logits for the last token
        only, or for each token of a short batch (a draft being checked)."""
        for start in range(0, len(tokens), self.n_batch):
            chunk = tokens[start : start + self.n_batch]
            last = start + len(chunk) >= len(tokens)
            wanted = [every_logit] * len(chunk)
            wanted[-1] = every_logit or last
            try:
                self.binding.decode(chunk, len(self.tokens), wanted)
            except LLMError:
                # The KV cache may hold part of the batch: forget it all rather than guess.
                self.binding.clear()
                self.tokens.clear()
                raise
            self.tokens.extend(chunk)

    def evaluate(self, tokens: Sequence[int]) -> None:
        """Make the KV cache hold exactly `tokens`, reading only what it does not hold yet."""
        if len(tokens) >= self.n_ctx:
            raise LLMContextOverflow(
                f"the prompt is {len(tokens)} tokens; the context holds {self.n_ctx}"
            )
        keep = common_prefix(self.tokens, tokens)
        self._truncate(keep)
        self._decode(tokens[keep:])

    def save_state(self) -> bytes | None:
        """The sequence's KV cache, as llama.cpp serializes it (no logits)."""
        return self.binding.save_state()

    def load_state(self, tokens: Sequence[int], payload: bytes) -> bool:
        """Replace the sequence with a saved state of `tokens`; False when it does not fit the
        context (the sequence untouched) or llama.cpp refuses it (another build, another model
        shape: the sequence is then empty)."""
        if len(tokens) >= self.n_ctx:
            return False
        self.binding.clear()
        self.tokens.clear()
        if not self.binding.load_state(payload):
            self.binding.clear()
            return False
        self.tokens.extend(tokens)
        return True

    # -- generation -----------------------------------------------------------------------

    def sampler(self, sampling: Sampling) -> Sampler:
        """Greedy decoding under a grammar is guided here (`guide.Guide`: the model's best
        token checked, not the vocabulary); sampling, and grammars the guide cannot read, go to
        llama.cpp's own sampler.  PLANWEAVE_GRAMMAR_GUIDE=0 sends every grammar there."""
        if (
            sampling.grammar
            and sampling.temperature <= 0
            and os.environ.get("PLANWEAVE_GRAMMAR_GUIDE", "1") != "0"
        ):
            if sampling.grammar not in self._checked:
                # llama.cpp's reading decides what is a grammar: the same errors either way.
                self.check_grammar(sampling.grammar)
                self._checked.add(sampling.grammar)
            try:
                guide = Guide.compile(sampling.grammar)
            except UnsupportedGrammar:
                pass
            else:
                return _Guided(self, guide)
        return self.binding.sampler(sampling)

    def generate(
        self,
        prompt: Sequence[int],
        sampling: Sampling,
        *,
        max_tokens: int | None = None,
        drafter: Drafter | None = None,
        outcome: dict[str, Any] | None = None,
    ) -> Iterator[int]:
        """The tokens the model writes after `prompt`, one at a time, until it ends its turn,
        `max_tokens` or the context is full (`outcome["finish_reason"]` says which).

        With a `drafter`, guessed continuations are checked in one batch each; a guess is kept
        only where the sampler, grammar included, picks the same token, so the text is what
        plain decoding writes (up to ties: batched logits differ in the last bits)."""
        outcome = {} if outcome is None else outcome
        self._read_prompt(prompt, outcome)
        binding = self.binding
        chain = self.sampler(sampling)
        limit = max_tokens if max_tokens is not None else self.n_ctx
        produced = 0
        try:
            if limit <= 0:
                outcome["finish_reason"] = "length"
                return
            pending = chain.sample(-1)
            while True:
                if binding.is_eog(pending):
                    return
                yield pending
                produced += 1
                if produced >= limit or len(self.tokens) + 2 >= self.n_ctx:
                    outcome["finish_reason"] = "length"
                    return
                draft, base = self._read_next(pending, drafter, limit - produced, outcome)
                pending = chain.sample(0 if draft else -1)
                kept = 0
                while kept < len(draft) and pending == draft[kept]:
                    kept += 1
                    outcome["accepted"] += 1
                    if binding.is_eog(pending):
                        self._truncate(base + kept)
                        return
                    yield pending
                    produced += 1
                    if produced >= limit:
                        self._truncate(base + kept)
                        outcome["finish_reason"] = "length"
                        return
                    pending = chain.sample(kept)
                self._truncate(base + 1 + kept)
        finally:
            if isinstance(chain, _Guided):
                outcome["refused"] = chain.refused
            chain.close()

    def _read_prompt(self, prompt: Sequence[int], outcome: dict[str, Any]) -> None:
        """Refuse a prompt that is empty or fills the context; set `outcome`'s counts going and
        make the KV cache hold `prompt`, its last token read again for its logits."""
        if len(prompt) >= self.n_ctx:
            raise LLMContextOverflow(
                f"the prompt is {len(prompt)} tokens; the context holds {self.n_ctx}"
            )
        if not prompt:
            raise LLMError("an empty prompt: the model has nothing to continue")
        outcome.update(finish_reason="stop", passes=0, drafted=0, accepted=0)
        # Read at least the prompt's last token, for its logits.
        keep = min(common_prefix(self.tokens, prompt), len(prompt) - 1)
        self._truncate(keep)
        self._decode(prompt[keep:])
        outcome["prompt_evaluated"] = len(prompt) - keep

    def _read_next(
        self, pending: int, drafter: Drafter | None, left: int, outcome: dict[str, Any]
    ) -> tuple[list[int], int]:
        """Read the sampled `pending` token and, with a `drafter`, a guess at what follows it (at
        most `left` tokens more) in one batch: the guess, and the sequence's length before."""
        # As far as plain decoding may go: it stops with the sequence at n_ctx - 2.
        room = min(left, self.n_ctx - len(self.tokens) - 3, self.n_batch - 1)
        draft = list(drafter([*self.tokens, pending]))[: max(0, room)] if drafter else []
        base = len(self.tokens)
        self._decode([pending, *draft], every_logit=bool(draft))
        outcome["passes"] += 1
        outcome["drafted"] += len(draft)
        return draft, base


class _Guided(Sampler):
    """Greedy decoding under a grammar: the model's best token when the grammar allows it,
    else the best one it allows (what llama.cpp's grammar sampler picks, at a fraction of the
    cost: most steps check one token, not the vocabulary)."""

    _FIRST_LOOK = 64  # tokens ranked before the whole vocabulary is sorted

    def __init__(self, engine: Engine, guide: Guide) -> None:
        self._engine = engine
        self._guide = guide
        self._state = guide.start()
        self._greedy = engine.binding.sampler(Sampling())
        self.refused = 0  # steps whose best token the grammar did not allow

    def sample(self, index: int) -> int:
        token = self._greedy.sample(index)
        after = self._after(token)
        if after is None:
            self.refused += 1
            token, after = self._best_allowed(index, token)
        self._state = after
        return token

    def _after(self, token: int) -> GuideState | None:
        if self._engine.binding.is_eog(token):
            return self._state if self._guide.can_end(self._state) else None
        return self._guide.step(self._state, self._engine.piece(token))

    def _best_allowed(self, index: int, refused: int) -> tuple[int, GuideState]:
        logits = self._engine.binding.logits(index)
        # Ties keep the lower token id first, as llama.cpp's greedy sampler does.
        first = heapq.nlargest(self._FIRST_LOOK, range(len(logits)), key=logits.__getitem__)

        def rest() -> Iterator[int]:
            # The whole vocabulary is sorted only if none of the first look is allowed.
            tried = set(first)
            ranked = sorted(range(len(logits)), key=logits.__getitem__, reverse=True)
            yield from (t for t in ranked if t not in tried)

        for token in itertools.chain(first, rest()):
            if token == refused:
                continue
            after = self._after(token)
            if after is not None:
                return token, after
        raise LLMError("the grammar allows no token here")

    def close(self) -> None:
        self._greedy.close()


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
