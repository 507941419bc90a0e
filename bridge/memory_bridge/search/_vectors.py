"""An in-memory matrix of passage vectors for brute-force cosine search.

Loaded from the database on first use, kept current by this process's writes, and
reloaded when another process has written (the store bumps a generation number).
Rows are appended into spare capacity that doubles when full, so a write costs the
size of its own vectors, not a copy of the whole matrix.

The matrix is stored transposed (one row per dimension): `query @ columns` streams it
in the order BLAS reads fastest, half the time of `rows @ query` at 100k x 384 here.
A search always takes the whole product and then picks the rows a filter allows:
gathering them first costs more than multiplying them all.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

__all__ = ["VectorIndex", "among", "per_document"]

Vector = npt.NDArray[np.float32]
Mask = npt.NDArray[np.bool_]
Ids = npt.NDArray[np.int64]


def among(documents: npt.NDArray[np.int64], wanted: npt.NDArray[np.int64]) -> Mask:
    """Which of `documents` are in `wanted`, by a lookup table over the rowids: np.isin
    sorts both (~1-1.5 ms at 100k rows, on every search), the table costs ~0.1."""
    if documents.size == 0 or wanted.size == 0:
        return np.zeros(documents.size, dtype=bool)
    if min(documents.min(), wanted.min()) < 0:  # never a rowid SQLite assigns
        return np.isin(documents, wanted)
    table = np.zeros(int(max(documents.max(), wanted.max())) + 1, dtype=bool)
    table[wanted] = True
    mask: Mask = table[documents]
    return mask


def per_document(rows: Ids, scores: Vector, documents: Ids, passages: Ids) -> dict[int, tuple[float, int]]:
    """document rowid -> (best score, its passage id), best documents first, of the index
    `rows` scored `scores` (`documents` and `passages`: the index's columns by row)."""
    order = np.argsort(-scores, kind="stable")
    _, first = np.unique(documents[rows[order]], return_index=True)  # each document's best row
    chosen = order[np.sort(first)]
    picked = rows[chosen]
    return {
        document: (score, passage)
        for document, score, passage in zip(
            documents[picked].tolist(), scores[chosen].tolist(), passages[picked].tolist(), strict=True
        )
    }


class VectorIndex:
    """Rows of (passage id, document rowid, unit vector); removed rows are masked out."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.generation = -1
        self._size = 0
        self._passages = np.empty(0, dtype=np.int64)
        self._documents = np.empty(0, dtype=np.int64)
        self._columns = np.empty((dimension, 0), dtype=np.float32)
        self._alive = np.empty(0, dtype=bool)

    def __len__(self) -> int:
        return int(self._alive[: self._size].sum())

    def load(self, rows: Iterable[tuple[int, int, bytes]], generation: int) -> None:
        passages, documents, vectors = [], [], []
        for passage, document, blob in rows:
            passages.append(passage)
            documents.append(document)
            vectors.append(np.frombuffer(blob, dtype=np.float32))
        if vectors:
            self.dimension = len(vectors[0])
        self._size = len(passages)
        self._passages = np.array(passages, dtype=np.int64)
        self._documents = np.array(documents, dtype=np.int64)
        self._columns = (
            np.ascontiguousarray(np.vstack(vectors).T)
            if vectors
            else np.empty((self.dimension, 0), dtype=np.float32)
        )
        self._alive = np.ones(self._size, dtype=bool)
        self.generation = generation

    def _reserve(self, extra: int, dimension: int) -> None:
        if self._size == 0 and dimension != self.dimension:
            self.dimension = dimension
            self._columns = np.empty((dimension, 0), dtype=np.float32)
        needed = self._size + extra
        if needed <= len(self._passages):
            return
        capacity = max(needed, 2 * len(self._passages), 64)
        grow = capacity - len(self._passages)
        self._passages = np.concatenate([self._passages, np.zeros(grow, dtype=np.int64)])
        self._documents = np.concatenate([self._documents, np.full(grow, -1, dtype=np.int64)])
        self._columns = np.hstack([self._columns, np.zeros((self.dimension, grow), dtype=np.float32)])
        self._alive = np.concatenate([self._alive, np.zeros(grow, dtype=bool)])

    def add(self, passages: list[int], document: int, vectors: Vector) -> None:
        self._reserve(len(passages), int(vectors.shape[1]))
        end = self._size + len(passages)
        self._passages[self._size : end] = passages
        self._documents[self._size : end] = document
        self._columns[:, self._size : end] = vectors.T
        self._alive[self._size : end] = True
        self._size = end

    def remove_document(self, document: int) -> None:
        self._alive[: self._size] &= self._documents[: self._size] != document

    def rows_of(self, documents: set[int]) -> Mask:
        """A row mask selecting the passages of `documents` (cache it per filter)."""
        wanted = np.fromiter(documents, dtype=np.int64, count=len(documents))
        return among(self._documents[: self._size], wanted)

    def vector_of(self, passage: int) -> Vector | None:
        """A passage's unit vector, or None if it has none."""
        rows = np.flatnonzero((self._passages[: self._size] == passage) & self._alive[: self._size])
        return self._columns[:, rows[0]].copy() if rows.size else None

    def best_among(
        self, queries: Vector, documents: set[int], *, rough: bool = False
    ) -> dict[int, list[tuple[float, int]]]:
        """document rowid -> per query row (best cosine, its passage id), over the passages
        of `documents` only: they are gathered first, which pays for a few thousand rows.
        Always exact (`rough` is for AnnIndex, whose exact vectors live in the database)."""
        size = self._size
        wanted = np.fromiter(documents, dtype=np.int64, count=len(documents))
        rows = np.flatnonzero(self._alive[:size] & among(self._documents[:size], wanted))
        scores = np.atleast_2d(queries) @ self._columns[:, rows]
        documents_of = self._documents[rows]
        best: dict[int, list[tuple[float, int]]] = {}
        for query_scores in scores:
            order = np.lexsort((-query_scores, documents_of))  # by document, its best passage first
            ordered = documents_of[order]
            first = order[np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])]
            for column in first:
                best.setdefault(int(documents_of[column]), []).append(
                    (float(query_scores[column]), int(self._passages[rows[column]]))
                )
        return best

    def best_per_document(
        self,
        query: Vector,
        *,
        rows: Mask | None = None,
        limit: int | None = None,
        documents: Iterable[int] = (),
    ) -> dict[int, tuple[float, int]]:
        """document rowid -> (best cosine, passage id), best documents first.

        With `limit`, only documents among the top `limit` passages are returned, plus
        every one of `documents` (scored exactly however far down it ranks); `rows` (from
        `rows_of`) restricts the search to some documents' passages.
        """
        size = self._size
        mask = self._alive[:size] if rows is None else self._alive[:size] & rows[:size]
        candidates = np.flatnonzero(mask)
        if candidates.size == 0:
            return {}
        scores = (query @ self._columns[:, :size])[candidates]
        if limit is not None and candidates.size > limit:
            top = np.argpartition(-scores, limit - 1)[:limit]
            wanted = np.fromiter(documents, dtype=np.int64)
            if wanted.size:
                top = np.union1d(top, np.flatnonzero(among(self._documents[candidates], wanted)))
            candidates, scores = candidates[top], scores[top]
        return per_document(candidates, scores, self._documents, self._passages)

    def near_pairs(
        self, rows: Mask, threshold: float, top_k: int, block: int = 512
    ) -> dict[tuple[int, int], float]:
        """(document, document) rowid pairs, the smaller first, whose best pair of passages
        (of the rows allowed) is at least `threshold` alike: each passage's `top_k` nearest
        passages of other documents. One block of rows against all of them at a time."""
        size = self._size
        chosen = np.flatnonzero(self._alive[:size] & rows[:size])
        columns, documents = self._columns[:, chosen], self._documents[chosen]
        pairs: dict[tuple[int, int], float] = {}
        for start in range(0, chosen.size, block):
            scores = columns[:, start : start + block].T @ columns
            for offset, row in enumerate(scores):
                own = documents[start + offset]
                near = np.flatnonzero((row >= threshold) & (documents != own))
                if near.size > top_k:
                    near = near[np.argsort(-row[near], kind="stable")[:top_k]]
                for other in near:
                    key = (int(min(own, documents[other])), int(max(own, documents[other])))
                    pairs[key] = max(pairs.get(key, -1.0), float(row[other]))
        return pairs
