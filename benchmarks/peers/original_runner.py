"""Runner for the original LLMCompiler, the paper's own code (github.com/SqueezeAILab/LLMCompiler
at the commit `setup.sh` pins), run from its checkout in the virtualenv's folder
(`benchmarks/.peers/original/LLMCompiler`); none of its source is copied into this repository.

Run with its virtualenv's python from the repository root:
    benchmarks/.peers/original/bin/python -m benchmarks.peers.original_runner --base-url URL

The agent is built as its `run_llm_compiler.py` builds it with `--stream` (the paper's fastest
setting: the planner streams and each task starts once its line is parsed; the joiner does not
stream), on the LangChain `ChatOpenAI` its `get_model` makes, given the oracle's URL as
`openai_api_base`.  Nothing of the original is patched: `get_model` has no base-URL argument for
OpenAI, so the runner makes the model itself, as `get_model` would with one.

Prompts: its own ParallelQA config for GPT models (`configs/parallelqa/gpt_prompts.py`: parallel
lookups and arithmetic, the closest of its three benchmarks; the LlamaIndex pack ships a mashup of
the same prompts), imported from the checkout, with `max_replans=2` where that config has 1 (a
single round, which can never replan).

Each world function becomes the original's `Tool` (`tool()`): the original awaits every tool's
`func` with the plan's positional arguments, so the world's synchronous functions run in threads
(a pool as wide as the widest plan, as its own async tools would all be in flight at once); a
description in the form its configs write (`search(entity: str) -> str:` and a line per note);
and a stringify rule that writes a call as its configs do (`search(Mount Everest)`) for the
joiner's prompt.  Without one, it writes `searchMount Everest`.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, get_type_hints

from benchmarks.peers.protocol import Meter, arguments, serve
from benchmarks.world import tool_functions

# Rounds of plan and join: one to answer, a second after a Replan (the oracle replans once).
MAX_REPLANS = 2
THREADS = 64  # the map shape's 32 lookups, all at once


def checkout() -> Path:
    """Where setup.sh checked the original out: inside this virtualenv's folder."""
    return Path(sys.prefix) / "LLMCompiler"


def load(source: Path | None = None) -> dict[str, ModuleType]:
    """The original's modules this runner uses, imported from its checkout (a top-level `src`
    and `configs`, as its own scripts import them from the repository root)."""
    root = str(source or checkout())
    if not Path(root, "src", "llm_compiler", "llm_compiler.py").exists():
        raise RuntimeError(f"no LLMCompiler checkout at {root}: run benchmarks/peers/setup.sh")
    if root not in sys.path:
        sys.path.insert(0, root)
    import importlib

    names = {
        "compiler": "src.llm_compiler.llm_compiler",
        "constants": "src.llm_compiler.constants",
        "tools": "src.tools.base",
        "prompts": "configs.parallelqa.gpt_prompts",
        "logger": "src.utils.logger_utils",
    }
    return {key: importlib.import_module(name) for key, name in names.items()}


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type) and not getattr(annotation, "__args__", None):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def describe(name: str, fn: Callable[..., Any]) -> str:
    """The tool's description in the form the original's configs write theirs:
    `population(country: str) -> int:` and ` - The population of a country.`"""
    hints = get_type_hints(fn)
    params = ", ".join(f"{p}: {_type_name(hints[p])}" for p in inspect.signature(fn).parameters)
    doc = " ".join((fn.__doc__ or name).split())
    return f"{name}({params}) -> {_type_name(hints['return'])}:\n - {doc}\n"


def stringify(name: str) -> Callable[[Sequence[Any]], str]:
    """How a call reads in the joiner's prompt, as the original's configs write theirs:
    `population(France)`, arguments as they were passed (references filled in)."""

    def rule(args: Sequence[Any]) -> str:
        return f"{name}({', '.join(str(a) for a in args)})"

    return rule


def awaitable(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """`fn` as the coroutine function the original awaits with a task's positional arguments,
    run in a thread of the running loop's default executor."""

    async def call(*args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, partial(fn, *args))

    call.__name__ = call.__qualname__ = getattr(fn, "__name__", "tool")
    call.__doc__ = fn.__doc__
    return call


def main() -> None:
    args = arguments(__doc__)
    original = load()
    original["logger"].enable_logging(False)  # its `log` prints every prompt otherwise

    from langchain_community.chat_models import ChatOpenAI
    from langchain_core.callbacks import BaseCallbackHandler

    meter = Meter()

    class Usage(BaseCallbackHandler):
        run_inline = True

        def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            usage = (response.llm_output or {}).get("token_usage") or {}
            meter.add(int(usage.get("total_tokens", 0)))

    def model(stream: bool) -> Any:
        return ChatOpenAI(
            model_name="oracle",
            openai_api_key="oracle",
            openai_api_base=args.base_url,
            streaming=stream,
            temperature=0,
            max_retries=0,
            request_timeout=120,
            callbacks=[Usage()],
        )

    Tool = original["tools"].Tool
    tools = [
        Tool(
            name=name,
            func=awaitable(fn),
            description=describe(name, fn),
            stringify_rule=stringify(name),
        )
        for name, fn in tool_functions(args.profile).items()
    ]
    prompts = original["prompts"]
    agent = original["compiler"].LLMCompiler(
        tools=tools,
        planner_llm=model(stream=True),
        planner_example_prompt=prompts.PLANNER_PROMPT,
        planner_example_prompt_replan=None,
        planner_stop=[original["constants"].END_OF_PLAN],
        planner_stream=True,
        agent_llm=model(stream=False),
        joinner_prompt=prompts.OUTPUT_PROMPT,
        joinner_prompt_final=None,
        max_replans=MAX_REPLANS,
        benchmark=False,
    )
    loop = asyncio.new_event_loop()
    loop.set_default_executor(ThreadPoolExecutor(max_workers=THREADS))

    def answer(question: str) -> str | None:
        return str(loop.run_until_complete(agent.arun(question)))

    serve(answer, meter)


if __name__ == "__main__":
    main()
