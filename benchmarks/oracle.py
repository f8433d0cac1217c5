"""The oracle LLM: an OpenAI-compatible server on loopback that streams, for each benchmark
question, the gold plan, the gold ReAct steps and the gold joiner answer at a configured
time to first token and tokens per second.  Orchestration speed is measured apart from model
quality, identically for every contestant.

The time to first token grows with the prompt: a fixed part (`ttft`) plus the prompt's tokens at
the prefill rate (`prefill`, tokens/s; 0 leaves it out).  The prompt is what the request carries:
every message (text and native tool calls, four characters a token plus four per message, as the
server counts usage) and, for native function calling, the tools' JSON schemas.  The server logs
each request (`Exchange`): its prompt, the tokens it streamed, and when the first token of an
answer left the server.

The oracle answers only from what the tools returned: when a result it needs is an error (a
tool failed and the runtime did not recover it), the joiner and the ReAct step give up with an
answer that names no result, as a model that does not retry by itself would.  Without failures
it answers exactly as before."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planweave.llm.base import Message, Purpose, estimate_tokens
from planweave.llm.scripted import Reply, Script, ScriptedServer
from planweave.prompts import (
    ANSWER_FIRST,
    BARE_ANSWER,
    JOINER_PLAN_HEAD,
    PLAN_ANSWER,
    THOUGHT_BEFORE_REPLAN,
    purpose_of,
)

from .native import NATIVE_HEAD
from .peers.dialects import FINISH_THOUGHT, REPLAN_ACTION, REPLAN_THOUGHT, peer_text
from .workloads import Question, Step
from .world import PARAMETERS

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

CHARS_PER_TOKEN = 4
FAILED = "Observation: ERROR"
GIVE_UP_THOUGHT = "Thought: a lookup failed, so the results cannot answer it.\n"
GIVE_UP = GIVE_UP_THOUGHT + "Action: Finish(unknown)"
BARE_GIVE_UP = GIVE_UP_THOUGHT + "unknown"  # to a joiner that asks for the answer bare

# Prefill rates in prompt tokens per second.  "hosted" is taken from a practitioner's
# write-up of hosted endpoints' time to first token (February 2026): prefill grows linearly with
# the prompt at roughly 0.20 to 0.24 ms per token, about 4,200 to 5,000 tokens/s; 4,500 is the
# middle.  It varies by provider and load: pass --prefill N.
# "embedded" is the 1.5B model's prompt rate measured on this machine (README: about 60 tokens/s).
PREFILL = {"hosted": 4_500.0, "embedded": 60.0, "off": 0.0}

# Where the answer starts in a reply that gives one: after `Finish(` (planweave's joiner and
# ReAct, the LlamaIndex pack's joiner) or in `llmcompiler`'s `"_finish_": "..."`; in a bare
# answer (planweave's compact joiner), after its thought line if it has one.
_ANSWER = re.compile(r'Finish\(|"_finish_": "')
_BARE = re.compile(r"(?:Thought: [^\n]*\n|(?!Thought: ))(?!Action: )")


@dataclass
class Exchange:
    """One request to the oracle and its reply, as the server saw them.  Times are
    `time.monotonic()` (CLOCK_MONOTONIC, the same clock in every process on the machine)."""

    question: str
    purpose: str
    prompt_tokens: int
    ttft: float
    tokens: int  # streamed, four characters a token (native tool calls: name and arguments)
    answer_tokens: int  # of those, the answer's; 0 when the reply gives none
    answer_at: int | None  # the character the answer starts at, if the reply gives one
    received: float = 0.0
    first_answer: float | None = None  # when the chunk holding answer_at left (or would have)


@dataclass
class _Pending:
    """The request being answered, passed from the server to `Oracle.respond`."""

    body: dict[str, Any]
    received: float
    exchange: Exchange | None = None
    reply: Reply | None = None


_REQUEST: ContextVar[_Pending | None] = ContextVar("oracle_request", default=None)


def prompt_tokens(body: dict[str, Any]) -> int:
    """The prompt a chat completions request carries, in tokens: each message's text and
    tool calls (four characters a token, plus four a message) and the tools' schemas."""
    total = 0
    for m in body.get("messages", []):
        total += 4 + estimate_tokens(m.get("content") or "")
        if m.get("tool_calls"):
            total += estimate_tokens(json.dumps(m["tool_calls"]))
    if body.get("tools"):
        total += estimate_tokens(json.dumps(body["tools"]))
    return total


def reply_size(reply: Reply) -> int:
    """Characters a reply streams (tool calls count their name and arguments, as the scripted
    server times them)."""
    calls = sum(len(json.dumps(a)) + len(n) for n, a in reply.tool_calls or [])
    return len(reply.text) + calls


def tokens_of(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


class Oracle:
    def __init__(
        self,
        questions: Sequence[Question],
        *,
        ttft: float = 0.3,
        tps: float = 60.0,
        prefill: float = 0.0,
    ):
        self.by_text = {q.text: q for q in questions}
        self.ttft = ttft
        self.tps = tps
        self.prefill = prefill
        self.log: list[Exchange] = []
        self._lock = threading.Lock()

    def first_token_s(self, prompt: int) -> float:
        """Time to first token after a prompt of `prompt` tokens."""
        return self.ttft + (prompt / self.prefill if self.prefill > 0 else 0.0)

    def stream_s(self, tokens: int) -> float:
        """Time to stream `tokens` tokens after the first one."""
        return max(0, tokens - 1) / self.tps

    def reply(self, text: str) -> Reply:
        return Reply(text, chunk_size=CHARS_PER_TOKEN, delay=1.0 / self.tps, ttft=self.ttft)

    def seconds(self, text: str, prompt: int = 0) -> float:
        """How long one LLM call streaming `text` after a `prompt`-token prompt takes: the
        critical-path model of one call."""
        return self.first_token_s(prompt) + self.stream_s(tokens_of(max(1, len(text))))

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
        return self.plan(
            q,
            second="A plan already ran" in messages[-1].content,
            answers=bool(messages) and PLAN_ANSWER in messages[0].content,
        )

    def plan(
        self,
        q: Question,
        *,
        second: bool,
        call: Callable[[Step], str] = Step.call,
        answers: bool = False,
        renumber: int | None = None,
    ) -> str:
        """The gold plan, each call written by `call`; a replan question gets its first step,
        then (`second`) its last step numbered on from the first plan (from `renumber`, where
        that is given).  Where the prompt offers plan answers (`answers`) and the gold answer
        is a result of this plan as it stands, the plan ends with it, `join("${N}")`: the same
        words the joiner would give (its gold answer is that number), as a capable model would
        use the form.  Where the answer is which of the lookups is largest, such a plan ranks
        them and ends with the rank's winner, `join("${N.largest}")`, as the prompt's rule
        shows; a plan without an answer has no use for the rank."""
        steps, first = q.plan_steps(answers), 1
        if q.kind == "replan":
            steps, first = ([q.steps[1]], 3) if second else ([q.steps[0]], 1)
        if renumber is not None:
            first = renumber
        lines = [f"{first + i}. {call(step)}" for i, step in enumerate(steps)]
        answer = ""
        target = q.plan_steps(True)[q.answer_step - 1] if q.answer_step else None
        if answers and target is not None and target in steps:
            projection = f".{q.answer_field}" if q.answer_field else ""
            answer = f'"${{{first + steps.index(target)}{projection}}}"'
        lines.append(f"{first + len(steps)}. join({answer})")
        return "\n".join(lines) + "\n<END_OF_PLAN>"

    def joiner_text(self, q: Question, messages: Sequence[Message]) -> str:
        """The gold joiner reply.  A joiner prompt in the compact style asks for the answer
        first: the Finish then comes without its thought (the same answer text), and where
        the prompt asks for it bare, without `Action: Finish(` too; a Replan comes after its
        thought where the prompt's Replan form shows one."""
        bare = _asks_bare(messages)
        # Every task of a gold plan is needed, so any failed one leaves the question open.
        if messages and FAILED in messages[-1].content:
            return BARE_GIVE_UP if bare else GIVE_UP
        if q.kind == "replan" and "city_population(" not in messages[-1].content:
            replan = f"Action: {REPLAN_ACTION}"
            if messages and THOUGHT_BEFORE_REPLAN in messages[0].content:
                replan = f"Thought: {REPLAN_THOUGHT}\n{replan}"
            if messages and JOINER_PLAN_HEAD in messages[0].content:
                # Asked to, the joiner writes the second plan in the same reply.
                answers = PLAN_ANSWER in messages[0].content
                return f"{replan}\n{self.plan(q, second=True, answers=answers)}"
            return replan
        if bare:
            return q.answer
        if messages and ANSWER_FIRST in messages[0].content:
            return f"Action: Finish({q.answer})"
        return f"Thought: {FINISH_THOUGHT}\nAction: Finish({q.answer})"

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
            return self.reply(q.answer)
        calls = []
        for i in waves[done_waves]:
            step = q.steps[i - 1]
            arg = step.args[0]
            for ref, value in sorted(results.items(), reverse=True):
                arg = arg.replace(f"${{{ref}}}", value).replace(f"${ref}", json.dumps(value))
            value_obj = json.loads(arg)
            (param,) = PARAMETERS[step.tool]
            calls.append((step.tool, {param: value_obj}))
        return Reply(
            "", chunk_size=CHARS_PER_TOKEN, delay=1.0 / self.tps, ttft=self.ttft, tool_calls=calls
        )

    def respond(self, messages: list[Message], purpose: Purpose) -> Reply:
        """The reply to one request, its first token delayed by the prompt's prefill, logged.
        planweave says what a request is for in a header; the peers send none, so the scripted
        server tells their purpose from the prompt text and finds nothing of planweave's there
        ("other")."""
        q = self.question(messages)
        native = bool(messages) and messages[0].content.startswith(NATIVE_HEAD)
        reply = self._reply(q, messages, purpose, native)
        pending = _REQUEST.get()
        body = pending.body if pending else {"messages": [vars(m) for m in messages]}
        prompt = prompt_tokens(body)
        reply.ttft = self.first_token_s(prompt)
        answer_at: int | None = None
        if native and not reply.tool_calls:
            answer_at = 0
        elif purpose == "joiner" and _asks_bare(messages) and (bare := _BARE.match(reply.text)):
            answer_at = bare.end()
        elif match := _ANSWER.search(reply.text):
            answer_at = match.end()
        tokens = tokens_of(reply_size(reply))
        exchange = Exchange(
            question=q.id,
            purpose="native" if native else purpose,
            prompt_tokens=prompt,
            ttft=reply.ttft,
            tokens=tokens,
            answer_tokens=0 if answer_at is None else tokens_of(len(reply.text) - answer_at),
            answer_at=answer_at,
            received=pending.received if pending else time.monotonic(),
        )
        with self._lock:
            self.log.append(exchange)
        if pending:
            pending.exchange, pending.reply = exchange, reply
        return reply

    def _reply(self, q: Question, messages: list[Message], purpose: Purpose, native: bool) -> Reply:
        if native:
            return self.native_reply(q, messages)
        if purpose in ("planner", "repair"):
            return self.reply(self.planner_text(q, messages))
        if purpose == "joiner":
            return self.reply(self.joiner_text(q, messages))
        if purpose == "other" and (peer := peer_text(self, q, messages)) is not None:
            return self.reply(peer)
        return self.reply(self.react_text(q, messages))

    def server(self) -> ScriptedServer:
        return OracleServer(Script.routed(self.respond), model="oracle", guess=purpose_of)


def _asks_bare(messages: Sequence[Message]) -> bool:
    """Whether a joiner prompt asks for the answer bare (planweave's compact joiner)."""
    return bool(messages) and BARE_ANSWER in messages[0].content


class OracleServer(ScriptedServer):
    """The scripted server, with the request's body passed to the oracle (the tools' schemas
    are part of the prompt) and the moment the first chunk of an answer leaves logged.  A
    non-streaming reply (native calling's SDK loop) logs when that chunk would have left had it
    streamed, on the same schedule the server paces streams with."""

    async def _completions(self, request: Request) -> Response:
        from starlette.responses import StreamingResponse

        pending = _Pending(await request.json(), time.monotonic())
        token = _REQUEST.set(pending)
        try:
            response = await super()._completions(request)
        finally:
            _REQUEST.reset(token)
        exchange, reply = pending.exchange, pending.reply
        if exchange is None or reply is None or exchange.answer_at is None:
            return response
        chunk = exchange.answer_at // max(1, reply.chunk_size)
        if isinstance(response, StreamingResponse):
            response.body_iterator = _timed(response.body_iterator, exchange, chunk)
        else:
            exchange.first_answer = exchange.received + reply.ttft + chunk * reply.delay
        return response


async def _timed(events: Any, exchange: Exchange, chunk: int) -> AsyncIterator[Any]:
    """The server-sent events as they are, noting when content chunk `chunk` is sent (the first
    event carries only the role)."""
    i = 0
    async for event in events:
        if i == chunk + 1:
            exchange.first_answer = time.monotonic()
        i += 1
        yield event
