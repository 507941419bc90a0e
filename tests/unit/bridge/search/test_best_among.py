"""VectorIndex.best_among and vector_of: what the second hop of knowledge search scores."""

from __future__ import annotations

import numpy as np

from memory_bridge.search._vectors import VectorIndex


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
