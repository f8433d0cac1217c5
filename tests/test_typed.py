"""Typed answers (issue 31): `output_type` in Python, `--output-schema` on the CLI.  The answer
in words is written as the schema's value by one more LLM call, held to the schema by a grammar
(the embedded model) or `response_format` (an endpoint), validated, repaired once."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field, field_validator

from demo_tools import AREA, POPULATION, TOOLS
from gbnf import Grammar
from planweave import (
    OpenAICompatible,
    OutputInvalid,
    RunFailed,
    RunSettings,
    Runtime,
    Script,
    ScriptedServer,
    UserError,
)
from planweave.grammar import schema_grammar
from planweave.typed import OutputShape

PLAN = (
    "Thought: The two lookups are independent.\n"
    '1. population("Netherlands")\n'
    '2. area("Netherlands")\n'
    "3. divide($1, $2)\n"
    "4. join()\n"
    "<END_OF_PLAN>"
)
FINISH = "Thought: Done.\nAction: Finish(About 428 people per km² (17,900,000 / 41,850).)"


class Figure(BaseModel):
    name: str
    value: float
    unit: Literal["people", "km²", "people per km²"]


class Report(BaseModel):
    country: str
    figures: list[Figure]
    note: str | None = None


GOOD = {
    "country": "Netherlands",
    "figures": [
        {"name": "population", "value": 17_900_000, "unit": "people"},
        {"name": "area", "value": 41_850, "unit": "km²"},
        {"name": "density", "value": 427.72, "unit": "people per km²"},
    ],
    "note": None,
}


def _runtime(server: ScriptedServer, **kwargs: object) -> Runtime:
    llm = OpenAICompatible(base_url=server.base_url, model="scripted", max_retries=0)
    return Runtime(TOOLS, llm, **kwargs)  # type: ignore[arg-type]


def _bodies(server: ScriptedServer, purpose: str) -> list[dict[str, object]]:
    """The request bodies the server got for `purpose` (in the order sent)."""
    return [b for b, p in zip(server.bodies, server.script.purposes, strict=True) if p == purpose]


def test_a_nested_model_round_trips_over_an_endpoint(server_factory: type[ScriptedServer]) -> None:
    script = Script.by_purpose(planner=[PLAN], joiner=[FINISH], output=[json.dumps(GOOD)])
    server = server_factory(script).start()
    result = _runtime(server).run("People per km² in the Netherlands?", output_type=Report)
    assert isinstance(result.output, Report)
    assert result.output.figures[2] == Figure(name="density", value=427.72, unit="people per km²")
    assert json.loads(result.answer or "") == GOOD  # the answer is the value's JSON
    assert result.to_dict()["output"] == GOOD
    # The endpoint was sent the schema as response_format, and no grammar.
    (body,) = _bodies(server, "output")
    response_format = body["response_format"]
    assert isinstance(response_format, dict)
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["schema"] == Report.model_json_schema()
    # The call read the question, the results and the answer in words.
    prompt = server.script.requests[-1][-1].content
    assert "$3 divide($1, $2): 427.7" in prompt
    assert "Answer: About 428 people per km²" in prompt
    # It is a call of the run like any other: metered and timed.
    assert result.llm.calls == 3
    assert result.timings()["joining"] > 0


def test_a_reply_that_misses_the_schema_is_asked_for_again_once(
    server_factory: type[ScriptedServer],
) -> None:
    wrong = {**GOOD, "figures": [{"name": "density", "value": "many", "unit": "people"}]}
    fenced = "```json\n" + json.dumps(GOOD) + "\n```"  # a fence around it is read through
    script = Script.by_purpose(planner=[PLAN], joiner=[FINISH], output=[json.dumps(wrong), fenced])
    server = server_factory(script).start()
    result = _runtime(server).run("People per km² in the Netherlands?", output_type=Report)
    assert isinstance(result.output, Report)
    assert result.output.country == "Netherlands"
    again = server.script.requests[-1]
    assert again[-2].content == json.dumps(wrong)  # its own reply, then what was wrong with it
    assert "at figures/0/value" in again[-1].content
    assert "'many' is not of type 'number'" in again[-1].content


def test_two_misses_fail_the_run_with_every_result_kept(
    server_factory: type[ScriptedServer],
) -> None:
    script = Script.by_purpose(
        planner=[PLAN], joiner=[FINISH], output=["not json at all", '{"country": 3}']
    )
    server = server_factory(script).start()
    with pytest.raises(RunFailed) as failed:
        _runtime(server).run("People per km² in the Netherlands?", output_type=Report)
    cause = failed.value.cause
    assert isinstance(cause, OutputInvalid)
    assert "output schema" in str(cause)
    assert cause.text == '{"country": 3}'
    assert cause.answer.startswith("About 428 people per km²")  # the words are not lost
    result = failed.value.result
    assert result.results[3] == pytest.approx(POPULATION["Netherlands"] / AREA["Netherlands"])


def test_a_number_no_result_gives_is_asked_for_again(
    server_factory: type[ScriptedServer],
) -> None:
    invented = {**GOOD, "figures": [{"name": "population", "value": 500_000, "unit": "people"}]}
    script = Script.by_purpose(
        planner=[PLAN], joiner=[FINISH], output=[json.dumps(invented), json.dumps(GOOD)]
    )
    server = server_factory(script).start()
    result = _runtime(server, grounding=True).run("q", output_type=Report)
    assert isinstance(result.output, Report)
    assert result.output.figures[0].value == 17_900_000
    assert "it states 500000, which no result gives" in server.script.requests[-1][-1].content
    # Invented twice, the run fails rather than answer with it.
    script = Script.by_purpose(planner=[PLAN], joiner=[FINISH], output=[json.dumps(invented)] * 2)
    server = server_factory(script).start()
    with pytest.raises(RunFailed, match="500000, which no result gives"):
        _runtime(server, grounding=True).run("q", output_type=Report)
    # Without the grounding check (an endpoint's default), the value is taken as written.
    script = Script.by_purpose(planner=[PLAN], joiner=[FINISH], output=[json.dumps(invented)])
    server = server_factory(script).start()
    assert _runtime(server).run("q", output_type=Report).output.figures[0].value == 500_000


def test_a_validator_of_the_type_s_own_is_heard(server_factory: type[ScriptedServer]) -> None:
    class Strict(BaseModel):
        country: str = Field(min_length=1)

        @field_validator("country")
        @classmethod
        def known(cls, value: str) -> str:
            if value != "Belgium":
                raise ValueError("only Belgium is asked about")
            return value

    script = Script.by_purpose(planner=[PLAN], joiner=[FINISH], output=['{"country": "NL"}'])
    server = server_factory(script).start()
    with pytest.raises(OutputInvalid, match="only Belgium is asked about"):
        _runtime(server).run("q", output_type=Strict)


@pytest.mark.parametrize(
    ("output_type", "reply", "expected"),
    [
        (list[int], "[17900000, 41850]", [17_900_000, 41_850]),
        (Literal["yes", "no"], '"yes"', "yes"),
        (dict[str, float], '{"density": 427.7}', {"density": 427.7}),
    ],
)
def test_lists_literals_and_maps_are_types_too(
    server_factory: type[ScriptedServer], output_type: object, reply: str, expected: object
) -> None:
    script = Script.by_purpose(planner=[PLAN], joiner=[FINISH], output=[reply])
    server = server_factory(script).start()
    assert _runtime(server).run("q", output_type=output_type).output == expected


def test_the_schema_grammar_holds_decoding_to_the_schema() -> None:
    grammar = Grammar(schema_grammar(Report.model_json_schema()))
    assert grammar.accepts(Report.model_validate(GOOD).model_dump_json())
    assert grammar.accepts(json.dumps(GOOD, indent=2, ensure_ascii=False))
    wrong_unit = {**GOOD, "figures": [{"name": "x", "value": 1, "unit": "miles"}]}
    assert not grammar.accepts(json.dumps(wrong_unit))
    assert not grammar.accepts(json.dumps({"country": "Netherlands"}))  # every property, in order
    # Every text it can make is a value of the schema (the random walks of the test reader).
    shape = OutputShape.of_type(Report)
    for seed in range(30):
        shape.read(grammar.sample(random.Random(seed), pool="ab c"))


def test_a_bad_schema_is_refused_before_any_run(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="output_schema: the output schema is not JSON"):
        RunSettings(output_schema="{nope")
    with pytest.raises(UserError, match="not a valid JSON Schema"):
        RunSettings(output_schema='{"type": "dict"}')
    with pytest.raises(UserError, match="must be a JSON object"):
        RunSettings(output_schema="[1, 2]")
    with pytest.raises(UserError, match="over 100,000 characters"):
        RunSettings(output_schema=json.dumps({"description": "x" * 100_001}))
    with pytest.raises(UserError, match="has no JSON Schema"):
        OutputShape.of_type(Iterator[int])


def test_a_schema_never_reaches_outside_itself() -> None:
    # A schema is untrusted (a request's, a journal's): a $ref to anywhere but itself is refused
    # when it is read, before anything could fetch it.
    remote = {"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/s.json"}}}
    with pytest.raises(UserError, match=r"refers outside itself \(\$ref 'http://127"):
        OutputShape.from_schema(remote)
    with pytest.raises(UserError, match="refers outside itself"):
        RunSettings(output_schema=json.dumps({"$ref": "file:///etc/passwd"}))
    deep: dict[str, object] = {}
    node = deep
    for _ in range(200):  # nesting bounded: a clear error, not a RecursionError
        node["items"] = node = {}
    with pytest.raises(UserError, match="nested over 100 deep"):
        OutputShape.from_schema(deep)


def test_the_cli_writes_the_answer_as_the_schema_s_value(
    server_factory: type[ScriptedServer], tmp_path: Path
) -> None:
    from cli_process import invoke_cli

    schema = tmp_path / "report.json"
    schema.write_text(json.dumps(Report.model_json_schema()))
    script = Script.by_purpose(planner=[PLAN], joiner=[FINISH], output=[json.dumps(GOOD)])
    server = server_factory(script).start()
    args = ["--tools", "demo_tools:TOOLS", "--base-url", server.base_url, "--model", "m"]
    env = {"PLANWEAVE_DB": str(tmp_path / "runs.db")}
    proc = invoke_cli("run", "density?", *args, "--output-schema", str(schema), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["output"] == GOOD
    assert json.loads(data["answer"]) == GOOD
    # The journal keeps the schema with the run's settings: a resume writes the same type.
    shown = json.loads(invoke_cli("runs", "show", data["id"], "--json", env=env).stdout)
    assert json.loads(shown["settings"]["output_schema"]) == Report.model_json_schema()
    # A file that is no schema is the error, before any LLM call.
    schema.write_text('{"type": 7}')
    bad = invoke_cli("run", "density?", *args, "--output-schema", str(schema), env=env)
    assert bad.returncode == 2
    assert "not a valid JSON Schema" in bad.stderr
    assert len(server.bodies) == 3


def test_a_typed_run_resumed_after_approval_is_still_typed(tmp_path: Path) -> None:
    from planweave import ScriptedLLM

    script = Script.by_purpose(planner=[PLAN], joiner=[FINISH], output=[json.dumps(GOOD)])
    runtime = Runtime(TOOLS, ScriptedLLM(script, model="m"), journal=tmp_path / "runs.db")
    paused = runtime.run("density?", approve="plan", output_type=Report)
    assert paused.status == "awaiting_approval"
    assert paused.output is None
    # Approved in another process (here: another runtime on the same journal), the run goes on
    # with the schema it was recorded with, though nobody passes the type again.
    again = Runtime(TOOLS, ScriptedLLM(script, model="m"), journal=tmp_path / "runs.db")
    result = again.approve(paused.run_id)
    assert result.status == "finished"
    assert result.output == GOOD  # the schema's value as JSON: the type is the caller's
    assert script.purposes.count("output") == 1


class Country(BaseModel):
    name: str
    capital: str
    population: int


@pytest.mark.model
@pytest.mark.timeout(900)
def test_the_embedded_model_writes_a_nested_type_from_the_results() -> None:
    from countryinfo import CountryInfo

    from planweave.builtin import builtin_tools
    from planweave.llm.local import LocalLLM

    runtime = Runtime(builtin_tools(), LocalLLM("qwen2.5-coder-1.5b"))
    result = runtime.run(
        "What are the populations and capitals of Norway and Sweden?", output_type=list[Country]
    )
    assert isinstance(result.output, list), result.answer
    found = {c.name: c for c in result.output}
    assert set(found) == {"Norway", "Sweden"}, result.output
    for name, country in found.items():
        info = CountryInfo(name)
        assert country.capital == info.capital()
        assert country.population == int(info.population())  # copied, not re-typed


def test_the_grammar_grows_with_the_schema_not_with_its_nesting() -> None:
    deep: dict[str, object] = {"type": "integer"}
    for _ in range(60):
        deep = {"type": "array", "items": deep}
    assert len(OutputShape.from_schema(deep).grammar) < 10_000
    listed: dict[str, object] = {"type": "integer"}
    for _ in range(10):  # every level holds its child twice, as a property and as items
        child = json.loads(json.dumps(listed))
        listed = {"type": ["object", "array", "null"], "properties": {"a": child}, "items": child}
    schema_text = json.dumps(listed)
    assert len(schema_text) < 100_000
    assert len(OutputShape.from_text(schema_text).grammar) < 400_000  # linear in the text
    # An optional object (a type list beside properties) may be null; two names that spell
    # the same rule name stay two rules.
    optional = Grammar(
        schema_grammar({"type": ["object", "null"], "properties": {"a": {"type": "integer"}}})
    )
    assert optional.accepts("null")
    assert optional.accepts('{"a": 3}')

    class URL(BaseModel):
        host: str

    class Url(BaseModel):
        port: int

    class Both(BaseModel):
        a: URL
        b: Url

    both = Grammar(schema_grammar(Both.model_json_schema()))
    assert both.accepts('{"a": {"host": "x"}, "b": {"port": 1}}')
    assert not both.accepts('{"a": {"host": "x"}, "b": {"host": "x"}}')


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"$ref": "#"}, "leads only to itself"),
        (
            {
                "$ref": "#/$defs/a",
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
            },
            "leads only to itself",
        ),
        ({"$ref": "#/$defs/missing"}, "leads nowhere"),
        ({"$defs": [1]}, "that are not an object"),
        ({"$dynamicRef": "#meta"}, "dynamicRef"),
    ],
)
def test_a_schema_whose_references_lead_nowhere_is_refused(schema: object, why: str) -> None:
    with pytest.raises(UserError, match=why):
        OutputShape.from_schema(schema)


def test_a_reply_the_validator_chokes_on_is_a_miss_not_a_crash() -> None:
    recursive = OutputShape.of_type(list[list[int]])
    with pytest.raises(ValueError, match="not JSON"):
        recursive.read("[" * 100_000)


def test_a_request_s_schema_may_hold_no_regex(server_factory: type[ScriptedServer]) -> None:
    # Python's regular expressions have no time limit, and `^(a+)+$` takes exponential time:
    # a schema from a request may not hold one; a Python type's may (the code is its author's).
    evil = {"type": "string", "pattern": "^(a+)+$"}
    with pytest.raises(UserError, match="no regex"):
        OutputShape.from_schema(evil, patterns=False)
    assert OutputShape.from_schema(evil).schema == evil
    named = {"type": "object", "properties": {"pattern": {"type": "string"}}}
    assert OutputShape.from_schema(named, patterns=False).schema == named  # a property's name


def test_a_plan_that_names_its_answer_fills_the_type_without_a_call(
    server_factory: type[ScriptedServer],
) -> None:
    named = '1. population("Netherlands")\n2. area("Netherlands")\n3. join("${1}")\n<END_OF_PLAN>'
    script = Script.by_purpose(planner=[named, named], joiner=[FINISH], output=['["a"]'])
    server = server_factory(script).start()
    result = _runtime(server).run("How many people live in the Netherlands?", output_type=int)
    assert result.output == 17_900_000  # the result itself, not re-typed
    assert "output" not in server.script.purposes  # no LLM call wrote it
    # A named result that is not a value of the type goes to the call as before.
    result = _runtime(server).run("How many people live there?", output_type=list[str])
    assert result.output == ["a"]
    assert server.script.purposes.count("output") == 1
