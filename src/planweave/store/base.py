"""What a journal's storage offers, and what a database under it provides: the contracts.

`Journal` keeps runs through its own methods (create, claim, record, read back).  A table
another part of planweave owns in the same database (the plan cache's templates: `cache.table`)
is read and written through `Storage` alone: a read, a write transaction, and this user's
sealer.  Nothing outside `store` reaches into a journal's connection or its private methods.

Under a journal is a `Backend`, one module per database: `sqlite` (a file, the embedded
default) and `postgres` (a server, `postgresql://...`).  A backend opens and migrates its
database, runs reads and write transactions, and translates its errors into `JournalError`;
everything above it (projection, views, seals, the cache's table) sends the same SQL to both,
written in what SQLite and PostgreSQL share (`?` placeholders, which the PostgreSQL backend
rewrites), except the few expressions its `Dialect` spells.

`Connection`, `Cursor` and `Row` (`dbapi`) are the parts of DB-API 2.0 the callers use.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from .dbapi import Connection, Cursor, Row
from .seal import Sealer

__all__ = ["Backend", "Connection", "Cursor", "Dialect", "Row", "Storage"]


@dataclass(frozen=True)
class Dialect:
    """The SQL expressions that differ between the databases; everything else is shared."""

    name: str  # "sqlite" or "postgresql"
    # A run's thread, and its user, from its settings' JSON (null: none, not text, or the
    # settings are no JSON: a damaged row must not make every query over the runs fail).
    thread_of: str
    user_of: str


class Storage(Protocol):
    """A journal's database as other tables in it see it.

    Errors of the database come out as `JournalError` (naming the file, or the server's URL
    with its password masked); a read-only journal raises it on every write."""

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> Sequence[Row]:
        """The rows `sql` selects, read outside any write transaction."""
        ...

    def transaction(
        self, *, durable: bool = False, run_id: str | None = None
    ) -> AbstractContextManager[Connection]:
        """One write transaction, serialized with every other one that writes the same run
        (on SQLite: with every other one): committed when the block ends, rolled back when it
        raises.  `durable`: its commit is on disk before the block returns (a side effect
        about to start); `run_id`: the run it writes, which a failure names."""
        ...

    def sealer(self) -> Sealer:
        """This user's sealer (`seal`), for the rows a caller seals itself; JournalError when
        the key can be neither read nor made."""
        ...


class Backend(Protocol):
    """One open database under a journal (`sqlite.SQLite`, `postgres.Postgres`)."""

    # What a person is shown: the file's path, or the URL with its credentials masked.
    location: str
    read_only: bool
    dialect: Dialect

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Row]: ...

    def transaction(
        self, *, durable: bool = False, run_id: str | None = None
    ) -> AbstractContextManager[Connection]: ...

    def close(self) -> None: ...
