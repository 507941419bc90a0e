"""The intake pipeline: every queued item embedded once, never more than its bound in
flight, errors raised only after the calls in flight have ended."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from memory_bridge import EmbedderUnavailable
from memory_bridge.search._intake import Intake


class Model:
    """One dimension: the text's length; counts calls and the texts each carried."""

    name = "lengths"
    dimension = 1

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.fail_on = fail_on
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            self.calls.append(texts)
        if self.fail_on in texts:
            raise EmbedderUnavailable("the model went away")
        return np.array([[float(len(t))] for t in texts], dtype=np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self.embed_documents([text])[0]


class Queue:
    """A store's queue: items without a vector until `store` saves theirs."""

    def __init__(self, items: list[str]) -> None:
        self.waiting = list(items)
        self.stored: dict[str, float] = {}
        self.most_held = 0

    def fetch(self, limit: int, busy: Sequence[str]) -> list[str]:
        self.most_held = max(self.most_held, len(busy))
        return [i for i in self.waiting if i not in busy][:limit]

    def store(self, items: list[str], vectors: npt.NDArray[np.float32]) -> None:
        for item, vector in zip(items, vectors, strict=True):
            assert item not in self.stored, f"{item} stored twice"
            self.stored[item] = float(vector[0])
            self.waiting.remove(item)


def intake(model: Model, queue: Queue, threads: int) -> Intake[str]:
    return Intake(model, queue.fetch, str, queue.store, threads=threads, batch=8, in_flight=32)


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_every_item_is_embedded_once_within_the_bound(threads: int) -> None:
    model, queue = Model(), Queue([f"item {n:03}" + "x" * (n % 13) for n in range(500)])
    pipeline = intake(model, queue, threads)
    try:
        assert pipeline.run() == 500
    finally:
        pipeline.close()
    assert queue.waiting == [] and all(v == len(k) for k, v in queue.stored.items())
    assert sum(len(call) for call in model.calls) == 500
    assert {len(call) for call in model.calls} <= ({1} if threads > 1 else set(range(1, 9)))
    assert queue.most_held < 32


def test_a_limit_stops_the_run_early() -> None:
    model, queue = Model(), Queue([f"item {n}" for n in range(100)])
    pipeline = intake(model, queue, 2)
    try:
        assert pipeline.run(limit=10) == 10 and len(queue.waiting) == 90
        assert pipeline.run() == 90 and queue.waiting == []
    finally:
        pipeline.close()


def test_a_failing_model_leaves_the_rest_queued() -> None:
    model, queue = Model(fail_on="item 50"), Queue([f"item {n}" for n in range(100)])
    pipeline = intake(model, queue, 2)
    try:
        with pytest.raises(EmbedderUnavailable):
            pipeline.run()
    finally:
        pipeline.close()
    assert "item 50" in queue.waiting and len(queue.stored) + len(queue.waiting) == 100


class Slow(Model):
    """Each call takes 2 ms and counts as running meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.running = 0

    def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            self.running += 1
        try:
            time.sleep(0.002)
            return super().embed_documents(texts)
        finally:
            with self._lock:
                self.running -= 1


def test_the_threads_keep_working_while_vectors_are_stored() -> None:
    """The store's own bounds (8 in flight, batches of 8, 2 threads): a batch waited for the
    last of its calls to end, the other thread idle meanwhile (~15% of a bulk intake). Now a
    partial batch is stored while calls still run, so more can be fetched."""
    model = Slow()
    queue = Queue([f"item {n:03}" for n in range(200)])
    running_at_store: list[int] = []
    store = queue.store

    def record(items: list[str], vectors: npt.NDArray[np.float32]) -> None:
        running_at_store.append(model.running)
        store(items, vectors)

    pipeline = Intake(model, queue.fetch, str, record, threads=2, batch=8, in_flight=8)
    try:
        assert pipeline.run() == 200
    finally:
        pipeline.close()
    assert queue.waiting == [] and queue.most_held <= 8
    busy = sum(1 for running in running_at_store[:-2] if running > 0)  # the last ones: the queue ran out
    assert busy >= len(running_at_store[:-2]) // 2, running_at_store
