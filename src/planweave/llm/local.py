"""The embedded backend: a GGUF model run in-process by llama.cpp (`planweave[local]`).

The model is loaded once per process and shared by every run; one model means one stream at a
time, so calls are serialized by a lock while tools keep running in parallel.  Tokens are pulled
from llama.cpp in a worker thread one at a time, so the event loop never blocks and a consumer
that stops early (the planner after `join()`) stops generation at the next token.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from ..errors import LLMContextOverflow, LLMError, UserError
from .base import LLM, Delta, LLMRequest, Usage
from .models import DEFAULT_MODEL, MODELS, cache_dir, resolve_model
from .prefix_cache import PrefixReuse, PrefixStore, model_namespace, resolve_prefix_cache_mb
from .speculative import PromptLookup, speculative_llama

__all__ = ["LoadReport", "LocalLLM", "check_grammar"]

Progress = Callable[[str, int, int], None]


@dataclass(slots=True)
class _Loaded:
    llama: Any
    lock: threading.Lock
    load_s: float
    grammars: dict[str, Any]


_MODELS: dict[tuple[str, int, int], _Loaded] = {}
_MODELS_LOCK = threading.Lock()
DEFAULT_DRAFT_TOKENS = 0  # measured: a 3-6 % gain on 2 cores (README); on for more cores


@dataclass(frozen=True, slots=True)
class LoadReport:
    path: Path
    assemble_s: float
    load_s: float
    cached: bool


def _extra_buffers_crash() -> bool:
    """Whether to load weights without llama.cpp's extra CPU buffer types (AMX tiles,
    repacked weights).  With them, llama-cpp-python 0.3.36 segfaults on the first prompt of
    more than one token on a virtual Xeon with AMX (seen on this project's machines), so they
    are left out where the CPU reports AMX; PLANWEAVE_LLAMA_EXTRA_BUFFERS=1 (or 0) decides."""
    chosen = os.environ.get("PLANWEAVE_LLAMA_EXTRA_BUFFERS")
    if chosen in ("0", "1"):
        return chosen == "0"
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return False
    return "amx_tile" in flags.split()


@contextmanager
def _model_params(llama_cpp: Any, *, extra_buffers: bool) -> Iterator[None]:
    """Load with or without extra buffer types: `Llama` takes no argument for it, so its
    default model parameters are adjusted while it loads (under the model lock)."""
    if extra_buffers:
        yield
        return
    low = llama_cpp.llama_cpp
    original = low.llama_model_default_params

    def params() -> Any:
        chosen = original()
        chosen.use_extra_bufts = False
        return chosen

    low.llama_model_default_params = params
    try:
        yield
    finally:
        low.llama_model_default_params = original


def resolve_draft_tokens(chosen: int | None) -> int:
    """How many tokens prompt-lookup decoding may guess ahead: `chosen`, else
    PLANWEAVE_DRAFT_TOKENS, else the default; 0 turns drafting off."""
    if chosen is None:
        raw = os.environ.get("PLANWEAVE_DRAFT_TOKENS", "").strip()
        try:
            chosen = int(raw) if raw else DEFAULT_DRAFT_TOKENS
        except ValueError:
            raise UserError(f"PLANWEAVE_DRAFT_TOKENS must be a whole number, not {raw!r}") from None
    if not 0 <= chosen <= 32:
        raise UserError(f"draft tokens must be between 0 and 32, not {chosen}")
    return chosen


def _import_llama() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise UserError(
            "the embedded model needs llama-cpp-python: pip install 'planweave[local]'"
        ) from exc
    return llama_cpp


def _bounded_cache(llama_cpp: Any, capacity: int) -> Any:
    """llama-cpp-python's RAM prompt cache, counting every byte a saved state holds.

    Its own count leaves out the copy of the logits buffer each state carries (n_batch x
    vocabulary floats, 150 MB and more for Qwen), so its capacity was no bound at all: a long
    evaluation grew past 17 GB.  Counting all of it keeps the cache within `capacity`."""

    class BoundedRAMCache(llama_cpp.LlamaRAMCache):  # type: ignore[misc]
        @property
        def cache_size(self) -> int:
            return sum(
                s.llama_state_size + s.scores.nbytes + s.input_ids.nbytes
                for s in self.cache_state.values()
            )

    return BoundedRAMCache(capacity_bytes=capacity)


def check_grammar(llama: Any, text: str) -> None:
    """Parse a GBNF grammar against the model's vocabulary; raise UserError when it does not
    parse (llama.cpp would otherwise fail only once sampling starts)."""
    llama_cpp = _import_llama()
    sampler = llama_cpp.llama_sampler_init_grammar(llama._model.vocab, text.encode(), b"root")
    if not sampler:
        raise UserError("the grammar does not parse (llama.cpp printed the reason on stderr)")
    llama_cpp.llama_sampler_free(sampler)


def _fixed_messages(request: LLMRequest) -> int:
    """How many leading messages are the same in every request of its kind: the system message
    (instructions, tools and, for planner and ReAct, the worked examples), and for the joiner
    also the worked exchange that follows it as chat history (`prompts.joiner_messages`)."""
    return len(request.messages) - 1 if request.purpose == "joiner" else 1


class LocalLLM(LLM):
    """A GGUF model in-process.  `model` is a registry name (see `planweave.llm.models.MODELS`)
    or a path to a GGUF file.  `grammar=True` constrains decoding with the request's grammar.

    `prefix_cache_mb` bounds the processed system prompts kept on disk for later processes
    (`planweave.llm.prefix_cache`); None reads `PLANWEAVE_PREFIX_CACHE_MB` (default 1024), 0
    turns it off.  `prompt_cache_mb` bounds the in-process RAM cache of whole prompts."""

    embedded = True

    def __init__(
        self,
        model: str | os.PathLike[str] = DEFAULT_MODEL,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        grammar: bool = True,
        seed: int = 0,
        prompt_cache_mb: int = 1024,
        prefix_cache_mb: int | None = None,
        draft_tokens: int | None = None,
        prefix_cache_dir: os.PathLike[str] | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.model = str(model) if str(model) in MODELS else Path(model).name
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 2
        self.use_grammar = grammar
        self.seed = seed
        self.prompt_cache_mb = prompt_cache_mb
        self.prefix_cache_mb = resolve_prefix_cache_mb(prefix_cache_mb)
        self.draft_tokens = resolve_draft_tokens(draft_tokens)
        self._prefix_dir = Path(prefix_cache_dir) if prefix_cache_dir is not None else None
        self._prefix: PrefixReuse | None = None
        self._model_arg = model
        self._progress = progress
        self._loaded: _Loaded | None = None
        self.report: LoadReport | None = None

    def load(self) -> LoadReport:
        """Assemble (first use only) and load the model; later calls return at once."""
        if self.report is not None:
            return self.report
        began = time.monotonic()
        progress = self._progress

        def assembling(done: int, total: int) -> None:
            if progress is not None:
                progress("assembling", done, total)

        path = resolve_model(self._model_arg, progress=assembling)
        assembled = time.monotonic()
        key = (str(path.resolve()), self.n_ctx, self.draft_tokens)
        with _MODELS_LOCK:
            loaded = _MODELS.get(key)
            cached = loaded is not None
            if loaded is None:
                if progress is not None:
                    progress("loading", 0, 1)
                llama_cpp = _import_llama()
                start = time.monotonic()
                drafting = self.draft_tokens > 0
                cls = speculative_llama(llama_cpp) if drafting else llama_cpp.Llama
                with _model_params(llama_cpp, extra_buffers=not _extra_buffers_crash()):
                    llama = cls(
                        model_path=str(path),
                        draft_model=PromptLookup(self.draft_tokens) if drafting else None,
                        n_ctx=self.n_ctx,
                        n_threads=self.n_threads,
                        n_threads_batch=self.n_threads,
                        n_batch=256,  # also sizes the logits copy in every cached prompt state
                        seed=self.seed,
                        verbose=False,
                    )
                if self.prompt_cache_mb > 0:
                    # Planner and joiner prompts alternate; keeping both prefixes' states in RAM
                    # saves re-reading the long planner prompt on every question (about 4x here).
                    llama.set_cache(_bounded_cache(llama_cpp, self.prompt_cache_mb << 20))
                loaded = _Loaded(llama, threading.Lock(), time.monotonic() - start, {})
                _MODELS[key] = loaded
                if progress is not None:
                    progress("loading", 1, 1)
        self._loaded = loaded
        if self.prefix_cache_mb > 0:
            llama_cpp = _import_llama()
            store = PrefixStore(
                self._prefix_dir or cache_dir() / "prefix-states",
                model_namespace(path, llama_cpp.__version__),
                self.prefix_cache_mb << 20,
            )
            reuse = PrefixReuse(loaded.llama, store)
            self._prefix = reuse if reuse.active else None
        self.report = LoadReport(path, assembled - began, 0.0 if cached else loaded.load_s, cached)
        return self.report

    def _grammar(self, loaded: _Loaded, text: str) -> Any:
        compiled = loaded.grammars.get(text)
        if compiled is None:
            check_grammar(loaded.llama, text)
            compiled = _import_llama().LlamaGrammar.from_string(text, verbose=False)
            loaded.grammars[text] = compiled
        return compiled

    async def stream(self, request: LLMRequest) -> AsyncGenerator[Delta, None]:
        if self._loaded is None:
            await anyio.to_thread.run_sync(self.load)
        loaded = self._loaded
        assert loaded is not None
        messages = [m.to_dict() for m in request.messages]
        await anyio.to_thread.run_sync(loaded.lock.acquire)
        chunks: Iterator[Any] | None = None
        produced = 0
        try:
            grammar = (
                self._grammar(loaded, request.grammar)
                if self.use_grammar and request.grammar
                else None
            )

            def start() -> Iterator[Any]:
                if self._prefix is not None:
                    self._prefix.prepare(messages, _fixed_messages(request))
                return iter(
                    loaded.llama.create_chat_completion(
                        messages=messages,
                        stream=True,
                        stop=request.stop or None,
                        max_tokens=request.max_tokens,
                        temperature=request.temperature,
                        seed=self.seed,
                        grammar=grammar,
                    )
                )

            try:
                chunks = await anyio.to_thread.run_sync(start)
                while True:
                    chunk = await anyio.to_thread.run_sync(next, chunks, None)
                    if chunk is None:
                        break
                    choice = chunk["choices"][0]
                    text = choice["delta"].get("content")
                    if text:
                        produced += 1
                        yield Delta(text=text)
                    if choice.get("finish_reason"):
                        yield Delta(finish_reason=choice["finish_reason"])
            except ValueError as exc:
                if "context" in str(exc).lower():
                    raise LLMContextOverflow(f"prompt too long for {self.model}: {exc}") from exc
                raise LLMError(f"the embedded model failed: {exc}") from exc
            total = int(loaded.llama.n_tokens)
            yield Delta(usage=Usage(max(0, total - produced), produced))
        finally:
            with anyio.CancelScope(shield=True):
                if chunks is not None and hasattr(chunks, "close"):
                    await anyio.to_thread.run_sync(chunks.close)
            loaded.lock.release()
