"""The durable journal (an SQLite file, or a PostgreSQL database): runs, plan lines, tasks, LLM
calls and events, and the storage interface other tables in it use (`base.Storage`)."""

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
