"""The plan cache's templates are sealed like every other journal record (issue 28): a template
whose seal does not check under this user's journal key (edited in the file, or stored before
templates were sealed) is never run, nor shown to the planner as an example; the run is planned
as if the cache had nothing, and says so.  Real runs on a real SQLite journal, a scripted LLM,
tools that record what they were called with."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from cli_process import invoke_cli
from planweave import Runtime, Script, ScriptedLLM, ScriptedServer, tool
from planweave.cache import PlanCache, registry_signature
from planweave.events import CacheAdapted, CacheHit, CacheMiss
from planweave.store.schema import MIGRATIONS
from planweave.store.seal import Sealer
from planweave.tools import ToolRegistry

POPULATION = {"France": 68_000_000, "Belgium": 11_800_000, "Spain": 48_000_000, "Peru": 34_000_000}
CALLS: list[str] = []


@tool
def population(country: str) -> int:
    """How many people live in a country."""
    CALLS.append(f"population({country})")
    return POPULATION[country]


@tool
def area(country: str) -> int:
    """A country's area in km²."""
    CALLS.append(f"area({country})")
    return 1000


@tool(side_effects=True)
def send_note(text: str) -> str:
    """Send a note to the team."""
    CALLS.append(f"send_note({text})")
    return "sent"


TOOLS = ToolRegistry([population, area, send_note])
READING = ToolRegistry([population, area])
COMPARE = "Which has more people, France or Belgium?"
SECOND = "Which has more people, Spain or Peru?"
PLAN = '1. population("France")\n2. population("Belgium")\n3. join()\n<END_OF_PLAN>'
SECOND_PLAN = '1. population("Spain")\n2. population("Peru")\n3. join()\n<END_OF_PLAN>'
FORGED = {
    # A side-effecting call slipped in front of the honest ones (a cache that allows side effects).
    "a side effect": '1. send_note("FORGED ⟦0⟧")\n2. population("⟦0⟧")\n3. population("⟦1⟧")\n'
    "4. join()",
    # Another tool than the one planned: no side effect, so nothing but the seal refuses it.
    "another tool": '1. area("⟦0⟧")\n2. area("⟦1⟧")\n3. join()',
}


@pytest.fixture(autouse=True)
def _key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANWEAVE_JOURNAL_KEY_FILE", str(tmp_path / "keys" / "journal.key"))
    CALLS.clear()


def runtime(tmp_path: Path, script: Script, **options: bool) -> Runtime:
    cache = PlanCache(tmp_path / "runs.db", **options)
    return Runtime(TOOLS, ScriptedLLM(script), journal=cache.journal, cache=cache)


def edit(tmp_path: Path, sql: str, *params: object) -> None:
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        assert conn.execute(sql, params).rowcount == 1


def learned(tmp_path: Path, script: Script, **cache: bool) -> Runtime:
    """A runtime whose cache holds the template of COMPARE, learned from a good run."""
    rt = runtime(tmp_path, script, **cache)
    rt.run(COMPARE)
    assert rt.cache is not None
    assert [t["verified"] for t in rt.cache.templates()] == [True]
    CALLS.clear()
    return rt


@pytest.mark.parametrize("forgery", sorted(FORGED))
def test_a_forged_plan_in_a_template_is_never_run(
    tmp_path: Path, forgery: str, caplog: pytest.LogCaptureFixture
) -> None:
    script = Script.by_purpose(
        planner=[PLAN, SECOND_PLAN], joiner=["Action: Finish(France)", "Action: Finish(Spain)"]
    )
    rt = learned(tmp_path, script, side_effects=True)
    assert rt.cache is not None
    (template,) = rt.cache.templates()
    edit(tmp_path, "UPDATE plan_templates SET plan = ?", FORGED[forgery])

    with caplog.at_level(logging.WARNING, logger="planweave.cache"):
        result = rt.run(SECOND)
    assert result.answer == "Spain"
    assert sorted(CALLS) == ["population(Peru)", "population(Spain)"]  # the planner's plan
    assert script.purposes == ["planner", "joiner", "planner", "joiner"]
    assert not [e for e in result.events if isinstance(e, CacheHit)]
    (miss,) = [e for e in result.events if isinstance(e, CacheMiss)]
    assert miss.template_id == template["id"]
    assert miss.reason.startswith("the template this question reads as failed verification")
    # Said once in the log too, by id: nothing of the row's text.
    (logged,) = [r.getMessage() for r in caplog.records if "failed verification" in r.getMessage()]
    assert template["id"] in logged
    assert FORGED[forgery].split("\n")[0][3:] not in logged
    assert result.cache is not None
    assert result.cache["hit"] is False
    assert "failed verification" in result.cache["reason"]
    # The journal keeps the run's own record of it, which is sealed.
    shown = rt.journal.show(result.run_id)  # type: ignore[union-attr]
    assert shown["cache"] == result.cache


@pytest.mark.parametrize(
    "attack",
    [
        "UPDATE plan_templates SET mac = NULL",
        "UPDATE plan_templates SET mac = iif(substr(mac, 1, 1) = '0', '1', '0') || substr(mac, 2)",
        "UPDATE plan_templates SET question = 'Which has more people, A or B?'",
        "UPDATE plan_templates SET source_run = 'someone else'",
        "UPDATE plan_templates SET tokens = 1",
    ],
)
def test_a_template_whose_seal_does_not_check_is_ignored(tmp_path: Path, attack: str) -> None:
    script = Script.by_purpose(planner=[PLAN, SECOND_PLAN], joiner=["Action: Finish(x)"] * 2)
    rt = learned(tmp_path, script)
    edit(tmp_path, attack)
    assert rt.cache is not None
    assert [t["verified"] for t in rt.cache.templates()] == [False]

    result = rt.run(SECOND)
    assert script.purposes == ["planner", "joiner", "planner", "joiner"]
    assert result.cache is not None
    assert result.cache["hit"] is False
    assert "failed verification" in result.cache["reason"]


def test_a_template_moved_to_another_tool_registry_is_ignored(tmp_path: Path) -> None:
    # Made with the read-only tools, put under a registry that also sends notes.
    script = Script.by_purpose(planner=[PLAN, SECOND_PLAN], joiner=["Action: Finish(x)"] * 2)
    cache = PlanCache(tmp_path / "runs.db")
    Runtime(READING, ScriptedLLM(script), journal=cache.journal, cache=cache).run(COMPARE)
    edit(tmp_path, "UPDATE plan_templates SET tools = ?", registry_signature(TOOLS))
    CALLS.clear()
    result = Runtime(TOOLS, ScriptedLLM(script), journal=cache.journal, cache=cache).run(SECOND)
    assert script.purposes == ["planner", "joiner", "planner", "joiner"]
    assert result.cache is not None
    assert "failed verification" in result.cache["reason"]


def test_an_honest_template_still_saves_the_planner_call(tmp_path: Path) -> None:
    script = Script.by_purpose(planner=[PLAN], joiner=["Action: Finish(France)"] * 3)
    rt = learned(tmp_path, script)
    first = rt.run(SECOND)
    again = rt.run("Which has more people, Peru or France?")
    assert script.purposes == ["planner", "joiner", "joiner", "joiner"]  # one planner call
    assert [e.template_id for e in first.events if isinstance(e, CacheHit)] == [
        e.template_id for e in again.events if isinstance(e, CacheHit)
    ]
    assert sorted(CALLS) == sorted(
        ["population(Spain)", "population(Peru)", "population(Peru)", "population(France)"]
    )
    # The counters change on every hit without a new seal: they steer order and eviction only.
    assert rt.cache is not None
    (stored,) = rt.cache.templates()
    assert (stored["hits"], stored["good"], stored["verified"]) == (2, 2, True)


def test_an_unverified_template_is_replaced_when_its_shape_is_learned_again(
    tmp_path: Path,
) -> None:
    script = Script.by_purpose(planner=[PLAN, SECOND_PLAN], joiner=["Action: Finish(x)"] * 3)
    rt = learned(tmp_path, script)
    edit(tmp_path, "UPDATE plan_templates SET plan = ?", FORGED["another tool"])
    rt.run(SECOND)  # planned, went well: its template takes the forged one's place
    assert rt.cache is not None
    (stored,) = rt.cache.templates()
    assert stored["verified"] is True
    assert stored["plan"].startswith('1. population("⟦0⟧")')
    CALLS.clear()
    rt.run("Which has more people, France or Peru?")
    assert script.purposes == ["planner", "joiner", "planner", "joiner", "joiner"]
    assert sorted(CALLS) == ["population(France)", "population(Peru)"]


def test_an_unverified_template_is_never_shown_to_the_planner(tmp_path: Path) -> None:
    script = Script.by_purpose(
        planner=[PLAN, '1. area("Spain")\n2. join()\n<END_OF_PLAN>'],
        joiner=["Action: Finish(x)"] * 2,
    )
    rt = learned(tmp_path, script, adapt=True)
    question = "Which has more people in total, Spain or Peru?"
    assert rt.cache is not None
    assert isinstance(rt.cache.lookup(question, TOOLS), CacheAdapted)  # while it is honest
    edit(tmp_path, "UPDATE plan_templates SET plan = ?", FORGED["another tool"])
    result = rt.run(question)
    assert not [e for e in result.events if isinstance(e, CacheAdapted)]
    planner = script.requests[2]
    assert [m.role for m in planner] == ["system", "user"]  # no worked example
    assert 'area("<A>")' not in str([m.content for m in planner])


def test_templates_from_before_seals_are_unverified_after_the_migration(tmp_path: Path) -> None:
    script = Script.by_purpose(planner=[PLAN, SECOND_PLAN], joiner=["Action: Finish(x)"] * 2)
    rt = learned(tmp_path, script)
    rt.journal.close()  # type: ignore[union-attr]
    # The file as the schema before the templates' seals left it: templates without a seal
    # column (and nothing of the migrations after that one).
    sealed = MIGRATIONS.index(["ALTER TABLE plan_templates ADD COLUMN mac TEXT"])
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        conn.execute("ALTER TABLE plan_templates DROP COLUMN mac")
        conn.execute("DROP INDEX runs_by_thread")  # migration 8's
        conn.execute("DROP INDEX runs_by_status")  # migration 9's: leases
        conn.execute("ALTER TABLE runs DROP COLUMN holder")
        conn.execute("ALTER TABLE runs DROP COLUMN lease_until")
        conn.execute("DROP TABLE named_plans")  # migration 10's
        conn.execute("DROP INDEX runs_by_user")  # migration 11's
        conn.execute(f"PRAGMA user_version={sealed}")
    rt = runtime(tmp_path, script)
    assert rt.cache is not None
    assert [t["verified"] for t in rt.cache.templates()] == [False]
    result = rt.run(SECOND)
    assert result.cache is not None
    assert "failed verification" in result.cache["reason"]
    assert script.purposes == ["planner", "joiner", "planner", "joiner"]


def test_the_cli_shows_unverified_templates_as_such(tmp_path: Path) -> None:
    script = Script.by_purpose(planner=[PLAN] * 2, joiner=["Action: Finish(x)"] * 2)
    learned(tmp_path, script)
    env = {
        "PLANWEAVE_DB": str(tmp_path / "runs.db"),
        "PLANWEAVE_JOURNAL_KEY_FILE": str(tmp_path / "keys" / "journal.key"),
    }
    listed = json.loads(invoke_cli("cache", "list", "--json", env=env).stdout)
    assert [t["verified"] for t in listed] == [True]
    assert "unverified" not in invoke_cli("cache", "list", env=env).stdout
    edit(tmp_path, "UPDATE plan_templates SET plan = ?", FORGED["another tool"])
    listed = json.loads(invoke_cli("cache", "list", "--json", env=env).stdout)
    assert [t["verified"] for t in listed] == [False]
    table = invoke_cli("cache", "list", env=env)
    assert table.returncode == 0, table.stderr
    assert "unverified" in table.stdout
    shown = invoke_cli("cache", "show", listed[0]["id"][:6], env=env)
    assert shown.returncode == 0, shown.stderr
    assert "not verified" in shown.stdout
    # Another user's key (or none yet) verifies nothing, and that is no error.
    other = {**env, "PLANWEAVE_JOURNAL_KEY_FILE": str(tmp_path / "other" / "journal.key")}
    edit(tmp_path, "UPDATE plan_templates SET plan = ?", listed[0]["plan"])
    assert [
        t["verified"] for t in json.loads(invoke_cli("cache", "list", "--json", env=other).stdout)
    ] == [False]
    with ScriptedServer(
        Script.by_purpose(planner=[SECOND_PLAN], joiner=["Action: Finish(x)"])
    ) as srv:
        ran = invoke_cli(
            "run", SECOND, "--tools", "test_cache_seal:TOOLS", "--model", "m",
            "--base-url", srv.base_url, "--json", env=other,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "failed verification" in json.loads(ran.stdout)["cache"]["reason"]


def test_sealing_covers_what_a_hit_runs_and_shows() -> None:
    sealer = Sealer(b"k" * 32)
    row = {
        "tools": "t", "id": "i", "key": "k ⟦0⟧", "slots": "[]", "plan": "1. join()",
        "question": "q", "source_run": "r", "tokens": 3, "created": 1.5,
        "used": 2.0, "hits": 0, "good": 0, "bad": 0,
    }  # fmt: skip
    mac = sealer.seal("plan_templates", row)
    for column in ("tools", "id", "key", "slots", "plan", "question", "source_run", "tokens"):
        assert sealer.seal("plan_templates", {**row, column: "x"}) != mac, column
    for column in ("used", "hits", "good", "bad"):
        assert sealer.seal("plan_templates", {**row, column: 9}) == mac, column
    assert sealer.seal("tasks", row) != sealer.seal("plan_templates", row)
