"""The joiner: after a plan has run, answer with `Finish(...)` or ask for a `Replan(...)`.
Its prompt and the parser of its replies live in `prompts`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import aclosing

from . import prompts
from .llm.base import LLMRequest, Message, PromptStyle
from .meter import MeteredLLM
from .prompts import AnswerStream, JoinDecision, TaskOutcome, parse_decision

# parse_decision is re-exported: the runtime reads the joiner's replies through it.
__all__ = ["Joiner", "parse_decision"]


class Joiner:
    """Builds joiner requests in the given prompt `style` and reads the decision as it streams."""

    def __init__(
        self,
        *,
        max_tokens: int | None = 512,
        observation_limit: int = 2000,
        grammar: str | None = None,
        style: PromptStyle = "full",
    ) -> None:
        self.max_tokens = max_tokens
        self.observation_limit = observation_limit
        self.grammar = grammar
        self.style: PromptStyle = style

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
            style=self.style,
        )

    def request(self, messages: list[Message]) -> LLMRequest:
        return LLMRequest(
            messages=messages, max_tokens=self.max_tokens, grammar=self.grammar, purpose="joiner"
        )

    async def decide(
        self,
        llm: MeteredLLM,
        messages: list[Message],
        answer: Callable[[str], object] | None = None,
    ) -> JoinDecision:
        """Ask the joiner and read its decision; a finishing reply's answer goes to `answer`
        piece by piece as it is decoded (the pieces add up to the decision's text)."""
        reading = AnswerStream()
        async with aclosing(llm.stream(self.request(messages))) as stream:
            async for text in stream:
                piece = reading.feed(text)
                if piece and answer is not None:
                    answer(piece)
        decision, rest = reading.close()
        if rest and answer is not None:
            answer(rest)
        return decision
