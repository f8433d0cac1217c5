"""The `planweave` command: answer a question with a live view of the plan as it runs,
browse, cancel and resume recorded runs, and serve runs over HTTP or MCP."""

from . import cache, mcp, plans, run, runs, serve, threads, users
from .app import app
from .view import DagView

__all__ = [
    "DagView",
    "app",
    "cache",
    "main",
    "mcp",
    "plans",
    "run",
    "runs",
    "serve",
    "threads",
    "users",
]


def main() -> None:
    app()
