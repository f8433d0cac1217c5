"""llama.cpp through `llama-cpp-python` (`planweave[local-build]`): pip compiles it on install
(8-17 minutes on 2 cores), for the machine's own CPU, which reads prompts about twice as fast
as the prebuilt `cyllama` where the CPU has AVX-512.  Chosen over cyllama when installed."""

from __future__ import annotations

import ctypes
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

NAME = "llama-cpp-python"
INSTALL = "pip install 'planweave[local-build]'"


@functools.cache  # a failed import is not cached: installing the extra later works
def _module() -> Any:
    try:
        import llama_cpp  # type: ignore[import-not-found,unused-ignore]
        from llama_cpp import _internals  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise UserError(f"this binding needs llama-cpp-python: {INSTALL}") from exc
    from llama_cpp import _logger  # type: ignore[import-not-found,unused-ignore]

    _logger.set_verbose(False)  # llama.cpp's chatter; errors still print
    llama_cpp.llama_backend_init()
    return llama_cpp, _internals


def available() -> bool:
    return importable(_module)


class _Sampler(Sampler):
    def __init__(self, lib: Any, chain: Any, ctx: Any) -> None:
        self._lib, self._chain, self._ctx = lib, chain, ctx

    def sample(self, index: int) -> int:
        return int(self._lib.llama_sampler_sample(self._chain, self._ctx, index))

    def close(self) -> None:
        if self._chain is not None:
            self._lib.llama_sampler_free(self._chain)
            self._chain = None


class LlamaCppPythonBinding(Binding):
    name = NAME

    def __init__(self, path: str | os.PathLike[str], options: LoadOptions) -> None:
        lib, internals = _module()
        self._lib = lib
        self._model: Any = None
        self._ctx: Any = None
        self._batch: Any = None
        params = lib.llama_model_default_params()
        params.n_gpu_layers = 0
        params.use_extra_bufts = options.extra_buffers
        try:
            self._model = internals.LlamaModel(
                path_model=os.fspath(path), params=params, verbose=False
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise LLMError(f"llama.cpp could not load {os.fspath(path)!r}: {exc}") from exc
        self._vocab = self._model.vocab
        self._n_vocab = int(lib.llama_vocab_n_tokens(self._vocab))
        self._add_bos = bool(self._model.add_bos_token())
        template = lib.llama_model_chat_template(self._model.model, None)
        self._template: bytes | None = template or None
        self._parsed: set[str] = set()  # grammars llama.cpp accepted: not checked again
        cparams = lib.llama_context_default_params()
        configure_context(cparams, options)
        try:
            self._ctx = internals.LlamaContext(model=self._model, params=cparams, verbose=False)
        except (ValueError, RuntimeError, MemoryError) as exc:
            self.close()
            raise LLMError(f"llama.cpp could not create a context: {exc}") from exc
        self.n_ctx = int(self._ctx.n_ctx())
        self._batch = internals.LlamaBatch(
            n_tokens=options.n_batch, embd=0, n_seq_max=1, verbose=False
        )

    def version(self) -> str:
        return f"llama-cpp-python {self._lib.__version__}"

    def render(self, messages: Sequence[dict[str, str]], open_turn: bool) -> str:
        lib = self._lib
        if self._template is None:
            raise LLMError("the model file has no chat template")
        chat = (lib.llama_chat_message * len(messages))()
        keep = []
        for i, m in enumerate(messages):
            role, content = m["role"].encode(), m["content"].encode()
            keep += [role, content]
            chat[i].role, chat[i].content = role, content
        size = 2 * sum(len(c) for c in keep) + 256
        for _ in range(2):
            buf = ctypes.create_string_buffer(size)
            n = lib.llama_chat_apply_template(
                self._template, chat, len(messages), open_turn, buf, size
            )
            if n < 0:
                raise LLMError("llama.cpp does not know the model's chat template")
            if n <= size:
                return buf.raw[:n].decode("utf-8")
            size = n + 1
        raise LLMError("the chat template's output did not fit")

    def tokenize(self, text: str) -> list[int]:
        tokens: list[int] = self._model.tokenize(text.encode("utf-8"), self._add_bos, True)
        return tokens

    def piece(self, token: int) -> bytes:
        buf = ctypes.create_string_buffer(64)
        n = self._lib.llama_token_to_piece(self._vocab, token, buf, 64, 0, False)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = self._lib.llama_token_to_piece(self._vocab, token, buf, -n, 0, False)
        return buf.raw[: max(0, n)]

    def is_eog(self, token: int) -> bool:
        return bool(self._lib.llama_vocab_is_eog(self._vocab, token))

    def decode(self, tokens: Sequence[int], start: int, logits: Sequence[bool]) -> None:
        batch = self._batch.batch
        batch.n_tokens = len(tokens)
        for i, token in enumerate(tokens):
            batch.token[i] = token
            batch.pos[i] = start + i
            batch.seq_id[i][0] = 0
            batch.n_seq_id[i] = 1
            batch.logits[i] = logits[i]
        code = self._lib.llama_decode(self._ctx.ctx, batch)
        if code != 0:
            raise LLMError(f"llama.cpp failed to decode (code {code})")

    def trim(self, keep: int) -> bool:
        return bool(self._ctx.kv_cache_seq_rm(0, keep, -1))

    def clear(self) -> None:
        self._ctx.kv_cache_clear()

    def save_state(self) -> bytes | None:
        lib, ctx = self._lib, self._ctx.ctx
        size = lib.llama_state_seq_get_size(ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = lib.llama_state_seq_get_data(ctx, buffer, size, 0)
        if written == 0 or written > size:
            return None
        return bytes(memoryview(buffer)[:written])

    def load_state(self, payload: bytes) -> bool:
        buffer = (ctypes.c_uint8 * len(payload)).from_buffer_copy(payload)
        done = self._lib.llama_state_seq_set_data(self._ctx.ctx, buffer, len(payload), 0)
        return bool(done == len(payload))

    def logits(self, index: int) -> Sequence[float]:
        row = self._lib.llama_get_logits_ith(self._ctx.ctx, index)
        if not row:
            raise LLMError(f"llama.cpp has no logits for token {index}")
        values: list[float] = row[: self._n_vocab]
        return values

    def sampler(self, sampling: Sampling) -> Sampler:
        lib = self._lib
        chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        if sampling.grammar:
            reasons: list[str] = []
            if sampling.grammar in self._parsed:
                grammar = lib.llama_sampler_init_grammar(
                    self._vocab, sampling.grammar.encode(), b"root"
                )
            else:
                grammar, reasons = self._checked(sampling.grammar)
            if not grammar:
                lib.llama_sampler_free(chain)
                reason = reasons[0] if reasons else "llama.cpp gave no reason"
                raise UserError(f"the grammar does not parse: {reason}")
            self._parsed.add(sampling.grammar)
            lib.llama_sampler_chain_add(chain, grammar)
        if sampling.temperature > 0:
            lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_temp(sampling.temperature))
            lib.llama_sampler_chain_add(
                chain, lib.llama_sampler_init_dist(sampling.seed & 0xFFFFFFFF)
            )
        else:
            lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_greedy())
        return _Sampler(lib, chain, self._ctx.ctx)

    def _checked(self, grammar: str) -> tuple[Any, list[str]]:
        """The grammar's sampler (None if llama.cpp refused it) and llama.cpp's reasons: what
        its parser prints to stderr and its error log (no root rule, left recursion), which
        llama-cpp-python's own log handler would hide."""
        from llama_cpp import _logger

        lib = self._lib
        logged: list[str] = []

        @lib.llama_log_callback  # type: ignore[untyped-decorator,unused-ignore]
        def log(level: int, text: bytes, _data: Any) -> None:
            if level == 4 and text:  # GGML_LOG_LEVEL_ERROR
                logged.append(text.decode("utf-8", "replace").strip())

        with grammar_errors() as printed:
            lib.llama_log_set(log, ctypes.c_void_p(0))
            try:
                sampler = lib.llama_sampler_init_grammar(self._vocab, grammar.encode(), b"root")
            finally:
                lib.llama_log_set(_logger.llama_log_callback, ctypes.c_void_p(0))
        return sampler, [*printed, *(line for line in logged if line)]

    def close(self) -> None:
        close_in_order(self, "_batch", "_ctx", "_model")
