"""A real `planweave serve` app for tests: uvicorn on a free loopback port in a thread, and the
event stream read the way a client reads it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2 as httpx
import uvicorn

from planweave import Runtime
from planweave.server import ServerConfig, create_app


@contextmanager
def serving(runtime: Runtime, config: ServerConfig) -> Iterator[str]:
    """`runtime` served on a free loopback port; yields its base URL.  Closes the runtime's
    journal once the server has stopped."""
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(runtime, config),
            host="127.0.0.1",
            port=0,
            log_level="warning",
            ws="none",
            timeout_graceful_shutdown=2,
        )
    )
    thread = threading.Thread(target=server.run, name="planweave-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        if runtime.journal is not None:
            runtime.journal.close()


def events(http: httpx.Client, run_id: str, **headers: str) -> list[dict[str, Any]]:
    """The run's SSE stream, read to its end: each event's `id` (or None) and `data`."""
    out: list[dict[str, Any]] = []
    event: dict[str, Any] = {}
    with http.stream("GET", f"/runs/{run_id}/events", headers=headers) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line:
                if "data" in event:
                    out.append({"id": event.get("id"), "data": json.loads(event["data"])})
                event = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(": ")
                event[name] = value
    return out
