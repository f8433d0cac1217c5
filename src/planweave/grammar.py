"""GBNF grammars, generated from the tool registry, that make every plan and answer parse.

Backends that take a grammar (the embedded llama.cpp model, llama.cpp server, vLLM) constrain
decoding with them; the others ignore them, and the parser's validation still applies.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from typing import Any

from .llm.base import PromptStyle
from .tools import Param, Tool, ToolRegistry

__all__ = ["joiner_grammar", "plan_grammar", "react_grammar"]

_COMMON = r"""
ws ::= [ ]?
id ::= [1-9] [0-9]?
text ::= [^\n]{0,300}
string ::= "\"" ( [^"\\\n] | "\\" ["\\/nt] )* "\""
int ::= "-"? [0-9]+
number ::= "-"? [0-9]+ ( "." [0-9]+ )? ( [eE] "-"? [0-9]+ )?
bool ::= "True" | "False"
ref ::= "$" [1-9] [0-9]? projection*
projection ::= "." [a-zA-Z_] [a-zA-Z0-9_]* | "[" [0-9]+ "]" | "[\"" [a-zA-Z0-9_ ]+ "\"]"
list ::= "[" ws ( value ( "," ws value )* )? ws "]"
value ::= string | number | bool | "None" | ref | list
"""


def _rule_name(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9-]", "-", text).lower()


def _value_rule(annotation: Any) -> str:
    """The grammar rule for one parameter's values; a reference is always allowed."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return "value"
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        rules = sorted({_value_rule(a) for a in options})
        if type(None) in typing.get_args(annotation):
            rules.append('"None"')
        return "( " + " | ".join(rules) + " )" if len(rules) > 1 else rules[0]
    if origin is typing.Literal:
        literals = [
            f'"\\"{a}\\""' if isinstance(a, str) else f'"{a}"' for a in typing.get_args(annotation)
        ]
        return "( " + " | ".join([*literals, "ref"]) + " )"
    if annotation is bool:
        return "( bool | ref )"
    if annotation is int:
        return "( int | ref )"
    if annotation is float:
        return "( number | ref )"
    if annotation is str:
        return "( string | ref )"
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple):
        return "( list | ref )"
    return "value"


def _call_rules(tool: Tool) -> tuple[str, list[str]]:
    name = f"call-{_rule_name(tool.name)}"
    required: list[Param] = [p for p in tool.params if p.required]
    optional: list[Param] = [p for p in tool.params if not p.required]
    pieces: list[str] = []
    for i, p in enumerate(required):
        sep = '", " ' if i else ""
        # A required argument may be written positionally or by keyword.
        pieces.append(f'{sep}( "{p.name}=" )? {_value_rule(p.annotation)}')
    for i, p in enumerate(optional):
        sep = '", " ' if required or i else ""
        pieces.append(f'( {sep}"{p.name}=" {_value_rule(p.annotation)} )?')
    body = " ".join(pieces)
    return name, [f'{name} ::= "{tool.name}(" {body} ")"']


def _calls(tools: ToolRegistry) -> tuple[str, list[str]]:
    names: list[str] = []
    rules: list[str] = []
    for t in tools.values():
        name, tool_rules = _call_rules(t)
        names.append(name)
        rules.extend(tool_rules)
    return " | ".join(names) if names else '"join()"', rules


def _plan_rules(tools: ToolRegistry) -> list[str]:
    calls, rules = _calls(tools)
    head = [
        "plan ::= ( thought | task )* join",
        'thought ::= "Thought: " text "\\n"',
        'task ::= id ". " call "\\n"',
        'join ::= id ". join()" "\\n"? "<END_OF_PLAN>"',
        f"call ::= {calls}",
    ]
    return [*head, *rules]


def plan_grammar(tools: ToolRegistry) -> str:
    """Thought lines, numbered calls of registered tools with typed arguments, then
    `N. join()` and `<END_OF_PLAN>`."""
    return "\n".join(["root ::= plan", *_plan_rules(tools)]) + _COMMON


def joiner_grammar(style: PromptStyle = "full", tools: ToolRegistry | None = None) -> str:
    """`Thought: ...` then `Action: Finish(...)` or `Action: Replan(...)`; in the compact
    style the thought may be left out; with `tools`, a Replan line may be followed by the next
    plan (the plan grammar's lines)."""
    # With the plan's rules, whose `text` is a plan thought's, the joiner's is `reason`.
    text = "text" if tools is None else "reason"
    thought = f'"Thought: " {text} "\\n"'
    head = [
        f'root ::= {f"( {thought} )?" if style == "compact" else thought} "Action: " action',
        'action ::= "Finish(" answer ")" | "Replan(" answer ")"'
        + (' ( "\\n" plan )?' if tools is not None else ""),
        "answer ::= [^\\n]{1,600}",
        # Bounded, so a small model caught in a loop must still come to its Action.
        f"{text} ::= [^\\n]{{0,400}}",
    ]
    if tools is None:
        return "\n".join(head) + "\n"
    return "\n".join([*head, *_plan_rules(tools)]) + _COMMON


def react_grammar(tools: ToolRegistry) -> str:
    """One ReAct step: a thought and either a tool call or `Finish(...)`."""
    calls, rules = _calls(tools)
    head = [
        'root ::= "Thought: " text "\\n" "Action: " ( call | "Finish(" answer ")" )',
        "answer ::= [^\\n]{1,600}",
        f"call ::= {calls}",
    ]
    return "\n".join([*head, *rules]) + _COMMON
