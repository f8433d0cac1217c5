"""The package's layout holds: no import circle, the journal depends on records, not on the
scheduler or an LLM backend, and the runtime is its API, with one run's session beside it."""

from __future__ import annotations

import ast
from pathlib import Path

import planweave

ROOT = Path(planweave.__file__).parent


def _modules() -> dict[str, Path]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """What `name` imports at module level (for type checking too: a circle of types is a
    circle of concepts), with the packages on the way, whose __init__ runs too."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    body = list(ast.parse(path.read_text()).body)
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            body.extend(node.body)
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join([*base, node.module] if node.module else base)
            if not node.level:
                target = node.module or ""
            for alias in node.names:
                full = f"{target}.{alias.name}"
                found.add(full if full in mods else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    with_packages = set()
    for dep in found:
        parts = dep.split(".")
        with_packages.update(".".join(parts[:i]) for i in range(2, len(parts) + 1))
    return {d for d in with_packages if d in mods and d != name and not name.startswith(d + ".")}


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: _imports(name, path, mods) for name, path in mods.items()}


def test_the_import_graph_has_no_circle() -> None:
    graph = _graph()
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            raise AssertionError("import circle: " + " -> ".join([*path[path.index(node) :], node]))
        if node in done:
            return
        for dep in sorted(graph[node]):
            visit(dep, [*path, node])
        done.add(node)

    for name in sorted(graph):
        visit(name, [])


def test_the_journal_reads_records_not_the_scheduler_or_a_backend() -> None:
    graph = _graph()
    for name, deps in graph.items():
        if name.startswith("planweave.store"):
            assert "planweave.scheduler" not in deps, name
            assert not any(d.startswith("planweave.llm") for d in deps), name


def _longest_function(path: Path) -> tuple[int, str]:
    tree = ast.parse(path.read_text())
    spans = [
        (node.end_lineno - node.lineno + 1, node.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
    ]
    return max(spans, default=(0, ""))


def test_the_runtime_keeps_the_public_api_and_a_session_its_layers() -> None:
    """runtime.py is the Python API; one run's session lives in session.py (issue 29).  A
    runtime that grows past the bound is taking another concept in: give it a module."""
    lines = len((ROOT / "runtime.py").read_text().splitlines())
    assert lines <= 350, f"runtime.py has {lines} lines (at most ~350)"
    for name in ("runtime.py", "session.py", "settings.py"):
        length, function = _longest_function(ROOT / name)
        assert length <= 60, f"{name}: {function} has {length} lines (at most ~60)"
    graph = _graph()
    # The session is below the API: it never reaches back for the Runtime.
    assert "planweave.runtime" not in graph["planweave.session"]
    # RunResult and RunFailed live with the records and in the error tree.
    from planweave import RunFailed, RunResult
    from planweave.errors import RunError

    assert RunResult.__module__ == "planweave.records"
    assert RunFailed.__module__ == "planweave.errors"
    assert issubclass(RunFailed, RunError)


def test_settings_travel_one_way_from_the_options_to_the_scheduler() -> None:
    """The CLI's options make one RunSettings, the Runtime takes it whole, and a run's session
    passes it to the scheduler: nobody on the way patches a copy of it."""
    for name in ("runtime.py", "session.py", "cli/run.py", "cli/options.py"):
        assert "dataclasses.replace" not in (ROOT / name).read_text(), name
