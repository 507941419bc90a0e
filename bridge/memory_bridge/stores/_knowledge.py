"""The knowledge-store interface: slots of named documents with metadata, and retrieval.

Shaped after Dify's Knowledge API (a slot is a dataset), so the embedded store and the
Dify store answer the same calls. Names are unique within a slot: an upsert by name
updates the document in place.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    import sqlite3

    from .sqlite._db import Database

from ._relevance import Evidence

__all__ = [
    "MARK_FIELDS",
    "METADATA_FIELDS",
    "DocMetadata",
    "Document",
    "JournalChange",
    "Journaled",
    "KnowledgeFilter",
    "KnowledgeStore",
    "SearchHit",
    "SearchMode",
    "SearchPage",
    "SimilarDocuments",
    "SlotInfo",
    "UpsertOutcome",
    "WriteJournal",
    "document_digest",
]

SearchMode = Literal["hybrid", "keyword", "dense", "substring"]


@dataclass(frozen=True, slots=True)
class DocMetadata:
    """Per-document metadata. `scope` is the project that wrote it (always set and
    filtered); `project_module` is the code area inside it (auth, frontend, ...)."""

    atom_type: str = ""
    tags: tuple[str, ...] = ()
    project_module: str = ""
    language: str = ""
    task_type: str = ""
    error_pattern: str = ""
    scope: str = ""

    def to_dict(self) -> dict[str, object]:
        return {name: list(self.tags) if name == "tags" else getattr(self, name) for name in METADATA_FIELDS}


METADATA_FIELDS = tuple(f.name for f in fields(DocMetadata))

MARK_FIELDS = ("superseded_by", "consolidated_at", "stale", "last_refreshed_at", "consolidate_truncated_at")
"""The marks `memctl maintain` leaves on a document (strings; absent or empty: unset)."""


@dataclass(frozen=True, slots=True)
class KnowledgeFilter:
    """Metadata filters, ANDed; None means "any". Tags match exactly, all of them."""

    atom_type: str | None = None
    tags: tuple[str, ...] = ()
    project_module: str | None = None
    language: str | None = None
    task_type: str | None = None
    error_pattern: str | None = None
    scope: str | None = None

    def is_empty(self) -> bool:
        return not self.tags and all(getattr(self, f.name) is None for f in fields(self) if f.name != "tags")


@dataclass(frozen=True, slots=True)
class SlotInfo:
    name: str
    id: str
    description: str = ""
    document_count: int = 0
    indexing_technique: str = "high_quality"


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    slot: str
    name: str
    text: str
    enabled: bool
    created_at: float
    updated_at: float
    metadata: DocMetadata = field(default_factory=DocMetadata)
    origin: str = ""
    last_recalled_at: float | None = None  # when a search last returned it (recall stamping)
    recall_count: int = 0  # how many recalls were stamped (at most one per debounce window)
    marks: dict[str, str] = field(default_factory=dict)  # maintenance marks (MARK_FIELDS), set ones only
    settled: bool = True  # False while the store is still indexing a change (Dify: text may be stale)

    @property
    def word_count(self) -> int:
        return len(self.text.split())


@dataclass(frozen=True, slots=True)
class UpsertOutcome:
    document_id: str
    created: bool | None  # False: updated in place; None: not known yet (the write is queued)
    changed: bool  # False: same text and metadata, nothing written
    indexing_status: str = "completed"
    text_applied: bool = True  # False: the text waits in an outbox
    metadata_applied: bool = True  # False: the metadata waits in an outbox


@dataclass(frozen=True, slots=True)
class SearchHit:
    """The best passage of one document for a query. `score` is the calibrated relevance
    (0..1, the same meaning in every store: see `_relevance`), `evidence` what it was
    computed from; a `dense` search (similarity: near duplicates) scores by cosine, a
    `substring` one 1.0, both without evidence."""

    document_id: str
    document_name: str
    slot: str
    score: float
    content: str
    position: int
    enabled: bool
    metadata: DocMetadata
    word_count: int
    origin: str = ""
    updated_at: float = 0.0  # the document's last change (0: unknown)
    last_recalled_at: float | None = None
    recall_count: int = 0
    evidence: Evidence | None = None


@dataclass(frozen=True, slots=True)
class SearchPage:
    hits: list[SearchHit]
    total: int  # matching documents before the cut to top_k
    degraded: str | None = None  # why dense retrieval was unavailable, if it was


@runtime_checkable
class KnowledgeStore(Protocol):
    url: str

    async def list_slots(self) -> list[SlotInfo]:
        """Every slot, with its document count."""

    async def slot_ids(self) -> dict[str, str]:
        """Every slot's id by its name, in `list_slots`'s order: what a search needs, without
        counting documents (at 1M passages the embedded store's count took 50 ms)."""

    async def create_slot(self, name: str, description: str = "") -> tuple[SlotInfo, bool]:
        """Create a slot (idempotent); returns it and whether it was new."""

    async def upsert(
        self, slot: str, name: str, text: str, metadata: DocMetadata, *, origin: str
    ) -> UpsertOutcome:
        """Create the document or update the one with that name in place."""

    async def get(self, slot: str, document_id: str) -> Document | None: ...

    async def find(self, slot: str, name: str) -> Document | None: ...

    async def list_documents(self, slot: str, *, offset: int, limit: int) -> tuple[list[Document], int]:
        """A page of a slot's documents (oldest first) and the slot's total."""

    async def set_enabled(self, slot: str, document_id: str, enabled: bool) -> bool:
        """Enable or disable a document; False if there is no such document."""

    async def delete(self, slot: str, document_id: str) -> bool:
        """Delete a document; False if there is no such document."""

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
        """Enabled documents of `slots` matching `flt`, best first, at most `top_k`."""

    async def stamp_recalls(
        self, slot: str, document_ids: Sequence[str], *, now: float, window: float
    ) -> int:
        """Record that a search returned these documents: `last_recalled_at = now` and one
        more `recall_count` for each one not recalled within `window` seconds before `now`.
        Unknown ids are skipped; a store that cannot hold the stamps (a Dify dataset
        without the fields) does nothing. Returns how many were stamped."""

    async def set_recalls(
        self, slot: str, document_id: str, *, last_recalled_at: float | None, recall_count: int
    ) -> bool:
        """Set a document's recall stamps as they were (a restore). Text, metadata and marks
        are left alone. False if no such document."""

    async def set_marks(self, slot: str, document_id: str, marks: Mapping[str, str]) -> bool:
        """Merge maintenance marks (MARK_FIELDS) into a document's; an empty value unsets
        one. Text, metadata and recall stamps are left alone. False if no such document."""

    async def count(self) -> int: ...

    async def upkeep(self) -> int:
        """Background work (re-embedding after a model change); returns items handled."""

    async def ping(self) -> None: ...

    async def close(self) -> None: ...


@runtime_checkable
class SimilarDocuments(Protocol):
    """A knowledge store that finds alike documents from its stored vectors (the embedded
    store); maintenance searches with each document's text on the others."""

    async def similar_documents(
        self, slot: str, flt: KnowledgeFilter, *, threshold: float, top_k: int
    ) -> list[tuple[str, str, float]] | None:
        """(document id, document id, cosine) pairs at least `threshold` alike, each
        document's `top_k` nearest; None when the store has no embedding model."""


class WriteJournal(Protocol):
    """Told of every document change inside the store's own write transaction, so a record
    of it (the version log) commits or rolls back with the change."""

    def agrees(self, conn: sqlite3.Connection, slot: str, name: str, digest: bytes) -> bool:
        """Whether the journal's newest record of the document has this `document_digest`
        (then the store need not read the document before changing it)."""

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
        """`before` and `after` are the document as the store held it around the change
        (`after` is None for a deletion; `before` None on an update means the store found
        that the journal `agrees` with what it replaced); `change` None means nothing
        changed and `before` is what the store holds. `digest` is `after`'s
        `document_digest` when the store knows it."""


JournalChange = Literal["created", "updated", "enabled", "disabled", "marked", "deleted"]


@runtime_checkable
class Journaled(Protocol):
    """A knowledge store that keeps its database in-process and calls `journal`, when set,
    inside each write transaction (the embedded store)."""

    journal: WriteJournal | None

    @property
    def database(self) -> Database:
        """The store's database (the journal writes its records there)."""


def document_digest(text: str, metadata: DocMetadata) -> bytes:
    """The sha256 of a document's text and metadata (the embedded store keeps it, hex, to
    skip unchanged writes; the version log compares versions by it)."""
    payload = json.dumps([text, metadata.to_dict()], sort_keys=True)
    return hashlib.sha256(payload.encode()).digest()
