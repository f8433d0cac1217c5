"""Seals on what a journal records: an HMAC-SHA256 of each row, under a key the file does not hold.

A journal file is untrusted: whoever can write it could forge a planner reply or a result, and a
resumed run would replay it (a forged `effect(...)` call would run).  So every row a resume
reads (the run's question, mode and settings; its tasks, fan-out elements, LLM calls and
events) carries a seal made with this user's journal key, and a resume checks them all before
anything is replayed; so does each of the plan cache's templates, which a new question runs
without asking the planner, and which the cache uses only when its seal checks.  Editing the
file without the key cannot make a valid seal.

Each run's row also keeps a tally: the fold of the seals of all its rows (`fold`), so a row
removed, or put back as an older sealed copy, is seen.  `seal_rows` and `unseal_rows` keep the
tallies in step inside the writer's transaction; `unsealed` names the records that fail.

The key is 32 random bytes in a file of its own, made on first use, readable by its owner only:
PLANWEAVE_JOURNAL_KEY_FILE, else `journal.key` in the user data directory.  Journals copied to
another user or machine verify there only with the key copied along.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import JournalError
from .dbapi import Connection
from .schema import KEYS, key_where

__all__ = [
    "KEY_ENV",
    "NAMED_PLAN_SEALED",
    "SEALED",
    "TEMPLATE_SEALED",
    "Sealer",
    "fold",
    "key_path",
    "run_column",
    "seal_rows",
    "seal_run",
    "unseal_rows",
    "unsealed",
]

KEY_ENV = "PLANWEAVE_JOURNAL_KEY_FILE"

# The columns each table's seal covers (None: all of them).  A run row's status, process and
# counters change as it goes and steer nothing a resume replays; what it asked and how it was
# set up do.
SEALED: dict[str, tuple[str, ...] | None] = {
    "runs": ("id", "question", "mode", "created", "settings"),
    "tasks": None,
    "task_items": None,
    "llm_calls": None,
    "events": None,
}

# The plan cache's templates belong to no run (no tally holds them): a template's seal covers
# what a hit runs and what the views show of where it came from.  Its use counters (used, hits,
# good, bad) change on every hit and steer only the order of look-up and eviction, which anyone
# who can write the file steers anyway by deleting rows; they are left out, so a hit writes no
# new seal.
TEMPLATE_SEALED = (
    "tools", "id", "key", "slots", "plan", "question", "source_run", "tokens", "created"
)  # fmt: skip

# A named plan (`runbooks`) runs without asking the planner, as a template does: its seal covers
# every column (a version never changes once stored).
NAMED_PLAN_SEALED = ("name", "version", "plan", "params", "source", "created")
_OWN_SEALS = {"plan_templates": TEMPLATE_SEALED, "named_plans": NAMED_PLAN_SEALED}


def key_path() -> Path:
    """Where this user's journal key is: PLANWEAVE_JOURNAL_KEY_FILE, else `journal.key` in the
    user data directory."""
    env = os.environ.get(KEY_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("planweave") / "journal.key"


class Sealer:
    """Makes and checks seals with one key."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    @classmethod
    def load(cls, path: Path | None = None) -> Sealer:
        """The sealer of the key at `path` (default `key_path()`), making the key if there is
        none yet; JournalError when it cannot be read or made."""
        path = path or key_path()
        try:
            return cls(_read_key(path))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _unusable(path, exc) from exc
        try:
            _make_key(path)
            return cls(_read_key(path))
        except OSError as exc:
            raise _unusable(path, exc) from exc

    def seal(self, table: str, row: Mapping[str, Any]) -> str:
        """The seal of `row` (a table's row by column name; its own `mac` is left out)."""
        covered = _OWN_SEALS[table] if table in _OWN_SEALS else SEALED[table]
        names = sorted(covered if covered is not None else (n for n in row if n != "mac"))
        body = json.dumps([table, [[n, row[n]] for n in names]], default=str)
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()

    def verify(self, table: str, row: Mapping[str, Any]) -> bool:
        mac = row.get("mac")
        return isinstance(mac, str) and hmac.compare_digest(mac, self.seal(table, row))

    def tally(self, run_id: str, folded: int) -> str:
        """The run's tally as stored: the fold of all its rows' seals, and a seal of that."""
        text = f"{folded:064x}"
        mac = hmac.new(self._key, f"tally\0{run_id}\0{text}".encode(), hashlib.sha256)
        return f"{text}:{mac.hexdigest()}"

    def read_tally(self, run_id: str, stored: object) -> int | None:
        """The fold a stored tally holds, or None when it is missing or not sealed by this key."""
        if not isinstance(stored, str) or ":" not in stored:
            return None
        text = stored.partition(":")[0]
        try:
            folded = int(text, 16)
        except ValueError:
            return None
        return folded if hmac.compare_digest(self.tally(run_id, folded), stored) else None


def fold(macs: Iterable[object]) -> int:
    """The XOR of seals (hex): the same whatever the order, changed by any seal added, removed
    or replaced.  A run's tally keeps it, so deleting a sealed row, or putting back an older
    sealed copy of one, is seen although each row left still verifies."""
    folded = 0
    for mac in macs:
        if isinstance(mac, str):
            with contextlib.suppress(ValueError):
                folded ^= int(mac, 16)
    return folded


def run_column(table: str) -> str:
    """The column of `table` (one of `SEALED`) that names a row's run."""
    return "id" if table == "runs" else "run_id"


def seal_rows(
    conn: Connection, sealer: Sealer, table: str, where: str, params: tuple[Any, ...]
) -> None:
    """Seal the rows of `table` that `where` selects, as they now are, and keep their runs'
    tallies in step: each old seal out, each new one in."""
    keys = KEYS[table]
    update = f"UPDATE {table} SET mac = ? WHERE {key_where(table)}"
    changed: dict[str, int] = {}
    for found in conn.execute(f"SELECT * FROM {table} WHERE {where}", params).fetchall():
        row = dict(found)
        mac = sealer.seal(table, row)
        conn.execute(update, (mac, *(row[k] for k in keys)))
        run_id = row[run_column(table)]
        changed[run_id] = changed.get(run_id, 0) ^ fold([row.get("mac"), mac])
    for run_id, delta in changed.items():
        _retally(conn, sealer, run_id, delta, new_run=table == "runs")


def unseal_rows(
    conn: Connection, sealer: Sealer, table: str, where: str, params: tuple[Any, ...]
) -> None:
    """Take the seals of the rows `where` selects out of their runs' tallies: call it just
    before those rows are deleted or replaced."""
    changed: dict[str, int] = {}
    for run_id, mac in conn.execute(f"SELECT run_id, mac FROM {table} WHERE {where}", params):
        changed[run_id] = changed.get(run_id, 0) ^ fold([mac])
    for run_id, delta in changed.items():
        _retally(conn, sealer, run_id, delta, new_run=False)


def _retally(conn: Connection, sealer: Sealer, run_id: str, delta: int, *, new_run: bool) -> None:
    """Apply `delta` to the run's tally.  A tally that is missing (a run from before seals;
    only a new run or `seal_run` starts one) or not this key's is left as it is, so `unsealed`
    still names the run: a write never launders an edited tally."""
    found = conn.execute("SELECT tally FROM runs WHERE id = ?", (run_id,)).fetchone()
    if found is None:
        return
    folded = sealer.read_tally(run_id, found[0])
    if folded is None:
        if found[0] is not None or not new_run:
            return
        folded = 0
    conn.execute(
        "UPDATE runs SET tally = ? WHERE id = ?", (sealer.tally(run_id, folded ^ delta), run_id)
    )


def seal_run(conn: Connection, sealer: Sealer, run_id: str) -> None:
    """Seal every record of run `run_id` as it is now, and its tally."""
    macs: list[object] = []
    for table in SEALED:
        seal_rows(conn, sealer, table, f"{run_column(table)} = ?", (run_id,))
        query = f"SELECT mac FROM {table} WHERE {run_column(table)} = ?"
        macs += [r[0] for r in conn.execute(query, (run_id,))]
    conn.execute(
        "UPDATE runs SET tally = ? WHERE id = ?", (sealer.tally(run_id, fold(macs)), run_id)
    )


def unsealed(
    sealer: Sealer, run_id: str, records: Iterable[tuple[str, Mapping[str, Any]]]
) -> list[str]:
    """How a person finds each of run `run_id`'s records (`records`: every row of it, by
    table) whose seal does not check under `sealer`; with none, whether its tally does (a
    record removed, or put back as an older copy)."""
    bad: list[str] = []
    macs: list[object] = []
    tally: object = None
    for table, row in records:
        macs.append(row.get("mac"))
        if table == "runs":
            tally = row.get("tally")
        if not sealer.verify(table, row):
            bad.append(_record_name(table, row))
    if not bad and sealer.read_tally(run_id, tally) != fold(macs):
        bad.append("the run's set of records (some were removed, or put back as older copies)")
    return bad


def _read_key(path: Path) -> bytes:
    """The key in `path`, which must be a plain file of this user's that nobody else may read
    or write (a key others can read forges seals; a link may point at anything, the journal
    itself included)."""
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise OSError(0, "it is not a plain file (a link, or something else)")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise OSError(0, "it belongs to another user")
    if info.st_mode & 0o077:
        raise OSError(0, f"others may read or write it (mode {info.st_mode & 0o777:o}; chmod 600)")
    key = path.read_bytes().strip()
    if len(key) < 32:
        raise OSError(f"it holds {len(key)} bytes, fewer than a key's 32")
    return key


def _make_key(path: Path) -> None:
    """Write a new key where none is: whole or not at all (a link, never a half-written file),
    and the first of two processes making it at once wins."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32) + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _unusable(path: Path, exc: OSError) -> JournalError:
    why = exc.strerror or str(exc)
    return JournalError(
        f"cannot read or make the journal key {path} ({why}): it signs what a run records, so "
        f"a resume can tell the journal was not edited; set {KEY_ENV} to a file this user may "
        "write",
        path=str(path),
    )


def _record_name(table: str, row: Mapping[str, Any]) -> str:
    """How a person finds a record of a run: `task 3`, `LLM call 2 (planner)`..."""
    match table:
        case "runs":
            return "the run's question and settings"
        case "tasks":
            return f"task {row['id']}"
        case "task_items":
            return f"fan-out element {row['task_id']}.{row['item']}"
        case "llm_calls":
            return f"LLM call {row['call']} of session {row['session']} ({row['purpose']})"
    return f"event {row['seq']} ({row['kind']})"
