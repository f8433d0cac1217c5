"""Typed answers: a run's answer written as one JSON value of a schema (`output_type` in Python,
`--output-schema` on the CLI, `response_format` on the OpenAI-compatible endpoint).

Once the run has its answer in words, one more LLM call (purpose `output`) writes it as the
schema's value from the question, the results and that answer: decoding is held to the schema
by a grammar where the backend takes one (the embedded model), an endpoint is sent the schema as
`response_format`, and the reply is validated in any case.  A reply that does not validate is
asked for again once, with the validator's words; so is one that states a number no result
gives, where the run checks grounding (the embedded model, by default).  A second miss is
`OutputInvalid`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from .errors import OutputInvalid, PlanweaveError, UserError
from .grammar import schema_grammar
from .llm.base import LLMRequest, Message
from .meter import MeteredLLM
from .plan import Ref, Task, Template, resolve
from .records import RunResult, TaskRecord, TaskStatus

__all__ = [
    "MAX_SCHEMA_CHARS",
    "NO_VALUE",
    "OutputShape",
    "named_value",
    "schema_text",
    "shape_answer",
    "typed_result",
]

MAX_SCHEMA_CHARS = 100_000
MAX_GRAMMAR_CHARS = 400_000
_RESULTS_CHARS = 8_000  # the results the call reads, all together
_MAX_TOKENS = 1_024

_SYSTEM = (
    "Write the answer to the question as one JSON value that matches this JSON Schema:\n"
    "{schema}\n"
    "Take every value from the results and the answer below, as they give it (numbers as "
    "numbers, not words); where the schema allows null and nothing gives a value, write null. "
    "Write the JSON only."
)


@dataclass(frozen=True)
class OutputShape:
    """The JSON Schema a typed answer is a value of, checked to be one when made, with the
    grammar that holds decoding to it (made once: its size grows with the schema's)."""

    schema: dict[str, Any]
    grammar: str = field(default="", repr=False, compare=False)

    @classmethod
    def of_type(cls, output_type: Any) -> OutputShape:
        """The schema of a Python type: a pydantic model, a dataclass, a list, a Literal..."""
        from pydantic import TypeAdapter

        try:
            schema = TypeAdapter(output_type).json_schema()
        except Exception as exc:  # pydantic's errors for types it cannot describe vary
            raise UserError(f"output_type {output_type!r} has no JSON Schema: {exc}") from exc
        return cls.from_schema(schema)

    @classmethod
    def from_text(cls, text: str) -> OutputShape:
        """The schema written as JSON text (a file's, a journal's, a request's).  Read once
        per text: the settings check it when they are made, the run reads it again."""
        return _shape_of(text)

    @classmethod
    def from_schema(cls, schema: Any, *, patterns: bool = True) -> OutputShape:
        """`schema`, once it is known to be a JSON Schema object whose `$ref`s all lead into
        it, and its grammar bounded.  `patterns=False` (a schema a request sends) refuses
        regular expressions: Python's have no time limit, and one can take exponential time."""
        import jsonschema

        if not isinstance(schema, dict):
            raise UserError("the output schema must be a JSON object (a JSON Schema)")
        found = _walk(schema)
        if found is not None:  # a schema is untrusted: it reaches nothing
            raise UserError(f"the output schema {found}")
        if not patterns and _has_pattern(schema):
            raise UserError("the output schema may not hold a `pattern` here (no regex)")
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise UserError(f"the output schema is not a valid JSON Schema: {exc.message}") from exc
        if len(json.dumps(schema, ensure_ascii=False)) > MAX_SCHEMA_CHARS:
            raise UserError(f"the output schema is over {MAX_SCHEMA_CHARS:,} characters")
        try:
            grammar = schema_grammar(schema)
        except ValueError as exc:
            raise UserError(f"the output schema cannot be read: {exc}") from exc
        if len(grammar) > MAX_GRAMMAR_CHARS:
            raise UserError(f"the output schema's grammar is over {MAX_GRAMMAR_CHARS:,} characters")
        return cls(schema, grammar)

    @property
    def text(self) -> str:
        """The schema as compact JSON text: what the settings and the journal keep."""
        return json.dumps(self.schema, ensure_ascii=False, separators=(",", ":"), sort_keys=True)

    def request(self, messages: list[Message], *, grammar: bool) -> LLMRequest:
        """The request for the value, held to the schema (a grammar where asked for)."""
        return LLMRequest(
            messages=messages,
            max_tokens=_MAX_TOKENS,
            grammar=(self.grammar or schema_grammar(self.schema)) if grammar else None,
            json_schema=self.schema,
            purpose="output",
        )

    def read(self, text: str) -> Any:
        """The value `text` writes, if it is one of the schema's; else ValueError saying why."""
        import jsonschema

        try:
            value = json.loads(_unfenced(text))
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"it is not JSON ({exc})") from None
        try:
            error = jsonschema.exceptions.best_match(
                jsonschema.validators.validator_for(self.schema)(self.schema).iter_errors(value)
            )
        except Exception as exc:  # the validator's own failures (a reference, a depth)
            raise ValueError(f"it could not be checked ({type(exc).__name__}: {exc})") from None
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "the value"
            raise ValueError(f"at {where}: {error.message}")
        return value


@functools.lru_cache(maxsize=32)
def _shape_of(text: str) -> OutputShape:
    if len(text) > MAX_SCHEMA_CHARS:
        raise UserError(f"the output schema is over {MAX_SCHEMA_CHARS:,} characters")
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"the output schema is not JSON: {exc}") from exc
    return OutputShape.from_schema(schema)


def _walk(node: Any, depth: int = 0) -> str | None:
    """What is wrong with the schema's shape, or None: a `$ref` (or `$dynamicRef`, which
    planweave does not follow) out of the schema, `$defs` that are not an object, nesting
    over 100 deep."""
    if depth > 100:
        return "is nested over 100 deep"
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$dynamicRef":
                return "uses $dynamicRef, which is not supported"
            if key == "$ref" and not str(value).startswith("#"):
                return f"refers outside itself ($ref {str(value)!r})"
            if key in ("$defs", "definitions") and not isinstance(value, dict):
                return f"has {key} that are not an object"
            found = _walk(value, depth + 1)
            if found is not None:
                return found
    elif isinstance(node, list):
        for value in node:
            found = _walk(value, depth + 1)
            if found is not None:
                return found
    return None


def _has_pattern(node: Any) -> bool:
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str) or "patternProperties" in node:
            return True
        return any(_has_pattern(v) for v in node.values())
    return isinstance(node, list) and any(_has_pattern(v) for v in node)


def _unfenced(text: str) -> str:
    """`text` without a Markdown code fence around it (endpoints without structured output
    often write one)."""
    text = text.strip()
    if text.startswith("```") and text.endswith("```"):
        text = text[3:-3]
        text = text.split("\n", 1)[1] if "\n" in text else text
    return text.strip()


def _messages(
    shape: OutputShape, question: str, answer: str, records: Sequence[TaskRecord]
) -> list[Message]:
    lines, left = [], _RESULTS_CHARS
    for record in records:
        if record.status is not TaskStatus.DONE or record.task.is_join or left <= 0:
            continue
        line = f"${record.task.id} {record.task.call_text()}: {record.observation(limit=left)}"
        lines.append(line)
        left -= len(line)
    results = "\n".join(lines) or "(none)"
    return [
        Message("system", _SYSTEM.format(schema=json.dumps(shape.schema, ensure_ascii=False))),
        Message("user", f"Question: {question}\nResults:\n{results}\nAnswer: {answer}"),
    ]


async def shape_answer(
    llm: MeteredLLM,
    shape: OutputShape,
    question: str,
    answer: str,
    records: Sequence[TaskRecord],
    *,
    grammar: bool,
    grounding: bool,
) -> tuple[str, Any]:
    """The answer as the schema's value: its JSON text and the value.  Asked once, and once
    more with what was wrong if the first reply is not one of the schema's values or (with
    `grounding`) states a number no result or the question gives; then OutputInvalid."""
    messages = _messages(shape, question, answer, records)
    for attempt in range(2):
        text = await llm.complete(shape.request(messages, grammar=grammar))
        try:
            # Off the event loop: validating a large value takes a while, and nothing else waits.
            value = await anyio.to_thread.run_sync(shape.read, text)
            if grounding:
                _grounded(value, question, records)
        except ValueError as exc:
            if attempt == 1:
                raise OutputInvalid(
                    f"the answer could not be written as the output schema's value: {exc}",
                    text=text,
                    answer=answer,
                ) from None
            messages = [
                *messages,
                Message("assistant", text),
                Message("user", f"That JSON is wrong: {exc}. Write it again."),
            ]
            continue
        return json.dumps(value, ensure_ascii=False), value
    raise AssertionError("unreachable")


NO_VALUE = object()  # what `named_value` gives when the plan names no value of the schema


def named_value(shape: OutputShape, join: Task | None, results: Mapping[int, Any]) -> Any:
    """The result the plan's answer names whole (`join($3)`, `join("${3}")`), when it is a
    value of the schema already: the answer without an LLM call.  Else NO_VALUE."""
    answer = None if join is None else join.answer
    if isinstance(answer, Template) and len(answer.parts) == 1:
        answer = answer.parts[0]
    if not isinstance(answer, Ref) or answer.task_id not in results:
        return NO_VALUE
    try:
        return shape.read(json.dumps(resolve(answer, results), ensure_ascii=False))
    except (ValueError, TypeError, PlanweaveError):
        return NO_VALUE


def _grounded(value: Any, question: str, records: Sequence[TaskRecord]) -> None:
    """ValueError naming the numbers `value` holds that no result or the question gives (the
    grounding check of answers in words, over the value's numbers)."""
    from .grounding import ungrounded

    stated = " ".join(repr(n) for n in _numbers(value))
    missing = ungrounded(stated, question, records) if stated else []
    if missing:
        raise ValueError(
            f"it states {', '.join(missing)}, which no result gives: take every number from the "
            "results"
        )


def _numbers(value: Any) -> list[int | float]:
    """The numbers in a JSON value, in order (not booleans)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [value]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return []


def schema_text(output_type: Any) -> str | None:
    """The output schema, as settings keep it, of a run's `output_type`: a Python type, or an
    `OutputShape` (a JSON Schema with no type behind it); None: an answer in words."""
    if output_type is None:
        return None
    shape = (
        output_type if isinstance(output_type, OutputShape) else OutputShape.of_type(output_type)
    )
    return shape.text


def typed_result(result: RunResult, output_type: Any) -> RunResult:
    """`result` with its `output` an instance of `output_type` (none given, an `OutputShape`,
    or no output: as it is).  The value met the type's schema; a validator of the type's own
    may still refuse it, and that is OutputInvalid."""
    if output_type is None or isinstance(output_type, OutputShape) or result.output is None:
        return result
    from pydantic import TypeAdapter, ValidationError

    try:
        result.output = TypeAdapter(output_type).validate_python(result.output)
    except ValidationError as exc:
        raise OutputInvalid(
            f"the answer's value does not make a {getattr(output_type, '__name__', output_type)}: "
            f"{exc.errors(include_url=False)[0]['msg']}",
            text=result.answer or "",
            run_id=result.run_id,
        ) from None
    return result
