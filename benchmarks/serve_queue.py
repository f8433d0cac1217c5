"""Five questions at once through `planweave serve` on one model: how they queue for it.

    PYTHONPATH=src:. python -m benchmarks.serve_queue                    # the embedded model
    PYTHONPATH=src:. python -m benchmarks.serve_queue --base-url URL [--model NAME]

Starts `planweave serve` as a user would (a subprocess on a free loopback port, the built-in
tools, a journal in a temporary folder, so no plan comes from the cache), waits until it
answers `/healthz` (the embedded model is loaded by then), posts the questions at the same
moment (`POST /runs`, a thread each) and follows each run's event stream to its end.

The embedded model answers one LLM call at a time: the runs' calls take turns, first come first
served, and a call that has to wait says so on its run's stream (`model_waiting`, N calls ahead;
`model_acquired` once it has the model, after how long).  Reported for each question: seconds
from its post to its answer arriving, seconds its calls waited for the model, how many calls
were ahead of its first one, and the answer; written to benchmarks/results/serve_queue.json.
An endpoint (`--base-url`) serves calls side by side, so its runs wait for nothing here.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2 as httpx

from .overhead import machine_info

QUESTIONS = [
    "What is the population of Japan?",
    "What is the area of Egypt in square kilometres?",
    "What is the population density of the Netherlands, in people per km²?",
    "Which has more people, Brazil or Nigeria?",
    "What is the combined population of Spain and Portugal?",
]
OUT = Path(__file__).parent / "results" / "serve_queue.json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(
    base_url: str | None, model: str | None, folder: Path, *, ready_s: float, log: Path
) -> Iterator[str]:
    """`planweave serve` in a subprocess until the block ends; yields its URL."""
    port = _free_port()
    command = [sys.executable, "-m", "planweave", "serve", "--port", str(port)]
    command += ["--db", str(folder / "runs.db"), "--log-level", "warning"]
    if base_url:
        command += ["--base-url", base_url]
    if model:
        command += ["--model", model]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("w") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + ready_s
            while True:
                if server.poll() is not None:
                    raise RuntimeError(f"planweave serve exited:\n{log.read_text()[-3000:]}")
                try:
                    if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"planweave serve not ready after {ready_s:.0f} s")
                time.sleep(0.2)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _follow(http: httpx.Client, run_id: str) -> Iterator[dict[str, Any]]:
    """The run's events as its SSE stream brings them, to its end."""
    with http.stream("GET", f"/runs/{run_id}/events") as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("data: "):
                yield json.loads(line[len("data: ") :])


def ask(
    url: str,
    question: str,
    barrier: threading.Barrier,
    timeout_s: float,
    *,
    token: str | None = None,
) -> dict[str, Any]:
    """Post `question` when every question is ready, follow its run to the end; what it took."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=url, timeout=timeout_s, headers=headers) as http:
        barrier.wait()
        posted = time.monotonic()
        response = http.post("/runs", json={"question": question})
        response.raise_for_status()
        run_id = response.json()["id"]
        calls: dict[int, dict[str, Any]] = {}
        finished: dict[str, Any] = {}
        for event in _follow(http, run_id):
            kind = event["kind"]
            if kind == "llm_call_started":
                calls[event["call"]] = {"purpose": event["purpose"], "ahead": 0, "waited_s": 0.0}
            elif kind == "model_waiting":
                call = calls.setdefault(event["call"], {"purpose": event["purpose"]})
                if not call.get("ahead"):
                    call["ahead"] = event["ahead"]  # the first count: its place on arrival
            elif kind == "model_acquired":
                calls[event["call"]]["waited_s"] = event["waited"]
            elif kind == "run_finished":
                finished = event
                answered = time.monotonic()
                break
        else:
            answered = time.monotonic()
    first = calls.get(min(calls)) if calls else None
    return {
        "question": question,
        "run_id": run_id,
        "status": finished.get("status", "lost"),
        "answer_s": round(answered - posted, 3),
        "wall_s": finished.get("wall_s"),
        "model_wait_s": round(sum(c.get("waited_s", 0.0) for c in calls.values()), 3),
        "first_call_ahead": first.get("ahead", 0) if first else None,
        "llm_calls": [{"call": n, **c} for n, c in sorted(calls.items())],
        "answer": finished.get("answer"),
        "error": (finished.get("error") or {}).get("message"),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (default: embedded)")
    parser.add_argument("--model", help="the endpoint's model, or the embedded model's name")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS), help="how many (1-5)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run at most")
    parser.add_argument("--ready", type=float, default=1800.0, help="seconds to wait for serve")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    questions = QUESTIONS[: max(1, min(args.questions, len(QUESTIONS)))]
    with tempfile.TemporaryDirectory(prefix="planweave-serve-queue-") as tmp:
        folder = Path(tmp)
        log = folder / "serve.log"
        with serving(args.base_url, args.model, folder, ready_s=args.ready, log=log) as url:
            model = httpx.get(f"{url}/healthz", timeout=10).json()["model"]
            barrier = threading.Barrier(len(questions))
            began = time.monotonic()
            with ThreadPoolExecutor(len(questions)) as pool:
                runs = list(pool.map(lambda q: ask(url, q, barrier, args.timeout), questions))
            total = time.monotonic() - began
    answered = [r["answer_s"] for r in runs]
    report = {
        "benchmark": "serve_queue",
        "backend": "endpoint" if args.base_url else "embedded",
        "model": model,
        "questions": len(questions),
        "all_s": round(total, 3),
        "answer_s_median": round(statistics.median(answered), 3),
        "model_wait_s_total": round(sum(r["model_wait_s"] for r in runs), 3),
        "finished": sum(r["status"] == "finished" for r in runs),
        "runs": runs,
        "machine": machine_info(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    done = f"{report['finished']}/{len(runs)} answered, all in {total:.1f} s"
    print(f"{report['backend']} {model}: {done}")
    print(f"{'answer s':>9} {'waited s':>9} {'ahead':>5}  question -> answer")
    for r in runs:
        answer = (r["answer"] or r["error"] or r["status"]).replace("\n", " ")
        print(
            f"{r['answer_s']:9.2f} {r['model_wait_s']:9.2f} {r['first_call_ahead'] or 0:5d}  "
            f"{r['question']} -> {answer[:80]}"
        )
    print(f"written to {args.out}")
    return report


if __name__ == "__main__":
    main()
