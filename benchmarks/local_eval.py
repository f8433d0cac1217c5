"""The embedded models on questions whose gold answers come from the `countryinfo` data.

For each model, with and without grammar-constrained decoding, in compiled and ReAct mode:
the rate of valid first plans (the planner's first response parsed and validated with no
repair), answer accuracy, latency and decoding speed.  Prints a markdown table and writes JSON.

    python benchmarks/local_eval.py --models qwen2.5-coder-0.5b qwen2.5-coder-1.5b --n 12
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from countryinfo import CountryInfo

from planweave import Runtime
from planweave.builtin import builtin_tools
from planweave.events import LLMCallFinished, PlanInvalid
from planweave.llm.local import LocalLLM

COUNTRIES = [
    "France", "Germany", "Italy", "Spain", "Portugal", "Netherlands", "Belgium", "Austria",
    "Poland", "Sweden", "Norway", "Denmark", "Finland", "Greece", "Ireland", "Switzerland",
    "Japan", "Brazil", "Canada", "Mexico", "Egypt", "Kenya", "India", "Australia",
]  # fmt: skip


@dataclass
class Question:
    kind: str
    text: str
    gold: str | float
    names: tuple[str, ...]


def facts(name: str) -> tuple[int, int, str]:
    c = CountryInfo(name)
    return int(c.population()), int(c.area()), str(c.capital())


def questions(n: int, seed: int) -> list[Question]:
    rng = random.Random(seed)
    out: list[Question] = []
    kinds = ["population", "capital", "more_people", "density", "combined"]
    while len(out) < n:
        kind = kinds[len(out) % len(kinds)]
        a, b = rng.sample(COUNTRIES, 2)
        (pa, aa, ca), (pb, ab, _) = facts(a), facts(b)
        if kind == "population":
            out.append(Question(kind, f"What is the population of {a}?", float(pa), (a,)))
        elif kind == "capital":
            out.append(Question(kind, f"What is the capital of {a}?", ca, (a,)))
        elif kind == "more_people":
            gold = a if pa > pb else b
            out.append(Question(kind, f"Which has more people, {a} or {b}?", gold, (a, b)))
        elif kind == "density":
            gold = a if pa / aa > pb / ab else b
            text = f"Which has more people per square kilometre, {a} or {b}?"
            out.append(Question(kind, text, gold, (a, b)))
        else:
            text = f"What is the combined population of {a} and {b}?"
            out.append(Question(kind, text, float(pa + pb), (a, b)))
    return out


def numbers(text: str) -> list[float]:
    found = []
    for m in re.finditer(r"-?\d[\d,]*(?:\.\d+)?(?:\s*(million|billion))?", text):
        raw = m.group(0).split()[0].replace(",", "")
        try:
            value = float(raw)
        except ValueError:
            continue
        scale = {"million": 1e6, "billion": 1e9}.get((m.group(1) or "").lower(), 1)
        found.append(value * scale)
    return found


def correct(q: Question, answer: str | None) -> bool:
    """Numbers within 2% relative tolerance; names by normalized match, the gold one named
    first when both appear (LLMCompiler-style scoring)."""
    if not answer:
        return False
    if isinstance(q.gold, float):
        return any(abs(x - q.gold) <= 0.02 * abs(q.gold) for x in numbers(answer))
    low = answer.lower()
    gold = q.gold.lower()
    if gold not in low:
        return False
    if q.kind not in ("more_people", "density"):
        return True
    # A comparison: the winner must be named before the other candidate, if both appear.
    others = [n.lower() for n in q.names if n.lower() != gold]
    return all(o not in low or low.index(gold) < low.index(o) for o in others)


def run_config(model: str, grammar: bool, mode: str, qs: list[Question]) -> dict[str, Any]:
    llm = LocalLLM(model, grammar=grammar)
    report = llm.load()
    runtime = Runtime(builtin_tools(), llm, mode=mode, grammar=grammar, max_replans=1)  # type: ignore[arg-type]
    rows = []
    for q in qs:
        began = time.monotonic()
        try:
            result = runtime.run(q.text)
        except Exception as exc:  # a failed run still counts, as a wrong answer
            result = getattr(exc, "result", None)
        wall = time.monotonic() - began
        events = result.events if result is not None else []
        invalid = [e for e in events if isinstance(e, PlanInvalid)]
        first_valid = mode == "compiled" and not any(e.repair == 0 for e in invalid)
        calls = [e for e in events if isinstance(e, LLMCallFinished)]
        decode = sum(e.completion_tokens for e in calls)
        answer = result.answer if result is not None else None
        rows.append(
            {
                "question": q.text,
                "kind": q.kind,
                "gold": q.gold,
                "answer": answer,
                "correct": correct(q, answer),
                "valid_first_plan": first_valid,
                "wall_s": round(wall, 3),
                "llm_calls": len(calls),
                "completion_tokens": decode,
                "llm_s": round(sum(e.duration for e in calls), 3),
            }
        )
        print(
            f"  [{model} grammar={grammar} {mode}] {q.text} -> {answer!r} "
            f"{'OK' if rows[-1]['correct'] else 'WRONG'} ({wall:.1f}s)",
            flush=True,
        )
    return {
        "model": model,
        "grammar": grammar,
        "mode": mode,
        "load_s": round(report.load_s, 2),
        "accuracy": sum(r["correct"] for r in rows) / len(rows),
        "valid_first_plan": (
            sum(r["valid_first_plan"] for r in rows) / len(rows) if mode == "compiled" else None
        ),
        "median_wall_s": statistics.median(r["wall_s"] for r in rows),
        "tokens_per_s": sum(r["completion_tokens"] for r in rows)
        / max(1e-9, sum(r["llm_s"] for r in rows)),
        "rows": rows,
    }


def rescore(path: Path) -> None:
    """Score the answers saved in a results file again with the current `correct()`."""
    data = json.loads(path.read_text())
    questions_by_text = {
        q["question"] if "question" in q else q["text"]: q for q in data["questions"]
    }
    for result in data["results"]:
        for row in result["rows"]:
            q = questions_by_text[row["question"]]
            row["correct"] = correct(
                Question(q["kind"], q["text"], q["gold"], tuple(q["names"])), row["answer"]
            )
        result["accuracy"] = sum(r["correct"] for r in result["rows"]) / len(result["rows"])
    path.write_text(json.dumps(data, indent=1))
    print_table(data["results"])


def print_table(results: list[dict[str, Any]]) -> None:
    print("\n| model | grammar | mode | valid first plans | accuracy | median s/question | tok/s |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        valid = "—" if r["valid_first_plan"] is None else f"{r['valid_first_plan']:.0%}"
        print(
            f"| {r['model']} | {'on' if r['grammar'] else 'off'} | {r['mode']} | {valid} | "
            f"{r['accuracy']:.0%} | {r['median_wall_s']:.1f} | {r['tokens_per_s']:.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-0.5b"])
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--modes", nargs="+", default=["compiled", "react"])
    parser.add_argument("--grammar", nargs="+", default=["on", "off"])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/local_eval.json"))
    parser.add_argument("--rescore", type=Path, help="only score a saved results file again")
    args = parser.parse_args()
    if args.rescore:
        rescore(args.rescore)
        return
    qs = questions(args.n, args.seed)
    results = []
    for model in args.models:
        for g in args.grammar:
            for mode in args.modes:
                results.append(run_config(model, g == "on", mode, qs))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    machine = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpus": os.cpu_count(),
    }
    args.out.write_text(
        json.dumps(
            {"machine": machine, "questions": [asdict(q) for q in qs], "results": results}, indent=1
        )
    )
    print_table(results)


if __name__ == "__main__":
    main()
