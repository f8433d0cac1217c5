"""What a journal's storage offers beyond its runs: the contract a second backend implements.

`Journal` keeps runs through its own methods (create, claim, record, read back).  A table
another part of planweave owns in the same file (the plan cache's templates: `cache.table`) is
read and written through `Storage` alone: a read, a write transaction, and this user's sealer.
Nothing outside `store` reaches into a journal's connection or its private methods; a backend
on another database (PostgreSQL) implements these three methods and the journal's public ones.

`Connection`, `Cursor` and `Row` are the parts of DB-API 2.0 the callers use; the SQL they send
is the backend's (SQLite's here).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .seal import Sealer

__all__ = ["Connection", "Cursor", "Row", "Storage"]


class Row(Protocol):
    """A row read back: its columns by name (`dict(row)` gives them all)."""

    def keys(self) -> Iterable[str]: ...

    def __getitem__(self, key: str, /) -> Any: ...


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    @property
    def description(self) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """A write transaction's connection: each statement runs inside the transaction."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...


class Storage(Protocol):
    """A journal's file as other tables in it see it.

    Errors of the database come out as `JournalError` (with the file's path); a read-only
    journal raises it on every write."""

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> Sequence[Row]:
        """The rows `sql` selects, read outside any write transaction."""
        ...

    def transaction(
        self, *, durable: bool = False, run_id: str | None = None
    ) -> AbstractContextManager[Connection]:
        """One write transaction, taken with the write lock up front: committed when the block
        ends, rolled back when it raises.  `durable`: its commit is flushed to disk before
        the block returns (a side effect about to start); `run_id`: the run a failure names."""
        ...

    def sealer(self) -> Sealer:
        """This user's sealer (`seal`), for the rows a caller seals itself; JournalError when
        the key can be neither read nor made."""
        ...
