"""The runbook benchmark (issue 33): ten runbooks over simulated operations tools, each run
three ways, side by side:

- **react**: ReAct with the runbook's text (parameters filled in) as the question: think, call
  one tool, read the result, repeat;
- **plan each time**: planweave's compiled mode planning from the runbook's text on every run;
- **named plan**: the runbook compiled once into a named plan (`Runtime.compile_runbook`; its
  time and LLM calls reported apart), then run per parameter set with `Runtime.run_plan`, no
  planner call.

    PYTHONPATH=src:. python -m benchmarks.runbook_bench [--model oracle|embedded] [--quick]

The report's parts and the report (`benchmarks/results/runbooks.md` and `.json`):

    ... runbook_bench --repeats 3 --out benchmarks/results/runbooks_oracle
    ... runbook_bench --model embedded --compile-check \
        --out benchmarks/results/runbooks_compile_embedded
    ... runbook_bench --model embedded --cases 1 --out benchmarks/results/runbooks_embedded
    ... runbook_bench --report

Each run records wall time, LLM calls, prompt and completion tokens, and correctness: the side
effects the run took (`tools.WORLD.actions`) are exactly the expected ones, and the answer says
the expected outcome (`Case.answer_has`).

`--model oracle` (the default) is a scripted LLM in-process that answers every request right:
the gold plan of the runbook, the gold ReAct step for the observations so far, the decision the
log line calls for, and the expected outcome as the answer; each reply waits a first-token time
that grows with the prompt (`--ttft`, `--prefill`) and streams at `--tps`, as `benchmarks.oracle`
does.  It measures orchestration (time and LLM calls) apart from model quality, identically for
the three ways.  `--model embedded` uses the default embedded model (slow on two cores: run it
with `--cases 1`).  `--compile-check --model embedded` runs only the "compiled by the embedded model
runs correctly" measurement: each runbook compiled by the embedded model once, its named plan run
once (first parameter set) with the same model.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from planweave import RunFailed, Runtime
from planweave.builtin import DECIDE
from planweave.events import TaskStarted
from planweave.llm.base import LLM, LLMRequest, Message, Purpose, estimate_tokens
from planweave.llm.scripted import Reply, Script, ScriptedLLM
from planweave.records import RunResult
from planweave.tools import ToolRegistry

from .overhead import machine_info
from .runbooks import RUNBOOKS, Case, Runbook
from .runbooks.tools import WORLD, tools_named

WAYS = ("react", "plan each time", "named plan")
COMPILE_MAX_TOKENS = 1024  # as the planner's own requests
PREFILL_HOSTED = 4_500.0  # prompt tokens/s, as benchmarks.oracle's "hosted"


def question(rb: Runbook, case: Case) -> str:
    """What ReAct and planning each time are asked: the runbook, parameters filled in."""
    params = ", ".join(f"{k}={v}" for k, v in case.params.items())
    return f"Follow this runbook (parameters: {params}).\n\n{rb.filled(case.params)}"


def registry(rb: Runbook) -> ToolRegistry:
    """The runbook's own tools (and `decide` where its plan decides)."""
    tools = ToolRegistry(tools_named(list(rb.tools)))
    return tools + DECIDE if rb.decide else tools


def render_call(tool: str, arguments: dict[str, Any]) -> str:
    args = ", ".join(f"{k}={json.dumps(v)}" for k, v in arguments.items())
    return f"{tool}({args})"


# --- the oracle -------------------------------------------------------------------------------


@dataclass
class Gold:
    """What the oracle knows of one case: its runbook, the plan, and the ReAct steps (the
    calls the gold plan makes for these parameters, in order, decisions left to the model)."""

    runbook: Runbook
    case: Case
    plan: str
    react_calls: list[str]


class RunbookOracle:
    """A scripted LLM that answers every runbook request right (see the module's docstring)."""

    def __init__(self, golds: list[Gold], *, ttft: float, tps: float, prefill: float) -> None:
        self.golds = golds
        self.ttft, self.tps, self.prefill = ttft, tps, prefill
        self.templates = {g.runbook.text.strip(): g.runbook for g in golds}

    def llm(self) -> ScriptedLLM:
        return ScriptedLLM(Script.routed(self.respond), model="runbook-oracle")

    def timed(self, text: str, messages: list[Message]) -> Reply:
        prompt = sum(4 + estimate_tokens(m.content) for m in messages)
        wait = self.ttft + (prompt / self.prefill if self.prefill > 0 else 0.0)
        return Reply(text, chunk_size=4, delay=1.0 / self.tps, ttft=wait)

    def gold(self, messages: list[Message]) -> Gold | None:
        """The case asked: its runbook filled in (ReAct, planning each time), or a named
        plan's run (`Disk full on <host> (plan disk_full v1; host="db-3")`)."""
        text = "\n".join(m.content for m in messages)
        found = [g for g in self.golds if question(g.runbook, g.case) in text]
        if found:
            return found[0]
        for g in self.golds:
            given = "; ".join([", ".join(f"{k}={json.dumps(v)}" for k, v in g.case.params.items())])
            if re.search(rf"\(plan {g.runbook.name} v\d+; {re.escape(given)}\)", text):
                return g
        return None

    def respond(self, messages: list[Message], purpose: Purpose) -> Reply:
        return self.timed(self.answer(messages, purpose), messages)

    def answer(self, messages: list[Message], purpose: Purpose) -> str:
        last = messages[-1].content
        if purpose == "tool":  # decide: the log line says which
            about = last.split("About:", 1)[-1]
            return "timeout" if "timed out" in about else "crash"
        gold = self.gold(messages)
        if gold is None:
            text = "\n".join(m.content for m in messages)
            if purpose == "planner":  # compiling a runbook (its text, <param> placeholders)
                for template, rb in self.templates.items():
                    if template in text:
                        return named_plan_text(rb.gold)
            raise LookupError("the runbook oracle does not know this request")
        if purpose in ("planner", "repair"):
            return gold.plan
        if purpose == "react":
            done = sum(m.role == "user" and m.content.startswith("Observation:") for m in messages)
            if done < len(gold.react_calls):
                return f"Thought: next step of the runbook.\nAction: {gold.react_calls[done]}"
            return f"Thought: the runbook is done.\nAction: Finish({gold.case.outcome})"
        return gold.case.outcome  # the joiner: the outcome, bare


def named_plan_text(gold: str) -> str:
    """A gold plan as a named plan writes it: `<host>` as a whole value is `{host}`, inside a
    string `{host}` too."""
    text = re.sub(r'"<([a-z_]+)>"', r"{\1}", gold.strip())
    return re.sub(r"<([a-z_]+)>", r"{\1}", text) + "\n<END_OF_PLAN>"


def gold_of(rb: Runbook, case: Case) -> Gold:
    """Run the gold plan once with no latency to learn the calls it makes for this case (the
    ReAct oracle's steps), through planweave's own branches."""
    plan = rb.gold_plan(case.params)
    script = Script.routed(
        lambda m, p: (
            plan
            if p == "planner"
            else ("timeout" if "timed out" in m[-1].content else "crash")
            if p == "tool"
            else case.outcome
        )
    )
    scale, WORLD.scale = WORLD.scale, 0.0
    WORLD.reset()
    try:
        result = Runtime(registry(rb), ScriptedLLM(script)).run(question(rb, case))
    finally:
        WORLD.scale = scale
    starts = sorted(
        (e for e in result.events if isinstance(e, TaskStarted) and e.attempt == 1),
        key=lambda e: e.task_id,
    )
    calls = [render_call(e.tool, e.arguments) for e in starts if e.tool != "decide"]
    return Gold(rb, case, plan, calls)


# --- the three ways ---------------------------------------------------------------------------


def outcome(rb: Runbook, case: Case, way: str, result: RunResult, wall: float) -> dict[str, Any]:
    actions = sorted(WORLD.actions)
    answer = result.answer or ""
    folded = answer.casefold()
    said = all(any(w.casefold() in folded for w in word.split("|")) for word in case.answer_has)
    return {
        "runbook": rb.name,
        "side": case.side,
        "params": case.params,
        "way": way,
        "status": result.status,
        "wall_s": round(wall, 3),
        "llm_calls": result.llm.calls,
        "prompt_tokens": result.llm.prompt_tokens,
        "completion_tokens": result.llm.completion_tokens,
        "actions": actions,
        "expected_actions": list(case.actions),
        "actions_ok": actions == list(case.actions),
        "answer": answer,
        "answer_ok": said,
        "correct": actions == list(case.actions) and said,
    }


def timed_run(call: Callable[[], RunResult]) -> tuple[RunResult, float]:
    WORLD.reset()
    start = time.perf_counter()
    try:
        result = call()
    except RunFailed as failed:
        result = failed.result
    return result, time.perf_counter() - start


def run_named(runtime: Runtime, name: str, params: dict[str, str]) -> RunResult:
    """`runtime.run_plan(name, **params)`, through `arun_plan(params=)` (the runtime's LLM
    closed after it)."""

    async def once() -> RunResult:
        try:
            return await runtime.arun_plan(name, params=params)
        finally:
            await runtime.llm.aclose()

    return anyio.run(once)


def compile_named(runtime: Runtime, rb: Runbook, by_step: bool | None = None) -> dict[str, Any]:
    """Compile the runbook into a named plan once (`by_step`: as `compile_runbook` takes it):
    its time and LLM calls."""
    before = _usage(runtime)
    start = time.perf_counter()
    error = None
    try:
        runtime.compile_runbook(rb.text, name=rb.name, by_step=by_step)
    except Exception as exc:  # a plan the model got wrong: reported, the runs then fail
        error = f"{type(exc).__name__}: {exc}"
    wall = time.perf_counter() - start
    after = _usage(runtime)
    reply = runtime.llm.last_text if isinstance(runtime.llm, Counting) else None
    return {
        "reply": reply,
        "runbook": rb.name,
        "compile_s": round(wall, 3),
        "llm_calls": after[0] - before[0],
        "prompt_tokens": after[1] - before[1],
        "completion_tokens": after[2] - before[2],
        "error": error,
    }


def _usage(runtime: Runtime) -> tuple[int, int, int]:
    """The LLM calls and tokens a counting wrapper saw (see `Counting`)."""
    llm = runtime.llm
    if isinstance(llm, Counting):
        return llm.calls, llm.prompt_tokens, llm.completion_tokens
    return 0, 0, 0


class Counting(LLM):
    """Wraps an LLM to count the calls and tokens of everything it serves, compile included
    (a `RunResult` counts a run's own; compiling returns no run)."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.model = getattr(inner, "model", "llm")
        self.calls = self.prompt_tokens = self.completion_tokens = 0
        self.capped = 0  # requests given COMPILE_MAX_TOKENS
        self.last_text = ""  # the last reply's text (a compile's plan, as the model wrote it)
        # What settings read of a backend (its prompt style, whether it is embedded, ...).
        for name in ("provider", "endpoint", "prompt_style", "embedded", "tool_calling"):
            setattr(self, name, getattr(inner, name))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def warm(self) -> None:
        await self.inner.warm()

    async def stream(self, request: LLMRequest) -> Any:
        self.calls += 1
        self.last_text = ""
        if request.max_tokens is None:
            # compile_runbook's request sets no bound (the planner's is 1024): a small model
            # that runs on would decode to the end of its context, minutes on two cores.
            request = dataclasses.replace(request, max_tokens=COMPILE_MAX_TOKENS)
            self.capped += 1
        async for delta in self.inner.stream(request):
            self.last_text += delta.text
            if delta.usage is not None:
                self.prompt_tokens += delta.usage.prompt_tokens
                self.completion_tokens += delta.usage.completion_tokens
            yield delta


def run_way(
    rb: Runbook, case: Case, way: str, tools: ToolRegistry, llm: LLM, named: Runtime | None
) -> dict[str, Any]:
    """One run of `case` the `way` given, timed, with its outcome."""
    if way == "named plan":
        assert named is not None
        result, wall = timed_run(lambda: run_named(named, rb.name, case.params))
    else:
        runtime = Runtime(tools, llm, mode="react" if way == "react" else "compiled")
        result, wall = timed_run(lambda: runtime.run(question(rb, case)))
    return outcome(rb, case, way, result, wall)


def merged(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Repeats of one run as one row: the median time, right only when every repeat was."""
    row = dict(runs[0])
    row["walls"] = [r["wall_s"] for r in runs]
    row["wall_s"] = round(statistics.median(row["walls"]), 3)
    row["correct"] = all(r["correct"] for r in runs)
    return row


def bench_runbook(
    rb: Runbook,
    cases: list[Case],
    llm: LLM,
    ways: tuple[str, ...],
    journal: Path,
    repeats: int = 1,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    tools = registry(rb)
    rows: list[dict[str, Any]] = []
    compiled: dict[str, Any] | None = None
    named: Runtime | None = None
    if "named plan" in ways:
        counting = Counting(llm)
        named = Runtime(tools, counting, journal=journal)
        compiled = compile_named(named, rb)
        compiled["plan"] = None if compiled["error"] else named.named_plan(rb.name).plan
    for case in cases:
        runs: dict[str, list[dict[str, Any]]] = {way: [] for way in ways}
        for _ in range(repeats):  # the ways interleaved, so drift hits each alike
            for way in ways:
                if way == "named plan" and compiled is not None and compiled["error"]:
                    runs[way].append(failed_row(rb, case, compiled["error"]))
                else:
                    runs[way].append(run_way(rb, case, way, tools, llm, named))
        rows += [merged(runs[way]) for way in ways]
        for row in rows[-len(ways) :]:
            print(
                f"{rb.name:16} {case.side:22} {row['way']:15} {row['wall_s']:6.2f}s "
                f"{row['llm_calls']} calls {'ok' if row['correct'] else 'WRONG'}"
                + ("" if row["correct"] else f" {row['actions']} {row['answer'][:80]!r}"),
                flush=True,
            )
    return rows, compiled


# --- the table --------------------------------------------------------------------------------


def _pct(new: float, old: float) -> str:
    return f"{(new - old) / old:+.0%}" if old else "n/a"


def summarize(rows: list[dict[str, Any]], compiles: list[dict[str, Any]]) -> str:
    ways = [w for w in WAYS if any(r["way"] == w for r in rows)]
    out = [
        "| way | runs | correct | side effects right | median time s | total time s | LLM calls | "
        "prompt tokens | completion tokens |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    total: dict[str, dict[str, float]] = {}
    for way in ways:
        group = [r for r in rows if r["way"] == way]
        t = {
            "median": statistics.median(r["wall_s"] for r in group),
            "time": sum(r["wall_s"] for r in group),
            "calls": sum(r["llm_calls"] for r in group),
            "prompt": sum(r["prompt_tokens"] for r in group),
            "completion": sum(r["completion_tokens"] for r in group),
        }
        total[way] = t
        out.append(
            f"| {way} | {len(group)} | {sum(r['correct'] for r in group)}/{len(group)} | "
            f"{sum(r['actions_ok'] for r in group)}/{len(group)} | {t['median']:.2f} | "
            f"{t['time']:.1f} | {t['calls']:.0f} | {t['prompt']:.0f} | {t['completion']:.0f} |"
        )
    if compiles:
        out.append(
            f"| (compiling the named plans, once) | {len(compiles)} | "
            f"{sum(c['error'] is None for c in compiles)}/{len(compiles)} compiled | | "
            f"{statistics.median(c['compile_s'] for c in compiles):.2f} | "
            f"{sum(c['compile_s'] for c in compiles):.1f} | "
            f"{sum(c['llm_calls'] for c in compiles)} | "
            f"{sum(c['prompt_tokens'] for c in compiles)} | "
            f"{sum(c['completion_tokens'] for c in compiles)} |"
        )
    ran = [r for r in rows if r["way"] == "named plan" and r["status"] != "not compiled"]
    if "named plan" in total and not ran:
        out += ["", "No named plan compiled, so none ran: nothing to compare."]
    elif "named plan" in total:
        n = total["named plan"]
        out += ["", "The named plan against the other ways (total time; LLM calls; per-run "
                "pairs' median time change):", ""]  # fmt: skip
        for other in ("react", "plan each time"):
            if other not in total:
                continue
            o = total[other]
            pairs = _paired(rows, "named plan", other)
            out.append(
                f"- vs {other}: time {_pct(n['time'], o['time'])}, LLM calls "
                f"{_pct(n['calls'], o['calls'])} ({n['calls']:.0f} against {o['calls']:.0f}), "
                f"tokens {_pct(n['prompt'] + n['completion'], o['prompt'] + o['completion'])}; "
                f"per run, median time change {statistics.median(pairs):+.0%}, "
                f"from {min(pairs):+.0%} to {max(pairs):+.0%}"
            )
        if compiles:
            c_time = sum(c["compile_s"] for c in compiles)
            c_calls = sum(c["llm_calls"] for c in compiles)
            o = total.get("plan each time")
            if o:
                out.append(
                    f"- compile included (once per runbook): time "
                    f"{_pct(n['time'] + c_time, o['time'])}, LLM calls "
                    f"{_pct(n['calls'] + c_calls, o['calls'])} against planning each time"
                )
    out += ["", "Per runbook and branch side (time s / LLM calls / correct):", ""]
    out.append("| runbook | side | " + " | ".join(ways) + " |")
    out.append("|---|---|" + "---|" * len(ways))
    keys = list(dict.fromkeys((r["runbook"], r["side"]) for r in rows))
    for name, side in keys:
        cells = []
        for way in ways:
            group = [r for r in rows if (r["runbook"], r["side"], r["way"]) == (name, side, way)]
            if not group:
                cells.append("")
                continue
            r = group[0]
            cells.append(
                f"{r['wall_s']:.2f} / {r['llm_calls']} / {'yes' if r['correct'] else 'NO'}"
            )
        out.append(f"| {name} | {side} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _paired(rows: list[dict[str, Any]], a: str, b: str) -> list[float]:
    index = {(r["runbook"], r["side"], r["way"]): r["wall_s"] for r in rows}
    return [
        index[(n, s, a)] / index[(n, s, b)] - 1
        for (n, s, w) in index
        if w == b and (n, s, a) in index and index[(n, s, b)] > 0
    ]


def others_running() -> list[str]:
    """The other processes using a CPU when the run starts (a benchmark shares two cores)."""
    try:
        out = subprocess.run(
            ["ps", "-eo", "pid,pcpu,args", "--sort=-pcpu"], capture_output=True, text=True
        ).stdout
    except OSError:
        return []
    mine = {str(os.getpid()), str(os.getppid())}
    busy = []
    for line in out.splitlines()[1:]:
        pid, cpu, cmd = [*line.split(None, 2), "", ""][:3]
        if pid not in mine and float(cpu or 0) >= 10:
            busy.append(f"{cpu}% {cmd[:160]}")
    return busy


def commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# --- main -------------------------------------------------------------------------------------


def make_llm(args: argparse.Namespace, golds: list[Gold]) -> LLM:
    if args.model == "oracle":
        oracle = RunbookOracle(golds, ttft=args.ttft, tps=args.tps, prefill=args.prefill)
        return oracle.llm()
    from planweave.llm.local import LocalLLM

    return LocalLLM()


def selected(args: argparse.Namespace) -> list[Runbook]:
    """The runbooks of `--part` (tuned, heldout or all), then those `--runbooks` names."""
    return [
        r
        for r in RUNBOOKS
        if args.part in ("all", r.part) and (not args.runbooks or r.name in args.runbooks)
    ]


def has_named_plans() -> bool:
    return hasattr(Runtime, "run_plan") and hasattr(Runtime, "compile_runbook")


def run(args: argparse.Namespace) -> dict[str, Any]:
    WORLD.scale = args.scale
    runbooks = selected(args)
    golds = [gold_of(rb, c) for rb in runbooks for c in rb.cases]
    llm = make_llm(args, golds)
    ways = tuple(w for w in WAYS if w != "named plan" or has_named_plans())
    if args.ways:
        ways = tuple(w for w in ways if w in args.ways)
    rows: list[dict[str, Any]] = []
    compiles: list[dict[str, Any]] = []
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for rb in runbooks:
            cases = list(rb.cases[: args.cases] if args.cases else rb.cases)
            db = Path(tmp) / f"{rb.name}.db"
            got, compiled = bench_runbook(rb, cases, llm, ways, db, args.repeats)
            rows += got
            if compiled is not None:
                compiles.append(compiled)
    return {
        "machine": machine_info(),
        "others_running": others_running(),
        "commit": commit(),
        "command": args.command,
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "command")},
        "ways": list(ways),
        "named_plans": has_named_plans(),
        "compiles": compiles,
        "rows": rows,
        "table": summarize(rows, compiles) + named_compile_table(rows, compiles),
    }


def compile_check(args: argparse.Namespace) -> dict[str, Any]:
    """Each runbook compiled by the model once (`compile_runbook`), then its named plan run
    for the first `--cases` parameter sets (default 1) with the same model (the joiner, and
    decide where the plan asks it)."""
    WORLD.scale = args.scale
    runbooks = selected(args)
    base = make_llm(args, [gold_of(rb, c) for rb in runbooks for c in rb.cases])
    rows: list[dict[str, Any]] = []
    compiles: list[dict[str, Any]] = []
    others = others_running()
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for rb in runbooks:
            runtime = Runtime(registry(rb), Counting(base), journal=Path(tmp) / f"{rb.name}.db")
            compiled = compile_named(runtime, rb, args.by_step)
            compiled["plan"] = None if compiled["error"] else runtime.named_plan(rb.name).plan
            compiles.append(compiled)
            print(f"{rb.name}: compiled in {compiled['compile_s']:.1f}s", compiled["error"] or "")
            print(compiled["plan"], flush=True)
            for case in rb.cases[: args.cases or 1]:
                if compiled["error"]:
                    rows.append(failed_row(rb, case, compiled["error"]))
                    continue
                row = run_way(rb, case, "named plan", runtime.tools, base, runtime)
                rows.append(row)
                print(
                    f"  {case.side}: {row['wall_s']:.1f}s {row['llm_calls']} calls "
                    f"actions {row['actions']} ({'ok' if row['actions_ok'] else 'WRONG'}), "
                    f"answer {row['answer'][:120]!r} ({'ok' if row['answer_ok'] else 'WRONG'})",
                    flush=True,
                )
    return {
        "machine": machine_info(),
        "others_running": others,
        "commit": commit(),
        "command": args.command,
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "command")},
        "compiles": compiles,
        "rows": rows,
        "table": compile_table(rows, compiles),
    }


def named_compile_table(rows: list[dict[str, Any]], compiles: list[dict[str, Any]]) -> str:
    """For a model other than the oracle: how its compiled named plans did, per runbook."""
    named = [r for r in rows if r["way"] == "named plan"]
    if not named or all(c.get("reply") is None for c in compiles):
        return ""
    return "\nThe named plans as the model compiled them:\n\n" + compile_table(named, compiles)


def failed_row(rb: Runbook, case: Case, error: str) -> dict[str, Any]:
    return {
        "runbook": rb.name, "side": case.side, "params": case.params, "way": "named plan",
        "status": "not compiled", "wall_s": 0.0, "llm_calls": 0, "prompt_tokens": 0,
        "completion_tokens": 0, "actions": [], "expected_actions": list(case.actions),
        "actions_ok": False, "answer": error, "answer_ok": False, "correct": False,
    }  # fmt: skip


def compile_table(rows: list[dict[str, Any]], compiles: list[dict[str, Any]]) -> str:
    by_name = {c["runbook"]: c for c in compiles}
    out = [
        "| runbook | side | compiled (s, tokens in/out) | run s | LLM calls | side effects | "
        "answer |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        c = by_name[r["runbook"]]
        made = "no: " + str(c["error"])[:80] if c["error"] else "yes"
        out.append(
            f"| {r['runbook']} | {r['side']} | {made} ({c['compile_s']:.1f}, "
            f"{c['prompt_tokens']}/{c['completion_tokens']}) | {r['wall_s']:.1f} | "
            f"{r['llm_calls']} | {'right' if r['actions_ok'] else 'WRONG ' + str(r['actions'])} | "
            f"{'right' if r['answer_ok'] else 'misses ' + ' '.join(_expected(r))} |"
        )
    first = {}
    for r in rows:
        first.setdefault(r["runbook"], r)
    k_actions = sum(r["actions_ok"] for r in first.values())
    k_both = sum(r["correct"] for r in first.values())
    out += [
        "",
        f"Compiled by the model once and run (first parameter set): side effects "
        f"right in {k_actions}/{len(first)}, side effects and answer right in "
        f"{k_both}/{len(first)}; {sum(c['error'] is None for c in compiles)}/{len(compiles)} "
        "compiled to a valid plan.",
    ]
    if len(rows) > len(first):  # every parameter set: each side of each branch
        every = {r["runbook"]: True for r in rows}
        for r in rows:
            every[r["runbook"]] &= bool(r["correct"])
        out.append(
            f"Every parameter set: {sum(r['correct'] for r in rows)}/{len(rows)} runs right; "
            f"{sum(every.values())}/{len(every)} runbooks right on every parameter set."
        )
    return "\n".join(out) + "\n"


def _expected(row: dict[str, Any]) -> list[str]:
    from .runbooks import BY_NAME

    case = next(c for c in BY_NAME[row["runbook"]].cases if c.side == row["side"])
    return list(case.answer_has)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model", choices=["oracle", "embedded"], default="oracle")
    p.add_argument("--quick", action="store_true", help="latencies x0.01, LLM instant-ish")
    p.add_argument("--cases", type=int, default=0, help="parameter sets per runbook (0: all)")
    p.add_argument("--runbooks", nargs="*", default=None)
    p.add_argument(
        "--by-step",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="compile one planner call per step, or (--no-by-step) one per runbook; "
        "default: compile_runbook's (by step with the embedded model)",
    )
    p.add_argument(
        "--part",
        choices=["tuned", "heldout", "fresh", "fresh2", "all"],
        default="tuned",
        help="the ten runbooks the prompts were tuned on, the five held out, the five fresh, "
        "the five of the second fresh part (fresh2), or all",
    )
    p.add_argument("--report", action="store_true", help="only: write runbooks.md from the parts")
    p.add_argument("--repeats", type=int, default=1, help="runs of each case and way (median)")
    p.add_argument(
        "--compile-check",
        action="store_true",
        help="only: each runbook compiled once by --model (embedded: the 8-of-10 check), "
        "its named plan run for the first --cases parameter sets (default 1)",
    )
    p.add_argument("--ways", nargs="*", default=None, choices=WAYS)
    p.add_argument("--scale", type=float, default=1.0, help="tool latency multiplier")
    p.add_argument("--ttft", type=float, default=0.3)
    p.add_argument("--tps", type=float, default=60.0)
    p.add_argument("--prefill", type=float, default=PREFILL_HOSTED)
    p.add_argument("--out", type=Path, default=None)
    return p


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import sys

    args = parser().parse_args(argv)
    if args.report:
        print(report())
        return {}
    args.command = "PYTHONPATH=src:. python -m benchmarks.runbook_bench " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    if args.quick:
        args.scale, args.ttft, args.tps, args.prefill = 0.01, 0.0, 5000.0, 0.0
    result = compile_check(args) if args.compile_check else run(args)
    print(result["table"])
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1, default=str))
        args.out.with_suffix(".md").write_text(render(result))
    return result


RESULTS = Path("benchmarks/results")
PARTS = {  # the combined report's parts: the file each run writes (--out), and its heading
    "oracle": ("runbooks_oracle", "Three ways on the runbook oracle"),
    "oracle_local": (
        "runbooks_oracle_local",
        "Three ways on the runbook oracle at a local model's speed (prefill 60 tokens/s)",
    ),
    "compile_embedded": (
        "runbooks_compile_embedded",
        "Compiled by the embedded model, run by the embedded model",
    ),
    "compile_embedded_in_one": (
        "runbooks_compile_embedded_in_one",
        "Compiled by the embedded model in one request (--no-by-step), run by it",
    ),
    "compile_embedded_heldout": (
        "runbooks_compile_embedded_heldout",
        "The five held-out runbooks, compiled by the embedded model, run by it",
    ),
    "compile_embedded_heldout_in_one": (
        "runbooks_compile_embedded_heldout_in_one",
        "The five held-out runbooks, compiled by the embedded model in one request, run by it",
    ),
    "embedded": ("runbooks_embedded", "Three ways on the embedded model"),
}

FAIRNESS = """\
## How it was measured, and is it fair

- **Runbooks**: ten markdown runbooks (`benchmarks/runbooks/*.md`), 4-6 numbered steps each,
  some independent (reads that may run together), some conditional (in words: "if the disk is
  over 90 %, rotate the logs"; one runbook's condition is an LLM decision, `decide`), parameters
  written `<host>`.  Each has two parameter sets (failed_job three) chosen so that each side of
  its branch is taken once: the table's "side".
- **Tools** (`benchmarks/runbooks/tools.py`): async, seeded latencies (reads 0.2-0.7 s, actions
  0.6-1.5 s), facts per target, so every case has one right outcome, written by hand in
  `benchmarks/runbooks/__init__.py`.  Each way gets the runbook's own tools (3-5, plus `decide`
  where the runbook decides).
- **Right** = the side effects taken are exactly the expected ones (sorted list equality: no
  branch not taken, no repeat) and the answer contains the outcome's words (the target's name
  and e.g. "rotat", "pag", the number that matters).
- **The oracle** is a scripted LLM that answers every request right: the gold plan (branches as
  `if` conditions), the named plan's text (`{host}`), each ReAct step (the next call the gold
  plan makes for these parameters, one a turn), the decision the log calls for, and the
  expected outcome as the answer.  Each reply waits a first-token time that grows with its
  prompt (0.3 s + prompt tokens at 4,500 tokens/s, a hosted endpoint's prefill) and streams at
  60 tokens/s, for every way alike.  So it measures orchestration (LLM round trips, what runs
  in parallel, tokens) apart from model quality.  It is fair to the three ways in accuracy (all
  right by construction, except where the runtime would lose a branch) but it flatters ReAct
  slightly: its thoughts are one short line, and it needs no `decide` call (the model reads the
  log itself), while both compiled ways pay one in incident_triage.  Planning each time starts
  tools while the plan still streams, so the named plan saves the planner call's first-token
  time and whatever of its stream the tools did not already overlap.
- **The named plan**: `Runtime.compile_runbook(text, name=)` once per runbook (one planner
  call, its time and tokens shown apart; not counted in the runs), then
  `Runtime.arun_plan(name, params=)` per parameter set: no planner call; the joiner still
  answers (a runbook's outcome in words depends on which branch ran, and a plan answer that
  quotes a branch not taken goes to the joiner), so each run is one LLM call (two with
  `decide`).
"""


def report(results: Path = RESULTS) -> str:
    """The combined report (`runbooks.md`, `runbooks.json`) from the parts' JSON files."""
    parts = {
        key: json.loads((results / f"{stem}.json").read_text())
        for key, (stem, _) in PARTS.items()
        if (results / f"{stem}.json").exists()
    }
    out = ["# Runbook benchmark (issue 33)", ""]
    for key, part in parts.items():
        if "ways" in part:  # a three-way run: its table again, as this code tables it
            rows, compiles = part["rows"], part["compiles"]
            part["table"] = summarize(rows, compiles) + named_compile_table(rows, compiles)
        elif "compiles" in part:  # a compile check: its table as this code tables it
            part["table"] = compile_table(part["rows"], part["compiles"])
        m = part["machine"]
        others = part.get("others_running") or []
        out += [
            f"## {PARTS[key][1]}",
            "",
            f"`{part['command']}` at commit {part['commit']}, started {part['started']}; "
            f"Python {m['python']}, {m['cpus']} CPUs ({m['machine']}).  Also running when it "
            f"started: {'; '.join(others) if others else 'nothing else using a CPU'}.",
            "",
            part["table"],
        ]
    notes = results / "runbooks_notes.md"
    if notes.exists():
        out.append(notes.read_text())
    out.append(FAIRNESS)
    text = "\n".join(out)
    (results / "runbooks.md").write_text(text)
    (results / "runbooks.json").write_text(json.dumps(parts, indent=1, default=str))
    return text


def render(result: dict[str, Any]) -> str:
    m = result["machine"]
    return (
        f"# Runbook benchmark\n\nCommand: `{result['command']}` at commit {result['commit']}, "
        f"started {result['started']}; machine: Python {m['python']}, {m['cpus']} CPUs "
        f"({m['machine']}).\n\n{result['table']}"
    )


if __name__ == "__main__":
    main()
