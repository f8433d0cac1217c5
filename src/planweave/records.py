"""The run's plain typed records, and the one serializer every view of a run uses.

`TaskRecord` is a task and everything that happened to it while the run is live; `task_dict` and
`run_dict` are the shapes of `planweave run --json`, which the journal (`planweave runs show
--json`), the events and later the server produce from the same functions.  What the journal
gives back for resuming (`RecordedTask`, `Recorded`, `Replay`) and LLM usage live here too, so
that the store depends on records, not on the scheduler or an LLM backend.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic_core import to_jsonable_python

from .errors import BranchNotTaken, RunError, TaskError, UserError
from .events import Event, LLMCallFinished, timings
from .plan import Ref, Task, Template, format_args, render_text
from .redaction import redact, redact_value

__all__ = [
    "LLMUsage",
    "Price",
    "Recorded",
    "RecordedItem",
    "RecordedTask",
    "Replay",
    "RunResult",
    "TaskRecord",
    "TaskStatus",
    "dollars",
    "item_call",
    "item_dict",
    "jsonable",
    "partial_text",
    "plan_json",
    "run_dict",
    "task_dict",
]


_SHOWN_ITEMS = 1000


def shown(value: Any, depth: int = 0) -> Any:
    """A result as the joiner and the replanner read it: a float keeps its whole digits, two
    decimals and at least six significant digits (403.36917562724017 reads 403.369,
    39964076.666666664 reads 39964076.67), in lists and mappings too.
    Qwen's tokenizer spends a token on each digit, and no answer needs the seventeenth;
    arguments interpolated into later calls (`render_text`) and the grounding check keep the
    exact value."""
    if isinstance(value, float):
        if not math.isfinite(value) or value == 0 or abs(value) >= 1e15:
            return value
        if abs(value) >= 1:
            # Two decimals at least: 39964076.67 says a mean is no whole number, where
            # 39964077.0 read as one (the 1.5B model then withdrew its averages).
            return round(value, max(2, 6 - len(str(int(abs(value))))))
        return float(f"{value:.6g}")
    if depth >= 16:
        return value
    if isinstance(value, Mapping) and len(value) <= _SHOWN_ITEMS:
        return {k: shown(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple) and len(value) <= _SHOWN_ITEMS:
        return [shown(v, depth + 1) for v in value]
    return value


class TaskStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


ENDED = frozenset({TaskStatus.DONE, TaskStatus.FAILED, TaskStatus.SKIPPED, TaskStatus.CANCELLED})
BROKEN = frozenset({TaskStatus.FAILED, TaskStatus.SKIPPED, TaskStatus.CANCELLED})


def jsonable(value: Any) -> Any:
    """A JSON-ready copy of a tool result; objects JSON cannot hold become their `str()`."""
    return to_jsonable_python(value, fallback=str)


def plan_json(value: Any) -> Any:
    """A planned argument as JSON: references and templates read as they do in the plan."""
    if isinstance(value, Ref | Template):
        return str(value)
    if isinstance(value, list | tuple):
        return [plan_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plan_json(v) for k, v in value.items()}
    return jsonable(value)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


_NO_RESULT: Any = object()


def task_dict(
    *,
    id: int,
    tool: str,
    args: dict[str, Any],
    call: str,
    dependencies: list[int],
    status: str,
    start: float | None,
    end: float | None,
    plan_round: int,
    attempts: int,
    result: Any = _NO_RESULT,
    error: dict[str, Any] | None = None,
    thought: str | None = None,
    recovery: list[dict[str, Any]] | None = None,
    items: list[dict[str, Any]] | None = None,
    recalled: str | None = None,
) -> dict[str, Any]:
    """A task as `--json` shows it: `result` only when it finished, the optional keys only when
    they say something (`items`: a fan-out's elements, as `item_dict` shows them; `recalled`:
    the earlier run of the thread whose result it took, `threads`)."""
    data: dict[str, Any] = {
        "id": id,
        "tool": tool,
        "args": args,
        "call": call,
        "dependencies": dependencies,
        "status": status,
        "start": start,
        "end": end,
        "plan_round": plan_round,
        "attempts": attempts,
    }
    if status == TaskStatus.DONE and result is not _NO_RESULT:
        data["result"] = result
    if error is not None:
        data["error"] = error
    if thought:
        data["thought"] = thought
    if recovery:
        data["recovery"] = recovery
    if recalled:
        data["recalled"] = recalled
    if items:
        data["items"] = items
    return data


def item_dict(
    *,
    item: int,
    call: str,
    status: str,
    start: float | None,
    end: float | None,
    attempts: int,
    result: Any = None,
    error: dict[str, Any] | None = None,
    recovery: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A fan-out element as `--json` shows it, in its task's `items`."""
    data: dict[str, Any] = {
        "item": item,
        "call": call,
        "status": status,
        "start": start,
        "end": end,
        "attempts": attempts,
    }
    if status == TaskStatus.DONE:
        data["result"] = result
    if error is not None:
        data["error"] = error
    if recovery:
        data["recovery"] = recovery
    return data


def run_dict(
    *,
    id: str,
    question: str,
    answer: str | None,
    mode: str,
    status: str,
    tasks: list[dict[str, Any]],
    llm: dict[str, int],
    wall_s: float | None,
    replans: int,
    timings: dict[str, float],
    error: dict[str, Any] | None = None,
    partial: str | None = None,
    cache: dict[str, Any] | None = None,
    output: Any = None,
) -> dict[str, Any]:
    """A run as `planweave run --json` shows it (the journal adds its own bookkeeping).
    `cache` is what the plan cache did for it (absent when no cache was asked); `output` a
    typed answer's value, as JSON (absent for an answer in words)."""
    data: dict[str, Any] = {
        "id": id,
        "question": question,
        "answer": answer,
        "mode": mode,
        "status": status,
        "tasks": tasks,
        "llm": llm,
        "wall_s": None if wall_s is None else round(wall_s, 6),
        "replans": replans,
        "timings": timings,
    }
    if error is not None:
        data["error"] = error
    if partial is not None:
        data["partial"] = partial
    if cache is not None:
        data["cache"] = cache
    if output is not None:
        from pydantic_core import to_jsonable_python

        data["output"] = to_jsonable_python(output)
    return data


@dataclass(slots=True, eq=False)
class TaskRecord:
    """A task and everything that happened to it."""

    task: Task
    plan_round: int = 0
    status: TaskStatus = TaskStatus.PENDING
    start: float | None = None
    end: float | None = None
    result: Any = None
    error: TaskError | None = None
    attempts: int = 0
    reused: bool = False
    recalled: str | None = None  # the earlier run of the thread whose result it took
    recovery: list[dict[str, Any]] = field(default_factory=list)
    waiting: int = 0
    dependents: list[TaskRecord] = field(default_factory=list)
    # A fan-out's element `item` (1-based) has a record of its own; its task is the fan-out's.
    item: int | None = None
    call: str = ""  # an element's call, its arguments resolved (`item_call`)
    label: str = ""  # the name an element was called for, when it fans out over names
    items: list[TaskRecord] = field(default_factory=list)  # a fan-out's elements

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    @property
    def duration(self) -> float:
        if self.start is None or self.end is None:
            return 0.0
        return self.end - self.start

    @property
    def not_taken(self) -> bool:
        """Skipped on purpose: a branch whose condition was false (`branches`), no failure."""
        return self.status is TaskStatus.SKIPPED and isinstance(self.error, BranchNotTaken)

    def observation(self, limit: int = 2000) -> str:
        """What the joiner and replanner read about this task."""
        if self.status is TaskStatus.DONE:
            text = redact(render_text(shown(self.result)) + self._by_name())  # a tool's secret
        elif self.not_taken and self.error is not None:
            text = f"SKIPPED: {self.error.message}"
        elif self.error is not None:
            text = f"ERROR: {self.error.message}"
        else:
            text = f"({self.status.value})"
        return clip(text, limit)

    def _by_name(self) -> str:
        """A fan-out over names, its results paired with them, and where they are numbers the
        largest and the smallest: the 1.5B joiner, shown three neighbours and a list of three
        populations, named the least populous as the most."""
        result, items = self.result, self.items
        if not items or not isinstance(result, list) or len(result) != len(items):
            return ""
        if not all(sub.label for sub in items):
            return ""
        # Names quoted: a name a tool gave cannot pass for this line's own words.
        pairs = [
            (json.dumps(sub.label, ensure_ascii=False), value)
            for sub, value in zip(items, result, strict=True)
        ]
        said = "; ".join(f"{n}: {render_text(shown(v))}" for n, v in pairs)
        numbers = {
            n: v
            for n, v in pairs
            if (isinstance(v, int) and not isinstance(v, bool))
            or (isinstance(v, float) and math.isfinite(v))
        }
        if len(numbers) == len(pairs) > 1:
            for word, pick in (("largest", max), ("smallest", min)):
                best = pick(numbers.values())
                said += f"; {word}: " + " and ".join(n for n, v in numbers.items() if v == best)
        return f" ({said})"

    def to_dict(self) -> dict[str, Any]:
        task = self.task
        return task_dict(
            id=task.id,
            tool=task.tool,
            args={name: plan_json(value) for name, value in task.bound.items()},
            call=task.call_text(),
            dependencies=list(task.deps),
            status=self.status.value,
            start=self.start,
            end=self.end,
            plan_round=self.plan_round,
            attempts=self.attempts,
            result=redact_value(jsonable(self.result))
            if self.status is TaskStatus.DONE
            else _NO_RESULT,
            error=None if self.error is None else self.error.to_dict(),
            thought=task.thought,
            recovery=self.recovery,
            items=[sub.item_dict() for sub in self.items],
            recalled=self.recalled,
        )

    def item_dict(self) -> dict[str, Any]:
        """This fan-out element as `--json` shows it."""
        assert self.item is not None
        return item_dict(
            item=self.item,
            call=self.call or self.task.call_text(),
            status=self.status.value,
            start=self.start,
            end=self.end,
            attempts=self.attempts,
            result=redact_value(jsonable(self.result)),
            error=None if self.error is None else self.error.to_dict(),
            recovery=self.recovery,
        )


def partial_text(records: Sequence[TaskRecord]) -> str | None:
    """For a run without an answer: what it found before it stopped, as text (no LLM)."""
    done = [r for r in records if r.status is TaskStatus.DONE]
    if not done:
        return None
    return "\n".join(f"{r.task.call_text()} = {r.observation(500)}" for r in done)


@dataclass(slots=True)
class LLMUsage:
    """LLM calls and tokens of one run, and what they cost where the model's price is known
    (`Price`; None: not priced)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = asdict(self)
        if self.cost is None:
            del data["cost"]
        return data


# Prices above this, per million tokens, are a typo, not a model (the dearest list ~$600).
_MAX_PRICE = 100_000.0


@dataclass(frozen=True, slots=True)
class Price:
    """A model's price: US dollars per million prompt (`input`) and completion (`output`)
    tokens.  Written `INPUT/OUTPUT` (`0.15/0.60`), or one number for both."""

    input: float
    output: float

    @classmethod
    def parse(cls, text: str) -> Price:
        """The price `text` writes; UserError naming the setting when it is not one."""
        parts = text.split("/") if isinstance(text, str) else []
        try:
            numbers = [float(p) for p in parts]
        except ValueError:
            numbers = []
        if len(numbers) == 1:
            numbers *= 2
        if len(numbers) != 2 or not all(0 <= n <= _MAX_PRICE for n in numbers):
            raise UserError(
                f"price: {str(text)[:40]!r} is not a price: write dollars per million prompt "
                "and completion tokens as INPUT/OUTPUT (e.g. 0.15/0.60), each 0 to 100000"
            )
        # -0 is 0 (else it is shown as $-0.000000); adding 0.0 makes -0.0 0.0.
        return cls(numbers[0] + 0.0, numbers[1] + 0.0)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """What so many tokens cost, in dollars."""
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000


def dollars(cost: float) -> str:
    """A cost as the CLI and the page show it: dollars to the millionth (`$0.000420`)."""
    return f"${cost:,.6f}"


# ---------------------------------------------------------------------- what the journal gives back


@dataclass(frozen=True, slots=True)
class RecordedTask:
    """A task as the journal has it, for resuming: `result` in its stored (encoded) form."""

    id: int
    tool: str
    call: str
    status: str
    side_effects: bool
    started: float | None
    ended: float | None
    attempts: int
    result: Any
    error: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Recorded:
    """A task's outcome from an earlier session of a journaled run.  A task planned again with
    the same id and the same call takes this outcome instead of calling its tool ("skipped":
    a branch not taken, its condition not evaluated again)."""

    call: str
    outcome: Literal["done", "failed", "skipped"]
    result: Any = None
    stored: Any = None
    error: TaskError | None = None
    start: float | None = None
    end: float | None = None
    attempts: int = 0
    # The earlier run of the run's thread it was recorded in (`threads`); None: an earlier
    # session of this run.
    run_id: str | None = None


@dataclass(frozen=True, slots=True)
class RecordedItem:
    """A fan-out element an earlier session finished: reused when the element's call
    (`item_call`: its tool and resolved arguments) is the same again."""

    call: str
    result: Any = None
    stored: Any = None
    start: float | None = None
    end: float | None = None
    attempts: int = 0


def item_call(tool: str, arguments: Mapping[str, Any]) -> str:
    """A fan-out element's call, with its arguments resolved: its identity on resume."""
    return f"{tool}({format_args((), arguments)})"


@dataclass(frozen=True, slots=True)
class Replay:
    """A response recorded in an earlier session of a journaled run.  The call with the same
    number, purpose and request fingerprint is answered with it instead of asking the LLM."""

    purpose: str
    request_hash: str
    text: str
    prompt_tokens: int
    completion_tokens: int
    duration: float


@dataclass(slots=True)
class RunResult:
    """Everything a run produced.  `to_dict()` is the `planweave run --json` object."""

    run_id: str
    question: str
    mode: Literal["compiled", "react", "native"]
    status: Literal["finished", "failed", "cancelled", "awaiting_approval"]
    answer: str | None
    tasks: list[TaskRecord]
    llm: LLMUsage
    wall_s: float
    replans: int = 0
    error: RunError | None = None
    cache: dict[str, Any] | None = None
    # The tasks waiting for approval ({id, tool, call, args, deps, side_effects}) when the run
    # paused for it (status "awaiting_approval").
    waiting: list[dict[str, Any]] = field(default_factory=list)
    # A typed answer's value (`output_type`: an instance of it; `output_schema`: the JSON value);
    # `answer` is then its JSON text.  None: the answer is in words.
    output: Any = None
    events: list[Event] = field(default_factory=list, repr=False)

    @property
    def partial(self) -> str | None:
        """For a run without an answer: what it found before it stopped, as text (no LLM)."""
        return None if self.answer is not None else partial_text(self.tasks)

    @property
    def results(self) -> dict[int, Any]:
        """Every finished task's result, by task id."""
        return {r.task.id: r.result for r in self.tasks if r.status == "done"}

    def timings(self) -> dict[str, float]:
        """Seconds spent planning, executing (at least one tool running) and joining."""
        return timings(
            ((e.purpose, e.duration) for e in self.events if isinstance(e, LLMCallFinished)),
            ((r.start, r.end) for r in self.tasks),
        )

    def to_dict(self) -> dict[str, Any]:
        """The `planweave run --json` object (`planweave runs show --json` adds to it)."""
        return run_dict(
            id=self.run_id,
            question=self.question,
            answer=self.answer,
            mode=self.mode,
            status=self.status,
            tasks=[r.to_dict() for r in self.tasks],
            llm=self.llm.to_dict(),
            wall_s=self.wall_s,
            replans=self.replans,
            timings=self.timings(),
            error=None if self.error is None else self.error.report(),
            partial=self.partial,
            cache=self.cache,
            output=self.output,
        )
