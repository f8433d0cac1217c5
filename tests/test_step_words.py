"""A runbook step's grammar keeps to what its own words name (issue 33, `step_words`): the
action it names, the fields its condition's clause names, the parameter an argument stands for;
and the conditions the compiler writes for a step done "once" the step above ran or "in that
case"."""

from __future__ import annotations

from typing import Any

import pytest

from branch_tools import FINISH
from gbnf import Grammar
from planweave import Runtime, Script, ScriptedLLM
from planweave.llm.base import LLMRequest
from planweave.returns import described_fields, tool_fields
from planweave.runbooks.steps import Step, fixed_condition, runbook_steps, step_request
from planweave.step_grammar import Earlier, step_grammar
from planweave.step_words import condition_focus, named_params, named_tools, words_match
from planweave.tools import ToolRegistry, tool


@tool
def failed_signins(username: str, hours: int = 1) -> dict[str, int]:
    """Failed sign-in attempts for a user over the last `hours` hours: attempts and
    distinct_ips."""
    return {"attempts": 31, "distinct_ips": 9}


@tool
def target_health(target_group: str, instance_id: str) -> dict[str, Any]:
    """Health of one target in a load-balancer target group.

    Returns:
        state ("healthy", "unhealthy"), reason (ELB reason code), unhealthy_minutes.
    """
    return {"state": "unhealthy", "reason": "Target.Timeout", "unhealthy_minutes": 14}


@tool
def status_checks(instance_id: str) -> dict[str, str]:
    """EC2 status checks of an instance: system_status (the host) and instance_status (the
    guest OS), each "ok" or "impaired"."""
    return {"system_status": "impaired", "instance_status": "ok"}


@tool(side_effects=True)
def deregister_target(target_group: str, instance_id: str) -> str:
    """Take an instance out of a target group."""
    return f"deregistered {instance_id}"


@tool(side_effects=True)
def terminate_instance(instance_id: str) -> str:
    """Terminate an instance."""
    return f"terminated {instance_id}"


@tool(side_effects=True)
def open_ticket(queue: str, summary: str) -> str:
    """Open a ticket in a queue."""
    return f"ticket in {queue}"


@tool(side_effects=True)
def unlock_user(username: str) -> str:
    """Unlock a user's account."""
    return f"unlocked {username}"


@tool(side_effects=True)
def restart_service(service: str) -> str:
    """Restart a service."""
    return f"restarted {service}"


@tool(side_effects=True)
def page_oncall(service: str, summary: str) -> str:
    """Page the on-call engineer of a service."""
    return "paged"


TOOLS = ToolRegistry(
    [
        failed_signins,
        target_health,
        status_checks,
        deregister_target,
        terminate_instance,
        open_ticket,
        unlock_user,
        restart_service,
        page_oncall,
    ]
)


def _request(
    tools: ToolRegistry, runbook: str, params: list[str], so_far: list[str], step: Step
) -> LLMRequest:
    """`step`'s planner request, with its grammar."""
    return step_request(tools, runbook, params, so_far, step, grammar=True, plan_answers=False)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("deregistered", "deregister", True),
        ("retry", "retryable", True),
        ("checks", "check", True),
        ("attempts", "attempt", True),
        ("rate", "rated", True),
        ("lag", "lag", True),
        ("lag", "lags", False),  # three letters: only the same word
        ("unlock", "locked", False),
        ("page", "pages", True),
        ("system", "instance", False),
        ("state", "status", False),
    ],
)
def test_words_match_by_stem(a: str, b: str, same: bool) -> None:
    assert words_match(a, b) is same
    assert words_match(b, a) is same


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("If there were more than 20, open a ticket in the security queue.", ["open_ticket"]),
        ("Unlock <user>'s account.", ["unlock_user"]),
        ("Once deregistered, terminate <instance>.", ["terminate_instance"]),
        ("Post the numbers to #ops.", []),
    ],
)
def test_a_step_names_the_tools_whose_every_name_word_it_says(text: str, named: list[str]) -> None:
    action = Step(3, text).action
    assert [t.name for t in named_tools(action, TOOLS.values())] == named


def test_a_step_s_action_leaves_out_its_condition_and_what_it_says_not_to_do() -> None:
    """ "If the system status check is impaired" names the status checks, which the step does
    not call; "do not restart it" names the restart, which it does not do."""
    step = Step(3, 'If the system status check is "impaired", deregister <instance>.')
    assert "status" not in step.action
    assert "deregister" in step.action
    crash = Step(6, "If it is a crash, page the on-call engineer. Do not restart it.")
    assert [t.name for t in named_tools(crash.action, TOOLS.values())] == []
    request = _request(TOOLS, "# x\n", ["service"], ["1. status_checks({service})"], crash)
    grammar = Grammar(request.grammar or "")
    assert grammar.accepts('2. page_oncall({service}, "crash")\n<END_OF_STEP>')
    # Where it names an action, that action only.
    ticket = Step(3, "If there were more than 20 attempts, open a ticket for security.")
    request = _request(
        TOOLS,
        "# x\n1. a\n2. b\n3. c 20\n",
        ["user"],
        ["1. failed_signins({user})", "2. failed_signins({user})"],
        ticket,
    )
    grammar = Grammar(request.grammar or "")
    assert grammar.accepts('3. open_ticket("security", "x") if $2.attempts > 20\n<END_OF_STEP>')
    assert not grammar.accepts("3. unlock_user({user}) if $2.attempts > 20\n<END_OF_STEP>")
    assert not grammar.accepts("3. failed_signins({user}) if $2.attempts > 20\n<END_OF_STEP>")


@pytest.mark.parametrize(
    ("argument", "params", "found"),
    [
        ("username", ["user", "team"], ["user"]),
        ("flag_key", ["flag", "project"], ["flag"]),
        ("host", ["hostname"], ["hostname"]),
        ("instance_id", ["instance", "pool"], ["instance"]),
        ("target_group", ["instance", "pool"], []),
        ("summary", ["user"], []),
        ("id", ["id", "idp"], ["id"]),
    ],
)
def test_an_argument_stands_for_the_parameter_its_name_says(
    argument: str, params: list[str], found: list[str]
) -> None:
    assert named_params(argument, params) == found


def test_an_argument_that_stands_for_a_parameter_takes_it_not_an_example_value() -> None:
    """The 1.5B model passed `username="user"` and `flag_key="my-flag"` for `<user>`, `<flag>`."""
    bound = {"username": ["{user}"]}
    grammar = Grammar(
        step_grammar(TOOLS, first_id=1, lines=1, params=["user"], conditional=False, bound=bound)
    )
    assert grammar.accepts("1. failed_signins({user})\n<END_OF_STEP>")
    assert grammar.accepts("1. failed_signins(username={user}, hours=1)\n<END_OF_STEP>")
    assert not grammar.accepts('1. failed_signins(username="user")\n<END_OF_STEP>')
    assert not grammar.accepts('1. failed_signins("jdoe")\n<END_OF_STEP>')
    # An argument of another name takes any text.
    assert grammar.accepts('1. open_ticket("security", "{user} locked")\n<END_OF_STEP>')


def test_a_condition_reads_the_fields_its_clause_names() -> None:
    """ "If the system status check is impaired": the 1.5B model tested the target's state."""
    tools = {1: target_health, 2: status_checks, 3: deregister_target}
    focus = condition_focus(" the system status check is impaired", tools)
    assert focus == {2: ("system_status", "instance_status")}
    assert condition_focus(" the moon is full", tools) is None
    earlier = Earlier(tools, frozenset({3}), focus)
    grammar = Grammar(
        step_grammar(TOOLS, first_id=4, lines=1, params=["i"], earlier=earlier, words=["impaired"])
    )
    assert grammar.accepts(
        '4. terminate_instance({i}) if $2.system_status == "impaired"\n<END_OF_STEP>'
    )
    assert not grammar.accepts(
        '4. terminate_instance({i}) if $1.state == "impaired"\n<END_OF_STEP>'
    )
    assert not grammar.accepts("4. terminate_instance({i}) if $3 != None\n<END_OF_STEP>")
    # A clause that names a skippable action by its tool: whether it ran.
    ran = condition_focus("Once deregistered", tools)
    assert ran == {3: None}


def test_a_plain_dict_s_fields_are_listed_after_a_colon_or_under_returns() -> None:
    """ "Health of one target in a target group" says what the tool does, not its fields (the
    1.5B model read `${1.target.status}`); a docstring's Returns section names them."""
    assert tool_fields(target_health) == ("state", "reason", "unhealthy_minutes")
    assert "Returns: state" in target_health.render()
    assert tool_fields(status_checks) == ("system_status", "instance_status")
    assert described_fields(dict[str, Any], "disk usage of a host") == ("disk", "usage", "host")


@pytest.mark.parametrize(
    ("text", "conditional", "clause"),
    [
        (
            "Forecast above 100% and the env tag is sandbox: stop that resource.",
            True,
            "Forecast above 100% and the env tag is sandbox",
        ),
        ("Budget status for <account>: spend to date, forecast as % of budget.", False, ""),
        ("Top cost driver for <account>: resource id, env tag.", False, ""),
        ("Read the log. Steps 1-3 are independent: run them together.", False, ""),
        ("Disk over 90.5%: rotate the logs.", True, "Disk over 90.5%"),
    ],
)
def test_a_comparing_clause_before_a_colon_is_a_condition(
    text: str, conditional: bool, clause: str
) -> None:
    step = Step(3, text)
    assert step.conditional is conditional
    assert step.clause == (clause or text)  # no clause: its whole text
    if conditional:
        assert step.terms == 1 + clause.count(" and ")
        assert "stop" in step.action or "rotate" in step.action


def test_a_step_done_once_the_step_above_ran_or_in_its_case_gets_its_condition() -> None:
    so_far = [
        "1. status_checks({i})",
        '2. deregister_target({g}, {i}) if $1.system_status == "impaired"',
    ]
    once = Step(3, "Once deregistered, terminate <i>.")
    after = Step(3, "After a redrive, read the stats again.")
    same = Step(3, "In that same ordinary case, also page someone.")
    assert fixed_condition(once, so_far) == "$2 != None"
    assert fixed_condition(after, so_far) == "$2 != None"
    assert fixed_condition(same, so_far) == '$1.system_status == "impaired"'
    # Above a task every run has, nothing: the model writes the step as it is.
    assert fixed_condition(once, so_far[:1]) is None
    assert fixed_condition(Step(3, "Terminate <i> once more."), so_far) is None


RUNBOOK = """# Bad host <i> in <g>
1. EC2 status checks of <i>.
2. If the system status check is "impaired", deregister <i> from <g>.
3. Once deregistered, terminate <i>.
"""


def test_a_runbook_s_once_step_compiles_with_the_compiler_s_condition(tmp_path: Any) -> None:
    replies = [
        "1. status_checks({i})",
        '2. deregister_target({g}, {i}) if $1.system_status == "impaired"',
        '3. terminate_instance({i}) if $1.system_status == "ok"',  # its condition is not read
    ]
    assert [s.number for s in runbook_steps(RUNBOOK)] == [1, 2, 3]
    planner = [r + "\n<END_OF_STEP>" for r in replies]
    script = Script.by_purpose(planner=planner, joiner=[FINISH] * 2)
    rt = Runtime(TOOLS, ScriptedLLM(script), journal=tmp_path / "j.db", cache=False)
    plan = rt.compile_runbook(RUNBOOK, name="bad-host", by_step=True)
    assert plan.plan.splitlines()[2] == "3. terminate_instance({i}) if $2 != None"
    result = rt.run_plan("bad-host", i="i-1", g="web")
    assert {r.task.id: r.status.value for r in result.tasks} == {1: "done", 2: "done", 3: "done"}


@tool
def deployed_version(service: str) -> str:
    """The version of the service running in production."""
    return "v2"


@tool
def lag_seconds(replica: str) -> int:
    """Replication lag of a database replica, in seconds."""
    return 4


def test_a_result_is_compared_with_a_parameter_never_with_itself() -> None:
    """ "If production runs <version>": the 1.5B model wrote `$1 == $1`, always true."""
    tools = ToolRegistry([deployed_version, restart_service])
    earlier = Earlier({1: deployed_version, 2: deployed_version})
    grammar = Grammar(
        step_grammar(tools, first_id=3, lines=1, params=["s", "version"], earlier=earlier)
    )
    assert grammar.accepts("3. restart_service({s}) if $1 == {version}\n<END_OF_STEP>")
    assert grammar.accepts("3. restart_service({s}) if $1 != $2\n<END_OF_STEP>")
    assert not grammar.accepts("3. restart_service({s}) if $1 == $1\n<END_OF_STEP>")
    assert not grammar.accepts("3. restart_service({s}) if ${2} != $2\n<END_OF_STEP>")
    lone = Grammar(
        step_grammar(
            tools, first_id=2, lines=1, params=["s"], earlier=Earlier({1: deployed_version})
        )
    )
    assert lone.accepts('2. restart_service({s}) if $1 == "v2"\n<END_OF_STEP>')
    assert not lone.accepts("2. restart_service({s}) if $1 == $1\n<END_OF_STEP>")


def test_a_clause_with_a_number_reads_a_result_every_run_has() -> None:
    """ "If the lag is 30 seconds or less" after a restart that read the lag again (task 3,
    skipped when no restart): the 1.5B model wrote `$3 != None`, the only test of a skipped
    task; the lag every run read is task 1's."""
    tools = ToolRegistry([lag_seconds, restart_service, open_ticket])
    so_far = [
        "1. lag_seconds({r})",
        "2. restart_service({r}) if $1 > 30",
        "3. lag_seconds({r}) if $2 != None",
    ]
    step = Step(4, "If the lag is 30 seconds or less, open a ticket in #db saying so.")
    request = _request(tools, step.text, ["r"], so_far, step)
    grammar = Grammar(request.grammar or "")
    assert grammar.accepts('4. open_ticket("#db", "ok") if $1 <= 30\n<END_OF_STEP>')
    assert not grammar.accepts('4. open_ticket("#db", "ok") if $3 != None\n<END_OF_STEP>')
    # Without a number the clause may well ask whether the restart's reading happened.
    step = Step(4, "If the lag was read again, open a ticket in #db saying so.")
    request = _request(tools, step.text, ["r"], so_far, step)
    assert Grammar(request.grammar or "").accepts(
        '4. open_ticket("#db", "ok") if $3 != None\n<END_OF_STEP>'
    )


def test_a_step_that_says_to_decide_asks_its_own_words() -> None:
    """ "Decide from the log line whether the failure is a timeout or a crash": the 1.5B model
    asked "What is the most frequent error line...?" and the decision read a crash as a
    timeout.  The step's words are the question, its `<service>` the parameter."""
    from planweave.builtin.decide import decide

    tools = ToolRegistry([failed_signins, restart_service, decide])
    step = Step(2, "Decide from <service>'s log whether the failure is a timeout or a crash.")
    request = _request(tools, step.text, ["service"], ["1. failed_signins({service})"], step)
    grammar = Grammar(request.grammar or "")
    asked = '"Decide from {service}\'s log whether the failure is a timeout or a crash."'
    assert grammar.accepts(f'2. decide({asked}, $1, options=["timeout", "crash"])\n<END_OF_STEP>')
    assert grammar.accepts(
        f'2. decide(question={asked}, input=$1, options=["timeout", "crash"])\n<END_OF_STEP>'
    )
    assert not grammar.accepts(
        '2. decide("What is the error line?", $1, options=["timeout", "crash"])\n<END_OF_STEP>'
    )
    # A step that decides nothing leaves the question free.
    step = Step(2, "Look at the failed sign-ins once more.")
    request = _request(tools, step.text, ["service"], ["1. failed_signins({service})"], step)
    assert Grammar(request.grammar or "").accepts(
        '2. decide("What is the error line?", $1, options=["a", "b"])\n<END_OF_STEP>'
    )


@pytest.mark.parametrize(
    ("text", "clause", "terms", "action"),
    [
        (
            "If production runs <version>, the smoke tests passed and the error rate is under "
            "1 %, mark the release <service> <version> as verified.",
            " production runs <version>, the smoke tests passed and the error rate is under 1 %",
            3,
            " mark the release <service> <version> as verified.",
        ),
        (
            "If the disk is over 90 %, rotate the logs and restart it, then post.",
            " the disk is over 90 %",
            1,
            " rotate the logs and restart it, then post.",
        ),
        ("If the lag is 30 seconds or less, post.", " the lag is 30 seconds or less", 1, " post."),
        (
            "If A is up, the B is 2.5 or more, and its C is down, page them.",
            " A is up, the B is 2.5 or more, and its C is down",
            3,
            " page them.",
        ),
    ],
)
def test_a_condition_s_clause_goes_on_over_its_list(
    text: str, clause: str, terms: int, action: str
) -> None:
    """ "If production runs <version>, the smoke tests passed and ...": the clause ended at the
    first comma, so the 1.5B model was allowed one comparison for three conditions."""
    step = Step(4, text)
    assert (step.clause, step.terms, step.action) == (clause, terms, action)


@tool
def job_status(job: str) -> dict[str, Any]:
    """A batch job's last run: state, exit_code and attempts so far."""
    return {"state": "failed", "exit_code": 1, "attempts": 3}


@tool
def backup_age(database: str) -> dict[str, Any]:
    """The latest backup of a database: backup_id and age_h (hours since it was taken)."""
    return {"backup_id": "b-1", "age_h": 30}


@tool
def checksum_matches(backup_id: str) -> bool:
    """Whether a backup's checksum matches its manifest."""
    return True


def test_a_condition_reads_more_than_its_clause_names_when_it_says_more() -> None:
    """ "Tried 3 times or more" is `attempts`, which no word names: held to `exit_code`, the
    1.5B model could not write the second comparison.  "24 hours old or less and its checksum
    matches" names only the checksum, a bool: the age is another task's."""
    tools = ToolRegistry([job_status, backup_age, checksum_matches, open_ticket])
    step = Step(2, "If the exit code is not 137 and it was tried 3 times or more, open a ticket.")
    request = _request(tools, step.text, ["job"], ["1. job_status({job})"], step)
    assert Grammar(request.grammar or "").accepts(
        '2. open_ticket("ops", "{job}") if $1.exit_code != 137 and $1.attempts >= 3\n<END_OF_STEP>'
    )
    one = Step(2, "If the exit code is 137, open a ticket.")
    request = _request(tools, one.text, ["job"], ["1. job_status({job})"], one)
    assert not Grammar(request.grammar or "").accepts(
        '2. open_ticket("ops", "{job}") if $1.attempts == 137\n<END_OF_STEP>'
    )
    step = Step(3, "If it is 24 hours old or less and its checksum matches, open a ticket.")
    so_far = ["1. backup_age({db})", "2. checksum_matches($1.backup_id)"]
    request = _request(tools, step.text, ["db"], so_far, step)
    assert Grammar(request.grammar or "").accepts(
        '3. open_ticket("dba", "{db}") if $1.age_h <= 24 and $2\n<END_OF_STEP>'
    )


@pytest.mark.parametrize(
    ("text", "conditional", "terms"),
    [
        # What the condition means, after a comma, is the condition's too.
        (
            "If it serves one thing to all, meaning its rollout is at 0% or at 100%, mark it.",
            True,
            3,
        ),
        # A clause about several results may compare each pair.
        ("If the three answers are not all the same, open a ticket.", True, 3),
        ("If they are equal, post it.", True, 1),
        # Words in parentheses are an aside, not a condition.
        ("Read the key (its id, age, when it was last used).", False, 1),
        ("If the exit code is 137 (killed for memory), rerun it.", True, 1),
    ],
)
def test_what_a_step_s_words_make_of_its_condition(
    text: str, conditional: bool, terms: int
) -> None:
    step = Step(3, text)
    assert (step.conditional, step.terms) == (conditional, terms)


@pytest.mark.parametrize(
    ("text", "joiner"),
    [
        ("If the three answers are not all the same, open a ticket.", "or"),
        ("If they are all the same, post it.", "and"),
        ("If any of the checks failed, page.", "or"),
        ("If both checks passed, mark it.", "and"),
        ("If the disk is full or the logs are big, rotate.", None),
        ("If all checks passed and the rate is low, mark it.", None),
        ("If the disk is full, rotate.", None),
    ],
)
def test_a_clause_about_all_or_some_joins_with_and_or_or(text: str, joiner: str | None) -> None:
    """ "If the three answers are not all the same": the 1.5B model wrote `$2 != $3 and $3 !=
    $1 and $1 != $2` (all differ), so two answers alike and one apart opened no ticket."""
    assert Step(4, text).joiner == joiner


def test_a_step_grammar_joins_with_the_one_word_it_is_given() -> None:
    earlier = Earlier({1: deployed_version, 2: deployed_version, 3: deployed_version})
    tools = ToolRegistry([restart_service])

    def grammar(joiner: str | None) -> Grammar:
        return Grammar(
            step_grammar(tools, first_id=4, lines=1, params=["s"], earlier=earlier, joiner=joiner)
        )

    some = "4. restart_service({s}) if $1 != $2 or $2 != $3\n<END_OF_STEP>"
    every = "4. restart_service({s}) if $1 != $2 and $2 != $3\n<END_OF_STEP>"
    assert grammar("or").accepts(some)
    assert not grammar("or").accepts(every)
    assert grammar("and").accepts(every)
    assert not grammar("and").accepts(some)
    assert grammar(None).accepts(some)
    assert grammar(None).accepts(every)


@tool
def top_cost(account: str) -> dict[str, Any]:
    """The account's top cost driver: resource_id, env and monthly_cost."""
    return {"resource_id": "i-1", "env": "sandbox", "monthly_cost": 900}


@tool(side_effects=True)
def stop_resource(account: str, resource_id: str) -> str:
    """Stop a resource."""
    return f"stopped {resource_id}"


@tool(side_effects=True)
def post(channel: str, message: str) -> str:
    """Post a message to a channel."""
    return "posted"


def test_an_argument_named_like_a_field_takes_that_field() -> None:
    """The 1.5B model passed `resource_id=$1.env` beside `$1.resource_id`."""
    tools = ToolRegistry([top_cost, stop_resource, new_key])
    step = Step(2, "If it is in the sandbox, stop that resource.")
    request = _request(tools, step.text, ["acct"], ["1. top_cost({acct})"], step)
    grammar = Grammar(request.grammar or "")
    assert grammar.accepts(
        '2. stop_resource({acct}, $1.resource_id) if $1.env == "sandbox"\n<END_OF_STEP>'
    )
    assert not grammar.accepts(
        '2. stop_resource({acct}, $1.env) if $1.env == "sandbox"\n<END_OF_STEP>'
    )
    assert grammar.accepts('2. stop_resource({acct}, "i-9") if $1.env == "sandbox"\n<END_OF_STEP>')
    # A result that is no record may stand for it too: the new id, not the old one's field.
    so_far = ["1. top_cost({acct})", "2. new_key({acct})"]
    step = Step(3, "Stop the resource the new key names.")
    request = _request(tools, step.text, ["acct"], so_far, step)
    assert Grammar(request.grammar or "").accepts("3. stop_resource({acct}, $2)\n<END_OF_STEP>")
    # Not one of another type (a true or false for an id).
    so_far = ["1. top_cost({acct})", "2. in_sandbox({acct})"]
    request = _request(
        ToolRegistry([top_cost, stop_resource, in_sandbox]), step.text, ["acct"], so_far, step
    )
    assert not Grammar(request.grammar or "").accepts("3. stop_resource({acct}, $2)\n<END_OF_STEP>")


@tool
def in_sandbox(account: str) -> bool:
    """Whether the account is a sandbox."""
    return True


def test_in_tests_a_text_or_a_list_never_a_bool() -> None:
    """The 1.5B model wrote `${1.resource_id} in $2` of a true or false."""
    earlier = Earlier({1: top_cost, 2: in_sandbox})
    grammar = Grammar(
        step_grammar(ToolRegistry([post]), first_id=3, lines=1, params=["a"], earlier=earlier)
    )
    end = "\n<END_OF_STEP>"
    assert not grammar.accepts(f'3. post("#x", "y") if $1.resource_id in $2{end}')
    assert grammar.accepts(f'3. post("#x", "y") if $1.resource_id in $1.env{end}')
    assert grammar.accepts(f'3. post("#x", "y") if $1.resource_id == $2{end}')


@tool(side_effects=True)
def new_key(account: str) -> str:
    """Create an API key; returns its id."""
    return "k-2"


def test_a_step_that_always_runs_reads_no_task_a_run_may_skip() -> None:
    """ "Post to #finops: the forecast and the top driver" after a stop that runs only over
    budget: the 1.5B model wrote `${2}` of the stop into the message, so the message, meant for
    every run, was skipped with the stop."""
    tools = ToolRegistry([top_cost, stop_resource, post])
    so_far = ["1. top_cost({acct})", '2. stop_resource({acct}, $1.resource_id) if $1.env == "x"']
    step = Step(3, "Post to #finops the top driver's cost.")
    request = _request(tools, step.text, ["acct"], so_far, step)
    grammar = Grammar(request.grammar or "")
    assert grammar.accepts('3. post("#finops", "top: ${1.monthly_cost}")\n<END_OF_STEP>')
    assert not grammar.accepts('3. post("#finops", "top: ${2}")\n<END_OF_STEP>')
    assert not grammar.accepts('3. post("#finops", $2)\n<END_OF_STEP>')
    # A step with a condition of its own may read it.
    step = Step(3, "If the resource was stopped, post to #finops what was stopped.")
    request = _request(tools, step.text, ["acct"], so_far, step)
    assert Grammar(request.grammar or "").accepts(
        '3. post("#finops", "stopped: ${2}") if $2 != None\n<END_OF_STEP>'
    )
