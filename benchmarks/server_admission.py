"""A flood of runs against `planweave serve`, with its admission limit.

    PYTHONPATH=src:. python -m benchmarks.server_admission --runs 1000

A real server (`planweave serve` in its own process, on a loopback port) in front of a slow
scripted endpoint (real SSE, each reply streamed over about `--llm-s` seconds) gets `--runs`
`POST /runs` at once (`--clients` connections).  Meanwhile a probe (its own process, so that the
flood's client does not slow it) asks `/healthz` every 20 ms.
Once the flood is answered, one more run is posted (again after each 503's Retry-After) and
followed to its end.  Reported: how many were accepted and refused (503), `/healthz` latency
during the flood (median, p99, max), the server's open file descriptors (most seen), and the
run posted afterwards: when it got in, its wait for a turn and its time to an answer.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx

from planweave import Journal, Reply, Script, ScriptedServer, tool
from planweave.llm.base import Message, Purpose
from planweave.prompts import purpose_of

from .__main__ import machine_info

PLAN = '1. lookup("planweave admission")\n2. join()\n<END_OF_PLAN>'


@tool
async def lookup(topic: str) -> str:
    """Looks a topic up (takes 0.2 s).

    Args:
        topic: what to look up
    """
    await anyio.sleep(0.2)
    return f"{topic}: found"


TOOLS = [lookup]


def script(llm_s: float) -> Script:
    """Replies streamed in 10 pieces over about `llm_s` seconds."""

    def reply(messages: list[Message], purpose: Purpose) -> Reply:
        text = PLAN if purpose == "planner" else "Action: Finish(found it)"
        return Reply(text, chunk_size=max(1, len(text) // 10), delay=llm_s / 10)

    return Script.routed(reply)


@contextmanager
def serving(endpoint: str, db: Path, args: argparse.Namespace) -> Iterator[tuple[str, int]]:
    """`planweave serve` in its own process on a free loopback port: its URL and pid."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    command = [sys.executable, "-m", "planweave", "serve", "--port", str(port), "--db", str(db)]
    command += ["--tools", "benchmarks.server_admission:TOOLS", "--base-url", endpoint]
    command += ["--model", "scripted", "--no-cache", "--log-level", "warning"]
    command += ["--max-running", str(args.max_running), "--max-queued", str(args.max_queued)]
    root = Path(__file__).resolve().parent.parent
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    proc = subprocess.Popen(command, cwd=root, env=env, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/healthz").raise_for_status()
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not start: {proc.stderr.read()}") from None
                time.sleep(0.1)
        yield base, proc.pid
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def probe(base: str, pid: int, stop: Any, found: Any) -> None:
    """`/healthz` every 20 ms until `stop` is set; puts on `found` each answer's latency,
    seconds, and the server's open file descriptors then."""
    with httpx.Client(base_url=base, timeout=60) as http:
        while not stop.is_set():
            began = time.perf_counter()
            http.get("/healthz").raise_for_status()
            found.put((time.perf_counter() - began, len(os.listdir(f"/proc/{pid}/fd"))))
            time.sleep(0.02)
        found.put(None)


async def flood(base: str, runs: int, clients: int) -> tuple[Counter[int], float]:
    """Post `runs` runs at once over `clients` connections: the status codes, seconds taken."""
    codes: Counter[int] = Counter()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    began = time.perf_counter()
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as http:

        async def post(n: int) -> None:
            response = await http.post("/runs", json={"question": f"flood question {n}"})
            codes[response.status_code] += 1

        async with anyio.create_task_group() as group:
            for n in range(runs):
                group.start_soon(post, n)
    return codes, time.perf_counter() - began


def afterwards(base: str) -> dict[str, Any]:
    """Post one run after the flood (again after each 503's Retry-After) and follow it."""
    with httpx.Client(base_url=base, timeout=600) as http:
        began = time.perf_counter()
        refused = 0
        while True:
            response = http.post("/runs", json={"question": "the question asked afterwards"})
            if response.status_code != 503:
                break
            refused += 1
            time.sleep(float(response.headers["retry-after"]))
        posted_s = time.perf_counter() - began
        if response.status_code != 202:
            return {"status_code": response.status_code, "posted_s": posted_s}
        body = response.json()
        waited = 0.0
        with http.stream("GET", f"/runs/{body['id']}/events") as stream:
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                event = json.loads(line.removeprefix("data:"))
                if event["kind"] == "run_admitted":
                    waited = event["waited"]
                if event["kind"] == "run_finished":
                    status = event["status"]
                    break
        return {
            "status_code": 202,
            "refused_first": refused,
            "accepted_after_s": round(posted_s, 3),
            "ahead_when_posted": (body.get("queued") or {}).get("ahead", 0),
            "queue_wait_s": waited,
            "answer_s": round(time.perf_counter() - began, 3),
            "status": status,
        }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=200, help="connections posting at once")
    parser.add_argument("--max-running", type=int, default=8)
    parser.add_argument("--max-queued", type=int, default=64)
    parser.add_argument("--llm-s", type=float, default=1.0, help="seconds per LLM reply")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/server_admission"))
    args = parser.parse_args(argv)

    processes = multiprocessing.get_context("spawn")
    stop, found = processes.Event(), processes.Queue()
    with (
        tempfile.TemporaryDirectory() as tmp,
        ScriptedServer(script(args.llm_s), guess=purpose_of) as endpoint,
    ):
        db = Path(tmp) / "runs.db"
        with serving(endpoint.base_url, db, args) as (base, pid):
            watcher = processes.Process(target=probe, args=(base, pid, stop, found))
            watcher.start()
            time.sleep(1.0)  # the probe is under way
            try:
                codes, flood_s = anyio.run(flood, base, args.runs, args.clients)
            finally:
                stop.set()
                probes = list(iter(found.get, None))
                watcher.join()
            after = afterwards(base)
        with Journal(db) as journal:
            recorded = len(journal.runs(10_000))
    # The probes of the flood (the last second before it only showed the probe under way).
    during = probes[-max(1, round(flood_s / 0.025)) :]
    ms = [1000 * latency for latency, _ in during]
    fds = [count for _, count in probes]
    result: dict[str, Any] = {
        "runs_posted": args.runs,
        "clients": args.clients,
        "max_running": args.max_running,
        "max_queued": args.max_queued,
        "llm_reply_s": args.llm_s,
        "accepted": codes[202],
        "refused_503": codes[503],
        "other": {str(k): v for k, v in codes.items() if k not in (202, 503)},
        "recorded_runs": recorded,
        "server_fds_max": max(fds),
        "flood_s": round(flood_s, 3),
        "healthz_ms": {
            "probes": len(ms),
            "median": round(statistics.median(ms), 2),
            "p99": round(percentile(ms, 0.99), 2),
            "max": round(max(ms), 2),
        },
        "afterwards": after,
    }
    text = (
        f"{args.runs} `POST /runs` at once ({args.clients} connections) against `planweave "
        f"serve` (--max-running {args.max_running}, --max-queued {args.max_queued}), each LLM "
        f"reply streamed over {args.llm_s:g} s by the scripted endpoint.\n\n"
        "| accepted | refused (503) | other | recorded | `/healthz` median ms | p99 ms | max ms "
        "| server fds (most) | flood s |\n|---|---|---|---|---|---|---|---|---|\n"
        f"| {codes[202]} | {codes[503]} | {sum(result['other'].values())} | {recorded} | "
        f"{result['healthz_ms']['median']} | {result['healthz_ms']['p99']} | "
        f"{result['healthz_ms']['max']} | {max(fds)} | {result['flood_s']} |\n\n"
        f"A run posted right after the flood: refused {after.get('refused_first', '?')} times "
        f"(each time waiting the Retry-After), accepted after {after.get('accepted_after_s', '?')}"
        f" s with {after.get('ahead_when_posted', '?')} ahead of it, waited "
        f"{after.get('queue_wait_s', '?')} s for its turn, answered "
        f"{after.get('answer_s', '?')} s after it was first posted "
        f"({after.get('status', after.get('status_code'))}).\n\n"
        "Before the admission limit (issue 28, item 7): all 1,000 accepted, 1,537 open fds, "
        "`/healthz` 3–9 s, a run posted afterwards waited 39 s.\n"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(
        json.dumps({"machine": machine_info(), "result": result}, indent=1)
    )
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return result


if __name__ == "__main__":
    main()
