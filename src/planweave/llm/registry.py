"""The LLM backends a run can use, by name.

A new backend is its module, holding a `from_choice(choice: LLMChoice) -> LLM` function, and one
line in `BACKENDS`; settings (`llm_backend`), the CLI's `--llm-backend` and a resumed run check
names against it.  A backend's module is imported only when a run picks it (the OpenAI SDK and
llama.cpp are slow to import and each an extra of its own).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import UserError
from .base import LLM, Deadlines

__all__ = ["AUTO", "BACKENDS", "LLMChoice", "backend_names", "make", "pick"]

# The backends, by name: "module:function" making one from an `LLMChoice`.
BACKENDS: dict[str, str] = {
    "endpoint": "planweave.llm.openai_compat:from_choice",
    "embedded": "planweave.llm.local:from_choice",
}

AUTO = "auto"
"""The endpoint when one is configured (`base_url` or env PLANWEAVE_BASE_URL), else the
embedded model."""


@dataclass(frozen=True)
class LLMChoice:
    """What a run's settings say of its LLM, as every backend reads it: `backend` (a name in
    BACKENDS, or AUTO), `model` and `base_url` (null: the backend's env or default), whether
    its plans are constrained by a `grammar` (and the endpoint's `grammar_field` that takes
    one), an endpoint's `deadlines`, and who hears how loading an embedded model goes
    (`progress(stage, done, total)`)."""

    backend: str = AUTO
    model: str | None = None
    base_url: str | None = None
    grammar: bool = True
    grammar_field: str | None = None
    deadlines: Deadlines = field(default_factory=Deadlines)
    progress: Callable[[str, int, int], None] | None = None


def backend_names() -> tuple[str, ...]:
    """The names a run's `llm_backend` may take."""
    return (AUTO, *BACKENDS)


def pick(choice: LLMChoice) -> str:
    """The backend `choice` names; AUTO is the endpoint when one is configured, else the
    embedded model."""
    if choice.backend != AUTO:
        return choice.backend
    return "endpoint" if choice.base_url or os.environ.get("PLANWEAVE_BASE_URL") else "embedded"


def make(choice: LLMChoice) -> LLM:
    """The LLM `choice` asks for, not yet loaded."""
    name = pick(choice)
    target = BACKENDS.get(name)
    if target is None:
        raise UserError(f"LLM backend must be one of {', '.join(backend_names())}, not {name!r}")
    module, _, function = target.partition(":")
    build: Callable[[LLMChoice], LLM] = getattr(importlib.import_module(module), function)
    return build(choice)
