"""The named plans' table in the journal (`named_plans`): each version of each plan a row of its
own, never changed once stored.  Read and written through the journal's storage interface
(`store.base.Storage`), on SQLite and PostgreSQL alike.

Each row is sealed with this user's journal key (`store.seal.NAMED_PLAN_SEALED`) when it is
stored.  A named plan runs without asking the planner, and the journal is untrusted: a row whose
seal does not check is never run (`NamedPlanTable.verified`)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from ..errors import JournalError
from ..store.base import Row, Storage

__all__ = ["NamedPlanTable"]

TABLE = "named_plans"


class NamedPlanTable:
    """Reads and writes `named_plans` in a journal."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def add(self, name: str, plan: str, params: Mapping[str, str], source: str) -> dict[str, Any]:
        """Store `plan` as the next version of `name`; returns the row as stored."""
        sealer = self.storage.sealer()
        with self.storage.transaction() as conn:
            last = conn.execute(
                "SELECT MAX(version) AS v FROM named_plans WHERE name = ?", (name,)
            ).fetchone()
            version = int(dict(last).get("v") or 0) + 1 if last is not None else 1
            conn.execute(
                "INSERT INTO named_plans (name, version, plan, params, source, created) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (name, version, plan, json.dumps(dict(params)), source, time.time()),
            )
            # Sealed as the database gives it back, the form every later read checks.
            found = conn.execute(
                "SELECT * FROM named_plans WHERE name = ? AND version = ?", (name, version)
            ).fetchone()
            assert found is not None
            row = dict(found)
            row["mac"] = sealer.seal(TABLE, row)
            conn.execute(
                "UPDATE named_plans SET mac = ? WHERE name = ? AND version = ?",
                (row["mac"], name, version),
            )
        return row

    def get(self, name: str, version: int | None = None) -> dict[str, Any] | None:
        """Version `version` of `name` (default: its latest), or None."""
        if version is None:
            rows = self.storage.read(
                "SELECT * FROM named_plans WHERE name = ? ORDER BY version DESC LIMIT 1", (name,)
            )
        else:
            rows = self.storage.read(
                "SELECT * FROM named_plans WHERE name = ? AND version = ?", (name, version)
            )
        return _dict(rows[0]) if rows else None

    def latest(self) -> list[dict[str, Any]]:
        """The latest version of every named plan, by name."""
        rows = self.storage.read(
            "SELECT p.* FROM named_plans p JOIN (SELECT name, MAX(version) AS v FROM "
            "named_plans GROUP BY name) m ON p.name = m.name AND p.version = m.v ORDER BY p.name"
        )
        return [_dict(r) for r in rows]

    def versions(self, name: str) -> int:
        rows = self.storage.read("SELECT COUNT(*) AS n FROM named_plans WHERE name = ?", (name,))
        return int(dict(rows[0]).get("n") or 0) if rows else 0

    def verified(self, row: dict[str, Any]) -> bool:
        """Whether the row's seal checks under this user's journal key (False where the key
        cannot be read or made)."""
        try:
            return self.storage.sealer().verify(TABLE, row)
        except (JournalError, KeyError):
            return False


def _dict(row: Row) -> dict[str, Any]:
    return dict(row)
