"""The error tree: fields survive pickling, messages name what went wrong."""

from __future__ import annotations

import pickle

import pytest

import planweave
from planweave import (
    BudgetExceeded,
    DecisionNeeded,
    LLMRateLimitError,
    PlanweaveError,
    ToolCrashed,
    UnknownToolError,
)
from planweave.errors import error_from_dict


def all_error_classes() -> list[type[PlanweaveError]]:
    found = []
    for name in planweave.__all__:
        obj = getattr(planweave, name)
        if (
            isinstance(obj, type)
            and issubclass(obj, PlanweaveError)
            and obj is not planweave.RunFailed
        ):
            found.append(obj)
    return found


@pytest.mark.parametrize("cls", all_error_classes(), ids=lambda c: c.__name__)
def test_every_error_pickles_with_its_fields(cls: type[PlanweaveError]) -> None:
    kwargs: dict[str, object] = {}
    if issubclass(cls, BudgetExceeded):
        kwargs["limit"] = "replans"
    if issubclass(cls, DecisionNeeded):
        kwargs["tasks"] = [{"id": 4, "tool": "send", "call": "send()"}]
    err = cls("something broke", **kwargs)  # type: ignore[arg-type]
    err.__dict__["run_id"] = "r1"
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls
    assert back.message == "something broke"
    assert back.__dict__ == err.__dict__
    # The journal stores errors as to_dict() and reads them back with error_from_dict().
    stored = error_from_dict(err.to_dict())
    assert type(stored) is cls
    assert stored.to_dict() == err.to_dict()


def test_task_error_names_task_tool_arguments_and_cause() -> None:
    err = ToolCrashed(
        "ValueError: boom", task_id=3, tool="lookup", arguments='name="x"', cause="ValueError"
    )
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == 'task 3 lookup(name="x"): ValueError: boom'
    assert back.to_dict() == {
        "type": "ToolCrashed",
        "message": "ValueError: boom",
        "task_id": 3,
        "tool": "lookup",
        "arguments": 'name="x"',
        "cause": "ValueError",
    }


def test_plan_error_names_the_line() -> None:
    err = UnknownToolError("unknown tool 'gdp'", line='2. gdp("France")', lineno=2, task_id=2)
    assert str(pickle.loads(pickle.dumps(err))) == (
        "line 2: unknown tool 'gdp' (in '2. gdp(\"France\")')"
    )


def test_rate_limit_keeps_retry_after() -> None:
    err = pickle.loads(pickle.dumps(LLMRateLimitError("slow down", retry_after=2.5)))
    assert err.retry_after == 2.5


def test_a_pause_is_not_a_run_failure() -> None:
    # A handler of run failures never takes a run waiting for approval for one.
    paused = planweave.AwaitingApproval("2 task(s) wait", tasks=[{"id": 1}], run_id="r1")
    assert isinstance(paused, planweave.RunPaused)
    assert not isinstance(paused, planweave.RunError)
    back = pickle.loads(pickle.dumps(paused))
    assert (back.tasks, back.run_id) == ([{"id": 1}], "r1")
