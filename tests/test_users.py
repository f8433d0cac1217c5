"""Users (issue 32): tokens mapped to users in a users file, runs owned by their user.  Two
users and an admin against a real server on loopback (the scripted LLM, the demo tools): neither
user can read, follow, approve, reject, resume or cancel the other's runs, over REST, the page's
reads, the OpenAI endpoint (its threads too) and MCP over streamable HTTP; the admin can."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import openai
import pytest
import uvicorn
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

import live_server
from cli_process import invoke_cli
from demo_tools import TOOLS
from live_server import events
from planweave import Reply, Runtime, Script, ScriptedLLM, UserError
from planweave.llm.base import Message, Purpose
from planweave.mcp_server import http_app
from planweave.server import ServerConfig, check_bind
from planweave.users import OPERATOR, User, Users, add_user, hash_token, read_users

OPERATOR_TOKEN = "operator-token-0123456789"
PLAN = '1. population("France")\n2. population("Belgium")\n3. join()\n<END_OF_PLAN>'


def _reply(messages: list[Message], purpose: Purpose) -> Reply | str:
    if purpose == "planner":
        return PLAN
    if purpose == "joiner":
        return "Action: Finish(France)"
    raise AssertionError(f"no reply for {purpose}")


@pytest.fixture
def users_file(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A users file of alice and bob (users) and root (admin); their tokens by name."""
    path = tmp_path / "users.toml"
    tokens = {
        "alice": add_user(path, "alice"),
        "bob": add_user(path, "bob"),
        "root": add_user(path, "root", "admin"),
    }
    return path, tokens


@pytest.fixture
def script() -> Script:
    return Script.routed(_reply)


@pytest.fixture
def base(journal_db: str, users_file: tuple[Path, dict[str, str]], script: Script) -> Iterator[str]:
    runtime = Runtime(TOOLS, ScriptedLLM(script), journal=journal_db)
    config = ServerConfig(token=OPERATOR_TOKEN, users=Users.load(users_file[0]))
    with live_server.serving(runtime, config) as url:
        yield url


@pytest.fixture
def clients(base: str, users_file: tuple[Path, dict[str, str]]) -> Iterator[dict[str, Any]]:
    """An HTTP client for each user, by name."""
    made = {
        name: httpx.Client(base_url=base, headers={"authorization": f"Bearer {token}"}, timeout=20)
        for name, token in users_file[1].items()
    }
    yield made
    for client in made.values():
        client.close()


def start(http: httpx.Client, question: str = "France or Belgium?", **body: Any) -> str:
    response = http.post("/runs", json={"question": question, **body})
    assert response.status_code == 202, response.text
    return str(response.json()["id"])


def ended(http: httpx.Client, run_id: str) -> dict[str, Any]:
    for _ in range(400):
        run: dict[str, Any] = http.get(f"/runs/{run_id}").json()
        if run["status"] not in ("running", "queued"):
            return run
        time.sleep(0.025)
    raise AssertionError(f"run {run_id} did not end")


def refused(response: httpx.Response, run_id: str) -> None:
    """The answer to a request for a run the caller may not see: that there is no such run,
    word for word what a run that does not exist gets."""
    assert response.status_code == 404, response.text
    assert response.json() == {
        "error": {"message": f"no run {run_id!r}", "type": "not_found", "code": 404}
    }


def test_a_user_sees_and_acts_on_only_their_own_runs_over_rest(
    clients: dict[str, httpx.Client],
) -> None:
    alice, bob, root = clients["alice"], clients["bob"], clients["root"]
    paused = start(alice, approve="plan")  # waits for approval
    mine = start(bob)
    assert ended(alice, paused)["status"] == "awaiting_approval"
    assert ended(bob, mine)["status"] == "finished"
    # The run is its caller's, as the journal has it.
    assert alice.get(f"/runs/{paused}").json()["settings"]["user"] == "alice"
    assert root.get(f"/runs/{mine}").json()["settings"]["user"] == "bob"
    assert alice.get("/me").json() == {"user": "alice", "role": "user"}
    assert root.get("/me").json() == {"user": "root", "role": "admin"}

    # Lists are filtered; the admin lists everyone's.
    assert [r["id"] for r in alice.get("/runs").json()["runs"]] == [paused]
    assert [r["id"] for r in bob.get("/runs").json()["runs"]] == [mine]
    assert [r["id"] for r in root.get("/runs").json()["runs"]] == [mine, paused]
    # Another's run is no run: shown, followed, acted on, by its id, a prefix or a page mark.
    for run_id, other in ((paused, bob), (mine, alice)):
        for response in (
            other.get(f"/runs/{run_id}"),
            other.get(f"/runs/{run_id[:8]}"),
            other.get(f"/runs/{run_id}/events"),
            other.post(f"/runs/{run_id}/approve"),
            other.post(f"/runs/{run_id}/reject", json={"reason": "mine now"}),
            other.post(f"/runs/{run_id}/resume"),
            other.post(f"/runs/{run_id}/cancel"),
        ):
            refused(response, response.url.path.split("/")[2])
        refused(other.get("/runs", params={"before": run_id}), run_id)
    refused(bob.get("/runs/nosuchrun"), "nosuchrun")  # the same answer as no run at all
    assert alice.get(f"/runs/{paused}").json()["status"] == "awaiting_approval"  # untouched

    # Its owner follows and approves it; then it answers.
    assert events(alice, paused)[-1]["data"]["kind"] in ("run_finished", "plan_awaiting_approval")
    assert alice.post(f"/runs/{paused}/approve").status_code == 202
    run = ended(alice, paused)
    assert (run["status"], run["answer"], run["settings"]["user"]) == (
        "finished",
        "France",
        "alice",
    )
    assert events(alice, paused)[-1]["data"]["kind"] == "run_finished"
    # Its owner cancels it (a finished run says so); the admin acts on anyone's.
    assert bob.post(f"/runs/{mine}/cancel").json() == {"id": mine, "status": "finished"}
    assert root.post(f"/runs/{paused}/cancel").status_code == 200
    assert [e["data"]["kind"] for e in events(root, mine)][-1] == "run_finished"


def test_a_run_cannot_be_started_for_another_user(clients: dict[str, httpx.Client]) -> None:
    alice, root = clients["alice"], clients["root"]
    claimed = alice.post("/runs", json={"question": "France or Belgium?", "user": "bob"})
    assert claimed.status_code == 422
    assert "user" in claimed.json()["error"]["message"]
    # Not even an admin: a run is always its caller's.
    assert root.post("/runs", json={"question": "q", "user": "bob"}).status_code == 422
    assert root.get("/runs").json()["runs"] == []


def test_a_wrong_token_is_refused_and_the_page_loads_without_one(
    base: str, users_file: tuple[Path, dict[str, str]]
) -> None:
    with httpx.Client(base_url=base, timeout=20) as anonymous:
        for headers in (
            {},
            {"authorization": "Bearer not-a-token-of-anyone"},
            {"authorization": f"Basic {users_file[1]['alice']}"},
            {"authorization": f"Bearer {hash_token(users_file[1]['alice'])}"},
        ):
            for method, path in (("GET", "/runs"), ("GET", "/me"), ("POST", "/runs")):
                response = anonymous.request(method, path, headers=headers, json={})
                assert response.status_code == 401, (headers, path)
                assert response.json()["error"]["type"] == "unauthorized"
        # The page's own files hold no data: served without a token, as before.
        assert anonymous.get("/").status_code == 200
        assert anonymous.get("/page.js").status_code == 200
        # The operator's token still works beside the users file: an admin whose runs carry
        # no user, as `planweave run`'s do.
        operator = {"authorization": f"Bearer {OPERATOR_TOKEN}"}
        assert anonymous.get("/me", headers=operator).json() == {"user": None, "role": "admin"}


def test_the_openai_endpoint_starts_the_caller_s_runs_and_keeps_threads_apart(
    base: str,
    users_file: tuple[Path, dict[str, str]],
    clients: dict[str, httpx.Client],
    script: Script,
) -> None:
    tokens = users_file[1]

    def sdk(name: str) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{base}/v1", api_key=tokens[name], max_retries=0)

    question = [{"role": "user", "content": "Which has more people, France or Belgium?"}]
    # OpenAI's own `user` field is an end user's tag: it makes nobody else the run's owner.
    first = sdk("alice").chat.completions.create(
        model="planweave",
        messages=question,  # type: ignore[arg-type]
        metadata={"thread": "shared"},
        user="bob",
    )
    alice_run = first.model_extra["planweave"]["run_id"]  # type: ignore[index]
    assert clients["alice"].get(f"/runs/{alice_run}").json()["settings"]["user"] == "alice"
    refused(clients["bob"].get(f"/runs/{alice_run}"), alice_run)
    # Bob's turn in a thread of the same id reads nothing of alice's.
    follow_up = [{"role": "user", "content": "And how many in Spain?"}]
    stream = sdk("bob").chat.completions.create(
        model="planweave",
        messages=follow_up,  # type: ignore[arg-type]
        metadata={"thread": "shared"},
        stream=True,
    )
    chunks: list[Any] = list(stream)
    bob_run = chunks[0].model_extra["planweave"]["run_id"]
    planner_prompt = script.requests[-2][-1].content
    assert planner_prompt.startswith("Question: And how many in Spain?")
    assert "France or Belgium" not in planner_prompt
    assert [r["id"] for r in clients["bob"].get("/runs").json()["runs"]] == [bob_run]
    refused(clients["alice"].get(f"/runs/{bob_run}/events"), bob_run)
    # Alice's next turn of her thread does read her own.
    sdk("alice").chat.completions.create(
        model="planweave",
        messages=follow_up,  # type: ignore[arg-type]
        metadata={"thread": "shared"},
    )
    assert "France or Belgium" in script.requests[-2][-1].content
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(
            base_url=f"{base}/v1", api_key="nobody-0123456789abcdef", max_retries=0
        ).chat.completions.create(model="planweave", messages=question)  # type: ignore[arg-type]


@contextmanager
def serving_app(app: Any) -> Iterator[str]:
    """An ASGI app on a free loopback port; yields its base URL."""
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", ws="none")
    )
    thread = threading.Thread(target=server.run, name="planweave-mcp", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_mcp_over_http_shows_each_user_only_their_own_runs(
    tmp_path: Path, users_file: tuple[Path, dict[str, str]]
) -> None:
    path, tokens = users_file
    runtime = Runtime(TOOLS, ScriptedLLM(Script.routed(_reply)), journal=tmp_path / "runs.db")
    app = http_app(runtime, users=Users.load(path))

    async def session(url: str, name: str) -> Any:
        http = httpx.AsyncClient(headers={"authorization": f"Bearer {tokens[name]}"}, timeout=30)
        return http, Client(streamable_http_client(f"{url}/mcp", http_client=http))

    async def resource(client: Client, uri: str) -> Any:
        (content,) = (await client.read_resource(uri)).contents
        return json.loads(content.text)  # type: ignore[union-attr]

    async def main(url: str) -> None:
        asked: dict[str, str] = {}
        for name in ("alice", "bob"):
            http, client = await session(url, name)
            async with http, client:
                reply = await client.call_tool("ask", {"question": "France or Belgium?"})
                assert not reply.is_error, reply.content
                assert reply.structured_content is not None
                asked[name] = str(reply.structured_content["run_id"])
        for name, other in (("alice", "bob"), ("bob", "alice")):
            http, client = await session(url, name)
            async with http, client:
                run = await resource(client, f"planweave://runs/{asked[name]}")
                assert run["settings"]["user"] == name
                listed = await resource(client, "planweave://runs")
                assert [r["id"] for r in listed] == [asked[name]]
                for uri in (f"planweave://runs/{asked[other]}", "planweave://runs/nosuchrun"):
                    with pytest.raises(MCPError, match="no run"):
                        await resource(client, uri)
        http, client = await session(url, "root")
        async with http, client:
            listed = await resource(client, "planweave://runs")
            assert {r["id"] for r in listed} == set(asked.values())
            run = await resource(client, f"planweave://runs/{asked['alice']}")
            assert run["answer"] == "France"

    with serving_app(app) as url:
        anyio.run(main, url)
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        wrong = httpx.post(f"{url}/mcp", json=ping, headers={"authorization": "Bearer nope"})
        assert wrong.status_code == 401
    assert runtime.journal is not None
    runtime.journal.close()


def test_a_bad_users_file_is_a_clear_error_at_start_up(tmp_path: Path) -> None:
    path = tmp_path / "users.toml"
    good = hash_token("t" * 43)
    cases = {
        "name = 'alice'\n": "unknown keys name",
        "[[users]\nname = 'x'": "not valid TOML",
        "": "names no user",
        "[[users]]\nname = 'alice'\ntokens = ['abc']\n": "'abc' is no token hash",
        "[[users]]\nname = 'alice'\nrole = 'root'\n" + f"tokens = ['{good}']\n": "role must be",
        "[[users]]\nname = ''\n" + f"tokens = ['{good}']\n": "name must be",
        "[[users]]\nname = 'alice'\ntokens = []\n": "non-empty list",
        "[[users]]\nname = 'a'\n"
        + f"tokens = ['{good}']\n[[users]]\nname = 'a'\ntokens = ['{hash_token('x')}']\n": (
            "named twice"
        ),
        "[[users]]\nname = 'a'\n"
        + f"tokens = ['{good}']\n[[users]]\nname = 'b'\ntokens = ['{good}']\n": "given twice",
        "[[users]]\nname = 'a'\npassword = 'x'\n" + f"tokens = ['{good}']\n": "unknown keys",
    }
    for text, problem in cases.items():
        path.write_text(text)
        with pytest.raises(UserError, match=problem) as caught:
            Users.load(path)
        assert str(path) in str(caught.value)
    with pytest.raises(UserError, match="cannot be read"):
        Users.load(tmp_path / "missing.toml")
    # `planweave serve` says so and stops, before it listens.
    path.write_text("[[users]]\nname = 'alice'\ntokens = ['abc']\n")
    db = str(tmp_path / "runs.db")
    for command in (("serve",), ("mcp", "--transport", "http")):
        proc = invoke_cli(*command, "--users", str(path), "--db", db)
        assert proc.returncode == 2, proc.stdout
        assert "is no token hash" in proc.stderr
        assert "Uvicorn running" not in proc.stderr


def test_a_users_file_nested_too_deeply_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "users.toml"
    for text in ("users = " + "[" * 5000 + "]" * 5000, "x = " + "{a = " * 5000 + "1" + "}" * 5000):
        path.write_text(text + "\n")
        with pytest.raises(UserError, match="nests its tables or arrays too deeply") as caught:
            Users.load(path)
        assert str(path) in str(caught.value)
    proc = invoke_cli("serve", "--users", str(path), "--db", str(tmp_path / "runs.db"))
    assert proc.returncode == 2
    assert "too deeply" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        (" alice", "begin or end with a space"),
        ("alice ", "begin or end with a space"),
        ("alice (admin)", "parentheses"),
        ("bob)", "parentheses"),
        ("operator", "reserved"),
        ("OPERATOR", "reserved"),
        ("Operator", "reserved"),
    ],
)
def test_a_name_the_page_would_mistake_for_another_is_refused(
    name: str, problem: str, tmp_path: Path
) -> None:
    path = tmp_path / "users.toml"
    path.write_text(f"[[users]]\nname = {json.dumps(name)}\ntokens = ['{hash_token('t' * 43)}']\n")
    with pytest.raises(UserError, match=problem) as caught:
        Users.load(path)
    assert str(path) in str(caught.value)
    with pytest.raises(UserError, match=problem):
        add_user(tmp_path / "other.toml", name)
    assert not (tmp_path / "other.toml").exists()
    added = invoke_cli("users", "add", name, "--file", str(tmp_path / "third.toml"))
    assert added.returncode == 2
    assert problem in added.stderr
    # " alice" and "alice" are not two users: the first is refused.
    path.write_text(
        f"[[users]]\nname = 'alice'\ntokens = ['{hash_token('a' * 43)}']\n"
        f"[[users]]\nname = ' alice'\ntokens = ['{hash_token('b' * 43)}']\n"
    )
    with pytest.raises(UserError, match="user 2: name must not begin or end with a space"):
        Users.load(path)
    # Names that only look alike are still fine.
    for fine in ("operators", "op erator", "alice admin", "o'brien"):
        add_user(tmp_path / "fine.toml", fine)


def test_planweave_users_add_prints_the_token_once_and_keeps_its_hash(tmp_path: Path) -> None:
    path = tmp_path / "users.toml"
    path.write_text("# who may call the server\n")
    added = invoke_cli("users", "add", "carol", "--file", str(path))
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert len(token) >= 43
    text = path.read_text()
    assert token not in text
    assert hash_token(token) in text
    assert text.startswith("# who may call the server\n")  # what a person wrote stays
    fresh = tmp_path / "fresh.toml"
    add_user(fresh, "erin")
    assert fresh.stat().st_mode & 0o777 == 0o600  # made readable by its owner only
    admin = invoke_cli("users", "add", "dave", "--admin", env={"PLANWEAVE_USERS": str(path)})
    assert admin.returncode == 0, admin.stderr
    again = invoke_cli("users", "add", "carol", "--file", str(path))
    assert again.returncode == 2
    assert "already has a user 'carol'" in again.stderr
    listed = invoke_cli("users", "list", "--file", str(path), "--json")
    assert json.loads(listed.stdout) == [
        {"name": "carol", "role": "user", "tokens": 1},
        {"name": "dave", "role": "admin", "tokens": 1},
    ]
    users = Users.load(path)
    assert users.authenticate(token.encode()) == User("carol", "user")
    assert users.authenticate(admin.stdout.strip().encode()) == User("dave", "admin")
    assert users.authenticate(b"carol") is None
    assert [u.name for u, _ in read_users(path)] == ["carol", "dave"]
    with pytest.raises(UserError, match="cannot be written"):
        add_user(tmp_path / "no" / "such" / "folder.toml", "frank")
    # A name with quotes and backslashes reads back as written.
    odd = 'o"brien \\ co'
    add_user(path, odd)
    assert Users.load(path).names[odd] == User(odd, "user")


def test_serving_elsewhere_takes_users_instead_of_a_token(
    users_file: tuple[Path, dict[str, str]],
) -> None:
    users = Users.load(users_file[0])
    check_bind("0.0.0.0", None, users)  # each user has a token: not open
    with pytest.raises(UserError, match="give a token"):
        check_bind("0.0.0.0", None)
    assert OPERATOR.admin
    assert OPERATOR.name is None


def test_a_user_s_runs_are_read_alone_through_their_index(journal_db: str) -> None:
    """A user's run list reads their runs, not everyone's filtered here (review finding 7:
    a user with no runs among 50,000 others held the event loop a second per GET /runs)."""
    from planweave.store import Journal
    from planweave.users import runs_of

    journal = Journal(journal_db)
    for n in range(260):
        owner = "alice" if n in (3, 150, 250) else "bob"
        journal.create_run(f"r{n:04d}", "q", "compiled", {"user": owner})
    journal.create_run("r9999", "q", "compiled", {"user": 7})  # no text: nobody's
    read: list[int] = []
    reading = journal.read

    def counted(sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        rows = reading(sql, params)
        if sql.startswith("SELECT * FROM runs"):
            read.append(len(rows))
        return rows

    journal.read = counted  # type: ignore[method-assign]
    alice = User("alice", "user")
    assert [r["id"] for r in runs_of(journal, alice, 2)] == ["r0250", "r0150"]
    assert [r["id"] for r in runs_of(journal, alice, 5, before="r0150")] == ["r0003"]
    assert runs_of(journal, User("carol", "user"), 100) == []
    assert runs_of(journal, User("7", "user"), 100) == []
    assert read == [2, 1, 0, 0]  # only their rows, in one query each
    assert len(runs_of(journal, User("root", "admin"), 300)) == 261
    # The query is served by migration 11's index.
    user_of = journal.dialect.user_of
    query = f"SELECT * FROM runs WHERE {user_of} = 'alice' ORDER BY created DESC, id DESC LIMIT 5"
    if journal.dialect.name == "sqlite":
        plan = " ".join(str(r["detail"]) for r in reading(f"EXPLAIN QUERY PLAN {query}"))
    else:
        import psycopg

        with psycopg.connect(journal_db) as conn:
            conn.execute("SET enable_seqscan = off")
            plan = " ".join(str(r[0]) for r in conn.execute(f"EXPLAIN {query}").fetchall())
    assert "runs_by_user" in plan, plan
    journal.close()
