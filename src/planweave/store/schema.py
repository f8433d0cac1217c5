"""Opening a journal file: recognising it, numbered migrations, connection settings.

A planweave journal is an SQLite database stamped with `PRAGMA application_id` (so a foreign
database is refused instead of written into) and `PRAGMA user_version` (the number of migrations
applied; a file from a newer planweave is refused instead of misread).  WAL mode lets readers and
one writer work at once across processes; `BEGIN IMMEDIATE` takes the write lock up front, so a
busy database waits (busy_timeout) instead of failing with "database is locked".
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..errors import JournalError

__all__ = ["APPLICATION_ID", "MIGRATIONS", "THREAD_OF", "connect"]

APPLICATION_ID = 0x706C7776  # "plwv"

# A run's thread, from its settings (`RunSettings.thread`); null for settings that are not JSON
# or a thread that is no text (a damaged or hostile row must not make every query over the
# runs fail).  Queries spell it
# exactly so, for the index of migration 8 to serve them.
THREAD_OF = (
    "(CASE WHEN json_valid(settings) AND json_type(settings, '$.thread') = 'text' "
    "THEN json_extract(settings, '$.thread') END)"
)
BUSY_TIMEOUT_S = 30.0

# Each migration is a list of statements, applied in one transaction; never edit a released one.
MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            question TEXT NOT NULL,
            mode TEXT NOT NULL,
            status TEXT NOT NULL,
            answer TEXT,
            error TEXT,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            wall_s REAL,
            settings TEXT NOT NULL DEFAULT '{}',
            pid INTEGER,
            host TEXT,
            llm TEXT NOT NULL DEFAULT '{}',
            replans INTEGER NOT NULL DEFAULT 0,
            sessions INTEGER NOT NULL DEFAULT 1,
            cancel_requested INTEGER NOT NULL DEFAULT 0
        )""",
        "CREATE INDEX runs_by_created ON runs (created DESC)",
        """CREATE TABLE tasks (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            id INTEGER NOT NULL,
            plan_round INTEGER NOT NULL DEFAULT 0,
            tool TEXT NOT NULL,
            args TEXT NOT NULL,
            call TEXT NOT NULL,
            deps TEXT NOT NULL,
            thought TEXT,
            side_effects INTEGER NOT NULL DEFAULT 0,
            status TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            arguments TEXT,
            result TEXT,
            error TEXT,
            started REAL,
            ended REAL,
            PRIMARY KEY (run_id, id)
        )""",
        """CREATE TABLE llm_calls (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            session INTEGER NOT NULL,
            call INTEGER NOT NULL,
            purpose TEXT NOT NULL,
            model TEXT NOT NULL,
            request_hash TEXT NOT NULL,
            status TEXT NOT NULL,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            duration REAL,
            text TEXT,
            error TEXT,
            started REAL,
            PRIMARY KEY (run_id, session, call)
        )""",
        """CREATE TABLE events (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            session INTEGER NOT NULL,
            t REAL NOT NULL,
            kind TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, seq)
        )""",
    ],
    # 2: what recovery did to each task (a JSON list, as in `--json`'s `recovery`).
    ["ALTER TABLE tasks ADD COLUMN recovery TEXT"],
    # 3: a failed run's partial results as text (as in `--json`'s `partial`).
    ["ALTER TABLE runs ADD COLUMN partial TEXT"],
    # 4: the plan cache's templates (keyed by the tool registry's signature), and what the
    # cache did for a run (as in `--json`'s `cache`).
    [
        """CREATE TABLE plan_templates (
            tools TEXT NOT NULL,
            id TEXT NOT NULL,
            key TEXT NOT NULL,
            slots TEXT NOT NULL,
            plan TEXT NOT NULL,
            question TEXT NOT NULL,
            source_run TEXT,
            tokens INTEGER NOT NULL DEFAULT 0,
            created REAL NOT NULL,
            used REAL NOT NULL,
            hits INTEGER NOT NULL DEFAULT 0,
            good INTEGER NOT NULL DEFAULT 0,
            bad INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (tools, id)
        )""",
        "CREATE INDEX plan_templates_by_use ON plan_templates (used DESC)",
        "ALTER TABLE runs ADD COLUMN cache TEXT",
    ],
    # 5: the elements of fan-out tasks (`$N[*]`), each its own step keyed by (run, task, item);
    # `call` is the element's tool and resolved arguments, its identity on resume.
    [
        """CREATE TABLE task_items (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            task_id INTEGER NOT NULL,
            item INTEGER NOT NULL,
            call TEXT NOT NULL,
            status TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            arguments TEXT,
            result TEXT,
            error TEXT,
            recovery TEXT,
            started REAL,
            ended REAL,
            PRIMARY KEY (run_id, task_id, item)
        )""",
    ],
    # 6: each row's seal (`store.seal`): an HMAC under this user's journal key, checked before
    # a resume replays anything; rows written before it have none.
    [
        "ALTER TABLE runs ADD COLUMN mac TEXT",
        "ALTER TABLE tasks ADD COLUMN mac TEXT",
        "ALTER TABLE task_items ADD COLUMN mac TEXT",
        "ALTER TABLE llm_calls ADD COLUMN mac TEXT",
        "ALTER TABLE events ADD COLUMN mac TEXT",
        # The fold of all the run's seals, sealed itself: a row deleted or put back as an
        # older copy changes it (`seal.fold`).
        "ALTER TABLE runs ADD COLUMN tally TEXT",
    ],
    # 7: each plan cache template's seal (`seal.TEMPLATE_SEALED`).  Templates stored before it
    # have none: the cache does not use them (an edited one would look the same) and learns
    # their shapes again from the next good run, which replaces them.
    ["ALTER TABLE plan_templates ADD COLUMN mac TEXT"],
    # 8: a conversation's runs (`RunSettings.thread`, in the sealed settings), found in order.
    [f"CREATE INDEX runs_by_thread ON runs ({THREAD_OF}, created)"],
]


def connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    """Open (creating or migrating as needed) the journal at `path`; with `read_only`, open an
    existing one for reading only (a read-only folder, someone else's file)."""
    if read_only:
        return _connect_read_only(path)
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
