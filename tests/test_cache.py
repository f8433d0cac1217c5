"""The plan cache: templates from finished runs, filled for new questions of the same shape, never
for a question that only looks alike; stored in the journal's file; visible in events, --json
and the CLI."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cli_process import invoke_cli
from planweave import (
    Recovery,
    Reply,
    RunFailed,
    Runtime,
    Script,
    ScriptedLLM,
    ScriptedServer,
    ToolFailed,
    tool,
)
from planweave.cache import PlanCache, registry_signature
from planweave.cache.template import NotATemplate, extract
from planweave.events import CacheAdapted, CacheHit, CacheMiss, LLMCallFinished
from planweave.parser import parse_plan
from planweave.store.seal import Sealer
from planweave.tools import ToolRegistry

POPULATION = {"France": 68_000_000, "Belgium": 11_800_000, "Spain": 48_000_000, "Peru": 34_000_000}
AREA = {"France": 551_695, "Belgium": 30_689, "Spain": 505_990, "Peru": 1_285_216}
CAPITAL = {"France": "Paris", "Spain": "Madrid"}
CALLS: list[str] = []


@tool
def population(country: str) -> int:
    """How many people live in a country."""
    CALLS.append(f"population({country})")
    if country not in POPULATION:
        raise ToolFailed(f"no country named {country!r}")
    return POPULATION[country]


@tool
def area(country: str) -> int:
    """A country's area in km²."""
    CALLS.append(f"area({country})")
    return AREA[country]


@tool
def capital(country: str) -> str:
    """A country's capital city."""
    return CAPITAL[country]


@tool
def calculator(expression: str) -> float:
    """Evaluate arithmetic such as "12 * 7" or "round(10 / 4, 2)"."""
    allowed = set("0123456789.+-*/() ,")
    text = expression.replace("round", "")
    if not set(text) <= allowed:
        raise ToolFailed(f"cannot evaluate {expression!r}")
    return float(eval(expression, {"__builtins__": {}, "round": round}))  # only digits and ops


@tool(side_effects=True)
def send_note(text: str) -> str:
    """Send a note to the team."""
    return "sent"


TOOLS = ToolRegistry([population, area, capital, calculator, send_note])
COMPARE = "Which has more people, France or Belgium?"
COMPARE_PLAN = '1. population("France")\n2. population("Belgium")\n3. join()\n<END_OF_PLAN>'


def template(question: str, plan: str, tools: ToolRegistry = TOOLS):  # type: ignore[no-untyped-def]
    return extract(question, parse_plan(plan, tools), tools)


def calls(plan: str) -> list[str]:
    return [t.call_text() for t in parse_plan(plan, TOOLS) if not t.is_join]


# ------------------------------------------------------------------ templates


def test_a_template_fills_the_same_shape_with_other_values() -> None:
    t = template(COMPARE, COMPARE_PLAN)
    assert t.key == "which has more people, ⟦0⟧ or ⟦1⟧"
    fill = t.match("which has more people,   Spain or Peru?")
    assert fill is not None
    assert fill.refused is None
    assert calls(fill.plan(TOOLS)) == ['population("Spain")', 'population("Peru")']


def test_numbers_in_the_question_are_slots_inside_expressions_too() -> None:
    t = template(
        "What is 12 times 7, rounded to 2 places?",
        '1. calculator("round(12 * 7, 2)")\n2. join()',
    )
    fill = t.match("What is 1,250.5 times 3, rounded to 2 places?")
    assert fill is not None
    assert fill.refused is None
    assert calls(fill.plan(TOOLS)) == ['calculator("round(1250.5 * 3, 2)")']


def test_references_and_derived_expressions_are_kept() -> None:
    plan = '1. population("France")\n2. area("France")\n3. calculator("${1} / ${2}")\n4. join()'
    t = template("What is the population density of France?", plan)
    fill = t.match("What is the population density of Peru?")
    assert fill is not None
    assert calls(fill.plan(TOOLS)) == [
        'population("Peru")',
        'area("Peru")',
        'calculator("${1} / ${2}")',
    ]


def test_the_plan_spelling_of_a_value_carries_over() -> None:
    t = template("which has more people, france or belgium", COMPARE_PLAN)
    fill = t.match("which has more people, spain or peru")
    assert fill is not None
    assert calls(fill.plan(TOOLS)) == ['population("Spain")', 'population("Peru")']


@pytest.mark.parametrize(
    "question",
    [
        "Which has more land, Spain or Peru?",  # another word outside the slots
        "Which has more people, Spain or the capital of Peru?",  # a phrase, not a value
        "Which has more people, Spain, Peru or Chile?",  # a list in one slot
        "Which has more people, Spain or Peru or Chile?",
        "Which has fewer people, Spain or Peru?",
        "Which has more people in 2010, Spain or Peru?",
        "Which has more people, Spain or Peru except Lima?",  # words after the last slot
        "Which has more people, Spain or Peru historically?",
        "Which has more people, Spain or Peru's capital?",
        "Which has more people, Spain or capital-of-Peru?",
        "Which has more people, Spain or -?",
    ],
)
def test_a_question_that_only_looks_alike_gets_no_plan(question: str) -> None:
    t = template(COMPARE, COMPARE_PLAN)
    fill = t.match(question)
    assert fill is None or fill.refused is not None


def test_the_population_of_a_capital_is_not_the_population_of_a_country() -> None:
    t = template("What is the population of France?", '1. population("France")\n2. join()')
    fill = t.match("What is the population of the capital of Spain?")
    assert fill is not None
    assert fill.refused is not None
    assert "the" in fill.refused


@pytest.mark.parametrize(
    ("question", "plan", "why"),
    [
        # The model knew the capital: a template would send every country to Paris.
        (
            "How many people live in the capital of France?",
            '1. capital("France")\n2. population("Paris")\n3. join()',
            "Paris",
        ),
        # A number the model looked up is no number of the next question.
        (
            "How many people per km² in France?",
            '1. area("France")\n2. calculator("68000000 / ${1}")\n3. join()',
            "68000000",
        ),
        ("Anything at all?", '1. population("France")\n2. join()', "nothing the question"),
        # A constant that equals the question's number is no slot: 90 minutes is not 90 / 90.
        ("How many hours is 60 minutes?", '1. calculator("60 / 60")\n2. join()', "2 times"),
        # Small facts the model knew, or numbers written so the reader does not see them.
        (
            "What is the population of France per region?",
            '1. population("France")\n2. calculator("${1} / 18")\n3. join()',
            "18",
        ),
        (
            "How dense is France?",
            '1. area("France")\n2. calculator("6.8e7 / ${1}")\n3. join()',
            "'e'",
        ),
        (
            "How dense is France?",
            '1. area("France")\n2. calculator("24 * 1000000 / ${1}")\n3. join()',
            "combines",
        ),
    ],
)
def test_a_plan_with_literals_the_question_does_not_explain_is_no_template(
    question: str, plan: str, why: str
) -> None:
    with pytest.raises(NotATemplate, match=why):
        template(question, plan)


def test_names_with_digits_are_words_not_numbers() -> None:
    @tool
    def country_info(name: str, field: str) -> float:
        """A country's fact: field is population or area_km2."""
        return 1.0

    tools = ToolRegistry([country_info, calculator])
    plan = (
        '1. country_info("France", field="population")\n'
        '2. country_info("France", field="area_km2")\n'
        '3. calculator("${1} / ${2}")\n4. join()'
    )
    t = template("How many people per square kilometre live in France?", plan, tools)
    fill = t.match("How many people per square kilometre live in Peru?")
    assert fill is not None
    assert [x.call_text() for x in parse_plan(fill.plan(tools), tools)][1] == (
        'country_info("Peru", field="area_km2")'
    )


def test_abbreviations_of_the_question_words_may_stay() -> None:
    @tool
    def convert(value: float, unit: str, to: str) -> float:
        """Convert between units."""
        return value

    tools = ToolRegistry([convert])
    t = template("How many miles is 5 kilometers?", '1. convert(5, "km", "mi")\n2. join()', tools)
    fill = t.match("How many miles is 42 kilometers?")
    assert fill is not None
    assert next(x.call_text() for x in parse_plan(fill.plan(tools), tools)) == (
        'convert(42, "km", "mi")'
    )
    assert t.match("How many miles is 42 feet?") is None


def test_matching_does_not_backtrack_on_a_hostile_question() -> None:
    plan = "\n".join(f'{i + 1}. population("C{i}")' for i in range(12)) + "\n13. join()"
    question = "Sum " + " or ".join(f"C{i}" for i in range(12))
    t = template(question, plan)
    hostile = "Sum " + " or ".join(["x"] * 1500)
    fill = t.match(hostile)
    assert fill is None or fill.refused is not None


# ------------------------------------------------------------------ runs


def runtime(where: Path | str, script: Script, **kwargs: object) -> Runtime:
    """A runtime journaling in `where`: a folder's runs.db, or a journal (`journal_db`)."""
    journal = where / "runs.db" if isinstance(where, Path) else where
    return Runtime(TOOLS, ScriptedLLM(script), journal=journal, **kwargs)  # type: ignore[arg-type]


def test_a_second_question_of_the_same_shape_skips_the_planner(journal_db: str) -> None:
    script = Script.by_purpose(
        planner=[COMPARE_PLAN],
        joiner=["Action: Finish(France)", "Action: Finish(Spain)"],
    )
    rt = runtime(journal_db, script)
    first = rt.run(COMPARE)
    assert first.cache == {
        "hit": False,
        "template_id": None,
        "adapted": False,
        "tokens_saved": 0,
        "reason": "no template of this question's shape",
    }
    CALLS.clear()
    second = rt.run("Which has more people, Spain or Peru?")
    assert second.answer == "Spain"
    assert script.purposes == ["planner", "joiner", "joiner"]  # no planner call the second time
    assert sorted(CALLS) == ["population(Peru)", "population(Spain)"]
    assert second.llm.calls == 1
    hit = [e for e in second.events if isinstance(e, CacheHit)]
    assert len(hit) == 1
    assert second.cache is not None
    assert second.cache["hit"] is True
    assert second.cache["template_id"] == hit[0].template_id
    planned = [e for e in first.events if isinstance(e, LLMCallFinished) and e.purpose == "planner"]
    assert second.cache["tokens_saved"] == planned[0].prompt_tokens + planned[0].completion_tokens
    # The journal shows what the run reported.
    shown = rt.journal.show(second.run_id)  # type: ignore[union-attr]
    assert shown["cache"] == second.cache
    assert {k: shown[k] for k in second.to_dict()} == second.to_dict()


def test_a_near_miss_is_planned_normally(tmp_path: Path) -> None:
    land = '1. area("Spain")\n2. area("Peru")\n3. join()\n<END_OF_PLAN>'
    script = Script.by_purpose(
        planner=[COMPARE_PLAN, land], joiner=["Action: Finish(France)", "Action: Finish(Peru)"]
    )
    rt = runtime(tmp_path, script)
    rt.run(COMPARE)
    CALLS.clear()
    result = rt.run("Which has more land, Spain or Peru?")
    assert script.purposes == ["planner", "joiner", "planner", "joiner"]
    assert sorted(CALLS) == ["area(Peru)", "area(Spain)"]
    assert [e for e in result.events if isinstance(e, CacheMiss)]


def test_a_template_that_keeps_failing_is_evicted(journal_db: str) -> None:
    script = Script.by_purpose(
        planner=[COMPARE_PLAN, COMPARE_PLAN.replace("France", "Spain").replace("Belgium", "Peru")],
        joiner=["Action: Finish(France)"] * 2 + ["Action: Finish(unknown)"] * 3,
    )
    rt = runtime(journal_db, script, max_replans=0)
    rt.run(COMPARE)
    cache = rt.cache
    assert cache is not None
    assert len(cache.templates()) == 1
    # Atlantis fails: the template served two bad runs in a row and is gone.
    for _ in range(2):
        served = rt.run("Which has more people, Atlantis or Peru?")
        assert served.cache is not None
        assert served.cache["hit"] is True
    assert cache.templates() == []
    # The next question of the shape is planned again, and makes a template again.
    rt.run("Which has more people, Spain or Peru?")
    assert script.purposes.count("planner") == 2
    assert len(cache.templates()) == 1


def test_a_good_run_clears_a_templates_failures(journal_db: str) -> None:
    script = Script.by_purpose(planner=[COMPARE_PLAN], joiner=["Action: Finish(x)"] * 4)
    rt = runtime(journal_db, script, max_replans=0)
    rt.run(COMPARE)
    rt.run("Which has more people, Atlantis or Peru?")
    rt.run("Which has more people, Spain or Peru?")
    rt.run("Which has more people, Atlantis or Peru?")
    (stored,) = rt.cache.templates()  # type: ignore[union-attr]
    assert (stored["hits"], stored["good"], stored["bad"]) == (3, 1, 1)


def test_runs_with_side_effects_make_no_template_unless_asked(tmp_path: Path) -> None:
    plan = '1. send_note("hello France")\n2. join()'
    question = "Send the team a note: hello France"
    script = Script.by_purpose(planner=[plan, plan], joiner=["Action: Finish(sent)"] * 2)
    rt = runtime(tmp_path, script)
    rt.run(question)
    assert rt.cache is not None
    assert rt.cache.templates() == []
    opted = runtime(tmp_path, script, cache=PlanCache(tmp_path / "runs.db", side_effects=True))
    opted.run(question)
    assert len(opted.cache.templates()) == 1  # type: ignore[union-attr]


def test_a_changed_tool_invalidates_its_templates(tmp_path: Path) -> None:
    script = Script.by_purpose(planner=[COMPARE_PLAN] * 2, joiner=["Action: Finish(x)"] * 2)
    runtime(tmp_path, script).run(COMPARE)

    @tool
    def population(country: str) -> int:  # same name, another description
        """How many people live in a country, in thousands."""
        return POPULATION[country] // 1000

    changed = ToolRegistry([population, area, capital, calculator, send_note])
    assert registry_signature(changed) != registry_signature(TOOLS)
    rt = Runtime(changed, ScriptedLLM(script), journal=tmp_path / "runs.db")
    result = rt.run("Which has more people, Spain or Peru?")
    assert result.cache is not None
    assert result.cache["hit"] is False
    assert script.purposes.count("planner") == 2


def test_no_cache_means_no_lookup_and_no_template(tmp_path: Path) -> None:
    script = Script.by_purpose(planner=[COMPARE_PLAN] * 2, joiner=["Action: Finish(x)"] * 2)
    rt = runtime(tmp_path, script, cache=False)
    rt.run(COMPARE)
    result = rt.run("Which has more people, Spain or Peru?")
    assert result.cache is None
    assert "cache" not in result.to_dict()
    assert script.purposes.count("planner") == 2
    assert PlanCache(tmp_path / "runs.db").templates() == []


def test_a_run_served_from_the_cache_resumes_with_the_same_plan(tmp_path: Path) -> None:
    script = Script.by_purpose(
        planner=[COMPARE_PLAN],
        joiner=["Action: Finish(France)", Reply(status=500), "Action: Finish(Spain)"],
    )
    rt = runtime(tmp_path, script, recovery=Recovery.none())
    rt.run(COMPARE)
    with pytest.raises(RunFailed) as failed:
        rt.run("Which has more people, Spain or Peru?")
    assert failed.value.result.cache is not None
    assert failed.value.result.cache["hit"] is True
    CALLS.clear()
    resumed = rt.resume(failed.value.result.run_id)
    assert resumed.answer == "Spain"
    assert script.purposes == ["planner", "joiner", "joiner", "joiner"]  # no new plan
    assert CALLS == []  # both lookups were recorded and are reused
    assert resumed.cache == failed.value.result.cache
    shown = rt.journal.show(resumed.run_id)  # type: ignore[union-attr]
    assert shown["cache"] == resumed.cache


def edit_sealed(tmp_path: Path, sql: str, *params: object) -> None:
    """Edit the templates and seal them again with this user's key: a row only a holder of the
    key (or a bug) could leave, for the checks behind the seal (`test_cache_seal`)."""
    sealer = Sealer.load()
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        conn.execute(sql, params)
        conn.row_factory = sqlite3.Row
        for row in conn.execute("SELECT rowid AS rowid_, * FROM plan_templates").fetchall():
            found = dict(row)
            rowid = found.pop("rowid_")
            mac = sealer.seal("plan_templates", found)
            conn.execute("UPDATE plan_templates SET mac = ? WHERE rowid = ?", (mac, rowid))


def test_a_damaged_template_is_a_miss_not_a_crash(tmp_path: Path) -> None:
    script = Script.by_purpose(planner=[COMPARE_PLAN] * 4, joiner=["Action: Finish(x)"] * 4)
    rt = runtime(tmp_path, script)
    rt.run(COMPARE)
    edit_sealed(tmp_path, "UPDATE plan_templates SET plan = 'x = __import__(\"os\")', slots = '{'")
    result = rt.run("Which has more people, Spain or Peru?")
    assert result.answer == "x"
    assert result.cache is not None
    assert result.cache["hit"] is False
    edit_sealed(
        tmp_path,
        "UPDATE plan_templates SET slots = ?, plan = ?",
        json.dumps([{"kind": "text", "example": "France"}] * 2),
        '1. no_such_tool("⟦0⟧")\n2. join()',
    )
    again = rt.run("Which has more people, Spain or Peru?")
    assert again.cache is not None
    assert again.cache["hit"] is False
    assert "not valid" in again.cache["reason"]
    # Counted as a failure of the template: the second one evicts it, and a good run may
    # make a template of the shape again.
    rt.run(COMPARE)
    (fresh,) = rt.cache.templates()  # type: ignore[union-attr]
    assert fresh["plan"].startswith('1. population("⟦0⟧")')


# ------------------------------------------------------------------ CLI


def test_the_cli_reuses_plans_and_lists_shows_and_clears_templates(journal_db: str) -> None:
    script = Script.by_purpose(
        planner=[COMPARE_PLAN], joiner=["Action: Finish(France)", "Action: Finish(Spain)"]
    )
    env = {"PLANWEAVE_DB": journal_db}
    base = ["--tools", "test_cache:TOOLS", "--model", "m"]
    with ScriptedServer(script) as server:
        first = invoke_cli("run", COMPARE, *base, "--base-url", server.base_url, "--json", env=env)
        assert first.returncode == 0, first.stderr
        second = invoke_cli(
            "run", "Which has more people, Spain or Peru?", *base, "--base-url",
            server.base_url, env=env,
        )  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "Spain"
    assert "plan from the cache (template" in second.stderr
    assert script.purposes == ["planner", "joiner", "joiner"]

    listed = json.loads(invoke_cli("cache", "list", "--json", env=env).stdout)
    assert [t["key"] for t in listed] == ["which has more people, ⟦0⟧ or ⟦1⟧"]
    assert listed[0]["hits"] == 1
    shown = invoke_cli("cache", "show", listed[0]["id"][:6], env=env)
    assert shown.returncode == 0, shown.stderr
    assert "which has more people, {0} or {1}" in shown.stdout
    assert 'population("⟦0⟧")' in shown.stdout
    assert invoke_cli("cache", "show", "zzz", env=env).returncode == 2
    cleared = invoke_cli("cache", "clear", "--json", env=env)
    assert json.loads(cleared.stdout) == {"removed": 1}
    assert json.loads(invoke_cli("cache", "list", "--json", env=env).stdout) == []


def test_the_cli_can_turn_the_cache_off(tmp_path: Path) -> None:
    script = Script.by_purpose(planner=[COMPARE_PLAN] * 2, joiner=["Action: Finish(x)"] * 2)
    env = {"PLANWEAVE_DB": str(tmp_path / "runs.db")}
    with ScriptedServer(script) as server:
        for question in (COMPARE, "Which has more people, Spain or Peru?"):
            proc = invoke_cli(
                "run", question, "--tools", "test_cache:TOOLS", "--model", "m", "--base-url",
                server.base_url, "--no-cache", "--json", env=env,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stderr
            assert "cache" not in json.loads(proc.stdout)
    assert script.purposes.count("planner") == 2


# ------------------------------------------------------------------ adaptation

LAND_PLAN = '1. area("Spain")\n2. area("Peru")\n3. join()\n<END_OF_PLAN>'


def test_a_question_worded_like_a_template_is_planned_with_it_as_the_example(
    tmp_path: Path,
) -> None:
    script = Script.by_purpose(
        planner=[COMPARE_PLAN, LAND_PLAN], joiner=["Action: Finish(France)", "Action: Finish(Peru)"]
    )
    cache = PlanCache(tmp_path / "runs.db", adapt=True)
    rt = Runtime(TOOLS, ScriptedLLM(script), journal=cache.journal, cache=cache)
    rt.run(COMPARE)
    CALLS.clear()
    result = rt.run("Which has more land, Spain or Peru?")
    assert result.answer == "Peru"
    assert sorted(CALLS) == ["area(Peru)", "area(Spain)"]  # the planner's plan, not the template's
    adapted = [e for e in result.events if isinstance(e, CacheAdapted)]
    assert len(adapted) == 1
    assert result.cache == adapted[0].summary()
    assert result.cache["adapted"] is True
    assert result.cache["hit"] is False
    # The planner saw the template as the one worked example: its slots as placeholders, never
    # the earlier question's values (it may be another user's).
    messages = script.requests[2]
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1].content == "Question: which has more people, <A> or <B>"
    assert 'population("<A>")' in messages[2].content
    assert "France" not in str(adapted[0].to_dict())
    assert "Examples:" not in messages[0].content
    # The adapted run went well: its own shape is a template now.
    assert {t["key"] for t in cache.templates()} == {
        "which has more people, ⟦0⟧ or ⟦1⟧",
        "which has more land, ⟦0⟧ or ⟦1⟧",
    }


def test_adaptation_is_off_unless_asked_and_needs_a_similar_wording(tmp_path: Path) -> None:
    script = Script.by_purpose(
        planner=[COMPARE_PLAN, LAND_PLAN, COMPARE_PLAN, LAND_PLAN], joiner=["Action: Finish(x)"] * 4
    )
    rt = runtime(tmp_path, script)
    rt.run(COMPARE)
    off = rt.run("Which has more land, Spain or Peru?")
    assert off.cache is not None
    assert off.cache["adapted"] is False
    cache = PlanCache(tmp_path / "other.db", adapt=True)
    rt = Runtime(TOOLS, ScriptedLLM(script), journal=cache.journal, cache=cache)
    rt.run(COMPARE)
    unlike = rt.run("Tell me the areas of two countries: Spain and Peru")
    assert unlike.cache is not None
    assert unlike.cache["adapted"] is False


def test_an_adapted_run_resumes_with_the_same_example(tmp_path: Path) -> None:
    script = Script.by_purpose(
        planner=[COMPARE_PLAN, LAND_PLAN],
        joiner=["Action: Finish(France)", Reply(status=500), "Action: Finish(Peru)"],
    )
    cache = PlanCache(tmp_path / "runs.db", adapt=True)
    rt = Runtime(
        TOOLS, ScriptedLLM(script), journal=cache.journal, cache=cache, recovery=Recovery.none()
    )
    rt.run(COMPARE)
    with pytest.raises(RunFailed) as failed:
        rt.run("Which has more land, Spain or Peru?")
    resumed = rt.resume(failed.value.result.run_id)
    assert resumed.answer == "Peru"
    # The adapted planner call was recorded and replays: the same request, rebuilt.
    assert script.purposes == ["planner", "joiner", "planner", "joiner", "joiner"]
    assert resumed.cache == failed.value.result.cache


def test_a_huge_number_in_a_plan_is_no_template_and_no_crash() -> None:
    huge = "9" * 400
    with pytest.raises(NotATemplate):
        template(f"What is {huge} times 7 in France?", f'1. calculator("{huge} * 7")\n2. join()')
    with pytest.raises(NotATemplate):
        template(
            "What is the area of France?", f'1. area("France")\n2. calculator("{huge}")\n3. join()'
        )


def test_an_odd_value_does_not_count_against_a_sound_template(tmp_path: Path) -> None:
    @tool
    def stock(symbol: str, year: int) -> float:
        """A stock's closing price in a year."""
        return 1.0

    tools = ToolRegistry([stock])
    plan = '1. stock("MSFT", 2021)\n2. join()'
    script = Script.by_purpose(planner=[plan] * 3, joiner=["Action: Finish(1.0)"] * 4)
    rt = Runtime(tools, ScriptedLLM(script), journal=tmp_path / "runs.db")
    rt.run("What was the closing price of MSFT in 2021?")
    for _ in range(2):
        odd = rt.run("What was the closing price of MSFT in 2020.5?")
        assert odd.cache is not None
        assert "not valid" in odd.cache["reason"]
    assert len(rt.cache.templates()) == 1  # type: ignore[union-attr]
    assert rt.run("What was the closing price of MSFT in 2019?").cache["hit"] is True  # type: ignore[index]


def test_a_question_holding_a_secret_makes_no_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_API_KEY", "sk-very-secret-value-123")
    plan = '1. population("France")\n2. join()'
    script = Script.by_purpose(planner=[plan], joiner=["Action: Finish(x)"])
    rt = runtime(tmp_path, script)
    rt.run("How many people live in France? my key is sk-very-secret-value-123")
    assert rt.cache.templates() == []  # type: ignore[union-attr]


def test_a_sealed_row_calling_a_tool_with_side_effects_is_still_refused(tmp_path: Path) -> None:
    script = Script.by_purpose(planner=[COMPARE_PLAN] * 2, joiner=["Action: Finish(x)"] * 2)
    rt = runtime(tmp_path, script)
    rt.run(COMPARE)
    edit_sealed(tmp_path, "UPDATE plan_templates SET plan = ?", '1. send_note("⟦0⟧")\n2. join()')
    result = rt.run("Which has more people, Spain or Peru?")
    assert result.cache is not None
    assert result.cache["reason"] == "the cached plan calls a tool with side effects"
    assert "send_note" not in [t.task.tool for t in result.tasks]
