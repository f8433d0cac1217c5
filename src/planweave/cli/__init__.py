"""The `planweave` command: answer a question with a live view of the plan as it runs, and
browse, cancel and resume recorded runs."""

from . import cache, run, runs
from .app import app
from .view import DagView

__all__ = ["DagView", "app", "cache", "main", "run", "runs"]


def main() -> None:
    app()
