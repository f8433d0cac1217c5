"""Replicas (issue 32): throughput of `planweave serve` on SQLite and on PostgreSQL, one replica
and three, on the oracle LLM; how late a follower on another replica sees a run's events; and
the journal's cost per task on each.

    PYTHONPATH=src:. python -m benchmarks.replicas [--runs 90] [--repeats 3] [--quick]

1. Throughput.  Configurations: one replica on an SQLite file, one on a PostgreSQL database,
   three on one PostgreSQL database.  Replicas are real `planweave serve` subprocesses (the
   benchmark's tools as `benchmarks.replica_tools:TOOLS`, the oracle in this process as their
   endpoint, the cache off so every run plans, the same options everywhere).  `--runs`
   questions are posted at once (round-robin over the replicas) and each run is followed
   through its event stream on the replica it was posted to, until `run_finished`.  runs/s is
   the runs over the time from the first post to the last `run_finished`; a run's wall is the
   client's (post to `run_finished`) and the journal's (`wall_s`, from its start).  Every run
   is checked in the journal afterwards: finished, and its answer right; a configuration with
   any run not finished is reported as such, not counted as throughput.  Configurations are
   interleaved within each repeat (a fresh journal and fresh processes each time), medians over
   repeats.
2. Event delivery across replicas.  On the three replicas, `--delay-runs` runs posted to
   replica A and followed on A and on B (the next one) at the same time: when `run_finished`
   (and each event) reaches the client from B against from A.  A follows its own runs from
   memory; B reads the journal every `server/live.py` POLL_S seconds.
3. Journal cost per task: `benchmarks.journal.per_task` (a wide plan of no-op tasks through the
   runtime, with and without the journal) on an SQLite file and on a PostgreSQL database, in the
   same run.

PostgreSQL is Debian's (`/usr/lib/postgresql/*/bin`), started for the run in a temporary folder
on a Unix socket (as `tests/postgres_server.py` does; as the `postgres` user when we are root).
Writes benchmarks/results/replicas.json and replicas.md (`--out`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx

import planweave
from planweave.server.live import POLL_S
from planweave.store import Journal

from . import journal as journal_bench
from .__main__ import correct
from .oracle import PREFILL, Oracle
from .overhead import machine_info
from .workloads import Question, generate

ROOT = Path(__file__).resolve().parent.parent
# The replicas run the planweave this process imported (PYTHONPATH=src:. the working tree's).
PLANWEAVE_SRC = Path(planweave.__file__).resolve().parent.parent
TESTS = ROOT / "tests"
SETTINGS = ["runs", "repeats", "max_running", "take_over", "delay_runs", "delay_at_once"]
SETTINGS += ["tasks", "task_repeats", "profile", "ttft", "tps", "seed"]
LOAD_TIMEOUT_S = 300
SERVER_ERRORS: list[str] = []  # a replica's stderr, when it logged an error
EARLY_ENDS: list[dict[str, Any]] = []  # streams that ended before run_finished: after what
# name: (journal, replicas, each replica's --max-running as a multiple of --max-running)
CONFIGS = {
    "sqlite-1": ("sqlite", 1, 1),
    "postgres-1": ("postgres", 1, 1),
    "postgres-3": ("postgres", 3, 1),
    "postgres-1-wide": ("postgres", 1, 3),  # as many slots as three replicas
}


# --------------------------------------------------------------------------------- processes


def _tests_on_path() -> None:
    """`tests/postgres_server.py` and `tests/cli_process.py` are reused as they are."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))


@contextmanager
def postgres() -> Iterator[Any]:
    """A PostgreSQL server for the run (`tests/postgres_server.PostgresServer`)."""
    _tests_on_path()
    from postgres_server import PostgresServer, find_bin

    bin_dir = find_bin()
    if bin_dir is None:
        raise SystemExit("PostgreSQL is not installed (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="pw-bench-pg-"))
    server = PostgresServer(bin_dir, root).start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def replicas(
    db: str, llm: str, count: int, *, runs: int, max_running: int, take_over: float, profile: str
) -> Iterator[list[str]]:
    """`count` `planweave serve` processes on journal `db`; their URLs."""
    _tests_on_path()
    from cli_process import Announced

    command = [
        sys.executable, "-m", "planweave", "serve", "--port", "0", "--db", db,
        "--tools", "benchmarks.replica_tools:TOOLS", "--base-url", llm, "--model", "oracle",
        "--no-cache", "--no-grammar", "--max-running", str(max_running),
        "--max-queued", str(runs), "--take-over", str(take_over), "--log-level", "info",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLANWEAVE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(PLANWEAVE_SRC), str(ROOT)])
    env["BENCH_TOOL_PROFILE"] = profile
    started: list[Any] = []
    try:
        for _ in range(count):
            proc = subprocess.Popen(
                command,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
            )
            started.append(Announced(proc, timeout=120))
        yield [s.url for s in started]
    finally:
        for server in started:
            stderr = server.stop()
            if "Traceback" in stderr or "ERROR" in stderr:
                SERVER_ERRORS.append(stderr[-4000:])


# ------------------------------------------------------------------------------------ clients


async def follow(http: httpx.AsyncClient, run_id: str, arrivals: dict[int, float]) -> int:
    """Read run `run_id`'s event stream to `run_finished`, noting when each event (by its
    sequence number) arrived (`time.monotonic()`; -1: `run_finished`).  A stream that ends
    before `run_finished` is opened again after the last event seen (`Last-Event-ID`), as a
    client would; returns how many times that happened."""
    last: str | None = None
    kind = None
    for early in range(100):
        headers = {"last-event-id": last} if last else {}
        async with http.stream("GET", f"/runs/{run_id}/events", headers=headers) as response:
            assert response.status_code == 200, await response.aread()
            event: dict[str, str] = {}
            async for line in response.aiter_lines():
                if line:
                    name, _, value = line.partition(": ")
                    event[name] = value
                    continue
                if "data" in event and "id" in event:
                    now = time.monotonic()
                    last = event["id"]
                    arrivals.setdefault(int(last), now)
                    kind = json.loads(event["data"]).get("kind")
                    if kind == "run_finished":
                        arrivals[-1] = now
                        return early
                event = {}
        EARLY_ENDS.append(
            {"run": run_id, "after_seq": last, "after_kind": kind, "at": time.monotonic()}
        )
        await anyio.sleep(0.05)
    raise AssertionError(f"run {run_id}'s stream never reached run_finished")


def _client(url: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=url,
        timeout=httpx.Timeout(600, connect=30),
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=None),
    )


async def _load(urls: list[str], questions: Sequence[Question]) -> dict[str, Any]:
    """Post every question at once, round-robin over `urls`; follow each on its replica."""
    posted: dict[str, tuple[Question, float, float]] = {}  # run id: question, posted, finished
    reopened: dict[str, int] = {}
    clients = [_client(u) for u in urls]
    began = time.monotonic()

    async def one(n: int, q: Question) -> None:
        http = clients[n % len(clients)]
        sent = time.monotonic()
        response = await http.post("/runs", json={"question": q.text})
        assert response.status_code == 202, response.text
        run_id = response.json()["id"]
        arrivals: dict[int, float] = {}
        reopened[run_id] = await follow(http, run_id, arrivals)
        posted[run_id] = (q, sent, arrivals[-1])

    try:
        with anyio.fail_after(LOAD_TIMEOUT_S):  # a run that never ends fails the benchmark
            async with anyio.create_task_group() as tg:
                for n, q in enumerate(questions):
                    tg.start_soon(one, n, q)
    finally:
        for c in clients:
            await c.aclose()
    return {"began": began, "runs": posted, "reopened": sum(reopened.values())}


async def _delays(urls: list[str], questions: Sequence[Question], at_once: int) -> list[Any]:
    """Each question posted to replica A (round-robin) and followed on A and on B (the next),
    `at_once` runs at a time; per run, the arrival times of every event on each."""
    clients = [_client(u) for u in urls]
    out: list[Any] = []
    limit = anyio.Semaphore(at_once)

    async def one(n: int, q: Question) -> None:
        async with limit:
            a, b = n % len(clients), (n + 1) % len(clients)
            response = await clients[a].post("/runs", json={"question": q.text})
            assert response.status_code == 202, response.text
            run_id = response.json()["id"]
            on: tuple[dict[int, float], dict[int, float]] = ({}, {})
            reopened = [0, 0]

            async def on_replica(i: int, replica: int) -> None:
                reopened[i] = await follow(clients[replica], run_id, on[i])

            async with anyio.create_task_group() as tg:
                tg.start_soon(on_replica, 0, a)
                tg.start_soon(on_replica, 1, b)
            out.append((run_id, *on, *reopened, q))

    try:
        async with anyio.create_task_group() as tg:
            for n, q in enumerate(questions):
                tg.start_soon(one, n, q)
    finally:
        for c in clients:
            await c.aclose()
    return out


# ------------------------------------------------------------------------------------ measures


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def checked(db: str, runs: dict[str, tuple[Question, float, float]]) -> dict[str, Any]:
    """What the journal says of each run: finished, right, its wall."""
    journal = Journal(db)
    try:
        shown = {r: journal.show(r) for r in runs}
    finally:
        journal.close()
    finished = [r for r, s in shown.items() if s["status"] == "finished"]
    right = [r for r in finished if correct(runs[r][0], shown[r].get("answer"))]
    return {
        "finished": len(finished),
        "right": len(right),
        "statuses": sorted({s["status"] for s in shown.values()}),
        "journal_wall_s": [shown[r]["wall_s"] for r in finished],
    }


def throughput(
    kind: str,
    count: int,
    max_running: int,
    questions: Sequence[Question],
    llm: str,
    pg: Any,
    tmp: Path,
    args: Any,
) -> dict[str, Any]:
    db = str(tmp / f"runs-{time.monotonic_ns()}.db") if kind == "sqlite" else pg.database()
    try:
        start = time.monotonic()
        with replicas(
            db, llm, count, runs=len(questions), max_running=max_running,
            take_over=args.take_over, profile=args.profile,
        ) as urls:  # fmt: skip
            startup_s = time.monotonic() - start
            load = anyio.run(_load, urls, questions)
        runs = load["runs"]
        ends = [finished for _, _, finished in runs.values()]
        total_s = max(ends) - load["began"]
        client_walls = [finished - sent for _, sent, finished in runs.values()]
        check = checked(db, runs)
    finally:
        if kind == "postgres":
            pg.drop(db)
    ok = check["finished"] == len(questions)
    return {
        "runs": len(questions),
        "replicas": count,
        "max_running_each": max_running,
        **{k: check[k] for k in ("finished", "right", "statuses")},
        "all_finished": ok,
        "startup_s": round(startup_s, 2),
        "streams_reopened": load["reopened"],
        "total_s": round(total_s, 3),
        "runs_per_s": round(len(questions) / total_s, 3) if ok else None,
        "client_wall_p50_s": round(statistics.median(client_walls), 3),
        "client_wall_p90_s": round(percentile(client_walls, 0.9), 3),
        "journal_wall_p50_s": round(statistics.median(check["journal_wall_s"]), 3),
        "journal_wall_p90_s": round(percentile(check["journal_wall_s"], 0.9), 3),
    }


def delivery(questions: Sequence[Question], llm: str, pg: Any, args: Any) -> dict[str, Any]:
    db = pg.database()
    try:
        with replicas(
            db, llm, 3, runs=len(questions), max_running=args.max_running,
            take_over=args.take_over, profile=args.profile,
        ) as urls:  # fmt: skip
            rows = anyio.run(_delays, urls, questions, args.delay_at_once)
        runs = {row[0]: (row[5], 0.0, 0.0) for row in rows}
        check = checked(db, runs)
    finally:
        pg.drop(db)
    finished_late = [on_b[-1] - on_a[-1] for _, on_a, on_b, *_ in rows]
    # An early end of a stream on B: how long after A delivered the run's `run_finished`.
    done_on_a = {row[0]: row[1][-1] for row in rows}
    for end in EARLY_ENDS:
        if end["run"] in done_on_a:
            end["after_run_finished_on_a_s"] = round(end["at"] - done_on_a[end["run"]], 3)
    every_event = [
        on_b[seq] - on_a[seq]
        for _, on_a, on_b, *_ in rows
        for seq in on_a
        if seq >= 0 and seq in on_b
    ]
    return {
        "runs": len(rows),
        "finished": check["finished"],
        "right": check["right"],
        "poll_s": POLL_S,
        "streams_reopened_on_a": sum(row[3] for row in rows),
        "streams_reopened_on_b": sum(row[4] for row in rows),
        "run_finished_b_minus_a_s": {
            "p50": round(statistics.median(finished_late), 3),
            "p90": round(percentile(finished_late, 0.9), 3),
            "max": round(max(finished_late), 3),
            "min": round(min(finished_late), 3),
        },
        "every_event_b_minus_a_s": {
            "events": len(every_event),
            "p50": round(statistics.median(every_event), 3),
            "p90": round(percentile(every_event, 0.9), 3),
        },
    }


def per_task(pg: Any, tmp: Path, tasks: int, repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["sqlite"] = journal_bench.per_task(tasks, repeats, tmp / "tasks.db")
    url = pg.database()
    try:
        out["postgres"] = journal_bench.per_task(tasks, repeats, url)
    finally:
        pg.drop(url)
    return out


def median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over repeats (runs/s only when every run of every repeat finished)."""
    ok = all(r["all_finished"] for r in rows)
    keys = ("total_s", "client_wall_p50_s", "client_wall_p90_s", "journal_wall_p50_s",
            "journal_wall_p90_s", "startup_s")  # fmt: skip
    return {
        "replicas": rows[0]["replicas"],
        "max_running_each": rows[0]["max_running_each"],
        "repeats": len(rows),
        "all_finished": ok,
        "finished": sum(r["finished"] for r in rows),
        "right": sum(r["right"] for r in rows),
        "runs": sum(r["runs"] for r in rows),
        "streams_reopened": sum(r["streams_reopened"] for r in rows),
        "runs_per_s": round(statistics.median(r["runs_per_s"] for r in rows), 3) if ok else None,
        **{k: round(statistics.median(r[k] for r in rows), 3) for k in keys},
    }


def table(result: dict[str, Any]) -> str:
    med = result["throughput"]
    base = med["sqlite-1"]["runs_per_s"]
    lines = [
        "| configuration | replicas × --max-running | runs finished (right) | runs/s | × sqlite-1 "
        "| client wall p50 / p90 s | journal wall p50 / p90 s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in med.items():
        rps = row["runs_per_s"]
        ratio = f"{rps / base:.2f}" if rps and base else "–"
        lines.append(
            f"| {name} | {row['replicas']} × {row['max_running_each']} | "
            f"{row['finished']}/{row['runs']} ({row['right']}) | "
            f"{rps if rps is not None else 'not all finished'} | {ratio} | "
            f"{row['client_wall_p50_s']:.2f} / {row['client_wall_p90_s']:.2f} | "
            f"{row['journal_wall_p50_s']:.2f} / {row['journal_wall_p90_s']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def report(result: dict[str, Any]) -> str:
    """The results as markdown: the table, the delivery delay, the cost per task, the setting."""
    s, d, tasks = result["settings"], result["delivery"], result["journal_per_task"]
    late, every = d["run_finished_b_minus_a_s"], d["every_event_b_minus_a_s"]
    sq, pg = tasks["sqlite"], tasks["postgres"]
    machine = ", ".join(f"{k} {v}" for k, v in result["machine"].items() if v)
    reopened = sum(row["streams_reopened"] for row in result["throughput"].values())
    ends = result["streams_ended_early"]
    early = (
        " (every early end in the whole run, after the event: "
        + ", ".join(f"{e['after_kind']} #{e['after_seq']}" for e in ends)
        + ")"
        if ends
        else ""
    )
    return (
        "# Replicas: SQLite and PostgreSQL, one replica and three (issue 32)\n\n"
        f"`{result['command']}` at commit {result['commit']}"
        + (
            f" (planweave from {result['planweave_from']})"
            if result["planweave_from"] != str(ROOT / "src")
            else ""
        )
        + (
            f" (with others' uncommitted changes in {len(result['uncommitted_in_src'])} files "
            "of src/ in the working tree)"
            if result["uncommitted_in_src"]
            else ""
        )
        + f"; {machine}.  "
        f"Took {result['took_s']:.0f} s.  {result['note']}\n\n"
        f"## Throughput: {s['runs']} questions posted at once, median of {s['repeats']} repeats\n\n"
        "Replicas are `planweave serve` processes (`--no-cache --no-grammar --take-over "
        f"{s['take_over']}`, `--max-running` as in the table, tools `{s['profile']}` latency "
        f"profile), the oracle LLM in the benchmark process (ttft {s['ttft']} s, {s['tps']} "
        f"tokens/s, prefill {s['prefill']:.0f} tokens/s); posted round-robin, each run followed "
        "on its replica to `run_finished`.  Runs/s: runs over first post to last "
        "`run_finished`; client wall: post to `run_finished`; journal wall: the run's `wall_s`. "
        "Every run checked in the journal: finished, and its answer right (counts over all "
        "repeats).\n\n"
        + table(result)
        + f"\nFollower streams that ended before `run_finished` and were reopened "
        f"(Last-Event-ID): {reopened}.\n\n"
        "## Event delivery: a follower on the run's replica (A) against one on another (B)\n\n"
        f"{d['runs']} runs on three PostgreSQL replicas ({d['finished']} finished, "
        f"{d['right']} right), {s['delay_at_once']} at a time, each followed on A and on B at "
        f"once.  B reads the journal every {d['poll_s']} s (`server/live.py` POLL_S); A wakes its "
        "followers as each event is recorded.\n\n"
        "| | p50 s | p90 s | min s | max s |\n|---|---|---|---|---|\n"
        f"| `run_finished` reaches B after A by | {late['p50']:.3f} | {late['p90']:.3f} | "
        f"{late['min']:.3f} | {late['max']:.3f} |\n"
        f"| every event ({every['events']}), B after A by | {every['p50']:.3f} | "
        f"{every['p90']:.3f} | | |\n\n"
        f"Streams that ended before `run_finished` and were reopened with Last-Event-ID: "
        f"{d['streams_reopened_on_a']} on A, {d['streams_reopened_on_b']} on B"
        f"{early}.\n\n"
        f"## Journal cost per task ({sq['tasks']} no-op tasks, median of {s['task_repeats']}, "
        "`benchmarks.journal.per_task`)\n\n"
        "| journal | µs per task without | with | journal's cost µs per task |\n"
        "|---|---|---|---|\n"
        f"| SQLite file | {sq['us_per_task_without']:.0f} | {sq['us_per_task_with']:.0f} | "
        f"{sq['journal_us_per_task']:.0f} |\n"
        f"| PostgreSQL (Unix socket, fsync off) | {pg['us_per_task_without']:.0f} | "
        f"{pg['us_per_task_with']:.0f} | {pg['journal_us_per_task']:.0f} |\n"
    )


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=90, help="questions posted at once")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-running", type=int, default=16, help="each replica's")
    parser.add_argument("--take-over", type=float, default=5.0, help="each replica's")
    parser.add_argument("--delay-runs", type=int, default=30)
    parser.add_argument("--delay-at-once", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=300, help="no-op tasks, journal cost")
    parser.add_argument("--task-repeats", type=int, default=3)
    parser.add_argument("--profile", default="web", help="the tools' latency profile")
    parser.add_argument("--ttft", type=float, default=0.3)
    parser.add_argument("--tps", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--quick", action="store_true", help="a smoke run: tiny and fast")
    parser.add_argument("--note", default="", help="what else ran on the machine")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/replicas"))
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.repeats, args.delay_runs, args.delay_at_once = 6, 1, 3, 3
        args.tasks, args.task_repeats, args.profile, args.ttft, args.tps = 20, 1, "zero", 0, 2000
    began = time.monotonic()
    pool = [q for q in generate((args.runs + args.delay_runs) * 2, args.seed) if q.kind != "map"]
    questions, delay_questions = pool[: args.runs], pool[args.runs : args.runs + args.delay_runs]
    prefill = 0.0 if args.quick else PREFILL["hosted"]
    oracle = Oracle(questions + delay_questions, ttft=args.ttft, tps=args.tps, prefill=prefill)
    per_repeat: dict[str, list[dict[str, Any]]] = {name: [] for name in CONFIGS}
    with (
        tempfile.TemporaryDirectory() as tmp,
        postgres() as pg,
        oracle.server() as llm_server,
    ):
        for repeat in range(args.repeats):
            for name, (kind, count, slots) in CONFIGS.items():
                row = throughput(
                    kind, count, slots * args.max_running, questions, llm_server.base_url, pg,
                    Path(tmp), args,
                )  # fmt: skip
                per_repeat[name].append(row)
                print(f"repeat {repeat + 1} {name}: {json.dumps(row)}", flush=True)
        delays = delivery(delay_questions, llm_server.base_url, pg, args)
        print(f"delivery: {json.dumps(delays)}", flush=True)
        tasks = per_task(pg, Path(tmp), args.tasks, args.task_repeats)
        print(f"per task: {json.dumps(tasks)}", flush=True)
    result: dict[str, Any] = {
        "machine": machine_info() | {"platform": platform.platform()},
        "commit": _commit(),
        "planweave_from": str(PLANWEAVE_SRC),
        "uncommitted_in_src": _git("status", "--porcelain", "--", "src").splitlines()
        if PLANWEAVE_SRC == ROOT / "src"
        else [],
        "command": f"PYTHONPATH={os.environ.get('PYTHONPATH', '')} python -m benchmarks.replicas "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "note": args.note,
        "settings": {k: getattr(args, k) for k in SETTINGS} | {"prefill": prefill},
        "throughput": {name: median_row(rows) for name, rows in per_repeat.items()},
        "per_repeat": per_repeat,
        "delivery": delays,
        "journal_per_task": tasks,
        "streams_ended_early": EARLY_ENDS,
        "server_errors": SERVER_ERRORS,
        "took_s": round(time.monotonic() - began, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    text = report(result)
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return result


def _commit() -> str:
    return _git("rev-parse", "--short", "HEAD").strip()


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT).stdout
    except OSError:
        return ""


if __name__ == "__main__":
    main()
