"""LLM backends: one module per backend, all meeting the `LLM` contract of `base`."""

from .base import LLM, Delta, LLMRequest, Message, Usage
from .openai_compat import OpenAICompatible
from .scripted import Reply, Script, ScriptedLLM, ScriptedServer

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
