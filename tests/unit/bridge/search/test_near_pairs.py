"""VectorIndex.near_pairs: the pairs of documents maintenance asks the LLM about."""

from __future__ import annotations

import numpy as np

from memory_bridge.search import VectorIndex


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_pairs_are_of_documents_alike_enough_best_passage_first() -> None:
    index = VectorIndex(3)
    index.add([1, 2], 10, np.stack([unit(1, 0, 0), unit(0, 0, 1)]))  # two passages
    index.add([3], 20, unit(1, 0.1, 0)[None, :])  # close to 10's first passage
    index.add([4], 30, unit(0, 1, 0)[None, :])  # like nothing
    index.add([5], 40, unit(0.05, 0, 1)[None, :])  # close to 10's second passage
    index.add([6], 50, unit(1, 0.12, 0)[None, :])  # close to 10 and 20, but not allowed
    allowed = index.rows_of({10, 20, 30, 40})

    pairs = index.near_pairs(allowed, threshold=0.9, top_k=5, block=2)

    assert set(pairs) == {(10, 20), (10, 40)}
    assert pairs[(10, 20)] == np.float32(unit(1, 0, 0) @ unit(1, 0.1, 0))
    assert index.near_pairs(allowed, threshold=0.9, top_k=1, block=64).keys() == pairs.keys()


def test_a_removed_document_pairs_with_nothing() -> None:
    index = VectorIndex(2)
    index.add([1], 1, unit(1, 0)[None, :])
    index.add([2], 2, unit(1, 0.01)[None, :])
    index.remove_document(2)
    assert index.near_pairs(index.rows_of({1, 2}), threshold=0.5, top_k=3) == {}
