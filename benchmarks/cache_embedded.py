"""The plan cache with the embedded model: latency and accuracy with and without it.

    python benchmarks/cache_embedded.py --n 10

The local eval's questions (`local_eval.questions`) twice, the second time with other countries,
in one shuffled stream; each asked side by side by a runtime without the cache and one with it
(its own journal), on one loaded model.  Then the README's question: asked once with the cache
(a miss that makes the template), then three questions of its shape with other countries, with
and without the cache.  Prints a markdown table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from local_eval import Question, correct, facts, questions

from planweave import RunFailed, Runtime
from planweave.builtin import builtin_tools
from planweave.llm.local import LocalLLM

README = "Which has more people per square kilometre, the {a} or {b}, and by how much?"
README_PAIRS = [
    ("Netherlands", "Belgium"),
    ("Philippines", "Japan"),
    ("United Kingdom", "Germany"),
    ("Czech Republic", "Austria"),
]


def readme_question(a: str, b: str) -> Question:
    (pa, aa, _), (pb, ab, _) = facts(a), facts(b)
    return Question("density", README.format(a=a, b=b), a if pa / aa > pb / ab else b, (a, b))


def ask(runtime: Runtime, q: Question, cache: bool) -> dict[str, Any]:
    began = time.monotonic()
    try:
        result = runtime.run(q.text)
    except RunFailed as failed:
        result = failed.result
    return {
        "question": q.text,
        "kind": q.kind,
        "cache": cache,
        "wall_s": round(time.monotonic() - began, 3),
        "llm_calls": result.llm.calls,
        "tokens": result.llm.prompt_tokens + result.llm.completion_tokens,
        "hit": bool(result.cache and result.cache.get("hit")),
        "answer": result.answer,
        "correct": correct(q, result.answer),
    }


def report(q: Question, pair: list[dict[str, Any]]) -> None:
    """One line per question: its time off and on, whether it hit, whether it was right."""
    print(
        f"{q.text}: "
        + ", ".join(
            f"{'on' if r['cache'] else 'off'} {r['wall_s']:.1f}s"
            f"{' hit' if r['hit'] else ''} {'OK' if r['correct'] else 'WRONG'}"
            for r in pair
        ),
        flush=True,
    )


def table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| set | questions | hit rate | right (off → on) | median s (off → on) | "
        "tokens (off → on) |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("eval", "readme"):
        off = [r for r in rows if r["set"] == name and not r["cache"]]
        on = [r for r in rows if r["set"] == name and r["cache"]]
        if not off:
            continue
        out.append(
            f"| {name} | {len(off)} | {sum(r['hit'] for r in on) / len(on):.0%} | "
            f"{sum(r['correct'] for r in off)} → {sum(r['correct'] for r in on)} | "
            f"{statistics.median(r['wall_s'] for r in off):.1f} → "
            f"{statistics.median(r['wall_s'] for r in on):.1f} | "
            f"{sum(r['tokens'] for r in off)} → {sum(r['tokens'] for r in on)} |"
        )
    hits = [r["wall_s"] for r in rows if r["set"] == "readme" and r["hit"]]
    misses = [r["wall_s"] for r in rows if r["set"] == "readme" and not r["cache"]]
    if hits and misses:
        out.append(
            f"\nREADME shape: a cache hit took {statistics.median(hits):.1f} s (median of "
            f"{len(hits)}), uncached {statistics.median(misses):.1f} s: "
            f"{statistics.median(hits) / statistics.median(misses):.0%} of the uncached time."
        )
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/cache_embedded"))
    args = parser.parse_args()

    llm = LocalLLM(args.model)
    llm.load()
    tools = builtin_tools()
    stream = questions(args.n, args.seed) + questions(args.n, args.seed + 1)
    random.Random(args.seed).shuffle(stream)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        off = Runtime(tools, llm, journal=Path(tmp) / "off.db", cache=False, max_replans=1)
        on = Runtime(tools, llm, journal=Path(tmp) / "on.db", max_replans=1)
        for q in stream:
            for cache, runtime in ((False, off), (True, on)):
                rows.append(ask(runtime, q, cache) | {"set": "eval"})
            report(q, rows[-2:])
        readme = Runtime(tools, llm, journal=Path(tmp) / "readme.db", max_replans=1)
        first = ask(readme, readme_question(*README_PAIRS[0]), True)
        print(f"README question (makes the template): {first['wall_s']:.1f}s", flush=True)
        for a, b in README_PAIRS[1:]:
            q = readme_question(a, b)
            for cache, runtime in ((False, off), (True, readme)):
                rows.append(ask(runtime, q, cache) | {"set": "readme"})
            report(q, rows[-2:])
    text = table(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(
        json.dumps({"settings": vars(args) | {"out": str(args.out)}, "rows": rows}, indent=1)
    )
    args.out.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
