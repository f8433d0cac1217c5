"""`llm`: one call of the run's own LLM as a task, and `items`: a list the question spells out.

Together with a fan-out they split one prompt's independent parts into parallel calls
(PARALLELPROMPT): "translate these 12 sentences" plans as

    1. items(["first sentence", "second sentence", ...])
    2. llm("Translate into French: {input}", $1[*])
    3. join()

Each `llm` call goes through the run's meter (`meter.current_llm`): counted, budgeted, retried
by the recovery policy and journaled like the planner's calls, with the purpose `tool`.  With an
HTTP endpoint the calls run at once, at most `LLM_CONCURRENCY` (the tool's `max_concurrency`;
`ask_tools(max_concurrency=)` for another bound);
with the embedded model they queue on the one model, one after another, so a fan-out of `llm`
calls saves nothing there.  Text that is a known secret (an API key, a token from the
environment) is masked before it reaches the prompt.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import (
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMStreamError,
    RetryTool,
    ToolFailed,
)
from ..llm.base import LLMRequest, Message
from ..meter import current_llm
from ..plan import render_text
from ..redaction import redact
from ..tools import ToolRegistry, tool

__all__ = ["LLM_CONCURRENCY", "LLM_TOOL_HEAD", "MAX_ANSWER_TOKENS", "ask_tools", "items", "llm"]

LLM_CONCURRENCY = 8
MAX_ANSWER_TOKENS = 512
LLM_TOOL_HEAD = "Do exactly what the request asks and reply with the result only."


@tool(max_concurrency=LLM_CONCURRENCY)
async def llm(prompt: str, input: Any = None) -> str:
    """Ask the language model to do one text task (translate, rate, summarize, rewrite) and
    return its reply. Use it with $N[*] to run the same request on each item at once.

    Args:
        prompt: the request; {input} in it is replaced by `input`
        input: the text (or result) the request is about
    """
    text = prompt
    if input is not None:
        given = render_text(input)
        text = prompt.replace("{input}", given) if "{input}" in prompt else f"{prompt}\n\n{given}"
    request = LLMRequest(
        messages=[Message("system", LLM_TOOL_HEAD), Message("user", redact(text))],
        max_tokens=MAX_ANSWER_TOKENS,
        purpose="tool",
    )
    try:
        reply = await current_llm().complete(request)
    except LLMError as exc:
        # What the meter could not retry away may still pass later; the rest will not.
        transient = isinstance(exc, LLMConnectionError | LLMRateLimitError | LLMStreamError)
        error = RetryTool if transient else ToolFailed
        raise error(f"the LLM call failed: {exc.message}") from exc
    return reply.strip()


@tool
def items(values: list[Any]) -> list[Any]:
    """The list as written: the items a question lists, for $N[*] to go over one by one.

    Args:
        values: the items, e.g. ["first", "second"]
    """
    return values


def ask_tools(max_concurrency: int = LLM_CONCURRENCY) -> ToolRegistry:
    """`llm`, at most `max_concurrency` calls at once (what the endpoint takes), and `items`."""
    return ToolRegistry(dataclasses.replace(llm, max_concurrency=max_concurrency), items)
