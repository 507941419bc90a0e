"""Knowledge memory in one SQLite file: slots, documents, FTS5 keywords and dense vectors.

A document is split into passages; each passage is indexed by FTS5 (BM25) at once and,
when an embedding model is available, by a vector computed off the write path
(`_knowledge_vectors`), kept in the database and mirrored in an in-memory matrix.
Search fuses the two per document (best passage) as `Ranking` says (_knowledge_ranking),
then may take a second hop from the best hit to the other half of a two-part answer
(_knowledge_hop).
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ..._errors import EmbedderUnavailable, InvalidInput
from ...search._chunk import chunk_text
from ...search._embed import Embedder, LazyEmbedder, QueryTokens, TokenEmbedder
from .._knowledge import (
    DocMetadata,
    Document,
    JournalChange,
    KnowledgeFilter,
    SearchHit,
    SearchMode,
    SearchPage,
    SlotInfo,
    UpsertOutcome,
    WriteJournal,
    document_digest,
)
from .._query import query_terms
from .._relevance import Evidence
from ._db import Database
from ._knowledge_hop import Coverage, Fused, HopPlan, insert_hops, plan_hop, score_hops
from ._knowledge_matches import QueryMatches
from ._knowledge_ranking import Ranking, fuse
from ._knowledge_relevance import WINDOW, calibrate
from ._knowledge_rerank import Rankings, rerank
from ._knowledge_schema import migrate_knowledge
from ._knowledge_terms import TermFrequencies
from ._knowledge_vectors import ANN_THRESHOLD, IndexState, KnowledgeVectors, bump_generation, embedded_text
from ._knowledge_vectors import BATCH as EMBED_BATCH

if TYPE_CHECKING:
    import numpy as np

__all__ = ["SqliteKnowledgeStore"]

_DOC_COLUMNS = (
    "d.rowid, d.id, s.name, d.name, d.text, d.enabled, d.created_at, d.updated_at, d.origin, "
    "d.atom_type, d.project_module, d.language, d.task_type, d.error_pattern, d.scope, "
    "d.last_recalled_at, d.recall_count, d.marks"
)
_SCALAR_FILTERS = ("atom_type", "project_module", "language", "task_type", "error_pattern", "scope")
_Queued = tuple[int, int]  # the first and last passage rowid a write left without a vector
_INLINE_CHARS = 4096  # a text this short is chunked on the event loop (a thread hop costs more)
_KEYWORD_DEPTH = 4  # keyword matches ranked before filtering, per candidate asked (see `_keyword`)
REEMBED_STEP = 256  # passages per `reembed_batch` call by default: a progress bar's step

# `+slot_id`: found by id (unique), not by slot. SQLite chose the slot's index, and a
# recall stamp read every document of the slot: 144 ms at 1M passages, holding the store
# while searches waited (bench/knowledge_scale.py, over MCP); by id it takes 1 ms.
STAMP_RECALLS = (
    "UPDATE documents SET last_recalled_at = ?, recall_count = recall_count + 1"
    " WHERE +slot_id = ? AND id IN (SELECT value FROM json_each(?))"
    " AND (last_recalled_at IS NULL OR last_recalled_at <= ?)"
)


def _prepare(text: str, metadata: DocMetadata) -> tuple[list[str], str]:
    """A document's passages and digest: CPU work on a large text, for a worker thread."""
    return chunk_text(text), document_digest(text, metadata).hex()


def _tags(conn: sqlite3.Connection, rowid: int) -> tuple[str, ...]:
    return tuple(
        r[0] for r in conn.execute("SELECT tag FROM document_tags WHERE document = ? ORDER BY tag", (rowid,))
    )


def _document(conn: sqlite3.Connection, row: Sequence[Any]) -> Document:
    metadata = DocMetadata(
        atom_type=row[9],
        tags=_tags(conn, row[0]),
        project_module=row[10],
        language=row[11],
        task_type=row[12],
        error_pattern=row[13],
        scope=row[14],
    )
    return Document(
        id=row[1],
        slot=row[2],
        name=row[3],
        text=row[4],
        enabled=bool(row[5]),
        created_at=row[6],
        updated_at=row[7],
        metadata=metadata,
        origin=row[8],
        last_recalled_at=row[15],
        recall_count=int(row[16]),
        marks=json.loads(row[17] or "{}"),
    )


def _document_at(conn: sqlite3.Connection, rowid: int) -> Document:
    row = conn.execute(
        f"SELECT {_DOC_COLUMNS} FROM documents AS d JOIN slots AS s ON s.id = d.slot_id WHERE d.rowid = ?",
        (rowid,),
    ).fetchone()
    return _document(conn, row)


def _filter_sql(flt: KnowledgeFilter) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for name in _SCALAR_FILTERS:
        value = getattr(flt, name)
        if value is not None:
            clauses.append(f"d.{name} = ?")
            params.append(value)
    tags = sorted(set(flt.tags))
    if tags:  # one clause, one parameter, however many tags (a clause each overflowed SQLite's parser)
        clauses.append(
            "d.rowid IN (SELECT document FROM document_tags WHERE tag IN (SELECT value FROM json_each(?))"
            " GROUP BY document HAVING COUNT(*) = ?)"
        )
        params += [json.dumps(tags), len(tags)]
    return clauses, params


class SqliteKnowledgeStore:
    """The embedded knowledge store (no server, no network)."""

    def __init__(
        self,
        path: Path,
        *,
        embedder: Embedder | LazyEmbedder | None,
        default_slots: Sequence[str] = (),
        clock: Callable[[], float] = time.time,
        ranking: Ranking | None = None,
        ann_threshold: int = ANN_THRESHOLD,
    ) -> None:
        self.path = path
        self.ranking = ranking or Ranking()
        self.url = f"sqlite:///{path}"
        self.embedder = embedder
        self._db = Database(path, migrate_knowledge, clock=clock)
        self._vectors = (
            None if embedder is None else KnowledgeVectors(self._db, embedder, ann_threshold=ann_threshold)
        )
        self._terms = TermFrequencies()
        self._coverage = Coverage()
        self._default_slots = tuple(default_slots)
        self._slots_ready = False
        self.journal: WriteJournal | None = None

    @property
    def database(self) -> Database:
        return self._db

    def _tell(
        self,
        conn: sqlite3.Connection,
        now: float,
        before: Document | None,
        after: int | Document | None,
        change: JournalChange | None,
        digest: bytes | None = None,
    ) -> None:
        """Tell the journal, if any, of a change inside its transaction (`after`: the
        document after it, or its rowid to read it by; None when deleted or unchanged)."""
        if self.journal is not None:
            if isinstance(after, int):
                after = _document_at(conn, after)
            self.journal.record(conn, now, before, after, change, digest=digest)

    def _before(self, conn: sqlite3.Connection, rowid: int) -> Document | None:
        """The document as it is, when a journal will want it."""
        return _document_at(conn, rowid) if self.journal is not None else None

    # -- slots ------------------------------------------------------------------------------

    async def _ensure_default_slots(self) -> None:
        if not self._slots_ready:
            for name in self._default_slots:
                await self.create_slot(name)
            self._slots_ready = True

    def _slot_id(self, conn: sqlite3.Connection, slot: str) -> str:
        row = conn.execute("SELECT id FROM slots WHERE name = ? OR id = ?", (slot, slot)).fetchone()
        if row is None:
            known = ", ".join(r[0] for r in conn.execute("SELECT name FROM slots ORDER BY name"))
            raise InvalidInput("dataset", f"unknown slot {slot!r} (known: {known})")
        return str(row[0])

    async def list_slots(self) -> list[SlotInfo]:
        await self._ensure_default_slots()

        def run(conn: sqlite3.Connection, now: float) -> list[SlotInfo]:
            rows = conn.execute(
                "SELECT s.name, s.id, s.description, count(d.rowid) FROM slots AS s"
                " LEFT JOIN documents AS d ON d.slot_id = s.id GROUP BY s.id ORDER BY s.created_at, s.name"
            ).fetchall()
            return [SlotInfo(name=r[0], id=r[1], description=r[2], document_count=int(r[3])) for r in rows]

        return await self._db.read("list_datasets", run)

    async def slot_ids(self) -> dict[str, str]:
        await self._ensure_default_slots()

        def run(conn: sqlite3.Connection, now: float) -> dict[str, str]:
            rows = conn.execute("SELECT name, id FROM slots ORDER BY created_at, name").fetchall()
            return {str(r[0]): str(r[1]) for r in rows}

        return await self._db.read("list_datasets", run)

    async def create_slot(self, name: str, description: str = "") -> tuple[SlotInfo, bool]:
        def run(conn: sqlite3.Connection, now: float) -> tuple[SlotInfo, bool]:
            row = conn.execute("SELECT id, description FROM slots WHERE name = ?", (name,)).fetchone()
            if row is not None:
                count = conn.execute(
                    "SELECT count(*) FROM documents WHERE slot_id = ?", (row[0],)
                ).fetchone()[0]
                return SlotInfo(name, row[0], row[1], int(count)), False
            slot_id = str(uuid.uuid4())
            conn.execute(
                "INSERT INTO slots (id, name, description, created_at) VALUES (?, ?, ?, ?)",
                (slot_id, name, description, now),
            )
            return SlotInfo(name, slot_id, description, 0), True

        return await self._db.write("create_dataset", run)

    # -- documents --------------------------------------------------------------------------

    async def upsert(
        self, slot: str, name: str, text: str, metadata: DocMetadata, *, origin: str
    ) -> UpsertOutcome:
        await self._ensure_default_slots()
        if len(text) <= _INLINE_CHARS:
            passages, digest = _prepare(text, metadata)
        else:
            passages, digest = await anyio.to_thread.run_sync(_prepare, text, metadata)
        model = self._vectors.tag if self._vectors is not None else None

        def run(conn: sqlite3.Connection, now: float) -> tuple[UpsertOutcome, tuple[_Queued | None, bool]]:
            slot_id = self._slot_id(conn, slot)
            existing = conn.execute(
                "SELECT rowid, id, sha256, enabled, marks, created_at, last_recalled_at, recall_count"
                " FROM documents WHERE slot_id = ? AND name = ?",
                (slot_id, name),
            ).fetchone()
            before = None
            if existing is not None and self.journal is not None:
                known = self.journal.agrees(
                    conn, self._slot_name(conn, slot_id), name, bytes.fromhex(existing[2])
                )
                before = None if known else _document_at(conn, int(existing[0]))
            if existing is not None and existing[2] == digest:
                if before is not None:  # the journal lacks what the store holds
                    self._tell(conn, now, before, None, None)
                return UpsertOutcome(existing[1], created=False, changed=False), (None, False)
            values = (text, digest, now, origin, *(getattr(metadata, f) for f in _SCALAR_FILTERS))
            previous: dict[str, bytes] = {}
            if existing is None:
                document_id = str(uuid.uuid4())
                rowid = conn.execute(
                    "INSERT INTO documents (id, slot_id, name, text, sha256, created_at, updated_at, origin,"
                    " atom_type, project_module, language, task_type, error_pattern, scope)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (document_id, slot_id, name, text, digest, now, *values[2:]),
                ).lastrowid
                assert rowid is not None
            else:
                rowid, document_id = int(existing[0]), str(existing[1])
                conn.execute(
                    "UPDATE documents SET text = ?, sha256 = ?, updated_at = ?, origin = ?, atom_type = ?,"
                    " project_module = ?, language = ?, task_type = ?, error_pattern = ?, scope = ?"
                    " WHERE rowid = ?",
                    (*values, rowid),
                )
                previous = self._previous_vectors(conn, rowid, name, model)
                self._drop_passages(conn, rowid)
                conn.execute("DELETE FROM document_tags WHERE document = ?", (rowid,))
            conn.executemany(
                "INSERT OR IGNORE INTO document_tags (tag, document) VALUES (?, ?)",
                [(tag, rowid) for tag in metadata.tags],
            )
            kept: list[tuple[int, bytes]] = []
            queued: list[int] = []
            for position, content in enumerate(passages):
                blob = previous.get(embedded_text(name, position, content))
                passage = conn.execute(
                    "INSERT INTO passages (document, position, content, vector, model)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (rowid, position, content, blob, model if blob is not None else None),
                ).lastrowid
                assert passage is not None
                conn.execute(
                    "INSERT INTO passages_fts (rowid, name, content) VALUES (?, ?, ?)",
                    (passage, name, content),
                )
                if blob is not None:
                    kept.append((passage, blob))
                else:
                    queued.append(passage)
            generation = bump_generation(conn)
            waiting: _Queued | None = None
            held_back = False
            if self._vectors is not None:
                self._vectors.written(generation, rowid, kept)
                if queued:
                    waiting = (queued[0], queued[-1])
                    self._vectors.note_write(*waiting, len(queued))
                    held_back = not self._vectors.backlog_small(conn, *waiting)
            if existing is None:
                self._tell(conn, now, None, rowid, "created", bytes.fromhex(digest))
            elif self.journal is not None:
                after = Document(
                    id=document_id,
                    slot=self._slot_name(conn, slot_id),
                    name=name,
                    text=text,
                    enabled=bool(existing[3]),
                    created_at=existing[5],
                    updated_at=now,
                    metadata=replace(
                        metadata, tags=tuple(sorted(set(metadata.tags)))
                    ),  # as `_tags` reads them
                    origin=origin,
                    last_recalled_at=existing[6],
                    recall_count=int(existing[7]),
                    marks=json.loads(existing[4] or "{}"),
                )
                self._tell(conn, now, before, after, "updated", bytes.fromhex(digest))
            return UpsertOutcome(
                document_id,
                created=existing is None,
                changed=True,
                indexing_status="indexing" if waiting else "completed",
            ), (waiting, held_back)

        outcome, (waiting, held_back) = await self._db.write("upsert", run)
        if self._vectors is not None and waiting is not None:
            self._vectors.kick()
            if held_back:
                await anyio.to_thread.run_sync(self._vectors.wait_backlog, *waiting)
        return outcome

    @staticmethod
    def _previous_vectors(
        conn: sqlite3.Connection, rowid: int, name: str, model: str | None
    ) -> dict[str, bytes]:
        """The document's current vectors by embedded text: an unchanged passage keeps its own."""
        if model is None:
            return {}
        return {
            embedded_text(name, int(position), content): blob
            for position, content, blob in conn.execute(
                "SELECT position, content, vector FROM passages WHERE document = ? AND model = ?",
                (rowid, model),
            )
        }

    @staticmethod
    def _slot_name(conn: sqlite3.Connection, slot_id: str) -> str:
        return str(conn.execute("SELECT name FROM slots WHERE id = ?", (slot_id,)).fetchone()[0])

    def _rowid(self, conn: sqlite3.Connection, slot: str, document_id: str) -> int | None:
        slot_id = self._slot_id(conn, slot)
        row = conn.execute(
            "SELECT rowid FROM documents WHERE slot_id = ? AND id = ?", (slot_id, document_id)
        ).fetchone()
        return None if row is None else int(row[0])

    def _drop_passages(self, conn: sqlite3.Connection, rowid: int) -> None:
        ids = [r[0] for r in conn.execute("SELECT rowid FROM passages WHERE document = ?", (rowid,))]
        conn.executemany("DELETE FROM passages_fts WHERE rowid = ?", [(i,) for i in ids])
        conn.execute("DELETE FROM passages WHERE document = ?", (rowid,))

    async def _one(self, slot: str, column: str, value: str, operation: str) -> Document | None:
        """The slot's document whose `column` (id or name) equals `value`."""

        def run(conn: sqlite3.Connection, now: float) -> Document | None:
            slot_id = self._slot_id(conn, slot)
            row = conn.execute(
                f"SELECT {_DOC_COLUMNS} FROM documents AS d JOIN slots AS s ON s.id = d.slot_id"
                f" WHERE d.slot_id = ? AND d.{column} = ?",
                (slot_id, value),
            ).fetchone()
            return None if row is None else _document(conn, row)

        await self._ensure_default_slots()
        return await self._db.read(operation, run)

    async def get(self, slot: str, document_id: str) -> Document | None:
        return await self._one(slot, "id", document_id, "get_document")

    async def find(self, slot: str, name: str) -> Document | None:
        return await self._one(slot, "name", name, "find_document")

    async def list_documents(self, slot: str, *, offset: int, limit: int) -> tuple[list[Document], int]:
        def run(conn: sqlite3.Connection, now: float) -> tuple[list[Document], int]:
            slot_id = self._slot_id(conn, slot)
            total = conn.execute("SELECT count(*) FROM documents WHERE slot_id = ?", (slot_id,)).fetchone()[0]
            rows = conn.execute(
                f"SELECT {_DOC_COLUMNS} FROM documents AS d JOIN slots AS s ON s.id = d.slot_id"
                " WHERE d.slot_id = ? ORDER BY d.created_at, d.rowid LIMIT ? OFFSET ?",
                (slot_id, limit, offset),
            ).fetchall()
            return [_document(conn, r) for r in rows], int(total)

        await self._ensure_default_slots()
        return await self._db.read("list_documents", run)

    async def set_enabled(self, slot: str, document_id: str, enabled: bool) -> bool:
        def run(conn: sqlite3.Connection, now: float) -> bool:
            rowid = self._rowid(conn, slot, document_id)
            if rowid is None:
                return False
            before = self._before(conn, rowid)
            conn.execute("UPDATE documents SET enabled = ? WHERE rowid = ?", (int(enabled), rowid))
            generation = bump_generation(conn)  # the filter masks of dense search depend on it
            if self._vectors is not None:
                self._vectors.written(generation, None, [])
            self._tell(conn, now, before, rowid, "enabled" if enabled else "disabled")
            return True

        await self._ensure_default_slots()
        return await self._db.write("enable_document" if enabled else "disable_document", run)

    async def delete(self, slot: str, document_id: str) -> bool:
        def run(conn: sqlite3.Connection, now: float) -> bool:
            rowid = self._rowid(conn, slot, document_id)
            if rowid is None:
                return False
            before = self._before(conn, rowid)
            self._drop_passages(conn, rowid)
            conn.execute("DELETE FROM documents WHERE rowid = ?", (rowid,))
            generation = bump_generation(conn)
            if self._vectors is not None:
                self._vectors.written(generation, rowid, [])
            self._tell(conn, now, before, None, "deleted")
            return True

        await self._ensure_default_slots()
        return await self._db.write("delete_document", run)

    async def stamp_recalls(
        self, slot: str, document_ids: Sequence[str], *, now: float, window: float
    ) -> int:
        ids = sorted(set(document_ids))

        def run(conn: sqlite3.Connection, _: float) -> int:
            slot_id = self._slot_id(conn, slot)
            return conn.execute(
                STAMP_RECALLS,
                (now, slot_id, json.dumps(ids), now - window),
            ).rowcount

        if not ids:
            return 0
        await self._ensure_default_slots()
        return await self._db.write("stamp_recalls", run)

    async def set_recalls(
        self, slot: str, document_id: str, *, last_recalled_at: float | None, recall_count: int
    ) -> bool:
        def run(conn: sqlite3.Connection, _: float) -> bool:
            return (
                conn.execute(
                    "UPDATE documents SET last_recalled_at = ?, recall_count = ?"
                    " WHERE slot_id = ? AND id = ?",
                    (last_recalled_at, recall_count, self._slot_id(conn, slot), document_id),
                ).rowcount
                > 0
            )

        await self._ensure_default_slots()
        return await self._db.write("set_recalls", run)

    async def set_marks(self, slot: str, document_id: str, marks: Mapping[str, str]) -> bool:
        def run(conn: sqlite3.Connection, now: float) -> bool:
            rowid = self._rowid(conn, slot, document_id)
            if rowid is None:
                return False
            before = self._before(conn, rowid)
            (current,) = conn.execute("SELECT marks FROM documents WHERE rowid = ?", (rowid,)).fetchone()
            merged = {**json.loads(current or "{}"), **marks}
            kept = {k: v for k, v in sorted(merged.items()) if v}
            conn.execute("UPDATE documents SET marks = ? WHERE rowid = ?", (json.dumps(kept), rowid))
            self._tell(conn, now, before, rowid, "marked")
            return True

        await self._ensure_default_slots()
        return await self._db.write("set_marks", run)

    # -- search -----------------------------------------------------------------------------

    def _allowed_sql(
        self, conn: sqlite3.Connection, slots: list[str], flt: KnowledgeFilter
    ) -> tuple[str, list[Any]]:
        slot_ids = [self._slot_id(conn, s) for s in slots]
        clauses, params = _filter_sql(flt)
        marks = ", ".join("?" for _ in slot_ids)
        where = " AND ".join([f"d.slot_id IN ({marks})", "d.enabled = 1", *clauses])
        return where, [*slot_ids, *params]

    def _keyword(
        self, conn: sqlite3.Connection, terms: list[str], where: str, params: list[Any]
    ) -> dict[int, tuple[float, int]]:
        """document rowid -> (BM25 relevance, best passage rowid).

        The full-text index ranks its matches alone first and only its best
        `_KEYWORD_DEPTH` x `keyword_candidates` are looked up in `passages` and `documents`
        and filtered: joining every match cost two rowid look-ups each, two thirds of
        the keyword side at 100k passages (bench/knowledge_scale.py). The allowed passages
        among them are the best allowed ones overall; when they are fewer than asked (a
        narrow filter) and the index had more matches, every match is joined and filtered
        as before (when it had no more, that would only match them all again: 20-27 ms at
        1M passages for a question whose words are all common, which match none)."""
        if not terms:
            return {}
        match = self._terms.match(conn, terms, self.ranking.prefix_min)
        wanted = self.ranking.keyword_candidates
        depth = _KEYWORD_DEPTH * wanted
        ranked = conn.execute(
            "SELECT rowid, -bm25(passages_fts, 2.0, 1.0) AS relevance FROM passages_fts"
            " WHERE passages_fts MATCH ? ORDER BY relevance DESC LIMIT ?",
            [match, depth],
        ).fetchall()
        allowed = dict(
            conn.execute(
                "SELECT p.rowid, p.document FROM json_each(?) AS ranked"  # CROSS JOIN: in this order
                " CROSS JOIN passages AS p ON p.rowid = ranked.value"
                f" CROSS JOIN documents AS d ON d.rowid = p.document WHERE {where}",
                [json.dumps([passage for passage, _ in ranked]), *params],
            )
        )
        rows = [(allowed[passage], passage, relevance) for passage, relevance in ranked if passage in allowed]
        rows = rows[:wanted]
        if len(rows) < wanted and len(ranked) == depth:
            rows = conn.execute(
                "SELECT p.document, p.rowid, -bm25(passages_fts, 2.0, 1.0) AS relevance FROM passages_fts"
                " JOIN passages AS p ON p.rowid = passages_fts.rowid"
                " JOIN documents AS d ON d.rowid = p.document"
                f" WHERE passages_fts MATCH ? AND {where} ORDER BY relevance DESC LIMIT ?",
                [match, *params, wanted],
            ).fetchall()
        best: dict[int, tuple[float, int]] = {}
        for document, passage, relevance in rows:
            if document not in best:
                best[document] = (float(relevance), int(passage))
        return best

    def _dense(
        self,
        conn: sqlite3.Connection,
        query_vector: np.ndarray,
        where: str,
        params: list[Any],
        keyword: dict[int, tuple[float, int]],
    ) -> dict[int, tuple[float, int]]:
        """document rowid -> (best cosine, its passage rowid): the nearest documents, and
        every keyword candidate (so its fused score has both halves)."""
        if self._vectors is None:
            return {}
        index = self._vectors.index(conn)
        rows = self._vectors.rows_allowed(conn, index, where, params)
        return index.best_per_document(
            query_vector, rows=rows, limit=self.ranking.dense_candidates, documents=keyword
        )

    def _query_vector(self, query: str) -> tuple[np.ndarray | None, str | None]:
        vector, _, degraded = self._query_embedding(query, tokens=False)
        return vector, degraded

    def _query_embedding(
        self, query: str, *, tokens: bool
    ) -> tuple[np.ndarray | None, QueryTokens | None, str | None]:
        """The query's vector, with its token states if `tokens` and the model gives them
        (the second hop pools its residual words from them), or why there is none."""
        if self.embedder is None:
            return None, None, "no embedding model is configured: keyword search only"
        try:
            if tokens and isinstance(self.embedder, TokenEmbedder):
                states = self.embedder.embed_query_tokens(query)
                if states is not None:
                    return states.vector, states, None
            return self.embedder.embed_query(query), None, None
        except EmbedderUnavailable as exc:
            return None, None, f"{exc}: keyword search only"

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
        await self._ensure_default_slots()
        return await anyio.to_thread.run_sync(self._search, slots, query, flt, top_k, score_threshold, mode)

    def _search(
        self,
        slots: list[str],
        query: str,
        flt: KnowledgeFilter,
        top_k: int,
        score_threshold: float | None,
        mode: SearchMode,
    ) -> SearchPage:
        """The whole search in one worker thread: query vector, catching up, ranking."""
        degraded: str | None = None
        query_vector = tokens = None
        if mode in ("hybrid", "dense"):
            hop_ready = mode == "hybrid" and self.ranking.second_hop
            query_vector, tokens, degraded = self._query_embedding(query, tokens=hop_ready)
            if query_vector is None:
                mode = "keyword"
        where, params = self._db.run(
            "search_memory", lambda conn, now: self._allowed_sql(conn, slots, flt), False
        )
        if query_vector is not None and self._vectors is not None:
            degraded = self._vectors.catch_up(where, tuple(params))

        dense: dict[int, tuple[float, int]] = {}
        matches = QueryMatches(query, self._terms)  # the head's words, read once for both stages

        def rank(conn: sqlite3.Connection, now: float) -> SearchPage | tuple[Fused, HopPlan | None]:
            if mode == "substring":
                return self._substring(conn, query, where, params, top_k)
            keyword = self._keyword(conn, query_terms(query), where, params) if mode != "dense" else {}
            if query_vector is not None and mode != "keyword":
                dense.update(self._dense(conn, query_vector, where, params, keyword))
            if mode == "hybrid":
                fused = fuse(self.ranking, keyword, dense)
                if self.ranking.rerank:
                    fused = rerank(conn, matches, Rankings(fused, keyword, dense))
            else:  # one side alone: its own score (BM25 normalised to the best hit)
                side = dense if mode == "dense" else keyword
                best = max((v[0] for v in side.values()), default=0.0) or 1.0
                norm = 1.0 if mode == "dense" else best
                fused = sorted(
                    ((max(0.0, v[0]) / norm, document, v[1]) for document, v in side.items()),
                    key=lambda item: (-item[0], item[1]),
                )
            if self.ranking.feedback_docs and fused and mode != "dense":
                fused = self._feedback(conn, query, fused, where, params)
            hop = None
            if self.ranking.second_hop and mode == "hybrid":
                hop = plan_hop(
                    conn, self._terms, self._coverage, query, fused, where, params, self.ranking.prefix_min
                )
            return fused, hop

        ranked = self._db.run("search_memory", rank, False)
        if isinstance(ranked, SearchPage):
            return ranked
        fused, hop = ranked
        residual = None  # None: no hop
        if hop is not None:  # the residual words' own tokens, else the model runs on them alone
            residual = tokens.pooled(hop.residual_words) if tokens is not None else None
            if residual is None:
                residual = self._query_vector(hop.residual)[0]

        def page(conn: sqlite3.Connection, now: float) -> SearchPage:
            calibrated = self.ranking.calibrated and mode != "dense"  # dense: a similarity search, cosines
            ordered = fused[: max(top_k, WINDOW)] if calibrated else fused
            hopped: set[int] = set()  # the second hop's documents: as relevant as the hit above them
            if hop is not None and residual is not None and self._vectors is not None:
                hops = score_hops(hop, self._vectors.index(conn), residual)
                ordered, hopped = insert_hops(ordered, hops), {document for document, _ in hops}
            evidence: dict[int, Evidence] = {}
            if calibrated:
                ordered, evidence = calibrate(conn, matches, ordered, dense, hopped)
            scored = [item for item in ordered if score_threshold is None or item[0] >= score_threshold]
            hits = [
                self._hit(conn, document, passage, score, evidence.get(document))
                for score, document, passage in scored[:top_k]
            ]
            return SearchPage(hits, len(scored), degraded)

        return self._db.run("search_memory", page, False)

    def _feedback(
        self,
        conn: sqlite3.Connection,
        query: str,
        fused: list[tuple[float, int, int]],
        where: str,
        params: list[Any],
    ) -> list[tuple[float, int, int]]:
        """Pseudo-relevance feedback: a second keyword round with the words of the best
        passages added to the query's, its BM25 (relative to its best hit, times
        `feedback_weight`) added to each document's fused score. Finds the second turn of
        a two-turn answer, which shares words with the first turn but not the question."""
        top = [passage for _, _, passage in fused[: self.ranking.feedback_docs]]
        marks = ", ".join("?" for _ in top)
        texts = [r[0] for r in conn.execute(f"SELECT content FROM passages WHERE rowid IN ({marks})", top)]
        terms = query_terms(" ".join([query, *texts]))
        second = self._keyword(conn, terms, where, params)
        best = max((v[0] for v in second.values()), default=0.0) or 1.0
        scores = {document: (score, passage) for score, document, passage in fused}
        for document, (relevance, passage) in second.items():
            score, shown = scores.get(document, (0.0, passage))
            scores[document] = (score + self.ranking.feedback_weight * relevance / best, shown)
        return sorted(
            ((score, document, passage) for document, (score, passage) in scores.items()),
            key=lambda item: (-item[0], item[1]),
        )

    def _substring(
        self, conn: sqlite3.Connection, query: str, where: str, params: list[Any], top_k: int
    ) -> SearchPage:
        needle = query.lower()
        rows = conn.execute(
            f"SELECT d.rowid FROM documents AS d WHERE {where} AND instr(lower(d.text), ?) > 0"
            " ORDER BY d.updated_at DESC LIMIT ?",
            [*params, needle, top_k],
        ).fetchall()
        total = conn.execute(
            f"SELECT count(*) FROM documents AS d WHERE {where} AND instr(lower(d.text), ?) > 0",
            [*params, needle],
        ).fetchone()[0]
        hits = []
        for (document,) in rows:
            passage = conn.execute(
                "SELECT rowid FROM passages WHERE document = ? AND instr(lower(content), ?) > 0"
                " ORDER BY position",
                (document, needle),
            ).fetchone()
            if passage is None:
                passage = conn.execute(
                    "SELECT rowid FROM passages WHERE document = ? ORDER BY position", (document,)
                ).fetchone()
            hits.append(self._hit(conn, int(document), int(passage[0]), 1.0))
        return SearchPage(hits, int(total))

    def _hit(
        self,
        conn: sqlite3.Connection,
        document: int,
        passage: int,
        score: float,
        evidence: Evidence | None = None,
    ) -> SearchHit:
        row = conn.execute(
            f"SELECT {_DOC_COLUMNS} FROM documents AS d JOIN slots AS s ON s.id = d.slot_id"
            " WHERE d.rowid = ?",
            (document,),
        ).fetchone()
        doc = _document(conn, row)
        content, position = conn.execute(
            "SELECT content, position FROM passages WHERE rowid = ?", (passage,)
        ).fetchone()
        return SearchHit(
            document_id=doc.id,
            document_name=doc.name,
            slot=doc.slot,
            score=round(score, 4),
            content=content,
            position=int(position),
            enabled=doc.enabled,
            metadata=doc.metadata,
            word_count=doc.word_count,
            origin=doc.origin,
            updated_at=doc.updated_at,
            last_recalled_at=doc.last_recalled_at,
            recall_count=doc.recall_count,
            evidence=evidence,
        )

    async def similar_documents(
        self, slot: str, flt: KnowledgeFilter, *, threshold: float, top_k: int
    ) -> list[tuple[str, str, float]] | None:
        """(document id, document id, cosine) of the enabled documents of `slot` matching
        `flt` whose best pair of passage vectors is at least `threshold` alike (each
        passage's `top_k` nearest others), from the stored vectors: no query is embedded.
        Passages still waiting for a vector are embedded first. None without a model."""
        await self._ensure_default_slots()
        if self._vectors is None:
            return None
        return await anyio.to_thread.run_sync(self._similar, self._vectors, slot, flt, threshold, top_k)

    def _similar(
        self, vectors: KnowledgeVectors, slot: str, flt: KnowledgeFilter, threshold: float, top_k: int
    ) -> list[tuple[str, str, float]]:
        where, params = self._db.run(
            "similar_documents", lambda conn, now: self._allowed_sql(conn, [slot], flt), False
        )
        while vectors.embed_queued(EMBED_BATCH, where, tuple(params)):
            pass

        def run(conn: sqlite3.Connection, now: float) -> list[tuple[str, str, float]]:
            index = vectors.index(conn)
            pairs = index.near_pairs(vectors.rows_allowed(conn, index, where, params), threshold, top_k)
            rowids = sorted({r for pair in pairs for r in pair})
            ids: dict[int, str] = {}
            for start in range(0, len(rowids), 500):
                part = rowids[start : start + 500]
                marks = ", ".join("?" for _ in part)
                ids.update(conn.execute(f"SELECT rowid, id FROM documents WHERE rowid IN ({marks})", part))
            return [(ids[a], ids[b], score) for (a, b), score in pairs.items()]

        return self._db.run("similar_documents", run, False)

    # -- upkeep -----------------------------------------------------------------------------

    async def stale_passages(self) -> int:
        """Passages still waiting for a vector of the current model."""
        if self._vectors is None:
            return 0
        return await anyio.to_thread.run_sync(self._vectors.queued)

    async def upkeep(self) -> int:
        """Embed every passage still waiting for a vector (new, or left by another model)."""
        return await self.reembed_batch(None)

    async def reembed_batch(self, batch: int | None = REEMBED_STEP) -> int:
        """Embed up to `batch` passages (None: all) still waiting for a vector, at the
        background's low priority; return how many."""
        if self._vectors is None:
            return 0
        try:
            return await anyio.to_thread.run_sync(self._vectors.drain, batch)
        except EmbedderUnavailable:  # the model cannot load: keyword search keeps working
            return 0

    async def count(self) -> int:
        def run(conn: sqlite3.Connection, now: float) -> int:
            return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])

        return await self._db.read("count", run)

    async def ping(self) -> None:
        await self.count()

    async def vector_index_state(self) -> IndexState | None:
        """The ANN vector index (`knowledge.ann` beside the database); None without a model."""
        if self._vectors is None:
            return None
        return await anyio.to_thread.run_sync(self._vectors.index_state)

    async def rebuild_vector_index(self) -> IndexState | None:
        """Build the ANN vector index anew from the stored vectors and save it (the store
        serves meanwhile); its state afterwards. None without a model."""
        if self._vectors is None:
            return None
        await anyio.to_thread.run_sync(self._vectors.replace_index)
        return await self.vector_index_state()

    async def close(self) -> None:
        if self._vectors is not None:
            await anyio.to_thread.run_sync(self._vectors.close)
        self._coverage.close()
        self._db.close()
