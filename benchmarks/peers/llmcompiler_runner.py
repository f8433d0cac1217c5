"""Runner for `llmcompiler` (PyPI 2.0.1, github.com/crazyyanchao/llmcompiler): LLMCompiler on
LangGraph and LangChain, grown out of LangGraph's LLMCompiler tutorial.

Run with the peer virtualenv's python from the repository root:
    benchmarks/.peers/llmcompiler/bin/python -m benchmarks.peers.llmcompiler_runner --base-url URL

Built as its README shows (`RunLLMCompiler(ChatRequest(message=...), tools, llm)()`), on
langchain-openai's `ChatOpenAI` pointed at the oracle.  It resolves `${N}` references only in
tools that return its `ActionOutput` with the values downstream tools may use (`dag_kwargs`),
so each world function becomes a `CompilerBaseTool` that does; the calculator's expression is
marked for partial substitution, as its own math tool's problem is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_type_hints

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from langchain_openai import ChatOpenAI
from llmcompiler.chat.run import RunLLMCompiler
from llmcompiler.result.chat import ChatRequest
from llmcompiler.tools.basic import CompilerBaseTool
from llmcompiler.tools.dag.dag_flow_params import PARTIAL_RESOLVED_ARGS_PARSE
from llmcompiler.tools.generic.action_output import ActionOutput
from pydantic import BaseModel, Field, create_model

from benchmarks.peers.protocol import Meter, arguments, serve
from benchmarks.world import PARAMETERS, tool_functions


class _Usage(BaseCallbackHandler):
    def __init__(self, meter: Meter) -> None:
        self.meter = meter

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        usage = (response.llm_output or {}).get("token_usage") or {}
        tokens = usage.get("total_tokens", 0)
        for generations in response.generations:
            for generation in generations:
                metadata = getattr(getattr(generation, "message", None), "usage_metadata", None)
                tokens = tokens or (metadata or {}).get("total_tokens", 0)
        self.meter.add(int(tokens))


def compiler_tool(name: str, fn: Callable[..., Any]) -> CompilerBaseTool:
    params = PARAMETERS[name]
    hints = get_type_hints(fn)
    extra = PARTIAL_RESOLVED_ARGS_PARSE if name == "calculator" else None
    fields: dict[str, Any] = {
        p: (hints[p], Field(description=p, json_schema_extra=extra)) for p in params
    }
    inputs = create_model(f"{name}_input", **fields)
    outputs = create_model(f"{name}_output", **{name: (Any, Field(None, description=name))})

    class WorldTool(CompilerBaseTool):
        args_schema: type[BaseModel] = inputs
        output_model: type[BaseModel] = outputs
        dag_flow_kwargs: list[str] = [name]  # noqa: RUF012 (a pydantic field)

        def _run(self, **kwargs: Any) -> ActionOutput:
            value = fn(*(kwargs[p] for p in params))
            return ActionOutput(any=value, dag_kwargs=self.flow({name: value}))

    return WorldTool(name=name, description=fn.__doc__ or name)


def main() -> None:
    args = arguments(__doc__)
    meter = Meter()
    llm = ChatOpenAI(
        model="oracle",
        base_url=args.base_url,
        api_key="oracle",
        temperature=0,
        max_retries=0,
        timeout=120,
        stream_usage=True,
        callbacks=[_Usage(meter)],
    )
    tools = [compiler_tool(name, fn) for name, fn in tool_functions(args.profile).items()]

    def answer(question: str) -> str | None:
        chat = ChatRequest(message=question)
        compiler = RunLLMCompiler(chat, tools, llm, print_graph=False, print_dag=False)
        return str(compiler().response)

    serve(answer, meter)


if __name__ == "__main__":
    main()
