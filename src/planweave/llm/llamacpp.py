"""llama.cpp, through the prebuilt Cython binding `cyllama` (`planweave[local]`).

The embedded backend needs little of llama.cpp: load a GGUF, render a chat with the model's own
template, read a prompt into the KV cache keeping the prefix it already holds, sample greedily
under a GBNF grammar, check drafted tokens in one batch, and save or restore the sequence's
state.  This module is that and nothing more; no other module touches the binding, and its
failures leave here as planweave's errors.

`cyllama` ships llama.cpp compiled into manylinux wheels (glibc 2.17 and later, x86_64 and
aarch64, macOS), so `pip install 'planweave[local]'` compiles nothing.
"""

from __future__ import annotations

import atexit
import os
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import LLMContextOverflow, LLMError, UserError

__all__ = ["Engine", "Sampling", "backend_version", "common_prefix", "import_backend"]

INSTALL_HINT = "the embedded model needs cyllama: pip install 'planweave[local]'"

_ERRORS_KEPT = 20
_LOG_LOCK = threading.Lock()
_ERRORS: list[str] = []
_STATE: dict[str, Any] = {}
_OPEN: weakref.WeakSet[Engine] = weakref.WeakSet()


def import_backend() -> Any:
    """The binding's llama.cpp module, with llama.cpp's log routed to `_last_errors`;
    UserError naming the extra to install when it is missing or does not load."""
    try:
        from cyllama.llama import llama_cpp  # type: ignore[import-untyped]
    except ImportError as exc:
        raise UserError(INSTALL_HINT) from exc
    with _LOG_LOCK:
        if "module" not in _STATE:

            def log(level: int, text: str) -> None:
                # Only errors are kept (llama.cpp says why a grammar did not parse, or a file
                # did not load); the rest is the loader's chatter.
                if level == 4 and text.strip():
                    _ERRORS.append(text.strip())
                    del _ERRORS[:-_ERRORS_KEPT]

            llama_cpp.set_log_callback(log)
            llama_cpp.llama_backend_init()
            atexit.register(_close_all)
            _STATE["module"] = llama_cpp
    return _STATE["module"]


def _close_all() -> None:
    for engine in list(_OPEN):
        engine.close()


def _last_errors() -> str:
    said = "; ".join(_ERRORS[-3:])
    _ERRORS.clear()
    return said


def backend_version() -> str:
    """The binding's version and the llama.cpp build it ships: states saved by one build are
    only offered to the same build."""
    try:
        import cyllama  # type: ignore[import-untyped]
    except ImportError as exc:
        raise UserError(INSTALL_HINT) from exc
    ll = import_backend()
    version = getattr(cyllama, "__version__", "?")
    return f"cyllama {version} ggml {ll.ggml_version()} {ll.ggml_commit()}"


class Sampling:
    """How the next token is chosen: greedy (temperature 0, what planweave asks for) or
    sampled at a temperature with a seed, under an optional GBNF grammar."""

    __slots__ = ("grammar", "seed", "temperature")

    def __init__(self, grammar: str | None = None, temperature: float = 0.0, seed: int = 0):
        self.grammar = grammar
        self.temperature = temperature
        self.seed = seed


Drafter = Callable[[Sequence[int]], Sequence[int]]

_STDERR_LOCK = threading.Lock()


@contextmanager
def _stderr_captured() -> Iterator[list[str]]:
    """What the C library writes to file descriptor 2 meanwhile, for its reason when a grammar
    does not parse (llama.cpp prints it there and returns no error the binding passes on).
    Anything else written meanwhile is written back."""
    said: list[str] = []
    with _STDERR_LOCK, tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            try:
                yield said
            finally:
                os.dup2(saved, 2)
        finally:
            os.close(saved)
        tmp.seek(0)
        text = tmp.read(1 << 16).decode("utf-8", "replace")
    if "error parsing grammar" in text:
        said.append(text.split("error parsing grammar:", 1)[1].strip().splitlines()[0])
    elif text:
        sys.stderr.write(text)


class Engine:
    """One GGUF model and one context (a single sequence, id 0).

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
    ) -> None:
        ll = import_backend()
        self._ll = ll
        self._model: Any = None
        self._ctx: Any = None
        self._batch: Any = None
        self.tokens: list[int] = []
        self.n_batch = n_batch
        params = ll.LlamaModelParams()
        params.n_gpu_layers = 0
        params.use_extra_bufts = extra_buffers
        try:
            self._model = ll.LlamaModel(os.fspath(path), params)
        except (ValueError, RuntimeError, OSError) as exc:
            raise LLMError(f"llama.cpp could not load {os.fspath(path)!r}: {exc}") from exc
        self._vocab = self._model.get_vocab()
        self._add_bos = bool(self._vocab.get_add_bos())
        self._template = self._model.get_default_chat_template() or None
        self._pieces: dict[int, bytes] = {}
        threads = n_threads or os.cpu_count() or 2
        cparams = ll.LlamaContextParams()
        cparams.n_ctx = n_ctx
        cparams.n_batch = n_batch
        cparams.n_ubatch = n_batch
        cparams.n_seq_max = 1
        cparams.n_threads = threads
        cparams.n_threads_batch = threads
        cparams.no_perf = True
        if flash_attention is not None:
            cparams.flash_attn_type = 1 if flash_attention else 0
        try:
            self._ctx = ll.LlamaContext(self._model, cparams)
        except (ValueError, RuntimeError, MemoryError) as exc:
            self.close()
            raise LLMError(f"llama.cpp could not create a context: {exc}") from exc
        self.n_ctx = int(self._ctx.n_ctx)
        self._batch = ll.LlamaBatch(n_tokens=n_batch, embd=0, n_seq_max=1)
        _OPEN.add(self)

    def close(self) -> None:
        """Free the context before the model it was made from (the binding's own teardown
        at exit does not keep that order)."""
        for name in ("_batch", "_ctx", "_model"):
            held = getattr(self, name)
            if held is not None:
                held.close()
                setattr(self, name, None)
        self.tokens.clear()
        _OPEN.discard(self)

    # -- text and tokens ------------------------------------------------------------------

    def render(self, messages: Sequence[dict[str, str]], *, open_turn: bool = True) -> str:
        """The chat in the model's own template (llama.cpp's reading of the GGUF's template,
        ChatML for Qwen), with the assistant's turn opened."""
        if self._template is None:
            raise LLMError("the model file has no chat template")
        chat = [self._ll.LlamaChatMessage(role=m["role"], content=m["content"]) for m in messages]
        try:
            text: str = self._model.chat_apply_template(self._template, chat, open_turn)
        except (ValueError, RuntimeError) as exc:
            raise LLMError(f"llama.cpp could not apply the model's chat template: {exc}") from exc
        return text

    def tokenize(self, text: str) -> list[int]:
        """The tokens of a rendered prompt (special tokens such as <|im_start|> read as such)."""
        tokens: list[int] = self._vocab.tokenize(text, self._add_bos, True)
        return tokens

    def piece(self, token: int) -> bytes:
        """The bytes one token stands for (a piece of a UTF-8 character, possibly)."""
        cached = self._pieces.get(token)
        if cached is None:
            text = self._vocab.token_to_piece(token, 0, False)
            cached = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
            self._pieces[token] = cached
        return cached

    def check_grammar(self, text: str) -> None:
        """UserError, with llama.cpp's reason, unless the GBNF grammar parses against this
        model's vocabulary (llama.cpp would otherwise fail only once sampling starts)."""
        self._sampler(Sampling(text)).close()

    # -- the KV cache ---------------------------------------------------------------------

    def _truncate(self, keep: int) -> None:
        if keep < len(self.tokens):
            if not self._ctx.memory_seq_rm(0, keep, -1):
                self._ctx.kv_cache_clear()
                keep = 0
            del self.tokens[keep:]

    def _decode(self, tokens: Sequence[int], *, every_logit: bool = False) -> None:
        """Append `tokens` to the sequence in batches of n_batch; logits for the last token
        only, or for each token of a short batch (a draft being checked)."""
        batch = self._batch
        for start in range(0, len(tokens), self.n_batch):
            chunk = tokens[start : start + self.n_batch]
            last = start + len(chunk) >= len(tokens)
            past = len(self.tokens)
            batch.clear()
            for i, token in enumerate(chunk):
                batch.add(token, past + i, [0], every_logit or (last and i == len(chunk) - 1))
            try:
                self._ctx.decode(batch)
            except (ValueError, RuntimeError, InterruptedError) as exc:
                # The KV cache may hold part of the batch: forget it all rather than guess.
                self._ctx.kv_cache_clear()
                self.tokens.clear()
                raise LLMError(f"llama.cpp failed to decode: {exc}") from exc
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
        try:
            payload = self._ctx.get_state_seq_data(0)
        except (ValueError, RuntimeError, MemoryError):
            return None
        return bytes(payload) if payload else None

    def load_state(self, tokens: Sequence[int], payload: bytes) -> bool:
        """Replace the sequence with a saved state of `tokens`; False (and an empty sequence)
        when llama.cpp refuses it (another build, another model shape)."""
        if len(tokens) >= self.n_ctx:
            return False
        self._ctx.kv_cache_clear()
        self.tokens.clear()
        try:
            self._ctx.set_state_seq_data(payload, 0)
        except (ValueError, RuntimeError):
            self._ctx.kv_cache_clear()
            return False
        self.tokens.extend(tokens)
        return True

    # -- generation -----------------------------------------------------------------------

    def _sampler(self, sampling: Sampling) -> Any:
        ll = self._ll
        chain = ll.LlamaSampler(ll.LlamaSamplerChainParams())
        if sampling.grammar:
            with _stderr_captured() as said:
                chain.add_grammar(self._vocab, sampling.grammar, "root")
            if said:
                chain.close()
                raise UserError(f"the grammar does not parse: {said[0]}")
        if sampling.temperature > 0:
            chain.add_temp(sampling.temperature)
            chain.add_dist(sampling.seed & 0xFFFFFFFF)
        else:
            chain.add_greedy()
        return chain

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
        if len(prompt) >= self.n_ctx:
            raise LLMContextOverflow(
                f"the prompt is {len(prompt)} tokens; the context holds {self.n_ctx}"
            )
        outcome = {} if outcome is None else outcome
        outcome.update(finish_reason="stop", passes=0, drafted=0, accepted=0)
        # Read at least the prompt's last token, for its logits.
        keep = min(common_prefix(self.tokens, prompt), len(prompt) - 1)
        self._truncate(keep)
        self._decode(prompt[keep:])
        outcome["prompt_evaluated"] = len(prompt) - keep
        ctx, vocab = self._ctx, self._vocab
        chain = self._sampler(sampling)
        limit = max_tokens if max_tokens is not None else self.n_ctx
        produced = 0
        try:
            pending = chain.sample(ctx, -1)
            while True:
                if vocab.is_eog(pending):
                    return
                yield pending
                produced += 1
                if produced >= limit or len(self.tokens) + 2 >= self.n_ctx:
                    outcome["finish_reason"] = "length"
                    return
                room = min(limit - produced, self.n_ctx - len(self.tokens) - 2, self.n_batch - 1)
                draft = list(drafter([*self.tokens, pending]))[:room] if drafter else []
                base = len(self.tokens)
                self._decode([pending, *draft], every_logit=bool(draft))
                outcome["passes"] += 1
                outcome["drafted"] += len(draft)
                pending = chain.sample(ctx, 0 if draft else -1)
                kept = 0
                while kept < len(draft) and pending == draft[kept]:
                    kept += 1
                    outcome["accepted"] += 1
                    if vocab.is_eog(pending):
                        self._truncate(base + kept)
                        return
                    yield pending
                    produced += 1
                    if produced >= limit:
                        self._truncate(base + kept)
                        outcome["finish_reason"] = "length"
                        return
                    pending = chain.sample(ctx, kept)
                self._truncate(base + 1 + kept)
        finally:
            chain.close()


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
