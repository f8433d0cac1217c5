"""The grammar of one runbook step compiled by itself (`runbooks.steps`): its task lines,
numbered as asked, reading only earlier tasks' results and the runbook's parameters.

Given what the earlier tasks are (`Earlier`: each one's tool, and which a run may skip), a
reference reads only what its tool's declared result has, and a condition is typed: a number
is ordered with a number the runbook writes, a text compared with a text, a bool tested, a task
a run may skip (or an action, whose text says what it did) only tested against None.  What the
parser refuses as unsound (`branches.unsound`) the 1.5B model cannot write here: told so by a
repair, it wrote the same condition again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .grammar import COMMON_RULES, call_rules, literal, reading_rules
from .returns import may_be_list, tool_fields
from .tools import Tool, ToolRegistry

__all__ = ["END_OF_STEP", "Earlier", "step_grammar"]

END_OF_STEP = "<END_OF_STEP>"


@dataclass(frozen=True, slots=True)
class Earlier:
    """The tasks before a step: each one's tool by id (None: not a registered tool), and the
    ids a run may skip (a condition of their own, or reading a task that has one)."""

    tools: Mapping[int, Tool | None]
    skippable: frozenset[int] = frozenset()
    # The tasks a condition reads, each with the fields it may (None: any of its own); None:
    # every task (`step_words.condition_focus`).
    focus: Mapping[int, tuple[str, ...] | None] | None = None
    # Tasks the step may not read at all: those a run may skip, read by a step that always
    # runs (reading one, it would be skipped with it).
    unread: frozenset[int] = frozenset()

    @property
    def readable(self) -> dict[int, Tool | None]:
        """The tools of the tasks the step may read, by id."""
        return {i: t for i, t in sorted(self.tools.items()) if i not in self.unread}

    def upto(self, k: int) -> Earlier:
        """Those before task `k` that the step may read."""
        tools = {i: self.tools.get(i) for i in range(1, k) if i not in self.unread}
        focus = None if self.focus is None else {i: f for i, f in self.focus.items() if i < k}
        skippable = frozenset(i for i in self.skippable if i < k)
        return Earlier(tools, skippable, focus or None, self.unread)


def step_grammar(
    tools: ToolRegistry,
    *,
    first_id: int,
    lines: int = 3,
    params: Sequence[str] = (),
    conditional: bool = True,
    earlier: Earlier | None = None,
    numbers: Sequence[str] | None = None,
    words: Sequence[str] | None = None,
    terms: int = 3,
    bound: Mapping[str, Sequence[str]] | None = None,
    joiner: str | None = None,
) -> str:
    """Up to `lines` task lines numbered from `first_id`, each reading only earlier tasks'
    results (and the parameters, `{name}`), with an optional condition where the step is
    `conditional`, then `<END_OF_STEP>`.  With `earlier`, references and conditions are typed
    (the module's docstring); a condition compares with `numbers` only (the runbook's; any
    number without them), with texts of up to three of `words` (the runbook's and its tools'
    descriptions'; any text without them) and joins at most `terms` comparisons.  `bound`: by
    argument name, the values such an argument takes, as a plan writes them (`{user}`;
    `grammar.call_rules`).  `joiner`: "and" or "or", the one word a condition joins its
    comparisons with (None: either)."""
    calls, rules = call_rules(tools, bound)
    names = " | ".join(literal(p) for p in params)
    out: list[str] = []
    constants = _Constants(numbers, words)
    for j in range(lines):
        k = first_id + j
        ids = range(1, k)
        prefix = f"t{k}"
        read = reading_rules([f"call ::= {calls}", *rules], prefix, ids, names)
        if earlier is not None and ids:
            read = _typed(read, prefix, earlier.upto(k), names, constants, terms)
        else:
            read = [_terms(r, prefix, terms) for r in read]
        if joiner is not None:
            read = [_joined(r, prefix, joiner) for r in read]
        out += read
        cond = f" {prefix}-condition?" if ids and conditional else ""
        out.append(f'line-{k} ::= {literal(f"{k}. ")} {prefix}-call{cond} "\\n"')
    end = literal(END_OF_STEP)
    chain = end
    for j in reversed(range(1, lines)):
        chain = f"( {end} | line-{first_id + j} {chain} )"
    head = f"root ::= line-{first_id} {chain}"
    return "\n".join([head, *out]) + COMMON_RULES


def _terms(rule: str, prefix: str, terms: int) -> str:
    """`rule`, with a condition of at most `terms` comparisons where it is the condition's."""
    if not rule.startswith(f"{prefix}-condition ::= ") or terms == 3:
        return rule
    return rule.replace("{0,2}", f"{{0,{max(terms, 1) - 1}}}")


def _joined(rule: str, prefix: str, joiner: str) -> str:
    """`rule`, joining a condition's comparisons with `joiner` only where it is the rule that
    joins them."""
    either = '" and " | " or "'
    if rule.startswith((f"{prefix}-condition ::= ", f"{prefix}-cond-join ::= ")):
        return rule.replace(either, literal(f" {joiner} "))
    return rule


def _tail(
    tool: Tool | None, *, inner: bool, condition: bool, only: Sequence[str] | None = None
) -> str:
    """What may follow `$N` (or `${N` in a text, `inner`) for a task calling `tool`: one of
    the fields its declared result has (a TypedDict's, a model's; a plain dict's as the words
    of its description, `returns.described_fields`) and one projection more, an index of a
    list, or nothing for a number, text or bool.  In a `condition`, a result with fields is
    read by one of them (the 1.5B model compared a whole dict, `$2 > 300`), `only` those
    fields where given."""
    projection = "inner-projection" if inner else "projection"
    generic = f'{projection}{{0,2}} ( "[*]" {projection}{{0,2}} )?'
    fields = tool_fields(tool)
    if fields is None or tool is None:
        return generic
    if only:
        fields = tuple(f for f in fields if f in only) or fields
    if fields:
        named = " | ".join(literal("." + f) for f in fields)
        return f"( {named} ) {projection}?" if condition else f"( ( {named} ) {projection}? )?"
    if may_be_list(tool.returns):
        return f'( "[" index "]" {projection}? | "[*]" {projection}? )?'
    return ""


def _kind(tool: Tool | None, skippable: bool) -> str | None:
    """How a condition may read a task's result: "maybe" (only against None: a run may skip
    it), "num", "text", "bool", "any" (a field, an item, an unknown type), or None (an action
    every run takes: nothing to test)."""
    action = tool is not None and tool.side_effects and tool.returns is str
    if skippable:
        return "maybe"
    if action:
        return None
    returns = None if tool is None else tool.returns
    if returns in (int, float):
        return "num"
    if returns is str:
        return "text"
    if returns is bool:
        return "bool"
    return "any"


def _typed(
    rules: list[str],
    prefix: str,
    earlier: Earlier,
    params: str,
    constants: _Constants,
    terms: int,
) -> list[str]:
    """`reading_rules`' rules for one task with its references typed (`_tail`) and its
    condition typed (`_condition`)."""

    def refs(inner: bool) -> str:
        options = [
            f"{literal(str(i))} {_tail(tool, inner=inner, condition=False)}".rstrip()
            for i, tool in sorted(earlier.tools.items())
        ]
        return "( " + " | ".join(options) + " )"

    spelled = {
        f"{prefix}-ref": " | ".join([f'"$" {refs(False)}', *_params(params)]),
        f"{prefix}-dollar": (f'"$"+ ( [^{{"\\\\\\n\\r\\x00$] | control | "{{" {refs(True)} "}}" )'),
    }
    typed, arg_rules = _argument_refs(prefix, earlier, params)
    out = []
    for rule in rules:
        name = rule.split(" ::= ", 1)[0]
        if name.startswith(f"{prefix}-cond"):
            continue  # the untyped condition's rules, replaced by the typed ones
        rule = f"{name} ::= {spelled[name]}" if name in spelled else rule
        for untyped, kept in typed.items():
            rule = rule.replace(untyped, kept)
        out.append(rule)
    return out + arg_rules + _condition(prefix, earlier, params, constants, terms)


# A typed argument's rule as `grammar._Rules.value` writes it, once renamed for a task.
_ARGUMENTS = {"num": ("int", "number"), "text": ("{p}-string",), "bool": ("bool",)}


def _argument_refs(prefix: str, earlier: Earlier, params: str) -> tuple[dict[str, str], list[str]]:
    """The references an argument declared a number, a text or a bool may take: results of
    that type, a field of a record, a parameter (the 1.5B model passed a whole record,
    `kill_query(pid=$2)`, and a bool as a key id).  Returns what replaces each untyped
    argument rule (`( int | t6-ref )`) and the rules of the typed references."""
    spellings: dict[str, list[str]] = {kind: [] for kind in _ARGUMENTS}
    for i, tool in sorted(earlier.tools.items()):
        kind = _kind(tool, False) or "text"  # an action's text is a text
        if kind == "any":  # a field (of unknown type) goes wherever a value does
            field = f'"$" {literal(str(i))} {_tail(tool, inner=False, condition=True)}'
            for spelled in spellings.values():
                spelled.append(field)
        elif kind in spellings:
            spellings[kind].append(f'"$" {literal(str(i))}')
    replaced, rules = {}, []
    for kind, values in _ARGUMENTS.items():
        options = [*spellings[kind], *_params(params)]
        name = f"{prefix}-ref-{kind}"
        if options:
            rules.append(f"{name} ::= " + " | ".join(options))
        for value in values:
            value = value.replace("{p}", prefix)
            replaced[f"( {value} | {prefix}-ref )"] = (
                f"( {value} | {name} )" if options else f"( {value} )"
            )
    return replaced, rules


def _params(params: str) -> list[str]:
    return [f'"{{" ( {params} ) "}}"'] if params else []


@dataclass(frozen=True, slots=True)
class _Constants:
    """What a condition may compare with: these numbers, texts of these words (None: any)."""

    numbers: Sequence[str] | None
    words: Sequence[str] | None

    def rules(self, prefix: str) -> list[str]:
        number = " | ".join(literal(n) for n in self.numbers) if self.numbers else "number"
        if not self.words:
            return [f"{prefix}-number ::= {number}", f"{prefix}-text ::= key"]
        word = " | ".join(literal(w) for w in self.words)
        return [
            f"{prefix}-number ::= {number}",
            f'{prefix}-text ::= "\\"" {prefix}-word ( " " {prefix}-word ){{0,2}} "\\""',
            f"{prefix}-word ::= {word}",
        ]


def _condition(
    prefix: str, earlier: Earlier, params: str, constants: _Constants, terms: int
) -> list[str]:
    """The typed condition's rules: up to `terms` comparisons joined by `and`/`or`, each
    maybe after `not`, each with one kind of operand on the left (`_kind`), compared only
    with what that kind can equal or be ordered with, a parameter among them (`$1 ==
    {version}`), never with itself (the 1.5B model wrote `$1 == $1` for "if production runs
    <version>")."""
    p = prefix
    by_task = _groups(earlier, earlier.focus) or _groups(earlier, None)
    groups = {
        kind: [s for spelled in tasks.values() for s in spelled] for kind, tasks in by_task.items()
    }
    if params:
        groups["param"] = _params(params)
    rules = [f"{p}-g-{kind} ::= " + " | ".join(spelled) for kind, spelled in groups.items()]

    def one_of(*options: str, other: tuple[str, int] | None = None) -> str:
        """The rules `options` name: `@kind` a group's (where the step has one; without task
        `other`'s own references, for that kind), others as written."""
        kept = []
        for o in options:
            if o[:1] != "@":
                kept.append(o)
            elif other is not None and o[1:] == other[0]:
                if len(by_task[other[0]]) > 1:
                    kept.append(f"{p}-g-{o[1:]}-not-{other[1]}")
            elif o[1:] in groups:
                kept.append(f"{p}-g-{o[1:]}")
        return "( " + " | ".join(kept) + " )"

    order, same, within = f"{p}-order", f"{p}-same", '" in " | " not in "'
    number, text = f"{p}-number", f"{p}-text"
    shapes = _whole(p, by_task, one_of, rules)
    # `in` only where the other side may hold it (a text, a list): the 1.5B model wrote
    # `${1.key_id} in $2` of a leak scan's true or false.
    shapes["any"] = (
        f"{p}-g-any ( {order} "
        f"{one_of(number, text, 'bool', _NONE, '@any', '@num', '@text', '@bool', '@param')}"
        f" | ( {within} ) {one_of(text, '@any', '@text', '@param')} )?"
    )
    # Whether it ran ("if the logs were rotated"); `not` before it, whether it did not (the
    # 1.5B model wrote `$3 == None` for "if replication was restarted").
    shapes["maybe"] = f'{p}-g-maybe " != None"'
    shapes["param"] = f"{p}-g-param ( ( {order} | {within} ) ( {number} | {text} | bool ) )?"
    compared = [shape for kind, shape in shapes.items() if kind in groups]
    if "text" in groups or "any" in groups:
        compared.append(f"{text} ( {within} ) {one_of('@text', '@any')}")
    joined = max(terms, 1) - 1
    return [
        f'{p}-condition ::= " if " {p}-term ( ( " and " | " or " ) {p}-term ){{0,{joined}}}',
        f'{p}-term ::= "not " {p}-compared | {p}-compared',
        f"{p}-compared ::= " + (" | ".join(compared) if compared else '"True"'),
        f'{order} ::= " == " | " != " | " < " | " > " | " <= " | " >= "',
        f'{same} ::= " == " | " != "',
        *constants.rules(p),
        *rules,
    ]


def _whole(
    p: str,
    by_task: dict[str, dict[int, list[str]]],
    one_of: Callable[..., str],
    rules: list[str],
) -> dict[str, str]:
    """The comparisons of a whole number, text or bool result, by kind: each task's with a
    constant, a parameter or another task's (`rules` gets the rules of the others)."""
    order, same, within = f"{p}-order", f"{p}-same", '" in " | " not in "'
    rights = {
        "num": (order, (f"{p}-number", "@num", "@any", "@param"), False),
        "text": (f"( {same} | {within} )", (f"{p}-text", "@text", "@any", "@param"), True),
        "bool": (same, ("bool", "@bool", "@any", "@param"), True),
    }
    shapes: dict[str, str] = {}
    for kind, (op, options, optional) in rights.items():
        tasks = by_task.get(kind, {})
        each = []
        for i, spelled in tasks.items():
            if len(tasks) > 1:
                others = [s for j, sp in tasks.items() if j != i for s in sp]
                rules.append(f"{p}-g-{kind}-not-{i} ::= " + " | ".join(others))
            right = f"{op} {one_of(*options, other=(kind, i))}"
            each.append(f"( {' | '.join(spelled)} ) " + (f"( {right} )?" if optional else right))
        if each:
            shapes[kind] = " | ".join(each)
    return shapes


def _groups(
    earlier: Earlier, focus: Mapping[int, tuple[str, ...] | None] | None
) -> dict[str, dict[int, list[str]]]:
    """The references a condition may test, by kind (`_kind`), by task: every earlier
    task's, or those in `focus`, each read by the fields it gives."""
    groups: dict[str, dict[int, list[str]]] = {}
    for i, tool in sorted(earlier.tools.items()):
        kind = _kind(tool, i in earlier.skippable)
        if kind is None or (focus is not None and i not in focus):
            continue
        only = None if focus is None else focus[i]
        n = literal(str(i))
        outer = _tail(tool, inner=False, condition=True, only=only) if kind == "any" else ""
        inner = _tail(tool, inner=True, condition=True, only=only) if kind == "any" else ""
        groups.setdefault(kind, {})[i] = [
            f'"$" {n} {outer}'.rstrip(),
            " ".join(x for x in ('"${"', n, inner, '"}"') if x),
        ]
    return groups


_NONE = '"None"'
