"""The durable journal (SQLite): runs, plan lines, tasks, LLM calls and events, and the storage
interface other tables in its file use (`base.Storage`)."""

from .base import Storage
from .codec import Unstorable, decode, encode
from .journal import Journal, default_path
from .recorder import RunRecorder

__all__ = [
    "Journal",
    "RunRecorder",
    "Storage",
    "Unstorable",
    "decode",
    "default_path",
    "encode",
]
