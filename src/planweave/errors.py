"""planweave's one error tree.

    PlanweaveError
    ├── UserError ................ a mistake by the developer using planweave (bad tool, config)
    │   └── ResumeError .......... a run cannot be resumed (unknown, still running, tools changed)
    │       ├── RunNotFound ...... no run by that id (or prefix) in the journal
    │       ├── DecisionNeeded ... a side-effecting task was in flight: re-run it or mark it failed
    │       └── JournalUnverified  recorded steps whose seal does not check (edited, or unsigned)
    │   └── InvalidApproval ...... an approval whose edits do not make a valid plan
    ├── Overloaded ............... as many runs as may be held are running or queued (retry_after)
    ├── ToolSignal ............... raised *by a tool* to steer the runtime
    │   ├── RetryTool ............ "try me again" (transient)
    │   └── ToolFailed ........... "I failed for good" (permanent)
    ├── RunPaused ................ a run stops to wait, on purpose: never a failure
    │   └── AwaitingApproval ..... tasks wait for a person's approval
    └── RunError ................. something went wrong during a run; carries run_id / task_id
        ├── PlanError ............ the planner wrote something that cannot run (names the line)
        │   ├── PlanSyntaxError
        │   ├── UnknownToolError
        │   ├── ArgumentError
        │   ├── InvalidReferenceError
        │   ├── DuplicateTaskError
        │   └── MissingJoinError
        ├── TaskError ............ one task failed (names task, tool, arguments and cause)
        │   ├── ToolTimeout
        │   ├── ToolCrashed ...... an unexpected exception from the tool
        │   ├── ToolTransient .... RetryTool, or a connection/timeout error inside the tool
        │   ├── ToolRejected ..... ToolFailed: calling again with these arguments will not help
        │   ├── ToolOutputError .. the result is not of the tool's declared return type
        │   ├── ToolOutputTooLarge
        │   ├── ToolArgumentError  resolved arguments that do not fit the tool's schema
        │   │   └── ConditionError  a task's condition cannot be evaluated on its inputs
        │   ├── ProjectionError .. `$2.population` did not resolve
        │   ├── ResultNotStorable  the journal cannot store the tool's result faithfully
        │   └── DependencyFailed . an upstream task failed, so this one was skipped
        │       └── BranchNotTaken  skipped on purpose: its condition (or its input's) was false
        ├── LLMError ............. the LLM backend failed (translated once, at the backend boundary)
        │   ├── LLMConnectionError
        │   ├── LLMRateLimitError  (retry_after)
        │   ├── LLMContextOverflow
        │   └── LLMStreamError ... the stream broke off mid-response
        │       ├── LLMTimeout ... no first token, next chunk or end within its deadline
        │       └── LLMMalformedStream  an event that is not JSON, or JSON of the wrong shape
        ├── JoinerError
        ├── OutputInvalid ........ the answer could not be written as the output schema's value
        ├── JournalError ......... the journal cannot be opened, read or written (corrupt, full)
        ├── PlanDiverged ......... on resume, the plan wrote another call under a recorded step
        ├── RunCancelled ......... stopped on request (`planweave runs cancel`)
        ├── PlanRejected ......... a person rejected the plan
        ├── BudgetExceeded
        └── RunFailed ............ a run ended without an answer (`result`: what it found)

Model-caused failures (plan errors, tool errors) become observations for the planner and joiner;
programming errors in planweave itself propagate unchanged.  Every error pickles with its fields.
Known secrets (API keys, tokens: see `redaction`) are masked in every message, field and text an
error gives, so nothing stored or printed from an error reveals them.
"""

from __future__ import annotations

from typing import Any

from .redaction import redact


def _rebuild(cls: type[PlanweaveError], message: str, state: dict[str, Any]) -> PlanweaveError:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(state)
    return err


class PlanweaveError(Exception):
    """Base class of every error planweave raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))

    def report(self) -> dict[str, Any]:
        """`to_dict()` plus `text`, the full rendered message: what events and `--json` carry."""
        return self.to_dict() | {"text": redact(str(self))}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description, the form observations, events and `--json` output use."""
        data: dict[str, Any] = {"type": type(self).__name__, "message": self.message}
        for key, value in self.__dict__.items():
            if value is None or key.startswith("_"):
                continue
            data[key] = _scrubbed(
                value if isinstance(value, str | int | float | bool | list) else repr(value)
            )
        return data


def _scrubbed(value: Any) -> Any:
    """`value` (a field of an error) with known secrets masked in all its text."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    if isinstance(value, dict):
        return {k: _scrubbed(v) for k, v in value.items()}
    return value


class UserError(PlanweaveError):
    """The developer using planweave made a mistake: a tool that cannot be described, bad config."""


class Overloaded(PlanweaveError):
    """No room for another run: `Admission` holds as many as it may, running or queued.  Not a
    mistake and not a failure of a run (none was started); `retry_after` is about when, in
    seconds, a place should be free (a server answers 503 with `Retry-After`)."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ToolSignal(PlanweaveError):
    """Raised by a tool to tell the runtime how to treat its failure."""


class RetryTool(ToolSignal):
    """A transient failure: the call may succeed if made again."""


class ToolFailed(ToolSignal):
    """A permanent failure: calling again with the same arguments will not help."""


class RunError(PlanweaveError):
    """A failure during a run."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class PlanError(RunError):
    """The plan cannot run as written.  `line` is the offending plan line, `lineno` its 1-based
    number in the planner's output (counting across one LLM response)."""

    def __init__(
        self,
        message: str,
        *,
        line: str | None = None,
        lineno: int | None = None,
        task_id: int | None = None,
        run_id: str | None = None,
    ) -> None:
        super().__init__(message, run_id=run_id)
        self.line = line
        self.lineno = lineno
        self.task_id = task_id

    def __str__(self) -> str:
        where = f"line {self.lineno}" if self.lineno is not None else "plan"
        if self.line is not None:
            return redact(f"{where}: {self.message} (in {self.line.strip()!r})")
        return f"{where}: {self.message}"


class PlanSyntaxError(PlanError):
    """A plan line that does not parse."""


class UnknownToolError(PlanError):
    """A plan line names a tool that is not registered."""


class ArgumentError(PlanError):
    """Arguments that do not match the tool's signature or schema."""


class InvalidReferenceError(PlanError):
    """A `$N` that names no earlier task."""


class NoSuchField(InvalidReferenceError):
    """A `$N.field` whose task's tool declares a result without that field: `ref` is the
    reference, `tool` the tool, `fields` the fields its result has (none: a number, a text)."""

    def __init__(
        self, message: str, *, ref: Any, tool: str, fields: tuple[str, ...], **where: Any
    ) -> None:
        super().__init__(message, **where)
        self.ref, self.tool, self.fields = ref, tool, fields


class DuplicateTaskError(PlanError):
    """Two tasks with the same id, or ids that do not count up."""


class MissingJoinError(PlanError):
    """The plan ended without `join()`."""


class TaskError(RunError):
    """One task failed.  Names the task, the tool, its rendered arguments and the cause; once
    the scheduler has it, also the plan line, the plan version (`plan_round`) and the upstream
    tasks the call depended on, so the cause in the plan is visible, not only the symptom."""

    def __init__(
        self,
        message: str,
        *,
        task_id: int | None = None,
        tool: str | None = None,
        arguments: str | None = None,
        cause: str | None = None,
        run_id: str | None = None,
        line: str | None = None,
        plan_round: int | None = None,
        upstream: list[int] | None = None,
    ) -> None:
        super().__init__(message, run_id=run_id)
        self.task_id = task_id
        self.tool = tool
        self.arguments = arguments
        self.cause = cause
        self.line = line
        self.plan_round = plan_round
        self.upstream = upstream

    def __str__(self) -> str:
        if self.tool is None:
            return self.message
        call = f"{self.tool}({self.arguments or ''})"
        prefix = f"task {self.task_id} {call}" if self.task_id is not None else call
        return redact(f"{prefix}: {self.message}")


class ToolTimeout(TaskError):
    """The tool did not return within its timeout."""


class ToolCrashed(TaskError):
    """The tool raised an exception."""


class ToolTransient(TaskError):
    """A failure that may pass if the call is made again (the tool raised RetryTool, or a
    connection or timeout error)."""


class ToolRejected(TaskError):
    """The tool said it failed for good (ToolFailed)."""


class ToolOutputError(TaskError):
    """The tool returned a value that is not of its declared return type."""


class ToolOutputTooLarge(TaskError):
    """The tool returned more than the run accepts from one call."""


class ToolArgumentError(TaskError):
    """The resolved arguments do not fit the tool's schema."""


class ProjectionError(TaskError):
    """A projection such as `$2.population` or `$2[0]` did not resolve on the upstream result."""


class DependencyFailed(TaskError):
    """An upstream task failed, so this task was not run."""


class ConditionError(ToolArgumentError):
    """A task's condition (`... if $2.disk_pct > 90`) could not be evaluated on its inputs (a
    list compared with a number, a projection that does not resolve, a value that is not True
    or False): the task fails."""


class BranchNotTaken(DependencyFailed):
    """The task's condition was false, or it reads the result of a task whose condition was:
    it was skipped on purpose, which is no failure (`branches`)."""


class LLMError(RunError):
    """The LLM backend failed."""


class LLMConnectionError(LLMError):
    """The endpoint could not be reached."""


class LLMRateLimitError(LLMError):
    """The endpoint answered 429; `retry_after` is in seconds when the server said."""

    def __init__(
        self, message: str, *, retry_after: float | None = None, run_id: str | None = None
    ) -> None:
        super().__init__(message, run_id=run_id)
        self.retry_after = retry_after


class LLMContextOverflow(LLMError):
    """The prompt does not fit the model's context window."""


class LLMStreamError(LLMError):
    """The response stream broke off before it was complete."""


class LLMTimeout(LLMStreamError):
    """The endpoint was too slow, so planweave cut the stream: `limit` says which deadline passed
    (`first_token`, `between_chunks` or `call`), `seconds` how long it was."""

    def __init__(
        self,
        message: str,
        *,
        limit: str = "call",
        seconds: float | None = None,
        run_id: str | None = None,
    ) -> None:
        super().__init__(message, run_id=run_id)
        self.limit = limit
        self.seconds = seconds


class LLMMalformedStream(LLMStreamError):
    """The endpoint sent something that is not a chat completion stream: an event that is not
    JSON, or JSON of the wrong shape."""


class ResultNotStorable(TaskError):
    """The tool ran, but its result has no faithful stored form (journaled runs only)."""


class JournalError(RunError):
    """The journal cannot be opened, read or written.  Nothing already recorded is damaged."""

    def __init__(self, message: str, *, path: str | None = None, run_id: str | None = None):
        super().__init__(message, run_id=run_id)
        self.path = path


class PlanDiverged(RunError):
    """On resume, the plan wrote a different call under the id of a task that already ran in
    an earlier session.  The recorded step is kept as it is and the run stops: `task_id` names
    the step, `recorded` its call, `call` the new one."""

    def __init__(
        self,
        message: str,
        *,
        task_id: int | None = None,
        recorded: str | None = None,
        call: str | None = None,
        run_id: str | None = None,
    ) -> None:
        super().__init__(message, run_id=run_id)
        self.task_id = task_id
        self.recorded = recorded
        self.call = call


class RunCancelled(RunError):
    """The run was stopped on request."""


class RunPaused(PlanweaveError):
    """A run stops to wait, on purpose.  Raised only to unwind the run's task groups (with
    structured concurrency a raise is how every task of the run is stopped at once); the
    session catches it and ends the run with a status (`RunResult.status`), not an error.
    Outside the run-failure branch so that no handler of `RunError` mistakes it for one."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class AwaitingApproval(RunPaused):
    """The run paused before `tasks` (each {id, tool, call, args, deps, side_effects}) could
    run: they wait for a person's approval (`Runtime.approve`, `POST /runs/{id}/approve`)."""

    def __init__(
        self, message: str, *, tasks: list[dict[str, Any]] | None = None, run_id: str | None = None
    ) -> None:
        super().__init__(message, run_id=run_id)
        self.tasks = tasks or []


class PlanRejected(RunError):
    """A person rejected the run's plan; the run ended without running it."""


class InvalidApproval(UserError):
    """The edits of an approval do not make a valid plan (a changed argument that does not fit
    its tool, a dropped task that a kept one uses)."""


class ResumeError(UserError):
    """This run cannot be resumed as asked; the message says why."""


class RunNotFound(ResumeError):
    """No run in the journal has that id (or starts with that prefix).  `run_id`: the id asked
    for, so a server can say so without the message's journal path."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class DecisionNeeded(ResumeError):
    """Tasks with side effects were in flight when the run stopped: nobody knows whether they
    took effect.  `tasks` lists them (id, tool, call); resume again with a decision for each."""

    def __init__(self, message: str, *, tasks: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.tasks = tasks


class JournalUnverified(ResumeError):
    """Records of the run do not carry a valid seal of this user's journal key (`store.seal`):
    the file was edited, written before journals were sealed, or sealed with another key.
    Nothing was replayed.  `records` names them (`task 3`, `LLM call 1`, ...)."""

    def __init__(
        self, message: str, *, records: list[str] | None = None, run_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.records = list(records or ())
        self.run_id = run_id


class JoinerError(RunError):
    """The joiner's output could not be understood."""


class OutputInvalid(RunError):
    """The answer could not be written as a value of the run's output schema (`output_type`,
    `--output-schema`), even after one repair: `text` is the last JSON tried, `answer` the
    run's answer in words."""

    def __init__(
        self, message: str, *, text: str = "", answer: str = "", run_id: str | None = None
    ) -> None:
        super().__init__(message, run_id=run_id)
        self.text = text
        self.answer = answer


class BudgetExceeded(RunError):
    """A budget (LLM calls, replans, repairs, wall time) ran out; `limit` says which."""

    def __init__(self, message: str, *, limit: str, run_id: str | None = None) -> None:
        super().__init__(message, run_id=run_id)
        self.limit = limit


class RunFailed(RunError):
    """A run ended without an answer.  `result` (a `RunResult`) holds every task that did
    finish; `cause` is the error that ended it."""

    # `result` is typed loosely: the records (RunResult) are built on this module.
    def __init__(self, message: str, *, result: Any, cause: RunError) -> None:
        super().__init__(message, run_id=result.run_id)
        self.result = result
        self.cause = cause


def error_from_dict(data: dict[str, Any]) -> PlanweaveError:
    """Rebuild an error from its `to_dict()` form (as the journal stores it).  An unknown type
    name (from a newer planweave) comes back as a plain RunError with the same message."""
    classes: dict[str, type[PlanweaveError]] = {}
    pending: list[type[PlanweaveError]] = [PlanweaveError]
    while pending:
        cls = pending.pop()
        classes[cls.__name__] = cls
        pending.extend(cls.__subclasses__())
    cls = classes.get(str(data.get("type")), RunError)
    message = str(data.get("message", ""))
    try:
        err = cls(message)  # sets every field to its default
    except TypeError:
        err = _rebuild(cls, message, {})
    err.__dict__.update({k: v for k, v in data.items() if k not in ("type", "message", "text")})
    return err
