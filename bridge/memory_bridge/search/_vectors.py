"""An in-memory matrix of passage vectors for brute-force cosine search.

Loaded from the database on first use, kept current by this process's writes, and
reloaded when another process has written (the store bumps a generation number).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

__all__ = ["VectorIndex"]

Vector = npt.NDArray[np.float32]


class VectorIndex:
    """Rows of (passage id, document rowid, unit vector); removed rows are masked, then compacted."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.generation = -1
        self._passages = np.empty(0, dtype=np.int64)
        self._documents = np.empty(0, dtype=np.int64)
        self._matrix = np.empty((0, dimension), dtype=np.float32)
        self._alive = np.empty(0, dtype=bool)

    def __len__(self) -> int:
        return int(self._alive.sum())

    def load(self, rows: Iterable[tuple[int, int, bytes]], generation: int) -> None:
        passages, documents, vectors = [], [], []
        for passage, document, blob in rows:
            passages.append(passage)
            documents.append(document)
            vectors.append(np.frombuffer(blob, dtype=np.float32))
        self._passages = np.array(passages, dtype=np.int64)
        self._documents = np.array(documents, dtype=np.int64)
        if vectors:
            self.dimension = len(vectors[0])
        empty = np.empty((0, self.dimension), dtype=np.float32)
        self._matrix = np.vstack(vectors).astype(np.float32) if vectors else empty
        self._alive = np.ones(len(passages), dtype=bool)
        self.generation = generation

    def add(self, passages: list[int], document: int, vectors: Vector) -> None:
        if not self._alive.any():
            self.dimension = vectors.shape[1]
            self._matrix = np.empty((0, self.dimension), dtype=np.float32)
        self._passages = np.concatenate([self._passages, np.array(passages, dtype=np.int64)])
        self._documents = np.concatenate([self._documents, np.full(len(passages), document, dtype=np.int64)])
        self._matrix = np.vstack([self._matrix, vectors.astype(np.float32)])
        self._alive = np.concatenate([self._alive, np.ones(len(passages), dtype=bool)])

    def remove_document(self, document: int) -> None:
        self._alive &= self._documents != document
        if self._alive.size > 1000 and self._alive.mean() < 0.75:
            self._compact()

    def _compact(self) -> None:
        keep = self._alive
        self._passages, self._documents = self._passages[keep], self._documents[keep]
        self._matrix, self._alive = self._matrix[keep], self._alive[keep]

    def best_per_document(
        self, query: Vector, *, allowed: set[int] | None = None, limit: int | None = None
    ) -> dict[int, tuple[float, int]]:
        """document rowid -> (best cosine, passage id), best documents first.

        With `limit`, only documents among the top `limit` passages are returned
        (cheap); `allowed` restricts to those documents.
        """
        if not self._alive.any():
            return {}
        scores = self._matrix @ query
        mask = self._alive.copy()
        if allowed is not None:
            mask &= np.isin(self._documents, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
        candidates = np.flatnonzero(mask)
        if limit is not None and candidates.size > limit:
            top = np.argpartition(-scores[candidates], limit - 1)[:limit]
            candidates = candidates[top]
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
        best: dict[int, tuple[float, int]] = {}
        for row in order:
            document = int(self._documents[row])
            if document not in best:
                best[document] = (float(scores[row]), int(self._passages[row]))
        return best
