"""Run context for tools (issue 31 item 4): a parameter typed `RunContext` is filled in at each
call with the run's id, thread, user and the runtime's deps; the plan never writes it, and no
schema, prompt, grammar or journal row shows it."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from planweave import (
    PlanInvalid,
    RunContext,
    Runtime,
    Script,
    ScriptedLLM,
    ToolRegistry,
    UserError,
    tool,
)
from planweave.grammar import plan_grammar


@dataclass
class Shop:
    """A user's own handle, as a database connection would be."""

    orders: dict[str, list[str]]
    asked: list[tuple[str | None, str]] = field(default_factory=list)


@tool
def orders(customer: str, ctx: RunContext[Shop]) -> list[str]:
    """The orders of a customer.

    Args:
        customer: the customer's name
    """
    ctx.deps.asked.append((ctx.user, customer))
    return ctx.deps.orders[customer]


@tool
async def whoami(ctx: RunContext[Shop], suffix: str = "") -> str:
    """Who asks, and in which run and thread."""
    return f"{ctx.user} {ctx.run_id} {ctx.thread} {ctx.task_id}{suffix}"


PLAN = '1. orders("Ada")\n2. whoami()\n3. join()\n<END_OF_PLAN>'
FINISH = "Action: Finish(Ada ordered a lamp.)"


def test_the_plan_never_sees_the_context() -> None:
    registry = ToolRegistry([orders, whoami])
    assert [p.name for p in orders.params] == ["customer"]
    assert "ctx" not in json.dumps(orders.json_schema())
    assert "ctx" not in orders.render()
    assert "ctx" not in whoami.signature_text()
    assert "ctx" not in plan_grammar(registry)


def test_each_call_gets_the_run_s_context(tmp_path: Path) -> None:
    shop = Shop({"Ada": ["lamp"]})
    script = Script.by_purpose(planner=[PLAN], joiner=[FINISH])
    runtime = Runtime(
        [orders, whoami], ScriptedLLM(script), journal=tmp_path / "runs.db", deps=shop
    )
    result = runtime.run("What did Ada order?", user="alice", thread="support-7")
    assert result.results[1] == ["lamp"]
    assert shop.asked == [("alice", "Ada")]
    assert result.results[2] == f"alice {result.run_id} support-7 2"
    # The journal records the planned arguments only.
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        rows = conn.execute("SELECT args, arguments FROM tasks WHERE run_id = ?", (result.run_id,))
        stored = [json.loads(a) for row in rows for a in row if a is not None]
    assert stored
    assert not any("ctx" in s for s in stored)


def test_a_plan_that_writes_the_context_is_refused() -> None:
    plan = '1. orders("Ada", ctx="me")\n2. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[plan] * 3, joiner=[FINISH])
    shop = Shop({"Ada": []})
    runtime = Runtime([orders], ScriptedLLM(script), deps=shop, max_repairs=0)
    result = runtime.run("What did Ada order?")
    assert result.tasks == []  # the line never ran
    assert shop.asked == []
    (invalid,) = [e for e in result.events if isinstance(e, PlanInvalid)]
    assert "unexpected keyword argument 'ctx'" in invalid.error["message"]


def test_a_context_tool_runs_in_the_runtime_s_process() -> None:
    def shipped(ctx: RunContext[None]) -> int:
        return 1

    with pytest.raises(UserError, match="runs in the runtime's process"):
        tool(executor="process")(shipped)
    with pytest.raises(UserError, match="not two"):

        @tool
        def twice(a: RunContext[None], b: RunContext[None]) -> int:
            return 1

    # A run on the process pool keeps such a tool on its own threads: its deps stay here.
    shop = Shop({"Ada": ["lamp"]})
    script = Script.by_purpose(planner=[PLAN], joiner=[FINISH])
    runtime = Runtime([orders, whoami], ScriptedLLM(script), deps=shop, executor="process")
    try:
        assert runtime.run("What did Ada order?").results[1] == ["lamp"]
    finally:
        runtime.close()


def test_an_optional_context_is_a_context_and_a_resume_keeps_the_run_s_own(
    tmp_path: Path,
) -> None:
    seen: list[tuple[str | None, str | None]] = []

    @tool
    def refund(order: str, ctx: RunContext[None] | None = None) -> str:
        """Refund an order."""
        assert ctx is not None
        seen.append((ctx.user, ctx.thread))
        return "refunded"

    assert "ctx" not in refund.signature_text()
    script = Script.by_purpose(
        planner=['1. refund("A1")\n2. join()\n<END_OF_PLAN>'], joiner=[FINISH]
    )
    journal = tmp_path / "runs.db"
    paused = Runtime([refund], ScriptedLLM(script), journal=journal).run(
        "Refund A1", approve="plan"
    )
    # Approved by a runtime whose own settings name a user and a thread: the run had neither,
    # and keeps having neither.
    from planweave import RunSettings

    admin = RunSettings(user="admin", thread="admin-ops")
    Runtime([refund], ScriptedLLM(script), admin, journal=journal).approve(paused.run_id)
    assert seen == [(None, None)]
