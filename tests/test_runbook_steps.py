"""A runbook compiled step by step (issue 33): what each step's grammar lets the model write
(each earlier result read as its tool declares, the runbook's numbers, as many comparisons as
the step's words join), the conditions the compiler writes itself ("otherwise"), and the
conditions the parser refuses as meaningless (an action's text, a whole record against a
number)."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from branch_tools import FINISH
from gbnf import Grammar
from planweave import Runtime, Script, ScriptedLLM
from planweave.errors import PlanError
from planweave.parser import parse_plan
from planweave.runbooks.reading import references_unquoted
from planweave.runbooks.steps import (
    Step,
    condition_words,
    otherwise_condition,
    runbook_numbers,
    runbook_steps,
    step_parts,
)
from planweave.step_grammar import Earlier, step_grammar
from planweave.tools import ToolRegistry, tool


class Cert(TypedDict):
    domain: str
    days_left: int


@tool
def cert_info(domain: str) -> Cert:
    """A domain's certificate."""
    return {"domain": domain, "days_left": 3}


@tool
def resolve(domain: str) -> str:
    """The IP address a domain resolves to."""
    return "192.0.2.1"


@tool
def longest_query(database: str) -> dict[str, Any]:
    """The longest-running query on a database: pid (its process id) and seconds (how long it
    has been running)."""
    return {"pid": 4811, "seconds": 1840}


@tool
def hosts(pool: str) -> list[str]:
    """The hosts of a pool."""
    return ["a", "b"]


@tool(side_effects=True)
def kill_query(database: str, pid: int) -> str:
    """Terminate a query by its process id."""
    return f"terminated {pid}"


@tool(side_effects=True)
def notify(message: str) -> str:
    """Tell the on-call person."""
    return "sent"


@tool
def job_logs(job: str) -> str:
    """The last error line of a job."""
    return "OOMKilled"


@tool
def lag(replica: str) -> int:
    """Replication lag of a replica, in seconds."""
    return 12


TOOLS = ToolRegistry([cert_info, resolve, longest_query, hosts, kill_query, notify, job_logs, lag])
# Task 5 ran only under a condition of its own (a run may skip it).
EARLIER = Earlier(
    {1: cert_info, 2: resolve, 3: longest_query, 4: hosts, 5: kill_query}, frozenset({5})
)


def _step(terms: int = 3, conditional: bool = True) -> Grammar:
    return Grammar(
        step_grammar(
            TOOLS,
            first_id=6,
            lines=1,
            params=["database"],
            conditional=conditional,
            earlier=EARLIER,
            numbers=["0", "1", "14", "300"],
            terms=terms,
        )
    )


@pytest.mark.parametrize(
    ("line", "accepted"),
    [
        ("kill_query({database}, $3.pid) if $3.seconds > 300", True),
        # An argument takes a result of its type, a record's field or a parameter.
        ("kill_query({database}, $3) if $3.seconds > 300", False),
        ("kill_query($2, $3.pid)", True),
        ('kill_query($3.query, "4811")', False),
        ("kill_query($1.domain, $4[0])", True),
        ("kill_query($5, 1)", True),
        # A plain dict is read by the words of its tool's description, one field at a time.
        ("kill_query({database}, $3.pid) if $3.runtime_s > 300", False),
        ("kill_query({database}, $3.pid.pid.pid)", False),
        # ... not by a word of a parenthesis that explains a field ("pid (its process id)").
        ("kill_query({database}, $3.process)", False),
        # ... and never compared whole in a condition (it is a record, not a number).
        ("kill_query({database}, 1) if $3 > 300", False),
        # A TypedDict by its keys.
        ('notify("${1.domain}: ${1.days_left} days") if $1.days_left < 14', True),
        ('notify("${1.issuer}")', False),
        # A text, a number or a bool has no field, in a call or in a text.
        ("notify($2)", True),
        ("notify($2.domain)", False),
        ('notify("IP ${2.ip}")', False),
        # A list by index.
        ("notify($4[0])", True),
        ("notify($4.first)", False),
        ('notify("${2}")', True),
        ('notify("costs $5")', True),
        # An action's result: whether it ran.
        ('notify("killed") if $5 != None', True),
        ('notify("not killed") if not $5 != None', True),
        ('notify("not killed") if $5 == None', False),
        # A condition is typed: a text with a text, a number with a number, a task a run may
        # skip only against None, a parameter with a constant.
        ("notify($2) if $2 == 137", False),
        ('notify($2) if $2 != "192.0.2.1"', True),
        ('notify($2) if "192" in $2', True),
        ("notify($2) if $5 == 300", False),
        ('notify($2) if $5 == "terminated"', False),
        ('notify($2) if {database} == "billing"', True),
        ("notify($2) if ${1.days_left} <= 14", True),
        ("notify($2) if $1 > 14", False),
        # The runbook's numbers only (the 1.5B model padded `!= 0.0000000000000001`).
        ("kill_query({database}, $3.pid) if $3.seconds > 301", False),
        ("kill_query({database}, $3.pid) if $3.seconds > 300.0000001", False),
        ("kill_query({database}, $3.pid) if $3.seconds > 300 and $1.days_left < 14", True),
    ],
)
def test_a_step_reads_each_earlier_result_as_its_tool_declares(line: str, accepted: bool) -> None:
    assert _step().accepts(f"6. {line}\n<END_OF_STEP>") is accepted


def test_an_action_every_run_takes_is_nothing_a_condition_tests() -> None:
    """`$2 != None` of an action without a condition always holds (onboarding's model wrote
    it for "if the team is engineering"): such a task is no operand of a condition."""
    earlier = Earlier({1: longest_query, 2: kill_query})
    grammar = Grammar(step_grammar(TOOLS, first_id=3, lines=1, earlier=earlier, params=["t"]))
    assert not grammar.accepts("3. notify($2) if $2 != None\n<END_OF_STEP>")
    assert grammar.accepts('3. notify($2) if {t} == "eng"\n<END_OF_STEP>')
    assert grammar.accepts("3. notify($2) if $1.seconds > 1\n<END_OF_STEP>")


def test_a_reference_in_quotes_is_read_as_the_reference() -> None:
    """The 1.5B model passed `input="$<3>"` (and `"$3"`) for the result of task 3; the text
    `${3}` (the plan language's spelling of a result in a text) and other texts stay."""
    line = '4. decide(question="Timeout?", input="$<3>", options=["a", "b"]) if $1 > 3\n'
    assert references_unquoted(line) == (
        '4. decide(question="Timeout?", input=$3, options=["a", "b"]) if $1 > 3\n'
    )
    kept = '4. notify("$3", "${3}", "cost: $3", x="$<3> now") if $2 == "$3"\n'
    assert references_unquoted(kept) == kept.replace('notify("$3"', "notify($3")


def test_a_condition_s_texts_are_words_of_the_runbook_and_its_tools() -> None:
    """The 1.5B model compared a log line with one it made up
    (`$2 == "/bin/sh: 137: Killed: memory exhausted"`); a condition's texts are up to three
    words the runbook or the earlier tools' descriptions use."""
    words = condition_words("If the failure is a timeout, restart <db>.", [resolve, None])
    assert words[:6] == ["If", "the", "failure", "is", "a", "timeout"]
    assert "address" in words
    grammar = Grammar(
        step_grammar(
            TOOLS, first_id=6, lines=1, params=["db"], earlier=EARLIER, numbers=["0"], words=words
        )
    )
    for line, accepted in [
        ('notify($2) if $2 == "timeout"', True),
        ('notify($2) if "a timeout" in $2', True),
        ('notify($2) if {db} != "the failure"', True),
        ('notify($2) if $2 == "OOM killed"', False),
        ('notify($2) if $2 == "a timeout is the failure"', False),
    ]:
        assert grammar.accepts(f"6. {line}\n<END_OF_STEP>") is accepted, line


def test_a_step_s_condition_joins_as_many_comparisons_as_its_words() -> None:
    two = "6. notify($2) if $3.seconds > 300 and $1.days_left < 14\n<END_OF_STEP>"
    assert _step(terms=2).accepts(two)
    assert not _step(terms=1).accepts(two)
    assert _step(terms=1).accepts("6. notify($2) if $3.seconds > 300\n<END_OF_STEP>")
    assert not _step(conditional=False).accepts("6. notify($2) if $3.seconds > 300\n<END_OF_STEP>")


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("If the disk is over 90 %, rotate the logs.", 1),
        ("If the hit rate is below 0.5, flush the cache.", 1),
        ("If <group> is more than 10,000 behind and not running, restart it.", 2),
        (
            "If the code is not 137 and it was tried 3 times or more, page; do not rerun.",
            2,
        ),  # "or more" joins nothing
        ("Only when the job failed twice, page the on-call person and stop.", 1),
    ],
)
def test_a_step_s_condition_terms_come_from_its_clause(text: str, terms: int) -> None:
    assert Step(3, text).terms == terms


def test_a_step_s_words_say_whether_it_is_conditional_or_otherwise() -> None:
    runbook = (
        "# Lag\n1. Read whether the consumers are running.\n"
        "2. If the lag is over 10,000 and they are not running, restart them; otherwise "
        "post the lag to #data.\n3. Else page someone.\n4. In every other case, do nothing.\n"
    )
    steps = runbook_steps(runbook)
    assert [s.conditional for s in steps] == [False, True, True, False]
    assert [s.otherwise for s in steps] == [False, False, True, True]
    parts = step_parts(steps[1])
    assert [p.text for p in parts] == [
        "If the lag is over 10,000 and they are not running, restart them;",
        "otherwise post the lag to #data.",
    ]
    assert [p.number for p in parts] == [2, 2]
    assert parts[1].otherwise
    assert step_parts(steps[0]) == [steps[0]]
    # The numbers a condition may compare with: the runbook's (10,000 as 10000, "three" as 3).
    numbers = runbook_numbers(runbook + "Three times at most, a rate of 0.5.")
    assert numbers == ["0", "0.5", "1", "2", "3", "4", "10000"]


def test_an_otherwise_negates_the_conditions_just_above_it() -> None:
    so_far = [
        "1. disk_usage({host})",
        "2. rotate_logs({host}) if $1.disk_pct > 90",
        '3. notify("if in text") if $1.disk_pct > 80 and {team} == "db"',
    ]
    assert otherwise_condition(so_far) == (
        'not ($1.disk_pct > 90) and not ($1.disk_pct > 80 and {team} == "db")'
    )
    assert otherwise_condition([*so_far, '4. notify("x")']) is None
    assert otherwise_condition(so_far[:1]) is None


RUNBOOK = """# Long query on <database>
1. Find the longest-running query on <database> (its pid and seconds).
2. If it has run for more than 300 seconds, terminate it; otherwise tell the on-call person.
"""


def test_a_step_with_an_otherwise_compiles_to_two_tasks_the_second_negated(
    tmp_path: Any,
) -> None:
    """The model is asked each part of step 2 by itself; the "otherwise" part's condition is
    the compiler's, whatever the model wrote; both sides run as the condition says."""
    replies = [
        "1. longest_query({database})",
        "2. kill_query({database}, $1.pid) if $1.seconds > 300",
        '3. notify("nothing to kill") if $1.seconds > 5',  # its condition is not read
    ]
    planner = [r + "\n<END_OF_STEP>" for r in replies]
    script = Script.by_purpose(planner=planner, joiner=[FINISH] * 2)
    rt = Runtime(TOOLS, ScriptedLLM(script), journal=tmp_path / "j.db", cache=False)
    plan = rt.compile_runbook(RUNBOOK, name="long-query", by_step=True)
    assert plan.plan.splitlines()[:3] == [
        "1. longest_query({database})",
        "2. kill_query({database}, $1.pid) if $1.seconds > 300",
        '3. notify("nothing to kill") if not ($1.seconds > 300)',
    ]
    third = script.requests[2][-1].content
    assert "Step 2: otherwise tell the on-call person." in third
    assert "runs only `if not ($1.seconds > 300)`" in third
    result = rt.run_plan("long-query", database="billing")
    statuses = {r.task.id: r.status.value for r in result.tasks}
    assert statuses == {1: "done", 2: "done", 3: "skipped"}


@pytest.mark.parametrize(
    ("condition", "says"),
    [
        ('$2 == "terminated"', "kill_query is an action"),
        ('$2 != "terminated 4811"', "write `$2 != None`"),
        ("$1 > 300", "compares $1, the whole result of longest_query"),
        ("$1 == 0", "compare one of its fields"),
        ("$1.pid > 0 and $6 == 137", "job_logs returns a text"),
        ("$7 <= 30", "task 7 runs only when a condition holds"),
        ("$1 != None", "task 1 runs in every run"),
        ("$6 == None", "never holds"),
    ],
)
def test_a_condition_no_result_can_meet_is_refused(condition: str, says: str) -> None:
    plan = (
        '1. longest_query("billing")\n2. kill_query("billing", 4811)\n3. notify("a")\n'
        '4. notify("b")\n5. notify("c")\n6. job_logs("etl")\n7. lag("r1") if $1.seconds > 9\n'
        f'8. notify("x") if {condition}\n9. join()\n'
    )
    with pytest.raises(PlanError) as caught:
        parse_plan(plan, TOOLS)
    assert says in caught.value.message, caught.value.message
    assert caught.value.lineno == 8


def test_an_action_that_ran_and_a_field_compared_are_conditions() -> None:
    plan = (
        '1. longest_query("billing")\n2. kill_query("billing", $1.pid) if $1.seconds > 300\n'
        '3. notify("x") if $2 != None and $1.seconds > 0\n4. notify("y") if "ok" in $2\n'
        '5. lag("r1") if $2 != None\n6. notify("z") if $5 != None and $5 <= 30\n'
        '7. notify("z") if $1.seconds <= 30\n8. join()\n'
    )
    assert [t.id for t in parse_plan(plan, TOOLS)] == [1, 2, 3, 4, 5, 6, 7, 8]
