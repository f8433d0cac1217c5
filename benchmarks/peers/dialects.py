"""What the oracle serves the peer ports of LLMCompiler, each in the syntax its prompts ask for.

Each request is recognized by a sentence of the port's own prompt:

- `llama-index-packs-agents-llm-compiler`: the planner wants LLMCompiler's numbered plan with
  positional arguments (`1. population("France")`, `$1` references, `join()`); the joiner
  reads `Thought: ...` / `Action: Finish(<answer>)`.  Its prompt offers no `Replan`; the oracle
  still answers a replan question's first round with LLMCompiler's `Action: Replan(<why>)`.
  Its joiner replies are planweave's, character for character.
- `llmcompiler` (PyPI 2.0.1): the planner wants keyword arguments
  (`1. population(country="France")`, references as `"${1}"`); the joiner answers with a
  fenced JSON object holding `_thought_` and `_finish_` or `_replan_`, with the same thought
  and the same answer or reason planweave's joiner gets.
- the original LLMCompiler (SqueezeAILab's code): the planner wants positional arguments, as
  the LlamaIndex pack's (which took its prompts from it); its joiner prompt opens with the
  same sentence as the pack's, and reads the same `Thought:` / `Action:` reply.  Its second
  plan is numbered from 1 and opens with a thought: its replanning prompt asks for the thought,
  and its task fetching unit makes `join` wait on every id below its own, so a plan numbered on
  from the first (`3.`, `4. join()`) would wait on tasks 1 and 2 it does not hold (KeyError).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from planweave.llm.base import Message

from ..workloads import Question, Step, mentions
from ..world import PARAMETERS

if TYPE_CHECKING:
    from ..oracle import Oracle

PLANNER_HEAD = "Given a user query, create a plan to solve it with the utmost parallelizability."
LLAMAINDEX_PLANNER = "Do NOT specify arguments in kwargs format."
LLAMAINDEX_REPLAN = "Previous Plan:"
LLAMAINDEX_JOINER = "Solve a question answering task with interleaving Observation, Thought"
LLMCOMPILER_PLANNER = "idx. tool(arg_name=args)"
LLMCOMPILER_REPLAN = "Context from last attempt:"
LLMCOMPILER_JOINER = "Solve a question answering task. Here are some guidelines:"
ORIGINAL_PLANNER = "Never introduce new actions other than the ones provided."
ORIGINAL_REPLAN = "Previous Plan:"
ORIGINAL_REPLAN_THOUGHT = "look up its population."

# The joiner's words, the same for planweave and every peer (only the syntax around them
# differs), so no contestant streams more for the same decision.
FINISH_THOUGHT = "the results answer it."
REPLAN_THOUGHT = "the capital is known now."
REPLAN_ACTION = "Replan(look up its population)"


def peer_text(oracle: Oracle, q: Question, messages: Sequence[Message]) -> str | None:
    """The reply to a peer's planner or joiner request, or None if it is not one."""
    system = messages[0].content if messages else ""
    if system.startswith(PLANNER_HEAD) and LLAMAINDEX_PLANNER in system:
        return oracle.plan(q, second=LLAMAINDEX_REPLAN in messages[-1].content)
    if system.startswith(PLANNER_HEAD) and any(LLMCOMPILER_PLANNER in m.content for m in messages):
        second = any(LLMCOMPILER_REPLAN in m.content for m in messages)
        return oracle.plan(q, second=second, call=keyword_call)
    if system.startswith(PLANNER_HEAD) and ORIGINAL_PLANNER in system:
        if ORIGINAL_REPLAN in messages[-1].content:
            plan = oracle.plan(q, second=True, renumber=1)
            return f"Thought: {ORIGINAL_REPLAN_THOUGHT}\n{plan}"
        return oracle.plan(q, second=False)
    if system.startswith(LLAMAINDEX_JOINER):  # the original's joiner too
        thought, action = joiner_decision(q, messages)
        return f"Thought: {thought}\nAction: {action}"
    if system.startswith(LLMCOMPILER_JOINER):
        thought, action = joiner_decision(q, messages)
        key = "_replan_" if action.startswith("Replan(") else "_finish_"
        decision = {"_thought_": thought, key: action[action.index("(") + 1 : -1]}
        return f"```json\n{json.dumps(decision)}\n```"
    return None


def keyword_call(step: Step) -> str:
    """`population(country="France")`; a bare reference `$1` becomes `"${1}"`."""
    (arg,) = step.args
    (param,) = PARAMETERS[step.tool]
    arg = re.sub(r"^\$(\d+)$", r'"${\1}"', arg)
    return f"{step.tool}({param}={arg})"


def joiner_decision(q: Question, messages: Sequence[Message]) -> tuple[str, str]:
    """Thought and action of a gold joiner that reads the observations (what follows the
    question): a numeric answer is given only once a tool result states it (a replan question
    replans until then); an answer by name follows from lookups that take no references."""
    text = "\n".join(m.content for m in messages)
    observations = text[text.rfind(q.text) + len(q.text) :]
    if not isinstance(q.gold, float) or mentions(q.gold, observations):
        return FINISH_THOUGHT, f"Finish({q.answer})"
    if q.kind == "replan":
        return REPLAN_THOUGHT, REPLAN_ACTION
    return "no result states the answer.", "Finish(the results do not answer it)"
