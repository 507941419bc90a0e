"""Bulk embedding at the model's pace, behind the calls being served.

A queue of texts is embedded on `threads` threads of its own at the lowest CPU priority
(nice 19, as background entry embedding: a foreground thread wanting a core gets it). With
several threads each call carries one text, which is how the bundled model runs fastest:
bench/intake.py measured length-sorted, padded batches of 8-32 at most ~7% faster, and its
int8 kernels quantise activations with one scale per batch, so a batched text's vector
moves with its batch-mates (cosine down to 0.96). With one thread (an endpoint that takes
whole batches) a call carries `batch` texts.

The pipeline keeps every thread busy: it fetches more work before they run dry (once a
fetch comes back short, not again before the next store: writes held back by the queue's
length add more only then) and stores finished vectors in short batches meanwhile, a
partial one when the bound is full and the threads are running dry (so it can fetch). It
holds at most `in_flight` texts and their vectors, so memory stays bounded however long
the queue; what it has not stored is still queued in the caller's records, so a crash
loses work, never data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Generic, TypeVar

from ._background import _lower_priority

if TYPE_CHECKING:
    from ._embed import Embedder, LazyEmbedder, Vector

__all__ = ["Intake"]

T = TypeVar("T")


class Intake(Generic[T]):
    """Embeds what `fetch` hands out until it hands out nothing, `store`-ing the vectors.

    `fetch(limit, busy)` returns up to `limit` queued items other than `busy` (those in
    flight), `text(item)` what the model sees, and `store(items, vectors)` saves a batch."""

    def __init__(
        self,
        embedder: Embedder | LazyEmbedder,
        fetch: Callable[[int, Sequence[T]], list[T]],
        text: Callable[[T], str],
        store: Callable[[list[T], Vector], None],
        *,
        threads: int,
        batch: int,
        in_flight: int,
    ) -> None:
        self._embedder = embedder
        self._fetch = fetch
        self._text = text
        self._store = store
        self._batch = batch
        self._per_call = 1 if threads > 1 else batch
        self._in_flight = max(in_flight, 2 * threads * self._per_call)
        self._refill = 2 * threads * self._per_call  # below it, fetch: a call running and one next per thread
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="intake", initializer=_lower_priority)

    def _embed(self, items: list[T]) -> Vector:
        return self._embedder.embed_documents([self._text(item) for item in items])

    def run(self, limit: int | None = None) -> int:
        """Embed and store queued items (at most `limit`) until none is left; how many.
        Raises what the model or `store` raised, after the calls in flight have ended."""
        pending: dict[Future[Vector], list[T]] = {}
        finished: list[tuple[list[T], Vector]] = []
        fetched = done = 0
        short = False  # the last fetch found fewer than asked: wait for a flush before the next
        try:
            while True:
                held = [i for group in pending.values() for i in group]  # embedding, or
                held += [i for group, _ in finished for i in group]  # embedded, not stored yet
                room = self._in_flight - len(held) if limit is None else limit - fetched
                if len(held) < self._refill and room > 0 and not short:
                    asked = min(room, self._in_flight - len(held))
                    items = self._fetch(asked, held)
                    fetched += len(items)
                    short = len(items) < asked
                    for start in range(0, len(items), self._per_call):
                        group = items[start : start + self._per_call]
                        pending[self._pool.submit(self._embed, group)] = group
                if not pending:
                    return done
                ready, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in ready:
                    finished.append((pending.pop(future), future.result()))
                if self._flush_now(pending, finished):
                    done += self._flush(finished)
                    short = False  # a writer held back by the queue may have added more since
        finally:
            for future in pending:
                future.cancel()
            wait(pending)

    def _flush_now(
        self, pending: dict[Future[Vector], list[T]], finished: list[tuple[list[T], Vector]]
    ) -> bool:
        """Store now: a whole batch is done, or nothing runs, or the threads are running dry
        while what waits to be stored fills the bound (else no more can be fetched until the
        last call in flight ends, and the other threads idle meanwhile: ~15% of a bulk
        intake's time with 8 in flight and batches of 8)."""
        ready = sum(len(items) for items, _ in finished)
        running = sum(len(items) for items in pending.values())
        starving = running < self._refill and ready + running >= self._in_flight
        return ready >= self._batch or not pending or (starving and ready > 0)

    def _flush(self, finished: list[tuple[list[T], Vector]]) -> int:
        import numpy as np

        items = [item for group, _ in finished for item in group]
        self._store(items, np.vstack([vectors for _, vectors in finished]))
        finished.clear()
        return len(items)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
