"""Kill -9 campaign: real `planweave run` processes killed with SIGKILL at random moments, then
resumed (and sometimes killed again while resuming) until they finish.

    PYTHONPATH=src:. python -m benchmarks.kill_campaign --kills 60 --seed 0

Three workloads, each on the scripted LLM server (real SSE over loopback) with tools that write
every call to a ledger file (tests/ledger_tools.py, tests/fanout_tools.py):

- `side_effect`: two lookups, an add, and `send` (a tool with side effects);
- `fanout`: a lookup and a fan-out over its four elements (`population($1[*])`), then a total;
- `cache_hit`: the fan-out question again after one finished run filled the plan cache, so the
  killed run's plan comes from the cache.

A kill counts when it landed after the run was in the journal.  After each kill the journal is
read; at the end of the trial the campaign checks:

- lost rows: a task or fan-out element recorded `done` at any kill is `done` at the end with the
  same result;
- repeated work: a call recorded `done` at a kill did not run again afterwards (its ledger count
  did not grow);
- repeated effects: `send` ran at most once (an in-flight side effect is answered `--fail`,
  as an operator who cannot tell would);
- stuck rows: no task or element is left `running` or `pending` under a finished run;
- the run ends `finished` with the scripted answer.

Writes benchmarks/results/kill_campaign.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planweave import Reply, Script, ScriptedServer
from planweave.llm.base import Message
from planweave.store import Journal

from .overhead import machine_info

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

import fanout_tools  # noqa: E402
import ledger_tools  # noqa: E402

SIDE_EFFECT_Q = "What is a plus b? Send it."
FANOUT_Q = "Population of Austria's neighbours?"


@dataclass(frozen=True)
class Workload:
    name: str
    question: str
    tools: str
    answer: str
    cache: bool  # whether runs use the plan cache (and a warm-up run fills it first)


WORKLOADS = [
    Workload(
        "side_effect",
        SIDE_EFFECT_Q,
        "ledger_tools:TOOLS",
        "The total is 5, and it was sent.",
        cache=False,
    ),
    Workload(
        "fanout",
        FANOUT_Q,
        "fanout_tools:TOOLS",
        "Austria's neighbours have 109 million people.",
        cache=False,
    ),
    Workload(
        "cache_hit",
        FANOUT_Q,
        "fanout_tools:TOOLS",
        "Austria's neighbours have 109 million people.",
        cache=True,
    ),
]


def _script() -> Script:
    """Planner and joiner replies for either question, as many as the campaign asks for."""

    def route(messages: list[Message], purpose: str) -> Reply | str:
        fan = "Austria" in messages[-1].content
        if purpose == "joiner":
            return fanout_tools.FINISH if fan else ledger_tools.FINISH
        return Reply(fanout_tools.PLAN if fan else ledger_tools.PLAN, chunk_size=6, delay=0.02)

    return Script.routed(route)


@dataclass
class Trial:
    workload: str
    kills: int = 0
    early_kills: int = 0  # landed before the run was in the journal
    resume_kills: int = 0
    problems: list[str] = field(default_factory=list)
    sends: int = 0
    status: str = ""
    phases: Counter[str] = field(default_factory=Counter)  # where each kill landed
    cache_hit: bool = False


def _ledger(path: Path) -> Counter[str]:
    return Counter(path.read_text().splitlines() if path.exists() else [])


def _key(tool: str, args: dict[str, Any] | None) -> str:
    return " ".join([tool, *(str(v) for v in (args or {}).values())])


def _done(show: dict[str, Any]) -> dict[tuple[int, int | None], tuple[str, Any]]:
    """(task, element) -> (ledger key, result) of every row recorded done."""
    done: dict[tuple[int, int | None], tuple[str, Any]] = {}
    for task in show["tasks"]:
        if task.get("items"):
            for index, item in enumerate(task["items"]):
                if item["status"] == "done":
                    key = _key(task["tool"], item.get("args"))
                    done[(task["id"], index)] = (key, item.get("result"))
        elif task["status"] == "done":
            done[(task["id"], None)] = (_key(task["tool"], task["args"]), task["result"])
    return done


def _phase(show: dict[str, Any]) -> str:
    """Where a run was when it was killed, from what the journal holds."""
    tasks = show["tasks"]
    if show["status"] in ("finished", "failed"):
        return "after the end"
    if not tasks:
        return "planning"
    if all(t["status"] == "done" for t in tasks):
        return "joining"
    return "executing"


def _stuck(show: dict[str, Any]) -> list[str]:
    stuck = []
    for task in show["tasks"]:
        rows = [(task["id"], None, task["status"])]
        rows += [(task["id"], i, it["status"]) for i, it in enumerate(task.get("items") or [])]
        stuck += [f"task {t} element {e}: {s}" for t, e, s in rows if s in ("running", "pending")]
    return stuck


class Campaign:
    def __init__(self, base_url: str, rng: random.Random, delay: str) -> None:
        self.base_url = base_url
        self.rng = rng
        self.delay = delay

    def _env(self, tmp: Path, ledger: Path) -> dict[str, str]:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("PLANWEAVE_")}
        environ["PYTHONPATH"] = os.pathsep.join([str(TESTS), environ.get("PYTHONPATH", "")])
        environ.update(
            PLANWEAVE_DB=str(tmp / "runs.db"),
            PLANWEAVE_TEST_LEDGER=str(ledger),
            PLANWEAVE_TEST_DELAY=self.delay,
        )
        return environ

    def _reach(self, work: Workload) -> list[str]:
        """What the run may reach, given again on resume (a journal is not trusted with it)."""
        return ["--tools", work.tools, "--base-url", self.base_url, "--model", "m"]

    def _run_args(self, work: Workload) -> list[str]:
        return ["run", work.question, *self._reach(work), *([] if work.cache else ["--no-cache"])]

    def _start(self, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "planweave", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    def _run_or_kill(
        self, args: list[str], env: dict[str, str], kill_after: float | None
    ) -> tuple[bool, str, str, int]:
        """Run the command; SIGKILL it after `kill_after` seconds if still running.  Returns
        (killed, stdout, stderr, returncode)."""
        proc = self._start(args, env)
        try:
            out, err = proc.communicate(timeout=kill_after if kill_after is not None else 120)
            return False, out, err, proc.returncode
        except subprocess.TimeoutExpired:
            if kill_after is None:
                proc.kill()
                proc.communicate()
                raise
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            return True, "", "", -9

    def duration(self, work: Workload) -> float:
        with tempfile.TemporaryDirectory() as tmp:
            env = self._env(Path(tmp), Path(tmp) / "ledger.txt")
            if work.cache:
                self._run_or_kill(self._run_args(work), env, None)
            t0 = time.perf_counter()
            self._run_or_kill([*self._run_args(work), "--json"], env, None)
            return time.perf_counter() - t0

    def trial(self, work: Workload, span: float) -> Trial:
        trial = Trial(work.name)
        with tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            ledger = tmp / "ledger.txt"
            env = self._env(tmp, ledger)
            if work.cache:
                warm = self._env(tmp, tmp / "warm.txt")
                self._run_or_kill(self._run_args(work), warm, None)
            journal = Journal(tmp / "runs.db")
            known = {r["id"] for r in journal.runs(1000)}
            args = [*self._run_args(work), "--json"]
            killed, _, _, _ = self._run_or_kill(args, env, self.rng.uniform(0.2, span))
            new = [r["id"] for r in journal.runs(1000) if r["id"] not in known]
            if not killed or not new:
                trial.early_kills += killed
                trial.status = "not killed" if not killed else "killed before the journal"
                return trial
            run_id = new[0]
            trial.kills += 1
            shown = journal.show(run_id)
            trial.phases[_phase(shown)] += 1
            trial.cache_hit = bool((shown.get("cache") or {}).get("hit"))
            snapshots = [(_done(shown), _ledger(ledger))]
            fail: list[str] = []
            for _ in range(20):
                if journal.show(run_id)["status"] in ("finished", "failed"):
                    break  # the kill landed after the run's end was recorded
                resume = ["runs", "resume", run_id, *self._reach(work), "--json", *fail]
                kill_after = self.rng.uniform(0.2, span) if self.rng.random() < 0.3 else None
                killed, out, err, code = self._run_or_kill(resume, env, kill_after)
                if killed:
                    trial.kills += 1
                    trial.resume_kills += 1
                    shown = journal.show(run_id)
                    trial.phases["resuming, " + _phase(shown)] += 1
                    snapshots.append((_done(shown), _ledger(ledger)))
                    continue
                if code == 3:  # paused: a side effect was in flight
                    paused = json.loads(out)["error"]["tasks"]
                    fail = [a for t in paused for a in ("--fail", str(t["id"]))]
                    continue
                if code != 0:
                    trial.problems.append(f"resume exited {code}: {err.strip()[-300:]}")
                break
            final = journal.show(run_id)
            trial.status = final["status"]
            end_done, end_ledger = _done(final), _ledger(ledger)
            trial.sends = end_ledger["send total 5"]
            if final["status"] != "finished":
                trial.problems.append(f"ended {final['status']}: {final.get('error')}")
            elif final["answer"] != work.answer:
                trial.problems.append(f"answer {final['answer']!r}")
            if trial.sends > 1:
                trial.problems.append(f"send ran {trial.sends} times")
            for done, counts in snapshots:
                for row, (key, result) in done.items():
                    if row not in end_done or end_done[row][1] != result:
                        trial.problems.append(f"lost row {row} ({key})")
                    if end_ledger[key] > counts[key]:
                        trial.problems.append(f"{key} ran again after it was recorded")
            if final["status"] == "finished":
                trial.problems += _stuck(final)
        return trial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=60, help="counted kills to reach")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--delay", default="0.5", help="PLANWEAVE_TEST_DELAY for the tools")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/kill_campaign"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    trials: list[Trial] = []
    with ScriptedServer(_script()) as server:
        campaign = Campaign(server.base_url, rng, args.delay)
        spans = {w.name: campaign.duration(w) for w in WORKLOADS}
        print("unkilled durations:", {k: round(v, 2) for k, v in spans.items()}, flush=True)
        while sum(t.kills for t in trials) < args.kills:
            work = WORKLOADS[len(trials) % len(WORKLOADS)]
            trial = campaign.trial(work, spans[work.name])
            trials.append(trial)
            print(
                f"{trial.workload:12} kills {trial.kills} ({trial.resume_kills} while resuming) "
                f"{trial.status:10} problems {trial.problems}",
                flush=True,
            )
    by_workload: dict[str, dict[str, int]] = {}
    for trial in trials:
        row = by_workload.setdefault(
            trial.workload,
            {"trials": 0, "kills": 0, "resume_kills": 0, "cache_hits": 0, "problems": 0},
        )
        row["cache_hits"] += trial.cache_hit
        row["trials"] += 1
        row["kills"] += trial.kills
        row["resume_kills"] += trial.resume_kills
        row["problems"] += len(trial.problems)
    summary = {
        "kills": sum(t.kills for t in trials),
        "early_kills": sum(t.early_kills for t in trials),
        "problems": [f"{t.workload}: {p}" for t in trials for p in t.problems],
        "phases": dict(sum((t.phases for t in trials), Counter())),
        "max_sends": max((t.sends for t in trials if t.workload == "side_effect"), default=0),
        "by_workload": by_workload,
        "unkilled_s": spans,
        "seed": args.seed,
        "machine": machine_info(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = [
        f"# Kill -9 campaign (seed {args.seed})",
        "",
        f"{summary['kills']} counted kills ({summary['early_kills']} more landed before the run "
        f"was in the journal); problems: {len(summary['problems'])}; `send` ran at most "
        f"{summary['max_sends']} time(s) per run.",
        "",
        "| workload | trials | kills | of them while resuming | killed runs planned from the cache "
        "| problems |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in by_workload.items():
        lines.append(
            f"| {name} | {row['trials']} | {row['kills']} | {row['resume_kills']} | "
            f"{row['cache_hits']} | {row['problems']} |"
        )
    lines += [
        "",
        "Where the kills landed: "
        + ", ".join(f"{phase} {n}" for phase, n in sorted(summary["phases"].items())),
    ]
    lines += ["", *(f"- {p}" for p in summary["problems"])]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
