"""Every install variant works: planweave without extras, and with each extra alone, each in a
fresh virtualenv, against the scripted SSE server (no model is loaded, no browser started).

A variant answers a question from the scripted endpoint, lists runs and cache templates, uses
the feature its extra brings, and every feature whose extra it lacks ends in exit status 2 with
one line naming `pip install 'planweave[EXTRA]'`, before any LLM call.  A built-in tool of the
`tools` extra named on its own (`--tools planweave.builtin:city_info`) answers where the extra
is installed; elsewhere its call fails the run the same way (exit status 2, the one line), and
no answer is made up from the broken call.

    .venv/bin/python .ci/variants.py [VARIANT ...]     # "" is the plain install
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from planweave.llm import Script, ScriptedServer

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ["", "tools", "local", "server", "mcp", "otel", "ray", "postgres"]
QUESTION = "How many people live in France?"
ANSWER = "About 68 million people."
CITY_QUESTION = "How many people live in Lyon?"
CITY_ANSWER = "About half a million people live in Lyon."
# A PostgreSQL journal no server answers for: the extra connects and says so, its lack is named;
# its password is never shown either way.
PG_PASSWORD = "variant-pg-password"
PG_URL = f"postgresql://planweave:{PG_PASSWORD}@/planweave?host=/nonexistent-pg-socket"


class Checks:
    def __init__(self) -> None:
        self.passed = 0
        self.failed: list[str] = []

    def check(self, name: str, ok: bool, detail: str = "") -> None:
        if ok:
            self.passed += 1
            print(f"  ok    {name}", flush=True)
        else:
            self.failed.append(name)
            print(f"  FAIL  {name}\n{detail[-2000:]}", flush=True)


def _wheel(into: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-qq", "--no-deps", "-w", str(into), str(ROOT)],
        check=True,
    )
    (wheel,) = into.glob("planweave-*.whl")
    return wheel


def _venv(where: Path, wheel: Path, extra: str) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    target = f"{wheel}[{extra}]" if extra else str(wheel)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-qq", target],
        check=True,
    )
    return where / "bin" / "planweave"


def _variant(
    extra: str, wheel: Path, base_url: str, city_url: str, work: Path, checks: Checks
) -> None:
    label = extra or "no extras"
    began = time.monotonic()
    planweave = _venv(work / f"venv-{extra or 'plain'}", wheel, extra)
    print(f"[{label}] installed in {time.monotonic() - began:.0f} s", flush=True)
    db = str(work / f"{extra or 'plain'}.db")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLANWEAVE_", "OPENAI_"))}
    env["HOME"] = str(work / "home")  # no user cache: nothing assembled, nothing journaled before

    def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                [str(planweave), *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                cwd=work,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
            err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or ""
            return subprocess.CompletedProcess(exc.cmd, 124, out, err)

    endpoint = ("--base-url", base_url, "--model", "scripted", "--db", db)

    def answers(name: str, *more: str, timeout: float = 120) -> None:
        proc = run("run", QUESTION, *endpoint, *more, timeout=timeout)
        ok = proc.returncode == 0 and ANSWER in proc.stdout
        checks.check(f"[{label}] {name}", ok, proc.stdout + proc.stderr)

    proc = run("--help")
    checks.check(f"[{label}] planweave --help", proc.returncode == 0, proc.stderr)
    answers("run against an endpoint")
    for command in (["runs", "list"], ["cache", "list"]):
        proc = run(*command, "--db", db)
        ok = proc.returncode == 0 and "live in" in " ".join(proc.stdout.split())
        checks.check(f"[{label}] {' '.join(command)}", ok, proc.stdout + proc.stderr)

    files = work / "notes"
    files.mkdir(exist_ok=True)
    (files / "france.txt").write_text("France has about 68 million people.\n")
    fake_model = work / "not-a-model.gguf"
    fake_model.write_bytes(b"GGUF" + b"\0" * 64)

    def embedded() -> subprocess.CompletedProcess[str]:
        return run("run", QUESTION, "--model", str(fake_model), "--db", db)

    def serve() -> subprocess.CompletedProcess[str]:
        # Serving runs until stopped: a feature that is there is still serving at the timeout.
        return run("serve", "--port", "0", *endpoint, timeout=8)

    needs: dict[str, tuple[str, Callable[[], subprocess.CompletedProcess[str]]]] = {
        "tools": (
            "run --files DIR",
            lambda: run("run", QUESTION, *endpoint, "--files", str(files)),
        ),
        "local": ("run on the embedded model", embedded),
        "server": ("serve", serve),
        "mcp": ("mcp", lambda: run("mcp", *endpoint, timeout=20)),
        "otel": (
            "run --otel console",
            lambda: run("run", QUESTION, *endpoint, "--otel", "console"),
        ),
        "ray": (
            "run --executor ray",
            lambda: run("run", QUESTION, *endpoint, "--executor", "ray", timeout=240),
        ),
        "postgres": (
            "run --db postgresql://...",
            lambda: run(
                "run", QUESTION, "--base-url", base_url, "--model", "scripted", "--db", PG_URL
            ),
        ),
    }
    for needed, (name, attempt) in needs.items():
        proc = attempt()
        hint = f"pip install 'planweave[{needed}]'"
        said = proc.stderr.strip().splitlines()
        # `local` brings the tools extra with it.
        if needed == extra or (needed, extra) == ("tools", "local"):
            if needed == "local":
                # A file that is no GGUF: llama.cpp itself refuses it (the binding is there).
                ok = (
                    proc.returncode == 2
                    and hint not in proc.stderr
                    and "could not load" in proc.stderr
                )
            elif needed in ("server", "mcp"):
                ok = proc.returncode in (0, 124) and hint not in proc.stderr
            elif needed == "postgres":
                # psycopg is there and tried the (absent) server.
                ok = (
                    proc.returncode == 2
                    and hint not in proc.stderr
                    and "cannot open the journal postgresql://" in proc.stderr
                    and PG_PASSWORD not in proc.stdout + proc.stderr
                )
            else:
                ok = proc.returncode == 0 and ANSWER in proc.stdout
            checks.check(f"[{label}] {name} works", ok, proc.stdout + proc.stderr)
        else:
            lines = [line for line in said if hint in line]
            ok = proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:")
            ok = ok and PG_PASSWORD not in proc.stdout + proc.stderr
            checks.check(f"[{label}] {name} names {hint}", ok, proc.stdout + proc.stderr)

    city = ("--tools", "planweave.builtin:city_info", "--no-cache")
    proc = run(
        "run", CITY_QUESTION, "--base-url", city_url, "--model", "scripted", "--db", db, *city
    )
    hint = "pip install 'planweave[tools]'"
    if extra in ("tools", "local"):
        ok = proc.returncode == 0 and CITY_ANSWER in proc.stdout
        checks.check(f"[{label}] city_info alone works", ok, proc.stdout + proc.stderr)
    else:
        lines = [line for line in proc.stderr.splitlines() if hint in line]
        ok = (
            proc.returncode == 2
            and len(lines) == 1
            and lines[0].startswith("error:")
            and CITY_ANSWER not in proc.stdout
        )
        checks.check(
            f"[{label}] city_info alone fails the run naming {hint}", ok, proc.stdout + proc.stderr
        )


def main(argv: list[str]) -> int:
    chosen = argv or VARIANTS
    checks = Checks()
    script = Script.by_purpose(
        planner=['1. country_info("France", field="population")\n2. join()\n<END_OF_PLAN>'] * 200,
        joiner=[f"Thought: the population is known.\nAction: Finish({ANSWER})"] * 200,
    )
    cities = Script.by_purpose(
        planner=['1. city_info("Lyon", field="population")\n2. join()\n<END_OF_PLAN>'] * 20,
        joiner=[f"Thought: the population is known.\nAction: Finish({CITY_ANSWER})"] * 20,
    )
    with (
        tempfile.TemporaryDirectory() as tmp,
        ScriptedServer(script) as server,
        ScriptedServer(cities) as city_server,
    ):
        work = Path(tmp)
        wheel = _wheel(work / "dist")
        for extra in chosen:
            _variant(extra, wheel, server.base_url, city_server.base_url, work, checks)
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
