"""llama.cpp through `cyllama`, a Cython binding with llama.cpp compiled into manylinux wheels
(glibc 2.17 and later): `pip install 'planweave[local]'` compiles nothing.  Its kernels stop at
AVX2, so a prompt reads at about half the speed of a build for the machine's own CPU
(`llama_cpp_python`, `planweave[local-build]`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

from ...errors import LLMError, UserError
from .base import (
    Binding,
    LoadOptions,
    Sampler,
    Sampling,
    close_in_order,
    configure_context,
    grammar_errors,
    importable,
)

NAME = "cyllama"
INSTALL = "pip install 'planweave[local]'"


@functools.cache  # a failed import is not cached: installing the extra later works
def _module() -> Any:
    try:
        from cyllama.llama import llama_cpp  # type: ignore[import-untyped]
    except ImportError as exc:
        raise UserError(f"the embedded model needs cyllama: {INSTALL}") from exc
    llama_cpp.disable_logging()  # the loader's chatter; errors come back as exceptions
    llama_cpp.llama_backend_init()
    return llama_cpp


def available() -> bool:
    return importable(_module)


@functools.cache
def _model_class(ll: Any) -> Any:
    """cyllama's model class, with the `n_vocab` its context's `get_logits_ith` reads (0.2.18
    asks the model for it and the model has none)."""
    if hasattr(ll.LlamaModel, "n_vocab"):
        return ll.LlamaModel

    class Model(ll.LlamaModel):  # type: ignore[misc]
        @property
        def n_vocab(self) -> int:
            return int(self.get_vocab().n_vocab)

    return Model


class _Sampler(Sampler):
    def __init__(self, chain: Any, ctx: Any) -> None:
        self._chain, self._ctx = chain, ctx

    def sample(self, index: int) -> int:
        token: int = self._chain.sample(self._ctx, index)
        return token

    def close(self) -> None:
        self._chain.close()


class CyllamaBinding(Binding):
    name = NAME

    def __init__(self, path: str | os.PathLike[str], options: LoadOptions) -> None:
        ll = _module()
        self._ll = ll
        self._model: Any = None
        self._ctx: Any = None
        self._batch: Any = None
        params = ll.LlamaModelParams()
        params.n_gpu_layers = 0
        params.use_extra_bufts = options.extra_buffers
        try:
            self._model = _model_class(ll)(os.fspath(path), params)
        except (ValueError, RuntimeError, OSError) as exc:
            raise LLMError(f"llama.cpp could not load {os.fspath(path)!r}: {exc}") from exc
        self._vocab = self._model.get_vocab()
        self._add_bos = bool(self._vocab.get_add_bos())
        self._template = self._model.get_default_chat_template() or None
        self._parsed: set[str] = set()  # grammars llama.cpp accepted: not checked again
        cparams = ll.LlamaContextParams()
        configure_context(cparams, options)
        try:
            self._ctx = ll.LlamaContext(self._model, cparams)
        except (ValueError, RuntimeError, MemoryError) as exc:
            self.close()
            raise LLMError(f"llama.cpp could not create a context: {exc}") from exc
        self.n_ctx = int(self._ctx.n_ctx)
        self._batch = ll.LlamaBatch(n_tokens=options.n_batch, embd=0, n_seq_max=1)

    def version(self) -> str:
        import cyllama  # type: ignore[import-untyped]

        ll = self._ll
        return f"cyllama {getattr(cyllama, '__version__', '?')} ggml {ll.ggml_commit()}"

    def render(self, messages: Sequence[dict[str, str]], open_turn: bool) -> str:
        if self._template is None:
            raise LLMError("the model file has no chat template")
        chat = [self._ll.LlamaChatMessage(role=m["role"], content=m["content"]) for m in messages]
        try:
            text: str = self._model.chat_apply_template(self._template, chat, open_turn)
        except (ValueError, RuntimeError) as exc:
            raise LLMError(f"llama.cpp could not apply the model's chat template: {exc}") from exc
        return text

    def tokenize(self, text: str) -> list[int]:
        tokens: list[int] = self._vocab.tokenize(text, self._add_bos, True)
        return tokens

    def piece(self, token: int) -> bytes:
        text = self._vocab.token_to_piece(token, 0, False)
        return text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")

    def is_eog(self, token: int) -> bool:
        return bool(self._vocab.is_eog(token))

    def decode(self, tokens: Sequence[int], start: int, logits: Sequence[bool]) -> None:
        batch = self._batch
        batch.clear()
        for i, token in enumerate(tokens):
            batch.add(token, start + i, [0], logits[i])
        try:
            self._ctx.decode(batch)
        except (ValueError, RuntimeError, InterruptedError) as exc:
            raise LLMError(f"llama.cpp failed to decode: {exc}") from exc

    def trim(self, keep: int) -> bool:
        return bool(self._ctx.memory_seq_rm(0, keep, -1))

    def clear(self) -> None:
        self._ctx.kv_cache_clear()

    def save_state(self) -> bytes | None:
        try:
            payload = self._ctx.get_state_seq_data(0)
        except (ValueError, RuntimeError, MemoryError):
            return None
        return bytes(payload) if payload else None

    def load_state(self, payload: bytes) -> bool:
        try:
            self._ctx.set_state_seq_data(payload, 0)
        except (ValueError, RuntimeError):
            return False
        return True

    def logits(self, index: int) -> Sequence[float]:
        try:
            row: list[float] = self._ctx.get_logits_ith(index)
        except ValueError as exc:
            raise LLMError(f"llama.cpp has no logits for token {index}: {exc}") from exc
        return row

    def sampler(self, sampling: Sampling) -> Sampler:
        ll = self._ll
        chain = ll.LlamaSampler(ll.LlamaSamplerChainParams())
        if sampling.grammar:
            if sampling.grammar in self._parsed:
                chain.add_grammar(self._vocab, sampling.grammar, "root")
            else:
                reasons = self._add_checked(chain, sampling.grammar)
                if reasons:
                    chain.close()
                    raise UserError(f"the grammar does not parse: {reasons[0]}")
                self._parsed.add(sampling.grammar)
        if sampling.temperature > 0:
            chain.add_temp(sampling.temperature)
            chain.add_dist(sampling.seed & 0xFFFFFFFF)
        else:
            chain.add_greedy()
        return _Sampler(chain, self._ctx)

    def _add_checked(self, chain: Any, grammar: str) -> list[str]:
        """Add the grammar to `chain`, with llama.cpp's reasons if it refused it.  cyllama adds
        whatever llama.cpp returned, a null sampler included (sampling then crashes the
        process), so the reasons are read from llama.cpp's error log (no root rule, left
        recursion) and from what its parser prints to stderr (a syntax error)."""
        ll = self._ll
        logged: list[str] = []

        def log(level: int, text: str) -> None:
            if level == 4 and text.strip():  # GGML_LOG_LEVEL_ERROR
                logged.append(text.strip())

        with grammar_errors() as printed:
            ll.set_log_callback(log)
            try:
                chain.add_grammar(self._vocab, grammar, "root")
            finally:
                ll.disable_logging()
        return printed + logged

    def close(self) -> None:
        close_in_order(self, "_batch", "_ctx", "_model")
