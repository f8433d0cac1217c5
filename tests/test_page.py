"""The web page at `/`, in a real browser: Debian's chromium driven by Playwright, against the
real server (the scripted LLM, tools with controlled latency).  Skipped only where chromium is
not installed, and never in CI (`.ci/run` installs it and sets PLANWEAVE_REQUIRE_BROWSER).
About 6 s."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

import live_server
from demo_tools import TOOLS
from one_model import OneAtATime
from planweave import Reply, RunSettings, Runtime, Script, ScriptedLLM
from planweave.llm.base import Message, Purpose
from planweave.server import ServerConfig
from planweave.users import Users, add_user

TOKEN = "page-token-0123456789abcdef"
ANSWER = "About 583 people per km²."
# Two lookups of 0.6 s that run side by side, then the division that needs both.
PLAN = (
    'Thought: both lookups first.\n1. population("Netherlands", delay=0.6)\n'
    '2. area("Netherlands", delay=0.6)\n3. divide($1, $2)\n4. join()\n<END_OF_PLAN>'
)
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _reply(messages: list[Message], purpose: Purpose) -> Reply | str:
    if purpose == "planner":
        return Reply(PLAN, chunk_size=12, delay=0.02)
    if purpose == "joiner":
        return Reply(f"Action: Finish({ANSWER})", chunk_size=3, delay=0.03)
    raise AssertionError(f"no reply for {purpose}")


@pytest.fixture
def base(tmp_path: Path) -> Iterator[str]:
    runtime = Runtime(TOOLS, ScriptedLLM(Script.routed(_reply)), journal=tmp_path / "runs.db")
    with live_server.serving(runtime, ServerConfig(token=TOKEN)) as url:
        yield url


def test_the_page_is_served_without_the_token_and_holds_no_data(base: str) -> None:
    with httpx.Client(base_url=base, timeout=10) as anonymous:
        page = anonymous.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy
        assert "default-src 'none'" in policy
        for path in ("/page.js", "/page.css"):
            assert anonymous.get(path).status_code == 200
        assert '<script src="/page.js" defer></script>' in page.text
        assert "http" not in page.text.split("<body>")[0]  # nothing loaded from elsewhere
        assert TOKEN not in page.text
        assert "<script>" not in page.text  # no inline script: the policy would refuse it
        icon = anonymous.get("/favicon.ico")  # what a browser asks for first, token or not
        assert icon.status_code == 200
        assert icon.headers["content-type"] == "image/x-icon"
        assert icon.content[:4] == b"\x00\x00\x01\x00"  # an ICO file
        assert anonymous.get("/runs").status_code == 401
        assert anonymous.post("/").status_code == 401  # only reading the page is open
        assert anonymous.get("/", headers={"origin": "https://attacker.example"}).status_code == 403


@pytest.fixture
def browser_page(tmp_path: Path) -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI") or os.environ.get("PLANWEAVE_REQUIRE_BROWSER"):
            pytest.fail(f"chromium is not installed at {CHROMIUM}; .ci/run installs it")
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, args=ARGS, headless=True
        )
        try:
            context.set_default_timeout(20_000)
            yield context.new_page()
        finally:
            context.close()


@pytest.mark.browser
def test_ask_watch_the_plan_run_and_approve_one(
    base: str, browser_page: Any, tmp_path: Path
) -> None:
    page = browser_page
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(base)
    page.locator("#token").fill(TOKEN)
    page.locator("#login button").click()
    page.locator("#app").wait_for(state="visible")
    assert TOKEN not in page.url
    assert page.evaluate("sessionStorage.getItem('planweave-token')") == TOKEN

    # Ask; the tasks appear as the plan streams, the two lookups overlap, all finish.
    question = 'Density of the Netherlands? <img src=x onerror="window.pwned=1">'
    page.locator("#question").fill(question)
    page.locator("#ask button").click()
    # (Locators, not wait_for_function: the page's policy refuses evaluating strings.)
    page.locator("#dag g[data-task='1']").wait_for()
    first = page.locator("#dag g[data-task='1'] rect")
    first_seen = (first.get_attribute("x"), first.get_attribute("y"))  # in the graph's frame
    page.locator("#tasks tr.task[data-status=running]").nth(1).wait_for()
    page.locator("#tasks tr.task[data-status=done]").nth(2).wait_for()
    page.locator("#answer").filter(has_text=ANSWER).wait_for()
    page.locator("#run-status").filter(has_text="finished").wait_for()
    assert page.locator("#tasks tr.task td.call").all_inner_texts() == [
        'population("Netherlands", delay=0.6)',
        'area("Netherlands", delay=0.6)',
        "divide($1, $2)",
    ]
    assert page.locator("#tasks tr.task").nth(2).locator("td").nth(2).inner_text() == "$1 $2"
    bars = [page.locator(f"#tasks tr.task[data-task='{i}'] .bar").bounding_box() for i in (1, 2, 3)]
    assert all(bars)
    one, two, three = bars
    assert two["x"] < one["x"] + one["width"]  # the lookups ran side by side
    assert three["x"] >= max(one["x"] + one["width"], two["x"] + two["width"]) - 1
    # The DAG in layers: the two lookups side by side in one layer, the division in the next,
    # an edge from each lookup to it; the first node where it was drawn before the others came.
    assert page.locator("#dag g").count() == 3
    assert page.locator("#dag path.edge").count() == 2
    nodes = [page.locator(f"#dag g[data-task='{i}'] rect").bounding_box() for i in (1, 2, 3)]
    assert all(nodes)
    n1, n2, n3 = nodes
    assert (first.get_attribute("x"), first.get_attribute("y")) == first_seen
    assert n1["x"] == n2["x"]
    assert abs(n1["y"] - n2["y"]) >= n1["height"]  # not on top of each other
    assert n3["x"] >= n1["x"] + n1["width"]
    top, bottom = min(n1["y"], n2["y"]), max(n1["y"], n2["y"]) + n1["height"]
    assert top < n3["y"] + n3["height"] / 2 < bottom  # between them
    # The question is shown as text, never as markup.
    assert page.locator("#run-question").inner_text() == question
    assert page.locator("img").count() == 0
    assert page.evaluate("window.pwned") is None
    page.locator("#tasks tr.task[data-task='3']").click()
    page.locator("#detail-body").filter(has_text="427.7").wait_for()
    # Click a node of the graph: its arguments and its result, as the tool had and gave them.
    page.locator("#dag g[data-task='1']").click()
    page.locator("#detail-title").filter(has_text="task 1").wait_for()
    shown = json.loads(page.locator("#detail-body").inner_text())
    assert shown["call"] == 'population("Netherlands", delay=0.6)'
    assert shown["args"] == {"country": "Netherlands", "delay": 0.6}
    assert shown["result"] == 17_900_000
    assert shown["status"] == "done"
    page.locator("#dag g[data-task='3']").click()
    page.locator("#detail-title").filter(has_text="task 3").wait_for()
    shown = json.loads(page.locator("#detail-body").inner_text())
    assert shown["args"] == {"a": "$1", "b": "$2"}
    assert shown["inputs"] == {"$1": 17_900_000, "$2": 41_850}  # what $1 and $2 stood for
    assert shown["result"] == pytest.approx(17_900_000 / 41_850)
    page.screenshot(path=tmp_path / "page.png", full_page=True)

    # A run that waits for approval: edit an argument, approve, and it runs.
    page.locator("#approve").select_option("plan")
    page.locator("#question").fill("Density of the Netherlands, once approved?")
    page.locator("#ask button").click()
    page.locator("#approval").wait_for(state="visible")
    page.locator("#run-status").filter(has_text="awaiting approval").wait_for()
    assert page.locator("#tasks tr.task[data-status=pending]").count() == 3
    page.screenshot(path=tmp_path / "page-approval.png", full_page=True)
    page.locator("input.arg[data-task='2'][data-arg='country']").fill('"Belgium"')
    page.locator("#approve-btn").click()
    page.locator("#approval").wait_for(state="hidden")
    page.locator("#run-status").filter(has_text="finished").wait_for()
    page.locator("#answer").filter(has_text=ANSWER).wait_for()
    assert page.locator("#tasks tr.task[data-task='2'] td.call").inner_text() == (
        'area(country="Belgium", delay=0.6)'
    )
    assert page.locator("#notes").inner_text() == "approved, edited 2"
    assert errors == []


@pytest.mark.browser
def test_a_run_waiting_for_the_model_says_how_many_are_ahead(
    tmp_path: Path, browser_page: Any
) -> None:
    """A model that answers one call at a time (as the embedded one): a run whose planner call
    waits shows so in its view and in the list, until it has the model."""
    hold = threading.Event()
    model = OneAtATime(ScriptedLLM(Script.routed(_reply)), lambda r: r.purpose, hold=hold)
    runtime = Runtime(TOOLS, model, journal=tmp_path / "runs.db")
    try:
        with (
            live_server.serving(runtime, ServerConfig(token=TOKEN)) as base,
            httpx.Client(
                base_url=base, headers={"authorization": f"Bearer {TOKEN}"}, timeout=20
            ) as http,
        ):
            first = http.post("/runs", json={"question": "Density, first?"}).json()["id"]
            waiting = http.post("/runs", json={"question": "Density, second?"}).json()["id"]
            deadline = time.monotonic() + 20
            while "model_wait" not in http.get(f"/runs/{waiting}").json():
                assert time.monotonic() < deadline, "the second run never waited"
                time.sleep(0.02)
            page = browser_page
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{base}/#{waiting}")
            page.locator("#token").fill(TOKEN)
            page.locator("#login button").click()
            shown = "waiting for the model — 1 ahead"
            page.locator("#run-wait").filter(has_text=shown).wait_for()
            page.locator(f"#runs li[data-id='{waiting}'] .badge.wait").filter(
                has_text=shown
            ).wait_for()
            assert page.locator(f"#runs li[data-id='{first}'] .badge.wait").count() == 0
            page.locator("#tasks tr.llm").filter(has_text=shown).wait_for()
            page.screenshot(path=tmp_path / "page-waiting.png", full_page=True)
            hold.set()
            page.locator("#run-status").filter(has_text="finished").wait_for()
            page.locator("#answer").filter(has_text=ANSWER).wait_for()
            page.locator("#run-wait").wait_for(state="hidden")
            page.locator(f"#runs li[data-id='{waiting}'] .badge.wait").wait_for(state="detached")
            assert page.locator("#tasks tr.llm").filter(has_text="waiting").count() == 0
            assert errors == []
    finally:
        hold.set()


# Two lookups of one country, one of a country that does not exist, the division of the two.
FAILING_PLAN = (
    '1. population("Netherlands", delay=0.3)\n2. area("Netherlands", delay=0.3)\n'
    '3. population("Atlantis")\n4. divide($1, $2)\n5. join()\n<END_OF_PLAN>'
)

# Words of a task's call as the table shows them: no line break may fall inside one.
_SPLIT_WORDS = """() => [...document.querySelectorAll("#tasks td.call")].flatMap((cell) => {
  const text = cell.firstChild;
  return [...text.data.matchAll(/[A-Za-z0-9_."$]+/g)].filter((m) => {
    const range = document.createRange();
    range.setStart(text, m.index);
    range.setEnd(text, m.index + m[0].length);
    return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size > 1;
  }).map((m) => m[0]);
})"""


@pytest.mark.browser
def test_a_run_s_llm_calls_totals_failures_labels_and_time_axis(
    tmp_path: Path, browser_page: Any
) -> None:
    planned: list[int] = []

    def reply(messages: list[Message], purpose: Purpose) -> Reply | str:
        if purpose == "planner":
            planned.append(1)
            return Reply(FAILING_PLAN if len(planned) == 1 else "5. join()", chunk_size=12)
        assert purpose == "joiner"
        return Reply(f"Action: Finish({ANSWER})", chunk_size=2, delay=0.1)  # about 2.5 s

    # $2 per million prompt tokens, $10 per million completion tokens.
    settings = RunSettings(price="2/10")
    llm = ScriptedLLM(Script.routed(reply))
    runtime = Runtime(TOOLS, llm, settings, journal=tmp_path / "runs.db")
    with (
        live_server.serving(runtime, ServerConfig(token=TOKEN)) as base,
        httpx.Client(
            base_url=base, headers={"authorization": f"Bearer {TOKEN}"}, timeout=20
        ) as http,
    ):
        page = browser_page
        page.set_viewport_size({"width": 800, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(base)
        page.locator("#token").fill(TOKEN)
        page.locator("#login button").click()
        page.locator("#question").fill("Density of the Netherlands, and of Atlantis?")
        page.locator("#ask button").click()
        page.locator("#tasks tr.task[data-status=done]").nth(2).wait_for()
        run_id = page.locator("#runs li.selected").get_attribute("data-id")
        # While the joiner still streams, the list counts what has ended (it was asked for
        # when the run began, with no task planned yet).
        listed = page.locator(f"#runs li[data-id='{run_id}']")
        listed.locator(".counts").filter(has_text="3/4 tasks").wait_for()
        assert page.locator("#run-status").inner_text() == "running"
        page.locator("#answer").filter(has_text=ANSWER).wait_for()
        # A finished run with a failed task says so, here and in the list.
        page.locator("#run-status").filter(has_text="finished, 1 failed").wait_for()
        assert "s-finished-failed" in (page.locator("#run-status").get_attribute("class") or "")
        listed.locator(".badge").filter(has_text="finished, 1 failed").wait_for()
        # The run's LLM totals are the journal's, and what they cost.
        used = http.get(f"/runs/{run_id}").json()["llm"]
        p, c = used["prompt_tokens"], used["completion_tokens"]
        totals = f"3 LLM calls · {p}+{c} tokens · ${(2 * p + 10 * c) / 1e6:.6f}"
        assert page.locator("#run-llm").inner_text() == totals
        # Nodes say the tool and its key argument: the two lookups of one country differ.
        labels = [
            page.locator(f"#dag g[data-task='{i}'] text").all_text_contents() for i in (1, 2, 3, 4)
        ]
        assert labels == [
            ["1. population", "Netherlands"],
            ["2. area", "Netherlands"],
            ["3. population", "Atlantis"],
            ["4. divide", "$1"],
        ]
        # The timeline has a time axis, from 0 s.
        ticks = page.locator("#axis .tick").all_inner_texts()
        assert ticks[0] == "0 s"
        assert len(ticks) >= 3
        assert all(t.endswith(" s") for t in ticks)
        # At 800 px the task column wraps between words, never inside one.
        assert page.evaluate(_SPLIT_WORDS) == []
        # Open the planner's call: its prompt, its response, tokens and time.
        page.locator("#tasks tr.llm").first.click()
        page.locator("#detail-title").filter(has_text="LLM call 1 (planner)").wait_for()
        body = page.locator("#detail-body")
        body.filter(has_text="── response ──").wait_for()
        text = body.inner_text()
        calls = http.get(f"/runs/{run_id}").json()["llm_calls"]
        first = calls[0]
        p, c = first["prompt_tokens"], first["completion_tokens"]
        assert text.startswith(f"scripted · {p}+{c} tokens · ${(2 * p + 10 * c) / 1e6:.6f} · ")
        prompt, response = text.split("── response ──")
        assert "[system]" in prompt
        assert "The population of a country." in prompt  # the tools, as the planner saw them
        assert "[user]" in prompt
        assert "Density of the Netherlands, and of Atlantis?" in prompt
        assert response.strip() == first["text"].strip()  # as far as the planner read it
        assert '3. population("Atlantis")\n4. divide($1, $2)' in response
        page.screenshot(path=tmp_path / "page-llm.png", full_page=True)
        # And the joiner's: its response is the answer's action.
        page.locator("#tasks tr.llm").nth(2).click()
        page.locator("#detail-title").filter(has_text="(joiner)").wait_for()
        body.filter(has_text=f"Action: Finish({ANSWER})").wait_for()
        assert errors == []


def test_the_page_says_who_is_signed_in_and_lists_only_their_runs(
    tmp_path: Path, browser_page: Any
) -> None:
    users_file = tmp_path / "users.toml"
    tokens = {name: add_user(users_file, name) for name in ("alice", "bob")}
    tokens["root"] = add_user(users_file, "root", "admin")
    runtime = Runtime(TOOLS, ScriptedLLM(Script.routed(_reply)), journal=tmp_path / "runs.db")
    config = ServerConfig(token=TOKEN, users=Users.load(users_file))
    with live_server.serving(runtime, config) as base:
        for name in ("alice", "bob"):
            with httpx.Client(base_url=base, timeout=20) as http:
                auth = {"authorization": f"Bearer {tokens[name]}"}
                body = {"question": f"Density of the Netherlands, for {name}?"}
                assert http.post("/runs", json=body, headers=auth).status_code == 202
        page = browser_page
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(base)
        page.locator("#token").fill(tokens["alice"])
        page.locator("#login button").click()
        page.locator("#server").filter(has_text="signed in as alice").wait_for()
        page.locator("#runs li").first.wait_for()
        assert page.locator("#runs li .q").all_inner_texts() == [
            "Density of the Netherlands, for alice?"
        ]
        assert page.locator("#runs .owner").count() == 0  # a user's own runs need no name
        page.locator("#forget").click()
        page.locator("#token").fill(tokens["root"])
        page.locator("#login button").click()
        page.locator("#server").filter(has_text="signed in as root (admin)").wait_for()
        page.locator("#runs li").nth(1).wait_for()
        owners = page.locator("#runs li .owner").all_inner_texts()
        assert sorted(owners) == ["alice", "bob"]
        assert errors == []


@pytest.mark.browser
def test_the_page_lists_named_plans_and_runs_one_with_its_parameters(
    tmp_path: Path, browser_page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from branch_tools import DISK_PLAN, FINISH
    from branch_tools import TOOLS as RUNBOOK_TOOLS

    monkeypatch.setenv("PLANWEAVE_TEST_LEDGER", str(tmp_path / "ledger.txt"))
    script = Script.by_purpose(joiner=[FINISH] * 2)
    runtime = Runtime(RUNBOOK_TOOLS, ScriptedLLM(script), journal=tmp_path / "runs.db")
    runtime.save_plan("free-disk", DISK_PLAN.replace('"db-3"', "{host}").replace("db-3", "{host}"))
    with live_server.serving(runtime, ServerConfig(token=TOKEN)) as base:
        page = browser_page
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(base)
        page.locator("#token").fill(TOKEN)
        page.locator("#login button").click()
        page.locator("#plans li").first.wait_for()
        assert page.locator("#plans li").all_inner_texts() == ["free-disk v1"]
        page.locator("#plans li").first.click()
        page.locator("#plan-run button").click()  # without its parameter: refused, said why
        page.locator("#plan-error").filter(has_text="plan free-disk needs host (str)").wait_for()
        page.locator("#plan-params input[data-param=host]").fill("db-7")
        page.locator("#plan-run button").click()
        page.locator("#run-status").filter(has_text="finished").wait_for()
        page.locator("#run-question").filter(has_text="plan free-disk v1").wait_for()
        assert page.locator("#tasks tr.task td.call").all_inner_texts()[0] == 'disk_usage("db-7")'
        assert errors == []
    assert script.purposes == ["joiner"]  # the plan ran without a planner call
    assert "rotate_logs db-7" in (tmp_path / "ledger.txt").read_text()
