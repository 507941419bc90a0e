"""A durable outbox: knowledge writes that Dify could not take wait here.

`DurableKnowledgeStore` wraps a remote store. A write that meets an outage is kept in
a local SQLite file and answered as queued; `upkeep()` (the bridge's background loop)
replays what waits once the store answers again. Replays are idempotent (upsert by
name, enable/disable, delete of a missing document counts as done).

Failures are classified, so one bad write cannot poison the queue:

- *outage* (`StoreUnavailable`: connect errors, timeouts, 502/503/504): the pass
  stops and later writes queue for a while; the write is retried on the next pass;
- *busy* (`Conflict` on a status change: Dify still marks the document as being
  indexed, which can last ten minutes): only that write waits, retried every
  `BUSY_RETRY_SECONDS` for up to `BUSY_GIVE_UP_SECONDS`, then counted as rejected;
- *rejected* (any other store error, e.g. a 500 or a 4xx): retried on the next
  `MAX_REJECTIONS - 1` passes, then dead-lettered: kept with its error for
  `memctl status` and `memctl outbox list|retry|drop`, never replayed on its own.

Order is kept per document (slot and name, or slot and document id): a write waits
only behind earlier pending writes to the same document, never behind a dead one.
A queued write keeps why it waits (`last_error`), which its caller and `memctl outbox`
show.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._errors import Conflict, MetadataPending, StoreError, StoreUnavailable
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

__all__ = [
    "BUSY_GIVE_UP_SECONDS",
    "BUSY_RETRY_SECONDS",
    "MAX_REJECTIONS",
    "QUIET_SECONDS",
    "DurableKnowledgeStore",
    "Outbox",
    "OutboxEntry",
    "OutboxStatus",
]

QUIET_SECONDS = 5.0
MAX_REJECTIONS = 3
BUSY_RETRY_SECONDS = 15.0
BUSY_GIVE_UP_SECONDS = 1800.0  # three times Dify's ten-minute "being indexed" flag
_BEHIND = "waits behind an earlier queued change of the same document"

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
    # 3: per-document order and bounded retries of rejected writes (`failed` = dead-lettered)
    """
    ALTER TABLE outbox ADD COLUMN doc_key TEXT NOT NULL DEFAULT '';
    ALTER TABLE outbox ADD COLUMN rejections INTEGER NOT NULL DEFAULT 0;
    UPDATE outbox SET doc_key = json_extract(payload, '$.slot') || '/' ||
        coalesce(json_extract(payload, '$.name'), '#' || json_extract(payload, '$.document_id'));
    """,
)


class OutboxStatus(dict[str, Any]):
    """{"pending": n, "dead_lettered": n, "oldest": epoch | None, "last_error": str}"""


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    seq: int
    operation: str
    payload: dict[str, Any]
    doc_key: str
    created_at: float
    attempts: int
    rejections: int
    dead: bool
    last_error: str

    def summary(self) -> dict[str, Any]:
        """The entry without the document text (for listings); a status change is named by
        what it does (enable, disable)."""
        operation = self.operation
        if operation == "set_enabled":
            operation = "enable" if self.payload.get("enabled") else "disable"
        return {
            "seq": self.seq,
            "operation": operation,
            "document": self.doc_key,
            "created_at": self.created_at,
            "attempts": self.attempts,
            "rejections": self.rejections,
            "dead_lettered": self.dead,
            "last_error": self.last_error,
        }


def _doc_key(operation: str, payload: dict[str, Any]) -> str:
    target = payload["name"] if operation == "upsert" else "#" + payload["document_id"]
    return f"{payload['slot']}/{target}"


def _entry(row: tuple[Any, ...]) -> OutboxEntry:
    seq, operation, payload, key, created, attempts, rejections, failed, error = row
    return OutboxEntry(
        int(seq),
        str(operation),
        json.loads(payload),
        str(key),
        float(created),
        attempts,
        rejections,
        bool(failed),
        str(error),
    )


_COLUMNS = "seq, operation, payload, doc_key, created_at, attempts, rejections, failed, last_error"


class Outbox:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = Database(path, lambda conn, p: run_migrations(conn, p, _MIGRATIONS))

    async def append(self, operation: str, payload: dict[str, Any], reason: str = "") -> int:
        """Queue a write; `reason` says why it could not be applied now."""

        def run(conn: sqlite3.Connection, now: float) -> int:
            cursor = conn.execute(
                "INSERT INTO outbox (operation, payload, doc_key, created_at, last_error)"
                " VALUES (?, ?, ?, ?, ?)",
                (operation, json.dumps(payload), _doc_key(operation, payload), now, reason),
            )
            return int(cursor.lastrowid or 0)

        return await self._db.write("outbox append", run)

    async def entries(self) -> list[OutboxEntry]:
        """Every entry, pending and dead-lettered, oldest first."""

        def run(conn: sqlite3.Connection, now: float) -> list[OutboxEntry]:
            return [_entry(row) for row in conn.execute(f"SELECT {_COLUMNS} FROM outbox ORDER BY seq")]

        return await self._db.read("outbox list", run)

    async def ready(self) -> list[OutboxEntry]:
        """Pending entries that wait behind no earlier pending write to the same document."""
        seen: set[str] = set()
        ready = []
        for entry in await self.entries():
            if entry.dead:
                continue
            if entry.doc_key not in seen:
                ready.append(entry)
            seen.add(entry.doc_key)
        return ready

    async def waiting(self, operation: str, payload: dict[str, Any]) -> bool:
        """Whether a write to the same document is still pending (so this one must queue)."""
        key = _doc_key(operation, payload)
        return await self._db.read(
            "outbox waiting",
            lambda conn, now: (
                conn.execute(
                    "SELECT 1 FROM outbox WHERE failed = 0 AND doc_key = ? LIMIT 1", (key,)
                ).fetchone()
                is not None
            ),
        )

    async def waiting_reason(self, operation: str, payload: dict[str, Any]) -> str | None:
        """Why the newest pending write to the same document waits, or None if none waits."""
        key = _doc_key(operation, payload)
        row = await self._db.read(
            "outbox waiting",
            lambda conn, now: conn.execute(
                "SELECT last_error FROM outbox WHERE failed = 0 AND doc_key = ? ORDER BY seq DESC LIMIT 1",
                (key,),
            ).fetchone(),
        )
        return None if row is None else str(row[0] or "queued")

    async def done(self, seq: int) -> None:
        await self._db.write(
            "outbox done", lambda conn, now: conn.execute("DELETE FROM outbox WHERE seq = ?", (seq,))
        )

    async def postpone(self, seq: int, error: str) -> None:
        """An outage: count the attempt, keep the entry pending."""
        await self._db.write(
            "outbox postpone",
            lambda conn, now: conn.execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ? WHERE seq = ?", (error, seq)
            ),
        )

    async def reject(self, seq: int, error: str) -> bool:
        """A rejection: count it; the entry is dead-lettered at `MAX_REJECTIONS`. True when dead."""

        def run(conn: sqlite3.Connection, now: float) -> bool:
            conn.execute(
                "UPDATE outbox SET attempts = attempts + 1, rejections = rejections + 1, last_error = ?,"
                " failed = (rejections + 1 >= ?) WHERE seq = ?",
                (error, MAX_REJECTIONS, seq),
            )
            row = conn.execute("SELECT failed FROM outbox WHERE seq = ?", (seq,)).fetchone()
            return bool(row and row[0])

        return await self._db.write("outbox reject", run)

    async def retry(self, seqs: list[int] | None = None) -> int:
        """Make dead-lettered entries (all, or those named) pending again; returns how many."""

        def run(conn: sqlite3.Connection, now: float) -> int:
            sql = "UPDATE outbox SET failed = 0, rejections = 0 WHERE failed = 1"
            if seqs is None:
                return conn.execute(sql).rowcount
            return sum(conn.execute(sql + " AND seq = ?", (seq,)).rowcount for seq in seqs)

        return await self._db.write("outbox retry", run)

    async def drop(self, seqs: list[int]) -> int:
        """Delete the entries named (pending or dead); returns how many."""

        def run(conn: sqlite3.Connection, now: float) -> int:
            return sum(conn.execute("DELETE FROM outbox WHERE seq = ?", (seq,)).rowcount for seq in seqs)

        return await self._db.write("outbox drop", run)

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
            dead = conn.execute("SELECT count(*) FROM outbox WHERE failed = 1").fetchone()[0]
            last = conn.execute(
                "SELECT last_error FROM outbox WHERE last_error != '' ORDER BY seq DESC"
            ).fetchone()
            return OutboxStatus(
                pending=int(pending),
                dead_lettered=int(dead),
                oldest=oldest,
                last_error=last[0] if last else "",
            )

        return await self._db.read("outbox status", run)

    def close(self) -> None:
        self._db.close()


def _outage(exc: StoreError) -> bool:
    cause = exc.cause if isinstance(exc, MetadataPending) else exc
    return isinstance(cause, StoreUnavailable)


def _busy(entry: OutboxEntry, exc: StoreError) -> bool:
    """A status change Dify refuses while it marks the document as being indexed, not yet
    for longer than its flag can last."""
    return (
        entry.operation == "set_enabled"
        and isinstance(exc, Conflict)
        and time.time() - entry.created_at < BUSY_GIVE_UP_SECONDS
    )


class DurableKnowledgeStore:
    """A remote knowledge store whose writes survive its outages."""

    def __init__(self, inner: KnowledgeStore, outbox: Outbox) -> None:
        self.inner = inner
        self.outbox = outbox
        self.url = inner.url
        self._quiet_until = 0.0  # after an outage, writes queue at once for a few seconds
        self._slots: list[SlotInfo] | None = None
        self._busy_until: dict[int, float] = {}  # seq -> when a busy status change is tried again

    async def _apply(self, operation: str, payload: dict[str, Any]) -> Any:
        if operation == "upsert":
            metadata = DocMetadata(**{**payload["metadata"], "tags": tuple(payload["metadata"]["tags"])})
            return await self.inner.upsert(
                payload["slot"], payload["name"], payload["text"], metadata, origin=payload["origin"]
            )
        if operation == "set_enabled":
            return await self.inner.set_enabled(payload["slot"], payload["document_id"], payload["enabled"])
        return await self.inner.delete(payload["slot"], payload["document_id"])

    @property
    def server_version(self) -> str | None:
        """The Dify version its last answer named (None before any answer)."""
        from ._store import DifyKnowledgeStore  # httpx only where Dify is spoken to

        return self.inner.client.server_version if isinstance(self.inner, DifyKnowledgeStore) else None

    def _down(self) -> bool:
        return time.monotonic() < self._quiet_until

    async def _write(self, operation: str, payload: dict[str, Any]) -> tuple[Any, int | None]:
        """Apply now unless the store is down or a write to the same document waits; else
        queue, with the reason. A status change Dify refuses as busy queues too."""
        if not self._down() and await self.outbox.ready():
            await self._replay(retry_busy=False)
        if self._down():
            reason = "Dify was unavailable moments ago"
        elif await self.outbox.waiting(operation, payload):
            reason = _BEHIND
        else:
            try:
                return await self._apply(operation, payload), None
            except StoreUnavailable as exc:
                self._quiet_until = time.monotonic() + QUIET_SECONDS
                reason = str(exc)
            except Conflict as exc:
                if operation != "set_enabled":
                    raise
                seq = await self.outbox.append(operation, payload, str(exc))
                self._busy_until[seq] = time.monotonic() + BUSY_RETRY_SECONDS
                return None, seq
        return None, await self.outbox.append(operation, payload, reason)

    async def waiting_change(self, slot: str, document_id: str) -> str | None:
        """Why a status change or delete of this document waits in the outbox (None: none waits)."""
        return await self.outbox.waiting_reason("set_enabled", {"slot": slot, "document_id": document_id})

    async def upsert(
        self, slot: str, name: str, text: str, metadata: DocMetadata, *, origin: str
    ) -> UpsertOutcome:
        payload = {"slot": slot, "name": name, "text": text, "metadata": metadata.to_dict(), "origin": origin}
        try:
            result, seq = await self._write("upsert", payload)
        except MetadataPending as pending:  # the text is in; the whole save replays later
            if _outage(pending):
                self._quiet_until = time.monotonic() + QUIET_SECONDS
            await self.outbox.append("upsert", payload)
            return UpsertOutcome(
                pending.document_id,
                created=pending.created,
                changed=True,
                indexing_status="queued",
                metadata_applied=False,
            )
        if seq is None:
            return result  # type: ignore[no-any-return]
        return UpsertOutcome(
            f"queued:{seq}",
            created=None,
            changed=True,
            indexing_status="queued",
            text_applied=False,
            metadata_applied=False,
        )

    async def set_enabled(self, slot: str, document_id: str, enabled: bool) -> bool:
        result, seq = await self._write(
            "set_enabled", {"slot": slot, "document_id": document_id, "enabled": enabled}
        )
        return True if seq is not None else bool(result)

    async def delete(self, slot: str, document_id: str) -> bool:
        result, seq = await self._write("delete", {"slot": slot, "document_id": document_id})
        return True if seq is not None else bool(result)

    async def upkeep(self) -> int:
        """Replay the ready writes, each at most once per call; stop at an outage. A status
        change Dify still refuses as busy is tried again after `BUSY_RETRY_SECONDS`."""
        return await self._replay(retry_busy=True) + await self.inner.upkeep()

    async def _replay(self, *, retry_busy: bool) -> int:
        """Replay what is ready; busy status changes only with `retry_busy` (the background
        upkeep), so a write never waits for Dify to refuse one of them again."""
        replayed = 0
        now = time.monotonic()
        tried = {seq for seq, when in self._busy_until.items() if when > now or not retry_busy}
        while batch := [e for e in await self.outbox.ready() if e.seq not in tried]:
            for entry in batch:
                tried.add(entry.seq)
                try:
                    await self._apply(entry.operation, entry.payload)
                except StoreError as exc:
                    if _outage(exc):
                        await self.outbox.postpone(entry.seq, str(exc))
                        self._quiet_until = time.monotonic() + QUIET_SECONDS
                        return replayed
                    if _busy(entry, exc):
                        await self.outbox.postpone(entry.seq, str(exc))
                        self._busy_until[entry.seq] = time.monotonic() + BUSY_RETRY_SECONDS
                        continue
                    await self.outbox.reject(entry.seq, str(exc))
                    continue
                self._quiet_until = 0.0  # the store answers again
                self._busy_until.pop(entry.seq, None)
                await self.outbox.done(entry.seq)
                replayed += 1
        return replayed

    # -- reads pass through -------------------------------------------------------------------

    async def slot_ids(self) -> dict[str, str]:
        return {slot.name: slot.id for slot in await self.list_slots()}

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

    async def stamp_recalls(
        self, slot: str, document_ids: Sequence[str], *, now: float, window: float
    ) -> int:
        """Not queued: a recall stamp lost to an outage is not worth replaying."""
        return await self.inner.stamp_recalls(slot, document_ids, now=now, window=window)

    async def set_recalls(
        self, slot: str, document_id: str, *, last_recalled_at: float | None, recall_count: int
    ) -> bool:
        """Not queued: a restore compares what it wrote and says what did not arrive."""
        return await self.inner.set_recalls(
            slot, document_id, last_recalled_at=last_recalled_at, recall_count=recall_count
        )

    async def set_marks(self, slot: str, document_id: str, marks: Mapping[str, str]) -> bool:
        """Not queued: maintenance runs again, and records what it did."""
        return await self.inner.set_marks(slot, document_id, marks)

    async def count(self) -> int:
        return await self.inner.count()

    async def ping(self) -> None:
        await self.inner.ping()

    async def close(self) -> None:
        await self.inner.close()
        self.outbox.close()
