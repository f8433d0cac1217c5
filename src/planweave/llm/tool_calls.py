"""Native function calling for a model run in-process (`local`): the convention of the
embedded models' chat template (Qwen2.5's, Hermes style), written out by planweave because
llama.cpp's template function renders roles and text only.

The tools' JSON schemas go at the end of the system message inside `<tools></tools>`; the
model answers with text, or with one `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
block per call; an assistant turn's calls are written back the same way, and the results go
to the model as a user turn of `<tool_response>` blocks, one per call, in order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .base import Message, ToolCall

__all__ = ["MAX_CALLS", "read_tool_calls", "untagged", "with_tools"]

MAX_CALLS = 64  # calls read from one reply; a reply that writes more is cut there

_TOOLS_HEAD = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)
# The tags the template writes calls, tool lists and results in (`<tool_call>` is one token).
_TAG_RE = re.compile(r"<(?=/?(?:tool_call|tool_response|tools)>)")


def untagged(text: str) -> str:
    """`text` with no tag of the template's: a zero-width non-joiner after the `<` of one, which
    the model reads as the text it was.  A tool's result holding `</tool_response>` would
    otherwise end its result and write on as something else."""
    return _TAG_RE.sub("<\u200c", text) if "<" in text else text


# A call block; the last may be cut off by the token limit (no closing tag).
_CALL_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)  # linear: no \s* around


def with_tools(
    messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]
) -> list[dict[str, str]]:
    """`messages` as the template reads them, `tools` (OpenAI function schemas) offered in the
    system message, earlier calls and their results written in the model's own tags."""
    listed = (untagged(json.dumps(t, ensure_ascii=False)) for t in tools)
    offered = _TOOLS_HEAD + "".join(f"\n{schema}" for schema in listed)
    offered += _TOOLS_TAIL
    out: list[dict[str, str]] = []
    if not messages or messages[0].role != "system":
        out.append({"role": "system", "content": offered})
    for message in messages:
        content = untagged(message.content)
        if message.role == "system" and not out:
            out.append({"role": "system", "content": f"{content}\n\n{offered}"})
        elif message.role == "tool":
            response = f"<tool_response>\n{content}\n</tool_response>"
            if (
                out
                and out[-1]["role"] == "user"
                and out[-1]["content"].endswith("</tool_response>")
            ):
                out[-1]["content"] += "\n" + response
            else:
                out.append({"role": "user", "content": response})
        elif message.tool_calls:
            written = [_written(call) for call in message.tool_calls]
            text = "\n".join(([content] if content else []) + written)
            out.append({"role": "assistant", "content": text})
        else:
            out.append({"role": message.role, "content": content})
    return out


def _written(call: ToolCall) -> str:
    """A call as the model writes one; arguments that are no JSON stay as the text they were."""
    try:
        arguments = json.loads(call.arguments or "{}")
    except (ValueError, RecursionError):
        arguments = call.arguments
    body = json.dumps({"name": call.name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{untagged(body)}\n</tool_call>"


def read_tool_calls(text: str) -> tuple[str, tuple[ToolCall, ...]]:
    """A reply's text outside its call blocks, and its calls (ids `call_0`, `call_1`, ...).
    A block that is no `{"name": ..., "arguments": {...}}` object is still a call, named as
    far as it can be read, so that native mode answers it with the error (the model then
    writes it again) rather than taking the block for the answer.  Without blocks, a reply
    that is only such objects (bare, a list of them, or in ```json fences, as the coder model
    writes them) is read as its calls."""
    calls: list[ToolCall] = []
    for match in _CALL_RE.finditer(text):
        if len(calls) == MAX_CALLS:
            break
        calls.append(_call(f"call_{len(calls)}", match.group(1).strip()))
    if calls:
        return _CALL_RE.sub("", text).strip(), tuple(calls)
    return _unfenced_calls(text)


_FENCE_RE = re.compile(r"```(?:json)?(.*?)(?:```|\Z)", re.S)


def _unfenced_calls(text: str) -> tuple[str, tuple[ToolCall, ...]]:
    """The calls of a reply written as JSON call objects: in ```json fences (the words around
    them kept as its text), or bare, one after another or in a list, and nothing else."""
    fenced = [m.group(1) for m in _FENCE_RE.finditer(text)]
    objects = [o for body in fenced for o in _objects(body)] if fenced else _objects(text)
    if not objects or not all(
        isinstance(o, dict) and {"name", "arguments"} <= o.keys() for o in objects
    ):
        return text, ()
    calls = [
        _call(f"call_{i}", json.dumps(o, ensure_ascii=False))
        for i, o in enumerate(objects[:MAX_CALLS])
    ]
    return (_FENCE_RE.sub("", text).strip() if fenced else ""), tuple(calls)


def _objects(text: str) -> list[Any]:
    """The JSON values `text` holds one after another (a list's items for a list); none
    unless it is JSON values and nothing else."""
    decoder, values, at = json.JSONDecoder(), [], 0
    text = text.strip()
    while at < len(text):
        try:
            value, end = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            return []
        values.extend(value if isinstance(value, list) else [value])
        at = end
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
    return values


def _call(call_id: str, body: str) -> ToolCall:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return ToolCall(call_id, "", body)
    if not isinstance(data, dict):
        return ToolCall(call_id, "", body)
    name, arguments = data.get("name"), data.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return ToolCall(call_id, name if isinstance(name, str) else "", arguments)
