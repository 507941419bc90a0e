"""The ANN index answers as the exact matrix does: the same best documents with the same
cosines, after removals and under a filter (random vectors: a hard case for a graph).

The same to float32's last digits: BLAS sums a query against 60 candidates and against a
whole matrix with different kernels on some CPUs (AMD EPYC here), a unit in the last
place apart."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from memory_bridge.search import VectorIndex, _ann
from memory_bridge.search._ann import EXPANSION, AnnIndex, search_width

Vectors = npt.NDArray[np.float32]


@pytest.fixture(autouse=True)
def graph_for_every_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ann, "EXACT_BELOW", 0)


def both(count: int = 400, per_document: int = 2) -> tuple[VectorIndex, AnnIndex, Vectors]:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((count, 48)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    passages = list(range(1, count + 1))
    documents = [1 + i // per_document for i in range(count)]

    def fetch(wanted: Sequence[int]) -> tuple[list[int], Vectors]:
        return list(wanted), vectors[np.asarray(wanted, dtype=np.int64) - 1]

    exact = VectorIndex(48)
    exact.load(zip(passages, documents, (v.tobytes() for v in vectors), strict=True), 1)
    ann = AnnIndex(48, fetch)
    ann.add_rows(passages, documents, vectors)
    return exact, ann, vectors


def queries(vectors: Vectors) -> Vectors:
    rng = np.random.default_rng(5)
    noisy = vectors[:20] + 0.3 * rng.standard_normal((20, vectors.shape[1])).astype(np.float32)
    out: Vectors = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    return out


Best = dict[int, tuple[float, int]]


def top(best: Best, count: int = 10) -> Best:
    return dict(list(best.items())[:count])


def same(got: Best, want: Best) -> bool:
    """The same documents in the same order, each with the same passage and cosine."""
    return list(got) == list(want) and all(
        got[d][1] == want[d][1] and abs(got[d][0] - want[d][0]) < 1e-6 for d in want
    )


def test_the_same_documents_and_cosines_as_exact_search() -> None:
    exact, ann, vectors = both()
    for query in queries(vectors):
        want = exact.best_per_document(query, limit=60, documents=[7, 150])
        got = ann.best_per_document(query, limit=60, documents=[7, 150])
        assert same(top(got), top(want))
        assert same({7: got[7], 150: got[150]}, {7: want[7], 150: want[150]})  # scored however far down


def test_removed_documents_do_not_crowd_out_live_ones() -> None:
    exact, ann, vectors = both()
    for document in range(1, 201, 3):  # a third of the documents, still in the graph
        exact.remove_document(document)
        ann.remove_document(document)
    for query in queries(vectors):
        want, got = exact.best_per_document(query, limit=60), ann.best_per_document(query, limit=60)
        assert same(top(got), top(want)) and len(got) >= 0.9 * len(want)


def test_a_filter_keeps_to_its_documents() -> None:
    exact, ann, vectors = both()
    allowed = set(range(1, 201, 2))
    for query in queries(vectors):
        want = exact.best_per_document(query, rows=exact.rows_of(allowed), limit=60)
        got = ann.best_per_document(query, rows=ann.rows_of(allowed), limit=60)
        assert same(top(got), top(want)) and set(got) <= allowed


def test_best_among_and_vector_of_read_the_stored_vectors() -> None:
    exact, ann, vectors = both()
    assert ann.best_among(vectors[:2], {3, 9}) == exact.best_among(vectors[:2], {3, 9})
    stored = ann.vector_of(5)
    assert stored is not None and np.array_equal(stored, vectors[4])


def test_a_larger_graph_is_searched_wider() -> None:
    """The measured rule: 256 candidates kept up to 64k passages, then one per 250 (4,000 at
    1M, where 256 kept recall@10 at 0.81), never fewer than the candidates asked."""
    assert search_width(10, 1_000) == EXPANSION == 256
    assert search_width(10, 100_000) == 400
    assert search_width(10, 1_000_000) == 4_000
    assert search_width(5_000, 1_000_000) == 5_000


def test_a_rough_pass_reads_the_graph_not_the_database() -> None:
    """The second hop ranks up to 2,000 documents roughly: from the graph's int8 vectors,
    cosines within 0.02 of the stored ones, without a database read (~7 us a passage)."""
    exact, ann, vectors = both()

    def no_reads(wanted: Sequence[int]) -> tuple[list[int], Vectors]:
        raise AssertionError(f"the rough pass read {len(wanted)} vectors from the database")

    ann.fetch = no_reads
    chosen = set(range(1, 201))
    ann.remove_document(4)
    exact.remove_document(4)
    rough, want = ann.best_among(vectors[:2], chosen, rough=True), exact.best_among(vectors[:2], chosen)
    assert set(rough) == set(want) == chosen - {4}
    for document, per_query in want.items():
        for (cosine, _), (approx, _) in zip(per_query, rough[document], strict=True):
            assert abs(cosine - approx) < 0.02


def test_a_process_that_opened_an_index_first_can_still_load_the_model() -> None:
    """usearch's compiled module loaded before ONNX Runtime made `import onnxruntime` die
    with SIGSEGV: a bridge that opened its ANN index before embedding its first query."""
    script = (
        "import numpy as np\n"
        "from memory_bridge.search._ann import AnnIndex\n"
        "index = AnnIndex(4, lambda wanted: ([], np.empty((0, 4), dtype=np.float32)))\n"
        "index.add_rows([1], [1], np.ones((1, 4), dtype=np.float32) / 2)\n"
        "import onnxruntime\n"
        "print(onnxruntime.get_device())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.strip() == "CPU"


def test_the_count_of_live_passages_follows_adds_and_removals() -> None:
    _, ann, vectors = both()
    assert len(ann) == 400 and ann.dead == 0
    ann.remove_document(5)  # passages 9 and 10
    ann.remove_passages([1, 2, 9])  # 9: already gone
    assert len(ann) == 396 and ann.dead == 4
    ann.add_rows([401], [201], vectors[:1])
    assert len(ann) == 397 and ann.dead == 4


def test_a_document_s_rows_are_found_after_appends_and_removals() -> None:
    """The hop and the keyword candidates find a document's rows through an order kept
    since it was made, plus the rows appended after it: the same rows a full pass finds."""
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((520, 48)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ann = AnnIndex(48, lambda wanted: (list(wanted), vectors[np.asarray(wanted, dtype=np.int64) - 1]))
    ann.add_rows(list(range(1, 401)), [1 + i // 2 for i in range(400)], vectors[:400])
    wanted = {3, 77, 150, 199, 500}  # 500: no such document
    assert ann.best_among(vectors[:1], wanted) == VectorIndexLike.best_among(ann, vectors[:1], wanted)
    for batch in range(30):  # past a tenth of the rows: the order is made again on the way
        documents = rng.integers(1, 260, size=4)
        passages = list(range(401 + 4 * batch, 405 + 4 * batch))
        ann.add_rows(passages, documents.tolist(), vectors[np.asarray(passages) - 1])
        if batch % 7 == 0:
            ann.remove_document(int(documents[0]))
        for group in (wanted, {int(d) for d in documents}):
            assert ann.best_among(vectors[:2], group) == VectorIndexLike.best_among(ann, vectors[:2], group)


class VectorIndexLike:
    """best_among as it was, with a full pass over the rows (the reference)."""

    @staticmethod
    def best_among(
        ann: AnnIndex, queries: Vectors, documents: set[int]
    ) -> dict[int, list[tuple[float, int]]]:
        size = ann._size
        wanted = np.fromiter(documents, dtype=np.int64)
        rows = np.flatnonzero(ann._alive[:size] & np.isin(ann._documents[:size], wanted))
        rows, found = ann._exact(rows)
        scores = np.atleast_2d(queries) @ np.ascontiguousarray(found.T)
        best: dict[int, list[tuple[float, int]]] = {}
        for query_scores in scores:
            for document, (score, passage) in ann._best(rows, query_scores).items():
                best.setdefault(document, []).append((score, passage))
        return best
