"""The durable journal (SQLite): runs, plan lines, tasks, LLM calls and events; resuming runs."""

from .codec import Unstorable, decode, encode
from .journal import Journal, default_path
from .recorder import RunRecorder
from .resume import Decisions, ResumeDecision, ResumeState, prepare

__all__ = [
    "Decisions",
    "Journal",
    "ResumeDecision",
    "ResumeState",
    "RunRecorder",
    "Unstorable",
    "decode",
    "default_path",
    "encode",
    "prepare",
]
