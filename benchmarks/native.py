"""The native parallel function-calling baseline (the second baseline of the LLMCompiler
paper): a minimal loop on the openai SDK that runs every tool call of a model turn at once,
then sends the results back, turn after turn, until the model answers."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import anyio
import openai

from planweave import RunFailed, RunResult, Runtime, ToolRegistry

NATIVE_HEAD = "You answer questions by calling the provided functions."


@dataclass
class Outcome:
    """What one contestant produced for one question; `began` is when it was asked, on
    `time.monotonic()` (None where unknown)."""

    answer: str | None
    wall_s: float
    calls: int
    tokens: int
    began: float | None = None


def planweave_run(runtime: Runtime, question: str) -> tuple[Outcome, RunResult]:
    """Run one question through a planweave runtime, timed like every contestant; a failed
    run counts with what it has (no answer)."""
    began = time.monotonic()
    try:
        result = runtime.run(question)
    except RunFailed as failed:
        result = failed.result
    tokens = result.llm.prompt_tokens + result.llm.completion_tokens
    return Outcome(result.answer, result.wall_s, result.llm.calls, tokens, began), result


async def native_run(
    client: openai.AsyncOpenAI, model: str, tools: ToolRegistry, question: str, max_turns: int = 20
) -> Outcome:
    began = time.monotonic()
    schema: Any = [t.json_schema() for t in tools.values()]
    messages: list[Any] = [
        {"role": "system", "content": NATIVE_HEAD},
        {"role": "user", "content": f"Question: {question}"},
    ]
    calls = tokens = 0
    for _ in range(max_turns):
        response = await client.chat.completions.create(
            model=model, messages=messages, tools=schema
        )
        calls += 1
        if response.usage is not None:
            tokens += response.usage.total_tokens
        message = response.choices[0].message
        if not message.tool_calls:
            return Outcome(message.content, time.monotonic() - began, calls, tokens, began)
        messages.append(message.model_dump(exclude_none=True))
        results: dict[str, str] = {}
        async with anyio.create_task_group() as tg:
            for tc in message.tool_calls:
                if tc.type == "function":
                    tg.start_soon(
                        _call, tools, results, tc.id, tc.function.name, tc.function.arguments
                    )
        for tc in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": results[tc.id]})
    return Outcome(None, time.monotonic() - began, calls, tokens, began)


async def _call(
    tools: ToolRegistry, results: dict[str, str], call_id: str, name: str, arguments: str
) -> None:
    try:
        value = await anyio.to_thread.run_sync(lambda: tools[name].invoke(json.loads(arguments)))
        results[call_id] = value if isinstance(value, str) else json.dumps(value)
    except Exception as exc:  # a tool error goes back to the model, as the SDKs do
        results[call_id] = f"ERROR: {exc}"
