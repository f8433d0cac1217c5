"""The journal in an SQLite file, the embedded default: opening, recognising and migrating it,
its write transactions, its errors.

A planweave journal file is stamped with `PRAGMA application_id` (so a foreign database is
refused instead of written into) and `PRAGMA user_version` (the number of migrations applied; a
file from a newer planweave is refused instead of misread).  WAL mode lets readers and one
writer work at once across processes; `BEGIN IMMEDIATE` takes the write lock up front, so a busy
database waits (busy_timeout) instead of failing with "database is locked", and every write
transaction is serialized with every other.  Commits rely on WAL's ordering, which survives a
killed process; a durable one is fsynced (`synchronous=FULL` for that commit).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import JournalError
from .base import Dialect
from .dbapi import Row
from .schema import APPLICATION_ID, MIGRATIONS, THREAD_OF, USER_OF

__all__ = ["DIALECT", "SQLite"]

BUSY_TIMEOUT_S = 30.0

DIALECT = Dialect(
    name="sqlite",
    thread_of=THREAD_OF,
    user_of=USER_OF,
)


class SQLite:
    """One journal file, one connection, shared by the threads of this process."""

    dialect = DIALECT

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        """Open (creating or migrating as needed) the journal at `path`; with `read_only`, open
        an existing one for reading only (a read-only folder, someone else's file)."""
        self.path = path
        self.location = str(path)
        self.read_only = read_only
        self._conn = _connect_read_only(path) if read_only else _connect(path)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextlib.contextmanager
    def _errors(self, run_id: str | None = None, *, doing: str = "write") -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            code = getattr(exc, "sqlite_errorcode", None)
            if code == sqlite3.SQLITE_FULL:
                why = "the disk (or the journal's size limit) is full"
            elif code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                why = "the database stayed locked by another process for too long"
            elif code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
                why = f"the file is damaged ({exc}); copy what can be read with sqlite3's .recover"
            elif code == sqlite3.SQLITE_READONLY or self.read_only:
                why = f"it is open read-only here ({exc})"
            else:
                why = f"SQLite failed: {exc}"
            raise JournalError(
                f"cannot {doing} the journal {self.path}: {why}",
                path=str(self.path),
                run_id=run_id,
            ) from exc

    @contextlib.contextmanager
    def transaction(
        self, *, durable: bool = False, run_id: str | None = None
    ) -> Iterator[sqlite3.Connection]:
        """One write transaction (`BEGIN IMMEDIATE`): committed when the block ends, rolled
        back when it raises; `durable` commits with `synchronous=FULL`."""
        with self._lock, self._errors(run_id):
            conn = self._conn
            if durable:
                conn.execute("PRAGMA synchronous=FULL")
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            finally:
                if durable:
                    conn.execute("PRAGMA synchronous=NORMAL")

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
        with self._lock, self._errors(doing="read"):
            rows: list[Row] = self._conn.execute(sql, params).fetchall()
            return rows


def _connect(path: Path) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise JournalError(
            f"cannot create the journal's folder {path.parent}: {exc.strerror or exc}",
            path=str(path),
        ) from exc
    try:
        conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise JournalError(f"cannot open the journal {path}: {exc}", path=str(path)) from exc
    try:
        _check(conn, path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        _migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise _unusable(path, exc) from exc
    except JournalError:
        conn.close()
        raise
    return conn


_UNWRITABLE = frozenset(
    {sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH}
)


def _unusable(path: Path, exc: sqlite3.Error) -> JournalError:
    code = getattr(exc, "sqlite_errorcode", None)
    if code in _UNWRITABLE:
        why = f"cannot write the journal {path} ({exc}): it or its folder is read-only here"
    elif code == sqlite3.SQLITE_CORRUPT:  # its schema is in the damaged part
        why = (
            f"cannot open the journal {path}: the file is damaged ({exc}); copy what can be "
            "read with sqlite3's .recover"
        )
    else:
        why = f"{path} is not a usable planweave journal ({exc})"
    return JournalError(f"{why}; nothing was written to it", path=str(path))


def _connect_read_only(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise JournalError(f"there is no journal at {path}", path=str(path))
    uri = path.resolve().as_uri()
    # A WAL database needs its -shm file to be read; in a folder nobody may write, where none
    # can be made, it is read as immutable: nothing can change it meanwhile anyway.
    last: sqlite3.Error | None = None
    for query in ("mode=ro", "mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(
                f"{uri}?{query}",
                uri=True,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            last = exc
            continue
        try:
            _check(conn, path)
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            conn.close()
            last = exc
            continue
        except JournalError:
            conn.close()
            raise
        if version < len(MIGRATIONS):
            conn.close()
            raise JournalError(
                f"{path} has an older journal schema ({version}) that must be migrated before "
                "it can be read, and it cannot be written here",
                path=str(path),
            )
        return conn
    assert last is not None
    raise JournalError(
        f"{path} is not a readable planweave journal ({last})", path=str(path)
    ) from last


def _check(conn: sqlite3.Connection, path: Path) -> None:
    # One read transaction: another process may be creating the schema meanwhile.
    conn.execute("BEGIN")
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    finally:
        conn.execute("COMMIT")
    if app_id != APPLICATION_ID and (app_id != 0 or tables or version):
        raise JournalError(
            f"{path} is an SQLite database of another application, not a planweave journal; "
            "pass another path with --db or PLANWEAVE_DB",
            path=str(path),
        )
    if version > len(MIGRATIONS):
        raise JournalError(
            f"{path} was written by a newer planweave (journal schema {version}; this version "
            f"knows up to {len(MIGRATIONS)}): upgrade planweave to read it",
            path=str(path),
        )


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    while True:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version >= len(MIGRATIONS):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while this one waited for the lock.
            if conn.execute("PRAGMA user_version").fetchone()[0] == version:
                for statement in MIGRATIONS[version]:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version={version + 1}")
                conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        _check(conn, path)
