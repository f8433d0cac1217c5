"""The journal in a PostgreSQL database (`--db postgresql://...`, `PLANWEAVE_DB`): psycopg 3,
the `postgres` extra.

The same tables as SQLite's (`schema.POSTGRES_SCHEMA`, at the same version numbers), the same
SQL from the layers above: `?` placeholders become psycopg's `%s` here, booleans are stored as
0 and 1, and NUL characters (which PostgreSQL text cannot hold) as U+FFFD.

A write transaction takes a transaction-level advisory lock of the run it writes first (the
plan cache's writes, which name no run, share one of their own), so that the writes of one run
are serialized across processes as SQLite's `BEGIN IMMEDIATE` serializes them all: a claim
reads and takes its run at once, an event's sequence number is the next one, a step's key
holds one call, a run's tally folds every seal.  Commits are asynchronous
(`synchronous_commit=off`: a crash of the server, not of this process, may lose the last
fraction of a second, never half a transaction), except a durable one, which waits for its
WAL to be flushed, like SQLite's `synchronous=FULL` commit.

The URL's password is never shown: the journal is named by `shown`'s form of it (everything
between `://` and the last `@` masked, however malformed the URL, then `redact_url`), and the
password is a known secret (`redaction.add_secret`) for every error text.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..errors import JournalError, UserError
from ..redaction import add_secret, mask_userinfo, redact_url
from .base import Dialect
from .dbapi import Row
from .schema import POSTGRES_BASE, POSTGRES_MIGRATIONS, POSTGRES_SCHEMA, VERSION

if TYPE_CHECKING:
    import psycopg

__all__ = ["ACCEPTED", "DIALECT", "SCHEMES", "Postgres", "is_url", "libpq_url"]

SCHEMES = ("postgresql://", "postgres://")
INSTALL = "pip install 'planweave[postgres]'"
LOCK_TIMEOUT_S = 30  # how long a write waits for another writer of its run (SQLite: busy_timeout)
CONNECT_TIMEOUT_S = 10

DIALECT = Dialect(
    name="postgresql",
    thread_of="planweave_json_text(settings, 'thread')",
    user_of="planweave_json_text(settings, 'user')",
)


# A URL's scheme: a letter, then letters, digits, `+`, `-` or `.`; two characters at least, so
# that a Windows drive (`C://...`) is a path.
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]+)://")
ACCEPTED = (
    "postgresql://... or postgres://... (any case, and with a driver suffix such as "
    "postgresql+psycopg://...) for a PostgreSQL database, or a file's path for SQLite"
)


def is_url(target: object) -> bool:
    """Whether `target` (a `--db` value) names a PostgreSQL database rather than a file:
    `postgresql://` or `postgres://`, in any case, a `+driver` suffix taken (SQLAlchemy's
    spelling).  UserError for a URL of any other scheme (`mysql://`, `sqlite://`, `http://`),
    which would otherwise be taken as a file's path; it names the scheme only, never the rest
    of the URL, which may hold a password."""
    if not isinstance(target, str):
        return False
    found = _SCHEME.match(target)
    if found is None:
        return False
    if found.group(1).lower().partition("+")[0] in ("postgresql", "postgres"):
        return True
    raise UserError(
        f"the journal (--db, PLANWEAVE_DB) cannot be a {found.group(1)[:40]}:// URL: give "
        f"{ACCEPTED}"
    )


def libpq_url(url: str) -> str:
    """`url` (one `is_url` takes) as libpq reads it: `postgresql://`, lower case, no driver."""
    found = _SCHEME.match(url)
    return url if found is None else "postgresql://" + url[found.end() :]


def shown(url: str) -> str:
    """`url` as messages name it: everything between `://` and its last `@` masked (whatever
    libpq or `urlsplit` make of a malformed one), its query's credentials and every known
    secret too."""
    return redact_url(mask_userinfo(url))


class Postgres:
    """One journal database, one connection, shared by the threads of this process."""

    dialect = DIALECT

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        """Connect to the journal at `url`, making its tables or migrating them as needed;
        with `read_only`, one whose tables exist, for reading only."""
        url = libpq_url(url)
        self.location = shown(url)
        self.read_only = read_only
        self._url = url
        self._lock = threading.Lock()
        try:
            import psycopg
        except ImportError as exc:
            raise JournalError(
                f"a journal on PostgreSQL ({self.location}) needs its extra: {INSTALL}",
                path=self.location,
            ) from exc
        self._psycopg = psycopg
        # The password as this reads it, and as libpq does (which may differ for a malformed
        # URL), are secrets before anything is said of the URL.
        password = url.partition("://")[2].rpartition("@")[0].partition(":")[2]
        add_secret(password)
        add_secret(unquote(password))
        try:
            add_secret(psycopg.conninfo.conninfo_to_dict(url).get("password"))  # type: ignore[arg-type]
        except psycopg.ProgrammingError:  # its text may quote the password
            self.location = shown(url)
            raise JournalError(
                f"{self.location} is not a PostgreSQL URL this can read", path=self.location
            ) from None
        self.location = shown(url)
        self._conn = self._connect()
        # A journal nobody closed closes its connection when it is collected, like sqlite3's.
        self._held = [self._conn]
        weakref.finalize(self, _close_all, self._held)

    def _connect(self) -> psycopg.Connection[Any]:
        pg = self._psycopg
        try:
            conn: psycopg.Connection[Any] = pg.connect(
                self._url,
                autocommit=True,
                row_factory=_rows,
                connect_timeout=CONNECT_TIMEOUT_S,
                application_name="planweave",
            )
        except pg.Error as exc:
            raise JournalError(
                f"cannot open the journal {self.location}: {_said(exc)}", path=self.location
            ) from exc
        try:
            conn.execute("SET synchronous_commit = off")
            conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT_S}s'")
            if self.read_only:
                conn.execute("SET default_transaction_read_only = on")
                _check(conn, self.location, read_only=True)
            else:
                _migrate(conn, self.location)
        except pg.Error as exc:
            conn.close()
            raise JournalError(
                f"{self.location} is not a usable planweave journal ({_said(exc)}); nothing was "
                "written to it",
                path=self.location,
            ) from exc
        except JournalError:
            conn.close()
            raise
        return conn

    def _live(self) -> psycopg.Connection[Any]:
        """The connection, made again if the last one was lost (the server restarted)."""
        if self._conn.closed or self._conn.broken:
            self._conn.close()
            self._conn = self._connect()
            self._held[:] = [self._conn]
        return self._conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextlib.contextmanager
    def _errors(self, run_id: str | None = None, *, doing: str = "write") -> Iterator[None]:
        errors = self._psycopg.errors
        try:
            yield
        except self._psycopg.Error as exc:
            if isinstance(exc, errors.DiskFull | errors.OutOfMemory):
                why = "the server's disk is full"
            elif isinstance(exc, errors.LockNotAvailable):
                why = "another process held the run for too long"
            elif isinstance(exc, errors.ReadOnlySqlTransaction) or self.read_only:
                why = f"it is open read-only here ({_said(exc)})"
            elif isinstance(exc, self._psycopg.OperationalError):
                why = f"the server cannot be reached ({_said(exc)})"
            else:
                why = f"PostgreSQL failed: {_said(exc)}"
            raise JournalError(
                f"cannot {doing} the journal {self.location}: {why}",
                path=self.location,
                run_id=run_id,
            ) from exc

    @contextlib.contextmanager
    def transaction(self, *, durable: bool = False, run_id: str | None = None) -> Iterator[Writer]:
        """One write transaction, holding run `run_id`'s lock: committed when the block ends,
        rolled back when it raises; `durable` waits for its commit to be flushed."""
        with self._lock, self._errors(run_id):
            conn = self._live()
            with conn.transaction():
                if durable:
                    conn.execute("SET LOCAL synchronous_commit = on")
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(run_id),))
                yield Writer(conn)

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
        with self._lock, self._errors(doing="read"):
            rows: list[Row] = self._live().execute(_sql(sql), _params(params)).fetchall()
            return rows


class Writer:
    """A write transaction's connection, taking the shared SQL (`?` placeholders)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> psycopg.Cursor[Any]:
        return self._conn.execute(_sql(sql), _params(parameters))


def _close_all(held: list[psycopg.Connection[Any]]) -> None:
    for conn in held:
        conn.close()


def lock_key(run_id: str | None) -> int:
    """The advisory lock of run `run_id` (None: the writes that name no run), a signed 64-bit
    number from its id."""
    digest = hashlib.blake2b(f"planweave\0{run_id or ''}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


_SCHEMA_LOCK = lock_key("\0schema")


@functools.lru_cache(maxsize=512)
def _sql(sql: str) -> str:
    """The shared SQL in psycopg's spelling: `?` outside quotes is `%s`, a literal `%` is `%%`."""
    out: list[str] = []
    quoted = False
    for ch in sql:
        if ch == "'":
            quoted = not quoted
        out.append("%%" if ch == "%" else "%s" if ch == "?" and not quoted else ch)
    return "".join(out)


def _params(params: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(
        int(p)
        if isinstance(p, bool)
        else p.replace("\0", "\ufffd")
        if isinstance(p, str) and "\0" in p
        else p
        for p in params
    )


class PgRow:
    """A row by column name or position, as sqlite3.Row reads it (`dict(row)` gives it all)."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: dict[str, int], values: Sequence[Any]) -> None:
        self._index = index
        self._values = values

    def keys(self) -> list[str]:
        return list(self._index)

    def __getitem__(self, key: str | int) -> Any:
        return self._values[self._index[key] if isinstance(key, str) else key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"PgRow({dict(zip(self._index, self._values, strict=True))!r})"


def _rows(cursor: Any) -> Any:
    """psycopg's row factory for `PgRow`."""
    names = [c.name for c in cursor.description or ()]
    index: dict[str, int] = {}
    for i, name in enumerate(names):
        index.setdefault(name, i)

    def make(values: Sequence[Any]) -> PgRow:
        return PgRow(index, values)

    return make


def _said(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _value(conn: psycopg.Connection[Any], sql: str) -> Any:
    found = conn.execute(sql).fetchone()
    return None if found is None else found[0]


def _version(conn: psycopg.Connection[Any], location: str) -> int | None:
    """The journal schema's version, or None where there is no journal; JournalError for a
    table `planweave_schema` no planweave wrote (no row, a version that is no whole number, or
    one below `POSTGRES_BASE`, the first a journal on PostgreSQL has)."""
    if not _value(conn, "SELECT to_regclass('planweave_schema') IS NOT NULL"):
        return None
    found = _value(conn, "SELECT max(version) FROM planweave_schema")
    if isinstance(found, int) and not isinstance(found, bool) and found >= POSTGRES_BASE:
        return found
    raise JournalError(
        f"{location} has a table planweave_schema that no planweave wrote (its version is "
        f"{repr(found)[:40]}, where a journal on PostgreSQL has {POSTGRES_BASE} or later); pass "
        "another database (or schema) with --db or PLANWEAVE_DB",
        path=location,
    )


def _check(conn: psycopg.Connection[Any], location: str, *, read_only: bool = False) -> int:
    """The journal's version, if this planweave can read it."""
    version = _version(conn, location)
    if version is None:
        if _value(conn, "SELECT to_regclass('runs') IS NOT NULL"):
            raise JournalError(
                f"{location} has a table `runs` of another application, and no planweave "
                "journal; pass another database (or schema) with --db or PLANWEAVE_DB",
                path=location,
            )
        if read_only:
            raise JournalError(f"there is no journal at {location}", path=location)
        return 0
    if version > VERSION:
        raise JournalError(
            f"{location} was written by a newer planweave (journal schema {version}; this "
            f"version knows up to {VERSION}): upgrade planweave to read it",
            path=location,
        )
    if read_only and version < VERSION:
        raise JournalError(
            f"{location} has an older journal schema ({version}) that must be migrated before "
            "it can be read, and it cannot be written here",
            path=location,
        )
    return version


def _migrate(conn: psycopg.Connection[Any], location: str) -> None:
    """Make the tables at `POSTGRES_BASE`, then apply the later migrations, in one transaction
    that holds the schema's lock: two processes starting at once make them once."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        version = _check(conn, location)
        if version == 0:
            for statement in POSTGRES_SCHEMA:
                conn.execute(statement)
            conn.execute("CREATE TABLE planweave_schema (version BIGINT NOT NULL)")
            conn.execute("INSERT INTO planweave_schema VALUES (%s)", (POSTGRES_BASE,))
            version = POSTGRES_BASE
        for number in range(version + 1, VERSION + 1):
            for statement in POSTGRES_MIGRATIONS[number - POSTGRES_BASE - 1]:
                conn.execute(statement)
            conn.execute("UPDATE planweave_schema SET version = %s", (number,))
