"""The on-disk store of processed prompt prefixes: keys, bounds, eviction, damaged entries; and,
with the real model, that a restored prefix gives the same output as none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from planweave.llm.llamacpp import BINDINGS, installed
from planweave.llm.prefix_cache import PrefixStore, resolve_prefix_cache_mb

NS = '{"model": "m.gguf"}'
A = list(range(100, 200))


def store(tmp_path: Path, capacity: int = 1 << 20, namespace: str = NS) -> PrefixStore:
    return PrefixStore(tmp_path / "states", namespace, capacity)


def only_file(s: PrefixStore) -> Path:
    (path,) = s.directory.glob("*.state")
    return path


def test_round_trip_and_longest_common_prefix(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.put(A, b"state-a")
    s.put([*A[:50], 7, 8, 9], b"state-b")
    entry, shared = s.best([*A, 1, 2, 3]) or pytest.fail("no entry")
    assert (entry.tokens, shared) == (tuple(A), 100)
    assert s.read(entry) == b"state-a"
    entry, shared = s.best([*A[:50], 7, 8, 0]) or pytest.fail("no entry")
    assert shared == 52
    assert s.read(entry) == b"state-b"
    # A prompt sharing only part of a stored prefix can still use it (up to the shared part).
    entry, shared = s.best([*A[:30], 0]) or pytest.fail("no entry")
    assert shared == 30
    assert s.best([1, 2, 3]) is None


def test_same_tokens_replace_their_entry(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.put(A, b"old")
    s.put(A, b"new")
    (entry,) = s.entries()
    assert s.read(entry) == b"new"


def test_another_namespace_is_invisible_and_kept(tmp_path: Path) -> None:
    store(tmp_path, namespace='{"model": "other.gguf"}').put(A, b"theirs")
    s = store(tmp_path)
    assert s.best(A) is None
    assert len(list(s.directory.glob("*.state"))) == 1


def test_total_size_is_bounded_least_recently_used_first(tmp_path: Path) -> None:
    payload = b"x" * 4000
    s = store(tmp_path, capacity=10_000)  # two entries fit, with their headers
    first, second, third = ([base + i for i in A] for base in (1000, 2000, 3000))
    s.put(first, payload)
    s.put(second, payload)
    for age, entry in enumerate(sorted(s.entries(), key=lambda e: e.tokens[0])):
        os.utime(entry.path, (1_000_000 + age, 1_000_000 + age))
    # Reading the older one makes it the most recently used, so the other one goes.
    oldest = min(s.entries(), key=lambda e: e.tokens[0])
    assert s.read(oldest) == payload
    s.put(third, payload)
    assert {e.tokens[0] for e in s.entries()} == {first[0], third[0]}
    assert sum(p.stat().st_size for p in s.directory.iterdir()) <= 10_000


def test_an_entry_larger_than_the_bound_is_not_stored(tmp_path: Path) -> None:
    s = store(tmp_path, capacity=1000)
    assert s.put(A, b"x" * 2000) is None
    assert s.entries() == []


@pytest.mark.parametrize(
    "damage",
    [
        "truncate",
        "flip payload",
        "garbage",
        "empty",
        "huge header",
        "bad json",
        "deep json",
        "not utf-8",
        "renamed",
    ],
)
def test_a_damaged_entry_is_a_miss_and_removed(tmp_path: Path, damage: str) -> None:
    s = store(tmp_path)
    s.put(A, b"payload" * 100)
    path = only_file(s)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[:-10])
    elif damage == "flip payload":
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    elif damage == "garbage":
        path.write_bytes(os.urandom(500))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "huge header":
        path.write_bytes(b"PWPREFIX1\n" + b"\xff\xff\xff\xff" + b"{}")
    elif damage == "bad json":
        header = json.dumps({"namespace": NS, "tokens": ["a"], "payload_size": 0, "digest": 1})
        path.write_bytes(b"PWPREFIX1\n" + len(header).to_bytes(4, "little") + header.encode())
    elif damage == "deep json":
        header = b"[" * 500_000 + b"]" * 500_000
        path.write_bytes(b"PWPREFIX1\n" + len(header).to_bytes(4, "little") + header)
    elif damage == "not utf-8":
        path.write_bytes(b"PWPREFIX1\n" + (4).to_bytes(4, "little") + b"\xff\xfe\xfd\xfc")
    elif damage == "renamed":
        path.rename(path.with_name("0" * 40 + ".state"))
        path = path.with_name("0" * 40 + ".state")
    found = s.best(A)
    assert found is None or s.read(found[0]) is None
    assert not path.exists()
    # And the slot is usable again.
    s.put(A, b"fresh")
    entry, _ = s.best(A) or pytest.fail("no entry")
    assert s.read(entry) == b"fresh"


def test_payload_damaged_after_the_header_was_read(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.put(A, b"payload" * 100)
    entry, _ = s.best(A) or pytest.fail("no entry")
    entry.path.write_bytes(entry.path.read_bytes()[:-1] + b"?")
    assert s.read(entry) is None
    assert not entry.path.exists()


def test_leftovers_of_an_interrupted_write(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.directory.mkdir(parents=True)
    stale, fresh = s.directory / ".a.tmp", s.directory / ".b.tmp"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(stale, (1_000_000, 1_000_000))
    s.put(A, b"whole")
    assert not stale.exists()
    assert fresh.exists()  # perhaps another process still writing it
    assert [e.tokens for e in s.entries()] == [tuple(A)]


def test_unwritable_directory_is_no_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    s = PrefixStore(tmp_path / "file" / "states", NS, 1 << 20)
    assert s.put(A, b"x") is None
    assert s.best(A) is None


def test_size_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLANWEAVE_PREFIX_CACHE_MB", raising=False)
    assert resolve_prefix_cache_mb(None) == 1024
    assert resolve_prefix_cache_mb(64) == 64
    monkeypatch.setenv("PLANWEAVE_PREFIX_CACHE_MB", "0")
    assert resolve_prefix_cache_mb(None) == 0
    monkeypatch.setenv("PLANWEAVE_PREFIX_CACHE_MB", "lots")
    assert resolve_prefix_cache_mb(None) == 0
    assert resolve_prefix_cache_mb(-5) == 0


_ONE_CALL = textwrap.dedent(
    """
    import json, sys
    import anyio
    from planweave.llm.base import LLMRequest, Message
    from planweave.llm.local import LocalLLM

    llm = LocalLLM(prefix_cache_mb=int(sys.argv[2]), prefix_cache_dir=sys.argv[1])
    rules = " ".join(
        f"Rule {i}: when asked about country number {i}, give its capital and nothing else."
        for i in range(30)
    )
    messages = [
        Message("system", "You answer geography questions in a few words. " + rules),
        Message("user", "List the capitals of France, Italy and Spain, then count them."),
    ]

    async def main() -> str:
        text = ""
        request = LLMRequest(messages=messages, max_tokens=40, temperature=0.0)
        async for delta in llm.stream(request):
            text += delta.text or ""
        return text

    text = anyio.run(main)
    reuse = llm._prefix
    same_tokens = None
    if reuse is not None:
        prompt, _ = llm._tokens(LLMRequest(messages=messages))
        evaluated = reuse.engine.tokens[: len(prompt)]
        same_tokens = evaluated == prompt and len(prompt) > 300
    print(json.dumps({
        "text": text,
        "restored": reuse.restored if reuse else None,
        "stored": reuse.stored if reuse else None,
        "same_tokens": same_tokens,
    }))
    """
)


@pytest.mark.model
@pytest.mark.timeout(600)
@pytest.mark.parametrize("binding", BINDINGS)
def test_restored_prefix_gives_the_same_output(tmp_path: Path, binding: str) -> None:
    if not installed(binding):
        pytest.skip(f"{binding} is not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLANWEAVE_", "OPENAI_"))}
    env["PLANWEAVE_LLAMA_BINDING"] = binding

    def run(mb: int) -> dict[str, object]:
        proc = subprocess.run(
            [sys.executable, "-c", _ONE_CALL, str(tmp_path / "states"), str(mb)],
            capture_output=True,
            text=True,
            env=env,
            timeout=280,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
        return result

    without = run(0)
    cold = run(1024)
    warm = run(1024)
    assert (cold["stored"], cold["restored"]) == (1, 0)
    assert (warm["stored"], warm["restored"]) == (0, 1)
    # The prompt rendered for the cache is exactly the one the completion evaluated.
    assert cold["same_tokens"] is True
    assert warm["same_tokens"] is True
    assert without["text"]
    assert cold["text"] == without["text"]
    assert warm["text"] == without["text"]
    # An entry that passes the digest but that llama.cpp refuses (stored by another build, or
    # written by someone else) is dropped; the completion evaluates the prompt itself.
    (path,) = (tmp_path / "states").glob("*.state")
    data = path.read_bytes()
    length = int.from_bytes(data[10:14], "little")
    header = json.loads(data[14 : 14 + length])
    namespace, tokens = header["namespace"], header["tokens"]
    PrefixStore(tmp_path / "states", namespace, 1 << 30).put(tokens, os.urandom(4096))
    refused = run(1024)
    assert (refused["stored"], refused["restored"]) == (1, 0)
    assert refused["text"] == without["text"]
