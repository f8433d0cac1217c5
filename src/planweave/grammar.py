"""GBNF grammars, generated from the tool registry, that make every plan and answer parse.

Backends that take a grammar (the embedded llama.cpp model, llama.cpp server, vLLM) constrain
decoding with them; the others ignore them, and the parser's validation still applies.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from .llm.base import PromptStyle
from .tools import Param, Tool, ToolRegistry

__all__ = [
    "COMMON_RULES",
    "call_rules",
    "joiner_grammar",
    "literal",
    "plan_grammar",
    "react_grammar",
    "reading_rules",
    "schema_grammar",
]

# `string` is a Python string literal the parser reads back as written: no raw line break,
# carriage return or NUL, only the escapes Python and JSON agree on (never a `$` spelled as
# `\u0024`), and a `$` followed by a plain character, a control character or `${` opening a
# reference (`${1}`, `${2.name}`, `${3[0]}`).  A dict's `key` holds no reference, not even `$1`.
_REF_RULE = 'ref ::= "$" [1-9] [0-9]? projection* ( "[*]" projection* )?'
COMMON_RULES = r"""
ws ::= [ ]?
id ::= [1-9] [0-9]?
text ::= [^\n]{0,300}
string ::= "\"" ( char | dollar )* "$"* "\""
dollar ::= "$"+ ( [^{"\\\n\r\x00$] | control | "{" [1-9] [0-9]? inner-path "}" )
inner-path ::= inner-projection* ( "[*]" inner-projection* )?
key ::= "\"" ( char | "$"+ ( [^{"\\\n\r\x00$0-9] | control ) )* "$"* "\""
control ::= "\\" ( ["\\nt] | "u00" [01] hex | "u007f" )
char ::= [^"\\\n\r\x00$] | escape
escape ::= "\\" ( ["\\nt] | "u" code )
code ::= [1-9a-fA-F] hex hex hex | "0" [1-9a-fA-F] hex hex | "00" code-00
code-00 ::= [013-9a-fA-F] hex | "2" [0-35-9a-fA-F]
hex ::= [0-9a-fA-F]
inner-projection ::= "." [a-zA-Z_] [a-zA-Z0-9_]* | "[" index "]"
index ::= "0" | [1-9] [0-9]*
int ::= "-"? ( "0" | [1-9] [0-9]* )
number ::= int ( "." [0-9]{1,24} )? ( [eE] [-+]? [0-9]{1,3} )?
bool ::= "True" | "False"
ref ::= "$" [1-9] [0-9]? projection* ( "[*]" projection* )?
projection ::= "." [a-zA-Z_] [a-zA-Z0-9_]* | "[" index "]" | "[\"" [a-zA-Z0-9_ ]+ "\"]"
list ::= "[" ws ( value ( "," ws value )* )? ws "]"
dict ::= "{" ws ( key ":" ws value ( "," ws key ":" ws value )* )? ws "}"
value ::= string | number | bool | "None" | ref | list | dict
"""


def literal(text: str) -> str:
    """`text` as a GBNF terminal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped.replace(chr(13), chr(92) + "r")}"'


def _python_literal(value: Any) -> str | None:
    """How a plan writes one `Literal[...]` value, as the parser reads it back."""
    if isinstance(value, str):
        # JSON's spelling of a string is a Python string literal with the same value.
        return json.dumps(value, ensure_ascii=False)
    if value is None or isinstance(value, bool | int):
        return repr(value)
    return None  # bytes and enum members have no spelling in a plan


# A value of these types written as it is, not a reference.
_PLAIN: dict[Any, str] = {str: "string", int: "int", float: "number", bool: "bool"}


class _Rules:
    """The grammar rules for one registry's calls, each typed rule written once."""

    def __init__(self, bound: Mapping[str, Sequence[str]] | None = None) -> None:
        self.rules: list[str] = []
        self._named: dict[str, str] = {}
        self._bound = bound or {}

    def _name(self, prefix: str, body: str) -> str:
        if body not in self._named:
            name = f"{prefix}-{len(self._named) + 1}"
            self._named[body] = name
            self.rules.append(f"{name} ::= {body}")
        return self._named[body]

    def value(self, annotation: Any) -> str:
        """The rule for one parameter's values; a reference is always allowed."""
        if annotation is inspect.Parameter.empty or annotation is Any:
            return "value"
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is typing.Annotated:
            return self.value(args[0])  # constraints are checked by validation
        if origin in (typing.Union, types.UnionType):
            rules = sorted({self.value(a) for a in args if a is not type(None)})
            if type(None) in args:
                rules.append('"None"')
            return "( " + " | ".join(rules) + " )" if len(rules) > 1 else rules[0]
        if origin is typing.Literal:
            spelled = [_python_literal(a) for a in args]
            literals = [literal(t) for t in spelled if t is not None]
            return "( " + " | ".join([*literals, "ref"]) + " )"
        if annotation is bool:
            return "( bool | ref )"
        if annotation is int:
            return "( int | ref )"
        if annotation is float:
            return "( number | ref )"
        if annotation is str:
            return "( string | ref )"
        if origin is tuple and args and args[-1] is not Ellipsis:
            items = ' "," ws '.join(self.value(a) for a in args)
            return f'( "[" ws {items} ws "]" | ref )'
        if origin in (list, tuple, set, frozenset) or annotation in (list, tuple, set, frozenset):
            item = self.value(args[0]) if args else "value"
            if item == "value":
                return "( list | ref )"
            body = f'"[" ws ( {item} ( "," ws {item} )* )? ws "]"'
            return f"( {self._name('list', body)} | ref )"
        if origin is dict or annotation is dict:
            key = "int" if args and args[0] is int else "key"
            item = self.value(args[1]) if len(args) == 2 else "value"
            if item == "value" and key == "key":
                return "( dict | ref )"
            pair = f'{key} ":" ws {item}'
            body = f'"{{" ws ( {pair} ( "," ws {pair} )* )? ws "}}"'
            return f"( {self._name('dict', body)} | ref )"
        return "value"

    def _argument(self, param: Param) -> str:
        """The rule for one argument's values: the values `bound` gives an argument of this
        name (as a plan writes them: `{user}`, a quoted text) or a reference, else by its
        type."""
        named = self._bound.get(param.name)
        if not named:
            return self.value(param.annotation)
        plain = _PLAIN.get(param.annotation)
        if any(n.startswith("$") for n in named) and plain is not None:
            # A result's field named like the argument: that field or a value, no other
            # result (the 1.5B model passed `resource_id=$2.env` beside `$2.resource_id`).
            return "( " + " | ".join([*(literal(n) for n in named), plain]) + " )"
        return "( " + " | ".join([*(literal(n) for n in named), "ref"]) + " )"

    def call(self, index: int, tool: Tool) -> str:
        """The rule for a call of `tool`: some arguments positional, the rest by keyword (in
        the declared order) or left out; a positional-only one never by keyword, a
        keyword-only one never by position.  The choice
        is factored (`a ( ", " b ... | ", c=" ... )`) so that decoding keeps few stacks."""
        values = [self._argument(p) for p in tool.params]
        params = tool.params

        def after(j: int) -> str:
            # What may follow j positional arguments.
            rest = list(zip(params[j:], values[j:], strict=True))
            keywords = [(p, v) for p, v in rest if not p.positional_only]
            tail = None  # keywords cannot finish the call while a positional-only one is due
            if not any(p.positional_only and p.required for p, _ in rest):
                tail = _first_keywords(keywords) if j == 0 else _keywords_text(keywords)
            more = None
            if j < len(params) and not params[j].keyword_only:
                comma = '", " ' if j else ""
                more = f"{comma}{values[j]} {after(j + 1)}".rstrip()
            options = [o for o in (more, tail) if o]
            if not options:
                return ""
            text = " | ".join(f"( {o} )" for o in options)
            # Writing nothing more is allowed when the keyword tail may be empty.
            return f"( {text} )?" if tail == "" else f"( {text} )"

        name = f"call-{index}-{re.sub(r'[^a-zA-Z0-9]', '-', tool.name).lower()}"
        body = " ".join(part for part in (literal(tool.name + "("), after(0), '")"') if part)
        self.rules.append(f"{name} ::= {body}")
        return name


def _keywords_text(keywords: list[tuple[Param, str]]) -> str:
    return " ".join(_keywords(keywords, comma=True))


def _keywords(keywords: list[tuple[Param, str]], *, comma: bool) -> list[str]:
    """Keyword arguments in order, each after a comma; the optional ones may be left out."""
    items = []
    for p, v in keywords:
        item = f"{literal((', ' if comma else '') + p.name + '=')} {v}"
        items.append(item if p.required else f"( {item} )?")
        comma = True
    return items


def _first_keywords(keywords: list[tuple[Param, str]]) -> str:
    """Keyword arguments with nothing before them: the first one written has no comma, so
    each option starts at a different one (up to the first required one)."""
    options = []
    for i, (p, v) in enumerate(keywords):
        first = f"{literal(p.name + '=')} {v}"
        options.append(" ".join([first, *_keywords(keywords[i + 1 :], comma=True)]))
        if p.required:
            return " | ".join(f"( {o} )" for o in options)
    return "( " + " | ".join(f"( {o} )" for o in options) + " )?" if options else ""


def call_rules(
    tools: ToolRegistry, bound: Mapping[str, Sequence[str]] | None = None
) -> tuple[str, list[str]]:
    """The rule naming every tool's call and the rules they use; `bound`: by argument name,
    the values that argument takes, as a plan writes them (`{user}`: a named plan's parameter),
    nothing else but a reference; where one is a result's field (`$2.resource_id`), nothing
    else but a value of the argument's type."""
    rules = _Rules(bound)
    names = [rules.call(i, t) for i, t in enumerate(tools.values(), 1)]
    return " | ".join(names) if names else '"join()"', rules.rules


# A task's condition (`branches`), in the plan's own spelling: up to three comparisons (or
# tests) of references, parameters and literals, joined by `and`/`or`, each maybe after `not`;
# a few functions of one reference.  No parentheses and no more terms: the 1.5B model, compiling
# runbooks, chained `and ${1} != ${N}` to its token limit, and with more terms allowed filled
# them all with copies of one comparison (three comparisons state every runbook's conditions
# here: `not a or not b` is `not (a and b)`).
_CONDITION = [
    'condition ::= " if " cond-term ( cond-join cond-term ){0,2}',
    'cond-join ::= " and " | " or "',
    'cond-term ::= "not " cond-cmp | cond-cmp',
    "cond-cmp ::= cond-operand ( cond-op cond-operand )?",
    'cond-op ::= " == " | " != " | " < " | " > " | " <= " | " >= " | " in " | " not in "',
    # A text in a condition is compared as written: never a reference inside it (`"${3}"`).
    'cond-operand ::= ref | "${" [1-9] [0-9]? inner-path "}" | number | key | bool | "None" '
    '| cond-fn "(" ref ")"',
    'cond-fn ::= "len" | "min" | "max" | "sum" | "any" | "all"',
]


def _plan_rules(
    tools: ToolRegistry, plan_answers: bool = False, branches: bool = False, thought: bool = False
) -> list[str]:
    calls, rules = call_rules(tools)
    # With plan answers, a plan may end with its answer: `join("... ${3} ...")` or `join($3)`.
    join = '". join(" ( string | ref )? ")"' if plan_answers else '". join()"'
    head = [
        # One thought, first: a thought after a task led the 1.5B model to write that task
        # again (BFCL: "2. <the same call>" after "Thought: <why task 1>").
        # With branches the first task has no condition: no earlier result exists for one to
        # read (the 1.5B model, compiling runbooks, wrote `1. disk_usage(...) if ${1...}`).
        f"plan ::= thought{'' if thought else '?'} {'first ' if branches else ''}task* join",
        'thought ::= "Thought: " text "\\n"',
        f'task ::= id ". " call{" condition?" if branches else ""} "\\n"',
        *(['first ::= id ". " call "\\n"'] if branches else []),
        f'join ::= id {join} "\\n"? "<END_OF_PLAN>"',
        f"call ::= {calls}",
    ]
    return [*head, *(_CONDITION if branches else []), *rules]


def plan_grammar(
    tools: ToolRegistry,
    *,
    plan_answers: bool = False,
    branches: bool = False,
    params: Sequence[str] = (),
    thought: bool = False,
) -> str:
    """An opening thought line, numbered calls of registered tools with typed arguments, then
    `N. join()` and `<END_OF_PLAN>`; with `plan_answers`, the join may carry the plan's answer
    (a string with `${<id>}` where results go, or `$<id>`); with `branches` (opt-in, for plans
    compiled from runbooks: the planner's own grammar stays as its accuracy was measured), a
    task may end with `if <condition>`.  `params`: a named plan's parameters (`runbooks`),
    written `{name}` wherever a reference may stand (and inside strings, as any text).  With
    `thought`, the opening thought is not optional (the planner's examples all open with one)."""
    rules = _plan_rules(tools, plan_answers, branches, thought)
    common = COMMON_RULES
    if params:
        names = " | ".join(literal(p) for p in params)
        common = common.replace(_REF_RULE, f'{_REF_RULE} | "{{" ( {names} ) "}}"')
        if branches:
            rules = _first_without_references(rules, names)
    return "\n".join(["root ::= plan", *rules]) + common


# The rules a call's arguments (and a condition) are written with, which `reading_rules` copies
# for a task that may read only some results: its references name only those ids (or
# parameters).
_VALUE_RULE_RE = re.compile(
    r"(?<![\w-])(ref|string|value|list(?:-\d+)?|dict(?:-\d+)?|call(?:-[\w-]+)?"
    r"|condition|cond-[\w-]+)(?![\w-])"
)
_QUOTED_RE = re.compile(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]')
_ANY_ID = "[1-9] [0-9]?"


def reading_rules(rules: list[str], prefix: str, ids: Sequence[int], params: str) -> list[str]:
    """Copies of the call rules (and the condition's) named `<prefix>-...`, in which a
    reference names only a task in `ids` or a parameter `{name}` (`params`: their
    alternatives, or empty), and a string holds references to those ids only (none without
    ids).  The first task of a runbook's plan reads no result (the 1.5B model wrote
    `1. cert_info($1.domain)` for the parameter in six of ten); a step's task only earlier ones."""

    def renamed(text: str) -> str:
        def rename(m: re.Match[str]) -> str:
            return f"{prefix}-{m.group(1)}"

        parts, last = [], 0
        for quoted in _QUOTED_RE.finditer(text):  # terminals and classes are left as written
            parts += [_VALUE_RULE_RE.sub(rename, text[last : quoted.start()]), quoted.group()]
            last = quoted.end()
        return "".join([*parts, _VALUE_RULE_RE.sub(rename, text[last:])])

    copied = [r for r in rules if re.match(r"(call(-[\w-]+)?|list-\d+|dict-\d+) ::=", r)]
    copied += _CONDITION if ids else []  # a condition reads a result
    out = [renamed(r).replace(_ANY_ID, f"{prefix}-id") for r in copied]
    refs = []
    if ids:
        out.append(f"{prefix}-id ::= " + " | ".join(literal(str(i)) for i in sorted(ids)))
        refs.append(f'"$" {prefix}-id projection* ( "[*]" projection* )?')
        out.append(f'{prefix}-string ::= "\\"" ( char | {prefix}-dollar )* "$"* "\\""')
        out.append(
            f'{prefix}-dollar ::= "$"+ ( [^{{"\\\\\\n\\r\\x00$] | control '
            f'| "{{" {prefix}-id inner-path "}}" )'
        )
    else:
        out.append(f"{prefix}-string ::= key")
    if params:
        refs.append(f'"{{" ( {params} ) "}}"')
    if refs:
        out.append(f"{prefix}-ref ::= " + " | ".join(refs))
    value = f'key | number | bool | "None" | {prefix}-list | {prefix}-dict'
    if ids:
        value = f'{prefix}-string | number | bool | "None" | {prefix}-list | {prefix}-dict'
    if refs:
        value += f" | {prefix}-ref"
    out += [
        f"{prefix}-value ::= {value}",
        f'{prefix}-list ::= "[" ws ( {prefix}-value ( "," ws {prefix}-value )* )? ws "]"',
        f'{prefix}-dict ::= "{{" ws ( key ":" ws {prefix}-value ( "," ws key ":" ws '
        f'{prefix}-value )* )? ws "}}"',
    ]
    if not refs:  # no reference at all: the rules that offer one lose it
        out = [re.sub(rf" \| {prefix}-ref(?![\w-])|{prefix}-ref \| ", "", r) for r in out]
        # Where only a reference could stand (a Literal whose values a plan cannot spell),
        # `None`, which validation refuses by name.
        out.append(f'{prefix}-ref ::= "None"')
    return out


def _first_without_references(rules: list[str], params: str) -> list[str]:
    """`rules` with the first task's call read by `reading_rules` copies that read no result."""
    return [
        *(r.replace('first ::= id ". " call', 'first ::= id ". " first-call') for r in rules),
        *reading_rules(rules, "first", (), params),
    ]


# What a bare answer may not start with, in any case and with whitespace before the `:` or `(`:
# the parser would read it as an action (prompts' `_ACTION_START_RE`, ASCII rules as here).
_ACTION_WORDS = {"action": ":", "finish": "(", "replan": "(", "thought": ":"}
_WS = " \\t\\r\\x0B\\x0C"  # ASCII whitespace but the line break (a bare answer is one line)


def _bare_rules() -> list[str]:
    """`bare`: a one-line answer as plain text that does not start like an action (nor with
    whitespace), so the parser reads it as the answer it is.  One rule per letter of each
    action word: the answer may end there, go on with another letter, or go on with the word."""
    firsts = "".join(w[0] + w[0].upper() for w in _ACTION_WORDS)
    options = [f"[^{firsts}{_WS}\\n] rest"]
    rules = ["rest ::= [^\\n]{0,599}"]
    for word, delimiter in _ACTION_WORDS.items():
        options.append(f"[{word[0]}{word[0].upper()}] bare-{word}-1")
        for k in range(1, len(word)):
            c = word[k] + word[k].upper()
            after = f"bare-{word}-{k + 1}"
            rules.append(f"bare-{word}-{k} ::= ( [^{c}\\n] rest | [{c}] {after} )?")
        # The whole word: blanks (a few), then anything but the delimiter, or nothing more.
        rules.append(f"bare-{word}-{len(word)} ::= [{_WS}]{{0,8}} ( [^{_WS}\\n{delimiter}] rest )?")
    return ["bare ::= " + " | ".join(options), *rules]


def joiner_grammar(
    style: PromptStyle = "full",
    tools: ToolRegistry | None = None,
    *,
    plan_answers: bool = False,
    finish_only: bool = False,
) -> str:
    """`Thought: ...` then `Action: Finish(...)` or `Action: Replan(...)`; in the compact
    style the thought may be left out and the answer may come bare, as one line of plain text
    (one that does not start like an action); with `tools`, a Replan line may be followed by
    the next plan (the plan grammar's lines, its join carrying an answer with `plan_answers`).
    `finish_only`, for the last round, when no plan can run any more: the reply must be an
    answer (saying what could not be found, if so)."""
    # With the plan's rules, whose `text` is a plan thought's, the joiner's is `reason`.
    text = "text" if tools is None else "reason"
    thought = f'"Thought: " {text} "\\n"'
    compact = style == "compact"
    reply = '( "Action: " action | bare )' if compact else '"Action: " action'
    head = [
        f"root ::= {f'( {thought} )?' if compact else thought} {reply}",
        'action ::= "Finish(" finish-answer ")"'
        + ("" if finish_only else ' | "Replan(" answer ")"')
        + (' ( "\\n" plan )?' if tools is not None and not finish_only else ""),
        "answer ::= [^\\n]{1,600}",
        _FINISH_ANSWER,
        # Bounded, so a small model caught in a loop must still come to its Action.
        f"{text} ::= [^\\n]{{0,400}}",
        *(_bare_rules() if compact else ()),
    ]
    if tools is None or finish_only:
        return "\n".join(head) + "\n"
    return "\n".join([*head, *_plan_rules(tools, plan_answers)]) + COMMON_RULES


_FINISH_ANSWER = "finish-answer ::= [^\\n]{1,600}"
_YES_NO_ANSWER = 'finish-answer ::= ( "Yes" | "No" ) [^\\n]{0,597}'


def yes_no_answers(grammar: str) -> str:
    """A joiner grammar whose answer starts with Yes or No, for a yes/no question (the 1.5B
    model told to answer one Yes or No first still wrote a sentence about something else);
    a Replan's text and a plan are as before."""
    text = grammar.replace(_FINISH_ANSWER, _YES_NO_ANSWER, 1)
    return text.replace("| bare )", "| finish-answer )", 1)


def react_grammar(tools: ToolRegistry) -> str:
    """One ReAct step: a thought and either a tool call or `Finish(...)`."""
    calls, rules = call_rules(tools)
    head = [
        'root ::= "Thought: " text "\\n" "Action: " ( call | "Finish(" answer ")" )',
        "answer ::= [^\\n]{1,600}",
        f"call ::= {calls}",
    ]
    return "\n".join([*head, *rules]) + COMMON_RULES


# A typed answer (`output_type`, `--output-schema`): one JSON value of the schema.  Whitespace and
# numbers are bounded, so that a small model cannot decode forever between or inside values (a
# string is bounded by the request's max_tokens).
_JSON_COMMON = r"""
ws ::= [ \t\n]{0,8}
json-string ::= "\"" ( json-char )* "\""
json-char ::= [^"\\\x00-\x1F\x7F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
json-integer ::= "-"? ( "0" | [1-9] [0-9]{0,17} )
json-number ::= json-integer ( "." [0-9]{1,17} )? ( [eE] [-+]? [0-9]{1,3} )?
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" ws ( json-pair ( "," ws json-pair )* )? "}"
json-pair ::= json-string ws ":" ws json-value ws
json-array ::= "[" ws ( json-value ws ( "," ws json-value ws )* )? "]"
"""

_JSON_TYPES = {
    "string": "json-string",
    "integer": "json-integer",
    "number": "json-number",
    "boolean": "json-boolean",
    "null": "json-null",
}


def schema_grammar(schema: dict[str, Any]) -> str:
    """A GBNF grammar of the JSON values `schema` (a JSON Schema, as pydantic writes one)
    describes: objects with every property, in the schema's order (optional ones too, so the
    value meets the schema whichever it leaves out; a property no value meets, `false`, left
    out), arrays of their items, enums and consts, `anyOf`/`oneOf` and `type` lists as
    alternatives, local `$ref`s (JSON pointers into the schema, recursion included) as rules
    of their own.  Every node of the schema is one rule, written once, so the grammar grows
    with the schema, not with its nesting.  What it does not read (`pattern`, bounds, formats)
    it leaves to the validation after decoding.  A `$ref` that leads nowhere, or only to
    itself, is a ValueError (`typed.OutputShape` refuses such schemas first)."""
    rules = _SchemaRules(schema)
    rules.rules["root"] = ""  # first, for whoever reads the grammar
    rules.rules["root"] = f"ws {rules.rule(schema, '#')} ws"
    lines = [f"{name} ::= {body}" for name, body in rules.rules.items()]
    return "\n".join(lines) + _JSON_COMMON


class _SchemaRules:
    """The rules of one schema's grammar: one per node (`where` it is found names it in
    errors only)."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.rules: dict[str, str] = {}
        self.names: dict[int, str] = {}  # a node (by identity: a shared one is one rule) -> rule
        self.following: list[str] = []  # the $refs being followed, to catch a circle of them

    def rule(self, node: Any, where: str) -> str:
        """The name of the rule for `node` (found at pointer `where`), made when first met."""
        if not isinstance(node, dict) or not node:
            return "json-value"
        if set(node) <= {"$ref", "description", "title"}:
            return self._ref(str(node["$ref"])) if "$ref" in node else "json-value"
        name = self.names.get(id(node))
        if name is None:
            name = self.names[id(node)] = f"n{len(self.names)}"
            self.rules[name] = "json-value"  # a placeholder while its body refers back to it
            following, self.following = self.following, []  # a value in between: no circle
            try:
                self.rules[name] = self._body(node, where)
            finally:
                self.following = following
        return name

    def _ref(self, ref: str) -> str:
        node = _pointed(self.root, ref)
        if id(node) in self.names:
            return self.names[id(node)]  # recursion through a value: the rule names itself
        if ref in self.following:
            raise ValueError(f"$ref {ref!r} leads only to itself")
        self.following.append(ref)
        try:
            return self.rule(node, ref)
        finally:
            self.following.pop()

    def _body(self, node: dict[str, Any], where: str) -> str:
        if "$ref" in node:  # a $ref beside other keywords: the referred node decides here
            return self._ref(str(node["$ref"]))
        if "const" in node:
            return literal(json.dumps(node["const"], ensure_ascii=False))
        if "enum" in node:
            values = [literal(json.dumps(v, ensure_ascii=False)) for v in node["enum"]]
            return "( " + " | ".join(values) + " )" if values else "json-value"
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list):
                options = [self.rule(s, f"{where}/{key}/{i}") for i, s in enumerate(node[key])]
                return "( " + " | ".join(options) + " )" if options else "json-value"
        kind = node.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        if kind is None and "properties" in node:
            kinds = ["object"]
        return "( " + " | ".join(self._typed(node, where, str(k)) for k in kinds) + " )"

    def _typed(self, node: dict[str, Any], where: str, kind: str) -> str:
        """The expression of `node` as a value of JSON type `kind`."""
        if kind == "object":
            return self._object(node, where)
        if kind == "array":
            if isinstance(node.get("prefixItems"), list):  # a tuple: its items in order
                items = node["prefixItems"]
                parts = [self.rule(s, f"{where}/prefixItems/{i}") for i, s in enumerate(items)]
                return '"[" ws ' + ' "," ws '.join(f"{p} ws" for p in parts) + ' "]"'
            item = self.rule(node.get("items", {}), f"{where}/items")
            return f'"[" ws ( {item} ws ( "," ws {item} ws )* )? "]"'
        return _JSON_TYPES.get(kind, "json-value")

    def _object(self, node: dict[str, Any], where: str) -> str:
        """An object of the node's properties, every one, in order; without properties, any
        object (a `dict[str, X]` has its values' type)."""
        properties = node.get("properties") or {}
        if not isinstance(properties, dict) or not properties:
            extra = node.get("additionalProperties")
            if not isinstance(extra, dict):
                return "json-object"
            value = self.rule(extra, f"{where}/additionalProperties")
            pair = f'json-string ws ":" ws {value} ws'
            return f'"{{" ws ( {pair} ( "," ws {pair} )* )? "}}"'
        members = []
        for key, sub in properties.items():
            if sub is False:
                continue  # no value meets it: the property cannot be there
            name = literal(json.dumps(key, ensure_ascii=False))
            members.append(f'{name} ws ":" ws {self.rule(sub, f"{where}/properties/{key}")} ws')
        return '"{" ws ' + ' "," ws '.join(members) + ' "}"' if members else '"{" ws "}"'


def _pointed(root: dict[str, Any], ref: str) -> Any:
    """The node a local `$ref` (`#`, `#/$defs/Name`, escaped as JSON pointers are) points
    at; ValueError when it is not local or leads nowhere."""
    if not ref.startswith("#"):
        raise ValueError(f"$ref {ref!r} is not into the schema itself")
    node: Any = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise ValueError(f"$ref {ref!r} leads nowhere in the schema")
    return node
