"""The plan language: reading plan lines with `ast` (never `eval`), the incremental parser that
emits each task the moment its line is complete, validation against the tool registry, and the
JSON form.  Both forms compile to the `Task` model of `plan`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import (
    ArgumentError,
    DuplicateTaskError,
    InvalidReferenceError,
    MissingJoinError,
    PlanSyntaxError,
    UnknownToolError,
)
from .plan import END_OF_PLAN, Ref, Task, Template
from .tools import ToolRegistry

__all__ = ["PlanParser", "parse_call", "parse_json_plan", "parse_plan"]

_TASK_RE = re.compile(r"^\s*(?:[-*]\s*)?(?:#\s*)?(\d+)\s*[.:)]\s*(.*?)\s*$")
_THOUGHT_RE = re.compile(r"^\s*Thought\s*:\s*(.*?)\s*$", re.IGNORECASE)
_REF_PREFIX = "__pw_ref_"
# Inside strings: ${N}, ${N.key[0]} (strict) and bare $N (only when N is an earlier task).
_STRING_REF_RE = re.compile(
    r"\$\{\s*(\d+)((?:\s*\.\s*[A-Za-z_]\w*|\s*\[\s*-?\d+\s*\]|\s*\[\s*(?:'[^']*'|\"[^\"]*\")\s*\])*)\s*\}"
    r"|\$(\d+)(?![\d.]*\d)"
)
_PATH_PART_RE = re.compile(
    r"\.\s*([A-Za-z_]\w*)|\[\s*(-?\d+)\s*\]|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]"
)
_CODE_REF_RE = re.compile(r"\$\{\s*(\d+)((?:\s*\.\s*[A-Za-z_]\w*|\s*\[[^\]]*\])*)\s*\}|\$(\d+)")
_PATH = r"(?:\s*\.\s*[A-Za-z_]\w*|\s*\[\s*(?:-?\d+|'[^']*'|\"[^\"]*\")\s*\])"
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
                braced, path, bare = m.groups()
                # `${2.population}` reads as `$2.population`: the projection moves outside.
                out.append(f"{_REF_PREFIX}{braced or bare}{(path or '').strip()}")
                i = m.end()
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _parse_path(text: str) -> tuple[str | int, ...]:
    path: list[str | int] = []
    for m in _PATH_PART_RE.finditer(text):
        attr, index, sq, dq = m.groups()
        if attr is not None:
            path.append(attr)
        elif index is not None:
            path.append(int(index))
        else:
            path.append(sq if sq is not None else dq)
    return tuple(path)


class _Converter:
    """Turns the `ast` of a call's arguments into plan values, collecting dependencies."""

    def __init__(self, task_id: int, known: Mapping[int, bool]) -> None:
        self.task_id = task_id
        self.known = known
        self.deps: set[int] = set()

    def ref(self, task_id: int, path: tuple[str | int, ...] = ()) -> Ref:
        self.deps.add(task_id)
        return Ref(task_id, path)

    def string(self, text: str) -> str | Template:
        if "$" not in text:
            return text
        parts: list[str | Ref] = []
        pos = 0
        for m in _STRING_REF_RE.finditer(text):
            braced, path_text, bare = m.groups()
            if bare is not None:
                ref_id = int(bare)
                # A bare "$5" in prose is only a reference when task 5 is an earlier task.
                if ref_id >= self.task_id or ref_id not in self.known:
                    continue
                ref = self.ref(ref_id)
            else:
                ref = self.ref(int(braced), _parse_path(path_text or ""))
            if m.start() > pos:
                parts.append(text[pos : m.start()])
            parts.append(ref)
            pos = m.end()
        if not parts:
            return text
        if pos < len(text):
            parts.append(text[pos:])
        return Template(tuple(parts))

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return self.string(node.value)
            if node.value is Ellipsis or isinstance(node.value, bytes | complex):
                raise ValueError(f"unsupported literal {ast.unparse(node)}")
            return node.value
        if isinstance(node, ast.List):
            return [self.value(e) for e in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(self.value(e) for e in node.elts)
        if isinstance(node, ast.Set):
            return [self.value(e) for e in node.elts]
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    raise ValueError("** in a dict literal is not supported")
                key = self.value(k)
                if isinstance(key, Ref | Template | list | dict):
                    raise ValueError(f"dict keys must be plain literals, not {ast.unparse(k)}")
                out[key] = self.value(v)
            return out
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = self.value(node.operand)
            if isinstance(operand, bool) or not isinstance(operand, int | float):
                raise ValueError(f"unsupported expression {ast.unparse(node)}")
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.Name):
            if node.id.startswith(_REF_PREFIX):
                return self.ref(int(node.id[len(_REF_PREFIX) :]))
            if node.id in _JSON_NAMES:
                return _JSON_NAMES[node.id]
            raise ValueError(f"bare name {node.id!r} is not a value (quote strings)")
        if isinstance(node, ast.Attribute | ast.Subscript):
            path: list[str | int] = []
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
                    path.append(key)
                cur = cur.value
            if isinstance(cur, ast.Name) and cur.id.startswith(_REF_PREFIX):
                return self.ref(int(cur.id[len(_REF_PREFIX) :]), tuple(reversed(path)))
            raise ValueError(f"unsupported expression {ast.unparse(node)}")
        raise ValueError(f"unsupported expression {ast.unparse(node)}")


def _parse_call(
    body: str, task_id: int, known: Mapping[int, bool]
) -> tuple[str, tuple[Any, ...], dict[str, Any], tuple[int, ...]]:
    """Parse `tool(arg, key=value)`; raises ValueError with a readable reason."""
    text = body.strip().rstrip(";").strip()
    if re.fullmatch(r"[A-Za-z_]\w*", text):
        text += "()"  # a bare `join` is forgiven
    try:
        tree = ast.parse(_mask_refs(text), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not a tool call: {exc.msg}") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ValueError("expected `tool_name(arguments)`")
    conv = _Converter(task_id, known)
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
    return call.func.id, tuple(args), kwargs, tuple(sorted(conv.deps))


def parse_call(body: str, task_id: int, known: Iterable[int] = ()) -> Task:
    """Parse one call such as `search("x", k=3)` into task `task_id` (ReAct mode's actions).

    `known` are the ids whose results may be referenced.  Raises PlanSyntaxError.
    """
    try:
        name, args, kwargs, deps = _parse_call(body, task_id, dict.fromkeys(known, True))
    except ValueError as exc:
        raise PlanSyntaxError(str(exc), line=body, task_id=task_id) from None
    return Task(task_id, name, args, kwargs, deps, None, body.strip(), None)


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


class PlanParser:
    """Incremental parser and validator: feed it the planner's stream chunk by chunk.

    `feed()` returns each task the moment its line is complete and valid; invalid input raises a
    `PlanError` naming the line, and the parser keeps every task accepted before it, so the
    planner can be asked to continue from there.  Replans reuse the parser: ids keep counting up
    and new tasks may reference results of earlier plans.
    """

    def __init__(self, tools: ToolRegistry) -> None:
        self.tools = tools
        self.tasks: dict[int, Task] = {}
        self._known: dict[int, bool] = {}  # id -> True for every accepted non-join task
        self._last_id = 0
        self._buffer = ""
        self._lineno = 0
        self._thought: list[str] = []
        self._json: str | None = None
        self._response_tasks = 0
        self.joined = False
        self.ended = False

    @property
    def last_id(self) -> int:
        """The highest task id accepted so far (0 before any)."""
        return self._last_id

    @property
    def known_ids(self) -> Mapping[int, bool]:
        """Ids of accepted tasks whose results later tasks may use (every task but join)."""
        return self._known

    def start_plan(self) -> None:
        """Begin a new plan (a replan or a repair continuation): reset the per-response state."""
        self._buffer = ""
        self._lineno = 0
        self._thought = []
        self._json = None
        self._response_tasks = 0
        self.joined = False
        self.ended = False

    @property
    def done(self) -> bool:
        """True once `join()` or `<END_OF_PLAN>` was seen: the rest of the stream can be dropped."""
        return self.joined or self.ended

    def feed(self, chunk: str) -> list[Task]:
        if self.done:
            return []
        buffer = self._buffer + chunk if self._buffer else chunk
        out: list[Task] = []
        pos = 0
        try:
            while not self.done:
                if self._json is not None:
                    # The JSON form arrives whole: collect it and parse it in close().
                    self._json += buffer[pos:]
                    pos = len(buffer)
                    break
                nl = buffer.find("\n", pos)
                if nl < 0:
                    # <END_OF_PLAN> can close a plan without a trailing newline.
                    end = buffer.find(END_OF_PLAN, pos)
                    if end >= 0:
                        line, pos = buffer[pos:end], len(buffer)
                        self.ended = True
                        self._line(line, out)
                    break
                line, pos = buffer[pos:nl], nl + 1
                self._line(line, out)
        finally:
            # On a PlanError the lines after the bad one stay buffered, as a stream would.
            self._buffer = buffer[pos:]
        return out

    def close(self) -> list[Task]:
        """The stream ended: parse what is left and check the plan has a join."""
        out: list[Task] = []
        if not self.done and self._buffer:
            line, self._buffer = self._buffer, ""
            self._line(line, out)
        if self._json is not None:
            text, self._json = self._json.strip(), None
            if text.endswith("```"):
                text = text[:-3]
            out.extend(self.feed_json(text))
        if not self.joined:
            raise MissingJoinError(
                "the plan ended without join(); every plan must end with `N. join()`",
                lineno=self._lineno or None,
            )
        return out

    def _line(self, raw: str, out: list[Task]) -> None:
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
            self._json = "" if text.startswith("```") else line + "\n"
            return
        if not text or text.startswith("```"):
            return
        thought = _THOUGHT_RE.match(text)
        if thought:
            self._thought.append(thought.group(1))
            return
        m = _TASK_RE.match(text)
        if m is None:
            return  # prose between plan lines is allowed and ignored
        task = self._task(int(m.group(1)), m.group(2), raw)
        self._accept(task)
        self._response_tasks += 1
        out.append(task)

    def _task(self, task_id: int, body: str, raw: str) -> Task:
        lineno = self._lineno
        if task_id in self.tasks:
            raise DuplicateTaskError(f"task id {task_id} is used twice", line=raw, lineno=lineno)
        if task_id <= self.last_id:
            raise DuplicateTaskError(
                f"task ids must count up: {task_id} comes after {self.last_id}",
                line=raw,
                lineno=lineno,
            )
        try:
            name, args, kwargs, deps = _parse_call(body, task_id, self._known)
        except ValueError as exc:
            raise PlanSyntaxError(str(exc), line=raw, lineno=lineno, task_id=task_id) from None
        thought = " ".join(self._thought) or None
        self._thought = []
        task = Task(task_id, name, args, kwargs, deps, thought, raw.strip(), lineno)
        self.validate(task)
        return task

    def validate(self, task: Task) -> None:
        """Check one task against the registry and the tasks accepted so far."""
        raw, lineno = task.line, task.lineno
        for dep in task.deps:
            if dep >= task.id:
                raise InvalidReferenceError(
                    f"${dep} refers to a task that is not earlier than task {task.id}",
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
        if task.is_join:
            if task.args or task.kwargs:
                raise ArgumentError("join() takes no arguments", line=raw, lineno=lineno)
            return
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

    def _accept(self, task: Task) -> None:
        self.tasks[task.id] = task
        self._last_id = task.id
        if task.is_join:
            self.joined = True
        else:
            self._known[task.id] = True

    def feed_json(self, data: str | list[Any]) -> list[Task]:
        """Accept a plan in the JSON form: `[{"id": 1, "tool": "search", "args": {...} or
        [...]}, ...]`, ending with a join task.

        A string that is exactly a reference (`"$1"`, `"$1.population"`) passes the result
        object; references inside longer strings are interpolated as text, as in the text form.
        """
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as exc:
                raise PlanSyntaxError(f"plan is not valid JSON: {exc}") from None
        if not isinstance(data, list):
            raise PlanSyntaxError("a JSON plan must be a list of tasks")
        out: list[Task] = []
        for index, item in enumerate(data, 1):
            line = json.dumps(item, ensure_ascii=False, default=str)
            if not isinstance(item, dict) or "tool" not in item or "id" not in item:
                raise PlanSyntaxError("each task needs an id and a tool", line=line, lineno=index)
            task_id, name = item["id"], item["tool"]
            if (
                not isinstance(task_id, int)
                or isinstance(task_id, bool)
                or not isinstance(name, str)
            ):
                raise PlanSyntaxError(
                    "id must be an integer and tool a string", line=line, lineno=index
                )
            conv = _Converter(task_id, self.known_ids)
            raw_args = item.get("args", {})
            if isinstance(raw_args, dict):
                args: tuple[Any, ...] = ()
                kwargs = {str(k): _json_value(v, conv) for k, v in raw_args.items()}
            elif isinstance(raw_args, list):
                args, kwargs = tuple(_json_value(v, conv) for v in raw_args), {}
            else:
                raise PlanSyntaxError("args must be an object or a list", line=line, lineno=index)
            deps = tuple(sorted(conv.deps))
            task = Task(task_id, name, args, kwargs, deps, item.get("thought"), line, index)
            out.append(self.add(task))
        if not self.joined:
            raise MissingJoinError("the plan has no join task", lineno=len(data))
        return out

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
            return conv.ref(int(braced or bare), path)
        return conv.string(value)
    if isinstance(value, list):
        return [_json_value(v, conv) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v, conv) for k, v in value.items()}
    return value


def parse_json_plan(data: str | list[Any], tools: ToolRegistry) -> list[Task]:
    """Parse a whole plan in the JSON form (see `PlanParser.feed_json`)."""
    return PlanParser(tools).feed_json(data)
