"""The plan cache's table in the journal's file: templates by tool-registry signature, with
their use and standing.  Shared by every process that opens the file, bounded by LRU; read and
written through the journal's storage interface (`store.base.Storage`).

Each row is sealed with this user's journal key (`store.seal.TEMPLATE_SEALED`) when it is stored;
`TemplateTable.verified` checks that seal on a row read back.  The file is untrusted, and a
template is a plan run without asking the planner, so the cache uses no row that fails it."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import JournalError
from ..store.base import Connection, Row, Storage
from ..store.seal import Sealer

__all__ = ["StoredTemplate", "TemplateTable"]

TABLE = "plan_templates"


@dataclass(frozen=True, slots=True)
class StoredTemplate:
    """One row: the template's data (as `PlanTemplate.to_dict` gives it) and its bookkeeping."""

    tools: str
    id: str
    key: str
    slots: list[dict[str, Any]]
    plan: str
    question: str
    source_run: str | None
    tokens: int
    created: float
    used: float
    hits: int
    good: int
    bad: int
    stored: dict[str, Any] = field(repr=False, compare=False)  # the row as read, for its seal

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tools": self.tools,
            "key": self.key,
            "slots": self.slots,
            "plan": self.plan,
            "question": self.question,
            "source_run": self.source_run,
            "tokens": self.tokens,
            "created": self.created,
            "used": self.used,
            "hits": self.hits,
            "good": self.good,
            "bad": self.bad,
        }


class TemplateTable:
    """Reads and writes `plan_templates` in a journal's file."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def candidates(self, tools: str) -> list[StoredTemplate]:
        """The templates made with tools of signature `tools`, most recently used first, not yet
        verified (`verified`: a look-up checks only those its question reads as)."""
        rows = self.storage.read(
            "SELECT * FROM plan_templates WHERE tools = ? ORDER BY used DESC", (tools,)
        )
        return [_stored(r) for r in rows]

    def others(self, tools: str) -> list[StoredTemplate]:
        """The templates made with tools of another signature than `tools`."""
        rows = self.storage.read(
            "SELECT * FROM plan_templates WHERE tools != ? ORDER BY used DESC", (tools,)
        )
        return [_stored(r) for r in rows]

    def all(self, limit: int | None = None) -> list[StoredTemplate]:
        if limit is None:
            rows = self.storage.read("SELECT * FROM plan_templates ORDER BY used DESC")
        else:
            rows = self.storage.read(
                "SELECT * FROM plan_templates ORDER BY used DESC LIMIT ?", (limit,)
            )
        return [_stored(r) for r in rows]

    def find(self, prefix: str) -> list[StoredTemplate]:
        """Templates whose id starts with `prefix`."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self.storage.read(
            "SELECT * FROM plan_templates WHERE id LIKE ? ESCAPE '\\' ORDER BY used DESC",
            (escaped + "%",),
        )
        return [_stored(r) for r in rows]

    def verified(self, template: StoredTemplate) -> bool:
        """Whether the template's seal checks under this user's journal key: False for one
        edited in the file, stored before templates were sealed or by another user's key, and
        for all where the key cannot be read or made."""
        try:
            sealer = self.storage.sealer()
        except JournalError:
            return False
        return _verified(template.stored, sealer)

    def put(
        self, tools: str, template: dict[str, Any], *, source_run: str, tokens: int, bound: int
    ) -> bool:
        """Store a template unless one with its key is already there and in good standing;
        evict the least recently used past `bound`.  Returns whether it was stored."""
        now = time.time()
        sealer = self.storage.sealer()
        with self.storage.transaction() as conn:
            row = _row(conn, tools, template["id"])
            # One in good standing stays; one whose seal does not check (edited, or stored
            # before seals) gives way to this run's, like one that failed.
            if row is not None and row["bad"] == 0 and _verified(row, sealer):
                conn.execute(
                    "UPDATE plan_templates SET used = ? WHERE tools = ? AND id = ?",
                    (now, tools, template["id"]),
                )
                return False
            conn.execute(
                "INSERT INTO plan_templates (tools, id, key, slots, plan, question, source_run, "
                "tokens, created, used) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (tools, id) DO UPDATE SET key = excluded.key, "
                "slots = excluded.slots, plan = excluded.plan, question = excluded.question, "
                "source_run = excluded.source_run, tokens = excluded.tokens, "
                "created = excluded.created, used = excluded.used, hits = 0, good = 0, "
                "bad = 0, mac = NULL",
                (
                    tools,
                    template["id"],
                    template["key"],
                    json.dumps(template["slots"], ensure_ascii=True),
                    template["plan"],
                    template["question"],
                    source_run,
                    tokens,
                    now,
                    now,
                ),
            )
            # Sealed as the database gives it back, the form every later read checks.
            stored = _row(conn, tools, template["id"])
            assert stored is not None
            conn.execute(
                "UPDATE plan_templates SET mac = ? WHERE tools = ? AND id = ?",
                (sealer.seal(TABLE, stored), tools, template["id"]),
            )
            conn.execute(
                "DELETE FROM plan_templates WHERE (tools, id) NOT IN (SELECT tools, id FROM "
                "plan_templates ORDER BY used DESC LIMIT ?)",
                (bound,),
            )
        return True

    def used(self, tools: str, template_id: str) -> None:
        """A run was served this template."""
        with self.storage.transaction() as conn:
            conn.execute(
                "UPDATE plan_templates SET used = ?, hits = hits + 1 WHERE tools = ? AND id = ?",
                (time.time(), tools, template_id),
            )

    def judged(self, tools: str, template_id: str, *, good: bool, evict_after: int) -> bool:
        """Count how a run served by this template ended: a good run clears its failures, a
        bad one adds one; `evict_after` failures in a row remove it.  Returns whether it was
        removed."""
        with self.storage.transaction() as conn:
            if good:
                conn.execute(
                    "UPDATE plan_templates SET good = good + 1, bad = 0 WHERE tools = ? AND id = ?",
                    (tools, template_id),
                )
                return False
            conn.execute(
                "UPDATE plan_templates SET bad = bad + 1 WHERE tools = ? AND id = ?",
                (tools, template_id),
            )
            gone = conn.execute(
                "DELETE FROM plan_templates WHERE tools = ? AND id = ? AND bad >= ?",
                (tools, template_id, evict_after),
            )
            return gone.rowcount > 0

    def delete(self, template_id: str | None = None) -> int:
        """Remove one template (every signature's), or all of them; returns how many."""
        with self.storage.transaction() as conn:
            if template_id is None:
                return conn.execute("DELETE FROM plan_templates").rowcount
            return conn.execute("DELETE FROM plan_templates WHERE id = ?", (template_id,)).rowcount


def _row(conn: Connection, tools: str, template_id: str) -> dict[str, Any] | None:
    found = conn.execute(
        "SELECT * FROM plan_templates WHERE tools = ? AND id = ?", (tools, template_id)
    ).fetchone()
    return None if found is None else dict(found)


def _verified(row: dict[str, Any], sealer: Sealer) -> bool:
    try:
        return sealer.verify(TABLE, row)
    except KeyError:  # a sealed column gone from the table
        return False


def _stored(r: Row) -> StoredTemplate:
    row = dict(r)
    try:  # the file is not trusted: a damaged row reads as a template without slots
        slots = json.loads(row.get("slots") or "")
    except (TypeError, ValueError):
        slots = []
    return StoredTemplate(
        tools=str(row.get("tools")),
        id=str(row.get("id")),
        key=str(row.get("key")),
        slots=slots if isinstance(slots, list) else [],
        plan=str(row.get("plan")),
        question=str(row.get("question")),
        source_run=row.get("source_run"),
        tokens=int(_number(row.get("tokens"))),
        created=_number(row.get("created")),
        used=_number(row.get("used")),
        hits=int(_number(row.get("hits"))),
        good=int(_number(row.get("good"))),
        bad=int(_number(row.get("bad"))),
        stored=row,
    )


def _number(value: Any) -> float:
    """A bookkeeping column as a number; a damaged one reads as 0."""
    return value if isinstance(value, int | float) and value == value else 0
