"""A durable outbox: knowledge writes that Dify could not take wait here, in order.

`DurableKnowledgeStore` wraps a remote store. A write that meets an outage is kept in
a local SQLite file and answered as queued; later writes queue behind it so the order
holds; `upkeep()` (the bridge's background loop) replays the queue in order once the
store answers again. Replays are idempotent (upsert by name, enable/disable, delete of
a missing document counts as done). A write the store rejects for good (a 4xx) is
kept as failed, with its error, for `memctl status` to show; nothing is dropped.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from ..._errors import StoreError, StoreUnavailable
from .._knowledge import (
    DocMetadata,
    Document,
    KnowledgeFilter,
    KnowledgeStore,
    SearchMode,
    SearchPage,
    SlotInfo,
    UpsertOutcome,
)
from ..sqlite._db import Database
from ..sqlite._schema import run_migrations

__all__ = ["QUIET_SECONDS", "DurableKnowledgeStore", "Outbox", "OutboxStatus"]

QUIET_SECONDS = 5.0

_MIGRATIONS = (
    """
    CREATE TABLE outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        operation TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at REAL NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        failed INTEGER NOT NULL DEFAULT 0,
        last_error TEXT NOT NULL DEFAULT ''
    );
    """,
    # 2: the last slot list Dify gave, so writes can be queued by a bridge started during an outage
    """
    CREATE TABLE known_slots (
        name TEXT PRIMARY KEY,
        id TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        indexing_technique TEXT NOT NULL DEFAULT 'high_quality'
    ) WITHOUT ROWID;
    """,
)


class OutboxStatus(dict[str, Any]):
    """{"pending": n, "failed": n, "oldest": epoch | None, "last_error": str}"""


class Outbox:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = Database(path, lambda conn, p: run_migrations(conn, p, _MIGRATIONS))

    async def append(self, operation: str, payload: dict[str, Any]) -> int:
        def run(conn: sqlite3.Connection, now: float) -> int:
            cursor = conn.execute(
                "INSERT INTO outbox (operation, payload, created_at) VALUES (?, ?, ?)",
                (operation, json.dumps(payload), now),
            )
            return int(cursor.lastrowid or 0)

        return await self._db.write("outbox append", run)

    async def head(self) -> tuple[int, str, dict[str, Any]] | None:
        def run(conn: sqlite3.Connection, now: float) -> tuple[int, str, dict[str, Any]] | None:
            row = conn.execute(
                "SELECT seq, operation, payload FROM outbox WHERE failed = 0 ORDER BY seq LIMIT 1"
            ).fetchone()
            return None if row is None else (int(row[0]), str(row[1]), json.loads(row[2]))

        return await self._db.read("outbox head", run)

    async def done(self, seq: int) -> None:
        await self._db.write(
            "outbox done", lambda conn, now: conn.execute("DELETE FROM outbox WHERE seq = ?", (seq,))
        )

    async def note(self, seq: int, error: str, *, failed: bool) -> None:
        await self._db.write(
            "outbox note",
            lambda conn, now: conn.execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?, failed = ? WHERE seq = ?",
                (error, int(failed), seq),
            ),
        )

    async def remember_slots(self, slots: list[SlotInfo]) -> None:
        def run(conn: sqlite3.Connection, now: float) -> None:
            conn.execute("DELETE FROM known_slots")
            conn.executemany(
                "INSERT INTO known_slots (name, id, description, indexing_technique) VALUES (?, ?, ?, ?)",
                [(s.name, s.id, s.description, s.indexing_technique) for s in slots],
            )

        await self._db.write("outbox slots", run)

    async def known_slots(self) -> list[SlotInfo]:
        def run(conn: sqlite3.Connection, now: float) -> list[SlotInfo]:
            rows = conn.execute(
                "SELECT name, id, description, indexing_technique FROM known_slots ORDER BY name"
            )
            return [SlotInfo(r[0], r[1], r[2], 0, r[3]) for r in rows]

        return await self._db.read("outbox slots", run)

    async def status(self) -> OutboxStatus:
        def run(conn: sqlite3.Connection, now: float) -> OutboxStatus:
            pending, oldest = conn.execute(
                "SELECT count(*), min(created_at) FROM outbox WHERE failed = 0"
            ).fetchone()
            failed = conn.execute("SELECT count(*) FROM outbox WHERE failed = 1").fetchone()[0]
            last = conn.execute(
                "SELECT last_error FROM outbox WHERE last_error != '' ORDER BY seq DESC"
            ).fetchone()
            return OutboxStatus(
                pending=int(pending), failed=int(failed), oldest=oldest, last_error=last[0] if last else ""
            )

        return await self._db.read("outbox status", run)

    def close(self) -> None:
        self._db.close()


class DurableKnowledgeStore:
    """A remote knowledge store whose writes survive its outages."""

    def __init__(self, inner: KnowledgeStore, outbox: Outbox) -> None:
        self.inner = inner
        self.outbox = outbox
        self.url = inner.url
        self._quiet_until = 0.0  # after an outage, writes queue at once for a few seconds
        self._slots: list[SlotInfo] | None = None

    async def _apply(self, operation: str, payload: dict[str, Any]) -> Any:
        if operation == "upsert":
            metadata = DocMetadata(**{**payload["metadata"], "tags": tuple(payload["metadata"]["tags"])})
            return await self.inner.upsert(
                payload["slot"], payload["name"], payload["text"], metadata, origin=payload["origin"]
            )
        if operation == "set_enabled":
            return await self.inner.set_enabled(payload["slot"], payload["document_id"], payload["enabled"])
        return await self.inner.delete(payload["slot"], payload["document_id"])

    async def _write(self, operation: str, payload: dict[str, Any]) -> tuple[Any, int | None]:
        """Apply now if nothing is queued and the store answers; else queue (order kept)."""
        if time.monotonic() >= self._quiet_until:
            if await self.outbox.head() is not None:
                await self.upkeep()
            if await self.outbox.head() is None:
                try:
                    return await self._apply(operation, payload), None
                except StoreUnavailable:
                    self._quiet_until = time.monotonic() + QUIET_SECONDS
        return None, await self.outbox.append(operation, payload)

    async def upsert(
        self, slot: str, name: str, text: str, metadata: DocMetadata, *, origin: str
    ) -> UpsertOutcome:
        payload = {"slot": slot, "name": name, "text": text, "metadata": metadata.to_dict(), "origin": origin}
        result, seq = await self._write("upsert", payload)
        if seq is None:
            return result  # type: ignore[no-any-return]
        return UpsertOutcome(f"queued:{seq}", created=True, changed=True, indexing_status="queued")

    async def set_enabled(self, slot: str, document_id: str, enabled: bool) -> bool:
        result, seq = await self._write(
            "set_enabled", {"slot": slot, "document_id": document_id, "enabled": enabled}
        )
        return True if seq is not None else bool(result)

    async def delete(self, slot: str, document_id: str) -> bool:
        result, seq = await self._write("delete", {"slot": slot, "document_id": document_id})
        return True if seq is not None else bool(result)

    async def upkeep(self) -> int:
        """Replay queued writes in order until the queue is empty or the store is down."""
        replayed = 0
        while (head := await self.outbox.head()) is not None:
            seq, operation, payload = head
            try:
                await self._apply(operation, payload)
            except StoreUnavailable as exc:
                await self.outbox.note(seq, str(exc), failed=False)
                self._quiet_until = time.monotonic() + QUIET_SECONDS
                break
            except StoreError as exc:
                await self.outbox.note(seq, str(exc), failed=True)
                continue
            await self.outbox.done(seq)
            replayed += 1
        return replayed + await self.inner.upkeep()

    # -- reads pass through -------------------------------------------------------------------

    async def list_slots(self) -> list[SlotInfo]:
        """The slots; during an outage the last list Dify gave (kept on disk), so writes can
        still be queued, also by a bridge that starts while Dify is down."""
        try:
            slots = await self.inner.list_slots()
        except StoreUnavailable:
            known = await self.outbox.known_slots()
            if not known:
                raise
            return known
        if slots != self._slots:
            await self.outbox.remember_slots(slots)
            self._slots = slots
        return slots

    async def create_slot(self, name: str, description: str = "") -> tuple[SlotInfo, bool]:
        return await self.inner.create_slot(name, description)

    async def get(self, slot: str, document_id: str) -> Document | None:
        return await self.inner.get(slot, document_id)

    async def find(self, slot: str, name: str) -> Document | None:
        return await self.inner.find(slot, name)

    async def list_documents(self, slot: str, *, offset: int, limit: int) -> tuple[list[Document], int]:
        return await self.inner.list_documents(slot, offset=offset, limit=limit)

    async def search(
        self,
        slots: list[str],
        query: str,
        flt: KnowledgeFilter,
        *,
        top_k: int,
        score_threshold: float | None,
        mode: SearchMode = "hybrid",
    ) -> SearchPage:
        return await self.inner.search(
            slots, query, flt, top_k=top_k, score_threshold=score_threshold, mode=mode
        )

    async def count(self) -> int:
        return await self.inner.count()

    async def ping(self) -> None:
        await self.inner.ping()

    async def close(self) -> None:
        await self.inner.close()
        self.outbox.close()
