"""The plan cache on the oracle workloads: LLM calls, tokens, latency, hit rate and accuracy with
and without the cache, and false hits on a set of near misses.

    python -m benchmarks.cache --n 60

Two passes over the six question shapes, in arrival order: the first from a cold cache (seed
`--seed`), the second with new names and numbers (seed + 1), when the cache is warm.  Each
question is asked twice side by side, once by a runtime without the cache and once by one with
it (its own journal file), against the same oracle (`benchmarks.oracle`: the gold plan and answer
at a fixed first-token time, prefill rate and token rate).  A run is right when its answer
states the gold answer and the calls it made are the gold plan's, arguments resolved: the
oracle's joiner answers from the question, so a wrong plan served from the cache shows in the
calls, not the answer.

Near misses: questions worded like a cached one whose plan differs ("more land" for "more
people", the capital's population for the country's, thousands for millions).  Each is asked
after its look-alike was answered; a false hit is a plan served from the cache that is not
the near miss's gold plan.  Nothing here was used to tune the matcher; the held-out split
(every fifth question) is reported apart.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
from pathlib import Path
from typing import Any

from planweave import RunFailed, Runtime
from planweave.events import TaskStarted
from planweave.llm.openai_compat import OpenAICompatible
from planweave.plan import render_text
from planweave.tools import ToolRegistry

from .__main__ import correct, machine_info, prefill_rate
from .oracle import PREFILL, Oracle
from .workloads import Question, Step, bench_tools, generate
from .world import COUNTRIES, PARAMETERS, city_population_of, facts, tool_functions


def near_misses(seed: int) -> list[tuple[Question, Question]]:
    """(look-alike, near miss) pairs: similar wording, another plan."""
    import random

    rng = random.Random(seed)
    pairs: list[tuple[Question, Question]] = []
    for k in range(4):
        a, b, c, d = rng.sample(COUNTRIES, 4)
        fa, fb = facts(a), facts(b)
        people = Question(
            f"nm-people-{k}", "comparison", f"Which has more people, {a} or {b}?",
            (more := a if fa["population"] > fb["population"] else b),
            [Step("population", (f'"{a}"',)), Step("population", (f'"{b}"',))],
            answer=f"{more} has more people.",
        )  # fmt: skip
        c2, d2 = rng.sample(COUNTRIES, 2)
        land = Question(
            f"nm-land-{k}", "comparison", f"Which has more land, {c2} or {d2}?",
            (larger := c2 if facts(c2)["area"] > facts(d2)["area"] else d2),
            [Step("area", (f'"{c2}"',)), Step("area", (f'"{d2}"',))],
            answer=f"{larger} has more land.",
        )  # fmt: skip
        pairs.append((people, land))
        country = Question(
            f"nm-country-{k}", "lookup", f"How many people live in {c}?",
            float(fc := facts(c)["population"]), [Step("population", (f'"{c}"',))],
            answer=str(fc),
        )  # fmt: skip
        cap = facts(d)["capital"]
        capital = Question(
            f"nm-capital-{k}", "lookup", f"How many people live in the capital of {d}?",
            float(city_population_of(cap)),
            [Step("capital", (f'"{d}"',)), Step("city_population", ("$1",))],
            answer=str(city_population_of(cap)),
        )  # fmt: skip
        pairs.append((country, capital))
        e, f = rng.sample(COUNTRIES, 2)
        total = facts(e)["population"] + facts(f)["population"]
        combined = Question(
            f"nm-sum-people-{k}", "fanout", f"What is the combined population of {e}, {f}?",
            float(total),
            [Step("population", (f'"{e}"',)), Step("population", (f'"{f}"',)),
             Step("calculator", ('"${1} + ${2}"',))],
            answer=str(total),
        )  # fmt: skip
        g, h = rng.sample(COUNTRIES, 2)
        areas = facts(g)["area"] + facts(h)["area"]
        combined_area = Question(
            f"nm-sum-area-{k}", "fanout", f"What is the combined area of {g}, {h}?",
            float(areas),
            [Step("area", (f'"{g}"',)), Step("area", (f'"{h}"',)),
             Step("calculator", ('"${1} + ${2}"',))],
            answer=str(areas),
        )  # fmt: skip
        pairs.append((combined, combined_area))
        m = rng.choice(COUNTRIES)
        mill = facts(m)["population"] / 1_000_000
        millions = Question(
            f"nm-millions-{k}", "chain", f"In millions, how many people live in {m}?",
            mill, [Step("population", (f'"{m}"',)), Step("calculator", ('"${1} / 1000000"',))],
            answer=f"{mill:.3f}",
        )  # fmt: skip
        t = rng.choice(COUNTRIES)
        thou = facts(t)["population"] / 1000
        thousands = Question(
            f"nm-thousands-{k}", "chain", f"In thousands, how many people live in {t}?",
            thou, [Step("population", (f'"{t}"',)), Step("calculator", ('"${1} / 1000"',))],
            answer=f"{thou:.3f}",
        )  # fmt: skip
        pairs.append((millions, thousands))
    return pairs


_WORLD = tool_functions("zero")


def gold_calls(q: Question) -> list[str]:
    """The gold plan's calls with their arguments resolved (references filled in from the
    world's own results), as `TaskStarted` events report the calls a run made: a plan that
    writes `city_population($1)` where the gold writes the capital's name makes the same call."""
    results: dict[int, Any] = {}
    calls = []
    for i, step in enumerate(q.steps, 1):
        arg = step.args[0]
        if re.fullmatch(r"\$\d+", arg):
            value = results[int(arg[1:])]
        else:
            text = json.loads(arg)
            value = re.sub(r"\$\{(\d+)\}", lambda m: render_text(results[int(m.group(1))]), text)
        results[i] = _WORLD[step.tool](value) if step.tool != "calculator" else None
        (param,) = PARAMETERS[step.tool]
        arguments = {param: value}
        calls.append(f"{step.tool}{json.dumps(arguments, sort_keys=True, default=str)}")
    return sorted(calls)


def ask(
    q: Question, llm: OpenAICompatible, tools: ToolRegistry, journal: Path, cache: bool
) -> dict[str, Any]:
    runtime = Runtime(tools, llm, grammar=False, journal=journal, cache=cache)
    try:
        result = runtime.run(q.text)
    except RunFailed as failed:
        result = failed.result
    made = sorted(
        f"{e.tool}{json.dumps(e.arguments, sort_keys=True, default=str)}"
        for e in result.events
        if isinstance(e, TaskStarted) and e.attempt == 1
    )
    gold = gold_calls(q)
    return {
        "id": q.id,
        "kind": q.kind,
        "split": q.split,
        "cache": cache,
        "wall_s": result.wall_s,
        "llm_calls": result.llm.calls,
        "tokens": result.llm.prompt_tokens + result.llm.completion_tokens,
        "hit": bool(result.cache and result.cache.get("hit")),
        "plan_ok": made == gold,
        "right": made == gold and correct(q, result.answer),
    }


def summarize(rows: list[dict[str, Any]]) -> str:
    out = [
        "| pass | questions | LLM calls (off → on) | tokens (off → on) | tokens saved | "
        "median latency s (off → on) | latency saved | hit rate | right (off → on) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("cold", "warm", "warm, held out"):
        group = [
            r for r in rows if r["pass"] == name.split(",")[0] and
            ("held" not in name or r["split"] == "heldout")
        ]  # fmt: skip
        off = [r for r in group if not r["cache"]]
        on = [r for r in group if r["cache"]]
        if not off:
            continue
        t_off, t_on = sum(r["tokens"] for r in off), sum(r["tokens"] for r in on)
        m_off = statistics.median(r["wall_s"] for r in off)
        m_on = statistics.median(r["wall_s"] for r in on)
        out.append(
            f"| {name} | {len(off)} | {sum(r['llm_calls'] for r in off)} → "
            f"{sum(r['llm_calls'] for r in on)} | {t_off} → {t_on} | {1 - t_on / t_off:.0%} | "
            f"{m_off:.2f} → {m_on:.2f} | {1 - m_on / m_off:.0%} | "
            f"{sum(r['hit'] for r in on) / len(on):.0%} | "
            f"{sum(r['right'] for r in off)} → {sum(r['right'] for r in on)} |"
        )
    out += ["", "| shape (warm pass) | hit rate | median latency s (off → on) |", "|---|---|---|"]
    warm = [r for r in rows if r["pass"] == "warm"]
    for kind in dict.fromkeys(r["kind"] for r in warm):
        off = [r["wall_s"] for r in warm if r["kind"] == kind and not r["cache"]]
        on = [r for r in warm if r["kind"] == kind and r["cache"]]
        out.append(
            f"| {kind} | {sum(r['hit'] for r in on) / len(on):.0%} | "
            f"{statistics.median(off):.2f} → {statistics.median(r['wall_s'] for r in on):.2f} |"
        )
    near = [r for r in rows if r["pass"] == "near miss"]
    false = [r for r in near if r["hit"] and not r["plan_ok"]]
    out += [
        "",
        f"Near misses: {len(near)} asked after their look-alikes; {sum(r['hit'] for r in near)} "
        f"served from the cache, {len(false)} of them with a wrong plan (false hits); "
        f"{sum(r['right'] for r in near)} right.",
    ]
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=60, help="questions per pass")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--profile", choices=["web", "zero"], default="web")
    parser.add_argument("--ttft", type=float, default=0.3)
    parser.add_argument("--tps", type=float, default=60.0)
    parser.add_argument("--prefill", type=prefill_rate, default=PREFILL["hosted"])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/cache"))
    args = parser.parse_args()

    passes = {"cold": generate(args.n, args.seed), "warm": generate(args.n, args.seed + 1)}
    # A near miss worded exactly as a pass's question would change what the oracle answers it.
    taken = {q.text for qs in passes.values() for q in qs}
    pairs = [p for p in near_misses(args.seed + 2) if not {p[0].text, p[1].text} & taken]
    known = [q for qs in passes.values() for q in qs] + [q for pair in pairs for q in pair]
    oracle = Oracle(known, ttft=args.ttft, tps=args.tps, prefill=args.prefill)
    tools = bench_tools(args.profile)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, oracle.server() as server:
        llm = OpenAICompatible(base_url=server.base_url, model="oracle", max_retries=0)
        off_db, on_db = Path(tmp) / "off.db", Path(tmp) / "on.db"
        for name, questions in passes.items():
            for q in questions:
                for cache in (False, True):
                    row = ask(q, llm, tools, on_db if cache else off_db, cache)
                    rows.append(row | {"pass": name})
                print(f"{name} {q.id}: " + ", ".join(
                    f"{'on' if r['cache'] else 'off'} {r['wall_s']:.2f}s"
                    + (" hit" if r["hit"] else "") for r in rows[-2:]
                ), flush=True)  # fmt: skip
        for i, (alike, miss) in enumerate(pairs):
            near_db = Path(tmp) / f"near-{i}.db"  # only the look-alike's template in it
            ask(alike, llm, tools, near_db, True)
            row = ask(miss, llm, tools, near_db, True)
            rows.append(row | {"pass": "near miss"})
            print(f"near miss {miss.id}: hit={row['hit']} plan_ok={row['plan_ok']}", flush=True)

    table = summarize(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(
        json.dumps(
            {"machine": machine_info(), "settings": vars(args) | {"out": str(args.out)},
             "rows": rows},
            indent=1,
        )
    )  # fmt: skip
    args.out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
