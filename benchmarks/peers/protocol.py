"""The runner side of a peer: one long-lived process that answers questions with its framework.

It reads one JSON object per line on stdin (`{"question": ...}`) and writes one per line on
stdout (`{"answer", "wall_s", "began", "calls", "tokens", "error"}`; `began` on
`time.monotonic()`, the clock the oracle server logs with).  Only the framework's answer call
is timed, so process start-up and imports stay out of the comparison.  Imports no framework and
not planweave: it runs in the peer's own virtualenv.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Meter:
    """LLM calls and tokens of the question being answered, filled by a framework callback."""

    calls: int = 0
    tokens: int = 0

    def add(self, tokens: int) -> None:
        self.calls += 1
        self.tokens += tokens


def arguments(description: str | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--base-url", required=True, help="the oracle's OpenAI-compatible URL")
    parser.add_argument("--profile", choices=["web", "zero"], default="web")
    return parser.parse_args()


def serve(answer: Callable[[str], str | None], meter: Meter) -> None:
    """Answer each question from stdin with `answer` until stdin closes."""
    out = sys.stdout
    sys.stdout = sys.stderr  # frameworks print progress; only outcomes go to the real stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        question = json.loads(line)["question"]
        meter.calls = meter.tokens = 0
        error = None
        asked = time.monotonic()
        began = time.perf_counter()
        try:
            text = answer(question)
        except Exception:  # reported to the benchmark, which counts the question as failed
            text, error = None, traceback.format_exc(limit=8)
        wall_s = time.perf_counter() - began
        if error:
            print(error, file=sys.stderr, flush=True)
        outcome = {
            "answer": text,
            "wall_s": wall_s,
            "began": asked,
            "calls": meter.calls,
            "tokens": meter.tokens,
            "error": error,
        }
        out.write(json.dumps(outcome) + "\n")
        out.flush()
