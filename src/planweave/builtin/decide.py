"""`decide`: a decision step answered by the run's own LLM, with a fixed set of outcomes.

    4. read_log("db-3")
    5. decide("Is the failure a timeout or a crash?", $4, options=["timeout", "crash"])
    6. restart("db-3") if $5 == "timeout"
    7. page_oncall("db-3 crashed") if $5 == "crash"

Its result is exactly one of `options`.  The request carries a grammar that allows only them
(backends that take a grammar decode nothing else; the others ignore it); a reply that is not
one of them (case, quotes, a closing period and spaces aside) is asked again once, told so, and
a second such reply fails the task, naming the options and the reply.  Like `llm`, each call
goes through the run's meter (`meter.current_llm`): counted, budgeted, journaled with the
purpose `tool`, and replayed from the journal when a killed run resumes, so a decision made
before the kill stays made.
"""

from __future__ import annotations

from typing import Any

from ..errors import (
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMStreamError,
    RetryTool,
    ToolFailed,
)
from ..grammar import literal
from ..llm.base import LLMRequest, Message
from ..meter import current_llm
from ..plan import render_text
from ..redaction import redact
from ..tools import ToolRegistry, tool

__all__ = ["DECIDE", "MAX_OPTIONS", "decide"]

MAX_OPTIONS = 20
MAX_OPTION_CHARS = 100
_HEAD = (
    "You make one decision. Reply with exactly one of the options given, written as given, "
    "and nothing else."
)


def _options(options: list[str]) -> list[str]:
    if not 2 <= len(options) <= MAX_OPTIONS:
        raise ToolFailed(f"decide takes 2 to {MAX_OPTIONS} options, not {len(options)}")
    if any(not o.strip() or len(o) > MAX_OPTION_CHARS or "\n" in o for o in options):
        raise ToolFailed(f"each option of decide is one line of 1 to {MAX_OPTION_CHARS} characters")
    if len({_folded(o) for o in options}) < len(options):
        raise ToolFailed("decide's options must differ (case aside)")
    return options


def _folded(text: str) -> str:
    return text.strip().strip("\"'`").rstrip(".").strip().casefold()


def _chosen(reply: str, options: list[str]) -> str | None:
    folded = _folded(reply)
    return next((o for o in options if _folded(o) == folded), None)


@tool(max_concurrency=8)
async def decide(question: str, input: Any = None, *, options: list[str]) -> str:
    """Ask the language model to choose one of a fixed set of outcomes; the result is exactly
    one of `options`, for a later task's condition (`... if $5 == "timeout"`).

    Args:
        question: what to decide
        input: the text (or result) the decision is about
        options: the outcomes, 2 to 20, e.g. ["timeout", "crash"]
    """
    options = _options(options)
    listed = ", ".join(f'"{o}"' for o in options)
    text = f"{question}\n\nOptions: {listed}"
    if input is not None:
        text += f"\n\nAbout:\n{render_text(input)}"
    messages = [Message("system", _HEAD), Message("user", redact(text))]
    reply = await _ask(messages, options)
    chosen = _chosen(reply, options)
    if chosen is None:
        again = f"Your reply {reply[:200]!r} is not one of the options. Reply with one of: {listed}"
        messages += [Message("assistant", reply), Message("user", again)]
        reply = await _ask(messages, options)
        chosen = _chosen(reply, options)
    if chosen is None:
        raise ToolFailed(
            f"the LLM's reply {reply[:200]!r}, given once more after it was told the options, "
            f"is none of them: {listed}"
        )
    return chosen


async def _ask(messages: list[Message], options: list[str]) -> str:
    grammar = "root ::= " + " | ".join(literal(o) for o in options)
    request = LLMRequest(
        messages=list(messages),
        max_tokens=max(16, max(len(o) for o in options)),
        grammar=grammar,
        purpose="tool",
    )
    try:
        return (await current_llm().complete(request)).strip()
    except LLMError as exc:
        transient = isinstance(exc, LLMConnectionError | LLMRateLimitError | LLMStreamError)
        error = RetryTool if transient else ToolFailed
        raise error(f"the LLM call failed: {exc.message}") from exc


DECIDE = ToolRegistry(decide)
