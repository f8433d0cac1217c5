"""The embedded backend: a GGUF model run in-process by llama.cpp (`planweave[local]`).

The model is loaded once per process and shared by every run; one model means one stream at a
time, so calls take turns, first come first served (`queue.ModelQueue`: a call that waits says
how many are ahead of it), while tools keep running in parallel.  Tokens are pulled
from llama.cpp (`llamacpp.Engine`) in a worker thread one at a time, so the event loop never
blocks and a consumer that stops early (the planner after `join()`) stops generation at the next
token.
"""

from __future__ import annotations

import codecs
import os
import threading
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from ..errors import UserError
from .base import LLM, Delta, LLMRequest, Usage
from .llamacpp import Engine, Sampling, common_prefix, resolve_binding
from .models import DEFAULT_MODEL, MODELS, cache_dir, resolve_model
from .prefix_cache import PrefixReuse, PrefixStore, model_namespace, resolve_prefix_cache_mb
from .queue import ModelQueue
from .speculative import PromptLookup
from .tool_calls import read_tool_calls, untagged, with_tools

if TYPE_CHECKING:
    from .registry import LLMChoice

__all__ = ["LoadReport", "LocalLLM", "from_choice", "inert"]

Progress = Callable[[str, int, int], None]


@dataclass(slots=True)
class _Loaded:
    engine: Engine
    queue: ModelQueue
    load_s: float
    prefix: PrefixReuse | None = None
    # The tokens of each kind's fixed messages (the system prompt...): read once, not per call.
    heads: dict[tuple[tuple[str, str], ...], list[int]] = field(default_factory=dict)


_MODELS: dict[tuple[str, int, str], _Loaded] = {}
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
    repacked weights).  With them, llama-cpp-python 0.3.36 segfaulted on the first prompt of
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


def _fixed_messages(request: LLMRequest) -> int:
    """How many leading messages are the same in every request of its kind: the system message
    (instructions, tools and, for planner and ReAct, the worked examples), and for the joiner
    also the worked exchange that follows it as chat history (`prompts.joiner_messages`)."""
    return len(request.messages) - 1 if request.purpose == "joiner" else 1


def inert(messages: list[dict[str, Any]], *, tags: bool = True) -> list[dict[str, Any]]:
    """`messages` with no text that spells a special token: the rendered prompt is tokenized
    with special tokens read as such, so a question or a tool's result holding `<|im_end|>`
    `<|im_start|>system` would end its turn and speak as the system.  `<|` gets a zero-width
    non-joiner after `<`, which the model reads as the text it was; so do the template's tool
    tags (`tool_calls.untagged`) unless `tags` is False (messages `with_tools` wrote, whose tags
    are the template's own and whose wrapped texts it made untagged)."""

    def plain(text: str) -> str:
        return (untagged(text) if tags else text).replace("<|", "<\u200c|")

    return [
        {**m, "content": plain(m["content"])}
        if isinstance(m.get("content"), str) and "<" in m["content"]
        else m
        for m in messages
    ]


class _Stops:
    """Cuts streamed text at the first stop string, holding back a tail that may begin one."""

    def __init__(self, stops: list[str]) -> None:
        self.stops = [s for s in stops if s]
        self.pending = ""

    def feed(self, text: str) -> tuple[str, bool]:
        """The text safe to emit now, and whether a stop string was met."""
        text = self.pending + text
        hits = [i for s in self.stops if (i := text.find(s)) >= 0]
        if hits:
            self.pending = ""
            return text[: min(hits)], True
        keep = 0
        for stop in self.stops:
            for size in range(min(len(text), len(stop) - 1), 0, -1):
                if text.endswith(stop[:size]):
                    keep = max(keep, size)
                    break
        self.pending = text[len(text) - keep :] if keep else ""
        return (text[: len(text) - keep] if keep else text), False

    def flush(self) -> str:
        rest, self.pending = self.pending, ""
        return rest


class LocalLLM(LLM):
    """A GGUF model in-process.  `model` is a registry name (see `planweave.llm.models.MODELS`)
    or a path to a GGUF file.  `grammar=True` constrains decoding with the request's grammar.

    `prefix_cache_mb` bounds the processed system prompts kept on disk for later processes
    (`planweave.llm.prefix_cache`); None reads `PLANWEAVE_PREFIX_CACHE_MB` (default 1024), 0
    turns it off.  `prompt_cache_mb` bounds the same states kept in this process's memory.
    `binding` chooses llama.cpp's binding (`planweave.llm.llamacpp`; None: auto)."""

    embedded = True
    tool_calling: ClassVar[bool] = True  # in its chat template's own tags (`tool_calls`)
    provider: ClassVar[str] = "llama.cpp"

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
        binding: str | None = None,
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
        self._binding = binding
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
        binding = resolve_binding(self._binding)
        key = (str(path.resolve()), self.n_ctx, binding)
        with _MODELS_LOCK:
            loaded = _MODELS.get(key)
            cached = loaded is not None
            if loaded is None:
                if progress is not None:
                    progress("loading", 0, 1)
                start = time.monotonic()
                engine = Engine(
                    path,
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    n_batch=256,
                    extra_buffers=not _extra_buffers_crash(),
                    binding=binding,
                )
                loaded = _Loaded(engine, ModelQueue(), time.monotonic() - start)
                _MODELS[key] = loaded
                if progress is not None:
                    progress("loading", 1, 1)
            if loaded.prefix is None and (self.prefix_cache_mb > 0 or self.prompt_cache_mb > 0):
                store = None
                if self.prefix_cache_mb > 0:
                    store = PrefixStore(
                        self._prefix_dir or cache_dir() / "prefix-states",
                        model_namespace(path, loaded.engine.version()),
                        self.prefix_cache_mb << 20,
                    )
                # Planner and joiner prompts alternate; keeping both prefixes' states in memory
                # saves re-reading the long planner prompt on every question.
                loaded.prefix = PrefixReuse(loaded.engine, store, self.prompt_cache_mb << 20)
        self._loaded = loaded
        self._prefix = loaded.prefix
        self.report = LoadReport(path, assembled - began, 0.0 if cached else loaded.load_s, cached)
        return self.report

    @property
    def engine(self) -> Engine:
        """The loaded model (`load()` first)."""
        if self._loaded is None:
            raise UserError("the embedded model is not loaded yet: call load() first")
        return self._loaded.engine

    def _tokens(self, request: LLMRequest) -> tuple[list[int], int]:
        """The prompt's tokens and how many of them open every request of its kind."""
        engine = self.engine
        if request.tools:
            messages = inert(with_tools(request.messages, request.tools), tags=False)
        else:
            messages = inert([m.to_dict() for m in request.messages])
        prompt = engine.tokenize(engine.render(messages))
        fixed = _fixed_messages(request)
        if not 0 < fixed < len(messages):
            return prompt, 0
        heads = self._loaded.heads if self._loaded is not None else {}
        key = tuple((m["role"], m["content"]) for m in messages[:fixed])
        head = heads.get(key)
        if head is None:
            if len(heads) >= 16:
                heads.clear()
            head = heads[key] = engine.tokenize(engine.render(messages[:fixed], open_turn=False))
        return prompt, common_prefix(prompt, head)

    def _sampling(self, request: LLMRequest) -> Sampling:
        """How `request` is decoded: under its grammar when this model constrains output, at its
        temperature, with this model's seed."""
        return Sampling(
            request.grammar if self.use_grammar and request.grammar else None,
            request.temperature,
            self.seed,
        )

    def _ending(self, reason: str) -> Delta:
        """A response's last text-free delta: why it stopped, and its id and model, named like
        an endpoint's response so that traces tell the calls apart."""
        return Delta(
            finish_reason=reason,
            response_id=f"local-{uuid.uuid4().hex[:24]}",
            response_model=self.model,
        )

    async def stream(self, request: LLMRequest) -> AsyncGenerator[Delta, None]:
        if self._loaded is None:
            await anyio.to_thread.run_sync(self.load)
        loaded = self._loaded
        assert loaded is not None
        engine = loaded.engine
        sampling = self._sampling(request)
        drafter = PromptLookup(self.draft_tokens) if self.draft_tokens > 0 else None
        await loaded.queue.acquire()
        tokens: Iterator[int] | None = None
        outcome: dict[str, Any] = {}
        try:

            def start() -> tuple[Iterator[int], int]:
                prompt, fixed = self._tokens(request)
                if self._prefix is not None and fixed:
                    self._prefix.prepare(prompt, fixed)
                return (
                    engine.generate(
                        prompt,
                        sampling,
                        max_tokens=request.max_tokens,
                        drafter=drafter,
                        outcome=outcome,
                    ),
                    len(prompt),
                )

            pull, prompt_tokens = await anyio.to_thread.run_sync(start)
            tokens = pull

            held: list[str] | None = [] if request.tools else None  # calls are read whole
            async with aclosing(_texts(pull, engine, _Stops(request.stop), outcome)) as texts:
                async for text in texts:
                    if held is not None:
                        held.append(text)
                    else:
                        yield Delta(text=text)
            if held is not None:
                answer, calls = read_tool_calls("".join(held))
                yield Delta(text=answer, tool_calls=calls)
            produced, stopped = outcome["produced"], outcome["stopped"]
            reason = "stop" if stopped else outcome.get("finish_reason", "stop")
            yield self._ending(reason)
            yield Delta(usage=Usage(prompt_tokens, produced))
        finally:
            with anyio.CancelScope(shield=True):
                if tokens is not None and hasattr(tokens, "close"):
                    await anyio.to_thread.run_sync(tokens.close)
            loaded.queue.release()


async def _texts(
    pull: Iterator[int], engine: Engine, stops: _Stops, outcome: dict[str, Any]
) -> AsyncGenerator[str, None]:
    """The text of the tokens `pull` gives (each pulled in a worker thread), cut at the first
    stop string; `outcome` gets how many tokens were decoded and whether a stop was met."""

    def following() -> int | None:
        return next(pull, None)

    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    outcome["produced"], stopped = 0, False
    while not stopped:
        token = await anyio.to_thread.run_sync(following)
        if token is None:
            break
        outcome["produced"] += 1
        text, stopped = stops.feed(decoder.decode(engine.piece(token)))
        if text:
            yield text
    if not stopped:
        rest = stops.feed(decoder.decode(b"", final=True))[0] + stops.flush()
        if rest:
            yield rest
    outcome["stopped"] = stopped


def from_choice(choice: LLMChoice) -> LocalLLM:
    """The embedded model `choice` names (`model`, env PLANWEAVE_MODEL or the default), not yet
    loaded (the `llm.registry` entry "embedded")."""
    name = choice.model or os.environ.get("PLANWEAVE_MODEL") or DEFAULT_MODEL
    return LocalLLM(name, grammar=choice.grammar, progress=choice.progress)
