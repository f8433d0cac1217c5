"""Orchestration benchmark on the oracle LLM: planweave compiled (streaming dispatch), compiled
without streaming dispatch, ReAct and native function calling, interleaved per question, against
the critical-path limit and the lower bound; with the peer ports of LLMCompiler (LlamaIndex's
pack and PyPI's `llmcompiler`) and the original LLMCompiler (SqueezeAILab's code, as
`llmcompiler-original`) when their virtualenvs exist (`bash benchmarks/peers/setup.sh`; the
original's source comes from `LLMCOMPILER_SRC`, see that script).

    python -m benchmarks --n 30 --profile web --ttft 0.3 --tps 60 --prefill hosted

`--prefill` is the oracle's prefill rate in prompt tokens per second, a number or a profile:
`hosted` (4,500, the default), `embedded` (60, the 1.5B model on this machine), `off` (0).

Two yardsticks per question:

- the critical-path limit, compiled mode's own: the planner's first token (after the prompt the
  compiled run sent) plus streaming the plan up to its last critical task, each task starting
  when its line has streamed and its inputs have landed, plus the joiner call (after the prompt
  the compiled run's joiner got).  Not defined for replan questions.
- the lower bound no format can beat, from one LLM call that streams every call and then the
  answer: T0 + max(C / tps, L) + (A - 1) / tps, where T0 is the first token after the shortest
  prompt that names the tools (the question and one `name(parameter)` per tool); C and A are
  the fewest call tokens and answer tokens any contestant that answered correctly streamed (its
  tokens up to where the answer starts, and from there); L is the longest chain of tool
  latencies.  The chain can start with the first token and overlap the rest of the calls (as
  streaming dispatch does), so the call tokens and the chain count as the longer of the two,
  not their sum; the answer needs the last result, so it streams after both.  Its first answer
  token comes at T0 + max(C / tps, L).

Time to the first answer token is taken on the oracle server's side, the same for every
contestant: when the chunk holding the answer's first character left the server (for a reply
that does not stream, such as native calling's SDK loop, when it would have left had it
streamed), less when the contestant was asked.

`--levers` adds compiled mode with each prompt lever alone (LEVERS): today's full prompts
(`compiled-full`), only the compact joiner (`compiled-joiner`: the answer first, no worked
exchange) and only the compact planner (`compiled-planner`: no worked examples); `compiled` has
both, the default with an endpoint.

`--answer-levers` adds compiled mode with each answer lever alone (ANSWER_LEVERS):
`compiled-before` (none: every plan ends with a bare `join()` and the joiner answers inside
`Action: Finish(...)`, a Replan comes after a thought), `compiled-plan-answers` (a plan whose
answer is its results in set words ends with it, `join("${N}")`, and the joiner is not asked),
`compiled-bare-replan` (a Replan without a thought) and `compiled-bare-answers` (the joiner's
answer as plain text, no `Action: Finish(` wrapper); `compiled-finish-wrapper` has every lever
but bare answers (the endpoint default before them), `compiled` has all.

Writes benchmarks/results/oracle.md and oracle.json (with machine info).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import openai

from planweave import OpenAICompatible, PromptStyle, Runtime, ToolRegistry

from .native import Outcome, native_run, planweave_run
from .oracle import PREFILL, Exchange, Oracle, prompt_tokens, tokens_of
from .overhead import machine_info
from .peers.client import PEERS, PeerRunner, available
from .workloads import Question, Step, bench_tools, generate, latency, mentions
from .world import PARAMETERS

CONTESTANTS = {
    "compiled": {"mode": "compiled", "streaming": True},
    "compiled-nostream": {"mode": "compiled", "streaming": False},
    # The lever alone: a joiner that replans leaves the next plan to a separate planner call.
    "compiled-separate-replan": {"mode": "compiled", "join_replan": False},
    "react": {"mode": "react", "streaming": True},
    "native": {},
    # planweave's own native mode (`--mode native`): the same function calling, through the
    # runtime (tasks, journal, recovery, events), against the benchmark's bare SDK loop.
    "planweave-native": {"mode": "native"},
}

# Compiled mode with the prompt levers one at a time: (the planner's style, the joiner's).
LEVERS: dict[str, tuple[PromptStyle, PromptStyle]] = {
    "compiled-full": ("full", "full"),
    "compiled-joiner": ("full", "compact"),
    "compiled-planner": ("compact", "full"),
}

# Compiled mode with the answer levers one at a time: (plan answers, a thought before a
# Replan, bare answers).  `compiled` has all (plan answers on, no thought, bare answers), the
# default with an endpoint; `compiled-before` has none; `compiled-finish-wrapper` all but bare
# answers.
ANSWER_LEVERS: dict[str, tuple[bool, bool, bool]] = {
    "compiled-before": (False, True, False),
    "compiled-plan-answers": (True, True, False),
    "compiled-bare-replan": (False, False, False),
    "compiled-bare-answers": (False, True, True),
    "compiled-finish-wrapper": (True, False, False),
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
    if name in LEVERS:
        planner, joiner = LEVERS[name]
        runtime = Runtime(tools, llm, grammar=False, prompt_style=joiner)
        # One lever alone: the planner's style set apart from the joiner's.
        runtime.planner.style = planner
    elif name in ANSWER_LEVERS:
        answers, thought, bare = ANSWER_LEVERS[name]
        runtime = Runtime(tools, llm, grammar=False, plan_answers=answers)
        runtime.joiner.replan_thought = thought
        runtime.joiner.bare_answers = bare
    else:
        runtime = Runtime(
            tools,
            llm,
            grammar=False,
            react_max_steps=100,
            **CONTESTANTS[name],  # type: ignore[arg-type]
        )
    return planweave_run(runtime, question)[0]


def correct(q: Question, answer: str | None) -> bool:
    if answer is None:
        return False
    if isinstance(q.gold, float):
        return mentions(q.gold, answer)
    return q.gold.lower() in answer.lower()


def step_latency(profile: str, step: Step) -> float:
    return latency(profile, step.tool, step.args[0].strip('"') if step.args else "")


def critical_path_limit(
    q: Question,
    oracle: Oracle,
    profile: str,
    prompts: tuple[int, int] = (0, 0),
    joiner_tokens: int | None = None,
    *,
    joined: bool = True,
) -> float | None:
    """First token after the planner's prompt + streaming the plan up to its last critical
    task + the longest chain of tool latencies + the joiner call (after the joiner's prompt);
    `prompts` are the planner's and the joiner's prompt tokens, `joiner_tokens` what the
    joiner streamed (None: the full-style gold reply); without `joined` (the plan gave the
    answer, after the steps it adds for it, such as a rank), no joiner call.  Not defined for
    replanning questions (two rounds)."""
    if q.kind == "replan":
        return None
    planner, joiner_prompt = prompts
    lines = q.plan_text(answers=not joined).splitlines()
    finish: dict[int, float] = {}
    for i, step in enumerate(q.plan_steps(answers=not joined), 1):
        # A task can start once its line has streamed and its inputs have landed.
        ready = oracle.seconds("\n".join(lines[:i]) + "\n", planner)
        ready = max([ready, *(finish[d] for d in q.deps(i))])
        finish[i] = ready + step_latency(profile, step)
    if not joined:
        return max(finish.values(), default=0.0)
    if joiner_tokens is None:
        joiner_tokens = tokens_of(len(oracle.joiner_text(q, [])))
    joiner = oracle.first_token_s(joiner_prompt) + oracle.stream_s(max(1, joiner_tokens))
    return max(finish.values(), default=0.0) + joiner


def shortest_prompt(q: Question) -> int:
    """Tokens of the shortest prompt that names the tools: the question and one
    `name(parameters)` per tool, as one user message."""
    tools = ", ".join(f"{name}({', '.join(params)})" for name, params in PARAMETERS.items())
    message = {"role": "user", "content": f"Tools: {tools}\nQuestion: {q.text}"}
    return prompt_tokens({"messages": [message]})


def longest_chain(q: Question, profile: str) -> float:
    """The longest chain of tool latencies through the question's dependencies."""
    finish: dict[int, float] = {}
    for i, step in enumerate(q.steps, 1):
        finish[i] = max((finish[d] for d in q.deps(i)), default=0.0) + step_latency(profile, step)
    return max(finish.values(), default=0.0)


def lower_bound(
    q: Question, oracle: Oracle, profile: str, call_tokens: int, answer_tokens: int
) -> tuple[float, float]:
    """(first answer token, whole answer) no format can beat (the module's docstring):
    T0 + max(C / tps, L), then + (A - 1) / tps."""
    first = oracle.first_token_s(shortest_prompt(q)) + max(
        call_tokens / oracle.tps, longest_chain(q, profile)
    )
    return first, first + oracle.stream_s(answer_tokens)


def llm_side(outcome: Outcome, exchanges: Sequence[Exchange]) -> dict[str, Any]:
    """What the oracle saw of one contestant's run: the first prompt, the tokens streamed for
    calls and for the answer (from the last reply that gives one), and the time to the first
    answer token.  An answer no reply gave (a plan that ended with it, filled in once its
    results are back) comes whole at the end: its first token is the run's end."""
    answered = [e for e in exchanges if e.answer_at is not None]
    final = answered[-1] if answered else None
    streamed = sum(e.tokens for e in exchanges)
    answer_tokens = final.answer_tokens if final else 0
    first_answer = None
    if final and final.first_answer is not None and outcome.began is not None:
        first_answer = final.first_answer - outcome.began
    elif final is None and outcome.answer is not None:
        first_answer = outcome.wall_s
    return {
        "purposes": [e.purpose for e in exchanges],
        "plan_answered": final is None and outcome.answer is not None,
        "first_answer_s": first_answer,
        "first_prompt_tokens": exchanges[0].prompt_tokens if exchanges else None,
        "prompt_tokens": [e.prompt_tokens for e in exchanges],
        "reply_tokens": [e.tokens for e in exchanges],
        "call_tokens": streamed - answer_tokens,
        "answer_tokens": answer_tokens,
    }


def yardsticks(
    q: Question, oracle: Oracle, profile: str, rows: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The critical-path limit and the lower bound of one question, from its contestants'
    rows (compiled's prompts; the fewest tokens a correct contestant streamed)."""
    compiled = next(r for r in rows if r["contestant"] == "compiled")
    prompts = compiled["prompt_tokens"]
    replies = compiled.get("reply_tokens") or [None]
    joined = "joiner" in compiled.get("purposes", ["joiner"])
    limit = critical_path_limit(
        q,
        oracle,
        profile,
        (prompts[0], prompts[-1]) if prompts else (0, 0),
        replies[-1],
        joined=joined,
    )
    right = [r for r in rows if r["correct"]]
    bound = bound_first = None
    if right:
        bound_first, bound = lower_bound(
            q,
            oracle,
            profile,
            min(r["call_tokens"] for r in right),
            min(r["answer_tokens"] for r in right),
        )
    return {"limit_s": limit, "bound_s": bound, "bound_first_s": bound_first}


def race(
    q: Question,
    names: Sequence[str],
    oracle: Oracle,
    profile: str,
    llm: OpenAICompatible,
    base_url: str,
    tools: ToolRegistry,
    runners: dict[str, PeerRunner] | None = None,
) -> list[dict[str, Any]]:
    """One row per contestant for question `q`, asked one after the other (the same
    conditions for each) against `oracle`'s server at `base_url` (where `llm` points), with the
    yardsticks."""
    runners = runners or {}
    mine: list[dict[str, Any]] = []
    for name in names:
        mark = len(oracle.log)
        if name in runners:
            outcome = runners[name].ask(q.text)
        else:
            outcome = run_contestant(name, q.text, llm, base_url, tools)
        row = {
            "question": q.id,
            "kind": q.kind,
            "split": q.split,
            "contestant": name,
            "wall_s": outcome.wall_s,
            "correct": correct(q, outcome.answer),
            "llm_calls": outcome.calls,
            "tokens": outcome.tokens,
        }
        mine.append(row | llm_side(outcome, oracle.log[mark:]))
    marks = yardsticks(q, oracle, profile, mine)
    return [r | marks for r in mine]


def prefill_rate(text: str) -> float:
    """`--prefill`: a profile name (PREFILL) or tokens per second."""
    if text in PREFILL:
        return PREFILL[text]
    try:
        rate = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a number of tokens/s or one of {', '.join(PREFILL)}"
        ) from None
    if not rate >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the rate must be >= 0 (0: no prefill)")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--profile", choices=["web", "zero"], default="web")
    parser.add_argument("--ttft", type=float, default=0.3)
    parser.add_argument("--tps", type=float, default=60.0)
    parser.add_argument(
        "--prefill",
        type=prefill_rate,
        default=PREFILL["hosted"],
        metavar="TOKENS_PER_S",
        help="prompt tokens per second, or hosted (4500, default), embedded (60), off (0)",
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/oracle"))
    parser.add_argument(
        "--answer-levers",
        action="store_true",
        help="also race compiled mode with each answer lever alone (compiled-before: none, "
        "compiled-plan-answers, compiled-bare-replan, compiled-bare-answers) and with all but "
        "bare answers (compiled-finish-wrapper)",
    )
    parser.add_argument(
        "--levers",
        action="store_true",
        help="also race compiled mode with each prompt lever alone (compiled-full, "
        "compiled-joiner, compiled-planner)",
    )
    args = parser.parse_args()

    questions = generate(args.n, args.seed)
    oracle = Oracle(questions, ttft=args.ttft, tps=args.tps, prefill=args.prefill)
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
        names = [
            *CONTESTANTS,
            *(LEVERS if args.levers else ()),
            *(ANSWER_LEVERS if args.answer_levers else ()),
            *runners,
        ]
        for q in questions:
            mine = race(q, names, oracle, args.profile, llm, server.base_url, tools, runners)
            rows += mine
            marks = mine[0]
            print(
                f"{q.id}: "
                + ", ".join(f"{r['contestant']} {r['wall_s']:.2f}s" for r in mine)
                + (f", limit {marks['limit_s']:.2f}s" if marks["limit_s"] else "")
                + (f", bound {marks['bound_s']:.2f}s" if marks["bound_s"] else ""),
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


def _ratio(group: Sequence[dict[str, Any]], key: str) -> float:
    """Median over questions of wall time / the yardstick `key` (nan where none is defined)."""
    ratios = [r["wall_s"] / r[key] for r in group if r.get(key)]
    return statistics.median(ratios) if ratios else float("nan")


def _median(values: Sequence[float | None]) -> float:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else float("nan")


def summarize(rows: list[dict[str, Any]]) -> str:
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["kind"], r["contestant"])].append(r)
    kinds = sorted({r["kind"] for r in rows})
    lines = [
        "| shape | compiled s | no-stream s | ReAct s | native FC s | ReAct / compiled | "
        "native / compiled | compiled / limit | lower bound s | compiled / lower bound | "
        "tokens ReAct / compiled | correct (c / r / n) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind in kinds:
        med = {c: statistics.median(r["wall_s"] for r in by[(kind, c)]) for c in CONTESTANTS}
        compiled = by[(kind, "compiled")]
        tok = statistics.median(r["tokens"] for r in by[(kind, "react")]) / max(
            1, statistics.median(r["tokens"] for r in compiled)
        )
        acc = {
            c: sum(r["correct"] for r in by[(kind, c)]) / len(by[(kind, c)]) for c in CONTESTANTS
        }
        lines.append(
            f"| {kind} | {med['compiled']:.2f} | {med['compiled-nostream']:.2f} | "
            f"{med['react']:.2f} | {med['native']:.2f} | {med['react'] / med['compiled']:.2f}x | "
            f"{med['native'] / med['compiled']:.2f}x | {_ratio(compiled, 'limit_s'):.2f}x | "
            f"{_median([r.get('bound_s') for r in compiled]):.2f} | "
            f"{_ratio(compiled, 'bound_s'):.2f}x | {tok:.1f}x | "
            f"{acc['compiled']:.0%} / {acc['react']:.0%} / {acc['native']:.0%} |"
        )
    return (
        "\n".join(lines)
        + "\n\nMedians per question shape; ratios of medians, measured side by side, except the"
        " ratios to the limit and the lower bound (medians of per-question ratios).  The limit is"
        " compiled mode's own critical path (not defined for replans); the lower bound is what no"
        " format can beat (`python -m benchmarks --help`).\n\n"
        + summarize_first_answer(rows)
        + summarize_levers(rows)
        + summarize_peers(rows)
        + summarize_original(rows)
        + summarize_splits(rows)
    )


def summarize_first_answer(rows: list[dict[str, Any]]) -> str:
    """Time to the first answer token and to the whole answer, per shape and contestant."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["kind"], r["contestant"])].append(r)
    contestants = list(dict.fromkeys(r["contestant"] for r in rows))
    head = ["shape", "lower bound", *contestants]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for kind in sorted({r["kind"] for r in rows}):
        compiled = by[(kind, "compiled")]
        cells = [
            kind,
            f"{_median([r.get('bound_first_s') for r in compiled]):.2f} / "
            f"{_median([r.get('bound_s') for r in compiled]):.2f}",
        ]
        for c in contestants:
            group = by[(kind, c)]
            cells.append(
                f"{_median([r.get('first_answer_s') for r in group]):.2f} / "
                f"{statistics.median(r['wall_s'] for r in group):.2f}"
            )
        lines.append("| " + " | ".join(cells) + " |")
    return (
        "\n".join(lines)
        + "\n\nSeconds to the first answer token / to the whole answer, medians per shape.  The"
        " first answer token is timed at the oracle server (when the chunk holding it left, or"
        " would have left for a reply that does not stream), from when the contestant was"
        " asked.\n\n"
    )


def summarize_levers(rows: list[dict[str, Any]]) -> str:
    """Compiled mode with each prompt lever alone and together, per shape: against native
    calling, ReAct and the lower bound, with its prompt tokens and first answer token."""
    ran = {r["contestant"] for r in rows}
    variants = [v for v in ("compiled-full", *LEVERS, *ANSWER_LEVERS, "compiled") if v in ran]
    variants = list(dict.fromkeys(variants))
    if len(variants) < 2:
        return ""
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["kind"], r["contestant"])].append(r)
    lines = [
        "| shape | variant | s | native / it | ReAct / it | it / lower bound | prompt tokens | "
        "first answer s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind in sorted({r["kind"] for r in rows}):
        native = statistics.median(r["wall_s"] for r in by[(kind, "native")])
        react = statistics.median(r["wall_s"] for r in by[(kind, "react")])
        for v in variants:
            group = by[(kind, v)]
            wall = statistics.median(r["wall_s"] for r in group)
            prompt = statistics.median(sum(r["prompt_tokens"]) for r in group)
            lines.append(
                f"| {kind} | {v} | {wall:.2f} | {native / wall:.2f}x | {react / wall:.2f}x | "
                f"{_ratio(group, 'bound_s'):.2f}x | {prompt:.0f} | "
                f"{_median([r.get('first_answer_s') for r in group]):.2f} |"
            )
    return (
        "\n".join(lines)
        + "\n\nThe levers alone and together.  Prompts: compiled-full is the full prompts, "
        "compiled-joiner only the compact joiner, compiled-planner only the compact planner.  "
        "Answers: compiled-before has no answer lever, compiled-plan-answers only plan "
        "answers (a plan may end with its answer, no joiner call), compiled-bare-replan only "
        "the Replan without a thought, compiled-bare-answers only the joiner's answer as plain "
        "text (no `Action: Finish(`), compiled-finish-wrapper all but bare answers.  compiled "
        "has all of them.  Prompt tokens are all of a question's requests, added up.\n\n"
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


def summarize_original(rows: list[dict[str, Any]], original: str = "llmcompiler-original") -> str:
    """planweave compiled against the original LLMCompiler, per shape: how many times faster,
    compiled against the lower bound, the first answer token and the prompts each sent."""
    if not any(r["contestant"] == original for r in rows):
        return ""
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["kind"], r["contestant"])].append(r)
    lines = [
        "| shape | compiled s | original s | original / compiled | compiled / lower bound | "
        "first answer s (compiled / original) | LLM calls | prompt tokens | correct |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kind in sorted({r["kind"] for r in rows}):
        mine, theirs = by[(kind, "compiled")], by[(kind, original)]
        wall = [statistics.median(r["wall_s"] for r in g) for g in (mine, theirs)]
        first = [_median([r.get("first_answer_s") for r in g]) for g in (mine, theirs)]
        calls = [statistics.median(r["llm_calls"] for r in g) for g in (mine, theirs)]
        prompt = [statistics.median(sum(r["prompt_tokens"]) for r in g) for g in (mine, theirs)]
        right = [sum(r["correct"] for r in g) / len(g) for g in (mine, theirs)]
        lines.append(
            f"| {kind} | {wall[0]:.2f} | {wall[1]:.2f} | {wall[1] / wall[0]:.2f}x | "
            f"{_ratio(mine, 'bound_s'):.2f}x | {first[0]:.2f} / {first[1]:.2f} | "
            f"{calls[0]:.0f} / {calls[1]:.0f} | {prompt[0]:.0f} / {prompt[1]:.0f} | "
            f"{right[0]:.0%} / {right[1]:.0%} |"
        )
    return (
        "\n".join(lines)
        + "\n\nThe original LLMCompiler (SqueezeAILab's code at a00c9d3, its ParallelQA prompts,"
        " streaming planner) against planweave compiled, side by side per question.  Original /"
        " compiled is a ratio of medians (how many times faster compiled is); compiled / lower"
        " bound the median of per-question ratios; LLM calls, prompt tokens (all of a question's"
        " requests, added up) and correct answers as compiled / original.\n\n"
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
