"""A journal file is untrusted: a stored value written by hand can name any class and hold any
shape.  Decoding it must never import a module, call a class of the wrong kind, or crash."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from planweave.store import Unstorable, decode

TAG = "__pw__"


@pytest.mark.parametrize(
    ("tag", "raw"),
    [
        ("enum", ["touch", "/tmp/planweave-pwned"]),
        ("path", ["touch", "/tmp/planweave-pwned"]),
        ("dataclass", {"args": ["touch", "/tmp/planweave-pwned"]}),
        ("model", {"args": ["touch"]}),
    ],
)
def test_a_stored_value_cannot_call_a_class_of_another_kind(tag: str, raw: object) -> None:
    assert "subprocess" in sys.modules  # imported: only the kind check stands in the way
    marker = Path("/tmp/planweave-pwned")
    marker.unlink(missing_ok=True)
    with pytest.raises(Unstorable, match="subprocess:Popen is not"):
        decode({TAG: tag, "cls": "subprocess:Popen", "v": raw})
    assert not marker.exists()


def test_a_stored_value_cannot_import_a_module() -> None:
    sys.modules.pop("antigravity", None)
    with pytest.raises(Unstorable, match="must be imported first"):
        decode({TAG: "enum", "cls": "antigravity:Thing", "v": 1})
    assert "antigravity" not in sys.modules
    with pytest.raises(Unstorable, match="must be imported first"):
        decode({TAG: "enum", "cls": "enum:_EnumDict", "v": 1})  # no private names either


@pytest.mark.parametrize(
    "damaged",
    [
        {TAG: "tuple", "v": 5},
        {TAG: "dict", "v": [[1]]},
        {TAG: "bytes", "v": "%%%not base64"},
        {TAG: "datetime", "v": "yesterday"},
        {TAG: "enum", "v": 1},
        {TAG: "set", "v": [[1, 2]]},
    ],
)
def test_a_damaged_stored_value_is_unstorable_not_a_traceback(damaged: object) -> None:
    with pytest.raises(Unstorable):
        decode(damaged)
