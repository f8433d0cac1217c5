"""What a runbook step's own words name: the tools it calls by their names' words ("open a
ticket" names `open_ticket`), the earlier results its condition tests by their fields' words
("if the system status check is impaired" names `system_status`), and the parameters a tool's
argument stands for by its name (`<user>` for `username=`).  A step's grammar keeps to what its
words name where they name something (`step_grammar`, `runbooks.steps`): the 1.5B model,
offered every tool and every field, called `failed_signins` again for "open a ticket in the
security queue", tested the load balancer's target state for "the system status check" and
passed `username="user"`.

Words match by stem (`words_match`: "deregistered" names `deregister_target`, "retry"
`retryable`); words of two letters and the commonest function words name nothing."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from .returns import tool_fields
from .tools import Tool

__all__ = ["condition_focus", "named_params", "named_tools", "stems", "words_match"]

_WORD_RE = re.compile(r"[a-z0-9]+")
_FUNCTION_WORDS = frozenset(
    re.findall(
        r"\w+",
        "the and for with that this from its was are were has have had not but any all than "
        "then into onto out off one two per via who whom which what when where why how there "
        "their them they our you your yes also just only each both same",
    )
)
MIN_SHARED = 4  # letters two different words must share at the start to match
MAX_WORDS = 400  # of one step's text, at most


def stems(text: str) -> frozenset[str]:
    """The words of `text` that may name a field: lower-cased, split at anything not a letter
    or digit (an identifier's `_` too), three letters or more, no function word; at most
    `MAX_WORDS`."""
    return frozenset(w for w in _words(text) if len(w) >= 3 and w not in _FUNCTION_WORDS)


def _words(text: str) -> frozenset[str]:
    """All the words of `text` (a tool's name's "get" and "idp" too), at most `MAX_WORDS`."""
    return frozenset(_WORD_RE.findall(text.lower()[: MAX_WORDS * 16])[:MAX_WORDS])


def words_match(a: str, b: str) -> bool:
    """Whether two words are the same by stem: equal once an ending ("-ing", "-ed", "-es",
    "-s") is cut, or the shorter the start of the longer with `MIN_SHARED` letters ("state"
    is not "status": the 1.5B model tested a target's state for "the system status")."""
    if a == b:
        return True
    short, long = sorted((_stem(a), _stem(b)), key=len)
    return short == long or (len(short) >= MIN_SHARED and long.startswith(short))


def _stem(word: str) -> str:
    for ending in ("ing", "ed", "es", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= MIN_SHARED:
            return word[: -len(ending)]
    return word


def _named(name: str, words: frozenset[str]) -> int:
    """How many of `name`'s words (`stems`) one of `words` matches."""
    return sum(any(words_match(n, w) for w in words) for n in stems(name))


def named_tools(text: str, tools: Iterable[Tool]) -> list[Tool]:
    """The tools whose every name word the step's `text` says ("unlock <user>'s account"
    names `unlock_user`; "open a ticket" `open_ticket`; "get" of `get_flag` too), or none
    when no tool's is."""
    words = _words(text)
    found = []
    for t in tools:
        name = _words(t.name)
        if name and all(any(words_match(n, w) for w in words) for n in name):
            found.append(t)
    return found


def named_params(argument: str, params: Sequence[str]) -> list[str]:
    """The runbook parameters an argument called `argument` stands for: the same name, one
    a word of the other (`flag_key`, `<flag>`) or its start (`username`, `<user>`)."""
    arg = argument.lower()
    return [p for p in params if _stands_for(arg, p.lower())]


def _stands_for(arg: str, param: str) -> bool:
    """`flag_key=` takes `<flag>`, `username=` `<user>`, `host=` `<hostname>`."""
    if arg == param:
        return True
    if min(len(arg), len(param)) < 3:
        return False
    return (
        param in stems(arg)
        or arg in stems(param)
        or arg.startswith(param)
        or (param.startswith(arg))
    )


def condition_focus(
    clause: str, tools: Mapping[int, Tool | None]
) -> dict[int, tuple[str, ...] | None] | None:
    """Which earlier tasks a condition stated in `clause` reads, by id, each with the fields
    it may read (None: any of its own): those with a field the clause names (only those
    fields), and those whose tool's name it names (their named fields, else all).  None (no
    narrowing) when it names none."""
    words = stems(clause)
    focus: dict[int, tuple[str, ...] | None] = {}
    for i, tool in tools.items():
        if tool is None:
            continue
        fields = [f for f in tool_fields(tool) or [] if _named(f, words)]
        if fields:
            focus[i] = tuple(fields)
        elif _named(tool.name, words):
            focus[i] = None
    return focus or None
