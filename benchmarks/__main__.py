"""Orchestration benchmark on the oracle LLM: planweave compiled (streaming dispatch), compiled
without streaming dispatch, ReAct and native function calling, interleaved per question, against
the critical-path limit; with the peer ports of LLMCompiler (LlamaIndex's pack and PyPI's
`llmcompiler`) when their virtualenvs exist (`bash benchmarks/peers/setup.sh`).

    python -m benchmarks --n 30 --profile web --ttft 0.3 --tps 60

Writes benchmarks/results/oracle.md and oracle.json (with machine info).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
import openai

from planweave import OpenAICompatible, RunFailed, Runtime, ToolRegistry

from .native import Outcome, native_run
from .oracle import Oracle
from .overhead import machine_info
from .peers.client import PEERS, PeerRunner, available
from .workloads import Question, bench_tools, generate, latency, mentions

CONTESTANTS = {
    "compiled": {"mode": "compiled", "streaming": True},
    "compiled-nostream": {"mode": "compiled", "streaming": False},
    "react": {"mode": "react", "streaming": True},
    "native": {},
}


def run_native(base_url: str, tools: ToolRegistry, question: str) -> Outcome:
    async def go() -> Outcome:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="oracle", max_retries=0)
        try:
            return await native_run(client, "oracle", tools, question)
        finally:
            await client.close()

    return anyio.run(go)


def run_contestant(
    name: str, question: str, llm: OpenAICompatible, base_url: str, tools: ToolRegistry
) -> Outcome:
    """Answer `question` as contestant `name`, against the oracle at `base_url`."""
    if name == "native":
        return run_native(base_url, tools, question)
    runtime = Runtime(
        tools,
        llm,
        grammar=False,
        react_max_steps=100,
        **CONTESTANTS[name],  # type: ignore[arg-type]
    )
    try:
        result = runtime.run(question)
    except RunFailed as failed:
        result = failed.result
    tokens = result.llm.prompt_tokens + result.llm.completion_tokens
    return Outcome(result.answer, result.wall_s, result.llm.calls, tokens)


def correct(q: Question, answer: str | None) -> bool:
    if answer is None:
        return False
    if isinstance(q.gold, float):
        return mentions(q.gold, answer)
    return q.gold.lower() in answer.lower()


def critical_path_limit(q: Question, oracle: Oracle, profile: str) -> float | None:
    """TTFT + streaming the plan up to its last critical task + the longest chain of tool
    latencies + the joiner call.  Not defined for replanning questions (two rounds)."""
    if q.kind == "replan":
        return None
    lines = q.plan_text().splitlines()
    finish: dict[int, float] = {}
    for i, step in enumerate(q.steps, 1):
        # A task can start once its line has streamed and its inputs have landed.
        ready = oracle.seconds("\n".join(lines[:i]) + "\n")
        ready = max([ready, *(finish[d] for d in q.deps(i))])
        finish[i] = ready + latency(
            profile, step.tool, step.args[0].strip('"') if step.args else ""
        )
    joiner = oracle.joiner_text(q, [])
    return max(finish.values(), default=0.0) + oracle.seconds(joiner)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--profile", choices=["web", "zero"], default="web")
    parser.add_argument("--ttft", type=float, default=0.3)
    parser.add_argument("--tps", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/oracle"))
    args = parser.parse_args()

    questions = generate(args.n, args.seed)
    oracle = Oracle(questions, ttft=args.ttft, tps=args.tps)
    tools = bench_tools(args.profile)
    rows: list[dict[str, Any]] = []
    peers, skipped = available()
    for line in skipped:
        print(line)
    with oracle.server() as server, contextlib.ExitStack() as stack:
        llm = OpenAICompatible(base_url=server.base_url, model="oracle", max_retries=0)
        runners = {
            p.contestant: stack.enter_context(PeerRunner(p, server.base_url, args.profile))
            for p in peers
        }
        names = [*CONTESTANTS, *runners]
        for q in questions:
            limit = critical_path_limit(q, oracle, args.profile)
            for name in names:  # interleaved: the same conditions for each
                if name in runners:
                    outcome = runners[name].ask(q.text)
                else:
                    outcome = run_contestant(name, q.text, llm, server.base_url, tools)
                rows.append(
                    {
                        "question": q.id,
                        "kind": q.kind,
                        "split": q.split,
                        "contestant": name,
                        "wall_s": outcome.wall_s,
                        "limit_s": limit,
                        "correct": correct(q, outcome.answer),
                        "llm_calls": outcome.calls,
                        "tokens": outcome.tokens,
                    }
                )
            print(
                f"{q.id}: "
                + ", ".join(f"{r['contestant']} {r['wall_s']:.2f}s" for r in rows[-len(names) :])
                + (f", limit {limit:.2f}s" if limit else ""),
                flush=True,
            )

    table = summarize(rows)
    machine = machine_info()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(
        json.dumps(
            {"machine": machine, "settings": vars(args) | {"out": str(args.out)}, "rows": rows},
            indent=1,
        )
    )
    args.out.with_suffix(".md").write_text(table)
    print(table)
    try:
        from .plot import plot_all
    except ImportError as exc:
        print(f"no plots: {exc}")
    else:
        for path in plot_all(args.out.with_suffix(".json"), args.out.parent / "overhead.json"):
            print(f"wrote {path}")


def summarize(rows: list[dict[str, Any]]) -> str:
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["kind"], r["contestant"])].append(r)
    kinds = sorted({r["kind"] for r in rows})
    lines = [
        "| shape | compiled s | no-stream s | ReAct s | native FC s | ReAct / compiled | "
        "native / compiled | compiled / limit | tokens ReAct / compiled | correct (c / r / n) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind in kinds:
        med = {c: statistics.median(r["wall_s"] for r in by[(kind, c)]) for c in CONTESTANTS}
        ratios = [r["wall_s"] / r["limit_s"] for r in by[(kind, "compiled")] if r["limit_s"]]
        tok = statistics.median(r["tokens"] for r in by[(kind, "react")]) / max(
            1, statistics.median(r["tokens"] for r in by[(kind, "compiled")])
        )
        acc = {
            c: sum(r["correct"] for r in by[(kind, c)]) / len(by[(kind, c)]) for c in CONTESTANTS
        }
        lines.append(
            f"| {kind} | {med['compiled']:.2f} | {med['compiled-nostream']:.2f} | "
            f"{med['react']:.2f} | {med['native']:.2f} | {med['react'] / med['compiled']:.2f}x | "
            f"{med['native'] / med['compiled']:.2f}x | "
            f"{(statistics.median(ratios) if ratios else float('nan')):.2f}x | {tok:.1f}x | "
            f"{acc['compiled']:.0%} / {acc['react']:.0%} / {acc['native']:.0%} |"
        )
    return (
        "\n".join(lines)
        + "\n\nMedians per question shape; ratios of medians, measured side by side.\n\n"
        + summarize_peers(rows)
        + summarize_splits(rows)
    )


def summarize_peers(rows: list[dict[str, Any]]) -> str:
    """planweave compiled against each peer port of LLMCompiler that ran, per shape."""
    ran = {r["contestant"] for r in rows}
    peers = [p.contestant for p in PEERS if p.contestant in ran]
    if not peers:
        return ""
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["kind"], r["contestant"])].append(r)
    head = ["shape", "compiled s"]
    for p in peers:
        head += [f"{p} s", f"compiled / {p}"]
    head.append(f"correct (compiled / {' / '.join(peers)})")
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for kind in sorted({r["kind"] for r in rows}):
        med = {
            c: statistics.median(r["wall_s"] for r in by[(kind, c)]) for c in ["compiled", *peers]
        }
        cells = [kind, f"{med['compiled']:.2f}"]
        for p in peers:
            cells += [f"{med[p]:.2f}", f"{med['compiled'] / med[p]:.2f}x"]
        acc = [
            sum(r["correct"] for r in by[(kind, c)]) / len(by[(kind, c)])
            for c in ["compiled", *peers]
        ]
        cells.append(" / ".join(f"{a:.0%}" for a in acc))
        lines.append("| " + " | ".join(cells) + " |")
    return (
        "\n".join(lines)
        + "\n\nPeer ports of LLMCompiler, each in its own virtualenv, on the same oracle and tools;"
        " a port's time is measured inside its runner around the agent call.\n\n"
    )


def summarize_splits(rows: list[dict[str, Any]]) -> str:
    """Accuracy and latency per split (questions used to tune prompts vs held out), per
    contestant, over all shapes."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["split"], r["contestant"])].append(r)
    splits = sorted({r["split"] for r in rows}, key=lambda s: (s != "tune", s))
    contestants = list(dict.fromkeys(r["contestant"] for r in rows))
    lines = [
        "| split | contestant | questions | correct | median s | median s / limit |",
        "|---|---|---|---|---|---|",
    ]
    for split in splits:
        for name in contestants:
            group = by[(split, name)]
            if not group:
                continue
            ratios = [r["wall_s"] / r["limit_s"] for r in group if r["limit_s"]]
            lines.append(
                f"| {split} | {name} | {len(group)} | "
                f"{sum(r['correct'] for r in group) / len(group):.0%} | "
                f"{statistics.median(r['wall_s'] for r in group):.2f} | "
                f"{(statistics.median(ratios) if ratios else float('nan')):.2f}x |"
            )
    return "\n".join(lines) + "\n\nPer split, all shapes together (the limit excludes replans).\n"


if __name__ == "__main__":
    main()
