"""The `planweave` command: answer a question with a live view of the plan as it runs,
browse, cancel and resume recorded runs, and serve runs over HTTP or MCP."""

from . import cache, mcp, run, runs, serve, threads
from .app import app
from .view import DagView

__all__ = ["DagView", "app", "cache", "main", "mcp", "run", "runs", "serve", "threads"]


def main() -> None:
    app()
