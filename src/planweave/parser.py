"""The plan language: reading plan lines with `ast` (never `eval`), the incremental parser that
emits each task the moment its line is complete, validation against the tool registry, and the
JSON form.  Both forms compile to the `Task` model of `plan`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any, NoReturn

from .branches import condition, unsound
from .errors import (
    ArgumentError,
    DuplicateTaskError,
    InvalidReferenceError,
    MissingJoinError,
    NoSuchField,
    PlanSyntaxError,
    ToolArgumentError,
    ToolRejected,
    UnknownToolError,
)
from .plan import END_OF_PLAN, Condition, Ref, Task, Template, fan_outs, references
from .records import BROKEN, TaskRecord
from .redaction import encodable
from .returns import declared_fields, may_be_list
from .tools import Tool, ToolRegistry, _type_name

__all__ = [
    "LOOP_CHARS",
    "LOOP_PERIODS",
    "MAX_JSON_PLAN_CHARS",
    "MAX_LINE_CHARS",
    "MAX_NESTING",
    "MAX_TASK_ID",
    "PlanParser",
    "parse_call",
    "parse_json_plan",
    "parse_plan",
    "parse_task",
]

# A plan is untrusted input: these bound what one response can make the parser do.
MAX_LINE_CHARS = 100_000  # one line of the text form
MAX_JSON_PLAN_CHARS = 1_000_000  # a whole plan in the JSON form
MAX_TASK_ID = 1_000_000  # the journal stores ids as 64-bit integers; no plan needs more
MAX_NESTING = 32  # lists and dicts inside one argument
# A line caught in a loop: its last LOOP_CHARS characters one text of 8 to 80 characters over
# and over (the 1.5B model wrote `rank(["Ethiopia", "Somalia", "Ethiopia", "Somalia", ...` until
# its token limit, minutes on this hardware).  Looked at each LOOP_STEP characters of the line,
# so the verdict is the same however the line is cut into chunks; a run of a shorter unit
# (`5, 5, 5`, `-----`) is no loop, and a list of a dozen equal values is far shorter than one.
LOOP_PERIODS = range(8, 81)
LOOP_CHARS = 512
_LOOP_STEP = 64

# Lines are stripped before matching; `(.*)` (not `(.*?)\s*$`) keeps matching linear.
_TASK_RE = re.compile(r"^\s*(?:[-*]\s*)?(?:#\s*)?(\d+)\s*[.:)]\s*(.*)$")
_THOUGHT_RE = re.compile(r"^\s*Thought\s*:\s*(.*)$", re.IGNORECASE)
_REF_PREFIX = "__pw_ref_"
# Inside strings: ${N}, ${N.key[0]} (strict) and bare $N (only when N is an earlier task).
# `$N[*]` (bare) and `${N[*]...}` fan out over task N's list.
_STRING_REF_RE = re.compile(
    r"\$\{\s*(\d+)((?:\s*\.\s*[A-Za-z_]\w*|\s*\[\s*(?:-?\d+|\*|'[^']*'|\"[^\"]*\")\s*\])*)\s*\}"
    r"|\$(\d+)(\[\s*\*\s*\])?(?![\d.]*\d)"
)
_PATH_PART_RE = re.compile(
    r"\.\s*([A-Za-z_]\w*)|\[\s*(-?\d+)\s*\]|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]"
    r"|\[\s*(\*)\s*\]"
)
_STAR_RE = re.compile(r"\[\s*\*\s*\]")
_EACH = "__pw_each__"  # what `[*]` reads as for `ast`: a key no tool result has
_EACH_KEY = f'["{_EACH}"]'
# `[^\]$]`: a bracket never spans another reference, so many unclosed `${1[` stay linear.
_CODE_REF_RE = re.compile(
    r"\$\{\s*(\d+)((?:\s*\.\s*[A-Za-z_]\w*|\s*\[[^\]$]*\])*)\s*\}"
    r"|\$(\d+)((?:\s*\.\s*[A-Za-z_]\w*\b(?!\s*\()|\s*\[[^\]$]*\])*)"
)
_CODE_PATH_PART_RE = re.compile(r"\s*\.\s*([A-Za-z_]\w*)|\s*(\[[^\]$]*\])")
_PATH = r"(?:\s*\.\s*[A-Za-z_]\w*|\s*\[\s*(?:-?\d+|\*|'[^']*'|\"[^\"]*\")\s*\])"
# A JSON string that is exactly one reference: "$1", "${1}", "$1.population", "${1[0]}".
_WHOLE_REF_RE = re.compile(rf"\$(?:\{{\s*(\d+)({_PATH}*)\s*\}}|(\d+))({_PATH}*)")
_JSON_NAMES = {
    "true": True,
    "false": False,
    "null": None,
    "True": True,
    "False": False,
    "None": None,
}


def _mask_refs(body: str) -> str:
    """Replace `$N` / `${N}` outside string literals by identifiers `ast` can read."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch in "'\"":
            quote = body[i : i + 3] if body[i : i + 3] in ("'''", '"""') else ch
            j = i + len(quote)
            while j < n and not body.startswith(quote, j):
                j += 2 if body[j] == "\\" else 1
            j = min(n, j + len(quote))
            out.append(body[i:j])
            i = j
        elif ch == "$":
            m = _CODE_REF_RE.match(body, i)
            if m is None:
                out.append(ch)
                i += 1
            else:
                braced, path, bare, bare_path = m.groups()
                # `${2.population}` reads as `$2.population`: the projection moves outside,
                # its names as subscripts, so a key such as `class` is no syntax error; `[*]`
                # as a subscript no result has.
                path = "".join(
                    _EACH_KEY
                    if _STAR_RE.fullmatch(brackets)
                    else f'["{attr}"]'
                    if attr
                    else brackets
                    for attr, brackets in _CODE_PATH_PART_RE.findall(path or bare_path or "")
                )
                out.append(f"{_REF_PREFIX}{braced or bare}{path}")
                i = m.end()
        elif ch == "[" and (star := _STAR_RE.match(body, i)) is not None:
            out.append(_EACH_KEY)
            i = star.end()
        else:
            out.append(ch)
            i += 1
    return "".join(out)


_STAR: Any = object()  # `[*]` in a parsed path, until `_Converter.ref` splits the path there


def _parse_path(text: str) -> tuple[Any, ...]:
    path: list[Any] = []
    for m in _PATH_PART_RE.finditer(text):
        attr, index, sq, dq, star = m.groups()
        if attr is not None:
            path.append(attr)
        elif index is not None:
            path.append(int(index))
        elif star is not None:
            path.append(_STAR)
        else:
            path.append(sq if sq is not None else dq)
    return tuple(path)


class _Converter:
    """Turns the `ast` of a call's arguments into plan values, collecting dependencies."""

    def __init__(
        self,
        task_id: int,
        known: Mapping[int, bool],
        renumber: Callable[[int], int | None] | None = None,
    ) -> None:
        self.task_id = task_id
        self.known = known
        # A renumbered response's reference as written -> the task it means (None: the line's
        # own id, never an earlier round's task of that number).
        self.renumber = renumber
        self.deps: set[int] = set()

    def _meant(self, written: int) -> int | None:
        return written if self.renumber is None else self.renumber(written)

    def ref(self, task_id: int, path: tuple[Any, ...] = (), *, renumbered: bool = False) -> Ref:
        """The reference; a `[*]` in `path` makes it a fan-out over the list before it.
        `task_id` as written, unless `renumbered`."""
        meant = task_id if renumbered else self._meant(task_id)
        if meant is None:
            raise ValueError(f"${task_id} refers to a task that is not earlier than this one")
        task_id = meant
        self.deps.add(task_id)
        stars = [i for i, p in enumerate(path) if p is _STAR]
        if not stars:
            return Ref(task_id, path)
        if len(stars) > 1:
            raise ValueError(f"${task_id}: one [*] per reference (a fan-out maps one list)")
        at = stars[0]
        return Ref(task_id, path[:at], path[at + 1 :])

    def string(self, text: str) -> str | Template:
        # Escapes in a literal ("\ud800") can spell text no file or terminal can hold.
        text = encodable(text)
        if "$" not in text:
            return text
        parts: list[str | Ref] = []
        pos = 0
        for m in _STRING_REF_RE.finditer(text):
            braced, path_text, bare, star = m.groups()
            if bare is not None:
                ref_id = _bounded_id(bare)
                meant = None if ref_id is None else self._meant(ref_id)
                # A bare "$5" in prose is only a reference when task 5 is an earlier task.
                if meant is None or meant >= self.task_id or meant not in self.known:
                    continue
                ref = self.ref(meant, (_STAR,) if star else (), renumbered=True)
            else:
                ref = self.ref(_ref_id(braced), _parse_path(path_text or ""))
            if m.start() > pos:
                parts.append(text[pos : m.start()])
            parts.append(ref)
            pos = m.end()
        if not parts:
            return text
        if pos < len(text):
            parts.append(text[pos:])
        return Template(tuple(parts))

    def value(self, node: ast.expr, depth: int = 0) -> Any:
        if depth > MAX_NESTING:
            raise ValueError(_too_deep())
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return self.string(node.value)
            if node.value is Ellipsis or isinstance(node.value, bytes | complex):
                raise ValueError(f"unsupported literal {ast.unparse(node)}")
            return node.value
        if isinstance(node, ast.List):
            return [self.value(e, depth + 1) for e in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(self.value(e, depth + 1) for e in node.elts)
        if isinstance(node, ast.Set):
            return [self.value(e, depth + 1) for e in node.elts]
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    raise ValueError("** in a dict literal is not supported")
                key = self.value(k, depth + 1)
                if isinstance(key, Ref | Template | list | dict):
                    raise ValueError(f"dict keys must be plain literals, not {ast.unparse(k)}")
                out[key] = self.value(v, depth + 1)
            return out
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = self.value(node.operand, depth + 1)
            if isinstance(operand, bool) or not isinstance(operand, int | float):
                raise ValueError(f"unsupported expression {ast.unparse(node)}")
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.Name):
            if node.id.startswith(_REF_PREFIX):
                return self.ref(_ref_id(node.id[len(_REF_PREFIX) :]))
            if node.id in _JSON_NAMES:
                return _JSON_NAMES[node.id]
            raise ValueError(f"bare name {node.id!r} is not a value (quote strings)")
        if isinstance(node, ast.Attribute | ast.Subscript):
            path: list[Any] = []
            cur: ast.expr = node
            while isinstance(cur, ast.Attribute | ast.Subscript):
                if isinstance(cur, ast.Attribute):
                    path.append(cur.attr)
                else:
                    try:
                        key = ast.literal_eval(cur.slice)
                    except ValueError:
                        key = None
                    if isinstance(key, bool) or not isinstance(key, int | str):
                        raise ValueError(f"unsupported projection {ast.unparse(node)}")
                    path.append(_STAR if key == _EACH else key)
                cur = cur.value
            if isinstance(cur, ast.Name) and cur.id.startswith(_REF_PREFIX):
                return self.ref(_ref_id(cur.id[len(_REF_PREFIX) :]), tuple(reversed(path)))
            raise ValueError(f"unsupported expression {ast.unparse(node)}")
        raise ValueError(f"unsupported expression {ast.unparse(node)}")


def _parse_call(
    body: str,
    task_id: int,
    known: Mapping[int, bool],
    renumber: Callable[[int], int | None] | None = None,
) -> tuple[str, tuple[Any, ...], dict[str, Any], tuple[int, ...], Condition | None]:
    """Parse `tool(arg, key=value)`, or `tool(...) if <condition>` (`branches`); raises
    ValueError with a readable reason."""
    text = body.strip().rstrip(";").strip()
    if re.fullmatch(r"[A-Za-z_]\w*", text):
        text += "()"  # a bare `join` is forgiven
    call, test = _call_and_test(_mask_refs(text))
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ValueError("expected `tool_name(arguments)`")
    conv = _Converter(task_id, known, renumber)
    args: list[Any] = []
    for a in call.args:
        if isinstance(a, ast.Starred):
            raise ValueError("*args is not supported")
        args.append(conv.value(a))
    kwargs: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise ValueError("**kwargs is not supported")
        if kw.arg in kwargs:
            raise ValueError(f"keyword argument {kw.arg!r} repeated")
        kwargs[kw.arg] = conv.value(kw.value)
    cond = None if test is None else condition(test, partial(_condition_ref, conv))
    return call.func.id, tuple(args), kwargs, tuple(sorted(conv.deps)), cond


def _call_and_test(masked: str) -> tuple[ast.expr, ast.expr | None]:
    """The call of a task line, and the condition after its `if` (None: none)."""
    try:
        tree = ast.parse(masked, mode="eval")
    except SyntaxError as exc:
        try:
            # `call if cond` is no Python expression; `call if cond else None` is.
            tree = ast.parse(masked + " else None", mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise ValueError(f"not a tool call: {exc.msg}") from None
        body = tree.body
        if (
            not isinstance(body, ast.IfExp)
            or not isinstance(body.orelse, ast.Constant)
            or body.orelse.value is not None
        ):
            raise ValueError(_NO_ELSE) from None
        return body.body, body.test
    except (ValueError, RecursionError, MemoryError) as exc:
        # A lone surrogate (UnicodeEncodeError), or CPython's parser giving up on deep nesting.
        raise ValueError(f"not a tool call: {type(exc).__name__}: {exc}") from None
    if isinstance(tree.body, ast.IfExp) and isinstance(tree.body.body, ast.Call):
        raise ValueError(_NO_ELSE)
    return tree.body, None


_NO_ELSE = (
    "a task line takes `if <condition>` with no `else`: write the other side as its own task "
    "with the opposite condition"
)


def _json_condition(text: Any, conv: _Converter) -> Condition | None:
    """A JSON task's `"if"` (`"$1.disk_pct > 90"`) as its condition; None without one."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError('"if" is a condition written as a string, as in "$1.disk_pct > 90"')
    try:
        tree = ast.parse(_mask_refs(text.strip()), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ValueError(f"the condition {text[:200]!r} is not an expression") from None
    return condition(tree.body, partial(_condition_ref, conv))


def _condition_ref(conv: _Converter, node: ast.expr) -> Ref | None:
    """The reference `node` is, in a condition (None: it is none)."""
    root = node
    while isinstance(root, ast.Attribute | ast.Subscript):
        root = root.value
    if not isinstance(root, ast.Name) or not root.id.startswith(_REF_PREFIX):
        return None
    value = conv.value(node)
    return value if isinstance(value, Ref) else None


def parse_call(body: str, task_id: int, known: Iterable[int] = ()) -> Task:
    """Parse one call such as `search("x", k=3)` into task `task_id` (ReAct mode's actions).

    `known` are the ids whose results may be referenced.  Raises PlanSyntaxError.
    """
    try:
        name, args, kwargs, deps, cond = _parse_call(body, task_id, dict.fromkeys(known, True))
    except ValueError as exc:
        raise PlanSyntaxError(str(exc), line=body, task_id=task_id) from None
    return Task(task_id, name, args, kwargs, deps, None, body.strip(), None, condition=cond)


def parse_task(
    call: str | Mapping[str, Any],
    task_id: int,
    tools: ToolRegistry,
    known: Iterable[int] = (),
    *,
    earlier: Mapping[int, Task] | None = None,
) -> Task:
    """Parse and validate one task `task_id` that may use the results of the tasks `known`: a
    call in the text form (`search("x", k=$1)`) or a tool and its arguments by name in the JSON
    form (`{"tool": "search", "args": {"query": "x", "k": "$1"}}`).  `earlier` gives those
    tasks themselves, so that what the plan parser checks against them (a fan-out `$N[*]` over
    a tool that returns no list) is checked too.  Raises PlanError."""
    parser = PlanParser(tools)
    parser._known = dict.fromkeys(known, True)
    parser.tasks = dict(earlier or {})
    if isinstance(call, str):
        task = parse_call(call, task_id, parser._known)
    else:
        tool, args = call.get("tool"), call.get("args", {})
        line = json.dumps(dict(call), ensure_ascii=False, default=str)
        if not isinstance(tool, str) or not isinstance(args, Mapping):
            raise PlanSyntaxError("a task needs a tool and its arguments by name", line=line)
        if _nests_deeper(dict(args), MAX_NESTING + 1):
            raise PlanSyntaxError(_too_deep(), line=line)
        conv = _Converter(task_id, parser._known)
        try:
            kwargs = {str(k): _json_value(v, conv) for k, v in args.items()}
        except ValueError as exc:
            raise PlanSyntaxError(str(exc), line=line, task_id=task_id) from None
        task = Task(task_id, tool, (), kwargs, tuple(sorted(conv.deps)), None, line)
    parser.validate(task)
    return task


def _iter_values(value: Any) -> Iterable[Any]:
    yield value
    if isinstance(value, list | tuple):
        for v in value:
            yield from _iter_values(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _iter_values(v)


def _has_ref(value: Any) -> bool:
    return any(isinstance(v, Ref | Template) for v in _iter_values(value))


def _loop_period(text: str) -> int | None:
    """The period of the loop `text` is (LOOP_CHARS characters periodic with a period in
    LOOP_PERIODS, and with none shorter), if it is one: a few slice comparisons."""
    if len(text) < LOOP_CHARS:
        return None
    last = len(text) - 1
    for period in LOOP_PERIODS:
        # Periodic: equal to itself moved by the period (the last character is checked first).
        if text[last] == text[last - period] and _periodic(text, period):
            short = range(1, LOOP_PERIODS.start)
            return None if any(_periodic(text, q) for q in short) else period
    return None


def _periodic(text: str, period: int) -> bool:
    return text[:-period] == text[period:]


class PlanParser:
    """Incremental parser and validator: feed it the planner's stream chunk by chunk.

    `feed()` returns each task the moment its line is complete and valid; invalid input raises a
    `PlanError` naming the line, and the parser keeps every task accepted before it, so the
    planner can be asked to continue from there.  Tasks accepted in the same call as the error
    (earlier lines of the same chunk, the last line before a missing join) are not lost: `drain()`
    hands them out.  Replans reuse the parser: ids keep counting up and new tasks may reference
    results of earlier plans.  Work is linear in the input; a line longer than `max_line_chars`
    (a JSON plan longer than `max_json_chars`) is a PlanSyntaxError.  With `plan_answers`, a
    plan may end with its answer: `join("<text with ${<id>} where a result goes>")`.
    """

    def __init__(
        self,
        tools: ToolRegistry,
        *,
        max_line_chars: int = MAX_LINE_CHARS,
        max_json_chars: int = MAX_JSON_PLAN_CHARS,
        plan_answers: bool = False,
    ) -> None:
        self.tools = tools
        self.plan_answers = plan_answers
        self.max_line_chars = max_line_chars
        self.max_json_chars = max_json_chars
        self.tasks: dict[int, Task] = {}
        self._known: dict[int, bool] = {}  # id -> True for every accepted non-join task
        self._skippable: set[int] = set()  # tasks a run may skip: a condition, or reading one
        self._last_id = 0
        self._undrained: list[Task] = []  # accepted, not yet returned by feed/close/drain
        self._line_parts: list[str] = []  # the incomplete last line, in pieces (no copying)
        self._line_len = 0
        self._line_tail = ""  # its last characters, to find an <END_OF_PLAN> cut by a chunk
        self._line_recent = ""  # its last characters, to see it caught in a loop
        self._lineno = 0
        self._thought: list[str] = []
        self._json: list[str] | None = None
        self._json_len = 0
        self._response_tasks = 0
        self._renumber = False  # whether this response may restart its ids (start_plan)
        self._shift = 0  # what this response's ids are moved up by when it restarted them
        self._own: set[int] = set()  # the ids as written of this response's accepted tasks
        self.joined = False
        self.ended = False
        # Calls that failed for good in earlier rounds, by (tool, arguments): a replan or repair
        # may not write them again, or a small model repeats the same failing call each round.
        self._failed: dict[tuple[str, str], str] = {}
        # Tasks of earlier rounds that gave no result: a later plan may not read them (a small
        # model wrote `${4} / 3` over a failed task 4 round after round).
        self._no_result: dict[int, str] = {}
        # Accepted calls, by (tool, arguments): a pure tool's same call twice is a mistake (a
        # small model copying a line), and its result is already `$N`.
        self._calls: dict[tuple[str, str], int] = {}

    @property
    def last_id(self) -> int:
        """The highest task id accepted so far (0 before any)."""
        return self._last_id

    @property
    def known_ids(self) -> Mapping[int, bool]:
        """Ids of accepted tasks whose results later tasks may use (every task but join)."""
        return self._known

    def remember_failures(self, records: Iterable[TaskRecord]) -> None:
        """Refuse, from now on, a call that already failed for good with the same literal
        arguments (the tool rejected them, or they did not fit its schema); a call reading
        another task's result may get other values, so it stays allowed.  A task that gave no
        result may not be read by later tasks."""
        for rec in records:
            task = rec.task
            if isinstance(rec.error, ToolRejected | ToolArgumentError) and not task.deps:
                self._failed.setdefault(_call_key(task.tool, task.bound), rec.error.message)
            if rec.status in BROKEN and not task.is_join:
                why = rec.error.message if rec.error is not None else rec.status.value
                self._no_result.setdefault(task.id, why)

    def start_plan(self, *, renumber: bool = False) -> None:
        """Begin a new plan (a replan or a repair continuation): reset the per-response state.

        With `renumber`, a response whose first task restarts the ids (`1.` where the tasks
        so far end at 4, as a small model writes a replan whatever its prompt says) has its ids
        moved up to follow on, with each reference to one of its own earlier tasks; a
        reference to any other id still means an earlier round's task.  Only where nothing of
        the current round is running: there a repeated id may be a repeated call."""
        self._line_parts, self._line_len, self._line_tail = [], 0, ""
        self._line_recent = ""
        self._lineno = 0
        self._thought = []
        self._json, self._json_len = None, 0
        self._response_tasks = 0
        self._renumber, self._shift, self._own = renumber, 0, set()
        self.joined = False
        self.ended = False

    @property
    def done(self) -> bool:
        """True once `join()` or `<END_OF_PLAN>` was seen: the rest of the stream can be dropped."""
        return self.joined or self.ended

    def drain(self) -> list[Task]:
        """The tasks accepted but not yet returned: after `feed()` or `close()` raised, those of
        the lines before the bad one in the same call.  They are valid and must run."""
        out, self._undrained = self._undrained, []
        return out

    def feed(self, chunk: str) -> list[Task]:
        if not self.done:
            self._consume(chunk)
        return self.drain()

    def _consume(self, chunk: str) -> None:
        pos, n = 0, len(chunk)
        while not self.done and pos < n:
            if self._json is not None:
                # The JSON form arrives whole: collect it and parse it in close().
                self._collect_json(chunk[pos:])
                return
            nl = chunk.find("\n", pos)
            piece = chunk[pos:] if nl < 0 else chunk[pos:nl]
            pos = n if nl < 0 else nl + 1
            tail = self._line_tail
            end = (tail + piece).find(END_OF_PLAN)
            if end >= 0:
                # <END_OF_PLAN> closes the plan wherever it falls: what follows is not read,
                # however the text was cut into chunks (the line limit applies before it only).
                line = self._take_line(piece[: max(0, end - len(tail))])
                self.ended = True
                self._line(line[: len(line) - max(0, len(tail) - end)])
            elif nl >= 0:
                self._line(self._take_line(piece))
            else:
                self._add_piece(piece, tail + piece)

    def _add_piece(self, piece: str, window: str) -> None:
        self._line_len += len(piece)
        if self._line_len > self.max_line_chars:
            self._cut_line(f"a plan line is longer than {self.max_line_chars:,} characters", piece)
        self._line_parts.append(piece)
        self._line_tail = window[-(len(END_OF_PLAN) - 1) :]
        self._check_loop(piece)

    def _check_loop(self, piece: str) -> None:
        """Refuse the line if it is caught in a loop at a multiple of _LOOP_STEP characters
        that `piece` reaches (the line's last LOOP_CHARS characters are kept)."""
        recent = self._line_recent + piece
        end = self._line_len  # the line's length with `piece`
        start = end - len(recent)  # where `recent` begins in the line
        mark = (end // _LOOP_STEP) * _LOOP_STEP
        while mark > end - len(piece) and mark - start >= LOOP_CHARS:
            window = recent[mark - start - LOOP_CHARS : mark - start]
            period = _loop_period(window)
            if period:
                looped = window[-period:]
                # Shown from an item's start where it has items.
                cut = looped.find(", ") + 2 if ", " in looped else 0
                self._cut_line(
                    f"the line repeats {looped[cut:] + looped[:cut]!r} over and over "
                    f"({LOOP_CHARS} characters or more): write it again without the loop",
                    piece,
                )
            mark -= _LOOP_STEP
        self._line_recent = recent[-LOOP_CHARS:]

    def _cut_line(self, why: str, piece: str) -> NoReturn:
        """Drop the line in progress and refuse it (shown by its first 200 characters)."""
        shown = ("".join(self._line_parts) or piece)[:200] + "..."
        self._line_parts, self._line_len, self._line_tail = [], 0, ""
        self._line_recent = ""
        self._lineno += 1
        raise PlanSyntaxError(why, line=shown, lineno=self._lineno)

    def _take_line(self, last: str) -> str:
        self._add_piece(last, self._line_tail + last)
        line = "".join(self._line_parts)
        self._line_parts, self._line_len, self._line_tail = [], 0, ""
        self._line_recent = ""
        return line

    def _collect_json(self, text: str) -> None:
        self._json_len += len(text)
        if self._json_len > self.max_json_chars:
            self._json, self._json_len = None, 0
            raise PlanSyntaxError(f"a JSON plan is longer than {self.max_json_chars:,} characters")
        assert self._json is not None
        self._json.append(text)

    def close(self) -> list[Task]:
        """The stream ended: parse what is left and check the plan has a join."""
        if not self.done and self._line_parts:
            self._line(self._take_line(""))
        if self._json is not None:
            text, self._json, self._json_len = "".join(self._json).strip(), None, 0
            if text.endswith("```"):
                text = text[:-3]
            self._json_tasks(text)
        if not self.joined:
            raise MissingJoinError(
                "the plan ended without join(); every plan must end with `N. join()`",
                lineno=self._lineno or None,
            )
        return self.drain()

    def _line(self, raw: str) -> None:
        self._lineno += 1
        line = raw
        if END_OF_PLAN in line:
            line = line.partition(END_OF_PLAN)[0]
            self.ended = True
        text = line.strip()
        if (
            self._response_tasks == 0
            and not self._thought
            and (text.startswith("[") or text.lower() == "```json")
        ):
            self._json = [] if text.startswith("```") else [line + "\n"]
            self._json_len = sum(map(len, self._json))
            return
        if not text or text.startswith("```"):
            return
        thought = _THOUGHT_RE.match(text)
        if thought:
            self._thought.append(thought.group(1).strip())
            return
        m = _TASK_RE.match(text)
        if m is None:
            return  # prose between plan lines is allowed and ignored
        task = self._task(m.group(1), m.group(2).strip(), raw)
        self._accept(task)
        self._response_tasks += 1
        self._undrained.append(task)

    def _task(self, digits: str, body: str, raw: str) -> Task:
        lineno = self._lineno
        try:
            task_id = _task_id(digits)
        except ValueError as exc:
            raise PlanSyntaxError(str(exc), line=raw, lineno=lineno) from None
        if self._response_tasks == 0 and self._renumber and 0 < task_id <= self.last_id:
            self._shift = self.last_id + 1 - task_id
        written = task_id
        task_id += self._shift
        if task_id in self.tasks:
            raise DuplicateTaskError(f"task id {task_id} is used twice", line=raw, lineno=lineno)
        if task_id <= self.last_id:
            raise DuplicateTaskError(
                f"task ids must count up: {task_id} comes after {self.last_id}",
                line=raw,
                lineno=lineno,
            )
        renumber = None
        if self._shift:

            def renumber(ref: int) -> int | None:
                if ref == written:
                    return None  # its own line: never an earlier round's task of that number
                return ref + self._shift if ref in self._own else ref

        try:
            name, args, kwargs, deps, cond = _parse_call(body, task_id, self._known, renumber)
        except ValueError as exc:
            raise PlanSyntaxError(str(exc), line=raw, lineno=lineno, task_id=task_id) from None
        thought = " ".join(self._thought) or None
        self._thought = []
        task = Task(task_id, name, args, kwargs, deps, thought, raw.strip(), lineno, condition=cond)
        if self._shift:
            # The line as it now reads: the plan's ids, the model's words otherwise.
            task.line = str(task)
            self._own.add(written)
        self.validate(task)
        return task

    def validate(self, task: Task) -> None:
        """Check one task against the registry and the tasks accepted so far."""
        if not 0 < task.id <= MAX_TASK_ID:
            raise PlanSyntaxError(
                f"task id {task.id} is out of range: ids go from 1 to {MAX_TASK_ID:,}",
                line=task.line,
                lineno=task.lineno,
            )
        self._check_deps(task)
        if task.is_join:
            if task.condition is not None:
                raise PlanSyntaxError(
                    "join() takes no condition: the plan always ends with it",
                    line=task.line,
                    lineno=task.lineno,
                )
            self._check_join(task)
            return
        tool, bound = self._check_call(task)
        self._check_fan_out(task)
        self._check_fields(task)
        self._check_condition(task)
        self._check_values(task, tool, bound)

    def _check_deps(self, task: Task) -> None:
        """Each `$<id>` the task reads names an earlier task, not a join, that has a result (an
        answer, with `plan_answers`, quoting one the plan lacks makes a bare join instead)."""
        raw, lineno = task.line, task.lineno
        if (
            task.is_join
            and self.plan_answers
            and any(dep >= task.id or dep not in self._known for dep in task.deps)
        ):
            # An answer quoting a result the plan does not have (the join's own id, the 1.5B
            # model's `join("${1} is ...: ${2} people.")` in a two-line plan): a bare join, and
            # the joiner answers, rather than repairing a line the model writes again.
            task.args, task.kwargs, task.deps = (), {}, ()
        for dep in task.deps:
            if dep >= task.id:
                raise InvalidReferenceError(
                    f"${dep} refers to a task that is not earlier than task {task.id}",
                    line=raw,
                    lineno=lineno,
                    task_id=task.id,
                )
            if dep in self._no_result:
                raise InvalidReferenceError(
                    f"${dep} has no result (task {dep}: {self._no_result[dep][:200]}); get the "
                    "value another way, with its inputs written out",
                    line=raw,
                    lineno=lineno,
                    task_id=task.id,
                )
            if dep not in self._known:
                what = "join" if dep in self.tasks else "no task"
                raise InvalidReferenceError(
                    f"${dep} refers to {what} with that id",
                    line=raw,
                    lineno=lineno,
                    task_id=task.id,
                )

    def _check_call(self, task: Task) -> tuple[Tool, dict[str, Any]]:
        """The task's tool and its arguments bound to the tool's parameters: an unknown tool,
        arguments it does not take, a call that already failed, or the same call as an earlier
        task of a pure tool, is refused."""
        raw, lineno = task.line, task.lineno
        tool = self.tools.get(task.tool)
        if tool is None:
            known = ", ".join(self.tools) or "none"
            raise UnknownToolError(
                f"unknown tool {task.tool!r} (tools: {known}, join)",
                line=raw,
                lineno=lineno,
                task_id=task.id,
            )
        try:
            bound = task.bound = tool.bind(task.args, task.kwargs)
        except TypeError as exc:
            raise ArgumentError(
                f"{tool.signature_text()}: {exc}", line=raw, lineno=lineno, task_id=task.id
            ) from None
        key = _call_key(task.tool, bound)
        if not task.deps:
            earlier = self._failed.get(key)
            if earlier is not None:
                raise ArgumentError(
                    f"{task.call_text()} already failed with these arguments ({earlier}); "
                    "change the arguments or use another tool",
                    line=raw,
                    lineno=lineno,
                    task_id=task.id,
                )
        # Two sides of a branch may make the same call, each under its own condition.
        repeated = self._calls.get(key) if task.condition is None else None
        if repeated is not None and tool.pure:
            raise ArgumentError(
                f"{task.call_text()} is the same call as task {repeated}: use ${repeated} for "
                "its result, or change the arguments",
                line=raw,
                lineno=lineno,
                task_id=task.id,
            )
        return tool, bound

    def _check_values(self, task: Task, tool: Tool, bound: dict[str, Any]) -> None:
        """Each argument written out (not a reference) is a value its parameter takes."""
        raw, lineno = task.line, task.lineno
        for name, value in bound.items():
            if _has_ref(value):
                continue  # checked when the reference is resolved
            try:
                tool.check_value(name, value)
            except ValueError as exc:
                raise ArgumentError(
                    f"argument {name!r} of {tool.name}: {exc}",
                    line=raw,
                    lineno=lineno,
                    task_id=task.id,
                ) from None

    def _check_join(self, task: Task) -> None:
        """`join()`; with `plan_answers`, also `join("<answer with ${<id>}>")` or `join($<id>)`."""
        if not self.plan_answers:
            if task.args or task.kwargs:
                raise ArgumentError("join() takes no arguments", line=task.line, lineno=task.lineno)
            return
        if task.kwargs or len(task.args) > 1:
            raise ArgumentError(
                "join() takes at most one argument: the answer, a string with ${<id>} where a "
                "result goes",
                line=task.line,
                lineno=task.lineno,
            )
        if task.args and not isinstance(task.args[0], str | Template | Ref):
            raise ArgumentError(
                "join's answer is a string (with ${<id>} where a result goes) or $<id>",
                line=task.line,
                lineno=task.lineno,
            )

    def _check_fan_out(self, task: Task) -> None:
        """A fan-out's list must be a list where the tool's return type says so."""
        for ref in fan_outs(task.bound.values()):
            known = None if ref.path else self._returns(ref)  # a projection's type: unknown
            if known is None:
                continue
            tool, returns = known
            if not may_be_list(returns):
                raise InvalidReferenceError(
                    f"{ref}[*] fans out over the result of {tool}, which returns "
                    f"{_type_name(returns)}, not a list",
                    line=task.line,
                    lineno=task.lineno,
                    task_id=task.id,
                )

    def _check_fields(self, task: Task) -> None:
        """A reference that reads a field of a result whose declared type has no fields (a
        number, a text, a list) or not that one (a TypedDict, a pydantic model, a dataclass) is
        refused: the 1.5B model wrote `${1.lag}` for `replica_lag`'s number and `${2.checksum}`
        for a bool, and the run failed, or skipped a branch, only when the task ran."""
        read = references(task.bound.values())
        if task.condition is not None:
            read += [ref for _, ref in task.condition.refs]
        for ref in read:
            known = self._returns(ref) if ref.path and isinstance(ref.path[0], str) else None
            if known is None:
                continue
            tool, returns = known
            fields = declared_fields(returns)
            if fields is None or ref.path[0] in fields:
                continue
            has = f"its fields: {', '.join(fields)}" if fields else "it has no fields"
            raise NoSuchField(
                f"{ref} reads the field {ref.path[0]!r} of task {ref.task_id}'s result, but "
                f"{tool} returns {_type_name(returns)} ({has}): write ${ref.task_id} "
                "for the whole result" + (", or one of its fields" if fields else ""),
                ref=ref,
                tool=tool,
                fields=fields,
                line=task.line,
                lineno=task.lineno,
                task_id=task.id,
            )

    def _check_condition(self, task: Task) -> None:
        """A condition that can only be false, always holds or cannot be evaluated as written
        is refused (`branches.unsound`, from what the tasks it reads are declared to return)."""
        if task.condition is None:
            return
        why = unsound(task.condition, self._returns, self._action, self._skippable.__contains__)
        if why is not None:
            raise PlanSyntaxError(
                f"the condition `{task.condition}` {why}",
                line=task.line,
                lineno=task.lineno,
                task_id=task.id,
            )

    def _action(self, tool: str) -> bool:
        """Whether `tool` changes the world and returns a text (what it did, in words)."""
        t = self.tools.get(tool)
        return t is not None and t.side_effects and t.returns is str

    def _returns(self, ref: Ref) -> tuple[str, Any] | None:
        """The tool and declared return type of the task `ref` reads; None when not known (no
        such task, a fan-out's list of results, a tool not registered)."""
        source = self.tasks.get(ref.task_id)
        if source is None or source.fan_out is not None or source.tool not in self.tools:
            return None
        return source.tool, self.tools[source.tool].returns

    def _accept(self, task: Task) -> None:
        self.tasks[task.id] = task
        self._last_id = task.id
        if task.condition is not None or any(d in self._skippable for d in task.deps):
            self._skippable.add(task.id)  # a run may skip it, and read it as None
        if task.is_join:
            self.joined = True
        else:
            self._known[task.id] = True
            if task.condition is None:
                self._calls.setdefault(_call_key(task.tool, task.bound), task.id)

    def feed_json(self, data: str | list[Any]) -> list[Task]:
        """Accept a plan in the JSON form: `[{"id": 1, "tool": "search", "args": {...} or
        [...]}, ...]`, ending with a join task; a task may carry a condition,
        `"if": "$1.disk_pct > 90"` (`branches`).

        A string that is exactly a reference (`"$1"`, `"$1.population"`) passes the result
        object; references inside longer strings are interpolated as text, as in the text form.
        """
        self._json_tasks(data)
        return self.drain()

    def _json_tasks(self, data: str | list[Any]) -> None:
        if isinstance(data, str):
            if len(data) > self.max_json_chars:
                raise PlanSyntaxError(
                    f"a JSON plan is longer than {self.max_json_chars:,} characters"
                )
            try:
                data = json.loads(data)
            except RecursionError:
                raise PlanSyntaxError(_too_deep()) from None
            except ValueError as exc:  # JSONDecodeError, or an integer of too many digits
                raise PlanSyntaxError(f"plan is not valid JSON: {exc}") from None
        if not isinstance(data, list):
            raise PlanSyntaxError("a JSON plan must be a list of tasks")
        if _nests_deeper(data, MAX_NESTING + 3):  # the plan, a task, its args, then arguments
            raise PlanSyntaxError(_too_deep())
        for index, item in enumerate(data, 1):
            line = json.dumps(item, ensure_ascii=False, default=str)
            if self.joined:
                raise PlanSyntaxError(
                    "join must be the last task: nothing may follow it", line=line, lineno=index
                )
            if not isinstance(item, dict) or "tool" not in item or "id" not in item:
                raise PlanSyntaxError("each task needs an id and a tool", line=line, lineno=index)
            task_id, name, thought = item["id"], item["tool"], item.get("thought")
            if isinstance(thought, str):
                thought = encodable(thought)
            if (
                not isinstance(task_id, int)
                or isinstance(task_id, bool)
                or not isinstance(name, str)
                or not isinstance(thought, str | None)
            ):
                raise PlanSyntaxError(
                    "id must be an integer, tool and thought strings", line=line, lineno=index
                )
            conv = _Converter(task_id, self.known_ids)
            raw_args = item.get("args", {})
            try:
                if isinstance(raw_args, dict):
                    args: tuple[Any, ...] = ()
                    kwargs = {str(k): _json_value(v, conv) for k, v in raw_args.items()}
                elif isinstance(raw_args, list):
                    args, kwargs = tuple(_json_value(v, conv) for v in raw_args), {}
                else:
                    raise ValueError("args must be an object or a list")
                cond = _json_condition(item.get("if"), conv)
            except ValueError as exc:
                raise PlanSyntaxError(str(exc), line=line, lineno=index) from None
            deps = tuple(sorted(conv.deps))
            task = Task(task_id, name, args, kwargs, deps, thought, line, index, condition=cond)
            self._undrained.append(self.add(task))
        if not self.joined:
            raise MissingJoinError("the plan has no join task", lineno=len(data))

    def add(self, task: Task) -> Task:
        """Validate and accept a task built elsewhere (the JSON plan form)."""
        if task.id in self.tasks:
            raise DuplicateTaskError(f"task id {task.id} is used twice", line=task.line)
        if task.id <= self.last_id:
            raise DuplicateTaskError(
                f"task ids must count up: {task.id} comes after {self.last_id}", line=task.line
            )
        self.validate(task)
        self._accept(task)
        return task


def _call_key(tool: str, bound: Mapping[str, Any]) -> tuple[str, str]:
    return tool, json.dumps(bound, sort_keys=True, default=repr)


def parse_plan(text: str, tools: ToolRegistry) -> list[Task]:
    """Parse a whole plan in the text form."""
    parser = PlanParser(tools)
    tasks = parser.feed(text)
    tasks.extend(parser.close())
    return tasks


def _json_value(value: Any, conv: _Converter) -> Any:
    if isinstance(value, str):
        whole = _WHOLE_REF_RE.fullmatch(value.strip())
        if whole:
            braced, inner, bare, outer = whole.groups()
            path = _parse_path(inner or "") + _parse_path(outer or "")
            return conv.ref(_ref_id(braced or bare), path)
        return conv.string(value)
    if isinstance(value, list):
        return [_json_value(v, conv) for v in value]
    if isinstance(value, dict):
        return {encodable(k): _json_value(v, conv) for k, v in value.items()}
    return value


def _bounded_id(digits: str) -> int | None:
    """The id `digits` names, or None past MAX_TASK_ID (without `int()` of a huge digit string,
    which Python refuses past 4,300 digits).  0 is left to the checks that name what is wrong."""
    digits = digits.lstrip("0") or "0"
    if len(digits) > len(str(MAX_TASK_ID)) or int(digits) > MAX_TASK_ID:
        return None
    return int(digits)


def _out_of_range(what: str, digits: str) -> str:
    shown = digits if len(digits) <= 20 else digits[:20] + "..."
    return f"{what}{shown} is out of range: task ids go from 1 to {MAX_TASK_ID:,}"


def _task_id(digits: str) -> int:
    task_id = _bounded_id(digits)
    if task_id is None:
        raise ValueError(_out_of_range("task id ", digits))
    return task_id


def _ref_id(digits: str) -> int:
    task_id = _bounded_id(digits)
    if task_id is None:
        raise ValueError(_out_of_range("reference $", digits))
    return task_id


def _too_deep() -> str:
    return f"arguments nest deeper than {MAX_NESTING} levels of lists and objects"


def _nests_deeper(data: Any, limit: int) -> bool:
    """Whether lists and dicts in `data` nest deeper than `limit` (without recursing)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, list | dict))
        elif isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, list | dict))
    return False


def parse_json_plan(data: str | list[Any], tools: ToolRegistry) -> list[Task]:
    """Parse a whole plan in the JSON form (see `PlanParser.feed_json`)."""
    return PlanParser(tools).feed_json(data)
