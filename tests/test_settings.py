"""RunSettings: its one serialized form, reading older journals' settings, refusing bad values,
and building a runtime from it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import pytest

from planweave import (
    Budget,
    Decompose,
    Escalate,
    OpenAICompatible,
    Recovery,
    Retry,
    RunSettings,
    Runtime,
    Script,
    ScriptedLLM,
    UserError,
    tool,
)
from planweave.llm.base import Deadlines
from planweave.records import Price, dollars
from planweave.settings import load_tool_sets, make_llm, recovery_policy

# What `planweave run` wrote before RunSettings existed (the Runtime's keys merged with the
# CLI's), for `--tools demo_tools:TOOLS --recovery none --max-llm-calls 5`.
OLDER: dict[str, Any] = {
    "mode": "compiled",
    "model": "m",
    "max_replans": 1,
    "max_repairs": 2,
    "tool_timeout": 60.0,
    "streaming": False,
    "grammar": True,
    "tools": ["demo_tools:TOOLS"],
    "files": None,
    "base_url": "http://127.0.0.1:8080/v1",
    "grammar_field": None,
    "recovery": "none",
    "decompose": False,
    "ask": False,
    "budget": {"llm_calls": 5, "tokens": None, "wall_s": None, "decomposition_depth": 2},
}


def test_round_trip() -> None:
    settings = RunSettings(
        mode="react",
        model="qwen2.5-coder-1.5b",
        grammar=False,
        grammar_field="guided_grammar",
        tools=("builtin", "demo_tools:TOOLS"),
        files="/tmp/notes",
        max_replans=0,
        max_repairs=3,
        tool_timeout=2.5,
        streaming=False,
        recovery="none",
        decompose=True,
        ask=True,
        budget=Budget(llm_calls=5, tokens=900, wall_s=30.0, decomposition_depth=1),
    )
    data = settings.to_dict()
    assert data["tools"] == ["builtin", "demo_tools:TOOLS"]
    assert data["budget"] == {
        "llm_calls": 5,
        "tokens": 900,
        "wall_s": 30.0,
        "decomposition_depth": 1,
    }
    assert RunSettings.from_dict(data) == settings
    assert RunSettings.from_dict(RunSettings().to_dict()) == RunSettings()
    priced = RunSettings(price="0.15/0.6")
    assert RunSettings.from_dict(priced.to_dict()).priced() == Price(0.15, 0.6)
    assert RunSettings(price="3").priced() == Price(3.0, 3.0)  # one number: both
    with pytest.raises(UserError, match="INPUT/OUTPUT"):
        RunSettings.from_dict({"price": "0.15/0.6/9"})  # a journal's, refused alike
    deadlines = RunSettings(llm_first_token_timeout=0.5, llm_call_timeout=None)
    assert RunSettings.from_dict(deadlines.to_dict()).deadlines() == Deadlines(
        first_token=0.5, call=None
    )


def test_a_negative_zero_price_is_zero() -> None:
    for text in ("-0", "-0/-0.0", "-0.0/0.5"):
        price = Price.parse(text)
        assert str(price.input) == "0.0", text
        assert dollars(price.cost(1000, 0)) == "$0.000000"
    assert str(Price.parse("-0/-0").output) == "0.0"


def test_an_older_journals_settings_are_read() -> None:
    settings = RunSettings.from_dict(OLDER)
    assert settings.tools == ("demo_tools:TOOLS",)
    assert settings.recovery == "none"
    assert settings.streaming is False
    assert settings.max_replans == 1
    assert settings.budget == Budget(llm_calls=5)
    # Keys added since (the endpoint's deadlines, the argument cap) take their defaults; the
    # prompt style is the one runs had before there was a choice.
    newer = {k: v for k, v in RunSettings().to_dict().items() if k not in OLDER}
    assert set(newer) == {
        "llm_first_token_timeout",
        "llm_chunk_timeout",
        "llm_call_timeout",
        "max_argument_chars",
        "max_fanout",
        "max_fanout_total",
        "prompt_style",
        "join_replan",
        "grounding",
        "plan_answers",
        "cache",
        "cache_adapt",
        "mcp",
        "mcp_timeout",
        "mcp_max_tools",
        "approve",
        "executor",
        "max_concurrency",
        "react_max_steps",
        "examples",
        "similar_examples",
        "llm_backend",
        "output_schema",
        "thread",
        "user",
        "price",
    }
    assert settings.mcp == ()  # no MCP servers then
    assert settings.llm_backend == "auto"  # the endpoint when there is one: as then
    assert settings.output_schema is None  # answers in words
    assert settings.executor == "thread"  # tools ran on threads before there was a choice
    # Except the prompt style and join_replan: those runs used the full prompts and joined and
    # planned in separate calls, so resuming them must send the same requests.
    assert settings.prompt_style == "full"
    assert settings.join_replan is False
    assert settings.grounding is False  # nor were their answers checked
    assert settings.plan_answers is False  # nor answered from their plans
    assert settings.similar_examples == 0  # nor shown the bank's examples
    assert settings.to_dict() == OLDER | newer | {
        "prompt_style": "full",
        "join_replan": False,
        "grounding": False,
        "plan_answers": False,
        "similar_examples": 0,
    }


def test_the_executor_is_recorded_and_checked_but_never_a_ray_address() -> None:
    settings = RunSettings(executor="ray", ray_address="10.0.0.7:6379")
    data = settings.to_dict()
    assert data["executor"] == "ray"
    assert "ray_address" not in data  # a journal must not send a resumed run's calls elsewhere
    assert RunSettings.from_dict(data) == RunSettings(executor="ray")
    assert RunSettings.from_dict(data | {"ray_address": "10.6.6.6:6379"}).ray_address is None
    with pytest.raises(UserError, match="executor must be"):
        RunSettings.from_dict({"executor": "gpu"})
    with pytest.raises(UserError, match="ray_address must be"):
        RunSettings(ray_address=6379)  # type: ignore[arg-type]


def test_missing_and_unknown_keys() -> None:
    # A run recorded through the Python API held only the Runtime's own keys, and tags.
    settings = RunSettings.from_dict({"mode": "react", "tag": "t1", "api_key": "sk-secret"})
    older = {"join_replan": False, "grounding": False, "plan_answers": False}
    assert settings == RunSettings(mode="react", prompt_style="full", similar_examples=0, **older)
    assert "api_key" not in settings.to_dict()
    assert "tag" not in settings.to_dict()
    assert RunSettings.from_dict({"budget": None, "tools": None}) == RunSettings(
        prompt_style="full", similar_examples=0, **older
    )
    assert RunSettings.from_dict({"budget": {"tokens": 7, "later": 1}}).budget == Budget(tokens=7)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"mode": "fast"}, "mode"),
        ({"recovery": "sometimes"}, "recovery"),
        ({"max_replans": "2"}, "max_replans"),
        ({"max_repairs": -1}, "max_repairs"),
        ({"similar_examples": -1}, "similar_examples"),
        ({"similar_examples": 9}, "similar_examples"),
        ({"similar_examples": True}, "similar_examples"),
        ({"max_replans": True}, "max_replans"),
        ({"tool_timeout": "60"}, "tool_timeout"),
        ({"tool_timeout": 0}, "tool_timeout"),
        ({"tool_timeout": -5.0}, "tool_timeout"),
        ({"tool_timeout": float("nan")}, "tool_timeout"),
        ({"streaming": "yes"}, "streaming"),
        ({"model": 3}, "model"),
        ({"tools": "builtin"}, "tools"),
        ({"tools": ["builtin", 1]}, "tools"),
        ({"budget": 5}, "budget"),
        ({"budget": {"llm_calls": "5"}}, "budget.llm_calls"),
        ({"budget": {"wall_s": "soon"}}, "budget.wall_s"),
        ({"budget": {"decomposition_depth": None}}, "budget.decomposition_depth"),
        ({"llm_first_token_timeout": 0}, "llm_first_token_timeout"),
        ({"llm_chunk_timeout": float("nan")}, "llm_chunk_timeout"),
        ({"llm_call_timeout": "600"}, "llm_call_timeout"),
    ],
)
def test_a_bad_value_is_a_user_error_naming_the_field(data: dict[str, Any], field: str) -> None:
    with pytest.raises(UserError, match=rf"^run settings: {field} must be"):
        RunSettings.from_dict(data)


def test_not_an_object_is_a_user_error() -> None:
    with pytest.raises(UserError, match="JSON object"):
        RunSettings.from_dict(["mode"])  # type: ignore[arg-type]


def test_the_runtime_records_typed_settings_of_its_own_arguments() -> None:
    llm = ScriptedLLM(Script.by_purpose(), model="m")  # the model's name is recorded
    runtime = Runtime(
        load_tool_sets(["demo_tools:TOOLS"], None),
        llm,
        mode="react",
        max_replans=1,
        tool_timeout=5.0,
        budget=Budget(tokens=100),
    )
    assert runtime.settings == RunSettings(
        mode="react",
        model="m",
        prompt_style="full",  # the in-process backend's own
        tools=(),  # Python objects: settings cannot name them
        max_replans=1,
        tool_timeout=5.0,
        budget=Budget(tokens=100),
        join_replan=True,  # resolved: on for every backend but the embedded model
        grounding=False,  # resolved: on for the embedded model only
        plan_answers=True,  # resolved: on for every backend
        cache=False,  # no journal, so no plan cache
    )
    custom = Runtime(runtime.tools, llm, recovery=Recovery.none())
    assert custom.settings.recovery == "custom"
    with pytest.raises(UserError, match="recovery policy was built in Python"):
        recovery_policy(custom.settings)
    with pytest.raises(UserError, match="tools were given in Python"):
        Runtime.from_settings(runtime.settings, llm=llm)


def test_from_settings_builds_what_the_settings_describe() -> None:
    settings = dataclasses.replace(
        RunSettings.from_dict(OLDER), model=None, decompose=True, ask=True
    )
    llm = ScriptedLLM(Script.by_purpose(), model="scripted")

    async def nobody(question: Any) -> Any:
        return ("fail", None)

    runtime = Runtime.from_settings(settings, llm=llm, escalate=nobody)
    assert runtime.llm is llm
    assert list(runtime.tools) == ["population", "area", "facts", "divide", "echo"]
    assert runtime.compiled.streaming is False
    assert runtime.compiled.max_replans == 1
    assert runtime.settings.budget == Budget(llm_calls=5)
    assert runtime.escalate is nobody
    # `none` policy: no retries; decompose and ask come last for a failed tool call.
    patterns = runtime.recovery.patterns("tool.transient")
    assert not any(isinstance(p, Retry) for p in patterns)
    assert [type(p) for p in patterns] == [Decompose, Escalate]
    # What it runs as: no journal, so no plan cache.
    assert runtime.settings == dataclasses.replace(settings, model="scripted", cache=False)

    # Without a handler to ask through, nobody is asked.
    quiet = Runtime.from_settings(settings, llm=llm)
    assert [type(p) for p in quiet.recovery.patterns("tool.permanent")] == [Decompose]


def test_recovery_default_keeps_its_retries_before_decompose() -> None:
    policy = recovery_policy(RunSettings(decompose=True))
    retry, decompose = policy.patterns("tool.transient")
    assert isinstance(retry, Retry)
    assert isinstance(decompose, Decompose)
    assert recovery_policy(RunSettings()).patterns("tool.permanent") == ()


def test_make_llm_for_an_endpoint_keeps_the_key_out_of_the_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PLANWEAVE_API_KEY", "sk-secret")
    settings = RunSettings(
        base_url="http://127.0.0.1:9/v1",
        model="m",
        grammar_field="grammar",
        grammar=False,
        tools=("builtin",),
    )
    llm = make_llm(settings)
    assert isinstance(llm, OpenAICompatible)
    assert (llm.base_url, llm.model) == ("http://127.0.0.1:9/v1", "m")
    assert llm.grammar_field is None  # no grammars without `grammar`
    assert "sk-secret" not in repr(Runtime.from_settings(settings, llm=llm).settings.to_dict())


EXAMPLES = 'Question: How big is France?\n1. area("France")\n2. join()\n<END_OF_PLAN>'


def test_a_runtime_takes_its_settings_whole_or_by_the_keywords_it_took_before() -> None:
    llm = ScriptedLLM(Script.by_purpose(), model="m")
    tools = load_tool_sets(["demo_tools:TOOLS"], None)
    knobs: dict[str, Any] = {
        "mode": "react",
        "max_concurrency": 2,
        "react_max_steps": 3,
        "examples": EXAMPLES,
    }
    whole = Runtime(tools, llm, RunSettings(**knobs))
    assert whole.settings == Runtime(tools, llm, **knobs).settings
    assert whole.react.max_steps == 3
    assert whole.planner.examples == EXAMPLES
    assert Runtime(tools, llm, RunSettings(max_replans=5), max_replans=1).settings.max_replans == 1
    with pytest.raises(UserError, match="unknown settings: max_replan"):
        Runtime(tools, llm, max_replan=1)  # type: ignore[call-arg]
    for bad in ({"max_concurrency": 0}, {"react_max_steps": 0}, {"examples": 3}):
        with pytest.raises(UserError, match=f"run settings: {next(iter(bad))} must be"):
            RunSettings(**bad)


def test_max_concurrency_bounds_a_runs_tasks_and_the_journal_keeps_it(tmp_path: Path) -> None:
    seen = {"active": 0, "most": 0}
    meeting: list[anyio.Event] = []  # one per run: each run has its own event loop

    @tool
    async def meet(n: int) -> int:
        """Wait until three calls are in (at most `patience` s); count how many were."""
        if not meeting:
            meeting.append(anyio.Event())
        seen["active"] += 1
        seen["most"] = max(seen["most"], seen["active"])
        if seen["active"] == 3:
            meeting[0].set()
        with anyio.move_on_after(patience):
            await meeting[0].wait()
        seen["active"] -= 1
        return n

    plan = "1. meet(1)\n2. meet(2)\n3. meet(3)\n4. join()\n<END_OF_PLAN>"

    def script() -> ScriptedLLM:
        return ScriptedLLM(Script.by_purpose(planner=[plan], joiner=["Action: Finish(met)"]))

    # One at a time: none meets another, each waits out its patience.
    patience = 0.05
    one = Runtime([meet], script(), RunSettings(max_concurrency=1), journal=tmp_path / "j.db")
    result = one.run("q")
    assert (result.answer, seen["most"]) == ("met", 1)
    assert one.journal is not None
    recorded = RunSettings.from_dict(one.journal.show(result.run_id)["settings"])
    assert recorded.max_concurrency == 1  # so a resumed or served run gets it back
    # By default the three meet.
    patience, seen["most"] = 30.0, 0
    meeting.clear()
    assert Runtime([meet], script()).run("q").answer == "met"
    assert seen["most"] == 3


def test_a_new_llm_backend_is_its_module_and_one_line_in_the_registry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from planweave.llm import registry

    with pytest.raises(UserError, match="llm_backend must be 'auto' or 'endpoint' or 'embedded'"):
        RunSettings(llm_backend="scripted")
    monkeypatch.setitem(registry.BACKENDS, "scripted", "scripted_backend:from_choice")
    settings = RunSettings(llm_backend="scripted", model="mine", tools=("demo_tools:TOOLS",))
    assert RunSettings.from_dict(settings.to_dict()).llm_backend == "scripted"  # journaled
    result = Runtime.from_settings(settings).run("People per km² in the Netherlands?")
    assert result.answer == "About 428 people per km²."
    assert [task.result for task in result.tasks][:3] == [17_900_000, 41_850, 17_900_000 / 41_850]


def test_auto_picks_the_endpoint_only_when_there_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from planweave.llm.local import LocalLLM

    monkeypatch.delenv("PLANWEAVE_BASE_URL", raising=False)
    assert isinstance(make_llm(RunSettings()), LocalLLM)  # not loaded: nothing is read yet
    with_url = RunSettings(base_url="http://127.0.0.1:9/v1", model="m")
    assert isinstance(make_llm(with_url), OpenAICompatible)
    # Named outright, the embedded model is used although an endpoint is configured.
    embedded = make_llm(dataclasses.replace(with_url, llm_backend="embedded", model=None))
    assert isinstance(embedded, LocalLLM)
    monkeypatch.setenv("PLANWEAVE_BASE_URL", "http://127.0.0.1:9/v1")
    assert isinstance(make_llm(RunSettings(model="m")), OpenAICompatible)


def test_a_journals_llm_backend_is_where_it_reaches() -> None:
    from planweave.settings import reach_differences

    own = RunSettings()
    # The same backend spelled two ways is no difference ...
    assert reach_differences(RunSettings(llm_backend="embedded"), own) == {}
    # ... but a journal that names an endpoint where this process has none is one.
    differences = reach_differences(RunSettings(llm_backend="endpoint", model="gpt"), own)
    assert differences["llm_backend"] == "llm_backend: recorded 'endpoint', given 'embedded'"
