"""The joiner: after a plan has run, answer with `Finish(...)` or ask for a `Replan(...)`.
Its prompt and the parser of its replies live in `prompts`."""

from __future__ import annotations

from collections.abc import Sequence

from . import prompts
from .llm.base import LLMRequest, Message
from .prompts import TaskOutcome, parse_decision

# parse_decision is re-exported: the runtime reads the joiner's replies through it.
__all__ = ["Joiner", "parse_decision"]


class Joiner:
    def __init__(
        self,
        *,
        max_tokens: int | None = 512,
        observation_limit: int = 2000,
        grammar: str | None = None,
    ) -> None:
        self.max_tokens = max_tokens
        self.observation_limit = observation_limit
        self.grammar = grammar

    def messages(
        self,
        question: str,
        records: Sequence[TaskOutcome],
        *,
        last_round: bool,
        notes: Sequence[str] = (),
    ) -> list[Message]:
        return prompts.joiner_messages(
            question,
            records,
            last_round=last_round,
            notes=notes,
            observation_limit=self.observation_limit,
        )

    def request(self, messages: list[Message]) -> LLMRequest:
        return LLMRequest(
            messages=messages, max_tokens=self.max_tokens, grammar=self.grammar, purpose="joiner"
        )
