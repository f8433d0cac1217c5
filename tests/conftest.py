from __future__ import annotations

import pytest

import demo_tools


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
