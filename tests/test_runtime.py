"""End to end through the real OpenAI client against a scripted SSE server on loopback."""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import pytest

from demo_tools import AREA, GAUGE, POPULATION, TOOLS, area, divide, population
from planweave import (
    BudgetExceeded,
    LLMConnectionError,
    LLMRateLimitError,
    LLMStreamError,
    OpenAICompatible,
    Recovery,
    Reply,
    RunFailed,
    RunResult,
    RunSettings,
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
    TaskStatus,
    Tool,
)
from planweave.events import (
    Event,
    LLMCallFinished,
    PlanInvalid,
    ReplanEvent,
    RunFinished,
    TaskCancelled,
    TaskFinished,
    TaskStarted,
)

PLAN = (
    "Thought: The two lookups are independent.\n"
    '1. population("Netherlands")\n'
    '2. area("Netherlands")\n'
    "3. divide($1, $2)\n"
    "4. join()\n"
    "<END_OF_PLAN>"
)
FINISH = "Thought: Done.\nAction: Finish(About 428 people per km² (17,900,000 / 41,850).)"


def runtime_for(server: ScriptedServer, **kwargs: object) -> Runtime:
    llm = OpenAICompatible(base_url=server.base_url, model="scripted", max_retries=0)
    return Runtime(TOOLS, llm, **kwargs)  # type: ignore[arg-type]


def test_plan_runs_and_answers_over_http(server_factory: type[ScriptedServer]) -> None:
    script = Script.by_purpose(planner=[PLAN], joiner=[FINISH])
    server = server_factory(script).start()
    result = runtime_for(server).run("People per km² in the Netherlands?")
    assert result.status == "finished"
    assert result.answer == "About 428 people per km² (17,900,000 / 41,850)."
    assert result.results[3] == pytest.approx(POPULATION["Netherlands"] / AREA["Netherlands"])
    assert result.llm.calls == 2
    assert result.llm.prompt_tokens > 0
    assert result.llm.completion_tokens > 0
    joiner_prompt = server.requests[1][-1].content
    assert "Observation: 17900000" in joiner_prompt  # the joiner read the real results
    data = result.to_dict()
    assert {"answer", "mode", "tasks", "llm", "wall_s", "id"} <= set(data)
    assert data["tasks"][2]["dependencies"] == [1, 2]
    assert data["tasks"][2]["args"] == {"a": "$1", "b": "$2"}
    assert data["tasks"][0]["status"] == "done"
    assert data["tasks"][0]["start"] < data["tasks"][0]["end"]


def test_first_task_starts_while_the_plan_is_still_streaming(
    server_factory: type[ScriptedServer],
) -> None:
    plan = Reply(PLAN, chunk_size=6, delay=0.04)  # about 1 s of streaming
    server = server_factory(Script.by_purpose(planner=[plan], joiner=[FINISH])).start()
    result = runtime_for(server).run("q")
    planner_done = next(
        e.t for e in result.events if isinstance(e, LLMCallFinished) and e.purpose == "planner"
    )
    first_start = min(e.t for e in result.events if isinstance(e, TaskStarted))
    assert first_start < planner_done
    # Task 1 even finished before the planner had written its last line.
    assert result.tasks[0].end is not None
    assert result.tasks[0].end < planner_done


def test_without_streaming_dispatch_tasks_wait_for_the_whole_plan(
    server_factory: type[ScriptedServer],
) -> None:
    plan = Reply(PLAN, chunk_size=6, delay=0.02)
    server = server_factory(Script.by_purpose(planner=[plan], joiner=[FINISH])).start()
    result = runtime_for(server, streaming=False).run("q")
    planner_done = next(
        e.t for e in result.events if isinstance(e, LLMCallFinished) and e.purpose == "planner"
    )
    assert min(e.t for e in result.events if isinstance(e, TaskStarted)) >= planner_done
    assert result.answer is not None


def test_answer_with_parentheses_quotes_and_newlines_comes_through_whole() -> None:
    answer = (
        'Belgium (11.8 M) is smaller than "the Netherlands" (17.9 M).\nRatio: (17.9/11.8) ≈ 1.52'
    )
    llm = ScriptedLLM(
        Script.by_purpose(planner=[PLAN], joiner=[f"Thought: x\nAction: Finish({answer})"])
    )
    assert Runtime(TOOLS, llm).run("q").answer == answer


def test_replan_carries_observations_and_ids_keep_counting(
    server_factory: type[ScriptedServer],
) -> None:
    first = '1. population("Belgium")\n2. join()\n<END_OF_PLAN>'
    second = '3. area("Belgium")\n4. divide($1, $3)\n5. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(
        planner=[first, second],
        joiner=["Thought: no area yet\nAction: Replan(need the area of Belgium)", FINISH],
    )
    server = server_factory(script).start()
    result = runtime_for(server).run("Density of Belgium?")
    assert result.replans == 1
    assert [r.task.id for r in result.tasks] == [1, 3, 4]
    assert [r.plan_round for r in result.tasks] == [0, 1, 1]
    assert result.results[4] == pytest.approx(POPULATION["Belgium"] / AREA["Belgium"])
    replan_prompt = server.requests[2][-1].content
    assert "Observation: 11800000" in replan_prompt
    assert "need the area of Belgium" in replan_prompt
    assert "Start at id 3" in replan_prompt
    assert any(isinstance(e, ReplanEvent) for e in result.events)
    assert GAUGE.calls == 2  # population ran once, area once: nothing re-ran on replan


def test_a_replan_reply_carries_the_next_plan_and_its_tasks_start_while_it_streams(
    server_factory: type[ScriptedServer],
) -> None:
    first = '1. population("Belgium")\n2. join()\n<END_OF_PLAN>'
    combined = (
        "Thought: no area yet\nAction: Replan(need the area of Belgium)\n"
        '3. area("Belgium")\n'
        f"Thought: {'then the density ' * 8}\n"
        "4. divide($1, $3)\n5. join()\n<END_OF_PLAN>"
    )
    script = Script.by_purpose(
        planner=[first], joiner=[Reply(combined, chunk_size=8, delay=0.02), FINISH]
    )
    server = server_factory(script).start()
    result = runtime_for(server).run("Density of Belgium?")
    assert script.purposes == ["planner", "joiner", "joiner"]  # no planner call to replan
    assert result.replans == 1
    assert [r.task.id for r in result.tasks] == [1, 3, 4]
    assert [r.plan_round for r in result.tasks] == [0, 1, 1]
    assert result.results[4] == pytest.approx(POPULATION["Belgium"] / AREA["Belgium"])
    joiner_prompt = script.requests[1][0].content
    assert "write the new plan in the same reply" in joiner_prompt
    assert "ids counting up from 3" in joiner_prompt
    assert "area(country: str" in joiner_prompt
    # The area lookup started while the joiner's reply was still streaming (its thought line
    # alone takes about 0.3 s to stream), after the replan was announced.
    started = next(e for e in result.events if isinstance(e, TaskStarted) and e.task_id == 3)
    joined = [e for e in result.events if isinstance(e, LLMCallFinished)][1]
    replan = next(e for e in result.events if isinstance(e, ReplanEvent))
    assert replan.reason == "need the area of Belgium"
    assert replan.t <= started.t < joined.t - 0.1
    assert GAUGE.calls == 2


def test_an_invalid_plan_in_a_replan_reply_is_repaired_by_the_planner(
    server_factory: type[ScriptedServer],
) -> None:
    first = '1. population("Belgium")\n2. join()\n<END_OF_PLAN>'
    combined = 'Thought: x\nAction: Replan(need the area)\n3. gdp("Belgium")\n4. join()\n'
    fixed = '3. area("Belgium")\n4. divide($1, $3)\n5. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[first], joiner=[combined, FINISH], repair=[fixed])
    server = server_factory(script).start()
    result = runtime_for(server).run("Density of Belgium?")
    assert script.purposes == ["planner", "joiner", "repair", "joiner"]
    invalid = [e for e in result.events if isinstance(e, PlanInvalid)]
    assert [e.error["type"] for e in invalid] == ["UnknownToolError"]
    context, fix = (m.content for m in server.requests[2][-2:])
    assert "Observation: 11800000" in context
    assert "need the area" in context
    assert "unknown tool 'gdp'" in fix
    assert "from id 3" in fix
    assert [r.task.id for r in result.tasks] == [1, 3, 4]
    assert result.answer is not None


@pytest.mark.parametrize("join_replan", [True, False])
def test_a_replan_may_not_repeat_a_call_that_already_failed(join_replan: bool) -> None:
    first = '1. population("Belgia")\n2. population("France")\n3. join()\n<END_OF_PLAN>'
    # The same failing call again, its argument now by keyword: the same arguments.
    again = '4. population(country="Belgia")\n5. join()\n<END_OF_PLAN>'
    fixed = '4. population("Belgium")\n5. divide($2, $4)\n6. join()\n<END_OF_PLAN>'
    # Task 2 failed for good: the planner is asked again with its error (no joiner call).
    script = Script.by_purpose(planner=[first, again], joiner=[FINISH], repair=[fixed])
    result = Runtime(TOOLS, ScriptedLLM(script), join_replan=join_replan).run("q")
    assert script.purposes == ["planner", "planner", "repair", "joiner"]
    assert "no country named 'Belgia'" in script.requests[1][-1].content.split("Why")[1]
    assert script.purposes[-2:] == ["repair", "joiner"]
    invalid = [e for e in result.events if isinstance(e, PlanInvalid)]
    assert [e.error["type"] for e in invalid] == ["ArgumentError"]
    assert (
        "already failed with these arguments (no country named 'Belgia')"
        in (invalid[0].error["message"])
    )
    assert "already failed" in script.requests[-2][-1].content  # the repair prompt says why
    assert [r.task.id for r in result.tasks] == [1, 2, 4, 5]
    assert result.results[5] == pytest.approx(POPULATION["France"] / POPULATION["Belgium"])


@pytest.mark.parametrize("join_replan", [True, False])
def test_a_replan_may_not_read_a_task_that_gave_no_result(join_replan: bool) -> None:
    # Task 2 fails and task 3, reading it, is skipped; the 1.5B model then wrote plans over
    # `$2` and `$3` round after round, each skipped at once.
    first = (
        '1. population("France")\n2. population("Belgia")\n3. divide($1, $2)\n'
        "4. join()\n<END_OF_PLAN>"
    )
    again = "5. divide($1, $3)\n6. join()\n<END_OF_PLAN>"
    fixed = '5. population("Belgium")\n6. divide($1, $5)\n7. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[first, again], joiner=[FINISH], repair=[fixed])
    result = Runtime(TOOLS, ScriptedLLM(script), join_replan=join_replan).run("q")
    invalid = [e for e in result.events if isinstance(e, PlanInvalid)]
    assert [e.error["type"] for e in invalid] == ["InvalidReferenceError"]
    message = invalid[0].error["message"]
    assert message.startswith("$3 has no result (task 3: not run because task 2")
    assert "has no result" in script.requests[-2][-1].content  # the repair prompt says why
    assert result.results[6] == pytest.approx(POPULATION["France"] / POPULATION["Belgium"])


def test_a_pure_tool_called_twice_the_same_way_is_repaired() -> None:
    # The 1.5B model copied `divide($1, $2)` where it meant `divide($3, $4)`.
    pure_divide = Tool.from_function(divide.fn, pure=True)
    tools = [population, area, pure_divide]
    first = (
        '1. population("France")\n2. area("France")\n3. divide($1, $2)\n'
        '4. population("Belgium")\n5. area("Belgium")\n6. divide($1, $2)\n7. join()\n'
    )
    fixed = "6. divide($4, $5)\n7. join()\n<END_OF_PLAN>"
    script = Script.by_purpose(planner=[first], joiner=[FINISH], repair=[fixed])
    result = Runtime(tools, ScriptedLLM(script)).run("q")
    invalid = [e for e in result.events if isinstance(e, PlanInvalid)]
    assert [e.error["message"] for e in invalid] == [
        "divide($1, $2) is the same call as task 3: use $3 for its result, or change the arguments"
    ]
    assert result.results[6] == pytest.approx(POPULATION["Belgium"] / AREA["Belgium"])
    # Without `pure` the same plan runs as written: a tool may give another result each time.
    plain = Script.by_purpose(planner=[first + "<END_OF_PLAN>"], joiner=[FINISH])
    ran = Runtime([population, area, divide], ScriptedLLM(plain)).run("q")
    assert ran.results[6] == ran.results[3]


def test_a_failed_call_reading_a_result_may_be_written_again() -> None:
    # Its arguments are known only once the result is: the same text may mean other values.
    first = '1. echo("Belgia")\n2. population($1)\n3. join()\n<END_OF_PLAN>'
    second = "4. population($1)\n5. join()\n<END_OF_PLAN>"
    script = Script.by_purpose(planner=[first, second], joiner=[FINISH])
    result = Runtime(TOOLS, ScriptedLLM(script), join_replan=False).run("q")
    # Task 4 failed exactly as task 2 did: planning again would only repeat it; the joiner answers.
    assert script.purposes == ["planner", "planner", "joiner"]
    assert not [e for e in result.events if isinstance(e, PlanInvalid)]
    assert [r.task.id for r in result.tasks] == [1, 2, 4]
    assert [r.status for r in result.tasks] == [TaskStatus.DONE] + [TaskStatus.FAILED] * 2


def test_join_replan_off_keeps_the_joiner_prompt_and_a_separate_planner_call() -> None:
    first = '1. population("Belgium")\n2. join()\n<END_OF_PLAN>'
    second = '3. area("Belgium")\n4. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(
        planner=[first, second], joiner=["Thought: x\nAction: Replan(more)", FINISH]
    )
    runtime = Runtime(TOOLS, ScriptedLLM(script), join_replan=False)
    assert runtime.settings.join_replan is False
    result = runtime.run("q")
    assert script.purposes == ["planner", "joiner", "planner", "joiner"]
    assert all("same reply" not in r[0].content for r in script.requests)
    assert [r.task.id for r in result.tasks] == [1, 3]


def test_replanning_stops_at_the_bound() -> None:
    plan = '1. population("France")\n2. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(
        planner=[plan, '3. population("Belgium")\n4. join()\n'],
        joiner=["Action: Replan(more)", "Action: Replan(still more)", "Replan(even more)"],
    )
    runtime = Runtime(TOOLS, ScriptedLLM(script), max_replans=1)
    with pytest.raises(RunFailed) as info:
        runtime.run("q")
    assert isinstance(info.value.cause, BudgetExceeded)
    assert info.value.cause.limit == "replans"
    result = info.value.result
    assert result.replans == 1
    assert result.results == {1: POPULATION["France"], 3: POPULATION["Belgium"]}
    joiner_requests = [m for m in script.requests if "Finish(" in m[0].content]
    assert "last round" in joiner_requests[-1][0].content
    assert "last round" not in joiner_requests[0][0].content
    # A Replan where the last round must answer is asked once more, told why.
    assert "no more plans can run" in joiner_requests[-1][-1].content
    assert "no more plans can run" not in joiner_requests[-2][-1].content


def test_invalid_plan_is_repaired_and_accepted_tasks_are_not_rerun(
    server_factory: type[ScriptedServer],
) -> None:
    bad = '1. population("France")\n2. gdp("France")\n3. join()\n'
    fixed = '2. area("France")\n3. divide($1, $2)\n4. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[bad], repair=[fixed], joiner=[FINISH])
    server = server_factory(script).start()
    result = runtime_for(server).run("q")
    invalid = [e for e in result.events if isinstance(e, PlanInvalid)]
    assert len(invalid) == 1
    assert invalid[0].error["type"] == "UnknownToolError"
    assert invalid[0].error["lineno"] == 2
    repair_prompt = server.requests[1][-1].content
    assert 'gdp("France")' in repair_prompt
    assert "unknown tool 'gdp'" in repair_prompt
    assert "from id 2" in repair_prompt
    assert [r.task.tool for r in result.tasks] == ["population", "area", "divide"]
    assert GAUGE.calls == 2  # population ran once despite the repair
    assert result.answer is not None


def test_repairs_are_bounded_and_the_joiner_is_told(server_factory: type[ScriptedServer]) -> None:
    no_join = '1. population("France")\n'
    script = Script.by_purpose(
        planner=[no_join],
        repair=["2. population(country=5)\n", "2. nope()\n"],
        joiner=["Action: Finish(France has 68 million people.)"],
    )
    server = server_factory(script).start()
    result = runtime_for(server, max_repairs=2).run("q")
    invalid = [e for e in result.events if isinstance(e, PlanInvalid)]
    assert [e.error["type"] for e in invalid] == [
        "MissingJoinError",
        "ArgumentError",
        "UnknownToolError",
    ]
    assert [e.will_repair for e in invalid] == [True, True, False]
    assert result.results == {1: POPULATION["France"]}
    assert "last plan was invalid" in server.requests[-1][-1].content
    assert result.answer == "France has 68 million people."


def _repaired(repairs: list[str]) -> tuple[Script, RunResult]:
    """A plan whose task 2 reads itself, repaired with `repairs` (up to 5 asked for)."""
    bad = '1. population("France")\n2. divide($1, $2)\n'
    script = Script.by_purpose(
        planner=[bad], repair=repairs, joiner=["Action: Finish(France has 68 million people.)"]
    )
    return script, Runtime(TOOLS, ScriptedLLM(script), max_repairs=5).run("q")


def test_a_repair_that_repeats_the_rejected_line_is_told_so_and_not_asked_a_third_time() -> None:
    # The 1.5B model rewrote `rank([...], [$1, $2])` in task 2 on every repair: asked the same
    # way, a greedy model answers the same way.
    script, result = _repaired(["2. divide($1, $2)\n"] * 3)
    invalid = [e for e in result.events if isinstance(e, PlanInvalid)]
    # The first repair asks plainly, the second says the line was rejected before; a third
    # request would repeat the second word for word, so it is not sent.
    assert script.purposes == ["planner", "repair", "repair", "joiner"]
    assert [e.will_repair for e in invalid] == [True, True, False]
    first, second = (r[-1].content for r in script.requests[1:3])
    assert "same line before" not in first
    assert "same line before" in second
    assert "not earlier than task 2" in second
    assert result.results == {1: POPULATION["France"]}


def test_a_repair_request_is_never_sent_twice_even_after_another_in_between() -> None:
    script, result = _repaired(["2. nope()\n", "2. divide($1, $2)\n", "2. nope()\n"])
    # The third request would repeat the first word for word (A, B, A): it is not sent.
    assert script.purposes == ["planner", "repair", "repair", "joiner"]
    invalid = [e for e in result.events if isinstance(e, PlanInvalid)]
    assert [e.will_repair for e in invalid] == [True, True, False]


def test_stream_cut_mid_plan_fails_precisely_and_keeps_finished_results(
    server_factory: type[ScriptedServer],
) -> None:
    cut = Reply(PLAN, chunk_size=5, delay=0.02, cut_after=PLAN.index("2. area"))
    server = server_factory(Script.by_purpose(planner=[cut])).start()
    with pytest.raises(RunFailed) as info:
        runtime_for(server, recovery=Recovery.none()).run("q")
    assert isinstance(info.value.cause, LLMStreamError)
    result = info.value.result
    assert result.status == "failed"
    assert result.tasks[0].status is TaskStatus.DONE
    assert result.results == {1: POPULATION["Netherlands"]}
    assert isinstance(result.events[-1], RunFinished)
    assert result.events[-1].status == "failed"


def test_rate_limit_is_reported_with_retry_after(server_factory: type[ScriptedServer]) -> None:
    server = server_factory([Reply(status=429, retry_after=2.5)]).start()
    with pytest.raises(RunFailed) as info:
        runtime_for(server, recovery=Recovery.none()).run("q")
    cause = info.value.cause
    assert isinstance(cause, LLMRateLimitError)
    assert cause.retry_after == 2.5


def test_unreachable_endpoint_is_a_connection_error() -> None:
    # Bound, never listening: connections are refused, and no other process can take the port
    # while the test holds it.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        llm = OpenAICompatible(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=0)
        with pytest.raises(RunFailed) as info:
            Runtime(TOOLS, llm).run("q")
    assert isinstance(info.value.cause, LLMConnectionError)
    assert f"127.0.0.1:{port}" in str(info.value.cause)


def test_react_mode_answers_the_same_question(server_factory: type[ScriptedServer]) -> None:
    script = Script.by_purpose(
        react=[
            'Thought: population first\nAction: population("Netherlands")\n',
            'Thought: now the area\nAction: area("Netherlands")\n',
            "Thought: divide\nAction: divide($1, $2)\n",
            "Thought: done\nAction: Finish(About 428 people per km².)",
        ]
    )
    server = server_factory(script).start()
    result = runtime_for(server, mode="react").run("People per km² in the Netherlands?")
    assert result.mode == "react"
    assert result.answer == "About 428 people per km²."
    assert [r.task.tool for r in result.tasks] == ["population", "area", "divide"]
    assert result.results[3] == pytest.approx(POPULATION["Netherlands"] / AREA["Netherlands"])
    assert result.llm.calls == 4
    # Each observation went back to the model before its next step.
    assert server.requests[1][-1].content == "Observation: 17900000"
    # One tool at a time: each started after the previous ended.
    for before, after in zip(result.tasks, result.tasks[1:], strict=False):
        assert after.start is not None
        assert before.end is not None
        assert after.start >= before.end


def test_react_mode_turns_a_bad_action_into_an_observation() -> None:
    script = Script.by_purpose(react=['Action: gdp("France")', "Action: Finish(unknown)"])
    result = Runtime(TOOLS, ScriptedLLM(script), mode="react").run("q")
    assert result.answer == "unknown"
    assert "unknown tool 'gdp'" in script.requests[1][-1].content


async def _collect(runtime: Runtime) -> list[str]:
    async with runtime.events("q") as events:
        return [event.kind async for event in events]


def test_event_iterator_yields_the_run_in_order() -> None:
    llm = ScriptedLLM(Script.by_purpose(planner=[PLAN], joiner=[FINISH]))
    kinds = anyio.run(_collect, Runtime(TOOLS, llm))
    assert kinds[0] == "run_started"
    assert kinds[-1] == "run_finished"
    assert kinds.count("task_planned") == 3
    assert kinds.count("task_finished") == 3
    assert kinds.index("task_finished") < kinds.index("answer")


def test_cancelling_a_run_cancels_its_tools_and_reports_cancelled() -> None:
    seen: list[Event] = []
    plan = '1. population("France", delay=30)\n2. population("Belgium", delay=0.01)\n3. join()\n'
    runtime = Runtime(TOOLS, ScriptedLLM(Script.by_purpose(planner=[plan])))

    async def main() -> None:
        with anyio.CancelScope() as scope:

            def watch(event: Event) -> None:
                seen.append(event)
                if isinstance(event, TaskFinished) and event.task_id == 2:
                    scope.cancel()  # from outside the run, once the quick task is done

            await runtime.arun("q", subscribers=[watch])

    anyio.run(main)
    finished = seen[-1]
    assert isinstance(finished, RunFinished)
    assert finished.status == "cancelled"
    assert finished.t < 30  # on the run's clock: the 30 s tool did not hold the run
    ended = {e.task_id: e.kind for e in seen if isinstance(e, TaskCancelled | TaskFinished)}
    assert ended == {1: "task_cancelled", 2: "task_finished"}


def test_leaving_the_event_loop_early_cancels_the_run() -> None:
    cancelled: list[Event] = []
    plan = '1. population("France", delay=30)\n2. population("Belgium", delay=0.01)\n3. join()\n'
    runtime = Runtime(
        TOOLS,
        ScriptedLLM(Script.by_purpose(planner=[plan])),
        subscribers=[
            lambda e: cancelled.append(e) if isinstance(e, TaskCancelled | RunFinished) else None
        ],
    )

    async def main() -> list[str]:
        kinds = []
        async with runtime.events("q") as events:
            async for event in events:
                kinds.append(event.kind)
                if event.kind == "task_finished":
                    break
        return kinds

    kinds = anyio.run(main)
    assert kinds[-1] == "task_finished"
    task, finished = cancelled
    assert isinstance(task, TaskCancelled)
    assert task.task_id == 1
    assert isinstance(finished, RunFinished)
    assert finished.status == "cancelled"
    assert finished.t < 30  # on the run's clock: the 30 s tool was cancelled, not awaited


def test_an_error_in_the_consumer_cancels_the_run_and_comes_out_unchanged() -> None:
    finished: list[RunFinished] = []
    plan = '1. population("France", delay=30)\n2. join()\n'
    runtime = Runtime(
        TOOLS,
        ScriptedLLM(Script.by_purpose(planner=[plan])),
        subscribers=[lambda e: finished.append(e) if isinstance(e, RunFinished) else None],
    )

    async def main() -> None:
        async with runtime.events("q") as events:
            async for event in events:
                if event.kind == "task_started":
                    raise KeyError("the consumer's own bug")

    with pytest.raises(KeyError, match="the consumer's own bug"):
        anyio.run(main)
    assert [e.status for e in finished] == ["cancelled"]
    assert finished[0].t < 30  # on the run's clock: the 30 s tool was cancelled, not awaited


def test_reading_every_event_ends_the_run_once_without_cancelling_it() -> None:
    finished: list[RunFinished] = []
    llm = ScriptedLLM(Script.by_purpose(planner=[PLAN], joiner=[FINISH]))
    runtime = Runtime(
        TOOLS,
        llm,
        subscribers=[lambda e: finished.append(e) if isinstance(e, RunFinished) else None],
    )
    kinds = anyio.run(_collect, runtime)
    assert kinds[-1] == "run_finished"
    assert [e.status for e in finished] == ["finished"]


def test_a_plan_streamed_in_the_json_form_runs_the_same() -> None:
    plan = (
        "```json\n"
        '[{"id": 1, "tool": "population", "args": {"country": "Netherlands"}},\n'
        ' {"id": 2, "tool": "area", "args": ["Netherlands"]},\n'
        ' {"id": 3, "tool": "divide", "args": ["$1", "$2"]},\n'
        ' {"id": 4, "tool": "join"}]\n'
        "```"
    )
    llm = ScriptedLLM(Script.by_purpose(planner=[Reply(plan, chunk_size=7)], joiner=[FINISH]))
    result = Runtime(TOOLS, llm).run("q")
    assert result.results[3] == pytest.approx(POPULATION["Netherlands"] / AREA["Netherlands"])
    assert result.llm.calls == 2
    assert [r.task.deps for r in result.tasks] == [(), (), (1, 2)]


def test_valid_lines_in_the_chunk_of_an_invalid_line_run_and_a_repair_may_use_them() -> None:
    # The whole response arrives as one chunk: line 1 is valid, line 2 is not.
    bad = Reply('1. population("France")\n2. gdp("France")\n3. join()\n', chunk_size=10_000)
    fixed = '2. area("France")\n3. divide($1, $2)\n4. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[bad], repair=[fixed], joiner=[FINISH])
    result = Runtime(TOOLS, ScriptedLLM(script)).run("q")
    assert result.results == {
        1: POPULATION["France"],
        2: AREA["France"],
        3: POPULATION["France"] / AREA["France"],
    }
    repair_prompt = script.requests[1][-1].content
    assert '1. population("France")' in repair_prompt
    assert "no task was accepted" not in repair_prompt
    assert GAUGE.calls == 2  # population ran once


def test_a_last_line_without_newline_or_join_runs_and_the_run_resumes(tmp_path: Path) -> None:
    cut = Reply('1. population("France")\n2. area("France")', chunk_size=10_000)
    fixed = "3. divide($1, $2)\n4. join()\n"
    script = Script.by_purpose(planner=[cut], repair=[fixed], joiner=[Reply(status=503)])
    journal = tmp_path / "runs.db"
    with pytest.raises(RunFailed) as failed:
        Runtime(TOOLS, ScriptedLLM(script), journal=journal).run("q")
    result = failed.value.result
    assert result.results == {
        1: POPULATION["France"],
        2: AREA["France"],
        3: POPULATION["France"] / AREA["France"],
    }
    assert "2. area(" in script.requests[1][-1].content
    llm = ScriptedLLM(Script.by_purpose(joiner=[FINISH]))
    resumed = Runtime(TOOLS, llm, journal=journal).resume(result.run_id)
    assert resumed.status == "finished"
    assert [r.reused for r in resumed.tasks] == [True] * 3


def test_an_argument_past_the_runtime_limit_is_an_observation_for_the_joiner() -> None:
    plan = f'1. echo("{"x" * 80}")\n2. echo("${{1}}${{1}}")\n3. join()\n'
    script = Script.by_purpose(planner=[plan, "4. join()\n"], joiner=[FINISH])
    runtime = Runtime(TOOLS, ScriptedLLM(script), max_argument_chars=100)
    result = runtime.run("q")
    assert result.results == {1: "x" * 80}
    assert result.tasks[1].status is TaskStatus.FAILED
    assert "more than 100 characters" in script.requests[1][-1].content  # planned again
    assert "more than 100 characters" in script.requests[-1][-1].content
    assert runtime.settings.max_argument_chars == 100
    assert RunSettings.from_dict(runtime.settings.to_dict()).max_argument_chars == 100
