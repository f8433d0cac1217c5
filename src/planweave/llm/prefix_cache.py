"""Processed prompt prefixes kept on disk, so a new process skips re-reading the system prompts.

Every planner, joiner and ReAct request opens with the same system message (instructions, tool
descriptions, worked examples): about a thousand tokens that a fresh process would otherwise
evaluate again before its first plan.  After evaluating a request's system message, the embedded
backend saves llama.cpp's key/value cache of that sequence (`llama_state_seq_get_data`: no
logits, about 28 KB a token for the 1.5B model) under the exact prefix tokens; a later request,
in any process, restores the stored prefix sharing the most tokens with its own prompt and
evaluates only the rest.

An entry is one file: a magic line, a JSON header (namespace, tokens, payload size and digest)
and the payload.  The namespace names the model file (path, size, mtime), the llama-cpp-python
version and this format, so a state is only ever offered to the model build that wrote it.
Files are written to a temporary name and renamed, so a reader sees a whole entry or none; the
digest catches the rest (a torn write after a crash, a truncated or edited file).  A file that
fails any check is removed and treated as a miss: cache files are untrusted input.  The total
size is bounded; the least recently used entries go first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import struct
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_PREFIX_CACHE_MB",
    "PrefixReuse",
    "PrefixStore",
    "model_namespace",
    "resolve_prefix_cache_mb",
]

log = logging.getLogger(__name__)

DEFAULT_PREFIX_CACHE_MB = 1024
_ENV = "PLANWEAVE_PREFIX_CACHE_MB"
_MAGIC = b"PWPREFIX1\n"
_SUFFIX = ".state"
_MAX_HEADER = 1 << 20
_STALE_TMP_S = 600.0
# Restoring a few dozen tokens costs about what evaluating them does.
MIN_TOKENS = 32


def resolve_prefix_cache_mb(explicit: int | None) -> int:
    """The bound in MB: `explicit`, else `PLANWEAVE_PREFIX_CACHE_MB`, else 1024; 0 turns it off."""
    if explicit is not None:
        return max(0, explicit)
    raw = os.environ.get(_ENV, "").strip()
    if not raw:
        return DEFAULT_PREFIX_CACHE_MB
    try:
        return max(0, int(raw))
    except ValueError:
        log.warning("%s=%r is not a whole number of MB; the prefix cache is off", _ENV, raw)
        return 0


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass(frozen=True, slots=True)
class Entry:
    path: Path
    tokens: tuple[int, ...]
    payload_size: int
    digest: str
    offset: int


class PrefixStore:
    """Entries under `directory` for one `namespace`, at most `capacity` bytes in all."""

    def __init__(self, directory: Path, namespace: str, capacity: int) -> None:
        self.directory = directory
        self.namespace = namespace
        self.capacity = capacity

    def _name(self, tokens: Sequence[int]) -> Path:
        key = json.dumps([self.namespace, list(tokens)], separators=(",", ":"))
        return self.directory / (
            hashlib.blake2b(key.encode(), digest_size=20).hexdigest() + _SUFFIX
        )

    def _discard(self, path: Path, why: str) -> None:
        log.info("prefix cache: dropping %s (%s)", path.name, why)
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)

    def _header(self, path: Path) -> Entry | None:
        """The entry's header, or None: absent, foreign (another namespace) or damaged (then
        removed)."""
        try:
            with path.open("rb") as f:
                size = os.fstat(f.fileno()).st_size
                head = f.read(len(_MAGIC) + 4)
                if len(head) != len(_MAGIC) + 4 or not head.startswith(_MAGIC):
                    self._discard(path, "not a prefix state")
                    return None
                (length,) = struct.unpack("<I", head[len(_MAGIC) :])
                if length > _MAX_HEADER:
                    self._discard(path, "header too long")
                    return None
                raw = f.read(length)
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.info("prefix cache: cannot read %s: %s", path.name, exc)
            return None
        try:
            header = json.loads(raw.decode())
            namespace = header["namespace"]
            tokens = tuple(header["tokens"])
            payload_size = header["payload_size"]
            digest = header["digest"]
            valid = (
                isinstance(namespace, str)
                and all(type(t) is int for t in tokens)
                and type(payload_size) is int
                and isinstance(digest, str)
            )
        except (ValueError, KeyError, TypeError, RecursionError):
            valid = False
        offset = len(_MAGIC) + 4 + len(raw)
        if not valid or len(raw) != length or offset + payload_size != size:
            self._discard(path, "damaged header or truncated")
            return None
        if namespace != self.namespace:
            return None
        if path != self._name(tokens):
            self._discard(path, "name does not match its tokens")
            return None
        return Entry(path, tokens, payload_size, digest, offset)

    def entries(self) -> list[Entry]:
        try:
            paths = sorted(self.directory.glob("*" + _SUFFIX))
        except OSError:
            return []
        return [e for p in paths if (e := self._header(p)) is not None]

    def best(self, tokens: Sequence[int]) -> tuple[Entry, int] | None:
        """The entry sharing the longest prefix with `tokens`, and that length."""
        found: tuple[Entry, int] | None = None
        for entry in self.entries():
            n = _common_prefix(entry.tokens, tokens)
            if n > 0 and (found is None or n > found[1]):
                found = (entry, n)
        return found

    def read(self, entry: Entry) -> bytes | None:
        """The entry's payload after checking its digest; None (and the file removed) if it
        does not match."""
        try:
            with entry.path.open("rb") as f:
                f.seek(entry.offset)
                payload = f.read(entry.payload_size + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.info("prefix cache: cannot read %s: %s", entry.path.name, exc)
            return None
        if len(payload) != entry.payload_size or _digest(payload) != entry.digest:
            self._discard(entry.path, "payload does not match its digest")
            return None
        with contextlib.suppress(OSError):
            os.utime(entry.path)  # the mtime is the LRU clock
        return payload

    def discard(self, entry: Entry, why: str) -> None:
        self._discard(entry.path, why)

    def put(self, tokens: Sequence[int], payload: bytes) -> Path | None:
        """Store atomically, then evict down to the bound.  None when it cannot be stored."""
        header = json.dumps(
            {
                "namespace": self.namespace,
                "tokens": list(tokens),
                "payload_size": len(payload),
                "digest": _digest(payload),
            },
            separators=(",", ":"),
        ).encode()
        if len(header) > _MAX_HEADER:
            return None
        if len(_MAGIC) + 4 + len(header) + len(payload) > self.capacity:
            return None
        target = self._name(tokens)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(_MAGIC)
                    f.write(struct.pack("<I", len(header)))
                    f.write(header)
                    f.write(payload)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            log.info("prefix cache: cannot store in %s: %s", self.directory, exc)
            return None
        self.evict(keep=target)
        return target

    def evict(self, keep: Path | None = None) -> None:
        """Remove least recently used entries (of every namespace: the bound is for the whole
        directory) until the total fits, and temporary files a killed writer left behind."""
        now = time.time()
        files: list[tuple[float, int, Path]] = []
        try:
            listing = list(self.directory.iterdir())
        except OSError:
            return
        for path in listing:
            try:
                st = path.stat()
            except OSError:
                continue
            if path.name.endswith(".tmp"):
                if now - st.st_mtime > _STALE_TMP_S:
                    self._discard(path, "left by an interrupted write")
                continue
            if path.name.endswith(_SUFFIX):
                files.append((st.st_mtime, st.st_size, path))
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self.capacity:
                break
            if path == keep:
                continue
            self._discard(path, "least recently used")
            total -= size


def _digest(payload: bytes) -> str:
    return hashlib.blake2b(payload, digest_size=32).hexdigest()


def model_namespace(model_path: Path, llama_cpp_version: str) -> str:
    st = model_path.stat()
    return json.dumps(
        {
            "format": 1,
            "model": str(model_path.resolve()),
            "size": st.st_size,
            "mtime_ns": st.st_mtime_ns,
            "llama_cpp_python": llama_cpp_version,
        },
        sort_keys=True,
    )


class PrefixReuse:
    """Glue between a loaded `llama_cpp.Llama` and a `PrefixStore`.

    `prepare(messages, fixed)` runs before each chat completion, under the model's lock: it
    renders the prompt with the model's own chat template, and makes sure the model's KV cache
    already holds the prefix of the request's first `fixed` messages: restored from disk when
    stored, else evaluated now (work the completion would do anyway) and stored.  The
    completion then finds the prefix in the KV cache (llama-cpp-python's own prefix match) and
    evaluates only the rest."""

    def __init__(self, llama: Any, store: PrefixStore) -> None:
        import llama_cpp
        from llama_cpp import llama_chat_format

        self.llama = llama
        self.store = store
        self._llama_cpp = llama_cpp
        self._formatter: Any = None
        template = llama.metadata.get("tokenizer.chat_template")
        # Only when completions use the GGUF's own template, rendered as llama-cpp-python does,
        # so these tokens are the ones the completion evaluates.
        if template and llama.chat_handler is None and llama.chat_format == "chat_template.default":
            eos, bos = llama.token_eos(), llama.token_bos()
            self._formatter = llama_chat_format.Jinja2ChatFormatter(
                template=template,
                eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
                stop_token_ids=[eos],
            )
        # What it did in this process, for benchmarks and tests.
        self.restored = 0
        self.restored_tokens = 0
        self.stored = 0
        self.seconds = 0.0

    @property
    def active(self) -> bool:
        return self._formatter is not None

    def tokens(self, messages: list[dict[str, Any]]) -> list[int]:
        result = self._formatter(messages=messages)
        tokens: list[int] = self.llama.tokenize(
            result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True
        )
        return tokens

    def prepare(self, messages: list[dict[str, Any]], fixed: int = 1) -> None:
        """Make sure the KV cache holds the first `fixed` messages of the prompt (those that
        are the same in every request of this kind, in every process)."""
        if self._formatter is None or not 0 < fixed < len(messages):
            return
        prompt = self.tokens(messages)
        if len(prompt) >= self.llama.n_ctx():
            return  # the completion reports the overflow
        prefix = _common_prefix(prompt, self.tokens(messages[:fixed]))
        # Leave at least one token for the completion to evaluate.
        prefix = min(prefix, len(prompt) - 1)
        if prefix < MIN_TOKENS:
            return
        llama = self.llama
        have = _common_prefix(llama._input_ids.tolist(), prompt[:prefix])
        if have >= prefix or self._in_ram(prompt) >= prefix:
            return
        began = time.monotonic()
        found = self.store.best(prompt[:prefix])
        if found is not None and found[1] > max(have, MIN_TOKENS - 1):
            entry, shared = found
            if self._restore(entry):
                self.restored_tokens += shared
            # What the KV cache holds now: the entry, or nothing if llama.cpp refused it.
            have = _common_prefix(llama._input_ids.tolist(), prompt[:prefix])
        self.seconds += time.monotonic() - began
        if have >= prefix:
            return
        # Not stored (or only partly): evaluate the prefix now (the completion would have to
        # anyway) and store it.
        llama.n_tokens = have
        llama.eval(prompt[have:prefix])
        began = time.monotonic()
        self._save(prompt[:prefix])
        self.seconds += time.monotonic() - began

    def _in_ram(self, prompt: list[int]) -> int:
        cache = self.llama.cache
        states = getattr(cache, "cache_state", None)
        if not states:
            return 0
        return max(_common_prefix(key, prompt) for key in states)

    def _restore(self, entry: Entry) -> bool:
        if len(entry.tokens) >= self.llama.n_ctx():
            return False  # stored by a process with a longer context; not ours to drop
        payload = self.store.read(entry)
        if payload is None:
            return False
        lib, llama = self._llama_cpp, self.llama
        buffer = (lib.ctypes.c_uint8 * len(payload)).from_buffer_copy(payload)
        llama._ctx.kv_cache_clear()
        llama.n_tokens = 0
        llama._requires_eval = True
        if lib.llama_state_seq_set_data(llama._ctx.ctx, buffer, len(payload), 0) != len(payload):
            # llama.cpp refused it (another build, another model shape); the sequence is empty.
            llama._ctx.kv_cache_clear()
            self.store.discard(entry, "llama.cpp could not load it")
            return False
        n = len(entry.tokens)
        llama.input_ids[:n] = entry.tokens
        llama.n_tokens = n
        self.restored += 1
        return True

    def _save(self, tokens: list[int]) -> None:
        lib, ctx = self._llama_cpp, self.llama._ctx.ctx
        size = lib.llama_state_seq_get_size(ctx, 0)
        buffer = (lib.ctypes.c_uint8 * size)()
        written = lib.llama_state_seq_get_data(ctx, buffer, size, 0)
        if written == 0 or written > size:
            return
        if self.store.put(tokens, bytes(memoryview(buffer)[:written])) is not None:
            self.stored += 1
