"""Tool results as JSON that come back as the same kind of Python value.

Plain JSON data is stored as it is.  Anything else is wrapped in a small tagged object:
`{"__pw__": "tuple", "v": [...]}`, `{"__pw__": "model", "cls": "pkg.mod:Name", "v": {...}}` and
so on.  A value with no faithful encoding (an open file, a lambda, a class defined inside a
function) raises `Unstorable` naming its type, before anything is written.

`dumps` and `loads` are the text of the journal's JSON columns.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import json
import math
import sys
import uuid
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel

__all__ = ["Unstorable", "decode", "dumps", "encode", "loads"]

TAG = "__pw__"


class Unstorable(TypeError):
    """A value the journal cannot store faithfully."""


def _class_path(cls: type) -> str:
    if "<locals>" in cls.__qualname__:
        raise Unstorable(
            f"a {cls.__qualname__} object: its class is defined inside a function, so it "
            "could not be imported again to read the value back"
        )
    return f"{cls.__module__}:{cls.__qualname__}"


def _load_class(path: str, kind: Callable[[type], bool], what: str) -> type:
    """The class a stored value names, if it is a `what` (`kind` says).  A journal file is
    untrusted: it may only name classes of modules this process has already imported (the
    tools' modules, imported before a run resumes), through public names, and only classes of
    the kind the tag says; naming anything else cannot import or call code."""
    module, _, qualname = path.partition(":")
    obj: Any = sys.modules.get(module)
    if obj is None or not qualname or any(p.startswith("_") for p in qualname.split(".")):
        raise Unstorable(
            f"the stored value needs class {path}; its module must be imported first "
            "(import the tools that return it before resuming)"
        )
    try:
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except AttributeError as exc:
        raise Unstorable(f"the stored value needs class {path}, which does not exist") from exc
    if not (isinstance(obj, type) and kind(obj)):
        raise Unstorable(f"{path} is not {what}")
    return obj


def _is_enum(cls: type) -> bool:
    return issubclass(cls, enum.Enum)


def _is_model(cls: type) -> bool:
    return issubclass(cls, BaseModel)


def _is_named_tuple(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


def _is_path(cls: type) -> bool:
    return issubclass(cls, PurePath)


def _tagged(tag: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {TAG: tag, **extra, "v": value}


def encode(value: Any) -> Any:
    """A JSON-ready form of `value` from which `decode` rebuilds an equal value."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, enum.Enum):
        return _tagged("enum", encode(value.value), cls=_class_path(type(value)))
    if type(value) is int or type(value) is str:
        return value
    if type(value) is float:
        return value if math.isfinite(value) else _tagged("float", repr(value))
    if type(value) is list:
        return [encode(v) for v in value]
    if type(value) is dict:
        if all(type(k) is str for k in value) and TAG not in value:
            return {k: encode(v) for k, v in value.items()}
        return _tagged("dict", [[encode(k), encode(v)] for k, v in value.items()])
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return _tagged("namedtuple", [encode(v) for v in value], cls=_class_path(type(value)))
    if type(value) in (tuple, set, frozenset):
        return _tagged(type(value).__name__, [encode(v) for v in value])
    if isinstance(value, bytes | bytearray):
        return _tagged(type(value).__name__, base64.b64encode(value).decode("ascii"))
    if isinstance(value, BaseModel):
        return _tagged("model", value.model_dump(mode="json"), cls=_class_path(type(value)))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return _tagged("dataclass", fields, cls=_class_path(type(value)))
    if type(value) is dt.timedelta:
        return _tagged("timedelta", value.total_seconds())
    for cls, tag in _SCALARS:
        if type(value) is cls:
            return _tagged(tag, str(value))
    if isinstance(value, PurePath):
        return _tagged("path", str(value), cls=_class_path(type(value)))
    raise Unstorable(f"a {type(value).__module__}.{type(value).__qualname__} object")


_SCALARS: list[tuple[type, str]] = [
    (dt.datetime, "datetime"),
    (dt.date, "date"),
    (dt.time, "time"),
    (decimal.Decimal, "decimal"),
    (uuid.UUID, "uuid"),
]

_PARSE: dict[str, Any] = {
    "datetime": dt.datetime.fromisoformat,
    "date": dt.date.fromisoformat,
    "time": dt.time.fromisoformat,
    "timedelta": lambda s: dt.timedelta(seconds=s),
    "decimal": decimal.Decimal,
    "uuid": uuid.UUID,
    "float": float,
    "bytes": lambda s: base64.b64decode(s),
    "bytearray": lambda s: bytearray(base64.b64decode(s)),
}


def decode(data: Any) -> Any:
    """The value `encode` was given.  A stored form that is damaged or was written by hand
    (the journal is a file anyone may edit) is an `Unstorable` error, never a traceback."""
    try:
        return _decode(data)
    except Unstorable:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        raise Unstorable(f"a stored value is damaged: {type(exc).__name__}: {exc}") from exc


def _decode(data: Any) -> Any:
    if isinstance(data, list):
        return [_decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    tag = data.get(TAG)
    if tag is None:
        return {k: _decode(v) for k, v in data.items()}
    raw = data["v"]
    match tag:
        case "dict":
            return {_decode(k): _decode(v) for k, v in raw}
        case "tuple":
            return tuple(_decode(v) for v in raw)
        case "namedtuple":
            named = _load_class(data["cls"], _is_named_tuple, "a named tuple")
            return named(*(_decode(v) for v in raw))
        case "set":
            return {_decode(v) for v in raw}
        case "frozenset":
            return frozenset(_decode(v) for v in raw)
        case "enum":
            return _load_class(data["cls"], _is_enum, "an enum")(_decode(raw))
        case "model":
            model = _load_class(data["cls"], _is_model, "a pydantic model")
            return model.model_validate(raw)  # type: ignore[attr-defined]
        case "dataclass":
            cls = _load_class(data["cls"], dataclasses.is_dataclass, "a dataclass")
            fields = {k: _decode(v) for k, v in raw.items()}
            init = {f.name for f in dataclasses.fields(cls) if f.init}
            obj = cls(**{k: v for k, v in fields.items() if k in init})
            for name in fields.keys() - init:
                object.__setattr__(obj, name, fields[name])
            return obj
        case "path":
            return _load_class(data["cls"], _is_path, "a path class")(raw)
        case _ if tag in _PARSE:
            return _PARSE[tag](raw)
    raise Unstorable(f"unknown stored value tag {tag!r}: written by a newer planweave?")


def dumps(value: Any) -> str:
    """A JSON column's text.  ASCII with escapes: valid JSON whatever the text holds (a lone
    surrogate included)."""
    return json.dumps(value, default=str)


def loads(text: str | None) -> Any:
    """A JSON column's value (None for NULL)."""
    return None if text is None else json.loads(text)
