"""The journal's tables, for both databases, at one version number.

SQLite (`sqlite`) builds them by numbered migrations (`MIGRATIONS`), the number applied kept in
`PRAGMA user_version`: a journal file of any earlier planweave opens and is migrated in place.
PostgreSQL (`postgres`) came later: a new database gets the tables as they are at version
`POSTGRES_BASE` in one go (`POSTGRES_SCHEMA`), and its version is kept in the table
`planweave_schema`.  A migration after that is written for both, under the same number: the
SQLite statements appended to `MIGRATIONS`, the PostgreSQL ones to `POSTGRES_MIGRATIONS` (so a
lease table for replicas, say, is migration 9 of both).

`KEYS` names each table's primary key: rows are found by it (PostgreSQL has no `rowid`).
"""

from __future__ import annotations

__all__ = [
    "APPLICATION_ID",
    "KEYS",
    "MIGRATIONS",
    "POSTGRES_BASE",
    "POSTGRES_MIGRATIONS",
    "POSTGRES_SCHEMA",
    "THREAD_OF",
    "USER_OF",
    "VERSION",
    "key_where",
]

APPLICATION_ID = 0x706C7776  # "plwv", SQLite's `PRAGMA application_id` of a journal

# A run's thread, from its settings (`RunSettings.thread`); null for settings that are not JSON
# or a thread that is no text (a damaged or hostile row must not make every query over the
# runs fail).  SQLite's queries spell it exactly so, for the index of migration 8 to serve them.
THREAD_OF = (
    "(CASE WHEN json_valid(settings) AND json_type(settings, '$.thread') = 'text' "
    "THEN json_extract(settings, '$.thread') END)"
)

# A run's user (`RunSettings.user`), guarded as THREAD_OF is; SQLite's queries spell it exactly
# so (`sqlite.DIALECT.user_of`), for the index of migration 11 to serve them.
USER_OF = (
    "(CASE WHEN json_valid(settings) AND json_type(settings, '$.user') = 'text' "
    "THEN json_extract(settings, '$.user') END)"
)

KEYS: dict[str, tuple[str, ...]] = {
    "runs": ("id",),
    "tasks": ("run_id", "id"),
    "task_items": ("run_id", "task_id", "item"),
    "llm_calls": ("run_id", "session", "call"),
    "events": ("run_id", "seq"),
    "plan_templates": ("tools", "id"),
}


def key_where(table: str) -> str:
    """The condition that finds one row of `table` by its key, its values as parameters."""
    return " AND ".join(f"{k} = ?" for k in KEYS[table])


# Each migration is a list of statements, applied in one transaction; never edit a released one.
_LEASES = [
    "ALTER TABLE runs ADD COLUMN holder TEXT",
    "ALTER TABLE runs ADD COLUMN lease_until REAL",
    "CREATE INDEX runs_by_status ON runs (status)",
]

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
    # 9: the lease of the process that runs a run (`owner`): who holds it, until when; runs
    # are found by status (the running ones, to take over those whose holder is gone).
    _LEASES,
    # 10: named plans (`runbooks`): plans compiled from runbooks or written by hand, each
    # version a row of its own, sealed (`seal.NAMED_PLAN_SEALED`): run without the planner.
    [
        """CREATE TABLE named_plans (
            name TEXT NOT NULL,
            version INTEGER NOT NULL,
            plan TEXT NOT NULL,
            params TEXT NOT NULL,
            source TEXT NOT NULL,
            created REAL NOT NULL,
            mac TEXT,
            PRIMARY KEY (name, version)
        )""",
    ],
    # 11: a user's runs (`RunSettings.user`, in the sealed settings), newest first: a user's
    # run list (`views.runs(user=...)`) reads their runs alone, not everyone's.
    [f"CREATE INDEX runs_by_user ON runs ({USER_OF}, created, id)"],
]

VERSION = len(MIGRATIONS)  # the journal schema this planweave writes

# PostgreSQL: the tables as SQLite's migrations 1 to 8 leave them.  REAL is double precision
# and INTEGER bigint here (SQLite's are 8 bytes); ids compare bytewise (COLLATE "C"), as in
# SQLite, so a run id's prefix finds it and runs page in the same order.  `json_text` reads a
# text field of a JSON column as SQLite's THREAD_OF does: null for text that is no JSON.
POSTGRES_BASE = 8
POSTGRES_SCHEMA: list[str] = [
    """CREATE FUNCTION planweave_json_text(doc text, field text) RETURNS text
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
        BEGIN
            IF jsonb_typeof(doc::jsonb -> field) = 'string' THEN
                RETURN doc::jsonb ->> field;
            END IF;
            RETURN NULL;
        EXCEPTION WHEN others THEN
            RETURN NULL;
        END $$""",
    """CREATE TABLE runs (
        id TEXT COLLATE "C" PRIMARY KEY,
        question TEXT NOT NULL,
        mode TEXT NOT NULL,
        status TEXT NOT NULL,
        answer TEXT,
        error TEXT,
        created DOUBLE PRECISION NOT NULL,
        updated DOUBLE PRECISION NOT NULL,
        wall_s DOUBLE PRECISION,
        settings TEXT NOT NULL DEFAULT '{}',
        pid BIGINT,
        host TEXT,
        llm TEXT NOT NULL DEFAULT '{}',
        replans BIGINT NOT NULL DEFAULT 0,
        sessions BIGINT NOT NULL DEFAULT 1,
        cancel_requested BIGINT NOT NULL DEFAULT 0,
        partial TEXT,
        cache TEXT,
        mac TEXT,
        tally TEXT
    )""",
    "CREATE INDEX runs_by_created ON runs (created DESC)",
    "CREATE INDEX runs_by_thread ON runs (planweave_json_text(settings, 'thread'), created)",
    """CREATE TABLE tasks (
        run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        id BIGINT NOT NULL,
        plan_round BIGINT NOT NULL DEFAULT 0,
        tool TEXT NOT NULL,
        args TEXT NOT NULL,
        call TEXT NOT NULL,
        deps TEXT NOT NULL,
        thought TEXT,
        side_effects BIGINT NOT NULL DEFAULT 0,
        status TEXT NOT NULL,
        attempts BIGINT NOT NULL DEFAULT 0,
        arguments TEXT,
        result TEXT,
        error TEXT,
        started DOUBLE PRECISION,
        ended DOUBLE PRECISION,
        recovery TEXT,
        mac TEXT,
        PRIMARY KEY (run_id, id)
    )""",
    """CREATE TABLE llm_calls (
        run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        session BIGINT NOT NULL,
        call BIGINT NOT NULL,
        purpose TEXT NOT NULL,
        model TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        status TEXT NOT NULL,
        prompt_tokens BIGINT,
        completion_tokens BIGINT,
        duration DOUBLE PRECISION,
        text TEXT,
        error TEXT,
        started DOUBLE PRECISION,
        mac TEXT,
        PRIMARY KEY (run_id, session, call)
    )""",
    """CREATE TABLE events (
        run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq BIGINT NOT NULL,
        session BIGINT NOT NULL,
        t DOUBLE PRECISION NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        mac TEXT,
        PRIMARY KEY (run_id, seq)
    )""",
    """CREATE TABLE plan_templates (
        tools TEXT COLLATE "C" NOT NULL,
        id TEXT COLLATE "C" NOT NULL,
        key TEXT NOT NULL,
        slots TEXT NOT NULL,
        plan TEXT NOT NULL,
        question TEXT NOT NULL,
        source_run TEXT,
        tokens BIGINT NOT NULL DEFAULT 0,
        created DOUBLE PRECISION NOT NULL,
        used DOUBLE PRECISION NOT NULL,
        hits BIGINT NOT NULL DEFAULT 0,
        good BIGINT NOT NULL DEFAULT 0,
        bad BIGINT NOT NULL DEFAULT 0,
        mac TEXT,
        PRIMARY KEY (tools, id)
    )""",
    "CREATE INDEX plan_templates_by_use ON plan_templates (used DESC)",
    """CREATE TABLE task_items (
        run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        task_id BIGINT NOT NULL,
        item BIGINT NOT NULL,
        call TEXT NOT NULL,
        status TEXT NOT NULL,
        attempts BIGINT NOT NULL DEFAULT 0,
        arguments TEXT,
        result TEXT,
        error TEXT,
        recovery TEXT,
        started DOUBLE PRECISION,
        ended DOUBLE PRECISION,
        mac TEXT,
        PRIMARY KEY (run_id, task_id, item)
    )""",
]
# Migrations POSTGRES_BASE + 1 onwards, in order, each the PostgreSQL twin of SQLite's.
POSTGRES_MIGRATIONS: list[list[str]] = [
    # 9: leases.
    [
        "ALTER TABLE runs ADD COLUMN holder TEXT",
        "ALTER TABLE runs ADD COLUMN lease_until DOUBLE PRECISION",
        "CREATE INDEX runs_by_status ON runs (status)",
    ],
    # 10: named plans.
    [
        """CREATE TABLE named_plans (
            name TEXT COLLATE "C" NOT NULL,
            version BIGINT NOT NULL,
            plan TEXT NOT NULL,
            params TEXT NOT NULL,
            source TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL,
            mac TEXT,
            PRIMARY KEY (name, version)
        )""",
    ],
    # 11: a user's runs.
    ["CREATE INDEX runs_by_user ON runs (planweave_json_text(settings, 'user'), created, id)"],
]
