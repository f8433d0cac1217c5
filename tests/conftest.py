from __future__ import annotations

import pytest

import demo_tools


@pytest.fixture(autouse=True)
def _reset_gauge() -> None:
    demo_tools.GAUGE.__init__()  # type: ignore[misc]
