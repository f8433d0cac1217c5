"""Fault injection: real tools that fail in controlled ways, the scripted LLM (in process and over
real SSE), and the exact recovery path each failure takes, with no finished result lost."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from planweave import (
    Budget,
    BudgetExceeded,
    CallAgain,
    Decompose,
    Escalate,
    Escalation,
    Fail,
    Failure,
    Fallback,
    OpenAICompatible,
    Pattern,
    Recovery,
    Reply,
    Retry,
    RetryTool,
    RunFailed,
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
    TaskStatus,
    ToolFailed,
    ToolOutputError,
    ToolRegistry,
    ToolTransient,
    UserError,
    UseResult,
    Vote,
    classify,
    tool,
)
from planweave.events import LLMRetry, PlanInvalid, TaskRecovery
from planweave.store import Journal

CALLS: Counter[str] = Counter()
VALUES = {"a": 2, "b": 3}
FAST = Retry(3, base=0.01)


@pytest.fixture(autouse=True)
def _reset() -> None:
    CALLS.clear()


@tool
async def lookup(key: str) -> int:
    """The number stored under a key."""
    CALLS[f"lookup {key}"] += 1
    return VALUES[key]


@tool
def add(x: int, y: int) -> int:
    """Add two numbers."""
    CALLS["add"] += 1
    return x + y


@tool
async def flaky(key: str) -> int:
    """Fails twice with a connection error, then answers."""
    CALLS["flaky"] += 1
    if CALLS["flaky"] <= 2:
        raise ConnectionError("connection reset by peer")
    return 7


@tool(side_effects=True)
def charge(amount: int) -> str:
    """Charge a card (a side effect); the payment service asks to be retried."""
    CALLS["charge"] += 1
    raise RetryTool("payment service busy")


@tool(timeout=0.2)
async def hang(key: str) -> int:
    """Never answers."""
    CALLS["hang"] += 1
    await anyio.sleep(30)
    return 0


@tool
async def mirror(key: str) -> int:
    """A slower mirror of `hang` that answers."""
    CALLS["mirror"] += 1
    return 11


@tool
def count(key: str) -> int:
    """Claims to return a number; returns text."""
    return "many"  # type: ignore[return-value]


@tool
def total(keys: list[str]) -> int:
    """The sum of the numbers under several keys (its service is down)."""
    CALLS["total"] += 1
    raise ToolFailed("the totals service is down")


@tool
def pair_sum(a: str, b: str) -> int:
    """The sum of the numbers under two keys (its service is down too)."""
    CALLS["pair_sum"] += 1
    raise ToolFailed("the pair service is down")


@tool
async def guess(key: str) -> int:
    """An answer that varies from call to call, like a sampled LLM's."""
    CALLS["guess"] += 1
    return [7, 8, 7][(CALLS["guess"] - 1) % 3]


TOOLS = ToolRegistry([lookup, add, flaky, charge, hang, mirror, count, total, pair_sum, guess])


def plan(*lines: str) -> str:
    body = "".join(f"{i}. {line}\n" for i, line in enumerate(lines, 1))
    return body + f"{len(lines) + 1}. join()\n<END_OF_PLAN>"


def finish(text: str) -> str:
    return f"Thought: that settles it.\nAction: Finish({text})"


def run(
    planner: list[str | Reply],
    joiner: list[str],
    repair: list[str] | None = None,
    **kwargs: object,
) -> tuple[Runtime, ScriptedLLM]:
    llm = ScriptedLLM(Script.by_purpose(planner=planner, repair=repair or [], joiner=joiner))
    return Runtime(TOOLS, llm, **kwargs), llm  # type: ignore[arg-type]


def path(record: object) -> list[str]:
    return [entry["pattern"] for entry in record.recovery]  # type: ignore[attr-defined]


# ---------------------------------------------------------------------- the taxonomy


def test_every_failure_has_a_class() -> None:
    assert classify(ToolTransient("x")) == "tool.transient"
    assert classify(ToolOutputError("x")) == "tool.wrong_type"
    assert classify(BudgetExceeded("x", limit="tokens")) == "budget"


def test_the_registry_prefers_the_latest_and_the_most_specific_rule() -> None:
    recovery = Recovery().on("tool.*", Retry(2)).on("tool.timeout", Fallback("mirror"))
    recovery.on("tool.*", tool="flaky")  # no patterns: let flaky fail at once
    assert recovery.patterns("tool.timeout") == (Fallback("mirror"),)
    assert recovery.patterns("tool.crash") == (Retry(2),)
    assert recovery.patterns("tool.timeout", "flaky") == ()
    assert recovery.patterns("plan.syntax") == ()
    with pytest.raises(UserError, match="not a recovery Pattern"):
        recovery.on("tool.*", "retry")  # type: ignore[arg-type]


def test_a_rule_that_could_never_act_is_refused_when_it_is_made() -> None:
    @dataclass(frozen=True)
    class Shrug(Pattern):
        pass  # no handle(): it could never act

    # A pattern without handle() is abstract: Python refuses to make one at all.
    with pytest.raises(TypeError, match="abstract method"):
        Shrug()  # type: ignore[abstract]
    with pytest.raises(UserError, match=r"Recovery\(\)\.vote"):
        Recovery().on("tool.permanent", Vote(3))
    with pytest.raises(UserError, match="can only be retried"):
        Recovery().on("llm.connection", Fallback("mirror"))
    with pytest.raises(UserError, match=r"no failure class 'plan\.syntax'"):
        Recovery().on("plan.syntax", Retry(2))


@dataclass(frozen=True)
class FromCache(Pattern):
    """A user's own pattern: answer a failed call from a cache of earlier answers."""

    cache: dict[str, int]

    async def handle(self, failure: Failure) -> UseResult | None:
        value = self.cache.get(failure.call)
        if value is None:
            return None
        return UseResult(value, {"source": "cache", "class_seen": failure.category})


def test_a_custom_pattern_runs_and_is_recorded_like_the_built_in_ones(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    recovery = Recovery().on(
        "tool.permanent", FromCache({'total(["b"])': 9}), FromCache({'total(["a"])': 41})
    )
    runtime, _ = run(
        [plan('total(["a"])', "add($1, 1)")], [finish("42")], recovery=recovery, journal=journal
    )
    result = runtime.run("q")
    assert result.results == {1: 41, 2: 42}  # the first pattern passed, the second answered
    assert result.tasks[0].recovery == [
        {
            "pattern": "fromcache",
            "category": "tool.permanent",
            "error": "the totals service is down",
            "attempt": 1,
            "source": "cache",
            "class_seen": "tool.permanent",
        }
    ]
    assert journal.show(result.run_id)["tasks"][0]["recovery"] == result.tasks[0].recovery


# ---------------------------------------------------------------------- tool failures


def test_a_tool_that_fails_twice_is_retried_until_it_answers() -> None:
    runtime, _ = run(
        [plan('flaky("a")')], [finish("7")], recovery=Recovery().on("tool.transient", FAST)
    )
    result = runtime.run("q")
    rec = result.tasks[0]
    assert result.results == {1: 7}
    assert CALLS["flaky"] == 3
    assert rec.attempts == 3
    assert path(rec) == ["retry", "retry"]
    assert {e["category"] for e in rec.recovery} == {"tool.transient"}
    assert all("connection reset" in e["error"] for e in rec.recovery)
    assert [e.attempt for e in result.events if isinstance(e, TaskRecovery)] == [1, 2]
    task = result.to_dict()["tasks"][0]
    assert task["attempts"] == 3
    assert task["recovery"][0]["pattern"] == "retry"


def test_a_side_effecting_tool_is_only_retried_when_the_rule_says_so() -> None:
    runtime, _ = run([plan("charge(5)")], [finish("not charged")], recovery=Recovery.default())
    result = runtime.run("q")
    assert CALLS["charge"] == 1
    assert isinstance(result.tasks[0].error, ToolTransient)
    assert result.tasks[0].recovery == []

    CALLS.clear()
    unsafe = Recovery().on("tool.transient", Retry(3, base=0.01, side_effects=True))
    runtime, _ = run([plan("charge(5)")], [finish("not charged")], recovery=unsafe)
    assert runtime.run("q").tasks[0].attempts == 3
    assert CALLS["charge"] == 3


def test_a_hanging_tool_times_out_is_retried_then_falls_back() -> None:
    recovery = Recovery().on("tool.timeout", Retry(2, base=0.01), Fallback("mirror"), tool="hang")
    runtime, _ = run([plan('hang("a")', "add($1, 1)")], [finish("12")], recovery=recovery)
    result = runtime.run("q")
    rec = result.tasks[0]
    assert path(rec) == ["retry", "fallback"]
    assert [e["category"] for e in rec.recovery] == ["tool.timeout", "tool.timeout"]
    assert rec.recovery[1]["to"] == "mirror"
    assert CALLS["hang"] == 2
    assert CALLS["mirror"] == 1
    assert result.results == {1: 11, 2: 12}  # the dependent got the fallback's result


def test_a_wrong_type_is_classified_and_reaches_the_joiner() -> None:
    runtime, llm = run([plan('count("a")')], [finish("unknown")])
    result = runtime.run("q")
    rec = result.tasks[0]
    assert rec.status is TaskStatus.FAILED
    assert isinstance(rec.error, ToolOutputError)
    assert classify(rec.error) == "tool.wrong_type"
    assert "not int" in str(rec.error)
    assert "not int" in llm.script.requests[-1][-1].content


def test_a_tool_that_always_fails_is_decomposed_two_levels_deep() -> None:
    planner = [
        plan('total(["a", "b"])'),
        plan('pair_sum("a", "b")'),  # the sub-goal: what total(["a", "b"]) returns
        plan('lookup("a")', 'lookup("b")', "add($1, $2)"),  # the sub-sub-goal
    ]
    joiner = [finish("5"), finish("5"), finish("The total is 5.")]
    runtime, llm = run(planner, joiner, recovery=Recovery().on("tool.permanent", Decompose()))
    result = runtime.run("What is the total of a and b?")
    assert result.answer == "The total is 5."
    assert result.results == {1: 5}  # the sub-plan's answer, as the tool's int
    rec = result.tasks[0]
    assert path(rec) == ["decompose", "decompose"]
    outcome = rec.recovery[1]
    assert outcome["depth"] == 1
    assert outcome["subplan"] == [{"call": 'pair_sum("a", "b")', "status": "done", "result": "5"}]
    asked = [r[-1].content for r in llm.script.requests if "Tools:" in r[0].content]
    assert 'total(["a", "b"])' in asked[1]
    assert 'pair_sum("a", "b")' in asked[2]
    assert Counter({"total": 1, "pair_sum": 1, "lookup a": 1, "lookup b": 1, "add": 1}) == CALLS


def test_decomposition_stops_at_the_budgeted_depth() -> None:
    planner = [plan('total(["a", "b"])'), plan('pair_sum("a", "b")')]
    joiner = [
        "Thought: pair_sum failed.\nAction: Replan(pair_sum is down too)",
        finish("The total is unknown."),
    ]
    runtime, llm = run(
        planner,
        joiner,
        recovery=Recovery().on("tool.permanent", Decompose()),
        budget=Budget(decomposition_depth=1),
    )
    result = runtime.run("q")
    rec = result.tasks[0]
    assert rec.status is TaskStatus.FAILED
    assert "gave no answer" in str(rec.error)
    assert "totals service is down" in str(rec.error)
    assert CALLS["pair_sum"] == 1
    assert llm.script.purposes.count("planner") == 2


def test_escalation_asks_a_person_for_the_result() -> None:
    asked: list[Escalation] = []

    async def person(question: Escalation) -> tuple[str, object]:
        asked.append(question)
        return ("result", 42)

    runtime, _ = run(
        [plan('total(["a"])')],
        [finish("42")],
        recovery=Recovery().on("tool.permanent", Escalate()),
        escalate=person,  # type: ignore[arg-type]
    )
    result = runtime.run("q")
    assert result.results == {1: 42}
    assert asked[0].call == 'total(["a"])'
    assert asked[0].category == "tool.permanent"
    assert result.tasks[0].recovery[0]["answer"] == "result"


# ---------------------------------------------------------------------- plan and LLM failures


def test_invalid_plans_are_repaired_by_class() -> None:
    repairs = ["1. add($2, 1)\n", plan('lookup("a")')]
    runtime, _ = run(["1. nope()\n"], [finish("2")], repair=repairs)
    result = runtime.run("q")
    invalid = [e for e in result.events if isinstance(e, PlanInvalid)]
    assert [e.category for e in invalid] == ["plan.unknown_tool", "plan.invalid_reference"]
    assert result.results == {1: 2}


def test_a_plan_without_join_is_repaired() -> None:
    runtime, _ = run(
        ['1. lookup("a")\n<END_OF_PLAN>'], [finish("2")], repair=["2. join()\n<END_OF_PLAN>"]
    )
    result = runtime.run("q")
    assert [e.category for e in result.events if isinstance(e, PlanInvalid)] == [
        "plan.missing_join"
    ]
    assert CALLS["lookup a"] == 1
    assert result.answer == "2"


def test_a_plan_cut_off_mid_stream_is_continued_without_repeating_tasks() -> None:
    full = plan('lookup("a")', 'lookup("b")', "add($1, $2)")
    cut = Reply(full, chunk_size=4, delay=0.01, cut_after=full.index("2. lookup"))
    rest = '2. lookup("b")\n3. add($1, $2)\n4. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[cut], repair=[rest], joiner=[finish("5")])
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        result = Runtime(TOOLS, llm).run("q")
    assert result.results == {1: 2, 2: 3, 3: 5}
    assert CALLS["lookup a"] == 1
    invalid = [e for e in result.events if isinstance(e, PlanInvalid)]
    assert [e.category for e in invalid] == ["llm.stream_cut"]
    assert "broke off" in server.requests[1][-1].content
    assert "1. lookup(" in server.requests[1][-1].content  # told what already runs


def test_a_rate_limit_is_waited_out_as_retry_after_says() -> None:
    script = Script.by_purpose(
        planner=[Reply(status=429, retry_after=0.3), plan('lookup("a")')], joiner=[finish("2")]
    )
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        result = Runtime(TOOLS, llm).run("q")
    retries = [e for e in result.events if isinstance(e, LLMRetry)]
    assert [(e.category, e.purpose) for e in retries] == [("llm.rate_limit", "planner")]
    assert retries[0].delay >= 0.3
    assert result.answer == "2"
    assert result.llm.calls == 2  # the retry is part of the planner's call


def test_an_llm_request_is_sent_no_more_often_than_its_retry_allows() -> None:
    busy = Reply(status=429, retry_after=0.01)
    script = Script.by_purpose(planner=[busy, busy, plan('lookup("a")')], joiner=[finish("2")])
    recovery = Recovery().on("llm.rate_limit", Retry(2))
    with ScriptedServer(script) as server:
        llm = OpenAICompatible(base_url=server.base_url, model="m")
        with pytest.raises(RunFailed) as failed:
            Runtime(TOOLS, llm, recovery=recovery).run("q")
    assert classify(failed.value.cause) == "llm.rate_limit"
    retries = [e for e in failed.value.result.events if isinstance(e, LLMRetry)]
    assert [(e.attempt, e.category) for e in retries] == [(1, "llm.rate_limit")]
    assert len(server.requests) == 2  # Retry(2): two requests in all, the first included


# ---------------------------------------------------------------------- budgets


def test_an_llm_call_budget_ends_the_run_with_what_it_has() -> None:
    runtime, _ = run([plan('lookup("a")')], [finish("2")], budget=Budget(llm_calls=1))
    with pytest.raises(RunFailed) as failed:
        runtime.run("q")
    cause = failed.value.cause
    assert isinstance(cause, BudgetExceeded)
    assert cause.limit == "llm_calls"
    result = failed.value.result
    assert result.results == {1: 2}
    assert result.partial == 'lookup("a") = 2'
    assert result.to_dict()["partial"] == 'lookup("a") = 2'


def test_a_token_budget_and_a_wall_time_budget() -> None:
    runtime, _ = run([plan('lookup("a")')], [finish("2")], budget=Budget(tokens=20))
    with pytest.raises(RunFailed) as failed:
        runtime.run("q")
    assert failed.value.cause.limit == "tokens"  # type: ignore[attr-defined]

    slow = Recovery().on("tool.timeout", Retry(50, base=0.05))
    runtime, _ = run([plan('hang("a")')], [finish("?")], recovery=slow, budget=Budget(wall_s=0.5))
    with pytest.raises(RunFailed) as failed:
        runtime.run("q")
    assert failed.value.cause.limit == "wall_s"  # type: ignore[attr-defined]
    assert failed.value.result.wall_s < 5


# ---------------------------------------------------------------------- recorded


def test_the_journal_records_attempts_and_recovery(journal_db: str) -> None:
    journal = Journal(journal_db)
    runtime, _ = run(
        [plan('flaky("a")')],
        [finish("7")],
        recovery=Recovery().on("tool.transient", FAST),
        journal=journal,
    )
    result = runtime.run("q")
    recorded = journal.show(result.run_id)["tasks"][0]
    assert recorded["attempts"] == 3
    assert recorded["recovery"] == result.to_dict()["tasks"][0]["recovery"]
    kinds = [e["kind"] for e in journal.events(result.run_id)]
    assert kinds.count("task_recovery") == 2


def test_an_error_names_its_plan_line_plan_version_and_upstream_tasks() -> None:
    runtime, _ = run([plan('count("a")', "add($1, 1)")], [finish("unknown")])
    tasks = runtime.run("q").to_dict()["tasks"]
    assert tasks[0]["error"]["line"] == '1. count("a")'
    assert tasks[0]["error"]["plan_round"] == 0
    assert tasks[0]["error"]["upstream"] == []
    assert tasks[1]["status"] == "skipped"
    assert tasks[1]["error"]["upstream"] == [1]
    assert tasks[1]["error"]["line"] == "2. add($1, 1)"


def test_voting_keeps_the_answer_most_calls_agree_on() -> None:
    runtime, _ = run([plan('guess("a")')], [finish("7")], recovery=Recovery().vote("guess", k=3))
    result = runtime.run("q")
    assert CALLS["guess"] == 3
    assert result.results == {1: 7}
    assert result.tasks[0].recovery == [
        {
            "pattern": "vote",
            "category": "vote",
            "error": "",
            "attempt": 1,
            "k": 3,
            "agreeing": 2,
            "answers": 3,
        }
    ]


# ---------------------------------------------------------------------- one record of a run


async def _retry_then_escalate(question: Escalation) -> tuple[str, object]:
    return ("retry", None)


SCENARIOS: dict[str, dict[str, object]] = {
    "retry": {
        "planner": [plan('flaky("a")', "add($1, 1)")],
        "recovery": Recovery().on("tool.transient", FAST),
    },
    "fallback": {
        "planner": [plan('hang("a")', "add($1, 1)")],
        "recovery": Recovery().on(
            "tool.timeout", Retry(2, base=0.01), Fallback("mirror"), tool="hang"
        ),
    },
    "escalate-retry": {
        "planner": [plan('flaky("a")', "add($1, 1)")],
        "recovery": Recovery().on("tool.transient", Escalate()),
        "escalate": _retry_then_escalate,
    },
    "decompose": {
        "planner": [plan('total(["a", "b"])'), plan('lookup("a")', 'lookup("b")', "add($1, $2)")],
        "joiner": [finish("5"), finish("5")],
        "recovery": Recovery().on("tool.permanent", Decompose()),
    },
    "vote": {
        "planner": [plan('guess("a")', "add($1, 1)")],
        "recovery": Recovery().vote("guess", k=3),
    },
    "fail-with-partial": {
        "planner": [plan('lookup("a")', 'total(["a"])')],
        "joiner": [],  # the LLM-call budget ends the run before the joiner
        "recovery": Recovery.none(),
        "budget": Budget(llm_calls=1),
    },
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_journal_shows_the_run_exactly_as_the_run_reported_it(
    name: str, journal_db: str
) -> None:
    scenario = dict(SCENARIOS[name])
    planner = scenario.pop("planner")
    joiner = scenario.pop("joiner", [finish("done")])
    journal = Journal(journal_db)
    runtime, _ = run(planner, joiner, journal=journal, **scenario)  # type: ignore[arg-type]
    result = anyio.run(lambda: runtime.arun("q", check=False))
    reported = result.to_dict()
    shown = journal.show(result.run_id)
    assert {k: shown[k] for k in reported} == reported
    assert any(t.get("recovery") for t in reported["tasks"]) or name == "fail-with-partial"
    if name == "escalate-retry":
        assert reported["tasks"][0]["attempts"] == 2
        assert reported["tasks"][0]["recovery"][0]["answer"] == "retry"
    if name == "fail-with-partial":
        assert reported["partial"] == 'lookup("a") = 2'


# ---------------------------------------------------------------------- patterns that misbehave


@dataclass(frozen=True)
class Broken(Pattern):
    """A user's pattern with a bug in it, in one of several ways."""

    how: str

    async def handle(self, failure: Failure) -> object:
        if self.how == "raises":
            raise ValueError("oops")
        if self.how == "nonsense":
            return "retry please"
        if self.how == "unknown tool":
            return CallAgain(tool="nonexistent")
        if self.how == "foreign error":
            return Fail(ValueError("not a task error"))  # type: ignore[arg-type]
        if self.how == "forever":
            return CallAgain()
        return UseResult("not an int")  # wrong type for total() -> int


@pytest.mark.parametrize("how", ["raises", "nonsense", "unknown tool", "foreign error"])
def test_a_broken_pattern_is_a_user_error_and_the_run_is_still_closed(
    how: str, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "runs.db")
    finished: list[object] = []
    runtime, _ = run(
        [plan('lookup("a")', 'total(["a"])')],
        [finish("?")],
        recovery=Recovery().on("tool.permanent", Broken(how)),
        journal=journal,
        subscribers=[lambda e: finished.append(e) if e.kind == "run_finished" else None],
    )
    with pytest.raises(UserError, match="Broken"):
        runtime.run("q")
    assert len(finished) == 1
    (shown,) = journal.runs()
    assert shown["status"] == "failed"
    full = journal.show(shown["id"])
    assert full["tasks"][0]["status"] == "done"  # the finished result is kept
    assert full["tasks"][0]["result"] == 2


def test_a_pattern_that_always_calls_again_is_bounded() -> None:
    recovery = Recovery(max_calls=5).on("tool.permanent", Broken("forever"))
    runtime, _ = run([plan('total(["a"])')], [finish("?")], recovery=recovery)
    result = runtime.run("q")
    assert CALLS["total"] == 5
    assert result.tasks[0].attempts == 5
    assert result.tasks[0].status is TaskStatus.FAILED


def test_a_result_a_pattern_supplies_is_checked_like_the_tools_own() -> None:
    recovery = Recovery().on("tool.permanent", Broken("wrong type"))
    runtime, _ = run([plan('total(["a"])', "add($1, 1)")], [finish("?")], recovery=recovery)
    result = runtime.run("q")
    assert isinstance(result.tasks[0].error, ToolOutputError)  # blamed on the task itself
    assert result.tasks[1].status is TaskStatus.SKIPPED


def test_rules_that_could_never_act_are_refused() -> None:
    with pytest.raises(UserError, match="matches LLM failure classes"):
        Recovery.default().on("*", FromCache({}))
    with pytest.raises(UserError, match=r"no failure class 'tool\.dependency'"):
        Recovery().on("tool.dependency", Retry(2))
    with pytest.raises(UserError, match="never retries"):
        Retry(1)
    with pytest.raises(UserError, match="name of the tool"):
        Fallback("")
    Recovery.default().on("*", Retry(2))  # retrying is fine for every class
