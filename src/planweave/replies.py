"""Every reply planweave reads back from the model: the joiner's decision (an answer, or a
Replan and the plan it carries), read whole or as it streams, and a ReAct step's action.

The plan lines themselves are read by `parser`; the prompts these replies answer are in
`prompts`.  An answer may quote a result as `${N}`: `fill_answer` puts the result in.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from .errors import JoinerError
from .plan import render_text
from .records import TaskRecord, TaskStatus

__all__ = [
    "AnswerStream",
    "JoinDecision",
    "JoinReplyStream",
    "as_text",
    "fill_answer",
    "parse_action",
    "parse_decision",
    "readable_number",
    "spoken",
]


_THOUGHT_RE = re.compile(
    r"Thought\s*:\s*(.*?)(?:\n\s*(?:Action\s*:|Finish\s*\(|Replan\s*\()|$)", re.S | re.I
)
_DECISION_RE = re.compile(r"(?:^|\n)\s*(?:Action\s*:\s*)?(Finish|Replan)\s*\(", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class JoinDecision:
    """What the joiner (or a finishing ReAct step) decided: the answer, or what to plan next."""

    action: Literal["finish", "replan"]
    text: str
    thought: str | None = None
    plan: str | None = None  # a Replan reply's plan lines, when it carries them


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


# A Replan line ends at a closing parenthesis and the end of the line; a plan that follows it
# starts with a task line, a thought or the JSON form.
_HEAD_END_RE = re.compile(r"\)[ \t\r]*\n")
_PLAN_START_RE = re.compile(r"\s*(?:\d+\s*\.|Thought\s*:|\[|```)", re.I)


def _replan_head_end(output: str) -> int | None:
    """Where the plan of a Replan reply may start (after its Action line), or None when the
    reply is no Replan or its Action line has not ended yet."""
    match = _DECISION_RE.search(output)
    if match is None or match.group(1).lower() != "replan":
        return None
    end = _HEAD_END_RE.search(output, match.end())
    return end.end() if end else None


def _plan_after(output: str, head_end: int) -> str | None:
    """The plan lines after a Replan line: None unless its first non-blank line starts a plan."""
    rest = output[head_end:]
    return rest if rest.strip() and _PLAN_START_RE.match(rest) else None


# A reply to the bare-answer prompt: an optional one-line thought, then the answer as plain text,
# unless its first words are an action (`Action:`, `Finish(`, `Replan(`): then it is read in the
# action form, as every reply is without bare answers.
# ASCII rules (letters, whitespace), which the compact joiner grammar's bare answer mirrors.
_LEADING_THOUGHT_RE = re.compile(r"\s*Thought\s*:", re.I | re.A)
_ACTION_START_RE = re.compile(r"\s*(?:Action\s*:|(?:Finish|Replan)\s*\()", re.I | re.A)
_FIRST_WORD_RE = re.compile(r"\s*([A-Za-z]*)(\s*)", re.A)
_HEAD_WORDS = ("action", "finish", "replan", "thought")

_Form = Literal["bare", "action", "open"]


def _reply_form(text: str, *, final: bool) -> tuple[_Form, int]:
    """How a reply to the bare-answer prompt answers, told from its first characters: "bare"
    (the answer is the text from the offset on, after a thought line if there is one) or
    "action"; while it streams (`final` False), "open" as long as more characters could still
    make its start an action, so that a Replan is never taken for an answer."""
    start = 0
    thought = _LEADING_THOUGHT_RE.match(text)
    if thought is not None:
        newline = text.find("\n", thought.end())
        if newline < 0:
            return ("bare", len(text)) if final else ("open", 0)  # a thought and no answer
        start = newline + 1
    rest = text[start:]
    if _ACTION_START_RE.match(rest):
        return "action", 0
    if not final and _may_become_action(rest):
        return "open", 0
    return "bare", start


def _may_become_action(text: str) -> bool:
    """Whether more characters could still make `text` the start of an action (`Act`,
    `Replan `, blank so far)."""
    match = _FIRST_WORD_RE.fullmatch(text)
    if match is None:
        return False
    word, space = match.group(1).lower(), match.group(2)
    if word in _HEAD_WORDS:
        return True
    return not space and any(head.startswith(word) for head in _HEAD_WORDS)


def _bare_decision(output: str, start: int) -> JoinDecision:
    """A bare answer from `start` on; the thought line before it, if any."""
    thought = None
    if start > 0 and (head := _LEADING_THOUGHT_RE.match(output)) is not None:
        thought = output[head.end() : start].strip() or None
    return _answered(_directive(JoinDecision("finish", output[start:].strip(), thought)), output)


def _answered(decision: JoinDecision, output: str) -> JoinDecision:
    """`decision`, unless it finishes with no answer (an empty reply, a thought or an `Action:`
    with nothing after it): that reply cannot be understood."""
    if decision.action == "finish" and not decision.text:
        shown = output if len(output) <= 200 else output[:200] + "..."
        raise JoinerError(f"the joiner's reply gives no answer: {shown!r}")
    return decision


def parse_decision(output: str, *, bare: bool = False) -> JoinDecision:
    """Read the joiner's output.  The answer inside `Finish(...)` comes through whole:
    parentheses, quotes and newlines included, up to the last closing parenthesis.  A
    `Replan(...)` line followed by plan lines ends at its line; the lines are `plan`.
    With `bare` (the compact prompt's bare answers), a reply whose first words (after a
    thought line) are no action is the answer as it stands, and a reply that gives no answer
    raises `JoinerError`."""
    if bare:
        form, start = _reply_form(output, final=True)
        if form == "bare":
            return _bare_decision(output, start)
    head_end = _replan_head_end(output)
    plan = _plan_after(output, head_end) if head_end is not None else None
    if plan is not None and head_end is not None:
        return replace(parse_decision(output[:head_end], bare=bare), plan=plan)
    matches = list(_DECISION_RE.finditer(output))
    thought_match = _THOUGHT_RE.search(output)
    thought = thought_match.group(1).strip() if thought_match else None
    if not matches:
        # No action at all: a small model that simply answered.  Take its text as the answer.
        text = re.sub(r"^\s*Thought\s*:.*?(?:\n|$)", "", output, flags=re.I).strip()
        if bare:  # `Action: <the answer>`, or nothing after the label
            text = re.sub(r"^Action\s*:\s*", "", text, flags=re.I)
            return _answered(_directive(JoinDecision("finish", text, thought)), output)
        return _directive(JoinDecision("finish", text or output.strip(), thought))
    match = matches[0]
    body = output[match.end() :]
    close = body.rfind(")")
    if close >= 0:
        body = body[:close]
    action: Literal["finish", "replan"] = (
        "finish" if match.group(1).lower() == "finish" else "replan"
    )
    decision = _directive(JoinDecision(action, _unquote(body), thought))
    return _answered(decision, output) if bare else decision


# An answer that is itself a directive: `Finish(Replan(...))`, or a tool call of the plan.
_NESTED_RE = re.compile(r"\s*(?:Action\s*:\s*)?(Finish|Replan)\s*\((.*)\)\s*$", re.S | re.I)
_CALL_RE = re.compile(r"\s*[A-Za-z_]\w*\(\s*(?:\$|\"|')[^\n]*\)\s*$")


def _directive(decision: JoinDecision) -> JoinDecision:
    """A finishing decision whose text is a directive, read as that directive: a small model
    that wraps `Replan(...)` in `Finish(...)`, or answers with the tool call it wants run, asks
    for another plan; it has not answered (its text never becomes the answer)."""
    if decision.action != "finish":
        return decision
    nested = _NESTED_RE.match(decision.text)
    if nested is not None:
        action: Literal["finish", "replan"] = (
            "finish" if nested.group(1).lower() == "finish" else "replan"
        )
        return _directive(replace(decision, action=action, text=_unquote(nested.group(2))))
    if _CALL_RE.match(decision.text):
        return replace(decision, action="replan", text=f"run {decision.text.strip()}")
    return decision


class AnswerStream:
    """The answer of a joiner reply as it streams: `feed` each piece of the reply and get the
    answer text that piece adds, once the reply has said `Finish(`, or, with `bare`, once its
    first words are known to be no action (until then it holds back only those few
    characters: an `Action: Replan(...)` is never given as an answer).

    What it gives is always a prefix of what `parse_decision` reads from the whole reply, so the
    pieces, with `close()`'s rest, add up to the answer exactly: it holds back leading and
    trailing whitespace, in a `Finish(` everything from the last `)` on (the answer ends at
    the last one) and all of an answer in quotes (read whole, as a literal, at the end).  A
    Replan, or a reply without an action, gives nothing until `close()`.
    """

    def __init__(self, *, bare: bool = False) -> None:
        self.bare = bare
        self._text = ""
        self._body: int | None = None  # where the answer starts, once that is known
        self._wrapped = True  # the answer is inside `Finish(...)` (not a bare one)
        self._given = ""
        self._decided = False

    def feed(self, piece: str) -> str:
        self._text += piece
        if not self._decided:
            self._decide()
        if self._body is None:
            return ""
        body = self._text[self._body :].lstrip()
        if not self._wrapped:
            return self._give(body.rstrip())
        if body[:1] in ("'", '"'):
            return ""
        close = body.rfind(")")
        ready = (body[:close] if close >= 0 else body).rstrip()
        return self._give(ready)

    def _decide(self) -> None:
        if self.bare:
            form, start = _reply_form(self._text, final=False)
            if form == "open":
                return
            if form == "bare":
                self._decided, self._body, self._wrapped = True, start, False
                return
        match = _DECISION_RE.search(self._text)
        if match is None:
            return
        self._decided = True
        if match.group(1).lower() == "finish":
            self._body = match.end()

    def close(self) -> tuple[JoinDecision, str]:
        """The whole reply's decision and, if it finishes, the answer's rest not yet given."""
        decision = parse_decision(self._text, bare=self.bare)
        if decision.action != "finish":
            return decision, ""
        return decision, self._give(decision.text)

    def _give(self, ready: str) -> str:
        if len(ready) <= len(self._given) or not ready.startswith(self._given):
            return ""
        piece, self._given = ready[len(self._given) :], ready
        return piece


class JoinReplyStream:
    """Reads the joiner's reply as it streams, to start the next plan's tasks before it ends.

    `feed` returns the text that belongs to a plan: nothing until a `Replan(...)` line has
    ended and the first non-blank line after it starts a plan (a task line, a thought), then
    everything from there on.  A reply that finishes, or replans without a plan, gives none;
    with `bare`, neither does a bare answer (whatever lines it has)."""

    def __init__(self, *, bare: bool = False) -> None:
        self.bare = bare
        self.text = ""
        self.planning = False
        self._settled = False  # no plan can follow any more (a Finish, or prose after Replan)

    def feed(self, chunk: str) -> str:
        self.text += chunk
        if self.planning:
            return chunk
        if self._settled:
            return ""
        if self.bare:
            form, _ = _reply_form(self.text, final=False)
            self._settled = form == "bare"
            if form != "action":
                return ""
        head_end = _replan_head_end(self.text)
        if head_end is None:
            match = _DECISION_RE.search(self.text)
            self._settled = match is not None and match.group(1).lower() == "finish"
            return ""
        rest = self.text[head_end:]
        if _PLAN_START_RE.match(rest) is None:
            # Prose after the Replan line: no plan.  A first line still streaming may yet be one.
            self._settled = "\n" in rest.lstrip()
            return ""
        self.planning = True
        return rest

    def decision(self) -> JoinDecision:
        """The decision: while planning, the Replan line's (its plan still streaming)."""
        if self.planning:
            head_end = _replan_head_end(self.text)
            assert head_end is not None
            head = parse_decision(self.text[:head_end], bare=self.bare)
            return replace(head, plan=self.text[head_end:])
        return parse_decision(self.text, bare=self.bare)


_REACT_ACTION_RE = re.compile(r"Action\s*:\s*(.*)", re.S | re.I)


def parse_action(output: str) -> str | None:
    """The tool call a ReAct step asks for (the first line of its action), or None when the
    step finishes: then `parse_decision` reads the answer."""
    match = _REACT_ACTION_RE.search(output)
    action = match.group(1).strip() if match else ""
    if not action or re.match(r"Finish\s*\(", action, re.I):
        return None
    return action.splitlines()[0]


_QUOTED_RE = re.compile(r"\$\{\s*(\d{1,30}(?:\.\d{1,30})?)\s*\}")


def readable_number(value: float) -> str:
    """A result number as an answer writes it: thousands separated, a fraction rounded to two
    decimals (four significant digits below 1); what the grounding check accepts as it."""
    whole = math.isfinite(value) and float(value).is_integer() and abs(value) < 1e15
    if isinstance(value, int) or whole:
        return f"{int(value):,}"
    if not math.isfinite(value) or abs(value) >= 1e15:
        return repr(value)
    if abs(value) >= 1:
        return f"{value:,.2f}"
    return f"{value:.4g}"


def fill_answer(text: str, records: Sequence[TaskRecord], *, last_id: int = 0) -> str:
    """The joiner's answer with each `${N}` of a finished task replaced by its result whole
    (a list of texts one per line): an answer that is the items of a fan-out of `llm` calls
    is not written out again token by token."""
    if "${" not in text:
        return text
    done = {r.task.id: r.result for r in records if r.status is TaskStatus.DONE}
    highest = max([last_id, *(r.task.id for r in records)])

    def filled(m: re.Match[str]) -> str:
        if "." in m.group(1):  # `${2.6524753261185934}`: a value wrapped, never an id
            return readable_number(float(m.group(1)))
        task_id = int(m.group(1))
        if task_id not in done:
            # `${377930}`: a small model wrapped a value, not an id; the value is what it meant.
            # Up to the last id it is an id that gave nothing (`last_id`: ids taken without a
            # record, as a ReAct action that did not parse): it stays as written.
            return m.group(0) if task_id <= highest else m.group(1)
        return as_text(done[task_id])

    return _QUOTED_RE.sub(filled, text)


def spoken(value: object) -> str:
    """A result as a sentence says it where a plan's answer quotes it (`join("... ${3} ...")`):
    numbers readably, True/False as yes/no, a list's items separated by commas."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return readable_number(value)
    if isinstance(value, list | tuple) and all(
        isinstance(v, str | int | float) and not isinstance(v, bool) for v in value
    ):
        return ", ".join(spoken(v) for v in value)
    if isinstance(value, str):
        return value
    return render_text(value)


def as_text(value: object) -> str:
    """A result as the answer shows it: a list of texts one per line, a number readably,
    anything else as text."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return readable_number(value)
    return render_text(value)
