"""Prefill and decode speed of the embedded backend against llama-cpp-python, side by side.

The same GGUF, the same prompt (the planner's, for the README question, with its grammar) and
the same greedy decoding, in alternating fresh processes: planweave's engine on each installed
binding (cyllama's prebuilt llama.cpp, `[local]`; llama-cpp-python compiled here,
`[local-build]`) and llama-cpp-python's own `Llama` (from `--llama-cpp-python PYTHON`, else this
interpreter when it has it).  Each process reads the prompt with an empty KV cache (prefill
tokens/s) and then decodes up to `--tokens` tokens under the grammar (decode tokens/s).
`--grammar-sampler` adds planweave's engine with llama.cpp's grammar sampler in place of its
grammar guide (`llm/llamacpp/guide.py`).

    python -m benchmarks.embedded_backends --rounds 3 \\
        --out benchmarks/results/embedded_backends.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

QUESTION = (
    "Which has more people per square kilometre, the Netherlands or Belgium, and by how much?"
)

_LLAMA_CPP_PYTHON = """
import json, sys, time
import llama_cpp
spec = json.loads(sys.stdin.read())
began = time.monotonic()
llama = llama_cpp.Llama(model_path=spec["model"], n_ctx=spec["n_ctx"], n_batch=256,
                        n_threads=spec["threads"], n_threads_batch=spec["threads"], verbose=False)
load = time.monotonic() - began
prompt = llama.tokenize(spec["prompt"].encode(), add_bos=False, special=True)
grammar = llama_cpp.LlamaGrammar.from_string(spec["grammar"], verbose=False)
began = time.monotonic()
llama.eval(prompt)
prefill = time.monotonic() - began
ends = {llama.token_eos(), *llama.tokenize(b"<|im_end|>", add_bos=False, special=True)}
out = []
began = time.monotonic()
for _ in range(spec["tokens"]):
    token = llama.sample(temp=0.0, grammar=grammar)
    if token in ends:
        break
    out.append(token)
    llama.eval([token])
decode = time.monotonic() - began
text = llama.detokenize(out).decode("utf-8", "replace")
print(json.dumps({"load_s": load, "prompt_tokens": len(prompt), "prefill_s": prefill,
                  "decode_tokens": len(out), "decode_s": decode, "text": text,
                  "version": llama_cpp.__version__}))
"""


def _planweave(spec: dict[str, Any], binding: str) -> dict[str, Any]:
    from planweave.llm.llamacpp import Engine, Sampling

    began = time.monotonic()
    engine = Engine(
        spec["model"], n_ctx=spec["n_ctx"], n_batch=256, n_threads=spec["threads"], binding=binding
    )
    load = time.monotonic() - began
    prompt = engine.tokenize(spec["prompt"])
    began = time.monotonic()
    engine.evaluate(prompt[:-1])
    prefill = time.monotonic() - began
    out: list[int] = []
    tokens = engine.generate(prompt, Sampling(spec["grammar"]), max_tokens=spec["tokens"])
    first = next(tokens)  # reads the prompt's last token, then samples
    out.append(first)
    began = time.monotonic()
    out.extend(tokens)
    decode = time.monotonic() - began
    text = b"".join(engine.piece(t) for t in out).decode("utf-8", "replace")
    version = engine.version()
    engine.close()
    return {
        "load_s": load,
        "prompt_tokens": len(prompt) - 1,
        "prefill_s": prefill,
        "decode_tokens": len(out) - 1,
        "decode_s": decode,
        "text": text,
        "version": version,
    }


def _spec(tokens: int, threads: int) -> dict[str, Any]:
    from planweave.builtin import builtin_tools
    from planweave.grammar import plan_grammar
    from planweave.llm.llamacpp import Engine
    from planweave.llm.models import DEFAULT_MODEL, resolve_model
    from planweave.planner import Planner

    tools = builtin_tools()
    messages = Planner(tools, plan_answers=True).messages(QUESTION)
    model = resolve_model(DEFAULT_MODEL)
    engine = Engine(model, n_ctx=512, n_batch=32)  # only its chat template
    prompt = engine.render([m.to_dict() for m in messages])
    engine.close()
    return {
        "model": str(model),
        "prompt": prompt,
        "grammar": plan_grammar(tools, plan_answers=True),
        "tokens": tokens,
        "threads": threads,
        "n_ctx": 8192,
    }


def _run(python: str, code: list[str], spec: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [python, *code],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **env},
    )
    if proc.returncode != 0:
        raise SystemExit(f"{python} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--llama-cpp-python", metavar="PYTHON", help="a python with it installed")
    parser.add_argument(
        "--grammar-sampler",
        action="store_true",
        help="also decode with llama.cpp's grammar sampler (PLANWEAVE_GRAMMAR_GUIDE=0)",
    )
    parser.add_argument(
        "--no-anchor", action="store_true", help="leave out llama-cpp-python's Llama"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_planweave(json.loads(sys.stdin.read()), args.child)))
        return
    from planweave.llm.llamacpp import BINDINGS, installed

    spec = _spec(args.tokens, args.threads)
    child = ["-m", "benchmarks.embedded_backends", "--child"]
    contestants: dict[str, tuple[str, list[str], dict[str, str]]] = {}
    for name in BINDINGS:
        if installed(name):
            contestants[f"planweave on {name}"] = (sys.executable, [*child, name], {})
            if args.grammar_sampler:
                contestants[f"planweave on {name}, llama.cpp's grammar sampler"] = (
                    sys.executable,
                    [*child, name],
                    {"PLANWEAVE_GRAMMAR_GUIDE": "0"},
                )
    anchor = args.llama_cpp_python or (sys.executable if installed("llama-cpp-python") else None)
    if anchor and not args.no_anchor:
        contestants["llama-cpp-python's Llama"] = (anchor, ["-c", _LLAMA_CPP_PYTHON], {})
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in contestants}
    for round_ in range(args.rounds):
        for name, (python, code, env) in contestants.items():
            result = _run(python, code, spec, env)
            runs[name].append(result)
            print(
                f"round {round_ + 1} {name}: prefill "
                f"{result['prompt_tokens'] / result['prefill_s']:.1f} tok/s, decode "
                f"{result['decode_tokens'] / result['decode_s']:.1f} tok/s",
                file=sys.stderr,
            )
    summary = {}
    for name, results in runs.items():
        summary[name] = {
            "version": results[0]["version"],
            "prompt_tokens": results[0]["prompt_tokens"],
            "prefill_tok_s": statistics.median(
                r["prompt_tokens"] / r["prefill_s"] for r in results
            ),
            "decode_tok_s": statistics.median(r["decode_tokens"] / r["decode_s"] for r in results),
            "load_s": statistics.median(r["load_s"] for r in results),
            "texts_agree": len({r["text"] for r in results}) == 1,
            "text": results[0]["text"],
        }
    print("| backend | prefill tok/s | decode tok/s | load s |")
    print("|---|---|---|---|")
    for name, s in summary.items():
        print(
            f"| {name} | {s['prefill_tok_s']:.1f} | {s['decode_tok_s']:.1f} | {s['load_s']:.2f} |"
        )
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
