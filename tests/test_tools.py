"""The `@tool` decorator, schemas from hints and docstrings, validation, registries, load_tools."""

from __future__ import annotations

import asyncio
import math
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planweave import Tool, ToolRegistry, UserError, load_tools, tool
from planweave.errors import ArgumentError
from planweave.parser import parse_plan

# --------------------------------------------------------------------------- tools used below


@tool
def lookup(country: str, year: int = 2024, exact: bool = False) -> int:
    """Look up the population of a country.

    Only the first paragraph is the description.

    Args:
        country: the country's English name
        year (int): the census year,
            counted in the Gregorian calendar
        exact: whether to round

    Returns:
        the head count
    """
    return len(country) * 1000 + year


@tool
async def fetch(url: str, retries: int = 2) -> str:
    """Fetch a page.

    Arguments:
        url: the address to fetch
        retries: how many times to try again
    """
    await asyncio.sleep(0)
    return f"{url}#{retries}"


@tool(timeout=2.5, max_concurrency=3, side_effects=True)
def send_mail(to: str, body: str = "") -> str:
    """Send an e-mail.

    Parameters:
        to: the recipient
        body: the message text
    """
    return f"sent to {to}"


@tool(name="slow_fetch", timeout=10, max_concurrency=1)
async def _slow_fetch(url: str) -> str:
    """Fetch slowly."""
    await asyncio.sleep(0)
    return url.upper()


@tool
def passthrough(value: Any, label: str = "x") -> Any:
    """Returns its value unchanged."""
    return value


@tool
def undocumented(a, b=3):  # type: ignore[no-untyped-def]
    return a


class Box:
    """An arbitrary object, not something pydantic knows."""

    def __init__(self, content: int) -> None:
        self.content = content


# --------------------------------------------------------------------------- the decorator


def test_bare_decorator_on_sync_function() -> None:
    assert isinstance(lookup, Tool)
    assert lookup.name == "lookup"
    assert lookup.is_async is False
    assert lookup.timeout is None
    assert lookup.max_concurrency is None
    assert lookup.side_effects is False
    assert lookup.returns is int
    # still callable like the function it wraps
    assert lookup("France") == 6 * 1000 + 2024
    assert lookup("France", year=2000) == 8000


def test_bare_decorator_on_async_function() -> None:
    assert isinstance(fetch, Tool)
    assert fetch.is_async is True
    assert asyncio.run(fetch("http://a")) == "http://a#2"


def test_decorator_with_options_on_sync_function() -> None:
    assert send_mail.timeout == 2.5
    assert send_mail.max_concurrency == 3
    assert send_mail.side_effects is True
    assert send_mail.is_async is False
    assert send_mail("bob") == "sent to bob"


def test_decorator_with_options_on_async_function_and_rename() -> None:
    assert _slow_fetch.name == "slow_fetch"
    assert _slow_fetch.is_async is True
    assert _slow_fetch.timeout == 10
    assert _slow_fetch.max_concurrency == 1
    assert _slow_fetch.side_effects is False
    assert asyncio.run(_slow_fetch.invoke({"url": "abc"})) == "ABC"


def test_description_override() -> None:
    @tool(description="Adds one.")
    def inc(x: int) -> int:
        """Ignored docstring."""
        return x + 1

    assert inc.description == "Adds one."
    assert inc.json_schema()["function"]["description"] == "Adds one."


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"timeout": 0}, "timeout"),
        ({"timeout": -1.0}, "timeout"),
        ({"timeout": math.nan}, "timeout"),
        ({"timeout": "5"}, "timeout"),
        ({"timeout": True}, "timeout"),
        ({"max_concurrency": 0}, "max_concurrency"),
    ],
)
def test_bad_options_are_user_errors(options: dict[str, Any], match: str) -> None:
    def f(x: int) -> int:
        return x

    with pytest.raises(UserError, match=match):
        tool(**options)(f)


def test_parameters_may_use_names_pydantic_reserves() -> None:
    @tool
    def configure(
        model_config: int, json: str, _private: float = 0.5, model_dump: bool = False
    ) -> str:
        """Names pydantic keeps for itself.

        Args:
            model_config: a number
        """
        return f"{model_config} {json} {_private} {model_dump}"

    assert configure.invoke({"model_config": 3, "json": "j"}) == "3 j 0.5 False"
    assert configure.invoke({"model_config": 3, "json": "j", "_private": 2}) == "3 j 2.0 False"
    with pytest.raises(ValueError, match="model_config: Input should be a valid integer"):
        configure.validate({"model_config": "many", "json": "j"})
    with pytest.raises(ValueError, match="p0"):
        configure.validate({"p0": 1, "model_config": 3, "json": "j"})
    parameters = configure.json_schema()["function"]["parameters"]
    assert list(parameters["properties"]) == ["model_config", "json", "_private", "model_dump"]
    assert parameters["properties"]["model_config"]["description"] == "a number"
    assert parameters["required"] == ["model_config", "json"]


def test_only_top_level_sync_functions_can_be_isolated() -> None:
    def local(x: int) -> int:
        return x

    async def local_async(x: int) -> int:
        return x

    for fn in (local, local_async):
        with pytest.raises(UserError, match="cannot be isolated"):
            tool(isolate=True)(fn)


def test_reserved_name_join_is_rejected() -> None:
    def join() -> None:
        return None

    with pytest.raises(UserError, match="reserved"):
        tool(join)

    def other() -> None:
        return None

    with pytest.raises(UserError, match="join"):
        tool(name="join")(other)


def test_name_that_is_not_an_identifier_is_rejected() -> None:
    def f() -> None:
        return None

    with pytest.raises(UserError, match="not a valid identifier"):
        tool(name="bad-name")(f)


@pytest.mark.parametrize("kind", ["args", "kwargs"])
def test_star_args_and_kwargs_are_user_errors(kind: str) -> None:
    def with_args(a: int, *rest: int) -> int:
        return a

    def with_kwargs(a: int, **extra: int) -> int:
        return a

    fn = with_args if kind == "args" else with_kwargs
    with pytest.raises(UserError, match=r"\*args and \*\*kwargs"):
        tool(fn)
    with pytest.raises(UserError):
        ToolRegistry(fn)


def test_unresolvable_type_hints_are_user_errors() -> None:
    def f(x: NoSuchType) -> int:  # type: ignore[name-defined] # noqa: F821
        return 1

    with pytest.raises(UserError, match="type hints"):
        tool(f)


# --------------------------------------------------------------------------- schema and rendering


def test_docstring_description_is_first_paragraph() -> None:
    assert lookup.description == "Look up the population of a country."
    assert fetch.description == "Fetch a page."


def test_param_descriptions_from_args_section() -> None:
    descriptions = {p.name: p.description for p in lookup.params}
    assert descriptions == {
        "country": "the country's English name",
        # "(int)" is dropped and the continuation line is joined on
        "year": "the census year, counted in the Gregorian calendar",
        "exact": "whether to round",
    }
    # "Arguments:" and "Parameters:" headings work like "Args:"
    assert {p.name: p.description for p in fetch.params} == {
        "url": "the address to fetch",
        "retries": "how many times to try again",
    }
    assert {p.name: p.description for p in send_mail.params} == {
        "to": "the recipient",
        "body": "the message text",
    }


def test_returns_section_does_not_leak_into_params() -> None:
    assert all("head count" not in p.description for p in lookup.params)
    assert "head count" not in lookup.description


def test_json_schema_from_type_hints() -> None:
    schema = lookup.json_schema()
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == "lookup"
    assert function["description"] == "Look up the population of a country."
    params = function["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["country"]
    props = params["properties"]
    assert list(props) == ["country", "year", "exact"]
    assert props["country"] == {"type": "string", "description": "the country's English name"}
    assert props["year"]["type"] == "integer"
    assert props["year"]["default"] == 2024
    assert props["year"]["description"] == "the census year, counted in the Gregorian calendar"
    assert props["exact"]["type"] == "boolean"
    assert props["exact"]["default"] is False
    assert "title" not in params
    assert all("title" not in prop for prop in props.values())


def test_json_schema_all_required_and_containers() -> None:
    @tool
    def combine(names: list[str], weights: dict[str, float], note: str | None = None) -> str:
        return ""

    params = combine.json_schema()["function"]["parameters"]
    assert sorted(params["required"]) == ["names", "weights"]
    assert params["properties"]["names"]["type"] == "array"
    assert params["properties"]["names"]["items"] == {"type": "string"}
    assert params["properties"]["weights"]["type"] == "object"
    assert params["properties"]["weights"]["additionalProperties"] == {"type": "number"}
    assert params["properties"]["note"]["default"] is None
    assert {"type": "null"} in params["properties"]["note"]["anyOf"]


def test_json_schema_of_untyped_and_any_params() -> None:
    props = undocumented.json_schema()["function"]["parameters"]
    assert props["required"] == ["a"]
    assert "type" not in props["properties"]["a"]
    assert props["properties"]["b"]["default"] == 3
    assert passthrough.json_schema()["function"]["parameters"]["required"] == ["value"]


def test_signature_text() -> None:
    assert lookup.signature_text() == (
        "lookup(country: str, year: int = 2024, exact: bool = False) -> int"
    )
    assert fetch.signature_text() == "fetch(url: str, retries: int = 2) -> str"
    assert send_mail.signature_text() == "send_mail(to: str, body: str = '') -> str"
    assert passthrough.signature_text() == "passthrough(value: any, label: str = 'x') -> any"
    # no annotations at all: types read "any" and there is no return arrow
    assert undocumented.signature_text() == "undocumented(a: any, b: any = 3)"


def test_render_shows_signature_description_and_param_lines() -> None:
    assert lookup.render().splitlines() == [
        "lookup(country: str, year: int = 2024, exact: bool = False) -> int: "
        "Look up the population of a country.",
        "  - country: the country's English name",
        "  - year: the census year, counted in the Gregorian calendar",
        "  - exact: whether to round",
        "  Returns: the head count",
    ]
    # no description, no documented params: just the signature, without a dangling colon
    assert undocumented.render() == "undocumented(a: any, b: any = 3)"


def test_registry_render_numbers_tools() -> None:
    rendered = ToolRegistry(lookup, fetch).render()
    lines = rendered.splitlines()
    assert lines[0].startswith("1. lookup(country: str")
    second = next(line for line in lines if line.startswith("2. "))
    assert second == "2. fetch(url: str, retries: int = 2) -> str: Fetch a page."


# --------------------------------------------------------------------------- validate / invoke


def test_validate_coerces_and_splits_keywords() -> None:
    positional, keywords = lookup.validate({"country": "France", "year": "1999"})
    assert positional == []
    assert keywords == {"country": "France", "year": 1999}
    assert type(keywords["year"]) is int
    # defaults that were not passed are left to the function
    assert "exact" not in keywords


def test_validate_positional_only_params() -> None:
    @tool
    def power(base: float, exp: int = 2, /) -> float:
        return base**exp

    positional, keywords = power.validate({"base": "3", "exp": 3})
    assert positional == [3.0, 3]
    assert keywords == {}
    assert power.invoke({"base": 2}) == 4.0


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"country": 3}, r"country: Input should be a valid string"),
        ({"country": "France", "year": "nineteen"}, r"year: .*valid integer"),
        ({"country": "France", "year": 1.5}, r"year: "),
        ({"country": ["France"]}, r"country: "),
        ({}, r"country: Field required"),
    ],
)
def test_validate_wrong_types_raise_value_error(arguments: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        lookup.validate(arguments)
    with pytest.raises(ValueError, match=match):
        lookup.invoke(arguments)


def test_invoke_sync_tool_calls_function_with_coerced_values() -> None:
    assert lookup.invoke({"country": "Peru", "year": "10"}) == 4 * 1000 + 10


def test_invoke_async_tool_returns_awaitable() -> None:
    result = fetch.invoke({"url": "http://x", "retries": "5"})
    assert asyncio.iscoroutine(result)
    assert asyncio.run(result) == "http://x#5"


def test_any_param_passes_the_same_object_through() -> None:
    box = Box(7)
    _, keywords = passthrough.validate({"value": box})
    assert keywords["value"] is box
    assert passthrough.invoke({"value": box}) is box
    data = {"nested": [1, 2, {"k": "v"}]}
    assert passthrough.invoke({"value": data}) is data


def test_typed_container_equal_after_validation_keeps_identity() -> None:
    @tool
    def first(items: list[int]) -> int:
        return items[0]

    items = [1, 2, 3]
    _, keywords = first.validate({"items": items})
    assert keywords["items"] is items
    # a container that validation had to change is a new, coerced object
    _, keywords = first.validate({"items": ["4", "5"]})
    assert keywords["items"] == [4, 5]


def test_check_value_one_argument() -> None:
    lookup.check_value("year", 2000)
    lookup.check_value("year", "2000")  # lax coercion is accepted
    with pytest.raises(ValueError, match="valid integer"):
        lookup.check_value("year", "soon")
    undocumented.check_value("a", object())  # untyped accepts anything


def test_bind_maps_positionals_and_rejects_misfits() -> None:
    assert lookup.bind(("France",), {"exact": True}) == {"country": "France", "exact": True}
    with pytest.raises(TypeError):
        lookup.bind((), {"nope": 1})
    with pytest.raises(TypeError):
        lookup.bind(("a", 1, True, "extra"), {})
    with pytest.raises(TypeError):
        lookup.bind((), {})


# --------------------------------------------------------------------------- registries


def _plain_double(x: int) -> int:
    """Doubles x."""
    return 2 * x


def test_registry_is_an_ordered_mapping() -> None:
    registry = ToolRegistry(lookup, fetch)
    assert list(registry) == ["lookup", "fetch"]
    assert len(registry) == 2
    assert registry["lookup"] is lookup
    assert "fetch" in registry
    assert "nope" not in registry
    assert registry.get("nope") is None
    with pytest.raises(KeyError):
        registry["nope"]
    assert repr(registry) == "ToolRegistry(lookup, fetch)"


def test_registry_combines_tools_lists_registries_and_functions() -> None:
    inner = ToolRegistry([send_mail, _slow_fetch])
    registry = ToolRegistry(lookup, [fetch, (passthrough,)], inner, _plain_double)
    assert list(registry) == [
        "lookup",
        "fetch",
        "passthrough",
        "send_mail",
        "slow_fetch",
        "_plain_double",
    ]
    assert registry["send_mail"] is send_mail
    wrapped = registry["_plain_double"]
    assert isinstance(wrapped, Tool)
    assert wrapped.description == "Doubles x."
    assert wrapped.invoke({"x": "4"}) == 8


def test_registry_add_and_plus() -> None:
    left = ToolRegistry(lookup)
    right = ToolRegistry(fetch)
    both = left + right
    assert list(both) == ["lookup", "fetch"]
    # `+` builds a new registry and leaves the operands alone
    assert list(left) == ["lookup"]
    assert list(right) == ["fetch"]
    more = both + [send_mail, passthrough]  # noqa: RUF005 (registry + list is under test)
    assert list(more) == ["lookup", "fetch", "send_mail", "passthrough"]
    assert list(both + send_mail) == ["lookup", "fetch", "send_mail"]
    left.add(send_mail)
    assert list(left) == ["lookup", "send_mail"]


def test_same_tool_twice_is_fine() -> None:
    registry = ToolRegistry(lookup, [lookup], ToolRegistry(lookup))
    assert list(registry) == ["lookup"]
    assert list(registry + registry) == ["lookup"]


def test_two_different_tools_with_same_name_is_user_error() -> None:
    @tool(name="lookup")
    def other_lookup(country: str) -> int:
        return 0

    with pytest.raises(UserError, match="two different tools are named 'lookup'"):
        ToolRegistry(lookup, other_lookup)
    with pytest.raises(UserError, match="lookup"):
        ToolRegistry(lookup) + ToolRegistry(other_lookup)
    with pytest.raises(UserError, match="lookup"):
        ToolRegistry([lookup, [other_lookup]])
    registry = ToolRegistry(lookup)
    with pytest.raises(UserError):
        registry.add(other_lookup)
    assert registry["lookup"] is lookup


def test_join_function_in_registry_is_user_error() -> None:
    def join() -> str:
        return ""

    with pytest.raises(UserError, match="reserved"):
        ToolRegistry(lookup, join)


@pytest.mark.parametrize("source", [42, "lookup", {"lookup": lookup}, None])
def test_registry_rejects_things_that_are_not_tools(source: Any) -> None:
    with pytest.raises(UserError, match="not a tool"):
        ToolRegistry(source)


# --------------------------------------------------------------------------- load_tools

_HELPER_SOURCE = '''
from planweave import ToolRegistry, tool


@tool
def greet(name: str) -> str:
    """Says hello."""
    return "hello " + name


@tool
async def shout(text: str) -> str:
    """Upper-cases."""
    return text.upper()


def plain(x: int) -> int:
    return x


TOOLS = [greet, shout]
REGISTRY = ToolRegistry(greet, plain)
NOT_A_TOOL = 42
'''


@pytest.fixture
def helper_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = "planweave_test_helper_tools"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(_HELPER_SOURCE))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)
    yield name
    sys.modules.pop(name, None)


def test_load_tools_single_tool(helper_module: str) -> None:
    registry = load_tools(f"{helper_module}:greet")
    assert list(registry) == ["greet"]
    assert registry["greet"].invoke({"name": "ann"}) == "hello ann"
    assert registry["greet"] is sys.modules[helper_module].greet


def test_load_tools_list(helper_module: str) -> None:
    registry = load_tools(f"{helper_module}:TOOLS")
    assert list(registry) == ["greet", "shout"]
    assert registry["shout"].is_async


def test_load_tools_registry(helper_module: str) -> None:
    registry = load_tools(f"{helper_module}:REGISTRY")
    assert list(registry) == ["greet", "plain"]
    assert registry["plain"].invoke({"x": "3"}) == 3


def test_load_tools_plain_function(helper_module: str) -> None:
    assert list(load_tools(f"{helper_module}:plain")) == ["plain"]


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("{mod}", "MODULE:ATTR"),
        ("{mod}:", "MODULE:ATTR"),
        (":greet", "MODULE:ATTR"),
        ("", "MODULE:ATTR"),
        ("planweave_no_such_module_xyz:tools", "cannot import"),
        ("{mod}:missing", "has no attribute 'missing'"),
        ("{mod}:NOT_A_TOOL", "not a tool"),
    ],
)
def test_load_tools_errors(helper_module: str, spec: str, match: str) -> None:
    with pytest.raises(UserError, match=match):
        load_tools(spec.format(mod=helper_module))


def test_skipped_positional_only_default_keeps_later_values_in_place() -> None:
    @tool
    def po(a: int = 1, b: int = 2, /) -> tuple[int, int]:
        """Positional-only parameters."""
        return (a, b)

    assert po.invoke({"b": 5}) == (1, 5)


def test_unknown_argument_names_are_rejected_not_dropped() -> None:
    @tool
    def one(x: int) -> int:
        """One argument."""
        return x

    with pytest.raises(ValueError, match="bogus"):
        one.validate({"x": 1, "bogus": 2})


def test_the_same_plain_function_added_twice_is_one_tool() -> None:
    def f() -> None:
        """A plain function."""

    assert list(ToolRegistry(f, f)) == ["f"]
    assert list(ToolRegistry(f) + f) == ["f"]


def test_a_module_that_fails_to_import_is_a_user_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_tools_mod.py").write_text("def oops(:\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UserError, match="cannot import"):
        load_tools("broken_tools_mod:X")


def test_a_required_nested_object_is_checked_by_its_own_fields() -> None:
    # A schema's nested object is a typed dict; pydantic refuses a second config for one, and
    # the plan parser checking the argument raised PydanticUserError instead of reading it.
    where = Tool.from_schema(
        "places.find",
        "Find places.",
        {
            "type": "dict",
            "properties": {
                "near": {"type": "dict", "properties": {"lat": {"type": "float"}}},
            },
            "required": ["near"],
        },
        fn=lambda near: near,
    )
    registry = ToolRegistry([where])
    (call, _join) = parse_plan("1. places_find(near={'lat': 48.1})\n2. join()", registry)
    assert call.bound == {"near": {"lat": 48.1}}
    with pytest.raises(ArgumentError, match="near"):
        parse_plan("1. places_find(near={'lat': 'north'})\n2. join()", registry)
