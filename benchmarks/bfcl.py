"""How right the planner's first plan is on the Berkeley Function Calling Leaderboard (BFCL),
scored by BFCL's own AST checker, on the embedded model.

Categories `simple_python` (older BFCL data calls it `simple`), `multiple`, `parallel` and
`parallel_multiple`: one question, the function documents it comes with, and the calls a right
answer makes.  Each question's functions become tools (`Tool.from_schema`; none ever runs), a
`Runtime` over them on the embedded model picks the planner's prompt style, grammar and limits
as `planweave run` would, and the planner writes its first plan, repairs included, with no tool
run and no joiner call.  The plan's calls (join left out, `math_factorial` named `math.factorial`
again) are what BFCL's checker judges, as BFCL's model output: `[{name: {argument: value}}]`,
the values as the plan wrote them.  A call reading another task's result keeps the reference as
written (`"$1"`): BFCL wants literal values, so such a plan usually fails, and says so.

BFCL's data and checker come from PyPI's `bfcl-eval`, installed on its own, without its
dependencies (they bring torch, CUDA and every provider's SDK; the data files and the checker
need none of them):

    python -m venv benchmarks/.bfcl-venv && \\
        benchmarks/.bfcl-venv/bin/pip install --no-deps bfcl-eval==2026.3.23

The checker runs in a child process of that virtualenv.  It imports BFCL's model registry only
to ask whether a model wrote dotted function names with underscores; importing the registry
imports every provider's SDK, so a one-entry stand-in answers for planweave: names as BFCL
spells them, which is what this benchmark hands it.

    PYTHONPATH=src .venv/bin/python benchmarks/bfcl.py --binding cyllama \\
        --per-category 15 --seed 0 --examples synthesized none \\
        --out 'benchmarks/results/bfcl_{examples}_s0.json'

`--examples`: `default` is what the planner does today for a tool set without worked examples;
`synthesized` forces the worked example `prompts.synthesized_example` builds from the tools;
`none` forces no worked example; `native` makes no plan: one turn of native function calling
(`planweave.native`, the embedded model's tool calls in its chat template's tags), the calls it
asks for scored the same way, the figure a compiled plan should at least match on the same
model.  Given several, each question is planned under each in turn,
so a loaded machine weighs on all alike; the categories take turns too, and `--out` is rewritten
after every question, so a run cut short still says something about each (`--resume` then
plans only the questions the files lack).  Seconds per question are the planner's (repairs
included), the model loaded before the first question, and count only a question's first
setting (its order alternates): the next one finds most of its prompt, the same tools and
rules, already read, which a new tool set never does.  `--gold` needs no
model: BFCL's own answers, written as plans, go through the same parser, conversion and checker
(995 of the 1,000 pass in bfcl-eval 2026.3.23; the 5 others are answers that BFCL's own
function documents refuse: an argument the function lacks, a string where the document says
array, ...).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import statistics
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from planweave import Runtime, Tool, ToolRegistry, prompts
from planweave.errors import LLMError, PlanError
from planweave.events import EventBus, LLMCallFinished, PlanInvalid
from planweave.llm.base import LLM, LLMRequest, ToolCall
from planweave.meter import MeteredLLM
from planweave.native import NATIVE_SYSTEM, Native
from planweave.parser import PlanParser
from planweave.plan import END_OF_PLAN, Ref, Task, Template
from planweave.tool_schema import schema_params

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple")
# BFCL's file names for a category, newest first: v3 and earlier called simple_python `simple`.
_FILE_NAMES = {"simple_python": ("simple_python", "simple"), "simple": ("simple", "simple_python")}
BFCL_VERSION = "2026.3.23"
BFCL_PYTHON = Path(__file__).resolve().parent / ".bfcl-venv" / "bin" / "python"
SETUP = (
    "python -m venv benchmarks/.bfcl-venv && "
    f"benchmarks/.bfcl-venv/bin/pip install --no-deps bfcl-eval=={BFCL_VERSION}"
)

# Runs in BFCL's virtualenv: says where the data is, then checks one JSON job per line.
_CHECKER = r"""
import importlib.metadata, json, os, sys, types

import bfcl_eval

registry = types.ModuleType("bfcl_eval.constants.model_config")
registry.MODEL_CONFIG_MAPPING = {"planweave": types.SimpleNamespace(underscore_to_dot=False)}
sys.modules[registry.__name__] = registry
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

try:
    from bfcl_eval.constants.enums import Language
    python = Language.PYTHON
except ImportError:
    python = "Python"
data = os.path.join(os.path.dirname(bfcl_eval.__file__), "data")
print(json.dumps({"data": data, "version": importlib.metadata.version("bfcl-eval")}), flush=True)
for line in sys.stdin:
    job = json.loads(line)
    try:
        result = ast_checker(
            job["functions"], job["output"], job["answer"], python, job["category"], "planweave"
        )
    except Exception as exc:
        result = {"valid": False, "error": [f"the checker raised {exc!r}"],
                  "error_type": "checker:raised"}
    print(json.dumps(result, default=repr), flush=True)
"""


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    category: str
    text: str
    functions: list[dict[str, Any]]
    answer: list[dict[str, Any]]


class Checker:
    """BFCL's AST checker in a child process of BFCL's own virtualenv; also finds its data."""

    def __init__(self, python: Path) -> None:
        if not python.exists():
            raise SystemExit(f"BFCL is not installed at {python}; set it up with:\n  {SETUP}")
        self._proc = subprocess.Popen(
            [str(python), "-c", _CHECKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        hello = json.loads(self._read())
        self.data = Path(hello["data"])
        self.version: str = hello["version"]

    def _read(self) -> str:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"BFCL's checker stopped (exit {self._proc.wait()})")
        return line

    def check(self, question: Question, output: list[dict[str, Any]]) -> dict[str, Any]:
        """BFCL's verdict on `output`: {valid, error, error_type}."""
        assert self._proc.stdin is not None
        job = {
            "functions": question.functions,
            "output": output,
            "answer": question.answer,
            "category": question.category,
        }
        self._proc.stdin.write(json.dumps(job) + "\n")
        self._proc.stdin.flush()
        result: dict[str, Any] = json.loads(self._read())
        return result

    def questions(self, category: str) -> list[Question]:
        """A category's questions with their possible answers, in BFCL's order."""
        for name in _FILE_NAMES.get(category, (category,)):
            found = sorted(self.data.glob(f"BFCL_v*_{name}.json"), key=_version)
            found = [p for p in found if re.fullmatch(rf"BFCL_v\d+_{name}\.json", p.name)]
            if found:
                break
        else:
            raise SystemExit(f"BFCL {self.version} has no {category!r} questions in {self.data}")
        prompts_file = found[-1]
        answers = {
            row["id"]: row["ground_truth"]
            for row in _json_lines(self.data / "possible_answer" / prompts_file.name)
        }
        out = []
        for row in _json_lines(prompts_file):
            turns = row["question"]
            if len(turns) != 1 or any(m["role"] != "user" for m in turns[0]):
                raise SystemExit(f"{row['id']}: not one user turn; this benchmark reads only those")
            text = "\n".join(m["content"] for m in turns[0])
            out.append(Question(row["id"], category, text, row["function"], answers[row["id"]]))
        return out

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait()


def _version(path: Path) -> int:
    return int(path.name.split("_")[1].lstrip("v"))


def _json_lines(path: Path) -> Iterable[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _not_called(**arguments: Any) -> Any:
    raise RuntimeError("the BFCL benchmark only plans: no tool runs")


@dataclass(frozen=True, slots=True)
class Functions:
    """A question's function documents as tools, and BFCL's names for ours."""

    registry: ToolRegistry
    names: dict[str, str]  # tool -> BFCL's function name
    params: dict[str, dict[str, str]] = field(default_factory=dict)  # tool -> {ours: BFCL's}


def functions(docs: Sequence[Mapping[str, Any]]) -> Functions:
    tools: list[Tool] = []
    names: dict[str, str] = {}
    params: dict[str, dict[str, str]] = {}
    for doc in docs:
        schema = doc.get("parameters") or {"type": "dict", "properties": {}}
        tool = Tool.from_schema(doc["name"], doc.get("description", ""), schema, _not_called)
        if tool.name in names:
            raise ValueError(f"{doc['name']!r} and {names[tool.name]!r} both read as {tool.name}")
        tools.append(tool)
        names[tool.name] = doc["name"]
        params[tool.name] = schema_params(schema)[1]
    return Functions(ToolRegistry(tools), names, params)


def bfcl_value(value: Any) -> Any:
    """An argument as BFCL's output holds it: literals as written, a reference as its text."""
    if isinstance(value, Ref | Template):
        return str(value)
    if isinstance(value, list | tuple):
        return [bfcl_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): bfcl_value(v) for k, v in value.items()}
    return value


def bfcl_output(tasks: Iterable[Task], fns: Functions) -> list[dict[str, dict[str, Any]]]:
    """The plan's calls in BFCL's model-output form, under BFCL's names; join left out."""
    out = []
    for task in tasks:
        if task.is_join:
            continue
        renamed = fns.params.get(task.tool, {})
        arguments = {renamed.get(k, k): bfcl_value(v) for k, v in task.bound.items()}
        out.append({fns.names.get(task.tool, task.tool): arguments})
    return out


@dataclass(slots=True)
class Planned:
    tasks: list[Task]
    responses: list[str]  # the planner's replies, repairs after the first
    invalid: list[str]  # why a reply was rejected, one per repair asked (or not)
    plan_error: str | None
    seconds: float
    prompt_tokens: int = 0
    completion_tokens: int = 0


async def first_plan(runtime: Runtime, question: str) -> Planned:
    """The runtime's planner on `question`, as a run would call it, up to its first plan."""
    bus = EventBus()
    llm = MeteredLLM(runtime.llm, bus, recovery=runtime.recovery, budget=runtime.settings.budget)
    parser = PlanParser(runtime.tools, plan_answers=runtime.compiled.plan_answers)
    tasks: list[Task] = []
    started = time.monotonic()
    error: str | None = None
    try:
        plan_error = await runtime.planner.stream_plan(
            llm,
            runtime.planner.messages(question),
            parser,
            tasks.append,
            bus,
            streaming=runtime.compiled.streaming,
            continue_cut=runtime.compiled.continue_cut,
        )
        error = None if plan_error is None else plan_error.message
    except LLMError as exc:
        error = f"LLM: {exc.message}"
    seconds = time.monotonic() - started
    calls = [e for e in bus.events if isinstance(e, LLMCallFinished)]
    return Planned(
        tasks=tasks,
        responses=[e.text for e in calls],
        invalid=[
            str(e.error.get("text", e.error)) for e in bus.events if isinstance(e, PlanInvalid)
        ],
        plan_error=error,
        seconds=seconds,
        prompt_tokens=sum(e.prompt_tokens for e in calls),
        completion_tokens=sum(e.completion_tokens for e in calls),
    )


def examples_for(choice: str, registry: ToolRegistry) -> str | None:
    """The planner's worked examples for `--examples`: None lets the planner choose."""
    if choice == "default":
        return None
    if choice == "none":
        return ""
    if choice == "unlisted":
        # The default examples without their opening thoughts (then none is asked for).
        shown = prompts.other_tools_examples(registry).splitlines()
        return "\n".join(line for line in shown if not line.startswith("Thought:"))
    return prompts.synthesized_example(registry)


def excluded(saved: Iterable[Path]) -> set[str]:
    """The ids of the questions saved runs (`--out` files) hold, to be left out of a sample."""
    ids: set[str] = set()
    for path in saved:
        try:
            ids.update(json.loads(path.read_text())["questions"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"--exclude {path}: not a saved run ({exc})") from None
    return ids


def digest(ids: Iterable[str]) -> str | None:
    """A short fingerprint of a set of question ids (None for none), to tell samples apart."""
    names = sorted(ids)
    if not names:
        return None
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]


def sample(questions: list[Question], n: int, seed: int) -> list[Question]:
    """`n` questions of a category, the same for the same seed; all of them for 0."""
    if n <= 0 or n >= len(questions):
        return questions
    rng = random.Random(f"{questions[0].category}:{seed}")
    return [questions[i] for i in sorted(rng.sample(range(len(questions)), n))]


async def native_turn(llm: LLM, q: Question, fns: Functions) -> Planned:
    """One turn of native function calling (`planweave.native`'s first), on the same model: the
    calls it asks for, each read into a task as native mode reads it (one it refuses is left
    out, and its error kept)."""
    bus = EventBus()
    native = Native(fns.registry)
    request = LLMRequest(
        messages=prompts.question_messages(NATIVE_SYSTEM, q.text),
        tools=[t.json_schema() for t in fns.registry.values()],
        purpose="native",
    )
    calls: list[ToolCall] = []
    started = time.monotonic()
    text, error = "", None
    try:
        text = await MeteredLLM(llm, bus).complete(request, calls=calls)
    except LLMError as exc:
        error = f"LLM: {exc.message}"
    tasks: list[Task] = []
    refused: list[str] = []
    for call in calls:
        try:
            tasks.append(native.task_of(call, len(tasks) + 1))
        except PlanError as exc:
            refused.append(f"{call.name}({call.arguments}): {exc.message}")
    finished = [e for e in bus.events if isinstance(e, LLMCallFinished)]
    written = "".join(f"\n<tool_call>{c.name} {c.arguments}</tool_call>" for c in calls)
    return Planned(
        tasks=tasks,
        responses=[text + written],
        invalid=refused,
        plan_error=error,
        seconds=time.monotonic() - started,
        prompt_tokens=sum(e.prompt_tokens for e in finished),
        completion_tokens=sum(e.completion_tokens for e in finished),
    )


async def run_question(llm: LLM, q: Question, fns: Functions, examples: str) -> Planned:
    if examples == "native":
        return await native_turn(llm, q, fns)
    runtime = Runtime(fns.registry, llm, examples=examples_for(examples, fns.registry))
    try:
        return await first_plan(runtime, q.text)
    finally:
        runtime.close()


def gold_plan(q: Question, fns: Functions) -> str:
    """BFCL's first possible answer written as a plan: `--gold` scores these, which checks
    the tools, the plan parser and the conversion without a model."""
    ours = {theirs: tool for tool, theirs in fns.names.items()}
    lines = []
    for i, call in enumerate(q.answer, 1):
        ((name, arguments),) = call.items()
        back = {theirs: mine for mine, theirs in fns.params[ours[name]].items()}
        written = [
            f"{back.get(arg, arg)}={value!r}"
            for arg, options in arguments.items()
            if (value := _first(options)) is not _NONE
        ]
        lines.append(f"{i}. {ours[name]}({', '.join(written)})")
    return "\n".join([*lines, f"{len(lines) + 1}. join()", END_OF_PLAN])


_NONE = object()


def _first(options: list[Any]) -> Any:
    """The first possible value ("" means the argument may be left out); nested dicts hold
    their own lists of possible values."""
    for option in options:
        if option == "":
            continue
        if isinstance(option, dict):
            return {k: v for k, vs in option.items() if (v := _first(vs)) is not _NONE}
        if isinstance(option, list) and option and all(isinstance(o, dict) for o in option):
            return [_first([o]) for o in option]
        return option
    return _NONE


def read_plan(text: str, registry: ToolRegistry) -> Planned:
    """A written plan read as the planner's would be, without repairs."""
    parser = PlanParser(registry)
    tasks: list[Task] = []
    error: str | None = None
    try:
        tasks += parser.feed(text)
        tasks += parser.close()
    except PlanError as exc:
        tasks += parser.drain()
        error = exc.message
    return Planned(tasks, [text], [], error, 0.0)


def row(q: Question, fns: Functions, planned: Planned, checker: Checker) -> dict[str, Any]:
    output = bfcl_output(planned.tasks, fns)
    verdict = checker.check(q, output)
    return {
        "id": q.id,
        "category": q.category,
        "question": q.text,
        "plan": planned.responses[0] if planned.responses else "",
        "repairs": planned.responses[1:],
        "invalid": planned.invalid,
        "plan_error": planned.plan_error,
        "calls": output,
        "references": sum(bool(t.deps) for t in planned.tasks if not t.is_join),
        "valid": bool(verdict.get("valid")),
        "error": verdict.get("error") or [],
        "error_type": verdict.get("error_type"),
        "seconds": round(planned.seconds, 2),
        "prompt_tokens": planned.prompt_tokens,
        "completion_tokens": planned.completion_tokens,
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    # Times count only a question's first setting: the next one finds most of its prompt (the
    # same tools and rules) already read, which a new tool set never does.
    cold = [r for r in rows if not r["warm"]] or rows
    seconds = sorted(r["seconds"] for r in cold)
    return {
        "n": len(rows),
        "valid": sum(r["valid"] for r in rows),
        "accuracy": sum(r["valid"] for r in rows) / len(rows),
        "timed": len(cold),
        "median_s": statistics.median(seconds),
        "p90_s": seconds[min(len(seconds) - 1, int(0.9 * len(seconds)))],
        "with_references": sum(r["references"] > 0 for r in rows),
        "plan_errors": sum(r["plan_error"] is not None for r in rows),
        "repaired": sum(bool(r["repairs"]) for r in rows),
        "error_types": dict(Counter(r["error_type"] for r in rows if not r["valid"])),
    }


def print_table(results: Mapping[str, Mapping[str, Any]]) -> None:
    print("\n| category | examples | n | right | accuracy | median s | p90 s | with $N |")
    print("|---|---|---|---|---|---|---|---|")
    for examples, result in results.items():
        for category, s in result["summary"].items():
            print(
                f"| {category} | {examples} | {s['n']} | {s['valid']} | {s['accuracy']:.0%} "
                f"| {s['median_s']:.1f} | {s['p90_s']:.1f} | {s['with_references']} |"
            )


def round_robin(chosen: Mapping[str, list[Question]]) -> list[Question]:
    """The categories' questions taken in turn, so a run cut short still covers each."""
    lists = list(chosen.values())
    out: list[Question] = []
    for i in range(max(map(len, lists), default=0)):
        out.extend(qs[i] for qs in lists if i < len(qs))
    return out


async def bench(
    args: argparse.Namespace,
    checker: Checker,
    save: Callable[[dict[str, dict[str, Any]]], None],
) -> dict[str, dict[str, Any]]:
    """Every chosen question under each `--examples` setting, in turn (the first setting
    alternating); `save` gets the results so far after every question."""
    from planweave.llm.llamacpp import resolve_binding
    from planweave.llm.local import LocalLLM

    llm: LocalLLM | None = None
    load_s = 0.0
    settings = ["gold"] if args.gold else list(dict.fromkeys(args.examples))
    if not args.gold:
        # Each question's tools make a system prompt no later run shares: keeping their states
        # on disk would only crowd the prefix cache out of the prompts users repeat.
        llm = LocalLLM(args.model, binding=args.binding, prefix_cache_mb=0)
        load = await anyio.to_thread.run_sync(llm.load)
        load_s = load.assemble_s + load.load_s
    n, seed = args.per_category, args.seed
    seen = excluded(args.exclude)
    chosen = {
        c: sample([q for q in checker.questions(c) if q.id not in seen], n, seed)
        for c in args.categories
    }
    config = {
        "model": "gold" if llm is None else llm.model,
        "binding": None if llm is None else resolve_binding(args.binding),
        "seed": seed,
        "per_category": n,
        "categories": list(args.categories),
        "bfcl_eval": checker.version,
        "load_s": round(load_s, 2),
        "questions": sum(map(len, chosen.values())),
        "excluded": len(seen),
        "excluded_ids": digest(seen),
    }
    rows: dict[str, list[dict[str, Any]]] = {e: [] for e in settings}
    for examples, earlier in (args.earlier or {}).items():
        # A run saved before --exclude existed left nothing out.
        saved = {"excluded": 0, "excluded_ids": None, **earlier["config"]}
        same = ("model", "seed", "per_category", "excluded", "excluded_ids")
        kept = {k: saved[k] for k in same if k in saved}
        if kept != {k: config[k] for k in kept}:
            raise SystemExit(f"--resume: the saved {examples} run was made with {kept}")
        rows[examples] = list(earlier["questions"].values())
    done = set.intersection(*({r["id"] for r in rows[e]} for e in settings))

    def results() -> dict[str, dict[str, Any]]:
        out = {}
        for examples, done in rows.items():
            categories = [c for c in chosen if any(r["category"] == c for r in done)]
            out[examples] = {
                "config": {**config, "examples": examples, "done": len(done)},
                "summary": {
                    c: summarize([r for r in done if r["category"] == c]) for c in categories
                },
                "questions": {r["id"]: r for r in done},
            }
        return out

    for i, q in enumerate(round_robin(chosen)):
        if q.id in done:
            continue
        fns = functions(q.functions)
        for turn, examples in enumerate(settings if i % 2 == 0 else settings[::-1]):
            if llm is None:
                planned = read_plan(gold_plan(q, fns), fns.registry)
            else:
                planned = await run_question(llm, q, fns, examples)
            rows[examples] = [r for r in rows[examples] if r["id"] != q.id]
            rows[examples].append(row(q, fns, planned, checker) | {"warm": turn > 0})
            last = rows[examples][-1]
            calls = "; ".join(json.dumps(c, ensure_ascii=False) for c in last["calls"])
            mark = "ok" if last["valid"] else f"WRONG {last['error_type']}"
            print(
                f"[{i + 1}/{config['questions']} {examples}] {q.id} {mark} "
                f"{last['seconds']:.1f}s {calls}",
                flush=True,
            )
        save(results())
    return results()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--categories", nargs="+", default=list(CATEGORIES))
    parser.add_argument(
        "--per-category", type=int, default=25, help="seeded sample per category; 0: all"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--examples",
        nargs="+",
        choices=["default", "unlisted", "none", "synthesized", "native"],
        default=["default"],
        help="the planner's worked examples (unlisted: the default ones without the thought "
        "that lists what a question asks for; native: no plan, one turn of native function "
        "calling on the same model); several: each question under each, in turn",
    )
    parser.add_argument(
        "--exclude",
        nargs="+",
        type=Path,
        default=[],
        help="saved runs (--out files) whose questions are left out of the sample: a split "
        "nobody has read yet",
    )
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--binding", help="llama.cpp's binding (default: env, else auto)")
    parser.add_argument("--bfcl-python", type=Path, default=BFCL_PYTHON)
    parser.add_argument(
        "--gold",
        action="store_true",
        help="no model: score BFCL's own answers written as plans (checks tools and conversion)",
    )
    parser.add_argument(
        "--out",
        help="JSON of every question's plan and verdict, rewritten after each question; with "
        "several --examples, a name with {examples} in it",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the questions --out already holds (same seed and sample) and plan the rest",
    )
    args = parser.parse_args(argv)
    args.earlier = {}
    if args.resume:
        if not args.out:
            parser.error("--resume needs --out")
        for examples in ["gold"] if args.gold else args.examples:
            saved = Path(args.out.replace("{examples}", examples))
            if saved.exists():
                args.earlier[examples] = json.loads(saved.read_text())
    if args.out and len(set(args.examples)) > 1 and "{examples}" not in args.out:
        parser.error("with several --examples, --out needs {examples} in its name")

    def save(results: dict[str, dict[str, Any]]) -> None:
        for examples, result in results.items() if args.out else ():
            out = Path(args.out.replace("{examples}", examples))
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")

    checker = Checker(args.bfcl_python)
    try:
        results = anyio.run(bench, args, checker, save)
    finally:
        checker.close()
    print_table(results)


if __name__ == "__main__":
    main()
