"""VectorIndex.best_among and vector_of: what the second hop of knowledge search scores."""

from __future__ import annotations

import numpy as np

from memory_bridge.search import VectorIndex


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_each_query_gets_each_documents_best_passage_among_the_chosen() -> None:
    index = VectorIndex(2)
    index.add([1, 2], 10, np.stack([unit(1, 0), unit(0, 1)]))
    index.add([3], 20, unit(1, 1)[None, :])
    index.add([4], 30, unit(1, 0)[None, :])  # not chosen
    index.add([5], 40, unit(0, 1)[None, :])
    index.remove_document(40)

    best = index.best_among(np.stack([unit(1, 0), unit(0, 1)]), {10, 20, 40})

    assert set(best) == {10, 20}
    assert [passage for _, passage in best[10]] == [1, 2]
    assert best[20][0][0] == np.float32(unit(1, 1) @ unit(1, 0))


def test_vector_of_a_passage_and_of_none() -> None:
    index = VectorIndex(2)
    index.add([7], 1, unit(3, 4)[None, :])
    vector = index.vector_of(7)
    assert vector is not None and np.allclose(vector, unit(3, 4))
    assert index.vector_of(8) is None


def test_rows_of_documents_picks_their_passages_whatever_the_rowids() -> None:
    index = VectorIndex(2)
    for passage, document in enumerate([5, 3, 900, 3, 1], 1):
        index.add([passage], document, unit(1, passage)[None, :])
    assert index.rows_of({3, 1, 10_000}).tolist() == [False, True, False, True, True]
    assert not index.rows_of(set()).any()
    near = index.best_per_document(unit(1, 0), limit=1, documents={900})
    assert set(near) == {5, 900}  # the nearest passage's document, and 900 however far
