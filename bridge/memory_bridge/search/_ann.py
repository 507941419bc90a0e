"""An approximate-nearest-neighbour index of passage vectors, for stores too large to
search exactly in memory.

The graph (usearch HNSW, int8 vectors and 32 edges a node: ~680 bytes a passage, in
memory and on disk, instead of the 1,536 of a float32 row) only proposes candidates;
each is then scored exactly against its stored float32 vector (`fetch`, from the
database), so every cosine returned is the one exact search gives: the calibrated
relevance above it depends on those values. A filter that allows few passages is searched
exactly over them; a larger one asks the graph for more candidates in proportion and
drops the others. Removed passages stay in the graph, masked out, until the next rebuild.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ._vectors import among, per_document

__all__ = [
    "CONNECTIVITY",
    "EXACT_BELOW",
    "EXPANSION",
    "MAX_ASK",
    "WIDTH_PER",
    "AnnIndex",
    "Fetch",
    "search_width",
]

Vector = npt.NDArray[np.float32]
Mask = npt.NDArray[np.bool_]
Rows = npt.NDArray[np.int64]
# passage ids -> (those found, their float32 unit vectors in the same order)
Fetch = Callable[[Sequence[int]], tuple[list[int], Vector]]

CONNECTIVITY = 32  # graph edges per node: at 1M recall 0.990 against 0.917 with 16 (bench/ann.py)
EXPANSION = 256  # candidates kept while searching, at least (bench/ann.py)
WIDTH_PER = 250  # passages per candidate kept: a larger graph is searched wider (bench/README.md)
EXACT_BELOW = 2_000  # a filter allowing at most this many passages is searched exactly (~20 us each)
_OVERSAMPLE = 1.5  # extra candidates asked past the share of rows a filter and removals leave
MAX_ASK = 10_000  # candidates asked of the graph at most: a rarer filter's recall drops
_UNORDERED = 10  # rows appended since the by-document order was made: up to a tenth of all


def search_width(count: int, size: int) -> int:
    """Candidates the graph keeps while searching for `count` of a graph of `size`: at least
    EXPANSION and `count`, and one per WIDTH_PER passages, so an answer that is a small
    island in a large store is still reached (at 1M: recall@10 0.984 at 4,000 against 0.812
    at 256, for ~10 ms more per search; bench/README.md)."""
    return max(EXPANSION, count, size // WIDTH_PER)


def _cosines(query: Vector, vectors: Vector) -> Vector:
    """query . each row, summed as VectorIndex sums them (one row per dimension), so the
    cosines are those of exact search (to float32's last digit: on some CPUs BLAS sums a
    few columns with another kernel than a whole matrix)."""
    scores: Vector = query @ np.ascontiguousarray(vectors.T)
    return scores


def _graph_class() -> Any:
    """usearch's Index, with ONNX Runtime loaded first. In the other order, `import
    onnxruntime` crashes the process (SIGSEGV in libstdc++'s codecvt; usearch 2.26.6,
    onnxruntime 1.32.0): a process that opened an ANN index before the bundled model's
    first use died when it embedded."""
    import onnxruntime  # noqa: F401  (the load order above)
    from usearch.index import Index

    return Index


def new_graph(dimension: int) -> Any:
    index = _graph_class()
    return index(ndim=dimension, metric="ip", dtype="i8", connectivity=CONNECTIVITY, expansion_add=128)


class AnnIndex:
    """Rows of (passage id, document rowid) with their vectors in a graph keyed by row."""

    def __init__(self, dimension: int, fetch: Fetch, graph: Any = None) -> None:
        self.dimension = dimension
        self.generation = -1
        self.fetch = fetch  # set again by the store before each use: its current connection
        self._graph = graph if graph is not None else new_graph(dimension)
        self._size = 0
        self._passages = np.empty(0, dtype=np.int64)
        self._documents = np.empty(0, dtype=np.int64)
        self._alive = np.empty(0, dtype=bool)
        self._live: int | None = 0  # alive rows, counted again after a removal
        self._by_document: tuple[Rows, Rows] = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))

    def __len__(self) -> int:
        """Alive rows (a search asks ~4 times: a count over 1M rows costs ~0.3 ms each)."""
        if self._live is None:
            self._live = int(self._alive[: self._size].sum())
        return self._live

    @property
    def dead(self) -> int:
        """Rows removed but still in the graph."""
        return self._size - len(self)

    def rows(self) -> tuple[Rows, Rows, Mask]:
        """(passage ids, document rowids, alive mask) of every row, for saving."""
        size = self._size
        return self._passages[:size], self._documents[:size], self._alive[:size]

    def save_graph(self, path: str) -> None:
        """Write the graph to the file at `path` (usearch's format; no copy in memory)."""
        self._graph.save(path)

    @classmethod
    def restore(
        cls,
        dimension: int,
        fetch: Fetch,
        rows: tuple[Rows, Rows, Mask],
        graph: str | bytes | memoryview,
        generation: int,
    ) -> AnnIndex:
        """An index from saved rows and graph: a file's path, which usearch reads into its
        own memory, or bytes it copies. Raises ValueError if they do not fit together."""
        passages, documents, alive = rows
        loaded = _graph_class().restore(graph)
        if loaded is None or loaded.ndim != dimension or len(loaded) != len(passages):
            raise ValueError("the graph does not match its rows")
        index = cls(dimension, fetch, loaded)
        index._size = len(passages)
        index._passages = np.array(passages, dtype=np.int64)
        index._documents = np.array(documents, dtype=np.int64)
        index._alive = np.array(alive, dtype=bool)
        index._live = None
        index._by_document = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
        index.generation = generation
        return index

    def add_rows(
        self, passages: Sequence[int], documents: Sequence[int], vectors: Vector, *, threads: int = 1
    ) -> None:
        """Append passages (any documents) with their unit vectors (inserted by `threads` threads)."""
        count = len(passages)
        if count == 0:
            return
        needed = self._size + count
        if needed > len(self._passages):
            grow = max(needed, 2 * len(self._passages), 64) - len(self._passages)
            self._passages = np.concatenate([self._passages, np.zeros(grow, dtype=np.int64)])
            self._documents = np.concatenate([self._documents, np.full(grow, -1, dtype=np.int64)])
            self._alive = np.concatenate([self._alive, np.zeros(grow, dtype=bool)])
        keys = np.arange(self._size, needed, dtype=np.uint64)
        self._graph.add(keys, np.ascontiguousarray(vectors, dtype=np.float32), threads=threads)
        self._passages[self._size : needed] = passages
        self._documents[self._size : needed] = documents
        self._alive[self._size : needed] = True
        self._size = needed
        if self._live is not None:
            self._live += count

    def add(self, passages: list[int], document: int, vectors: Vector) -> None:
        self.add_rows(passages, [document] * len(passages), vectors)

    def remove_document(self, document: int) -> None:
        self._alive[: self._size] &= self._documents[: self._size] != document
        self._live = None

    def remove_passages(self, passages: Iterable[int]) -> None:
        gone = np.fromiter(passages, dtype=np.int64)
        if gone.size:
            self._alive[: self._size] &= ~np.isin(self._passages[: self._size], gone)
            self._live = None

    def rows_of(self, documents: set[int]) -> Mask:
        """A row mask selecting the passages of `documents` (cache it per filter)."""
        wanted = np.fromiter(documents, dtype=np.int64, count=len(documents))
        return among(self._documents[: self._size], wanted)

    def _rows_of_documents(self, documents: set[int]) -> Rows:
        """Every row (alive or not) of `documents`, ascending, without a pass over all rows
        (~1 ms at 1M, three times a second hop): rows are only appended and a row's document
        never changes, so a by-document order of the first rows stays valid; rows appended
        since are looked at one by one, and the order is made again past a tenth of all."""
        size = self._size
        order, ordered = self._by_document
        if (size - order.size) * _UNORDERED > size:
            order = np.argsort(self._documents[:size], kind="stable")
            ordered = self._documents[order]
            self._by_document = (order, ordered)
        wanted = np.unique(np.fromiter(documents, dtype=np.int64, count=len(documents)))
        left, right = np.searchsorted(ordered, wanted, "left"), np.searchsorted(ordered, wanted, "right")
        counts = right - left
        within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        rows = order[np.repeat(left, counts) + within]
        tail = order.size + np.flatnonzero(among(self._documents[order.size : size], wanted))
        return np.sort(np.concatenate([rows, tail]))

    def vector_of(self, passage: int) -> Vector | None:
        found, vectors = self.fetch([passage])
        return vectors[0].copy() if found else None

    def _exact(self, rows: Rows) -> tuple[Rows, Vector]:
        """The rows among `rows` whose vectors are stored, with those vectors."""
        if rows.size == 0:
            return rows, np.empty((0, self.dimension), dtype=np.float32)
        passages = self._passages[rows]
        found, vectors = self.fetch([int(p) for p in passages])
        if len(found) != len(passages):  # a passage gone meanwhile: keep the rows found
            position = {passage: i for i, passage in enumerate(found)}
            keep = [i for i, passage in enumerate(passages) if int(passage) in position]
            rows = rows[keep]
            vectors = vectors[[position[int(passages[i])] for i in keep]]
        else:
            order = {passage: i for i, passage in enumerate(found)}
            vectors = vectors[[order[int(p)] for p in passages]]
        return rows, vectors

    def _rough(self, rows: Rows) -> tuple[Rows, Vector]:
        """`rows` with the graph's vectors of them, dequantised and renormalised."""
        if rows.size == 0:
            return rows, np.empty((0, self.dimension), dtype=np.float32)
        vectors: Vector = np.asarray(self._graph.get(rows.astype(np.uint64))).astype(np.float32)
        norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))[:, None]
        vectors /= np.where(norms > 0, norms, np.float32(1.0))
        return rows, vectors

    def _nearest(self, queries: Vector, count: int) -> Rows:
        """Rows the graph proposes as the `count` nearest of each query (alive or not)."""
        count = min(count, self._size)
        if count <= 0:
            return np.empty(0, dtype=np.int64)
        self._graph.expansion_search = search_width(count, self._size)
        found = self._graph.search(np.atleast_2d(queries), count, threads=1)
        keys = np.asarray(found.keys, dtype=np.int64).ravel()
        return np.unique(keys[(keys >= 0) & (keys < self._size)])

    def best_among(
        self, queries: Vector, documents: set[int], *, rough: bool = False
    ) -> dict[int, list[tuple[float, int]]]:
        """document rowid -> per query row (best cosine, its passage id), over the passages
        of `documents` only: exact, from the stored vectors, or with `rough` from the graph's
        own int8 vectors (cosines within ~0.01, and no database read: ~1 us a passage
        against ~7 us)."""
        rows = self._rows_of_documents(documents)
        rows = rows[self._alive[rows]]
        if rough:  # rows by passages, as the graph gives them: no transposed copy
            rows, vectors = self._rough(rows)
            scores = (vectors @ np.atleast_2d(queries).T).T
        else:
            rows, vectors = self._exact(rows)
            scores = np.atleast_2d(queries) @ np.ascontiguousarray(vectors.T)
        best: dict[int, list[tuple[float, int]]] = {}
        for query_scores in scores:
            for document, (score, passage) in self._best(rows, query_scores).items():
                best.setdefault(document, []).append((score, passage))
        return best

    def best_per_document(
        self,
        query: Vector,
        *,
        rows: Mask | None = None,
        limit: int | None = None,
        documents: Iterable[int] = (),
    ) -> dict[int, tuple[float, int]]:
        """As VectorIndex.best_per_document, with the same exact cosines: the graph's
        candidates (or every allowed passage, when few are) rescored from stored vectors."""
        size = self._size
        allowed = self._alive[:size] if rows is None else self._alive[:size] & rows[:size]
        count = int(allowed.sum())
        if count == 0:
            return {}
        if limit is None or count <= max(EXACT_BELOW, limit):
            candidates = np.flatnonzero(allowed)
        else:
            share = count / size  # of every row in the graph, removed ones too
            ask = math.ceil(limit / share * (1 if count == size else _OVERSAMPLE))
            candidates = self._nearest(query, min(ask, max(MAX_ASK, limit)))
            candidates = candidates[allowed[candidates]]
        candidates, vectors = self._exact(candidates)
        scores = _cosines(query, vectors)
        if limit is not None and candidates.size > limit:
            top = np.argpartition(-scores, limit - 1)[:limit]
            candidates, scores = candidates[top], scores[top]
        wanted = set(documents)
        if wanted:  # every keyword candidate, scored exactly however far down it ranks
            found = self._rows_of_documents(wanted)
            extra = np.setdiff1d(found[allowed[found]], candidates)
            extra, extra_vectors = self._exact(extra)
            candidates = np.concatenate([candidates, extra])
            scores = np.concatenate([scores, _cosines(query, extra_vectors)])
        return self._best(candidates, scores)

    def _best(self, rows: Rows, scores: Vector) -> dict[int, tuple[float, int]]:
        """document rowid -> (best cosine, passage id), best documents first."""
        return per_document(rows, scores, self._documents, self._passages)

    def near_pairs(
        self, rows: Mask, threshold: float, top_k: int, block: int = 512
    ) -> dict[tuple[int, int], float]:
        """As VectorIndex.near_pairs, each passage's neighbours proposed by the graph (and
        scored exactly): near pairs the graph misses are missed."""
        size = self._size
        allowed = self._alive[:size] & rows[:size]
        chosen = np.flatnonzero(allowed)
        pairs: dict[tuple[int, int], float] = {}
        ask = 2 * top_k + 16
        for start in range(0, chosen.size, block):
            own_rows, own_vectors = self._exact(chosen[start : start + block])
            if own_rows.size == 0:
                continue
            self._graph.expansion_search = max(EXPANSION, ask)
            found = self._graph.search(own_vectors, min(ask, size), threads=1)
            keys = np.atleast_2d(np.asarray(found.keys, dtype=np.int64))
            near_rows = np.unique(keys[(keys >= 0) & (keys < size)])
            near_rows, near_vectors = self._exact(near_rows[allowed[near_rows]])
            scores = own_vectors @ near_vectors.T
            documents = self._documents[near_rows]
            for offset, row in enumerate(scores):
                own = self._documents[own_rows[offset]]
                near = np.flatnonzero((row >= threshold) & (documents != own))
                if near.size > top_k:
                    near = near[np.argsort(-row[near], kind="stable")[:top_k]]
                for other in near:
                    key = (int(min(own, documents[other])), int(max(own, documents[other])))
                    pairs[key] = max(pairs.get(key, -1.0), float(row[other]))
        return pairs
