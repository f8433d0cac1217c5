"""The contract a llama.cpp binding meets for the embedded engine, and what bindings share.

A binding is one loaded GGUF model with one context (a single sequence, id 0): it renders a
chat in the model's template, tokenizes, decodes a batch at given positions with the logits
asked for, trims or clears the sequence, saves and loads its state, and builds a sampler
(greedy or at a temperature, under a GBNF grammar).  Everything else (which prefix the KV cache
holds, drafts, stop conditions) is the engine's (`engine.Engine`), the same for every binding.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ...errors import UserError

__all__ = [
    "Binding",
    "LoadOptions",
    "Sampler",
    "Sampling",
    "close_in_order",
    "configure_context",
    "grammar_errors",
    "importable",
]


@dataclass(frozen=True, slots=True)
class LoadOptions:
    n_ctx: int = 8192
    n_batch: int = 256
    n_threads: int = 2
    extra_buffers: bool = True
    flash_attention: bool | None = None  # None: llama.cpp's own choice


@dataclass(frozen=True, slots=True)
class Sampling:
    """How the next token is chosen: greedy (temperature 0, what planweave asks for) or
    sampled at a temperature with a seed, under an optional GBNF grammar."""

    grammar: str | None = None
    temperature: float = 0.0
    seed: int = 0


class Sampler(ABC):
    @abstractmethod
    def sample(self, index: int) -> int:
        """The token chosen from the logits of the last batch's `index`-th token (-1: its
        last), accepted into the sampler's state (the grammar advances)."""

    @abstractmethod
    def close(self) -> None: ...


class Binding(ABC):
    """One model and its context, through one Python binding of llama.cpp."""

    name: str
    n_ctx: int

    @abstractmethod
    def version(self) -> str:
        """The binding's and llama.cpp's versions: saved states are only offered to the same."""

    @abstractmethod
    def render(self, messages: Sequence[dict[str, str]], open_turn: bool) -> str: ...

    @abstractmethod
    def tokenize(self, text: str) -> list[int]: ...

    @abstractmethod
    def piece(self, token: int) -> bytes: ...

    @abstractmethod
    def is_eog(self, token: int) -> bool: ...

    @abstractmethod
    def decode(self, tokens: Sequence[int], start: int, logits: Sequence[bool]) -> None:
        """Put `tokens` at positions start.. of the sequence; LLMError when llama.cpp fails
        (the sequence may then hold part of them: the engine clears it)."""

    @abstractmethod
    def trim(self, keep: int) -> bool:
        """Drop the sequence's positions from `keep` on; False if llama.cpp cannot."""

    @abstractmethod
    def clear(self) -> None: ...

    @abstractmethod
    def save_state(self) -> bytes | None: ...

    @abstractmethod
    def load_state(self, payload: bytes) -> bool: ...

    @abstractmethod
    def logits(self, index: int) -> Sequence[float]:
        """The logits of the last batch's `index`-th token (-1: its last), one per token of
        the vocabulary."""

    @abstractmethod
    def sampler(self, sampling: Sampling) -> Sampler:
        """UserError, with llama.cpp's reason, when the grammar does not parse."""

    @abstractmethod
    def close(self) -> None:
        """Free the context, then the model."""


def importable(load: Callable[[], Any]) -> bool:
    """Whether a binding's `load` (its import and set-up) works: a package that is there but
    broken counts as absent."""
    try:
        load()
    except UserError:
        return False
    return True


def configure_context(params: Any, options: LoadOptions) -> Any:
    """llama.cpp's context parameters (the same struct in every binding) set from `options`:
    one sequence, the prompt read in batches of n_batch, no performance counters."""
    params.n_ctx = options.n_ctx
    params.n_batch = options.n_batch
    params.n_ubatch = options.n_batch
    params.n_seq_max = 1
    params.n_threads = options.n_threads
    params.n_threads_batch = options.n_threads
    params.no_perf = True
    if options.flash_attention is not None:
        params.flash_attn_type = 1 if options.flash_attention else 0
    return params


def close_in_order(holder: Any, *names: str) -> None:
    """Close `holder`'s handles in the order named (a context before its model) and forget
    them, so closing twice does nothing."""
    for name in names:
        held = getattr(holder, name)
        if held is not None:
            held.close()
            setattr(holder, name, None)


_STDERR_LOCK = threading.Lock()


@contextmanager
def grammar_errors() -> Iterator[list[str]]:
    """llama.cpp's reason when a grammar does not parse: it prints it to file descriptor 2 and
    gives the binding no more than a null sampler.  Anything else written meanwhile is written
    back."""
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
