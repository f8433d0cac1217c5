"""The oracle LLM: an OpenAI-compatible server on loopback that streams, for each benchmark
question, the gold plan, the gold ReAct steps and the gold joiner answer at a configured
time-to-first-token and tokens per second.  Orchestration speed is measured apart from model
quality, identically for every contestant.

The oracle answers only from what the tools returned: when a result it needs is an error (a
tool failed and the runtime did not recover it), the joiner and the ReAct step give up with an
answer that names no result, as a model that does not retry by itself would.  Without failures
it answers exactly as before."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from planweave.llm.base import Message, Purpose
from planweave.llm.scripted import Reply, Script, ScriptedServer
from planweave.prompts import purpose_of

from .native import NATIVE_HEAD
from .peers.dialects import peer_text
from .workloads import Question, Step
from .world import PARAMETERS

CHARS_PER_TOKEN = 4
FAILED = "Observation: ERROR"
GIVE_UP = "Thought: a lookup failed, so the results cannot answer it.\nAction: Finish(unknown)"


class Oracle:
    def __init__(self, questions: Sequence[Question], *, ttft: float = 0.3, tps: float = 60.0):
        self.by_text = {q.text: q for q in questions}
        self.ttft = ttft
        self.tps = tps

    def reply(self, text: str) -> Reply:
        return Reply(text, chunk_size=CHARS_PER_TOKEN, delay=1.0 / self.tps, ttft=self.ttft)

    def seconds(self, text: str) -> float:
        """How long streaming `text` takes: the critical-path model of one LLM call."""
        chunks = max(1, -(-len(text) // CHARS_PER_TOKEN))
        return self.ttft + (chunks - 1) / self.tps

    def question(self, messages: Sequence[Message]) -> Question:
        """The benchmark question asked: a line of its own, alone or after `Question: ` (the
        peers' prompts bury it among worked examples or under a heading)."""
        for m in reversed(messages):
            for line in reversed(m.content.splitlines()):
                text = line.strip().removeprefix("Question:").strip()
                if text in self.by_text:
                    return self.by_text[text]
        raise LookupError("the oracle does not know this question")

    def planner_text(self, q: Question, messages: Sequence[Message]) -> str:
        return self.plan(q, second="A plan already ran" in messages[-1].content)

    def plan(self, q: Question, *, second: bool, call: Callable[[Step], str] = Step.call) -> str:
        """The gold plan, each call written by `call`; a replan question gets its first step,
        then (`second`) its last step numbered on from the first plan."""
        steps, first = q.steps, 1
        if q.kind == "replan":
            steps, first = ([q.steps[1]], 3) if second else ([q.steps[0]], 1)
        lines = [f"{first + i}. {call(step)}" for i, step in enumerate(steps)]
        lines.append(f"{first + len(steps)}. join()")
        return "\n".join(lines) + "\n<END_OF_PLAN>"

    def joiner_text(self, q: Question, messages: Sequence[Message]) -> str:
        # Every task of a gold plan is needed, so any failed one leaves the question open.
        if messages and FAILED in messages[-1].content:
            return GIVE_UP
        if q.kind == "replan" and "city_population(" not in messages[-1].content:
            return "Thought: the capital is known now.\nAction: Replan(look up its population)"
        return f"Thought: the results answer it.\nAction: Finish({q.answer})"

    def react_text(self, q: Question, messages: Sequence[Message]) -> str:
        if messages and messages[-1].content.startswith(FAILED):
            return GIVE_UP
        done = sum(1 for m in messages if m.role == "user" and m.content.startswith("Observation:"))
        if done < len(q.steps):
            return f"Thought: next step.\nAction: {q.steps[done].call()}\n"
        return f"Thought: done.\nAction: Finish({q.answer})"

    def native_reply(self, q: Question, messages: Sequence[Message]) -> Reply:
        """One model turn of native function calling: every call of the next dependency level
        at once, with arguments filled in from the tool results already returned."""
        level: dict[int, int] = {}
        for i in range(1, len(q.steps) + 1):
            level[i] = 1 + max((level[d] for d in q.deps(i)), default=-1)
        waves: list[list[int]] = []
        for i, lv in level.items():
            while len(waves) <= lv:
                waves.append([])
            waves[lv].append(i)
        returned = [m.content for m in messages if m.role == "tool"]  # type: ignore[comparison-overlap]
        order = [i for wave in waves for i in wave]
        results = dict(zip(order, returned, strict=False))
        done_waves = 0
        count = len(returned)
        while done_waves < len(waves) and count >= len(waves[done_waves]):
            count -= len(waves[done_waves])
            done_waves += 1
        if done_waves == len(waves):
            return Reply(q.answer, chunk_size=CHARS_PER_TOKEN, delay=1.0 / self.tps, ttft=self.ttft)
        calls = []
        for i in waves[done_waves]:
            step = q.steps[i - 1]
            arg = step.args[0]
            for ref, value in sorted(results.items(), reverse=True):
                arg = arg.replace(f"${{{ref}}}", value).replace(f"${ref}", json.dumps(value))
            value_obj = json.loads(arg)
            calls.append((step.tool, {PARAMETERS[step.tool]: value_obj}))
        return Reply(
            "", chunk_size=CHARS_PER_TOKEN, delay=1.0 / self.tps, ttft=self.ttft, tool_calls=calls
        )

    def respond(self, messages: list[Message], purpose: Purpose) -> Reply:
        """The reply to one request.  planweave says what a request is for in a header; the
        peers send none, so the scripted server tells their purpose from the prompt text and
        finds nothing of planweave's there ("other")."""
        q = self.question(messages)
        if messages and messages[0].content.startswith(NATIVE_HEAD):
            return self.native_reply(q, messages)
        if purpose in ("planner", "repair"):
            return self.reply(self.planner_text(q, messages))
        if purpose == "joiner":
            return self.reply(self.joiner_text(q, messages))
        if purpose == "other" and (peer := peer_text(self, q, messages)) is not None:
            return self.reply(peer)
        return self.reply(self.react_text(q, messages))

    def server(self) -> ScriptedServer:
        return ScriptedServer(Script.routed(self.respond), model="oracle", guess=purpose_of)
