"""llama.cpp for the embedded backend: the engine (`engine.Engine`) over one of two bindings.

- `cyllama` (`pip install 'planweave[local]'`, the default): llama.cpp prebuilt in manylinux
  wheels, so nothing compiles on install.
- `llama-cpp-python` (`pip install 'planweave[local-build]'`): compiled on install for this
  machine's CPU; it reads prompts up to twice as fast where the CPU has AVX-512.

`PLANWEAVE_LLAMA_BINDING` (or `LocalLLM(binding=...)`) chooses: `cyllama`, `llama-cpp-python`
or `auto` (the default: llama-cpp-python when installed, since whoever compiled it did so for
speed, else cyllama).  No other module touches a binding; their failures leave here as
planweave's errors.
"""

from __future__ import annotations

import os

from ...errors import UserError
from . import cyllama, llama_cpp_python
from .base import Binding, LoadOptions, Sampling
from .engine import Drafter, Engine, common_prefix

__all__ = [
    "BINDINGS",
    "Binding",
    "Drafter",
    "Engine",
    "LoadOptions",
    "Sampling",
    "common_prefix",
    "installed",
    "open_binding",
    "resolve_binding",
]

BINDINGS = (cyllama.NAME, llama_cpp_python.NAME)
_ENV = "PLANWEAVE_LLAMA_BINDING"


def installed(name: str) -> bool:
    """Whether the binding `name` can be imported."""
    return {cyllama.NAME: cyllama.available, llama_cpp_python.NAME: llama_cpp_python.available}[
        name
    ]()


def resolve_binding(chosen: str | None = None) -> str:
    """The binding to load: `chosen`, else PLANWEAVE_LLAMA_BINDING, else `auto`; UserError for
    a name it does not know, or naming the extra to install when none is installed."""
    name = (chosen or os.environ.get(_ENV, "") or "auto").strip().lower()
    if name not in (*BINDINGS, "auto"):
        raise UserError(f"unknown llama.cpp binding {name!r}: {', '.join(BINDINGS)} or auto")
    if name != "auto":
        return name
    if llama_cpp_python.available():
        return llama_cpp_python.NAME
    if cyllama.available():
        return cyllama.NAME
    raise UserError(f"the embedded model needs cyllama: {cyllama.INSTALL}")


def open_binding(
    path: str | os.PathLike[str], options: LoadOptions, chosen: str | None = None
) -> Binding:
    if resolve_binding(chosen) == llama_cpp_python.NAME:
        return llama_cpp_python.LlamaCppPythonBinding(path, options)
    return cyllama.CyllamaBinding(path, options)
