"""A run's lifecycle around its answer: cancellation through the journal, what a cancelled LLM
call leaves for resume, and the blocking API inside async code."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ledger_tools import FINISH, PLAN, TOOLS
from planweave import Reply, Runtime, Script, ScriptedLLM, UserError
from planweave.store import Journal


def test_a_planner_call_cut_short_by_cancel_is_asked_again_on_resume(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    slow = Reply(PLAN, chunk_size=2, delay=0.5)  # the whole plan would take many seconds
    runtime = Runtime(TOOLS, ScriptedLLM(Script.by_purpose(planner=[slow])), journal=journal)

    async def cancel_while_planning() -> str:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: runtime.arun("q", check=False))
            with anyio.fail_after(10):
                while not journal.runs():  # noqa: ASYNC110 (the run's row appears)
                    await anyio.sleep(0.01)
            run_id = str(journal.runs()[0]["id"])
            Journal(tmp_path / "runs.db").request_cancel(run_id)  # as another process would
        return run_id

    run_id = anyio.run(cancel_while_planning)
    shown = journal.show(run_id)
    assert shown["status"] == "cancelled"
    assert [c["status"] for c in shown["llm_calls"]] == ["failed"]
    assert shown["llm_calls"][0]["error"]["type"] == "RunCancelled"

    again = ScriptedLLM(Script.by_purpose(planner=[PLAN], joiner=[FINISH]))
    result = Runtime(TOOLS, again, journal=journal).resume(run_id)
    assert result.status == "finished"
    assert again.script.purposes == ["planner", "joiner"]  # asked afresh, not repaired


def test_the_blocking_api_inside_async_code_says_what_to_use() -> None:
    runtime = Runtime(TOOLS, ScriptedLLM(Script.by_purpose(planner=[PLAN], joiner=[FINISH])))

    async def main() -> None:
        runtime.run("q")

    with pytest.raises(UserError, match=r"await runtime\.arun"):
        anyio.run(main)
