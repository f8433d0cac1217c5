"""Counting LLM use per run and reporting each call on the event stream."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass

from ..errors import LLMError
from ..events import EventBus, LLMCallFinished, LLMCallStarted, Purpose
from .base import LLM, LLMRequest, estimate_usage

__all__ = ["LLMUsage", "MeteredLLM"]


@dataclass(slots=True)
class LLMUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


class MeteredLLM:
    """Wraps a backend for one run: streams text, adds up usage, emits call events."""

    def __init__(self, llm: LLM, bus: EventBus) -> None:
        self.llm = llm
        self.bus = bus
        self.usage = LLMUsage()

    async def stream(self, request: LLMRequest, purpose: Purpose) -> AsyncGenerator[str, None]:
        """Yield the response's text as it streams.  The call is counted even when the
        consumer stops early (the planner drops the rest of the stream after `join()`)."""
        self.usage.calls += 1
        call = self.usage.calls
        model = self.llm.model
        self.bus.emit(LLMCallStarted(call=call, purpose=purpose, model=model))
        started = time.monotonic()
        parts: list[str] = []
        usage = None
        error: LLMError | None = None
        try:
            async with aclosing(self.llm.stream(request)) as deltas:
                async for delta in deltas:
                    if delta.usage is not None:
                        usage = delta.usage
                    if delta.text:
                        parts.append(delta.text)
                        yield delta.text
        except LLMError as exc:
            error = exc
            raise
        finally:
            text = "".join(parts)
            if usage is None:
                usage = estimate_usage(request.messages, text)
            prompt, completion = usage.prompt_tokens, usage.completion_tokens
            self.usage.prompt_tokens += prompt
            self.usage.completion_tokens += completion
            self.bus.emit(
                LLMCallFinished(
                    call=call,
                    purpose=purpose,
                    model=model,
                    prompt_tokens=prompt,
                    completion_tokens=completion,
                    duration=time.monotonic() - started,
                    text=text,
                    error=error.to_dict() if error is not None else None,
                )
            )

    async def complete(self, request: LLMRequest, purpose: Purpose) -> str:
        parts = []
        async with aclosing(self.stream(request, purpose)) as stream:
            async for text in stream:
                parts.append(text)
        return "".join(parts)
