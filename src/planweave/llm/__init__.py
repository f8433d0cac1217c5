"""LLM backends: one module per backend, all meeting the `LLM` contract of `base`."""

from typing import TYPE_CHECKING, Any

from .base import LLM, Delta, LLMRequest, Message, Usage
from .scripted import Reply, Script, ScriptedLLM, ScriptedServer

if TYPE_CHECKING:
    from .openai_compat import OpenAICompatible

__all__ = [
    "LLM",
    "Delta",
    "LLMRequest",
    "Message",
    "OpenAICompatible",
    "Reply",
    "Script",
    "ScriptedLLM",
    "ScriptedServer",
    "Usage",
]


def __getattr__(name: str) -> Any:
    # The OpenAI SDK takes about half a second to import: only what uses an endpoint pays it.
    if name == "OpenAICompatible":
        from .openai_compat import OpenAICompatible

        return OpenAICompatible
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
