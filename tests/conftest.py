from __future__ import annotations

from collections.abc import Iterator

import pytest

import demo_tools
from planweave import ScriptedServer
from postgres_server import journal_db, postgres_server  # noqa: F401  (fixtures)


@pytest.fixture(autouse=True)
def _reset_gauge() -> None:
    demo_tools.GAUGE.__init__()  # type: ignore[misc]


@pytest.fixture(autouse=True)
def _own_user_data(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user data directory (the default journal, the seal key) is each test's own, for the
    CLI in this process and in the subprocesses it starts: never the user's."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data")))


@pytest.fixture
def server_factory() -> Iterator[type[ScriptedServer]]:
    """ScriptedServer, each one started in the test stopped when it ends."""
    servers: list[ScriptedServer] = []

    class Tracked(ScriptedServer):
        def start(self) -> ScriptedServer:
            servers.append(self)
            return super().start()

    yield Tracked
    for server in servers:
        server.stop()


MODEL_TIMEOUT_S = 300


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # What needs a model, a browser or Ray takes seconds: `-m "not slow"` leaves it out too.
    for item in items:
        if any(item.get_closest_marker(name) for name in ("model", "browser", "ray")):
            item.add_marker(pytest.mark.slow)
        # A model test decodes on the CPU: on two cores shared with two other busy jobs its
        # 10-20 s took over 60 s (six timeouts in a loaded run).  Its own bound, if any, holds.
        if item.get_closest_marker("model") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(MODEL_TIMEOUT_S))
