"""Conversations: a 5-turn conversation with and without its thread (issue 31).

    python -m benchmarks.threads --conversations 6

Each conversation asks five questions about two countries, each turn's plan written by a
scripted endpoint that plans the same calls with or without the thread (so the difference is
planweave's, not the planner's): the population of A, then of B, which has more people (both
populations again), their areas, which is denser (populations and areas again, two divisions).
The tools are pure lookups that take `--tool-latency` seconds, as a remote API would.  The
endpoint streams at a hosted model's pace (`--ttft`, `--tps`, and its time to first token grows
with the prompt at `--prefill` tokens/s), so the thread's longer prompts cost what they cost.

Side by side, conversation by conversation: one runtime runs the turns as a thread (the earlier
turns read, pure calls recalled), one as unrelated runs.  Reported: wall seconds, LLM prompt
and completion tokens, and tool calls per conversation (medians), and the calls recalled.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from planweave import Runtime, tool
from planweave.llm.base import Message, Purpose
from planweave.llm.openai_compat import OpenAICompatible
from planweave.llm.scripted import Reply, Script, ScriptedServer

from .__main__ import machine_info
from .world import COUNTRIES, facts

CHARS_PER_TOKEN = 4


class Calls:
    """The tool calls made, counted across threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.n = 0

    def add(self) -> None:
        with self.lock:
            self.n += 1


def make_tools(latency: float, calls: Calls) -> list[Any]:
    @tool(pure=True)
    def population(country: str) -> int:
        """The population of a country."""
        calls.add()
        time.sleep(latency)
        return int(facts(country)["population"])

    @tool(pure=True)
    def area(country: str) -> int:
        """The area of a country in km²."""
        calls.add()
        time.sleep(latency)
        return int(facts(country)["area"])

    @tool(pure=True)
    def divide(a: float, b: float) -> float:
        """a divided by b."""
        return a / b

    return [population, area, divide]


def turns(a: str, b: str, number: int) -> list[tuple[str, list[str]]]:
    """The conversation's five questions, each with the calls its plan makes.  Each carries the
    conversation's `number`, so that the scripted planner, which has no thread to read in the
    unrelated runs, knows which countries "the two" are."""
    pa, pb, aa, ab = (f'population("{a}")', f'population("{b}")', f'area("{a}")', f'area("{b}")')
    asked = [
        (f"How many people live in {a}?", [pa]),
        (f"And in {b}?", [pb]),
        ("Which of the two has more people?", [pa, pb]),
        ("What are their areas?", [aa, ab]),
        ("Which is denser?", [pa, aa, pb, ab, "divide($1, $2)", "divide($3, $4)"]),
    ]
    return [(f"{question} (#{number})", calls) for question, calls in asked]


class Endpoint:
    """Plans each turn's calls at a hosted model's pace (time to first token grows with the
    prompt); the joiner answers in one short sentence."""

    def __init__(self, plans: dict[str, list[str]], ttft: float, tps: float, prefill: float):
        self.plans = plans
        self.ttft, self.tps, self.prefill = ttft, tps, prefill

    def reply(self, messages: list[Message], purpose: Purpose) -> Reply:
        prompt = sum(len(m.content) // CHARS_PER_TOKEN + 4 for m in messages)
        asked = messages[-1].content.removeprefix("Question: ").split("\n", 1)[0]
        if purpose == "planner":
            calls = self.plans[asked]
            lines = [f"{i}. {c}" for i, c in enumerate(calls, 1)]
            text = "\n".join([*lines, f"{len(calls) + 1}. join()", "<END_OF_PLAN>"])
        else:
            text = "Thought: the results answer it.\nAction: Finish(The results answer it.)"
        first = self.ttft + (prompt / self.prefill if self.prefill else 0.0)
        return Reply(text, chunk_size=CHARS_PER_TOKEN, delay=1.0 / self.tps, ttft=first)


def conversation(
    base_url: str,
    journal: Path,
    pair: tuple[str, str],
    number: int,
    latency: float,
    *,
    thread: bool,
) -> dict[str, Any]:
    """One conversation's figures, as a thread or as unrelated runs."""
    calls = Calls()
    llm = OpenAICompatible(base_url=base_url, model="m", max_retries=0)
    runtime = Runtime(make_tools(latency, calls), llm, journal=journal, cache=False)
    name = f"{pair[0]}-{pair[1]}-{time.monotonic_ns()}".replace(" ", "_")[:100]
    wall = prompt = completion = recalled = 0.0
    for question, _ in turns(*pair, number):
        result = runtime.run(question, thread=name if thread else None)
        wall += result.wall_s
        prompt += result.llm.prompt_tokens
        completion += result.llm.completion_tokens
        recalled += sum(1 for r in result.tasks if r.recalled)
    return {
        "wall_s": wall,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "tool_calls": calls.n,
        "recalled": recalled,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tool-latency", type=float, default=0.3)
    parser.add_argument("--ttft", type=float, default=0.3)
    parser.add_argument("--tps", type=float, default=60.0)
    parser.add_argument("--prefill", type=float, default=4_500.0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/threads.json"))
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    pairs = [tuple(rng.sample(COUNTRIES, 2)) for _ in range(args.conversations)]
    plans = {q: c for i, (a, b) in enumerate(pairs) for q, c in turns(a, b, i)}
    endpoint = Endpoint(plans, args.ttft, args.tps, args.prefill)
    rows: dict[str, list[dict[str, Any]]] = {"thread": [], "no_thread": []}
    with (
        ScriptedServer(Script.routed(endpoint.reply)) as server,
        tempfile.TemporaryDirectory() as d,
    ):
        for i, pair in enumerate(pairs):
            # Side by side, the order alternating, so drift on a shared machine hits both.
            order = ["thread", "no_thread"] if i % 2 == 0 else ["no_thread", "thread"]
            for mode in order:
                journal = Path(d) / f"{mode}.db"
                row = conversation(
                    server.base_url, journal, pair, i, args.tool_latency, thread=mode == "thread"
                )
                rows[mode].append(row | {"pair": list(pair)})
    summary = {
        mode: {key: statistics.median(r[key] for r in found) for key in found[0] if key != "pair"}
        for mode, found in rows.items()
    }
    with_, without = summary["thread"], summary["no_thread"]
    report = {
        "benchmark": "threads",
        "args": vars(args) | {"out": str(args.out)},
        "machine": machine_info(),
        "median_per_conversation": summary,
        "ratios": {
            "wall_s": with_["wall_s"] / without["wall_s"],
            "prompt_tokens": with_["prompt_tokens"] / without["prompt_tokens"],
            "tool_calls": with_["tool_calls"] / without["tool_calls"],
        },
        "conversations": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({"median_per_conversation": summary, "ratios": report["ratios"]}, indent=2))


if __name__ == "__main__":
    main()
