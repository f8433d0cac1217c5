"""Many runs at once through `planweave serve`, on the oracle LLM.

    PYTHONPATH=src:. python -m benchmarks.server_load --runs 50

A real server (uvicorn on a loopback port, the oracle as its OpenAI-compatible endpoint, the
benchmark's tools with their seeded latencies) gets `--runs` questions posted at once
(`POST /runs`), then each run is followed to its end through its event stream, as a client
would.  Beforehand, the same questions are asked one at a time through the same server.
Reported: whether every run finished and is in the journal, and each run's wall time (the
journal's `wall_s`) one at a time and all at once, p50 and p99.  The cache is off, so every run
plans.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2 as httpx
import uvicorn

from planweave import Runtime
from planweave.llm.openai_compat import OpenAICompatible
from planweave.server import ServerConfig, create_app

from .__main__ import machine_info
from .oracle import PREFILL, Oracle
from .workloads import bench_tools, generate


@contextmanager
def serving(runtime: Runtime) -> Iterator[str]:
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(runtime, ServerConfig()),
            host="127.0.0.1",
            port=0,
            log_level="warning",
            ws="none",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def follow(base: str, run_id: str) -> None:
    """Read the run's event stream to its end (`run_finished`), as a client would."""
    with (
        httpx.Client(base_url=base, timeout=300) as http,
        http.stream("GET", f"/runs/{run_id}/events") as response,
    ):
        for line in response.iter_lines():
            if line.startswith("data:") and '"run_finished"' in line:
                return


def ask(base: str, question: str) -> str:
    with httpx.Client(base_url=base, timeout=60) as http:
        response = http.post("/runs", json={"question": question})
        response.raise_for_status()
        run_id: str = response.json()["id"]
    follow(base, run_id)
    return run_id


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/server_load"))
    args = parser.parse_args()

    questions = [q for q in generate(args.runs * 2, args.seed) if q.kind != "map"][: args.runs]
    oracle = Oracle(questions, ttft=0.3, tps=60.0, prefill=PREFILL["hosted"])
    with tempfile.TemporaryDirectory() as tmp, oracle.server() as llm_server:
        llm = OpenAICompatible(base_url=llm_server.base_url, model="oracle", max_retries=0)
        runtime = Runtime(
            bench_tools("web"), llm, grammar=False, journal=Path(tmp) / "runs.db", cache=False
        )
        with serving(runtime) as base:
            began = time.monotonic()
            alone = [ask(base, q.text) for q in questions]
            alone_s = time.monotonic() - began
            began = time.monotonic()
            with ThreadPoolExecutor(max_workers=args.runs) as pool:
                together = list(pool.map(lambda q: ask(base, q.text), questions))
            together_s = time.monotonic() - began
        assert runtime.journal is not None
        shown = {r: runtime.journal.show(r) for r in alone + together}
    finished = sum(s["status"] == "finished" for s in shown.values())
    one = [shown[r]["wall_s"] for r in alone]
    many = [shown[r]["wall_s"] for r in together]
    rows: dict[str, Any] = {
        "runs": args.runs,
        "finished": finished,
        "recorded": len(shown),
        "alone": {"p50": statistics.median(one), "p99": percentile(one, 0.99), "total_s": alone_s},
        "together": {
            "p50": statistics.median(many),
            "p99": percentile(many, 0.99),
            "total_s": together_s,
        },
    }
    text = (
        f"{args.runs} runs through `planweave serve` on the oracle: {finished} of "
        f"{2 * args.runs} finished and recorded ({args.runs} one at a time, then {args.runs} at "
        f"once).\n\n"
        "| | p50 run s | p99 run s | all runs s |\n|---|---|---|---|\n"
        f"| one at a time | {rows['alone']['p50']:.2f} | {rows['alone']['p99']:.2f} | "
        f"{alone_s:.1f} |\n"
        f"| {args.runs} at once | {rows['together']['p50']:.2f} | "
        f"{rows['together']['p99']:.2f} | {together_s:.1f} |\n"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(
        json.dumps({"machine": machine_info(), "result": rows}, indent=1)
    )
    args.out.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
