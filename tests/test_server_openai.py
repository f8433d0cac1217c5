"""The OpenAI-compatible endpoint as OpenAI's own clients see it, for real (uvicorn on a loopback
port, the official `openai` SDK): models retrieved by id, errors in OpenAI's shape and statuses
(naming the parameter at fault), and a clear refusal of what planweave does not do, before any
run starts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import openai
import pytest
from pydantic import BaseModel

import live_server
from demo_tools import TOOLS
from planweave import Reply, Runtime, Script, ScriptedLLM
from planweave.server import ServerConfig

TOKEN = "openai-token-0123456789abcdef"
PLAN = '1. population("Netherlands")\n2. join()\n<END_OF_PLAN>'
QUESTION = [{"role": "user", "content": "people in the Netherlands?"}]
OPENAI_KEYS = {"message", "type", "param", "code"}


@pytest.fixture
def base(tmp_path: Path) -> Iterator[str]:
    script = Script.by_purpose(
        planner=[PLAN] * 5,
        joiner=["Action: Finish(17.9 million)"] * 5,
        output=['{"country": "Netherlands", "people": 17900000}'] * 5,
    )
    runtime = Runtime(TOOLS, ScriptedLLM(script), journal=tmp_path / "runs.db")
    config = ServerConfig(token=TOKEN, max_body_bytes=100_000, max_question_chars=500)
    with live_server.serving(runtime, config) as url:
        yield url


@pytest.fixture
def http(base: str) -> Iterator[httpx.Client]:
    headers = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=base, headers=headers, timeout=20) as client:
        yield client


@pytest.fixture
def sdk(base: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{base}/v1", api_key=TOKEN, max_retries=0) as client:
        yield client


def openai_error(response: httpx.Response, status: int) -> dict[str, Any]:
    """The error of a refused request, checked to be in OpenAI's shape."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) >= OPENAI_KEYS, error
    assert isinstance(error["message"], str)
    assert error["message"]
    assert error["code"] is None or isinstance(error["code"], str)
    assert error["param"] is None or isinstance(error["param"], str)
    return dict(error)


def no_runs(http: httpx.Client) -> None:
    assert http.get("/runs").json()["runs"] == []


def test_the_sdk_retrieves_each_listed_model_and_a_404_for_others(
    sdk: openai.OpenAI, http: httpx.Client
) -> None:
    listed = {m.id: m for m in sdk.models.list()}
    assert set(listed) == {"planweave", "planweave-react"}
    for name, model in listed.items():
        assert sdk.models.retrieve(name) == model
    with pytest.raises(openai.NotFoundError, match="gpt-4o") as caught:
        sdk.models.retrieve("gpt-4o")
    assert caught.value.type == "invalid_request_error"
    assert caught.value.code == "model_not_found"
    assert caught.value.param == "model"
    error = openai_error(http.get("/v1/models/some/org-model"), 404)
    assert error["code"] == "model_not_found"


def test_errors_on_the_openai_routes_have_openai_s_shape(
    sdk: openai.OpenAI, http: httpx.Client, base: str
) -> None:
    with pytest.raises(openai.NotFoundError) as unknown:
        sdk.chat.completions.create(model="gpt-4o", messages=QUESTION)  # type: ignore[arg-type]
    assert (unknown.value.type, unknown.value.code, unknown.value.param) == (
        "invalid_request_error",
        "model_not_found",
        "model",
    )
    with pytest.raises(openai.BadRequestError, match="no user message") as nobody:
        sdk.chat.completions.create(
            model="planweave", messages=[{"role": "system", "content": "q"}]
        )
    assert nobody.value.type == "invalid_request_error"
    assert nobody.value.param == "messages"
    # Validation failures are 400 (not 422), naming the field as OpenAI does.
    for body, param in [
        ({"messages": QUESTION}, "model"),
        ({"model": "planweave"}, "messages"),
        ({"model": "planweave", "messages": []}, "messages"),
        ({"model": "planweave", "messages": [{"content": "q"}]}, "messages[0].role"),
        ({"model": "planweave", "messages": QUESTION, "stream": "perhaps"}, "stream"),
    ]:
        error = openai_error(http.post("/v1/chat/completions", json=body), 400)
        assert error["type"] == "invalid_request_error"
        assert error["param"] == param, (body, error)
    missing = openai_error(http.post("/v1/chat/completions", json={"messages": QUESTION}), 400)
    assert missing["code"] == "missing_required_parameter"
    with pytest.raises(openai.BadRequestError, match="at most 500") as long:
        sdk.chat.completions.create(
            model="planweave", messages=[{"role": "user", "content": "q" * 501}]
        )
    assert long.value.param == "messages"
    # Refused before any handler: the guard and the routing answer in the same shape.
    with httpx.Client(base_url=base, timeout=10) as anonymous:
        error = openai_error(anonymous.get("/v1/models"), 401)
        assert error["type"] == "invalid_request_error"
    error = openai_error(http.post("/v1/chat/completions", content=b"q"), 415)
    assert error["type"] == "invalid_request_error"
    openai_error(http.get("/v1/embeddings"), 404)
    no_runs(http)


def test_the_runs_api_keeps_its_own_error_shape(http: httpx.Client) -> None:
    error = http.get("/runs/nosuchrun").json()["error"]
    assert error == {"message": "no run 'nosuchrun'", "type": "not_found", "code": 404}
    invalid = http.post("/runs", json={"question": 5})
    assert invalid.status_code == 422
    assert invalid.json()["error"]["type"] == "invalid_request"


def test_a_run_without_an_answer_is_a_server_error_that_the_sdk_does_not_retry(
    tmp_path: Path,
) -> None:
    refusing = Script.routed(lambda messages, purpose: Reply(status=400))
    runtime = Runtime(TOOLS, ScriptedLLM(refusing), journal=tmp_path / "runs.db")
    config = ServerConfig(token=TOKEN)
    with (
        live_server.serving(runtime, config) as url,
        openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN, max_retries=2) as sdk,
    ):
        with pytest.raises(openai.UnprocessableEntityError, match="without an answer") as caught:
            sdk.chat.completions.create(model="planweave", messages=QUESTION)
        assert caught.value.type == "server_error"
        assert caught.value.code == "run_failed"
        runs = httpx.get(f"{url}/runs", headers={"authorization": f"Bearer {TOKEN}"}).json()
        assert len(runs["runs"]) == 1  # one run, not one per retry


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tool_choice": {"type": "function", "function": {"name": "f"}}}, "tool_choice"),
        ({"functions": [{"name": "f"}]}, "functions"),
        ({"function_call": "auto"}, "function_call"),
        ({"response_format": {"type": "xml"}}, "response_format"),
        ({"response_format": {"type": "json_schema"}}, "response_format"),
        ({"logprobs": True}, "logprobs"),
        ({"top_logprobs": 3}, "top_logprobs"),
        ({"n": 2}, "n"),
        ({"modalities": ["text", "audio"]}, "modalities"),
        ({"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_what_planweave_does_not_do_is_refused_by_name(
    sdk: openai.OpenAI, http: httpx.Client, extra: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError, match=param) as caught:
        sdk.chat.completions.create(model="planweave", messages=QUESTION, extra_body=extra)  # type: ignore[arg-type]
    assert caught.value.param == param
    assert caught.value.type == "invalid_request_error"
    assert caught.value.code in {"unsupported_parameter", "unsupported_value"}
    no_runs(http)


class People(BaseModel):
    country: str
    people: int


def test_response_format_types_the_answer_as_the_sdk_parses_it(
    sdk: openai.OpenAI, http: httpx.Client
) -> None:
    completion = sdk.chat.completions.parse(
        model="planweave",
        messages=QUESTION,
        response_format=People,  # type: ignore[arg-type]
    )
    assert completion.choices[0].message.parsed == People(country="Netherlands", people=17_900_000)
    # Streamed, the content is the JSON whole (the answer's words are not streamed first).
    stream = sdk.chat.completions.create(
        model="planweave",
        messages=QUESTION,  # type: ignore[arg-type]
        stream=True,
        response_format={"type": "json_object"},
    )
    content = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert People.model_validate_json(content).people == 17_900_000
    # A schema that is none is refused before any run, naming the parameter.
    bad = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 7}}}
    response = http.post(
        "/v1/chat/completions",
        json={"model": "planweave", "messages": QUESTION, "response_format": bad},
    )
    error = openai_error(response, 400)
    assert error["param"] == "response_format"
    assert "not a valid JSON Schema" in error["message"]
    assert len(http.get("/runs").json()["runs"]) == 2


def test_what_asks_for_nothing_planweave_lacks_is_answered(sdk: openai.OpenAI) -> None:
    """Defaults some clients send explicitly: no tools, plain text, no log probabilities."""
    completion = sdk.chat.completions.create(
        model="planweave",
        messages=QUESTION,  # type: ignore[arg-type]
        tools=[],
        tool_choice="none",
        response_format={"type": "text"},
        logprobs=False,
        n=1,
        modalities=["text"],
        temperature=0.2,
        max_tokens=100,
    )
    assert completion.choices[0].message.content == "17.9 million"
