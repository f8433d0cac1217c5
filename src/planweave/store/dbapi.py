"""The parts of DB-API 2.0 the journal's SQL goes through, on either backend: a write
transaction's `Connection`, its `Cursor`, and a `Row`, read by column name or position
(`dict(row)` gives it all, as sqlite3.Row does).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

__all__ = ["Connection", "Cursor", "Row"]


class Row(Protocol):
    """A row read back: its columns by name or position (`dict(row)` gives them all)."""

    def keys(self) -> Iterable[str]: ...

    def __getitem__(self, key: str | int, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A write transaction's connection: each statement runs inside the transaction."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...
