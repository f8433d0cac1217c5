"""The joiner: after a plan has run, answer with `Finish(...)` or ask for a `Replan(...)`."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .llm.base import LLMRequest, Message
from .planner import format_observations
from .records import TaskRecord

__all__ = ["JOINER_HEAD", "Decision", "Joiner", "parse_decision"]

JOINER_HEAD = "You answer a question from the results of a plan of tool calls that has already run."

_FORMAT = """\
Reply in exactly this form:
Thought: <brief reasoning over the results>
Action: Finish(<the answer to the question>)

Only if the results cannot answer the question and another plan of tool calls could get what
is missing, reply instead:
Thought: <what is missing>
Action: Replan(<what to find out next>)

The answer is one or two complete sentences that answer every part of the question, using
the numbers in the results (rounded sensibly) with their units.  For a comparison, name the
winner and give the difference or ratio."""

_EXAMPLE = (
    Message(
        "user",
        "Question: Which river is longer, the Amur or the Lena, and by how much?\n\n"
        "Plan and results:\n"
        '1. river_length("Amur")\nObservation: 4444\n'
        '2. river_length("Lena")\nObservation: 4400\n'
        '3. calculator("${1} - ${2}")\nObservation: 44',
    ),
    Message(
        "assistant",
        "Thought: The Amur is 4444 km and the Lena 4400 km; the difference is 44 km.\n"
        "Action: Finish(The Amur is longer than the Lena, by 44 km (4,444 km against 4,400 km).)",
    ),
)

_LAST_ROUND = (
    "This is the last round: no more plans can run.  You must reply with Action: Finish(...), "
    "saying plainly what could not be found if the results are incomplete."
)

_THOUGHT_RE = re.compile(
    r"Thought\s*:\s*(.*?)(?:\n\s*(?:Action\s*:|Finish\s*\(|Replan\s*\()|$)", re.S | re.I
)
_ACTION_RE = re.compile(r"(?:^|\n)\s*(?:Action\s*:\s*)?(Finish|Replan)\s*\(", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Decision:
    action: Literal["finish", "replan"]
    text: str
    thought: str | None = None


def _unquote(text: str) -> str:
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
        try:
            value = ast.literal_eval(stripped)
        except (ValueError, SyntaxError):
            return stripped
        if isinstance(value, str):
            return value
    return stripped


def parse_decision(output: str) -> Decision:
    """Read the joiner's output.  The answer inside `Finish(...)` comes through whole:
    parentheses, quotes and newlines included, up to the last closing parenthesis."""
    matches = list(_ACTION_RE.finditer(output))
    thought_match = _THOUGHT_RE.search(output)
    thought = thought_match.group(1).strip() if thought_match else None
    if not matches:
        # No action at all: a small model that simply answered.  Take its text as the answer.
        text = re.sub(r"^\s*Thought\s*:.*?(?:\n|$)", "", output, flags=re.I).strip()
        return Decision("finish", text or output.strip(), thought)
    match = matches[0]
    body = output[match.end() :]
    close = body.rfind(")")
    if close >= 0:
        body = body[:close]
    action: Literal["finish", "replan"] = (
        "finish" if match.group(1).lower() == "finish" else "replan"
    )
    return Decision(action, _unquote(body), thought)


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
        records: Sequence[TaskRecord],
        *,
        last_round: bool,
        notes: Sequence[str] = (),
    ) -> list[Message]:
        system = f"{JOINER_HEAD}\n\n{_FORMAT}"
        if last_round:
            system += f"\n\n{_LAST_ROUND}"
        # Without the planner's thoughts: small models copy them instead of reasoning afresh.
        body = (
            format_observations(records, self.observation_limit, thoughts=False) or "(no task ran)"
        )
        extra = "".join(f"\nNote: {n}" for n in notes)
        user = f"Question: {question}\n\nPlan and results:\n{body}{extra}"
        # One worked exchange, as chat history: small models follow a shown answer's form.
        return [Message("system", system), *_EXAMPLE, Message("user", user)]

    def request(self, messages: list[Message]) -> LLMRequest:
        return LLMRequest(messages=messages, max_tokens=self.max_tokens, grammar=self.grammar)
