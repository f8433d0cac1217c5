"""The plan cache's table in the journal's file: templates by tool-registry signature, with
their use and standing.  Shared by every process that opens the file, bounded by LRU."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from .journal import Journal

__all__ = ["StoredTemplate", "TemplateTable"]


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
    """Reads and writes `plan_templates` through a journal's connection (and its lock)."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def candidates(self, tools: str) -> list[StoredTemplate]:
        """The templates made with tools of signature `tools`, most recently used first."""
        rows = self.journal._read(
            "SELECT * FROM plan_templates WHERE tools = ? ORDER BY used DESC", (tools,)
        )
        return [_stored(r) for r in rows]

    def all(self, limit: int | None = None) -> list[StoredTemplate]:
        rows = self.journal._read(
            "SELECT * FROM plan_templates ORDER BY used DESC LIMIT ?",
            (-1 if limit is None else limit,),
        )
        return [_stored(r) for r in rows]

    def find(self, prefix: str) -> list[StoredTemplate]:
        """Templates whose id starts with `prefix`."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self.journal._read(
            "SELECT * FROM plan_templates WHERE id LIKE ? ESCAPE '\\' ORDER BY used DESC",
            (escaped + "%",),
        )
        return [_stored(r) for r in rows]

    def put(
        self, tools: str, template: dict[str, Any], *, source_run: str, tokens: int, bound: int
    ) -> bool:
        """Store a template unless one with its key is already there and in good standing;
        evict the least recently used past `bound`.  Returns whether it was stored."""
        now = time.time()
        with self.journal._write() as conn:
            row = conn.execute(
                "SELECT bad FROM plan_templates WHERE tools = ? AND id = ?",
                (tools, template["id"]),
            ).fetchone()
            if row is not None and row[0] == 0:
                conn.execute(
                    "UPDATE plan_templates SET used = ? WHERE tools = ? AND id = ?",
                    (now, tools, template["id"]),
                )
                return False
            conn.execute(
                "INSERT OR REPLACE INTO plan_templates (tools, id, key, slots, plan, question, "
                "source_run, tokens, created, used) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            conn.execute(
                "DELETE FROM plan_templates WHERE rowid IN (SELECT rowid FROM plan_templates "
                "ORDER BY used DESC LIMIT -1 OFFSET ?)",
                (bound,),
            )
        return True

    def used(self, tools: str, template_id: str) -> None:
        """A run was served this template."""
        with self.journal._write() as conn:
            conn.execute(
                "UPDATE plan_templates SET used = ?, hits = hits + 1 WHERE tools = ? AND id = ?",
                (time.time(), tools, template_id),
            )

    def judged(self, tools: str, template_id: str, *, good: bool, evict_after: int) -> bool:
        """Count how a run served by this template ended: a good run clears its failures, a
        bad one adds one; `evict_after` failures in a row remove it.  Returns whether it was
        removed."""
        with self.journal._write() as conn:
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
        with self.journal._write() as conn:
            if template_id is None:
                return conn.execute("DELETE FROM plan_templates").rowcount
            return conn.execute("DELETE FROM plan_templates WHERE id = ?", (template_id,)).rowcount


def _stored(r: Any) -> StoredTemplate:
    try:  # the file is not trusted: a damaged row reads as a template without slots
        slots = json.loads(r["slots"])
    except (TypeError, ValueError):
        slots = []
    return StoredTemplate(
        tools=r["tools"],
        id=r["id"],
        key=str(r["key"]),
        slots=slots if isinstance(slots, list) else [],
        plan=str(r["plan"]),
        question=str(r["question"]),
        source_run=r["source_run"],
        tokens=int(_number(r["tokens"])),
        created=_number(r["created"]),
        used=_number(r["used"]),
        hits=int(_number(r["hits"])),
        good=int(_number(r["good"])),
        bad=int(_number(r["bad"])),
    )


def _number(value: Any) -> float:
    """A bookkeeping column as a number; a damaged one reads as 0."""
    return value if isinstance(value, int | float) and value == value else 0
