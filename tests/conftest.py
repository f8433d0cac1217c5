from __future__ import annotations

from collections.abc import Iterator

import pytest

import demo_tools


@pytest.fixture(autouse=True)
def _reset_gauge() -> Iterator[None]:
    demo_tools.GAUGE.__init__()  # type: ignore[misc]
    return
