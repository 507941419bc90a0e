"""Passage vectors of the embedded knowledge store: the index and the queue.

A write commits without the model. A passage is stored without a vector (`model` NULL)
unless its document kept the same text under the same model, and a background thread
embeds the queue through the intake pipeline (search/_intake.py: every core busy at the
lowest CPU priority, vectors stored in batches, each in its own short transaction; what is
not stored yet is still queued, so after a crash the next start embeds it). A write returns
once at most `BACKLOG` passages queued up to its own still wait (backpressure, so a burst
of saves goes at the model's pace and never leaves a long queue behind), not counting the
passages of other large writes (more than `BACKLOG` passages), which wait for their own;
and the background thread embeds first passages first. So a small save is never held up
by a large document saved at the same time. A search first embeds what is
still queued among the documents it may return, up to a cap (a few notes: so many
passages and so much text); beyond that (another process's bulk import still catching
up, a large document's last passages) it says that those passages rank by keywords only
for now.

The index is the exact in-memory matrix (search/_vectors.py) below `ann_threshold` passage
vectors, and the ANN index (search/_ann.py, kept in `knowledge.ann`: _knowledge_ann.py)
from there on.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._errors import EmbedderUnavailable, StoreError
from ...search._embed import Embedder, LazyEmbedder
from ...search._intake import Intake
from ._db import Database

if TYPE_CHECKING:
    import numpy as np

    from ...search._ann import AnnIndex, Fetch
    from ...search._vectors import VectorIndex

__all__ = ["ANN_THRESHOLD", "TEXT_FORMAT", "IndexState", "KnowledgeVectors", "embedded_text"]

log = logging.getLogger(__name__)

BATCH = 8  # passages stored per transaction: what a small save queued behind a large one waits for
IN_FLIGHT = 8  # passages in the pipeline at most: a small save waits behind no more (a long text: ~60 ms)
SEARCH_CATCH_UP = 64  # queued passages a search embeds itself before it answers
# and so much text at most: a large document's last 63 passages (~45,000 characters) cost a
# search 820 ms here (bench/big_write.py); this many characters are a few dozen notes, ~0.1 s
SEARCH_CATCH_UP_CHARS = 8_000
BACKLOG = 16  # queued passages a write may leave behind (it waits for the rest)
BACKLOG_WAIT = 30.0  # seconds a write waits at most for the queue to shrink
_MASK_CACHE = 32
ANN_THRESHOLD = 100_000  # passage vectors from which search uses the ANN index (bench/ann.py)
_SAVE_AFTER = 10_000  # passages a catch-up changed that are worth saving the index for at once
# passages without this model's vector (both halves use the model index)
_WAITING = "(p.model IS NULL OR p.model < ? OR p.model > ?)"
_Row = tuple[int, int, int, str, str]  # a queued passage: rowid, document, position, content, document name


TEXT_FORMAT = "passage"  # recorded with every vector: a different format means re-embedding


def embedded_text(name: str, position: int, content: str) -> str:
    """What the model sees for a passage: the passage alone. The document name in front of
    the first passage (before TEXT_FORMAT) cost recall on both eval sets of bench/retrieval.py."""
    return content


class KnowledgeVectors:
    """The vector side of one store: queue, background embedding, index, filter masks."""

    def __init__(
        self, db: Database, embedder: Embedder | LazyEmbedder, *, ann_threshold: int = ANN_THRESHOLD
    ) -> None:
        self._db = db
        self.ann_threshold = ann_threshold  # passage vectors from which search uses the ANN index (0: never)
        self._ann: AnnIndex | None = None
        self._ann_path = db.path.with_suffix(".ann")  # knowledge.db -> knowledge.ann
        self._ann_tried = False  # the saved file was looked at
        self._saved = -1  # the generation the file was saved at
        self._building: threading.Thread | None = None
        self._built: AnnIndex | None = None  # a background build's index, for the next search
        self._failure = ""  # why the last background build failed: this process searches exactly
        self.embedder = embedder
        self.tag = f"{embedder.name}+{TEXT_FORMAT}"  # the `model` column: model and text format
        self._index: VectorIndex | None = None  # built on first search (numpy loads then)
        self._index_lock = threading.Lock()
        self._row_masks: dict[tuple[str, tuple[Any, ...]], tuple[tuple[int, int, int], Any]] = {}
        self._embedding = threading.Lock()  # one batch at a time among searches and embed_queued
        self._draining = threading.Lock()  # one pipeline run at a time: worker or upkeep
        self._intake = Intake(
            embedder,
            self._fetch,
            lambda row: embedded_text(row[4], row[2], row[3]),
            self._save,
            threads=embedder.threads if isinstance(embedder, LazyEmbedder) else 1,
            batch=BATCH,
            in_flight=IN_FLIGHT,
        )
        self._progress = threading.Condition()  # notified when a batch is stored or embedding stops
        self._batches = 0  # batches stored so far: a waiting write looks again when it grows
        self._stops = 0  # times the worker stopped (queue empty, or an error): waiting writes return
        self._large: list[tuple[int, int]] = []  # rowid ranges of large writes' passages still queued
        self._failed = False  # the model cannot load: nothing will shrink the queue
        self._requeued = False
        self._wake = threading.Event()
        self._closed = False
        self._worker: threading.Thread | None = None

    # -- the queue ----------------------------------------------------------------------------

    def kick(self) -> None:
        """Wake the background thread (started on first use): passages are queued."""
        if self._closed:
            return
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name="knowledge-embed", daemon=True)
            self._worker.start()
        self._wake.set()

    def _work(self) -> None:
        try:
            while not self._closed:
                self._wake.wait()
                self._wake.clear()
                try:
                    self.drain()
                except EmbedderUnavailable:  # no model: search says so, keywords keep working
                    return
                except StoreError as exc:  # the next write or search tries again
                    log.warning("embedding knowledge passages failed: %s", exc)
                self._settle(failed=False)
        finally:  # the worker is gone: writes must not wait for it
            self._settle(failed=True)

    def _settle(self, *, failed: bool) -> None:
        """The worker stopped (the queue is empty, or it cannot go on): waiting writes look
        again, and large writes whose passages all have vectors are forgotten."""
        with self._progress:
            large = list(self._large)
        done = [span for span in large if not self._backlog(span[1], [], since=span[0])]
        with self._progress:
            self._failed = self._failed or failed
            self._large = [span for span in self._large if span not in done]
            self._stops += 1
            self._progress.notify_all()

    def note_write(self, first: int, last: int, passages: int) -> None:
        """A write queued `passages` passages, rowids first..last (call it inside the write's
        transaction): a large one's never count toward another write's backlog."""
        if passages > BACKLOG:
            with self._progress:
                self._large.append((first, last))

    def _backlog(self, last: int, others: list[tuple[int, int]], *, since: int = 0) -> int:
        """Passages with rowids `since`..`last` still without a vector, but those in `others`."""
        return int(self._db.run("queued_vectors", lambda conn, now: _count(conn, last, others, since), False))

    def backlog_small(self, conn: sqlite3.Connection, first: int, last: int) -> bool:
        """Inside a write's transaction: would `wait_backlog` for its passages (rowids
        first..last) return at once? Then the write skips the thread hop to it."""
        with self._progress:
            others = [span for span in self._large if span != (first, last)]
        return _count(conn, last, others, 0) <= BACKLOG

    def wait_backlog(self, first: int, last: int) -> None:
        """Block until at most BACKLOG passages queued up to a write's own (rowids
        first..last) still wait, not counting other large writes' passages (or the model
        failed, or BACKLOG_WAIT passed): a write's backpressure."""
        deadline = time.monotonic() + BACKLOG_WAIT
        with self._progress:
            stops = self._stops
        while not self._failed and not self._closed:
            with self._progress:
                if self._stops != stops:
                    return
                seen = self._batches
                others = [span for span in self._large if span != (first, last)]
            if self._backlog(last, others) <= BACKLOG:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with self._progress:
                if (self._batches, self._stops) == (seen, stops):
                    self._progress.wait(min(left, 1.0))

    def close(self) -> None:
        """Stop the background thread (after the passages in flight)."""
        self._closed = True
        self._wake.set()
        with self._progress:
            self._progress.notify_all()
        if self._worker is not None:
            self._worker.join()
        with self._index_lock:
            try:
                self._save_ann()
            except OSError as exc:  # a cache: the next start catches the old file up
                log.warning("saving the vector index %s failed: %s", self._ann_path, exc)
        with self._draining:  # an upkeep call's run, too
            self._intake.close()

    def _requeue_other_models(self, conn: sqlite3.Connection, now: float) -> int:
        """Vectors of another model are useless to this one: queue their passages again."""
        return conn.execute(
            "UPDATE passages SET vector = NULL, model = NULL WHERE model != ?", (self.tag,)
        ).rowcount

    def _requeue_once(self) -> None:
        if not self._requeued:
            self._requeued = True
            self._db.run("requeue_vectors", self._requeue_other_models, True)

    def queued(self, where: str = "", params: tuple[Any, ...] = ()) -> int:
        """Passages waiting for a vector of this model (of the documents `where` allows, if
        given); reads only."""
        return self._over_queue("count(*)", where, params)

    def _over_queue(self, aggregate: str, where: str, params: tuple[Any, ...]) -> int:
        """`aggregate` over the passages `queued` counts."""
        model = (self.tag, self.tag)

        def run(conn: sqlite3.Connection, now: float) -> int:
            if not where:
                sql, args = f"SELECT {aggregate} FROM passages AS p WHERE {_WAITING}", model
            else:  # driven by the waiting passages (the model index; CROSS JOIN keeps that
                # order): scanning the documents the filter allows would cost O(store) a search
                sql = (
                    f"SELECT {aggregate} FROM passages AS p CROSS JOIN documents AS d ON d.rowid = p.document"
                    f" WHERE {_WAITING} AND {where}"
                )
                args = (*model, *params)
            return int(conn.execute(sql, args).fetchone()[0])

        return self._db.run("queued_vectors", run, False)

    def drain(self, limit: int | None = None) -> int:
        """Embed queued passages (at most `limit`) on the intake pipeline's low-priority
        threads until none is left; how many. First passages first, as in `embed_queued`.

        Raises EmbedderUnavailable when the model cannot load."""
        self._requeue_once()
        with self._draining:
            return self._intake.run(limit)

    def _fetch(self, limit: int, busy: Sequence[_Row]) -> list[_Row]:
        """The pipeline's next queued passages, but those it is embedding (none once closed)."""
        if self._closed:
            return []
        return self._queued_rows(
            limit, f"p.rowid NOT IN ({', '.join('?' * len(busy))})" if busy else "", tuple(r[0] for r in busy)
        )

    def _save(self, rows: list[_Row], vectors: np.ndarray) -> None:
        self._db.run("embed_queued", lambda conn, now: self._store(conn, rows, vectors), True)

    def _queued_rows(self, limit: int, where: str, params: tuple[Any, ...]) -> list[_Row]:
        """Up to `limit` passages without a vector (of the documents `where` allows), first
        passages first: a small document queued behind a large one is not kept waiting."""
        filtered = f" AND {where}" if where else ""
        rows: list[_Row] = self._db.run(
            "embed_queued",
            lambda conn, now: conn.execute(
                "SELECT p.rowid, p.document, p.position, p.content, d.name FROM passages AS p"
                f" CROSS JOIN documents AS d ON d.rowid = p.document WHERE p.model IS NULL{filtered}"
                " ORDER BY p.position, p.rowid LIMIT ?",
                (*params, limit),
            ).fetchall(),
            False,
        )
        return rows

    def _queued_chars(self, where: str, params: tuple[Any, ...]) -> int:
        """The text of the passages `queued` counts, in characters (asked only when they are
        few: it reads each one's row, where the count reads the index alone)."""
        return self._over_queue("coalesce(sum(length(p.content)), 0)", where, params)

    def embed_queued(self, limit: int, where: str = "", params: tuple[Any, ...] = ()) -> int:
        """Embed up to `limit` queued passages (of the documents `where` allows) on the
        caller's behalf, at its priority (a search waits for them); how many.

        Raises EmbedderUnavailable when the model cannot load."""
        self._requeue_once()
        with self._embedding:
            rows = self._queued_rows(limit, where, params)
            if not rows:
                return 0
            vectors = self.embedder.embed_documents([embedded_text(r[4], r[2], r[3]) for r in rows])
            self._save(rows, vectors)
            return len(rows)

    def _store(self, conn: sqlite3.Connection, rows: list[_Row], vectors: np.ndarray) -> None:
        """Save the vectors of passages that did not change meanwhile."""
        stored: list[tuple[int, int, np.ndarray]] = []
        for (passage, document, _, content, name), vector in zip(rows, vectors, strict=True):
            changed = conn.execute(
                "UPDATE passages SET vector = ?, model = ? WHERE rowid = ? AND model IS NULL AND content = ?"
                " AND document = (SELECT rowid FROM documents WHERE rowid = ? AND name = ?)",
                (vector.tobytes(), self.tag, passage, content, document, name),
            ).rowcount
            if changed:
                stored.append((passage, document, vector))
        generation = bump_generation(conn)
        self._index_step(generation, removed=None, added=stored)
        with self._progress:
            self._batches += 1
            self._progress.notify_all()

    def catch_up(self, where: str, params: tuple[Any, ...]) -> str | None:
        """Before a search: embed the queued passages it could return, if there are only a
        few; otherwise say how many rank by keywords only (None when all have vectors)."""
        waiting = self.queued(where, params)
        if 0 < waiting <= SEARCH_CATCH_UP and self._queued_chars(where, params) <= SEARCH_CATCH_UP_CHARS:
            try:
                self.embed_queued(SEARCH_CATCH_UP, where, params)
            except EmbedderUnavailable as exc:  # an embeddings endpoint that failed just now
                log.warning("embedding queued passages before a search failed: %s", exc)
            waiting = self.queued(where, params)
        if not waiting:
            return None
        return (
            f"{waiting} passages are still waiting for their vectors: they rank by keywords only until then"
        )

    # -- the index ----------------------------------------------------------------------------

    def _current(self) -> VectorIndex | AnnIndex | None:
        return self._ann if self._ann is not None else self._index

    def written(self, generation: int, document: int | None, kept: list[tuple[int, bytes]]) -> None:
        """Our own write replaced `document`'s passages (None: changed no passage);
        `kept` are (passage, vector) pairs it carried over."""
        if self._current() is None:
            return
        import numpy as np

        added = (
            []
            if document is None
            else [(passage, document, np.frombuffer(blob, dtype=np.float32)) for passage, blob in kept]
        )
        self._index_step(generation, removed=document, added=added)

    def _index_step(
        self, generation: int, *, removed: int | None, added: list[tuple[int, int, np.ndarray]]
    ) -> None:
        """Keep the index in step with our own write (if it was current)."""
        with self._index_lock:
            index = self._current()
            if index is None or index.generation != generation - 1:
                return  # stale anyway: the next search reloads or catches it up
            if removed is not None:
                index.remove_document(removed)
            for passage, document, vector in added:
                index.add([passage], document, vector[None, :])
            index.generation = generation

    def index(self, conn: sqlite3.Connection) -> VectorIndex | AnnIndex:
        """The index: exact (the matrix, reloaded when another process or connection has
        written) below `ann_threshold` passages, else the ANN index (caught up likewise);
        while the ANN index is first built, in the background, the matrix serves."""
        generation = int(conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])
        with self._index_lock:
            if self._built is not None:  # a background build finished: it replaces the matrix
                self._ann, self._built, self._index = self._built, None, None
            if self._ann is None and self._wants_ann(conn, generation):
                self._open_ann(conn)
            if self._ann is not None:
                return self._ann_at(conn, self._ann, generation)
            if self._index is None:
                from ...search._vectors import VectorIndex

                self._index = VectorIndex(self.embedder.dimension)
            if self._index.generation != generation:
                rows = conn.execute(
                    "SELECT rowid, document, vector FROM passages WHERE model = ? AND vector IS NOT NULL",
                    (self.tag,),
                )
                self._index.load(rows, generation)
            return self._index

    def _wants_ann(self, conn: sqlite3.Connection, generation: int) -> bool:
        """Has the store as many passage vectors as `ann_threshold` (not while building)?"""
        if self.ann_threshold <= 0 or self._building is not None or self._failure:
            return False
        if self._index is not None and self._index.generation == generation:
            return len(self._index) >= self.ann_threshold
        count = conn.execute("SELECT count(*) FROM passages WHERE model = ?", (self.tag,)).fetchone()[0]
        return int(count) >= self.ann_threshold

    def _open_ann(self, conn: sqlite3.Connection) -> None:
        """Load the saved ANN index (once); if there is none usable, build it in the background."""
        from ._knowledge_ann import CorruptIndex, graph_path, load

        if not self._ann_tried:
            self._ann_tried = True
            try:
                self._ann = load(self._ann_path, self.tag, self.embedder.dimension, self._fetcher(conn))
                # a version-1 file (the graph inside it) is saved in today's form when closing
                self._saved = self._ann.generation if graph_path(self._ann_path).exists() else -1
                return
            except FileNotFoundError:
                pass
            except (CorruptIndex, OSError) as exc:
                log.warning("the vector index %s is unusable (%s): rebuilding it", self._ann_path, exc)
        self._start_build()

    def _fetcher(self, conn: sqlite3.Connection) -> Fetch:
        from ._knowledge_ann import fetcher

        return fetcher(conn, self.tag, self.embedder.dimension)

    def _ann_at(self, conn: sqlite3.Connection, ann: AnnIndex, generation: int) -> AnnIndex:
        """The ANN index reading through `conn`, caught up with the database's `generation`."""
        from ._knowledge_ann import catch_up

        ann.fetch = self._fetcher(conn)
        if ann.generation != generation:
            changed = catch_up(conn, ann, self.tag, generation)
            if changed >= _SAVE_AFTER:
                self._save_ann()
        if ann.dead > len(ann):  # mostly removed passages: a fresh graph is smaller and faster
            self._start_build()
        return ann

    def _start_build(self) -> None:
        if self._building is None and not self._closed:
            self._building = threading.Thread(target=self._build, name="knowledge-ann-build", daemon=True)
            self._building.start()

    def _build(self) -> None:
        """Build the ANN index from this store's vectors on a read connection of its own
        (the store's stays free), save it, and hand it to the next search."""
        built = None
        try:
            built = self.rebuild_index(background=True)
        except (sqlite3.Error, OSError, ValueError, RuntimeError) as exc:
            log.warning("building the vector index %s failed: %s (searching exactly)", self._ann_path, exc)
            self._failure = str(exc)
        with self._index_lock:
            self._built = built
            self._building = None

    def rebuild_index(self, *, background: bool = False) -> AnnIndex:
        """Build the ANN index of every stored vector anew and save it (blocking; the store
        stays usable meanwhile); it is used once the store has `ann_threshold` passages."""
        from ._knowledge_ann import build, save

        conn = sqlite3.connect(f"{self._db.path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
        try:
            built = build(conn, self.tag, self.embedder.dimension, background=background)
        finally:
            conn.close()
        save(self._ann_path, built, self.tag)
        self._saved = built.generation
        return built

    def replace_index(self) -> None:
        """Rebuild the ANN index and save it (blocking); searches use it from the next one on
        once the store has `ann_threshold` passages."""
        built = self.rebuild_index()
        with self._index_lock:
            self._failure = ""
            if self._ann is not None or self._built is not None:
                self._built = built
            self._ann_tried = False  # a store below the threshold loads the file once it grows

    def index_state(self) -> IndexState:
        """The ANN index's state (blocking: counts the stored vectors)."""
        from ._knowledge_ann import state_of

        passages = self._db.run(
            "vector_index_state",
            lambda conn, now: int(
                conn.execute("SELECT count(*) FROM passages WHERE model = ?", (self.tag,)).fetchone()[0]
            ),
            False,
        )
        saved, usable = state_of(self._ann_path, self.tag)
        return IndexState(self._ann_path, passages, self.ann_threshold, saved, usable)

    def _save_ann(self) -> None:
        """Save the ANN index if it changed since it was loaded or last saved."""
        from ._knowledge_ann import save

        if self._ann is not None and self._ann.generation != self._saved:
            save(self._ann_path, self._ann, self.tag)
            self._saved = self._ann.generation

    def rows_allowed(
        self, conn: sqlite3.Connection, index: VectorIndex | AnnIndex, where: str, params: list[Any]
    ) -> Any:
        """The index rows a filter allows, cached per filter until the store changes."""
        key = (where, tuple(params))
        stamp = (id(index), index.generation, len(index))  # the ANN index numbers its rows otherwise
        cached = self._row_masks.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        allowed = {
            int(r[0]) for r in conn.execute(f"SELECT d.rowid FROM documents AS d WHERE {where}", params)
        }
        mask = index.rows_of(allowed)
        if len(self._row_masks) >= _MASK_CACHE:
            self._row_masks.clear()
        self._row_masks[key] = (stamp, mask)
        return mask


@dataclass(frozen=True)
class IndexState:
    """The ANN vector index as `memctl doctor` reports it."""

    path: Path
    passages: int  # passage vectors stored
    threshold: int  # from how many the ANN index is searched (0: never)
    saved: str  # what the file holds, in a few words
    usable: bool  # the file is a whole index of this model

    @property
    def needed(self) -> bool:
        return 0 < self.threshold <= self.passages


def _count(conn: sqlite3.Connection, last: int, others: list[tuple[int, int]], since: int) -> int:
    outside = "".join(" AND rowid NOT BETWEEN ? AND ?" for _ in others)
    params = (since, last, *(bound for span in others for bound in span))
    return int(
        conn.execute(
            f"SELECT count(*) FROM passages WHERE model IS NULL AND rowid BETWEEN ? AND ?{outside}", params
        ).fetchone()[0]
    )


def bump_generation(conn: sqlite3.Connection) -> int:
    """Count a write, so other processes' matrices know they are stale."""
    row = conn.execute(
        "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation' RETURNING value"
    ).fetchone()
    return int(row[0])
