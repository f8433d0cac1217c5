"""Runner for `llama-index-packs-agents-llm-compiler` (LlamaIndex's port of LLMCompiler).

Run with the peer virtualenv's python from the repository root:
    benchmarks/.peers/llamaindex/bin/python -m benchmarks.peers.llamaindex_runner --base-url URL

The agent is built as the pack's README shows (`LLMCompilerAgentWorker.from_tools` inside an
`AgentRunner`), on `OpenAILike` pointed at the oracle.  The world's synchronous tools become
`FunctionTool`s, which the pack runs on the event loop's default thread pool.
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.agent import AgentRunner
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.llm import LLMChatEndEvent
from llama_index.core.tools import FunctionTool
from llama_index.llms.openai_like import OpenAILike
from llama_index.packs.agents_llm_compiler.step import LLMCompilerAgentWorker

from benchmarks.peers.protocol import Meter, arguments, serve
from benchmarks.world import tool_functions


class _Usage(BaseEventHandler):
    meter: Any = None

    @classmethod
    def class_name(cls) -> str:
        return "BenchmarkUsage"

    def handle(self, event: Any, **kwargs: Any) -> None:
        if isinstance(event, LLMChatEndEvent) and event.response is not None:
            self.meter.add(int(event.response.additional_kwargs.get("total_tokens", 0)))


def main() -> None:
    args = arguments(__doc__)
    meter = Meter()
    get_dispatcher().add_event_handler(_Usage(meter=meter))
    llm = OpenAILike(
        model="oracle",
        api_base=args.base_url,
        api_key="oracle",
        is_chat_model=True,
        context_window=32_000,
        max_retries=0,
        timeout=120.0,
    )
    tools = [FunctionTool.from_defaults(fn=fn) for fn in tool_functions(args.profile).values()]
    agent = AgentRunner(LLMCompilerAgentWorker.from_tools(tools, llm=llm))
    # The async API on one long-lived loop: the sync `chat` runs each step under its own
    # `asyncio.run`, and the reused OpenAI client then fails every second question with
    # "Event loop is closed".
    loop = asyncio.new_event_loop()

    def answer(question: str) -> str | None:
        agent.reset()
        return str(loop.run_until_complete(agent.achat(question)).response)

    serve(answer, meter)


if __name__ == "__main__":
    main()
