"""Prompt-lookup drafting on the embedded model: end-to-end time with and without, interleaved.

The same questions (the answer eval's tune part) run in one process, each once with drafting
off and once with `--draft` tokens ahead, in alternating order, on one loaded model (the
drafter is per call, the model shared).  Reports the median time of each, the ratio, and how
many answers came out worded differently (batched and single-token logits differ in their
last bits, so a near tie may decode differently).

    python -m benchmarks.drafting --questions 12 --draft 2 --out benchmarks/results/drafting.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from planweave import Budget, Runtime
from planweave.builtin import builtin_tools
from planweave.llm.local import LocalLLM


def main(argv: list[str] | None = None) -> None:
    from benchmarks.answer_eval import questions

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--draft", type=int, default=2, help="tokens guessed ahead")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--binding", default=None, help="cyllama or llama-cpp-python")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    chosen = [q for q in questions(2, args.seed) if not q.heldout][: args.questions]
    llms = {
        0: LocalLLM(args.model, draft_tokens=0, binding=args.binding),
        args.draft: LocalLLM(args.model, draft_tokens=args.draft, binding=args.binding),
    }
    for llm in llms.values():
        llm.load()
    tools = builtin_tools()
    rows: list[dict[str, Any]] = []
    for i, q in enumerate(chosen):
        order = [0, args.draft] if i % 2 == 0 else [args.draft, 0]
        row: dict[str, Any] = {"question": q.text}
        for draft in order:
            runtime = Runtime(tools, llms[draft], budget=Budget(wall_s=180))
            began = time.monotonic()
            result = runtime.run(q.text)
            row[f"s_{draft}"] = time.monotonic() - began
            row[f"answer_{draft}"] = result.answer
        rows.append(row)
        print(
            f"{q.text[:60]:60} off {row['s_0']:5.1f} s  draft {row[f's_{args.draft}']:5.1f} s",
            flush=True,
        )
    off = statistics.median(r["s_0"] for r in rows)
    on = statistics.median(r[f"s_{args.draft}"] for r in rows)
    total_off = sum(r["s_0"] for r in rows)
    total_on = sum(r[f"s_{args.draft}"] for r in rows)
    differ = sum(r["answer_0"] != r[f"answer_{args.draft}"] for r in rows)
    summary = {
        "binding": llms[0].engine.version(),
        "questions": len(rows),
        "draft": args.draft,
        "median_off_s": off,
        "median_on_s": on,
        "total_off_s": total_off,
        "total_on_s": total_on,
        "worded_differently": differ,
    }
    print(json.dumps(summary, indent=2))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
