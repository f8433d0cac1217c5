"""Processed prompt prefixes kept on disk, so a new process skips re-reading the system prompts.

Every planner, joiner and ReAct request opens with the same system message (instructions, tool
descriptions, worked examples): about a thousand tokens that a fresh process would otherwise
evaluate again before its first plan.  After evaluating a request's system message, the embedded
backend saves llama.cpp's key/value cache of that sequence (`llama_state_seq_get_data`: no
logits, about 28 KB a token for the 1.5B model) under the exact prefix tokens; a later request,
in any process, restores the stored prefix sharing the most tokens with its own prompt and
evaluates only the rest.

An entry is one file: a magic line, a JSON header (namespace, tokens, payload size and digest)
and the payload.  The namespace names the model file (path, size, mtime), the llama.cpp build
and this format, so a state is only ever offered to the model build that wrote it.
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
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .llamacpp.engine import common_prefix

if TYPE_CHECKING:
    from .llamacpp import Engine

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
            n = common_prefix(entry.tokens, tokens)
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


def model_namespace(model_path: Path, backend_version: str) -> str:
    st = model_path.stat()
    return json.dumps(
        {
            "format": 2,
            "model": str(model_path.resolve()),
            "size": st.st_size,
            "mtime_ns": st.st_mtime_ns,
            "backend": backend_version,
        },
        sort_keys=True,
    )


class PrefixReuse:
    """Glue between a loaded `Engine` and its stored prefix states: in this process's memory
    (at most `ram_bytes`; planner and joiner prompts alternate, so both prefixes stay) and, with
    a `store`, on disk for later processes.

    `prepare(prompt, prefix)` runs before each completion, in the model's turn: it makes sure
    the engine's KV cache already holds `prompt[:prefix]` (the messages that are the same in every
    request of this kind): kept from the previous request, restored from memory or disk, else
    evaluated now (work the completion would do anyway) and stored.  The completion then reads
    only the rest."""

    def __init__(self, engine: Engine, store: PrefixStore | None, ram_bytes: int) -> None:
        self.engine = engine
        self.store = store
        self.ram_bytes = ram_bytes
        self._ram: OrderedDict[tuple[int, ...], bytes] = OrderedDict()
        # What it did in this process, for benchmarks and tests.
        self.restored = 0
        self.restored_tokens = 0
        self.restored_from_ram = 0
        self.stored = 0
        self.seconds = 0.0

    def prepare(self, prompt: Sequence[int], prefix: int) -> None:
        engine = self.engine
        # Leave at least one token for the completion to evaluate.
        prefix = min(prefix, len(prompt) - 1)
        if prefix < MIN_TOKENS or len(prompt) >= engine.n_ctx:
            return  # too short to pay, or the completion reports the overflow
        want = tuple(prompt[:prefix])
        have = common_prefix(engine.tokens, want)
        if have >= prefix:
            return
        began = time.monotonic()
        if not self._restore_ram(want, have):
            # A refused state leaves the sequence empty: what it holds is counted again.
            self._restore_disk(want, common_prefix(engine.tokens, want))
        self.seconds += time.monotonic() - began
        if common_prefix(engine.tokens, want) >= prefix:
            return
        engine.evaluate(want)
        began = time.monotonic()
        self._save(want)
        self.seconds += time.monotonic() - began

    def _restore_ram(self, want: tuple[int, ...], have: int) -> bool:
        best: tuple[tuple[int, ...], int] | None = None
        for key in self._ram:
            n = common_prefix(key, want)
            if n == len(key) and n > max(have, MIN_TOKENS - 1) and (best is None or n > best[1]):
                best = (key, n)
        if best is None:
            return False
        key = best[0]
        self._ram.move_to_end(key)
        if not self.engine.load_state(key, self._ram[key]):
            del self._ram[key]
            return False
        self.restored += 1
        self.restored_from_ram += 1
        self.restored_tokens += len(key)
        return True

    def _restore_disk(self, want: tuple[int, ...], have: int) -> bool:
        if self.store is None:
            return False
        found = self.store.best(want)
        if found is None or found[1] <= max(have, MIN_TOKENS - 1):
            return False
        entry, shared = found
        if len(entry.tokens) >= self.engine.n_ctx:
            return False  # stored by a process with a longer context; not ours to drop
        payload = self.store.read(entry)
        if payload is None:
            return False
        if not self.engine.load_state(entry.tokens, payload):
            self.store.discard(entry, "llama.cpp could not load it")
            return False
        self.restored += 1
        self.restored_tokens += shared
        self._keep(entry.tokens, payload)
        return True

    def _keep(self, tokens: tuple[int, ...], payload: bytes) -> None:
        if len(payload) > self.ram_bytes:
            return
        self._ram[tokens] = payload
        self._ram.move_to_end(tokens)
        while sum(len(p) for p in self._ram.values()) > self.ram_bytes:
            self._ram.popitem(last=False)

    def _save(self, tokens: tuple[int, ...]) -> None:
        payload = self.engine.save_state()
        if payload is None:
            return
        self._keep(tokens, payload)
        if self.store is not None and self.store.put(tokens, payload) is not None:
            self.stored += 1
