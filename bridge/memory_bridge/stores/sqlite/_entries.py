"""Versioned entries in one SQLite file (WAL), shared safely by several processes.

Every mutation is one `BEGIN IMMEDIATE` transaction, so two bridge processes on the
same project serialise their writes exactly as memory-mcp's Lua scripts do on
Valkey. Tables mirror memory-mcp's keys: `entries` (mem:), `history` (memver:),
`revisions` (memrev:), `operations` (memop:), `entry_tags` and two columns with
indexes (tag:, type:, project:). An entry, its history and its revision counter
expire together; expired rows are dropped on the next touch of that id and by
`sweep()`, and their tag rows go with them (ON DELETE CASCADE), so no index
keeps members of expired entries.
"""

from __future__ import annotations

import functools
import heapq
import json
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio.to_thread

from ..._errors import NotFound, StoreError, StoreUnavailable
from ...search._embed import Embedder, LazyEmbedder
from .._base import (
    DeleteOutcome,
    Entry,
    EntryFilter,
    EntryPage,
    EntryRecord,
    EntryWrite,
    RollbackOutcome,
    SetOutcome,
    SortOrder,
)
from .._clock import format_instant
from .._query import query_terms
from ._db import Database
from ._entry_rows import ENTRY_COLUMNS, LIVE, RANK, RETURNING, entry_of
from ._entry_semantics import EntrySemantics
from ._match import match_expression, tag_clause
from ._schema import migrate

__all__ = ["SqliteEntryStore"]

T = TypeVar("T")

_SORTS: dict[str, str] = {
    "hits": "e.hits DESC, e.updated DESC, e.id",
    "updated": "e.updated DESC, e.id",
}
_EXPORT_BATCH = 500


class SqliteEntryStore:
    """The embedded entry store: one SQLite database file."""

    def __init__(
        self,
        path: Path,
        *,
        max_versions: int = 20,
        operation_ttl: int = 604_800,
        busy_timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
        embedder: Embedder | LazyEmbedder | None = None,
    ) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"
        self._max_versions = max_versions
        self._operation_ttl = operation_ttl
        self._db = Database(path, migrate, busy_timeout=busy_timeout, clock=clock)
        self._read = self._db.read
        self._write = self._db.write
        self._semantic = EntrySemantics(embedder) if embedder is not None else None

    # -- shared steps inside one transaction -----------------------------------------------

    @staticmethod
    def _adjust_count(conn: sqlite3.Connection, delta: int) -> None:
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'entry_count'", (delta,))

    def _drop(self, conn: sqlite3.Connection, id: str) -> None:
        """Remove every trace of an id (entry, tags, history, revision)."""
        if conn.execute("DELETE FROM entries WHERE id = ?", (id,)).rowcount:
            self._adjust_count(conn, -1)
        conn.execute("DELETE FROM history WHERE id = ?", (id,))
        conn.execute("DELETE FROM revisions WHERE id = ?", (id,))

    def _purge_if_expired(self, conn: sqlite3.Connection, id: str, now: float) -> None:
        row = conn.execute(
            "SELECT (SELECT expires_at FROM revisions WHERE id = ?),"
            " (SELECT expires_at FROM entries WHERE id = ?)",
            (id, id),
        ).fetchone()
        if any(at is not None and at <= now for at in row):
            self._drop(conn, id)

    @staticmethod
    def _revision(conn: sqlite3.Connection, id: str) -> int:
        row = conn.execute("SELECT rev FROM revisions WHERE id = ?", (id,)).fetchone()
        return 0 if row is None else int(row[0])

    def _push_snapshot(self, conn: sqlite3.Connection, id: str, rev: int, snapshot: dict[str, Any]) -> None:
        conn.execute(
            "INSERT INTO history (id, rev, snapshot) VALUES (?, ?, ?)", (id, rev, json.dumps(snapshot))
        )
        conn.execute("DELETE FROM history WHERE id = ? AND rev <= ?", (id, rev - self._max_versions))

    def _apply(
        self,
        conn: sqlite3.Connection,
        write: EntryWrite,
        now: float,
        *,
        label: str | None,
        ttl: int | None,
        keep_expiry: bool,
    ) -> tuple[str, int]:
        """Write the entry, its indexes, revision and snapshot; return (operation, revision)."""
        stamp = format_instant(now)
        previous = conn.execute("SELECT ttl, expires_at FROM entries WHERE id = ?", (write.id,)).fetchone()
        operation = label or ("created" if previous is None else "modified")
        if keep_expiry:
            ttl_value = None if previous is None else previous[0]
            expires_at = None if previous is None else previous[1]
        else:
            ttl_value = ttl
            expires_at = None if ttl is None else now + ttl
        tags_json = json.dumps(list(write.tags))
        if previous is None:
            conn.execute(
                "INSERT INTO entries (id, title, body, type, tags, source, project, created, updated, hits,"
                " ttl, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
                (
                    write.id,
                    write.title,
                    write.body,
                    write.type,
                    tags_json,
                    write.source,
                    write.project,
                    stamp,
                    stamp,
                    ttl_value,
                    expires_at,
                ),
            )
            self._adjust_count(conn, 1)
        else:
            conn.execute(
                "UPDATE entries SET title = ?, body = ?, type = ?, tags = ?, source = ?, project = ?,"
                " updated = ?, ttl = ?, expires_at = ? WHERE id = ?",
                (
                    write.title,
                    write.body,
                    write.type,
                    tags_json,
                    write.source,
                    write.project,
                    stamp,
                    ttl_value,
                    expires_at,
                    write.id,
                ),
            )
            conn.execute("DELETE FROM entry_tags WHERE id = ?", (write.id,))
        conn.executemany(
            "INSERT OR IGNORE INTO entry_tags (tag, id) VALUES (?, ?)", [(t, write.id) for t in write.tags]
        )
        if keep_expiry:
            row = conn.execute(
                "INSERT INTO revisions (id, rev, expires_at) VALUES (?, 1, NULL)"
                " ON CONFLICT (id) DO UPDATE SET rev = rev + 1 RETURNING rev",
                (write.id,),
            ).fetchone()
        else:
            row = conn.execute(
                "INSERT INTO revisions (id, rev, expires_at) VALUES (?, 1, ?)"
                " ON CONFLICT (id) DO UPDATE SET rev = rev + 1, expires_at = excluded.expires_at"
                " RETURNING rev",
                (write.id, expires_at),
            ).fetchone()
        revision = int(row[0])
        self._push_snapshot(
            conn,
            write.id,
            revision,
            {
                "title": write.title,
                "body": write.body,
                "type": write.type,
                "tags": list(write.tags),
                "source": write.source,
                "project": write.project,
                "updated": stamp,
                "operation": operation,
                "rev": revision,
            },
        )
        return operation, revision

    # -- the interface ----------------------------------------------------------------------

    async def get(self, id: str) -> tuple[Entry, int] | None:
        def run(conn: sqlite3.Connection, now: float) -> tuple[Entry, int] | None:
            self._purge_if_expired(conn, id, now)
            row = conn.execute(
                "UPDATE entries SET hits = hits + 1 WHERE id = ? RETURNING " + RETURNING, (id,)
            ).fetchone()
            if row is None:
                return None
            return entry_of(row), self._revision(conn, id)

        return await self._write("memory_get", run)

    async def set(
        self,
        write: EntryWrite,
        *,
        ttl: int | None,
        if_version: int | None,
        operation_id: str | None,
    ) -> SetOutcome:
        def run(conn: sqlite3.Connection, now: float) -> SetOutcome:
            self._purge_if_expired(conn, write.id, now)
            if operation_id is not None:
                conn.execute(
                    "DELETE FROM operations WHERE operation_id = ? AND expires_at <= ?", (operation_id, now)
                )
                recorded = conn.execute(
                    "SELECT memory_id, revision, action FROM operations WHERE operation_id = ?",
                    (operation_id,),
                ).fetchone()
                if recorded is not None:
                    if recorded[0] != write.id:
                        return SetOutcome("op_mismatch", write.id, recorded_id=recorded[0])
                    return SetOutcome("replayed", write.id, operation=recorded[2], revision=int(recorded[1]))
            current = self._revision(conn, write.id)
            if if_version is not None and current != if_version:
                return SetOutcome("conflict", write.id, current_revision=current)
            operation, revision = self._apply(conn, write, now, label=None, ttl=ttl, keep_expiry=False)
            if operation_id is not None:
                conn.execute(
                    "INSERT INTO operations (operation_id, memory_id, revision, action, expires_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (operation_id, write.id, revision, operation, now + self._operation_ttl),
                )
            count = int(conn.execute("SELECT value FROM meta WHERE key = 'entry_count'").fetchone()[0])
            return SetOutcome("applied", write.id, operation=operation, revision=revision, entry_count=count)

        return await self._write("memory_set", run)

    async def delete(self, id: str) -> DeleteOutcome | None:
        def run(conn: sqlite3.Connection, now: float) -> DeleteOutcome | None:
            self._purge_if_expired(conn, id, now)
            row = conn.execute(f"SELECT {ENTRY_COLUMNS} FROM entries AS e WHERE id = ?", (id,)).fetchone()
            if row is None:
                return None
            entry = entry_of(row)
            revision = int(
                conn.execute(
                    "INSERT INTO revisions (id, rev, expires_at) VALUES (?, 1, NULL)"
                    " ON CONFLICT (id) DO UPDATE SET rev = rev + 1, expires_at = NULL RETURNING rev",
                    (id,),
                ).fetchone()[0]
            )
            self._push_snapshot(
                conn,
                id,
                revision,
                {
                    "title": entry.title,
                    "body": entry.body,
                    "type": entry.type,
                    "tags": list(entry.tags),
                    "source": entry.source,
                    "project": entry.project,
                    "updated": format_instant(now),
                    "operation": "deleted",
                    "rev": revision,
                },
            )
            conn.execute("DELETE FROM entries WHERE id = ?", (id,))
            self._adjust_count(conn, -1)
            return DeleteOutcome(id, revision)

        return await self._write("memory_delete", run)

    async def history(self, id: str, limit: int) -> list[dict[str, Any]]:
        def run(conn: sqlite3.Connection, now: float) -> list[dict[str, Any]]:
            rows = conn.execute(
                "SELECT h.snapshot FROM history AS h JOIN revisions AS r ON r.id = h.id"
                " WHERE h.id = ? AND (r.expires_at IS NULL OR r.expires_at > ?)"
                " ORDER BY h.rev DESC LIMIT ?",
                (id, now, limit),
            ).fetchall()
            versions: list[dict[str, Any]] = []
            for index, (raw,) in enumerate(rows):
                try:
                    versions.append({"index": index, **json.loads(raw)})
                except (ValueError, TypeError):
                    versions.append({"index": index, "raw": raw})
            return versions

        return await self._read("memory_history", run)

    async def rollback(self, id: str, version_index: int) -> RollbackOutcome:
        def run(conn: sqlite3.Connection, now: float) -> RollbackOutcome:
            self._purge_if_expired(conn, id, now)
            row = conn.execute(
                "SELECT snapshot FROM history WHERE id = ? ORDER BY rev DESC LIMIT 1 OFFSET ?",
                (id, version_index),
            ).fetchone()
            if row is None:
                raise NotFound(f"Version {version_index} not found for {id}", operation="memory_rollback")
            try:
                snapshot = json.loads(row[0])
                write = EntryWrite(
                    id=id,
                    title=str(snapshot["title"]),
                    body=str(snapshot["body"]),
                    type=str(snapshot["type"]),
                    tags=tuple(snapshot["tags"]),
                    source=str(snapshot.get("source") or "unknown"),
                    project=str(snapshot.get("project") or ""),
                )
            except (ValueError, TypeError, KeyError) as exc:
                raise StoreError("Could not parse version snapshot", operation="memory_rollback") from exc
            label = f"rollback_to_{version_index}"
            operation, revision = self._apply(conn, write, now, label=label, ttl=None, keep_expiry=True)
            return RollbackOutcome(id, operation, str(snapshot.get("updated") or "unknown"), revision)

        return await self._write("memory_rollback", run)

    @staticmethod
    def _filter_sql(flt: EntryFilter, now: float) -> tuple[list[str], list[Any]]:
        clauses = [LIVE]
        params: list[Any] = [now]
        for tag in flt.tags:
            clauses.append("e.id IN (SELECT id FROM entry_tags WHERE tag = ?)")
            params.append(tag)
        if flt.type is not None:
            clauses.append("e.type = ?")
            params.append(flt.type)
        if flt.project is not None:
            clauses.append("e.project = ?")
            params.append(flt.project)
        return clauses, params

    @staticmethod
    def _page(
        conn: sqlite3.Connection,
        source: str,
        where: list[str],
        params: list[Any],
        order: str,
        offset: int,
        limit: int,
    ) -> tuple[list[Entry], int]:
        condition = " AND ".join(where)
        total = int(conn.execute(f"SELECT count(*) FROM {source} WHERE {condition}", params).fetchone()[0])
        if total <= offset:
            return [], total
        rows = conn.execute(
            f"SELECT {ENTRY_COLUMNS} FROM {source} WHERE {condition} ORDER BY {order} LIMIT ? OFFSET ?",
            [*params, limit, offset],
        ).fetchall()
        return [entry_of(r) for r in rows], total

    @staticmethod
    def _ranked_page(
        conn: sqlite3.Connection, source: str, where: list[str], params: list[Any], offset: int, limit: int
    ) -> tuple[list[Entry], int]:
        """Keyword matches by BM25, then hits, then recency: one pass over the matches gives
        both the page and the total (a separate count would run the full-text query twice)."""
        condition = " AND ".join(where)
        matches = conn.execute(
            f"SELECT e.rowid, {RANK}, e.hits, e.updated, e.id FROM {source} WHERE {condition}", params
        ).fetchall()
        wanted = offset + limit
        if len(matches) > 4 * wanted:  # keep only rows that can reach the page (ties included)
            cutoff = heapq.nsmallest(wanted, ((m[1], -m[2]) for m in matches))[-1]
            candidates = [m for m in matches if (m[1], -m[2]) <= cutoff]
        else:
            candidates = matches
        candidates.sort(key=lambda m: m[4])
        candidates.sort(key=lambda m: m[3], reverse=True)
        candidates.sort(key=lambda m: (m[1], -m[2]))
        page = [m[0] for m in candidates[offset : offset + limit]]
        if not page:
            return [], len(matches)
        marks = ", ".join("?" for _ in page)
        rows = {
            r[0]: r[1:]
            for r in conn.execute(
                f"SELECT e.rowid, {ENTRY_COLUMNS} FROM entries AS e WHERE e.rowid IN ({marks})", page
            )
        }
        return [entry_of(rows[rowid]) for rowid in page], len(matches)

    async def search(self, flt: EntryFilter, query: str | None, *, offset: int, limit: int) -> EntryPage:
        def run(conn: sqlite3.Connection, now: float) -> EntryPage:
            where, params = self._filter_sql(flt, now)
            if not query:
                entries, total = self._page(
                    conn, "entries AS e", where, params, _SORTS["hits"], offset, limit
                )
                return EntryPage(entries, total)
            terms = query_terms(query)
            if not terms:  # punctuation only: fall back to memory-mcp's substring match
                needle = query.lower()
                where = [*where, "(instr(lower(e.title), ?) > 0 OR instr(lower(e.body), ?) > 0)"]
                entries, total = self._page(
                    conn, "entries AS e", where, [*params, needle, needle], _SORTS["hits"], offset, limit
                )
                return EntryPage(entries, total, match="all")
            source = "entries_fts JOIN entries AS e ON e.rowid = entries_fts.rowid"
            mode: Literal["all", "any"]
            for mode in ("all", "any"):
                fts_where = ["entries_fts MATCH ?", *where]
                fts_params = [match_expression(terms, mode) + tag_clause(flt.tags), *params]
                if semantic is not None and vector is not None:
                    page = semantic.rank_keyword_matches(
                        conn, vector, source, fts_where, fts_params, offset, limit
                    )
                    if page is not None:
                        return replace(page, match=mode, extra=extra)
                entries, total = self._ranked_page(conn, source, fts_where, fts_params, offset, limit)
                if total or len(terms) == 1:
                    break
            if not total and semantic is not None and vector is not None:  # no word matched: by meaning
                return replace(semantic.nearest(conn, vector, where, params, offset, limit), extra=extra)
            return EntryPage(entries, total, match=mode, extra=extra)

        semantic = self._semantic
        vector, degraded = (None, None)
        if semantic is not None and query and query_terms(query):
            vector, degraded = await anyio.to_thread.run_sync(semantic.query_vector, query)
        extra = {"degraded": degraded} if degraded else {}
        return await self._read("memory_search", run)

    async def upkeep(self) -> int:
        """Embed entries written or changed since they were last embedded."""
        if self._semantic is None:
            return 0
        return await self._semantic.upkeep(self._db)

    async def stale_vectors(self) -> int:
        """Entries without a vector of the current model (0 without a model)."""
        if self._semantic is None:
            return 0
        model = self._semantic.embedder.name

        def run(conn: sqlite3.Connection, now: float) -> int:
            queued = conn.execute("SELECT count(*) FROM pending_vectors").fetchone()[0]
            other = conn.execute(
                "SELECT count(*) FROM entry_vectors AS v WHERE v.model != ?"
                " AND v.rowid NOT IN (SELECT rowid FROM pending_vectors)",
                (model,),
            ).fetchone()[0]
            return int(queued) + int(other)

        return await self._read("stale_vectors", run)

    async def list_entries(self, flt: EntryFilter, *, sort: SortOrder, offset: int, limit: int) -> EntryPage:
        def run(conn: sqlite3.Connection, now: float) -> EntryPage:
            where, params = self._filter_sql(flt, now)
            entries, total = self._page(conn, "entries AS e", where, params, _SORTS[sort], offset, limit)
            return EntryPage(entries, total)

        return await self._read("memory_list", run)

    async def prune_candidates(self, cutoff: str, *, offset: int, limit: int) -> EntryPage:
        def run(conn: sqlite3.Connection, now: float) -> EntryPage:
            where = [LIVE, "e.hits = 0", "e.updated < ?"]
            entries, total = self._page(
                conn, "entries AS e", where, [now, cutoff], "e.updated ASC, e.id", offset, limit
            )
            return EntryPage(entries, total)

        return await self._read("memory_prune_candidates", run)

    async def count(self) -> int:
        def run(conn: sqlite3.Connection, now: float) -> int:
            return int(conn.execute("SELECT value FROM meta WHERE key = 'entry_count'").fetchone()[0])

        return await self._read("count", run)

    async def hits_zero_count(self) -> int:
        def run(conn: sqlite3.Connection, now: float) -> int:
            return int(
                conn.execute(
                    f"SELECT count(*) FROM entries AS e WHERE e.hits = 0 AND {LIVE}", (now,)
                ).fetchone()[0]
            )

        return await self._read("hits_zero_count", run)

    async def sweep(self) -> int:
        def run(conn: sqlite3.Connection, now: float) -> int:
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM revisions WHERE expires_at <= ?"
                    " UNION SELECT id FROM entries WHERE expires_at <= ? LIMIT 1000",
                    (now, now),
                )
            ]
            for id in ids:
                self._drop(conn, id)
            conn.execute("DELETE FROM operations WHERE expires_at <= ?", (now,))
            return len(ids)

        return await self._write("sweep", run)

    async def export_records(self) -> AsyncIterator[list[EntryRecord]]:
        after = ""
        while True:
            batch = await self._read("export", functools.partial(self._export_batch, after))
            if not batch:
                return
            yield batch
            after = batch[-1].id

    def _export_batch(self, after: str, conn: sqlite3.Connection, now: float) -> list[EntryRecord]:
        # the next ids of each table by its index, merged: one batch costs O(batch), not O(store)
        found: set[str] = set()
        for table in ("revisions", "entries", "history"):
            found.update(
                r[0]
                for r in conn.execute(
                    f"SELECT DISTINCT id FROM {table} WHERE id > ? ORDER BY id LIMIT ?",
                    (after, _EXPORT_BATCH),
                )
            )
        ids = sorted(found)[:_EXPORT_BATCH]
        marks = ", ".join("?" * len(ids))
        rows = {
            r[0]: r
            for r in conn.execute(
                f"SELECT {ENTRY_COLUMNS}, e.expires_at FROM entries AS e WHERE e.id IN ({marks}) AND {LIVE}",
                (*ids, now),
            )
        }
        revisions = {
            r[0]: (int(r[1]), r[2])
            for r in conn.execute(f"SELECT id, rev, expires_at FROM revisions WHERE id IN ({marks})", ids)
        }
        histories: dict[str, list[str]] = {}
        for id, snapshot in conn.execute(
            f"SELECT id, snapshot FROM history WHERE id IN ({marks}) ORDER BY id, rev DESC", ids
        ):
            histories.setdefault(id, []).append(snapshot)
        records = []
        for id in ids:
            row = rows.get(id)
            revision, expires_at = revisions.get(id, (0, None))
            if expires_at is not None and expires_at <= now:
                continue  # expired, not swept yet
            records.append(
                EntryRecord(
                    id=id,
                    entry=None if row is None else entry_of(row),
                    revision=revision,
                    history=tuple(histories.get(id, ())),
                    expires_at=None if row is None else row[11],
                )
            )
        return records

    async def import_records(self, records: Sequence[EntryRecord]) -> None:
        def run(conn: sqlite3.Connection, now: float) -> None:
            for record in records:
                self._drop(conn, record.id)
                entry = record.entry
                if entry is not None:
                    conn.execute(
                        "INSERT INTO entries (id, title, body, type, tags, source, project, created, updated,"
                        " hits, ttl, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            entry.id,
                            entry.title,
                            entry.body,
                            entry.type,
                            json.dumps(list(entry.tags)),
                            entry.source,
                            entry.project,
                            entry.created,
                            entry.updated,
                            entry.hits,
                            int(entry.ttl) if entry.ttl else None,
                            record.expires_at,
                        ),
                    )
                    conn.executemany(
                        "INSERT OR IGNORE INTO entry_tags (tag, id) VALUES (?, ?)",
                        [(t, entry.id) for t in entry.tags],
                    )
                    self._adjust_count(conn, 1)
                if record.revision or entry is not None or record.history:
                    conn.execute(
                        "INSERT INTO revisions (id, rev, expires_at) VALUES (?, ?, ?)",
                        (record.id, record.revision, record.expires_at),
                    )
                conn.executemany(
                    "INSERT INTO history (id, rev, snapshot) VALUES (?, ?, ?)",
                    [(record.id, record.revision - i, snap) for i, snap in enumerate(record.history)],
                )

        await self._write("import", run)

    async def ping(self) -> None:
        if not os.path.exists(self.path):
            raise StoreUnavailable(f"embedded store {self.path} was removed", operation="health")
        # Not through the shared connection: a call stuck on the write lock would hold /health.
        await anyio.to_thread.run_sync(
            self._db.probe, "health", "SELECT value FROM meta WHERE key = 'entry_count'"
        )

    async def close(self) -> None:
        self._db.close()
