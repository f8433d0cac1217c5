"""An LLM backend of the test suite's own, joined to `llm.registry` by one line: it plays a plan
over demo_tools and answers from the division's result (see test_settings)."""

from __future__ import annotations

from planweave import Script, ScriptedLLM
from planweave.llm.registry import LLMChoice

PLAN = '1. population("Netherlands")\n2. area("Netherlands")\n3. divide($1, $2)\n4. join()\n'
FINISH = "Thought: Done.\nAction: Finish(About 428 people per km².)"


def from_choice(choice: LLMChoice) -> ScriptedLLM:
    """A scripted LLM named by `choice.model`."""
    script = Script.by_purpose(planner=[PLAN + "<END_OF_PLAN>"], joiner=[FINISH])
    return ScriptedLLM(script, model=choice.model or "scripted")
