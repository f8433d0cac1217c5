"""Named plans (issue 33): a runbook compiled by a scripted planner into a plan with typed
parameters, stored with versions on both journals, edited as text, and run with its values bound
as data, with no planner call (the script's planner would answer otherwise); wrong values refused
precisely; a run killed in the middle resumed without the planner; the CLI."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from branch_tools import FINISH, TOOLS
from cli_process import invoke_cli, run_cli
from gbnf import Grammar
from planweave import Journal, Reply, Runtime, Script, ScriptedLLM, ScriptedServer, UserError
from planweave.llm.base import Message, Purpose
from planweave.runbooks import NamedPlans, plan_text
from planweave.runbooks.params import bind, placeholders

RUNBOOK = """# Free disk on a database host
1. Check the disk usage of <host>.
2. If it is over <limit:int> percent, rotate the logs.
3. Otherwise tell the on-call person that <host> is fine.
4. If the logs were rotated, write a report.
"""
PLAN = """Thought: Rotate only over the limit.
1. disk_usage({host})
2. rotate_logs({host}) if ${1.disk_pct} > {limit}
3. notify("{host} disk ok") if ${1.disk_pct} <= {limit}
4. report("{host}: ${2}") if $2 != None
5. join()
<END_OF_PLAN>"""
NOT_A_PLAN = "1. unknown_tool({host})\n2. join()\n<END_OF_PLAN>"


@pytest.fixture(autouse=True)
def _ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANWEAVE_TEST_LEDGER", str(tmp_path / "ledger.txt"))


def _ran(tmp: Path) -> Counter[str]:
    ledger = tmp / "ledger.txt"
    return Counter(ledger.read_text().splitlines() if ledger.exists() else [])


def _runtime(journal: str | Path, planner: list[str]) -> tuple[Runtime, Script]:
    script = Script.by_purpose(planner=planner, joiner=[FINISH] * 5)
    return Runtime(TOOLS, ScriptedLLM(script), journal=journal, cache=False), script


def test_a_runbook_compiles_is_stored_with_versions_and_runs_without_the_planner(
    journal_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, script = _runtime(journal_db, [PLAN])
    compiled = rt.compile_runbook(RUNBOOK, name="free-disk")
    assert (compiled.name, compiled.version) == ("free-disk", 1)
    assert compiled.params == {"host": "str", "limit": "int"}  # int declared, host by use
    assert compiled.source == RUNBOOK
    assert "{host}" in compiled.plan
    assert compiled.title == "Free disk on a database host"
    # The planner saw the runbook and its parameters, once.
    assert script.purposes == ["planner"]
    assert "{host}, {limit}" in script.requests[0][0].content
    assert script.requests[0][-1].content.endswith(RUNBOOK)

    monkeypatch.setenv("PLANWEAVE_TEST_DISK_PCT", "95")
    result = rt.run_plan("free-disk", host="db-3", limit="90")  # text reads as its type
    assert result.status == "finished", result.error
    assert script.purposes == ["planner", "joiner"]  # no planner call for the run
    assert {r.task.id: r.status.value for r in result.tasks} == {
        1: "done",
        2: "done",
        3: "skipped",
        4: "done",
    }
    assert _ran(tmp_path) == Counter(
        ["disk_usage db-3", "rotate_logs db-3", "report db-3: rotated db-3"]
    )
    assert result.question == (
        'Free disk on a database host (plan free-disk v1; host="db-3", limit=90): what was '
        "found, and what was done?"
    )
    # What a resume starts from: the bound plan, recorded with the run.
    started = Journal(journal_db).cache_decision(result.run_id)
    assert started is not None
    assert started["kind"] == "named_plan"
    assert (started["name"], started["version"]) == ("free-disk", 1)
    assert started["params"] == {"host": "db-3", "limit": 90}
    assert '1. disk_usage("db-3")\n2. rotate_logs("db-3") if ${1.disk_pct} > 90' in started["plan"]

    # The other side, with another value; then an edited version.
    monkeypatch.setenv("PLANWEAVE_TEST_DISK_PCT", "85")
    other = rt.run_plan("free-disk", host="db-4", limit=90)
    assert {r.task.id: r.status.value for r in other.tasks}[3] == "done"
    assert _ran(tmp_path)["notify db-4 disk ok"] == 1
    edited = rt.save_plan("free-disk", PLAN.replace("> {limit}", ">= {limit}"))
    assert (edited.version, edited.params, edited.source) == (2, compiled.params, RUNBOOK)
    assert [(p.name, p.version) for p in rt.named_plans()] == [("free-disk", 2)]
    assert rt.named_plan("free-disk", version=1).plan == compiled.plan
    assert ">= {limit}" in rt.named_plan("free-disk").plan
    assert script.purposes.count("planner") == 1


def test_a_named_plan_never_plans_again_so_no_step_nobody_reviewed_runs(
    journal_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The joiner asks for another plan: a named plan's run answers from what it found instead
    (a replan wrote steps nobody reviewed and repeated the logs' rotation)."""
    replan = "Thought: check again.\nAction: Replan(rotate the logs again and check)"
    script = Script.by_purpose(planner=[PLAN, PLAN], joiner=[replan, FINISH])
    rt = Runtime(TOOLS, ScriptedLLM(script), journal=journal_db, cache=False)
    rt.compile_runbook(RUNBOOK, name="free-disk")
    monkeypatch.setenv("PLANWEAVE_TEST_DISK_PCT", "95")
    result = rt.run_plan("free-disk", host="db-3", limit=90)
    assert script.purposes == ["planner", "joiner", "joiner"]  # compile; the joiner asked again
    assert _ran(tmp_path)["rotate_logs db-3"] == 1
    assert result.replans == 0


def test_wrong_parameters_are_refused_precisely_and_nothing_runs(
    journal_db: str, tmp_path: Path
) -> None:
    rt, script = _runtime(journal_db, [PLAN])
    rt.compile_runbook(RUNBOOK, name="free-disk")
    cases = {
        "plan free-disk needs limit (int)": {"host": "db-3"},
        "plan free-disk has no parameter colour (its parameters: host (str), limit (int))": {
            "host": "db-3",
            "limit": 90,
            "colour": "red",
        },
        "parameter limit is int: 'ninety' does not read as one": {"host": "h", "limit": "ninety"},
        "parameter limit is int: got float 90.5": {"host": "h", "limit": 90.5},
        "parameter host is str: got int 3": {"host": 3, "limit": 90},
        "a value may not hold a result reference": {"host": "db-${1}", "limit": 90},
    }
    for says, values in cases.items():
        with pytest.raises(UserError, match=None) as info:
            rt.run_plan("free-disk", **values)
        assert says in str(info.value)
    with pytest.raises(UserError, match="no named plan nothing"):
        rt.run_plan("nothing")
    with pytest.raises(UserError, match="no named plan free-disk version 7"):
        rt.named_plan("free-disk", version=7)
    assert _ran(tmp_path) == Counter()
    assert Journal(journal_db).runs() == []
    assert script.purposes == ["planner"]


def test_a_value_is_data_never_part_of_the_plan() -> None:
    """Quotes, a line break, a closing parenthesis and an end mark in a value stay inside the
    string they stand in (or the literal they are)."""
    text = '1. notify("host {host} is full")\n2. report({host})\n3. join()\n'
    hostile = 'x"), restart("db-1\n4. restart("db-2") <END_OF_PLAN>\'{limit}'
    bound = bind(text, {"host": hostile})
    plans = NamedPlans.__new__(NamedPlans)
    plans.tools, plans.plan_answers = TOOLS, False
    tasks = plans._parse(bound, "the plan")
    assert [t.tool for t in tasks] == ["notify", "report", "join"]
    assert tasks[0].kwargs == {"message": f"host {hostile} is full"} or tasks[0].args == (
        f"host {hostile} is full",
    )
    assert hostile in (tasks[1].args or tuple(tasks[1].kwargs.values()))
    # Inside a result reference or a single-quoted string, and one not a parameter.
    found = placeholders('1. f(\'{a}\', "${1}", {b}, "{c}")\n', {"a": 1, "b": 1})
    assert [(p.name, p.quote) for p in found] == [("a", "'"), ("b", None)]
    assert bind("1. f('{a}')", {"a": "it's"}) == "1. f('it\\'s')"


def test_a_plan_is_validated_before_it_is_stored(journal_db: str) -> None:
    rt, script = _runtime(journal_db, [NOT_A_PLAN] * 3)
    with pytest.raises(UserError, match=r"the plan does not validate: .*unknown_tool"):
        rt.compile_runbook(RUNBOOK, name="free-disk")
    assert script.purposes == ["planner"] * 3  # asked, then repaired twice (max_repairs)
    with pytest.raises(UserError, match=r"\{zone\} is not a parameter of this plan"):
        rt.save_plan("free-disk", "1. disk_usage({zone})\n2. join()\n", params={"host": "str"})
    with pytest.raises(UserError, match="type 'list' is none of str, int, float, bool"):
        rt.save_plan("free-disk", "1. disk_usage({host})\n2. join()\n", params={"host": "list"})
    with pytest.raises(UserError, match="plan name"):
        rt.save_plan("../etc", '1. disk_usage("x")\n2. join()\n')
    assert rt.named_plans() == []
    # Written by hand, without a runbook: parameters from the placeholders.
    saved = rt.save_plan("by-hand", "1. disk_usage({host})\n2. join()\n")
    assert (saved.version, saved.params, saved.source) == (1, {"host": "str"}, "")


def test_a_refused_compile_goes_back_to_the_planner_with_its_error(journal_db: str) -> None:
    own_condition = PLAN.replace(
        "1. disk_usage({host})", "1. disk_usage({host}) if ${1.disk_pct} > 0"
    )
    rt, script = _runtime(journal_db, [own_condition, PLAN])
    compiled = rt.compile_runbook(RUNBOOK, name="free-disk")
    assert "1. disk_usage({host})\n" in compiled.plan  # the second reply, stored
    assert script.purposes == ["planner", "planner"]
    asked = script.requests[1]
    assert "1. disk_usage({host}) if ${1.disk_pct} > 0" in asked[-2].content  # what it wrote
    assert asked[-1].content.startswith("That plan was refused: the plan does not validate")


@pytest.mark.parametrize(
    ("short", "error"),
    [
        (
            PLAN.replace("{limit}", "90"),  # no argument named limit: no example to read
            "it never uses the runbook's parameter {limit}: write {limit} where the runbook "
            "says <limit>, never an example value",
        ),
        (
            PLAN.replace("4. report", "4. join()\n#").split("\n#")[0] + "\n<END_OF_PLAN>",
            "the runbook has 4 numbered steps and the plan 3 tasks",
        ),
    ],
)
def test_a_compile_that_leaves_out_a_parameter_or_a_step_is_asked_again_then_kept(
    journal_db: str, short: str, error: str
) -> None:
    """While the planner may be asked again; its last attempt is stored as it is, for review (a
    runbook may mention a parameter no step needs, or a step no tool does)."""
    rt, script = _runtime(journal_db, [short, PLAN])
    assert rt.compile_runbook(RUNBOOK, name="again").plan.startswith("Thought: Rotate")
    assert script.purposes == ["planner", "planner"]
    assert error in script.requests[1][-1].content
    script = Script.by_purpose(planner=[short])
    kept = Runtime(TOOLS, ScriptedLLM(script), journal=journal_db, cache=False, max_repairs=0)
    assert kept.compile_runbook(RUNBOOK, name="kept").plan == plan_text(short)
    assert script.purposes == ["planner"]


def test_a_compile_s_example_value_and_a_field_of_a_plain_value_are_read_as_meant(
    journal_db: str,
) -> None:
    """What the 1.5B model writes: an example value where the parameter goes (the one text a
    call passes as the argument named like the parameter, and in the plan's texts too), and
    `${2.rotate}` for the text `rotate_logs` gives (a word of the tool's name: its value)."""
    written = (
        PLAN.replace("disk_usage({host})", 'disk_usage(host="db-3")')
        .replace("rotate_logs({host})", 'rotate_logs("db-3")')
        .replace('"{host} disk ok"', '"db-3 disk ok"')
        .replace('"{host}: ${2}"', '"db-3: ${2.rotate}"')
        .replace("if $2 != None", "if $2.rotate_result != None")
    )
    rt, script = _runtime(journal_db, [written])
    compiled = rt.compile_runbook(RUNBOOK, name="free-disk")
    assert compiled.plan == plan_text(PLAN.replace("disk_usage({host})", "disk_usage(host={host})"))
    assert script.purposes == ["planner"]  # read as meant, not asked again
    # The example value may be the parameter's own name: a keyword or a placeholder spelled
    # the same stays as it is.
    named = PLAN.replace("disk_usage({host})", 'disk_usage(host="host")').replace(
        "rotate_logs({host})", 'rotate_logs(host="host")'
    )
    named = named.replace('"{host} disk ok"', '"host disk ok"').replace("{host}:", "host:")
    rt, script = _runtime(journal_db, [named])
    compiled = rt.compile_runbook(RUNBOOK, name="own-name")
    assert compiled.plan == plan_text(
        PLAN.replace("disk_usage({host})", "disk_usage(host={host})").replace(
            "rotate_logs({host})", "rotate_logs(host={host})"
        )
    )
    # A field that names something else is refused, with the plan's own line (not the sample
    # values bound to validate it: the model copied those into its next attempt).
    other = PLAN.replace("if $2 != None", "if $2.disk_pct != None")
    rt, script = _runtime(journal_db, [other, PLAN])
    rt.compile_runbook(RUNBOOK, name="free-disk")
    error = script.requests[1][-1].content
    assert "$2.disk_pct reads the field 'disk_pct' of task 2's result, but rotate_logs " in error
    assert "(in '4. report(\"{host}: ${2}\") if $2.disk_pct != None')" in error


def test_the_compile_request_carries_the_branch_grammar_with_the_parameters() -> None:
    plans = NamedPlans.__new__(NamedPlans)
    plans.tools, plans.plan_answers = TOOLS, True
    request = plans.request(RUNBOOK, grammar=True)
    assert request.purpose == "planner"
    assert request.max_tokens == 1024  # bounded like the planner's own
    assert request.grammar is not None
    grammar = Grammar(request.grammar)
    assert grammar.accepts(PLAN)
    assert not grammar.accepts(PLAN.replace("> {limit}", "> {other}"))
    # The first task has no earlier result: a parameter or a literal, never a reference, not
    # even inside a string (the 1.5B model wrote `1. cert_info($1.domain)` for the parameter).
    for first in ("disk_usage($1.host)", 'disk_usage("${1}")', "disk_usage(host=$1)"):
        assert not grammar.accepts(PLAN.replace("disk_usage({host})", first))
    for first in ('disk_usage("db-3")', 'disk_usage("{host}-a")', "disk_usage(host={host})"):
        assert grammar.accepts(PLAN.replace("disk_usage({host})", first))
    # A condition has at most three comparisons, joined by `and`/`or`, each maybe after `not`,
    # no parentheses (compiles chained them to their limit, or filled every term allowed).
    three = "${1.disk_pct} > {limit} and not $1 != 2 or $1.disk_pct <= 3"
    assert grammar.accepts(PLAN.replace("${1.disk_pct} > {limit}", three))
    assert not grammar.accepts(PLAN.replace("${1.disk_pct} > {limit}", three + " and $1 != 2"))
    assert not grammar.accepts(PLAN.replace("${1.disk_pct} > {limit}", "not ($1 and $1)"))
    # A text in a condition holds no reference: it would be compared as written.
    assert grammar.accepts(PLAN.replace("if $2 != None", 'if $2 != "x"'))
    assert not grammar.accepts(PLAN.replace("if $2 != None", 'if "${2}" != "x"'))


def test_a_compiled_plan_writes_the_runbook_s_own_spelling_of_a_parameter_as_one(
    journal_db: str,
) -> None:
    copied = PLAN.replace('notify("{host} disk ok")', 'notify("<host> disk ok, <other> too")')
    rt, _ = _runtime(journal_db, [copied])
    compiled = rt.compile_runbook(RUNBOOK, name="free-disk")
    assert 'notify("{host} disk ok, <other> too")' in compiled.plan  # <other> is no parameter


def test_a_sealed_row_edited_in_the_journal_is_not_run(tmp_path: Path) -> None:
    rt, _ = _runtime(tmp_path / "runs.db", [PLAN])
    rt.compile_runbook(RUNBOOK, name="free-disk")
    import sqlite3

    with sqlite3.connect(tmp_path / "runs.db") as conn:
        conn.execute("UPDATE named_plans SET plan = replace(plan, 'rotate_logs', 'restart')")
    with pytest.raises(UserError, match="failed verification"):
        rt.run_plan("free-disk", host="db-3", limit=90)
    assert rt.named_plans() == []
    assert _ran(tmp_path) == Counter()


# --------------------------------------------------------------------------- CLI, kill, resume


def _cli(tmp: Path, *args: str, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        "PLANWEAVE_DB": str(tmp / "runs.db"),
        "PLANWEAVE_TEST_LEDGER": str(tmp / "ledger.txt"),
        "PLANWEAVE_TEST_DELAY": "0.5",
    }
    return run_cli(*args, env=env, fault=fault) if fault else invoke_cli(*args, env=env)


@pytest.mark.slow  # a real process killed
def test_the_cli_compiles_shows_edits_and_runs_a_plan_and_a_killed_run_resumes(
    tmp_path: Path,
) -> None:
    def route(messages: list[Message], purpose: Purpose) -> Reply | str:
        return Reply(PLAN) if purpose == "planner" else FINISH

    (tmp_path / "RUNBOOK.md").write_text(RUNBOOK)
    with ScriptedServer(Script.routed(route)) as server:
        reach = ["--tools", "branch_tools:TOOLS", "--base-url", server.base_url, "--model", "m"]
        made = _cli(
            tmp_path, "plans", "compile", str(tmp_path / "RUNBOOK.md"), "--name", "fd", *reach
        )
        assert made.returncode == 0, made.stderr
        assert "fd v1" in made.stdout
        assert "host (str), limit (int)" in made.stdout
        listed = json.loads(_cli(tmp_path, "plans", "list", "--json", *reach).stdout)
        assert [(p["name"], p["version"]) for p in listed] == [("fd", 1)]
        shown = _cli(tmp_path, "plans", "show", "fd", *reach)
        assert shown.returncode == 0, shown.stderr
        assert "rotate_logs({host}) if ${1.disk_pct} > {limit}" in shown.stdout
        assert "join" in shown.stdout
        assert "Free disk on a database host" in shown.stdout

        (tmp_path / "edited.txt").write_text(PLAN.replace('"{host} disk ok"', '"{host} fine"'))
        edited = _cli(
            tmp_path, "plans", "edit", "fd", "--file", str(tmp_path / "edited.txt"), *reach
        )
        assert edited.returncode == 0, edited.stderr
        assert "fd v2" in edited.stdout

        bad = _cli(tmp_path, "run", "--plan", "fd", "--param", "host=db-3", *reach)
        assert bad.returncode == 2
        assert "plan fd needs limit (int)" in bad.stderr

        planned = server.script.purposes.count("planner")
        killed = _cli(
            tmp_path,
            "run",
            "--plan",
            "fd",
            "--param",
            "host=db-3",
            "--param",
            "limit=90",
            *reach,
            fault="task_started:2",
        )
        assert killed.returncode == -9, killed.stderr
        run_id = json.loads(_cli(tmp_path, "runs", "list", "--json").stdout)[0]["id"]
        resumed = _cli(
            tmp_path, "runs", "resume", run_id, *reach[:2], "--base-url", server.base_url, "--json"
        )
        assert resumed.returncode == 0, resumed.stderr
        assert server.script.purposes.count("planner") == planned  # never asked to plan
    data = json.loads(resumed.stdout)
    assert data["status"] == "finished"
    assert {t["id"]: t["status"] for t in data["tasks"]} == {
        1: "done",
        2: "done",
        3: "skipped",
        4: "done",
    }
    ran = _ran(tmp_path)
    assert ran["disk_usage db-3"] == 1  # finished before the kill: not repeated
    assert ran["report db-3: rotated db-3"] == 1
    assert ran["notify db-3 fine"] == 0


# --------------------------------------------------------------------------- REST


def test_named_plans_over_rest_anyone_runs_only_an_admin_stores(
    journal_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx2 as httpx

    import live_server
    from planweave.server import ServerConfig
    from planweave.users import Users, add_user

    monkeypatch.setenv("PLANWEAVE_TEST_DISK_PCT", "95")
    users = tmp_path / "users.toml"
    tokens = {"alice": add_user(users, "alice"), "root": add_user(users, "root", "admin")}
    rt, script = _runtime(journal_db, [PLAN])
    rt.compile_runbook(RUNBOOK, name="free-disk")
    config = ServerConfig(token="operator-token-0123456789", users=Users.load(users))
    with live_server.serving(rt, config) as url:
        alice, root = (
            httpx.Client(base_url=url, headers={"authorization": f"Bearer {t}"}, timeout=20)
            for t in (tokens["alice"], tokens["root"])
        )
        listed = alice.get("/plans").json()["plans"]
        assert [(p["name"], p["version"], p["params"]) for p in listed] == [
            ("free-disk", 1, {"host": "str", "limit": "int"})
        ]
        shown = alice.get("/plans/free-disk").json()
        assert [t["call"] for t in shown["tasks"]][1] == (
            "rotate_logs({host}) if ${1.disk_pct} > {limit}"
        )
        assert alice.get("/plans/nothing").status_code == 404
        assert alice.get("/plans/free-disk", params={"version": 3}).status_code == 404

        bad = alice.post("/plans/free-disk/runs", json={"params": {"host": "db-3"}})
        assert bad.status_code == 400
        assert bad.json()["error"]["message"] == "plan free-disk needs limit (int)"
        started = alice.post(
            "/plans/free-disk/runs", json={"params": {"host": "db-3", "limit": 90}}
        )
        assert started.status_code == 202, started.text
        run_id = started.json()["id"]
        run = live_server.events(alice, run_id)[-1]["data"]
        assert run["kind"] == "run_finished"
        assert run["status"] == "finished"
        assert alice.get(f"/runs/{run_id}").status_code == 200  # alice's own run
        assert script.purposes.count("planner") == 1  # the compile's only

        edited = PLAN.replace("> {limit}", ">= {limit}")
        refused = alice.put("/plans/free-disk", json={"plan": edited})
        assert refused.status_code == 403
        saved = root.put("/plans/free-disk", json={"plan": edited})
        assert saved.status_code == 201, saved.text
        assert saved.json()["version"] == 2
        invalid = root.put("/plans/free-disk", json={"plan": "1. nothing()\n2. join()\n"})
        assert invalid.status_code == 400
        assert "does not validate" in invalid.json()["error"]["message"]
        alice.close()
        root.close()
    assert _ran(tmp_path)["rotate_logs db-3"] == 1


@pytest.mark.parametrize("pct", ["95", "50"])
def test_a_named_plan_s_answer_ends_with_the_actions_as_they_happened(
    journal_db: str, monkeypatch: pytest.MonkeyPatch, pct: str
) -> None:
    """Its side effects stated by the runtime, not re-typed by the joiner: each one taken (with
    the values it ran with and what it gave), each one not taken and why."""
    acting = {
        n: dataclasses.replace(t, side_effects=n in ("rotate_logs", "notify"))
        for n, t in TOOLS.items()
    }
    script = Script.by_purpose(planner=[PLAN], joiner=["Thought: done.\nAction: Finish(Ran.)"])
    rt = Runtime(list(acting.values()), ScriptedLLM(script), journal=journal_db, cache=False)
    rt.compile_runbook(RUNBOOK, name="free-disk")
    monkeypatch.setenv("PLANWEAVE_TEST_DISK_PCT", pct)
    result = rt.run_plan("free-disk", host="db-3", limit=90)
    assert result.status == "finished", result.error
    if pct == "95":
        assert result.answer == (
            'Ran.\n\nActions taken: rotate_logs(host="db-3") -> rotated db-3.\n'
            "Not taken: notify (condition false: $1.disk_pct <= 90 ($1.disk_pct is 95))."
        )
    else:
        assert result.answer == (
            'Ran.\n\nActions taken: notify(message="db-3 disk ok") -> notified.\n'
            "Not taken: rotate_logs (condition false: $1.disk_pct > 90 ($1.disk_pct is 50))."
        )
    # The journal records the same answer the result has.
    assert Journal(journal_db).show(result.run_id)["answer"] == result.answer


STEPS = [
    "1. disk_usage({host})",
    "2. rotate_logs({host}) if ${1.disk_pct} > {limit}",
    '3. notify("{host} disk ok") if ${1.disk_pct} <= {limit}',
    '4. report("{host}: ${2}") if $2 != None',
]


def test_a_runbook_compiled_step_by_step_asks_once_per_step_with_the_plan_so_far(
    journal_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each request shows the runbook, the plan so far and one step; its grammar numbers the
    step's line as asked and lets it read only earlier tasks; a refused step goes back with
    the error; the plan is stored and runs like one compiled in one request."""
    forward = "2. rotate_logs({host}) if ${2.disk_pct} > {limit}"  # reads itself
    replies = [STEPS[0], forward, STEPS[1], STEPS[2], STEPS[3]]
    rt, script = _runtime(journal_db, [r + "\n<END_OF_STEP>" for r in replies])
    compiled = rt.compile_runbook(RUNBOOK, name="free-disk", by_step=True)
    # Step 3 ("Otherwise ...") gets step 2's condition negated, written by the compiler: the
    # model's own condition for it is not read.
    otherwise = '3. notify("{host} disk ok") if not (${1.disk_pct} > {limit})'
    steps = [*STEPS[:2], otherwise, STEPS[3]]
    assert compiled.plan == "\n".join(steps) + "\n5. join()\n<END_OF_PLAN>\n"
    assert compiled.params == {"host": "str", "limit": "int"}
    assert script.purposes == ["planner"] * 5
    first, second, repair, third = (script.requests[i] for i in (0, 1, 2, 3))
    assert "The plan so far:\n(no task yet)\n\nStep 1: Check the disk usage of <host>." in (
        first[-1].content
    )
    assert "The plan so far:\n1. disk_usage({host})\n\nStep 2: If it is over" in second[-1].content
    assert repair[-2].content.startswith(forward)
    assert repair[-1].content.startswith("That was refused: the plan does not validate")
    assert "for step 2 again" in repair[-1].content
    assert "The plan so far:\n" + "\n".join(STEPS[:2]) + "\n\nStep 3:" in third[-1].content
    assert "runs only `if not (${1.disk_pct} > {limit})`, written for you" in third[-1].content
    # The step grammar (the backend's request carries it): step 2 may read task 1 only.
    grammar = Grammar(_step_grammar(2))
    assert grammar.accepts(STEPS[1] + "\n<END_OF_STEP>")
    assert not grammar.accepts(forward + "\n<END_OF_STEP>")
    assert not grammar.accepts(STEPS[1].replace("2.", "3.", 1) + "\n<END_OF_STEP>")
    monkeypatch.setenv("PLANWEAVE_TEST_DISK_PCT", "95")
    result = rt.run_plan("free-disk", host="db-3", limit=90)
    assert result.status == "finished", result.error
    assert _ran_statuses(result) == {1: "done", 2: "done", 3: "skipped", 4: "done"}


def _step_grammar(first_id: int) -> str:
    from planweave.step_grammar import step_grammar

    return step_grammar(TOOLS, first_id=first_id, params=["host", "limit"])


def _ran_statuses(result: Any) -> dict[int, str]:
    return {r.task.id: r.status.value for r in result.tasks}


def test_a_step_s_reply_keeps_its_task_lines_only() -> None:
    from planweave.runbooks.steps import Step, runbook_steps, step_lines
    from planweave.step_grammar import step_grammar

    steps = runbook_steps(RUNBOOK + "\n   (indented: part of step 4)\nExpected outcome: x\n")
    assert [s.number for s in steps] == [1, 2, 3, 4]
    assert steps[1].text == "If it is over <limit:int> percent, rotate the logs."
    assert steps[3].text.endswith("write a report. (indented: part of step 4)")
    # Only a step whose words make it conditional may have a condition (the 1.5B model gave
    # one to every step it could).
    assert [s.conditional for s in steps] == [False, True, True, True]
    always = step_grammar(TOOLS, first_id=2, lines=1, params=["host", "limit"], conditional=False)
    assert Grammar(always).accepts("2. rotate_logs({host})\n<END_OF_STEP>")
    assert not Grammar(always).accepts(STEPS[1] + "\n<END_OF_STEP>")
    reply = "Thought: x\n2. a()\n3. b()\n4. join()\n5. c()\n6. d()\n<END_OF_STEP>\n7. e()"
    assert step_lines(reply, Step(2, "x")) == ["2. a()"]  # one task a step
    with pytest.raises(UserError, match="no task for step 2"):
        step_lines("Thought: nothing\n<END_OF_STEP>", Step(2, "x"))


def test_a_hostile_review_s_findings_hold_fixed(
    journal_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret a side effect ran with is masked before the record is clipped; a fan-out's
    elements that ran are listed though another failed; a by-step compile checks the runbook's
    size first; an example value in a condition stays; only the first top-level list is steps."""
    from planweave import ToolRegistry, tool
    from planweave.runbooks.steps import runbook_steps

    secret = "sk-PROBE-abcdefghijklmnopqrstuvwxyz0123456789"
    monkeypatch.setenv("PROBE_API_KEY", secret)

    @tool
    def token(name: str) -> str:
        """A token."""
        return secret

    @tool
    def hosts(group: str) -> list[str]:
        """Hosts of a group."""
        return ["a", "b", "c"]

    @tool(side_effects=True)
    def page(host: str, note: str = "") -> str:
        """Page a host's owner."""
        if host == "c":
            raise RuntimeError("pager down")
        return f"paged {host}"

    plan = f'1. token({{g}})\n2. hosts({{g}})\n3. page($2[*], "{"x" * 170} ${{1}}")\n4. join()'
    script = Script.by_purpose(planner=[plan], joiner=[FINISH] * 3)
    tools = ToolRegistry(token, hosts, page)
    rt = Runtime(tools, ScriptedLLM(script), journal=journal_db, cache=False)
    rt.compile_runbook("# P\n1. Token for <g>.\n2. Hosts of <g>.\n3. Page them.\n", name="p")
    answer = rt.run_plan("p", g="ops").answer or ""
    assert secret[:6] not in answer
    assert "[redact" in answer
    assert answer.count('page(host="a"') == answer.count('page(host="b"') == 1
    assert "Not done: page (item 3 of 3: RuntimeError: pager down)." in answer
    with pytest.raises(UserError, match="over 20,000 characters"):
        rt.compile_runbook("# B\n1. Page <g>.\n" + "filler " * 4000, name="b", by_step=True)
    plans = rt.named_plans_store()
    read, _ = plans.read(
        "# H\n1. Check <host>.\n",
        '1. hosts(group="primary")\n2. page("x") if $1 == ["primary"]\n3. join()',
    )
    assert '1. hosts(group="primary")' in read  # no parameter named group: nothing read
    listed = "# R\n1. Stop it.\n   1) a\n   2) b\n2. Start it.\n\nContacts:\n1. alice\n2. bob\n"
    assert [(s.number, s.text) for s in runbook_steps(listed)] == [
        (1, "Stop it. 1) a 2) b"),
        (2, "Start it."),
    ]


def test_example_values_are_read_in_the_call_never_in_the_condition(journal_db: str) -> None:
    rt, _ = _runtime(journal_db, [])
    read, _ = rt.named_plans_store().read(
        RUNBOOK,
        '1. disk_usage(host="primary")\n2. notify("primary, ok") if ${1.host} == "primary"\n'
        '3. rotate_logs( "primary" ) if ${1.disk_pct} > {limit}\n4. join()',
    )
    assert read.splitlines()[:3] == [
        "1. disk_usage(host={host})",
        '2. notify("{host}, ok") if ${1.host} == "primary"',
        "3. rotate_logs( {host} ) if ${1.disk_pct} > {limit}",
    ]


def test_a_plan_s_parameters_may_be_called_name_or_version(journal_db: str) -> None:
    rt, _ = _runtime(journal_db, [])
    rt.save_plan("named", '1. notify("{name} {version}")\n2. join()\n')
    rt.save_plan("named", '1. notify("second: {name} {version}")\n2. join()\n')
    result = rt.run_plan("named", name="api", version="v2.4.1", plan_version=1)
    assert result.status == "finished", result.error
    assert _ran_statuses(result) == {1: "done"}
    assert 'notify("api v2.4.1")' in result.tasks[0].task.call_text()
