"""The oracle LLM: an OpenAI-compatible server on loopback that streams, for each benchmark
question, the gold plan, the gold ReAct steps and the gold joiner answer at a configured
time-to-first-token and tokens per second.  Orchestration speed is measured apart from model
quality, identically for every contestant."""

from __future__ import annotations

import re
from collections.abc import Sequence

from planweave.llm.base import Message
from planweave.llm.scripted import Reply, Script, ScriptedServer, purpose_of

from .workloads import Question

CHARS_PER_TOKEN = 4


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
        for m in reversed(messages):
            found = re.match(r"Question: (.*)", m.content) if m.role == "user" else None
            if found and found.group(1).strip() in self.by_text:
                return self.by_text[found.group(1).strip()]
        raise LookupError("the oracle does not know this question")

    def planner_text(self, q: Question, messages: Sequence[Message]) -> str:
        if q.kind != "replan":
            return q.plan_text()
        if "A plan already ran" not in messages[-1].content:
            return f"1. {q.steps[0].call()}\n2. join()\n<END_OF_PLAN>"
        return f"3. {q.steps[1].call()}\n4. join()\n<END_OF_PLAN>"

    def joiner_text(self, q: Question, messages: Sequence[Message]) -> str:
        if q.kind == "replan" and "city_population(" not in messages[-1].content:
            return "Thought: the capital is known now.\nAction: Replan(look up its population)"
        return f"Thought: the results answer it.\nAction: Finish({q.answer})"

    def react_text(self, q: Question, messages: Sequence[Message]) -> str:
        done = sum(1 for m in messages if m.role == "user" and m.content.startswith("Observation:"))
        if done < len(q.steps):
            return f"Thought: next step.\nAction: {q.steps[done].call()}\n"
        return f"Thought: done.\nAction: Finish({q.answer})"

    def respond(self, messages: list[Message]) -> Reply:
        q = self.question(messages)
        purpose = purpose_of(messages)
        if purpose in ("planner", "repair"):
            return self.reply(self.planner_text(q, messages))
        if purpose == "joiner":
            return self.reply(self.joiner_text(q, messages))
        return self.reply(self.react_text(q, messages))

    def server(self) -> ScriptedServer:
        return ScriptedServer(Script(self.respond), model="oracle")
