"""Meaning for memory_search: entry vectors, embedded in the background, fused with BM25.

Writes never wait for the model: a trigger queues every new or changed entry in
`pending_vectors`, and `upkeep()` (the bridge's background loop) embeds the queue in small
batches that give way to the calls being served (see search/_background.py).
A query then ranks like knowledge search: the keyword matches (all words, else any
word) are ordered by 0.7 x cosine + 0.3 x normalised BM25; when no word matches at all,
the entries nearest in meaning are returned (`match: "semantic"`).
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import threading
from typing import TYPE_CHECKING, Any

from ..._errors import EmbedderUnavailable
from ...search._background import embed_in_background
from ...search._embed import Embedder, LazyEmbedder
from .._base import Entry, EntryPage
from ._db import Database
from ._entry_rows import ENTRY_COLUMNS, RANK, entry_of

if TYPE_CHECKING:
    import numpy as np

    from ...search._vectors import VectorIndex

__all__ = ["EntrySemantics"]

VECTOR_WEIGHT = 0.7
KEYWORD_WEIGHT = 0.3
RERANK_LIMIT = 200  # keyword matches re-ranked by meaning; beyond this, BM25 order
NEAREST_FLOOR = 0.3  # cosine below which a word-less match is noise
_NEAREST_CANDIDATES = 2000
_BATCH = 8  # texts per background batch: about 0.1 s of one core between checks for requests


def _sha(title: str, body: str) -> str:
    return hashlib.sha256(f"{title}\n\n{body}".encode()).hexdigest()


def _order(scored: list[tuple[float, Entry]]) -> list[Entry]:
    ranked = sorted(scored, key=lambda item: (-item[0], -item[1].hits, _desc(item[1].updated), item[1].id))
    return [entry for _, entry in ranked]


def _desc(text: str) -> tuple[int, ...]:
    return (*(-ord(c) for c in text), 0)


class EntrySemantics:
    def __init__(self, embedder: Embedder | LazyEmbedder) -> None:
        self.embedder = embedder
        self._index: VectorIndex | None = None
        self._lock = threading.Lock()
        self._requeued_other_models = False

    def query_vector(self, query: str) -> tuple[np.ndarray | None, str | None]:
        try:
            return self.embedder.embed_query(query), None
        except EmbedderUnavailable as exc:
            return None, f"{exc}: keyword ranking only"

    def _vectors(self, conn: sqlite3.Connection) -> VectorIndex:
        generation = int(conn.execute("SELECT value FROM meta WHERE key = 'vector_generation'").fetchone()[0])
        with self._lock:
            if self._index is None:
                from ...search._vectors import VectorIndex

                self._index = VectorIndex(self.embedder.dimension)
            if self._index.generation != generation:
                rows = conn.execute(
                    "SELECT rowid, rowid, vector FROM entry_vectors WHERE model = ?", (self.embedder.name,)
                )
                self._index.load(rows, generation)
            return self._index

    def rank_keyword_matches(
        self,
        conn: sqlite3.Connection,
        vector: np.ndarray,
        source: str,
        where: list[str],
        params: list[Any],
        offset: int,
        limit: int,
    ) -> EntryPage | None:
        """Keyword matches ordered by the fused score; None when there are none or too many."""
        condition = " AND ".join(where)
        total = int(conn.execute(f"SELECT count(*) FROM {source} WHERE {condition}", params).fetchone()[0])
        if not total or total > RERANK_LIMIT:
            return None
        rows = conn.execute(
            f"SELECT e.rowid, -{RANK}, {ENTRY_COLUMNS} FROM {source} WHERE {condition}", params
        ).fetchall()
        best_keyword = max(row[1] for row in rows) or 1.0
        index = self._vectors(conn)
        similarity = index.best_per_document(vector, rows=index.rows_of({int(row[0]) for row in rows}))
        scored = [
            (
                VECTOR_WEIGHT * max(0.0, similarity.get(int(row[0]), (0.0, 0))[0])
                + KEYWORD_WEIGHT * row[1] / best_keyword,
                entry_of(row[2:]),
            )
            for row in rows
        ]
        return EntryPage(_order(scored)[offset : offset + limit], total)

    def nearest(
        self,
        conn: sqlite3.Connection,
        vector: np.ndarray,
        where: list[str],
        params: list[Any],
        offset: int,
        limit: int,
    ) -> EntryPage:
        """Entries nearest in meaning (cosine >= NEAREST_FLOOR) among those the filter allows."""
        similarity = self._vectors(conn).best_per_document(vector, limit=_NEAREST_CANDIDATES)
        close = [rowid for rowid, (cosine, _) in similarity.items() if cosine >= NEAREST_FLOOR]
        scored: list[tuple[float, Entry]] = []
        condition = " AND ".join(where)
        for start in range(0, len(close), 500):
            chunk = close[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            for row in conn.execute(
                f"SELECT e.rowid, {ENTRY_COLUMNS} FROM entries AS e"
                f" WHERE e.rowid IN ({marks}) AND {condition}",
                [*chunk, *params],
            ):
                scored.append((VECTOR_WEIGHT * similarity[int(row[0])][0], entry_of(row[1:])))
        return EntryPage(_order(scored)[offset : offset + limit], len(scored), match="semantic")

    async def upkeep(self, db: Database) -> int:
        """Embed queued entries in batches; return how many were embedded."""
        if not self._requeued_other_models:
            await db.write("upkeep", self._requeue_other_models)
            self._requeued_other_models = True
        done = 0
        while True:
            queued = await db.read("upkeep", self._pending)
            if not queued:
                return done
            batch = [(rowid, title, body) for rowid, title, body, sha in queued if sha != _sha(title, body)]
            if len(batch) < len(queued):  # text unchanged (a tags-only update): the vector stands
                same = [rowid for rowid, title, body, sha in queued if sha == _sha(title, body)]
                await db.write("upkeep", functools.partial(self._dequeue, rowids=same))
            if not batch:
                continue
            texts = [f"{title}\n\n{body}" for _, title, body in batch]
            try:
                vectors = await embed_in_background(self.embedder, texts)
            except EmbedderUnavailable:
                return done  # no model: keyword ranking keeps working
            await db.write("upkeep", functools.partial(self._store, batch=batch, vectors=vectors))
            done += len(batch)

    def _requeue_other_models(self, conn: sqlite3.Connection, now: float) -> None:
        conn.execute(
            "INSERT OR IGNORE INTO pending_vectors (rowid) SELECT rowid FROM entry_vectors WHERE model != ?",
            (self.embedder.name,),
        )

    def _pending(self, conn: sqlite3.Connection, now: float) -> list[tuple[int, str, str, str | None]]:
        """Queued entries: rowid, title, body, and the text digest of their current model's vector."""
        return [
            (int(r[0]), r[1], r[2], r[3])
            for r in conn.execute(
                "SELECT p.rowid, e.title, e.body, v.sha256 FROM pending_vectors AS p"
                " JOIN entries AS e ON e.rowid = p.rowid"
                " LEFT JOIN entry_vectors AS v ON v.rowid = p.rowid AND v.model = ? LIMIT ?",
                (self.embedder.name, _BATCH),
            )
        ]

    @staticmethod
    def _dequeue(conn: sqlite3.Connection, now: float, *, rowids: list[int]) -> None:
        conn.executemany("DELETE FROM pending_vectors WHERE rowid = ?", [(rowid,) for rowid in rowids])

    def _store(
        self, conn: sqlite3.Connection, now: float, *, batch: list[tuple[int, str, str]], vectors: np.ndarray
    ) -> None:
        """Save vectors whose entry did not change meanwhile (a changed one stays queued)."""
        stored = []
        for (rowid, title, body), vector in zip(batch, vectors, strict=True):
            current = conn.execute("SELECT title, body FROM entries WHERE rowid = ?", (rowid,)).fetchone()
            if current is None or tuple(current) != (title, body):
                continue
            conn.execute(
                "INSERT OR REPLACE INTO entry_vectors (rowid, model, sha256, vector) VALUES (?, ?, ?, ?)",
                (rowid, self.embedder.name, _sha(title, body), vector.tobytes()),
            )
            conn.execute("DELETE FROM pending_vectors WHERE rowid = ?", (rowid,))
            stored.append((rowid, vector))
        row = conn.execute(
            "UPDATE meta SET value = CAST(value AS INTEGER) + 1"
            " WHERE key = 'vector_generation' RETURNING value"
        ).fetchone()
        with self._lock:
            if self._index is not None and self._index.generation == int(row[0]) - 1:
                for rowid, vector in stored:
                    self._index.remove_document(rowid)
                    self._index.add([rowid], rowid, vector[None, :])
                self._index.generation = int(row[0])
