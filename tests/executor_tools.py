"""Sync tools defined at module level, so that every executor can run them: CPU-bound work,
sleeps that report when they ran and where, crashes, hangs and a flaky call."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from planweave import RetryTool, ToolFailed, tool


@tool
def spin(seconds: float) -> int:
    """Burns CPU in pure Python (holding the GIL) for about `seconds`; returns the loop count."""
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


@tool
def nap(seconds: float) -> list[float]:
    """Sleeps; returns [pid, wall-clock start, wall-clock end] as seen where it ran."""
    start = time.time()
    time.sleep(seconds)
    return [float(os.getpid()), start, time.time()]


@tool
def meet(folder: str, label: str, of: int) -> list[float]:
    """Arrives at a meeting in `folder` (a file named `label`) and waits there, up to 30 s,
    until `of` calls have arrived, wherever they run; returns [pid, wall-clock arrival,
    wall-clock departure] as seen where it ran."""
    start = time.time()
    Path(folder, label).touch()
    deadline = time.monotonic() + 30
    while (arrived := len(os.listdir(folder))) < of:
        if time.monotonic() > deadline:
            raise ToolFailed(f"{arrived} of {of} calls met in 30 s")
        time.sleep(0.01)
    return [float(os.getpid()), start, time.time()]


@tool
def square(x: int) -> int:
    """x squared."""
    return x * x


@tool
def add(a: int, b: int) -> int:
    """a plus b."""
    return a + b


@tool
def pid() -> int:
    """The id of the process the call ran in."""
    return os.getpid()


@tool
def refuse(x: int) -> int:
    """Always fails for good."""
    raise ToolFailed(f"no answer for {x}")


@tool
def divide(a: float, b: float) -> float:
    """a divided by b (b = 0 raises ZeroDivisionError)."""
    return a / b


@tool(timeout=0.5)
def hang(x: int) -> int:
    """Holds the GIL in a busy loop far beyond its 0.5 s timeout."""
    spin.fn(3600)
    return x


@tool
def hard_exit(code: int) -> int:
    """Ends the process it runs in at once, as a crashing native library would."""
    os._exit(code)


@tool
def segfault() -> int:
    """Reads address 0: a segmentation fault."""
    return len(ctypes.string_at(0))


@tool
def flaky(path: str, failures: int) -> int:
    """Raises RetryTool the first `failures` times it is called with `path` (counted in that
    file, which every process sees); then returns the number of calls."""
    counter = Path(path)
    calls = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(calls))
    if calls <= failures:
        raise RetryTool(f"try again (call {calls})")
    return calls


@tool(executor="process")
def pinned_to_process() -> int:
    """Always runs in the process pool."""
    return os.getpid()


@tool(resources={"node2": 1})
def on_node2() -> str:
    """Needs a resource only the second Ray node has; returns the node it ran on."""
    import ray

    return str(ray.get_runtime_context().get_node_id())


@tool(resources={"node3": 1})
def on_node3() -> str:
    """Needs a resource no Ray node has."""
    return "never"


@tool
def node_id() -> str:
    """The Ray node it ran on."""
    import ray

    return str(ray.get_runtime_context().get_node_id())


@tool(timeout=1.0)
def hang_recording(path: str) -> int:
    """Writes its process id to `path`, then holds the GIL far beyond its 1 s timeout."""
    Path(path).write_text(str(os.getpid()))
    spin.fn(3600)
    return 0


@tool(memory=1_500_000_000)
def allocate(megabytes: int) -> int:
    """Allocates `megabytes` MB; runs with a 1.5 GB address-space limit in the process pool."""
    return len(bytearray(megabytes * 1_000_000))


@tool
def where() -> str:
    """Where the call ran: "ray" (a Ray worker), "pool" (a worker process), "main"."""
    if "default_worker" in sys.argv[0]:
        return "ray"
    return "pool" if multiprocessing.parent_process() is not None else "main"


@tool(cpus=2)
def nap_wide(seconds: float) -> list[float]:
    """Sleeps like `nap`, holding two CPUs (two of the pool's workers)."""
    return nap.fn(seconds)


@tool
async def make_lock() -> Any:
    """An object that cannot be pickled (made on the event loop: an async tool)."""
    return threading.Lock()


@tool
def describe(x: Any) -> str:
    """The type of its input."""
    return type(x).__name__


SAFE = [
    spin,
    nap,
    square,
    add,
    pid,
    refuse,
    divide,
    hang,
    flaky,
    hang_recording,
    allocate,
    where,
    make_lock,
    describe,
]
CRASHING = [hard_exit, segfault]
