"""Benchmark workloads built from the `countryinfo` data, with gold plans and gold answers.

Each question comes with the plan an ideal planner would write, the ReAct steps an ideal ReAct
agent would take, and the gold answer, all computed from the same data the tools read.  The
tools themselves live in `world.py` (shared with the peer frameworks' runners): they sleep
according to a seeded latency profile keyed by their arguments, so every contestant sees the
same latency for the same call.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

from planweave import ToolRegistry, tool

from .world import COUNTRIES, city_population_of, facts, latency, tool_functions

__all__ = [
    "Question",
    "Step",
    "bench_tools",
    "city_population_of",
    "generate",
    "latency",
    "mentions",
]


@dataclass(frozen=True)
class Step:
    """One gold tool call: `args` may hold `$N` references, as in the plan text."""

    tool: str
    args: tuple[str, ...]

    def call(self) -> str:
        return f"{self.tool}({', '.join(self.args)})"


@dataclass
class Question:
    id: str
    kind: str
    text: str
    gold: float | str
    steps: list[Step]
    split: str = "tune"
    answer: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    # Steps whose results the model must read before it can write step N (1-based), beyond
    # the references in N's arguments: a replan's second lookup names the capital the first
    # one found, so no contestant can write it before that result is back.
    reads: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # The step (1-based, of `plan_steps(answers=True)`) whose result is the gold answer as it
    # stands, if one is, and the field of it that is (`largest`, of a rank): a plan may then
    # end with it (`join("${N}")`, `join("${N.largest}")`) where plan answers are on.
    answer_step: int | None = None
    answer_field: str | None = None
    # Steps a plan adds only to end with its answer: a rank over the lookups where the answer
    # is which of them is largest.  A plan that does not end with its answer has no use for
    # them, nor have ReAct, native calling and the peers: they read the results and answer.
    answer_steps: list[Step] = field(default_factory=list)

    def plan_steps(self, answers: bool = False) -> list[Step]:
        """The gold plan's calls; with `answers`, those a plan that ends with its answer makes."""
        return [*self.steps, *self.answer_steps] if answers else list(self.steps)

    def plan_text(self, answers: bool = False) -> str:
        steps = self.plan_steps(answers)
        lines = [f"{i}. {s.call()}" for i, s in enumerate(steps, 1)]
        lines.append(f"{len(steps) + 1}. join()")
        return "\n".join(lines) + "\n<END_OF_PLAN>"

    def deps(self, index: int) -> list[int]:
        """The 1-based ids step `index` (1-based, answer steps after the others) refers to."""
        step = self.plan_steps(answers=True)[index - 1]
        refs = [int(r) for a in step.args for r in re.findall(r"\$\{?(\d+)", a)]
        refs = list(dict.fromkeys(refs))
        return refs + [r for r in self.reads.get(index, ()) if r not in refs]


def _summed(qid: str, shape: str, text: str, names: list[str], field: str) -> Question:
    """Look `field` up for each name (the tool of the same name), then add them up."""
    total = sum(facts(n)[field] for n in names)
    steps = [Step(field, (f'"{n}"',)) for n in names]
    expr = " + ".join(f"${{{i}}}" for i in range(1, len(names) + 1))
    steps.append(Step("calculator", (f'"{expr}"',)))
    return Question(
        qid, shape, text, float(total), steps, answer=f"{total}", answer_step=len(steps)
    )


def _ranked(q: Question) -> Question:
    """`q` (lookups of one figure per name, the answer the name with the largest) with a rank
    over its lookups as the step a plan may end its answer with: `join("${N.largest}")`."""
    names = [json.loads(step.args[0]) for step in q.steps]
    refs = ", ".join(f"${i}" for i in range(1, len(q.steps) + 1))
    q.answer_steps = [Step("rank", (json.dumps(names), f"[{refs}]"))]
    q.answer_step, q.answer_field = len(q.steps) + 1, "largest"
    return q


def generate(n: int = 200, seed: int = 2026) -> list[Question]:
    """`n` questions over six shapes; every fifth is held out (never used to tune prompts)."""
    rng = random.Random(seed)
    shapes = ["comparison", "pick4", "fanout", "chain", "map", "replan"]
    out: list[Question] = []
    for k in range(n):
        shape = shapes[k % len(shapes)]
        q = _make(shape, rng, f"{shape}-{k}")
        q.split = "heldout" if k % 5 == 4 else "tune"
        out.append(q)
    return out


def _make(shape: str, rng: random.Random, qid: str) -> Question:
    if shape == "comparison":
        a, b = rng.sample(COUNTRIES, 2)
        fa, fb = facts(a), facts(b)
        gold = a if fa["population"] > fb["population"] else b
        steps = [Step("population", (f'"{a}"',)), Step("population", (f'"{b}"',))]
        text = f"Which has more people, {a} or {b}?"
        answer = f"{gold} has more people."
        return _ranked(Question(qid, shape, text, gold, steps, answer=answer))
    if shape == "pick4":
        names = rng.sample(COUNTRIES, 4)
        areas = {n: facts(n)["area"] for n in names}
        gold = max(areas, key=areas.__getitem__)
        steps = [Step("area", (f'"{n}"',)) for n in names]
        text = f"Which of {', '.join(names[:3])} and {names[3]} has the largest area?"
        return _ranked(Question(qid, shape, text, gold, steps, answer=f"{gold} is the largest."))
    if shape == "fanout":
        names = rng.sample(COUNTRIES, rng.randint(2, 5))
        text = f"What is the combined population of {', '.join(names)}?"
        return _summed(qid, shape, text, names, "population")
    if shape == "chain":
        a = rng.choice(COUNTRIES)
        fa = facts(a)
        steps = [
            Step("capital", (f'"{a}"',)),
            Step("country_of", ("$1",)),
            Step("population", ("$2",)),
            Step("calculator", ('"${3} / 1000000"',)),
        ]
        gold = fa["population"] / 1_000_000
        text = (
            f"In millions, how many people live in the country whose capital is the capital of {a}?"
        )
        return Question(qid, shape, text, gold, steps, answer=f"{gold:.3f}", answer_step=4)
    if shape == "map":
        count = rng.choice([16, 24, 32])
        names = [rng.choice(COUNTRIES) for _ in range(count)]
        text = f"Add up the areas of these {count} countries: {', '.join(names)}."
        return _summed(qid, shape, text, names, "area")
    # replan: the first plan finds a capital; what to look up next is only known then.
    a = rng.choice(COUNTRIES)
    capital = facts(a)["capital"]
    steps = [Step("capital", (f'"{a}"',)), Step("city_population", (f'"{capital}"',))]
    text = f"How many people live in the capital of {a}?"
    gold = city_population_of(capital)
    return Question(
        qid,
        shape,
        text,
        float(gold),
        steps,
        answer=str(gold),
        meta={"capital": capital},
        reads={2: (1,)},
        answer_step=2,
    )


def mentions(gold: float, text: str) -> bool:
    """Whether `text` states the number `gold` (within 0.1 %, thousands separators allowed)."""
    numbers = [float(x.replace(",", "")) for x in re.findall(r"-?\d[\d,]*\.?\d*", text)]
    return any(abs(x - gold) <= 1e-3 * max(1.0, abs(gold)) for x in numbers)


def bench_tools(profile: str = "web") -> ToolRegistry:
    """The world's tools with the latency profile applied, as planweave tools; sync, so they
    run in threads."""
    return ToolRegistry([tool(fn) for fn in tool_functions(profile).values()])
