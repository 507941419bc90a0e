"""Recall stamping: search_memory and recall_lessons note the documents they return, and a
background task records `last_recalled_at` and `recall_count` on the store, off the request path.

`note` only remembers the ids (it never waits and never fails); `run` (a task on the
bridge's task group) writes them in batches, one call per slot, and what is pending
when the bridge stops (for at most a few seconds). A document is stamped at
most once per debounce window: an in-process memory of recent stamps (bounded, oldest
forgotten first) skips most repeats, and the store skips a document whose persisted stamp
is inside the window (after a restart). A failing or hanging store only logs: the searches
already answered.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable

import anyio

from ..stores._knowledge import KnowledgeStore

__all__ = ["RecallStamper"]

log = logging.getLogger("memctl.bridge")

_REMEMBERED = 5000  # recent stamps kept in memory (the seed's LRU size)
_LAST_FLUSH_SECONDS = 5.0  # at most this long when the bridge stops


class RecallStamper:
    """Debounced, batched recall stamps for one knowledge store."""

    def __init__(
        self,
        store: KnowledgeStore,
        *,
        debounce_seconds: float,
        batch_seconds: float = 0.5,
        timeout_seconds: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.debounce_seconds = debounce_seconds
        self.batch_seconds = batch_seconds
        self.timeout_seconds = timeout_seconds
        self.clock = clock
        self._pending: dict[tuple[str, str], None] = {}
        self._stamped: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._wake = anyio.Event()

    def note(self, recalled: Iterable[tuple[str, str]]) -> None:
        """Remember (slot, document id) pairs a search returned; returns at once."""
        now = self.clock()
        for key in recalled:
            last = self._stamped.get(key)
            if last is not None and now - last < self.debounce_seconds:
                continue
            self._pending[key] = None
        if self._pending:
            self._wake.set()

    async def flush(self, timeout: float | None = None) -> int:
        """Write the pending stamps now; returns how many documents the store stamped.
        Never raises: a store error or a write past the timeout is logged."""
        timeout = self.timeout_seconds if timeout is None else timeout
        pending, self._pending = list(self._pending), {}
        now = self.clock()
        by_slot: dict[str, list[str]] = {}
        for slot, document_id in pending:
            by_slot.setdefault(slot, []).append(document_id)
        stamped = 0
        for slot, ids in by_slot.items():
            try:
                with anyio.fail_after(timeout):
                    stamped += await self.store.stamp_recalls(
                        slot, ids, now=now, window=self.debounce_seconds
                    )
            except Exception as exc:  # best effort: the searches already answered
                reason = str(exc) or type(exc).__name__
                log.warning("recall stamping of %d document(s) in %s failed: %s", len(ids), slot, reason)
                continue
            for document_id in ids:
                self._remember((slot, document_id), now)
        return stamped

    def _remember(self, key: tuple[str, str], when: float) -> None:
        self._stamped[key] = when
        self._stamped.move_to_end(key)
        while len(self._stamped) > _REMEMBERED:
            self._stamped.popitem(last=False)

    async def run(self) -> None:
        """Write stamps as searches note them, gathering those within `batch_seconds`."""
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                await anyio.sleep(self.batch_seconds)
                await self.flush()
        finally:  # the bridge stops: what the last searches returned is still written, briefly
            with anyio.CancelScope(shield=True):
                await self.flush(min(self.timeout_seconds, _LAST_FLUSH_SECONDS))
