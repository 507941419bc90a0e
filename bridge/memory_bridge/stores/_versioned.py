"""A knowledge store that records every change of a document in a version log, and can bring
any recorded version back (a deleted document included).

It wraps whichever store the settings name, so every path that writes a document — the
tools, import, edit, the web view, restore, lesson merges, consolidation, maintenance —
leaves a version without knowing it. Before a change it records the state the store holds
if the log does not know it yet (a document from before versions were kept, or one changed
outside memctl), so the state being replaced is never lost.
"""

from __future__ import annotations

import asyncio
import contextvars
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from .._cause import current_cause
from .._errors import Conflict, InvalidInput, NotFound, StoreUnavailable
from ._knowledge import (
    MARK_FIELDS,
    DocMetadata,
    Document,
    JournalChange,
    Journaled,
    KnowledgeFilter,
    KnowledgeStore,
    SearchMode,
    SearchPage,
    SimilarDocuments,
    SlotInfo,
    UpsertOutcome,
)
from ._version_log import (
    QUEUED,
    DocumentState,
    DocumentVersion,
    NewVersion,
    Seen,
    VersionLog,
    newest_digest,
    record_change,
)

__all__ = ["Restored", "VersionedKnowledgeStore", "keep_versions", "unversioned"]


class _Unseen:
    """The store's state was not read (a roll-back records the state it wrote itself)."""


_UNSEEN = _Unseen()

_PAUSED: contextvars.ContextVar[bool] = contextvars.ContextVar("memctl_versions_paused", default=False)
"""Set while a roll-back writes: its writes make one `restored` version, not one each."""


def _seen(document: Document | None) -> Seen:
    return Seen("", None) if document is None else Seen(document.id, DocumentState.of(document))


@dataclass(frozen=True, slots=True)
class Restored:
    """What a roll-back wrote: the new version, and the one it brought back."""

    version: DocumentVersion
    restored_from: int
    undeleted: bool


class _Journal:
    """The version log as the embedded store's journal: each change recorded inside the
    store's transaction, in its database."""

    def __init__(self, keep: int) -> None:
        self.keep = keep

    def agrees(self, conn: sqlite3.Connection, slot: str, name: str, digest: bytes) -> bool:
        return newest_digest(conn, slot, name) == digest

    def record(
        self,
        conn: sqlite3.Connection,
        now: float,
        before: Document | None,
        after: Document | None,
        change: JournalChange | None,
        *,
        digest: bytes | None = None,
    ) -> None:
        document = after or before
        if _PAUSED.get() or document is None:
            return
        new = None
        if change == "deleted" and before is not None:
            new = NewVersion(before.id, DocumentState.of(before), "deleted", deleted=True)
        elif change is not None and after is not None:
            new = NewVersion(after.id, DocumentState.of(after), change)
        # an update without `before`: the store found the log agrees with what it replaced
        seen = None if before is None and change == "updated" else _seen(before)
        record_change(
            conn,
            now,
            document.slot,
            document.name,
            seen,
            new,
            keep=self.keep,
            cause=current_cause(),
            change_digest=digest,
        )


class VersionedKnowledgeStore:
    """`inner` with a version log. `keep` (0: all) thins each document's history to its
    newest versions as it grows; the newest is always kept.

    A store that journals its writes (the embedded one, whose database holds the log) records
    each version inside the change's own transaction; any other store (Dify) is read before
    a change and the version recorded after it."""

    def __init__(self, inner: KnowledgeStore, log: VersionLog, *, keep: int = 0) -> None:
        self.inner = inner
        self.url = inner.url
        self.log = log
        self.keep = keep
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._journaled = isinstance(inner, Journaled)
        if isinstance(inner, Journaled):
            inner.journal = _Journal(keep)

    def _lock(self, slot: str, name: str) -> asyncio.Lock:
        return self._locks.setdefault((slot, name), asyncio.Lock())

    async def _record(
        self, slot: str, name: str, seen: Document | _Unseen | None, change: NewVersion | None
    ) -> int:
        """The newest version's number (0: none) once `change` is recorded."""
        before = None if isinstance(seen, _Unseen) else _seen(seen)
        return await self.log.record(slot, name, before, change, keep=self.keep)

    # -- writes, each recorded ----------------------------------------------------------------

    async def upsert(
        self, slot: str, name: str, text: str, metadata: DocMetadata, *, origin: str
    ) -> UpsertOutcome:
        async with self._lock(slot, name):
            if self._journaled:
                return await self.inner.upsert(slot, name, text, metadata, origin=origin)
            try:
                found = await self.inner.find(slot, name)
            except StoreUnavailable:  # Dify is down: the write still queues in its outbox
                found = None
                seen: Document | _Unseen | None = _UNSEEN
            else:
                seen, base = await self._base(slot, name, found)
            outcome = await self.inner.upsert(slot, name, text, metadata, origin=origin)
            change = None
            if outcome.changed:
                if found is None:
                    change = NewVersion(outcome.document_id, DocumentState(text, metadata), "created")
                else:
                    state = replace(base, text=text, metadata=metadata)
                    change = NewVersion(outcome.document_id, state, "updated")
            await self._record(slot, name, seen, change)
            return outcome

    async def _base(
        self, slot: str, name: str, document: Document | None
    ) -> tuple[Document | _Unseen | None, DocumentState]:
        """What the store held before a change (to reconcile the log with), and the state a
        new version builds on. A document the store is still indexing reads unreliably (Dify
        rebuilds its text from segments): the log's newest version stands in for it."""
        if document is None:
            return None, DocumentState("", DocMetadata())
        if not document.settled:
            latest = await self.log.latest(slot, name)
            if latest is not None and not latest.deleted:
                return _UNSEEN, latest.state
        return document, DocumentState.of(document)

    async def set_enabled(self, slot: str, document_id: str, enabled: bool) -> bool:
        if self._journaled:
            return await self.inner.set_enabled(slot, document_id, enabled)
        before = await self.inner.get(slot, document_id)
        if before is None:
            return await self.inner.set_enabled(slot, document_id, enabled)
        async with self._lock(slot, before.name):
            seen, base = await self._base(slot, before.name, before)
            done = await self.inner.set_enabled(slot, document_id, enabled)
            state = replace(base, enabled=enabled)
            change = NewVersion(before.id, state, "enabled" if enabled else "disabled")
            await self._record(slot, before.name, seen, change if done else None)
            return done

    async def set_marks(self, slot: str, document_id: str, marks: Mapping[str, str]) -> bool:
        if self._journaled:
            return await self.inner.set_marks(slot, document_id, marks)
        before = await self.inner.get(slot, document_id)
        if before is None:
            return await self.inner.set_marks(slot, document_id, marks)
        async with self._lock(slot, before.name):
            seen, base = await self._base(slot, before.name, before)
            done = await self.inner.set_marks(slot, document_id, marks)
            state = replace(base, marks={**base.marks, **marks})
            await self._record(
                slot, before.name, seen, NewVersion(before.id, state, "marked") if done else None
            )
            return done

    async def delete(self, slot: str, document_id: str) -> bool:
        if self._journaled:
            return await self.inner.delete(slot, document_id)
        before = await self.inner.get(slot, document_id)
        if before is None:
            return await self.inner.delete(slot, document_id)
        async with self._lock(slot, before.name):
            seen, base = await self._base(slot, before.name, before)
            done = await self.inner.delete(slot, document_id)
            tombstone = NewVersion(before.id, base, "deleted", deleted=True)
            await self._record(slot, before.name, seen, tombstone if done else None)
            return done

    # -- history --------------------------------------------------------------------------------

    async def locate(self, slot: str | None, document_id: str) -> tuple[str, str] | None:
        """The slot and name of a document id: live in `slot`, or deleted."""
        if slot is not None and (doc := await self.inner.get(slot, document_id)) is not None:
            return doc.slot, doc.name
        return await self.log.named(document_id)

    async def history(
        self, slot: str, name: str, *, limit: int, before: int | None = None
    ) -> list[DocumentVersion]:
        """A document's versions, newest first; the store's current state is recorded first
        if the log does not know it (so the first call on an old document shows it)."""
        async with self._lock(slot, name):
            seen, _ = await self._base(slot, name, await self.inner.find(slot, name))
            await self._record(slot, name, seen, None)
        return await self.log.history(slot, name, limit=limit, before=before)

    async def deleted(self, slot: str | None = None) -> list[DocumentVersion]:
        return await self.log.deleted(slot)

    async def rollback(self, slot: str, name: str, version: int, *, expected: int | None) -> Restored:
        """Bring version `version` back as a new version (a deleted document is saved
        again). With `expected`, nothing is written unless the newest version is that one."""
        async with self._lock(slot, name):
            current = await self.inner.find(slot, name)
            seen, _ = await self._base(slot, name, current)
            latest = await self._record(slot, name, seen, None)
            if latest == 0:
                raise NotFound(f"document {slot}/{name} has no recorded versions", operation="rollback")
            if expected is not None and latest != expected:
                raise Conflict(
                    f"document {slot}/{name} is at version {latest}, not {expected}: someone "
                    "changed it since you read its history; read it again and retry",
                    operation="rollback",
                )
            target = await self.log.get(slot, name, version)
            if target is None:
                raise NotFound(
                    f"document {slot}/{name} has no version {version} (versions 1..{latest}"
                    f"{', older ones thinned' if self.keep else ''})",
                    operation="rollback",
                )
            if target.deleted:
                raise InvalidInput(
                    "version", f"version {version} of {slot}/{name} is its deletion; pick a version before it"
                )
            paused = _PAUSED.set(True)
            try:
                document_id = await self._write_state(slot, name, target.state, current)
            finally:
                _PAUSED.reset(paused)
            restored = NewVersion(document_id, target.state, "restored", restored_from=version)
            new = await self.log.get(slot, name, await self._record(slot, name, _UNSEEN, restored))
            assert new is not None
            return Restored(new, version, undeleted=current is None)

    async def _write_state(self, slot: str, name: str, state: DocumentState, current: Document | None) -> str:
        """Make the store hold `state` for the document; returns its id."""
        if current is None and slot not in await self.inner.slot_ids():
            await self.inner.create_slot(slot)
        document_id = current.id if current is not None else ""
        if current is None or not current.settled or not DocumentState.of(current).same_content(state):
            outcome = await self.inner.upsert(slot, name, state.text, state.metadata, origin="rollback")
            document_id = outcome.document_id
        if document_id.startswith(QUEUED):
            return document_id  # Dify is down: the save waits in the outbox, the rest with it
        enabled = current.enabled if current is not None else True
        if enabled != state.enabled:
            await self.inner.set_enabled(slot, document_id, state.enabled)
        have = dict(current.marks) if current is not None else {}
        marks = {k: state.marks.get(k, "") for k in MARK_FIELDS if have.get(k, "") != state.marks.get(k, "")}
        if marks:
            await self.inner.set_marks(slot, document_id, marks)
        return document_id

    # -- everything else is the store's --------------------------------------------------------

    async def list_slots(self) -> list[SlotInfo]:
        return await self.inner.list_slots()

    async def slot_ids(self) -> dict[str, str]:
        return await self.inner.slot_ids()

    async def create_slot(self, name: str, description: str = "") -> tuple[SlotInfo, bool]:
        return await self.inner.create_slot(name, description)

    async def get(self, slot: str, document_id: str) -> Document | None:
        return await self.inner.get(slot, document_id)

    async def find(self, slot: str, name: str) -> Document | None:
        return await self.inner.find(slot, name)

    async def list_documents(self, slot: str, *, offset: int, limit: int) -> tuple[list[Document], int]:
        return await self.inner.list_documents(slot, offset=offset, limit=limit)

    async def search(
        self,
        slots: list[str],
        query: str,
        flt: KnowledgeFilter,
        *,
        top_k: int,
        score_threshold: float | None,
        mode: SearchMode = "hybrid",
    ) -> SearchPage:
        return await self.inner.search(
            slots, query, flt, top_k=top_k, score_threshold=score_threshold, mode=mode
        )

    async def stamp_recalls(
        self, slot: str, document_ids: Sequence[str], *, now: float, window: float
    ) -> int:
        return await self.inner.stamp_recalls(slot, document_ids, now=now, window=window)

    async def set_recalls(
        self, slot: str, document_id: str, *, last_recalled_at: float | None, recall_count: int
    ) -> bool:
        return await self.inner.set_recalls(
            slot, document_id, last_recalled_at=last_recalled_at, recall_count=recall_count
        )

    async def count(self) -> int:
        return await self.inner.count()

    async def upkeep(self) -> int:
        return await self.inner.upkeep()

    async def ping(self) -> None:
        await self.inner.ping()

    async def close(self) -> None:
        try:
            await self.inner.close()
        finally:
            self.log.close()


class _VersionedSimilar(VersionedKnowledgeStore):
    """A versioned store whose inner store finds alike documents from its vectors."""

    async def similar_documents(
        self, slot: str, flt: KnowledgeFilter, *, threshold: float, top_k: int
    ) -> list[tuple[str, str, float]] | None:
        assert isinstance(self.inner, SimilarDocuments)
        return await self.inner.similar_documents(slot, flt, threshold=threshold, top_k=top_k)


def keep_versions(inner: KnowledgeStore, log: VersionLog, *, keep: int = 0) -> VersionedKnowledgeStore:
    """`inner` recording its documents' versions in `log` (finding alike documents if it can)."""
    if isinstance(inner, SimilarDocuments):
        return _VersionedSimilar(inner, log, keep=keep)
    return VersionedKnowledgeStore(inner, log, keep=keep)


def unversioned(store: KnowledgeStore) -> KnowledgeStore:
    """The store under its version log (for what only that store has: Dify's outbox)."""
    return store.inner if isinstance(store, VersionedKnowledgeStore) else store
