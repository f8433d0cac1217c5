"""Success under failure: the oracle workloads with lookups that fail at injected rates, for
planweave compiled with recovery, compiled without, and ReAct, interleaved per question.

    python -m benchmarks.faults --n 30 --rates 0.1 0.3 --profile web

Each lookup call (every tool but the local calculator) raises `ConnectionError`, which planweave
classifies as `tool.transient`, with the given probability.  Whether a call fails depends only
on (fault seed, question, tool, argument, how many times that exact call was made before in the
run), so every contestant meets the same failure on the same call and attempt; the draws do not
depend on the rate, so the calls failing at 10 % also fail at 30 %.  A failing call first waits
its seeded latency, like a request the server drops.  The oracle answers only from successful
results (see `oracle.py`): a failure nothing recovers gives a wrong answer.

"With recovery" is `Recovery.default()` with a short backoff for transient tool failures
(`Retry(3, base=0.05)`: three calls in all), so that the run stays short.

Writes benchmarks/results/faults.md and faults.json (with machine info).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import statistics
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from planweave import (
    Mode,
    OpenAICompatible,
    Recovery,
    Retry,
    RunFailed,
    Runtime,
    ToolRegistry,
    tool,
)

from .__main__ import correct
from .oracle import Oracle
from .overhead import machine_info
from .workloads import Question, generate
from .world import LOCAL_TOOLS, tool_functions

# name: (mode, with recovery)
CONTESTANTS: dict[str, tuple[Mode, bool]] = {
    "compiled+retry": ("compiled", True),
    "compiled-none": ("compiled", False),
    "react+retry": ("react", True),
    "react-none": ("react", False),
}
DEFAULT_CONTESTANTS = list(CONTESTANTS)


def recovery(retry: bool, seed: int) -> Recovery:
    """`Recovery.default()` with a short backoff for transient tool failures, or none."""
    if not retry:
        return Recovery.none()
    rules = Recovery.default().on("tool.transient", Retry(3, base=0.05))
    rules.seed = seed  # the backoff's jitter, for repeatable timings
    return rules


class Faults:
    """Decides which tool calls fail.  `begin` starts a run: it names the question and rate and
    forgets the calls counted so far.  Tools run in threads, hence the lock."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.question = ""
        self.rate = 0.0
        self.seen: Counter[tuple[str, str]] = Counter()
        self.calls = 0
        self.injected = 0
        self._lock = threading.Lock()

    def begin(self, question: str, rate: float) -> None:
        with self._lock:
            self.question, self.rate = question, rate
            self.seen.clear()
            self.calls = self.injected = 0

    def draw(self, tool_name: str, argument: str, attempt: int) -> float:
        """A uniform number in [0, 1) fixed by the call's identity."""
        key = f"{self.seed}:{self.question}:{tool_name}:{argument}:{attempt}"
        return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64

    def fails(self, tool_name: str, argument: str) -> bool:
        with self._lock:
            attempt = self.seen[(tool_name, argument)]
            self.seen[(tool_name, argument)] += 1
            self.calls += 1
            failed = self.draw(tool_name, argument, attempt) < self.rate
            self.injected += failed
            return failed

    def wrap(self, name: str, fn: Callable[[str], Any]) -> Callable[..., Any]:
        """`fn`, with its signature and docstring, failing when `fails` says so."""

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            (argument,) = (*args, *kwargs.values())
            failed = self.fails(name, str(argument))
            result = fn(argument)
            if failed:
                raise ConnectionError(f"connection reset by peer (injected) calling {name}")
            return result

        return call

    def tools(self, profile: str) -> ToolRegistry:
        return ToolRegistry(
            [
                tool(fn if name in LOCAL_TOOLS else self.wrap(name, fn))
                for name, fn in tool_functions(profile).items()
            ]
        )


def run_once(
    name: str, q: Question, llm: OpenAICompatible, tools: ToolRegistry, faults: Faults, rate: float
) -> dict[str, Any]:
    """One contestant answering `q` with calls failing at `rate`: a row of the results."""
    mode, retry = CONTESTANTS[name]
    runtime = Runtime(
        tools,
        llm,
        mode=mode,
        grammar=False,
        react_max_steps=100,
        recovery=recovery(retry, faults.seed),
    )
    faults.begin(q.id, rate)
    try:
        result = runtime.run(q.text)
    except RunFailed as failed:
        result = failed.result
    # The lookups, which faults reach (a compiled plan may also rank locally; ReAct compares
    # in its own words).
    called = [r for r in result.tasks if r.attempts and r.task.tool not in LOCAL_TOOLS]
    return {
        "question": q.id,
        "kind": q.kind,
        "rate": rate,
        "contestant": name,
        "correct": correct(q, result.answer),
        "status": result.status,
        "wall_s": result.wall_s,
        "llm_calls": result.llm.calls,
        "tasks": len(called),
        "attempts": sum(r.attempts for r in called),
        "tool_calls": faults.calls,
        "injected": faults.injected,
    }


def run(
    questions: Sequence[Question],
    rates: Sequence[float],
    contestants: Sequence[str] = DEFAULT_CONTESTANTS,
    *,
    profile: str = "web",
    ttft: float = 0.3,
    tps: float = 60.0,
    fault_seed: int = 7,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """Every contestant on every question at every rate, interleaved per question."""
    oracle = Oracle(questions, ttft=ttft, tps=tps)
    faults = Faults(fault_seed)
    tools = faults.tools(profile)
    rows: list[dict[str, Any]] = []
    with oracle.server() as server:
        llm = OpenAICompatible(base_url=server.base_url, model="oracle", max_retries=0)
        for q in questions:
            for rate in rates:
                for name in contestants:
                    rows.append(run_once(name, q, llm, tools, faults, rate))
            if progress:
                mine = [r for r in rows if r["question"] == q.id]
                print(
                    f"{q.id}: "
                    + ", ".join(
                        f"{r['contestant']}@{r['rate']:g} {'ok' if r['correct'] else 'FAIL'} "
                        f"{r['wall_s']:.2f}s"
                        for r in mine
                    ),
                    flush=True,
                )
    return rows


def _stats(group: Sequence[dict[str, Any]]) -> dict[str, float]:
    tasks = sum(r["tasks"] for r in group)
    return {
        "runs": len(group),
        "success": sum(r["correct"] for r in group) / len(group),
        "median_s": statistics.median(r["wall_s"] for r in group),
        "attempts_per_task": sum(r["attempts"] for r in group) / tasks if tasks else float("nan"),
        "llm_calls": statistics.mean(r["llm_calls"] for r in group),
        "injected": statistics.mean(r["injected"] for r in group),
    }


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Statistics per (rate, contestant), and success per (shape, rate, contestant)."""
    by: dict[tuple[float, str], list[dict[str, Any]]] = defaultdict(list)
    by_kind: dict[tuple[str, float, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["rate"], r["contestant"])].append(r)
        by_kind[(r["kind"], r["rate"], r["contestant"])].append(r)
    return {
        "overall": [
            {"rate": rate, "contestant": name, **_stats(group)}
            for (rate, name), group in by.items()
        ],
        "by_shape": [
            {
                "kind": kind,
                "rate": rate,
                "contestant": name,
                "success": sum(r["correct"] for r in group) / len(group),
            }
            for (kind, rate, name), group in sorted(by_kind.items())
        ],
    }


def table(rows: Sequence[dict[str, Any]]) -> str:
    stats = summary(rows)
    contestants = list(dict.fromkeys(r["contestant"] for r in rows))
    lines = [
        "| fault rate | contestant | runs | success | median s | attempts / task | "
        "LLM calls / run | faults injected / run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in stats["overall"]:
        lines.append(
            f"| {s['rate']:.0%} | {s['contestant']} | {s['runs']} | {s['success']:.0%} | "
            f"{s['median_s']:.2f} | {s['attempts_per_task']:.2f} | {s['llm_calls']:.1f} | "
            f"{s['injected']:.2f} |"
        )
    success = {(s["kind"], s["rate"], s["contestant"]): s["success"] for s in stats["by_shape"]}
    kinds = sorted({r["kind"] for r in rows})
    rates = list(dict.fromkeys(r["rate"] for r in rows))
    shape_lines = [
        f"| shape | fault rate | {' | '.join(contestants)} |",
        "|---|---|" + "---|" * len(contestants),
    ]
    for kind in kinds:
        for rate in rates:
            cells = [f"{success[(kind, rate, c)]:.0%}" for c in contestants]
            shape_lines.append(f"| {kind} | {rate:.0%} | {' | '.join(cells)} |")
    return (
        "\n".join(lines)
        + "\n\nSuccess is a correct answer (scored as in `python -m benchmarks`); attempts count "
        "tool calls per lookup task that called its tool (retries included; local calculator "
        "and rank tasks, which no fault reaches, left out); median s over all runs.  "
        "+retry: `Recovery.default()` with `Retry(3, base=0.05)` for `tool.transient`; "
        "none: `Recovery.none()`.\n\n"
        + "\n".join(shape_lines)
        + "\n\nSuccess per question shape.\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--seed", type=int, default=2026, help="the questions' seed")
    parser.add_argument("--fault-seed", type=int, default=7)
    parser.add_argument("--rates", type=float, nargs="+", default=[0.1, 0.3])
    parser.add_argument(
        "--contestants", nargs="+", choices=list(CONTESTANTS), default=DEFAULT_CONTESTANTS
    )
    parser.add_argument("--profile", choices=["web", "zero"], default="web")
    parser.add_argument("--ttft", type=float, default=0.3)
    parser.add_argument("--tps", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/faults"))
    args = parser.parse_args()

    rows = run(
        generate(args.n, args.seed),
        args.rates,
        args.contestants,
        profile=args.profile,
        ttft=args.ttft,
        tps=args.tps,
        fault_seed=args.fault_seed,
        progress=True,
    )
    text = table(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(
        json.dumps(
            {
                "machine": machine_info(),
                "settings": vars(args) | {"out": str(args.out)},
                "summary": summary(rows),
                "rows": rows,
            },
            indent=1,
        )
    )
    args.out.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
