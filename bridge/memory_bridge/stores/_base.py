"""The entry-store interface and the values that cross it.

A store implements exactly the atomic units of memory-mcp 1.2+: one set (replay
check, compare-and-set, apply), one delete, one get-with-hit-count, one rollback.
Validation, cursors and result shapes live above the store, in `core`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "DeleteOutcome",
    "Entry",
    "EntryFilter",
    "EntryPage",
    "EntryRecord",
    "EntryStore",
    "EntryWrite",
    "RollbackOutcome",
    "SetOutcome",
    "SortOrder",
]

SortOrder = Literal["hits", "updated"]


@dataclass(frozen=True, slots=True)
class EntryWrite:
    """The content of one `memory_set`, already validated."""

    id: str
    title: str
    body: str
    type: str
    tags: tuple[str, ...]
    source: str = "unknown"
    project: str = ""


@dataclass(frozen=True, slots=True)
class Entry:
    """A stored entry, as get, search, list and prune return it."""

    id: str
    title: str
    body: str
    type: str
    tags: tuple[str, ...]
    source: str
    project: str
    created: str
    updated: str
    hits: int
    ttl: str  # seconds as a string, "" when the entry does not expire (memory-mcp's shape)

    def to_dict(self) -> dict[str, Any]:
        """The memory-mcp entry object, keys in its order."""
        return {
            "id": self.id,
            "title": self.title,
            "body": self.body,
            "type": self.type,
            "tags": list(self.tags),
            "source": self.source,
            "project": self.project,
            "created": self.created,
            "updated": self.updated,
            "hits": self.hits,
            "ttl": self.ttl,
        }


@dataclass(frozen=True, slots=True)
class SetOutcome:
    """What one atomic set did."""

    status: Literal["applied", "conflict", "replayed", "op_mismatch"]
    id: str
    operation: str = ""
    revision: int = 0
    current_revision: int = 0  # conflict only
    recorded_id: str = ""  # op_mismatch only
    entry_count: int | None = None  # live entries after the write, when the store knows it cheaply


@dataclass(frozen=True, slots=True)
class DeleteOutcome:
    id: str
    revision: int


@dataclass(frozen=True, slots=True)
class RollbackOutcome:
    id: str
    operation: str
    restored_from: str
    revision: int


@dataclass(frozen=True, slots=True)
class EntryFilter:
    """Candidate filters shared by search and list. `None` means "no filter";
    `project=""` selects cross-project entries, as in memory-mcp."""

    tags: tuple[str, ...] = ()
    type: str | None = None
    project: str | None = None


@dataclass(frozen=True, slots=True)
class EntryPage:
    """One page of results and the number of matches in all pages."""

    entries: list[Entry]
    total: int
    match: Literal["all", "any", "semantic", "none"] = "none"
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EntryRecord:
    """Everything a store holds about one id, for copying it to another store exactly."""

    id: str
    entry: Entry | None  # None when the id was deleted: history and revision remain
    revision: int
    history: tuple[str, ...]  # JSON snapshots as stored, newest first
    expires_at: float | None = None  # epoch seconds, for an entry with a TTL

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "entry": None if self.entry is None else self.entry.to_dict(),
            "revision": self.revision,
            "history": list(self.history),
            "expires_at": self.expires_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EntryRecord:
        raw = data["entry"]
        entry = None
        if raw is not None:
            entry = Entry(
                **{**raw, "tags": tuple(raw["tags"]), "hits": int(raw["hits"]), "ttl": str(raw["ttl"])}
            )
        return cls(
            id=str(data["id"]),
            entry=entry,
            revision=int(data["revision"]),
            history=tuple(str(h) for h in data["history"]),
            expires_at=None if data.get("expires_at") is None else float(data["expires_at"]),
        )


@runtime_checkable
class EntryStore(Protocol):
    """Versioned entries with compare-and-set, operation ids, history and indexes."""

    url: str  # credentials redacted: safe to show

    async def get(self, id: str) -> tuple[Entry, int] | None:
        """Return the entry and its revision and count a hit, or None."""

    async def set(
        self,
        write: EntryWrite,
        *,
        ttl: int | None,
        if_version: int | None,
        operation_id: str | None,
    ) -> SetOutcome:
        """Replay check, then compare-and-set, then apply: one atomic unit."""

    async def delete(self, id: str) -> DeleteOutcome | None:
        """Tombstone the entry (history and revision survive); None if absent."""

    async def history(self, id: str, limit: int) -> list[dict[str, Any]]:
        """Snapshots newest first, each with its `index`."""

    async def rollback(self, id: str, version_index: int) -> RollbackOutcome:
        """Re-apply the snapshot at `version_index`; raises NotFound if there is none."""

    async def search(self, flt: EntryFilter, query: str | None, *, offset: int, limit: int) -> EntryPage:
        """Entries matching the filter, ranked by the query when one is given."""

    async def list_entries(self, flt: EntryFilter, *, sort: SortOrder, offset: int, limit: int) -> EntryPage:
        """Entries matching the filter in `sort` order."""

    async def prune_candidates(self, cutoff: str, *, offset: int, limit: int) -> EntryPage:
        """Never-read entries last updated before `cutoff`, oldest first."""

    async def count(self) -> int:
        """Number of live entries, from a maintained counter (no scan)."""

    async def hits_zero_count(self) -> int:
        """Number of entries never read."""

    async def sweep(self) -> int:
        """Drop expired entries together with their index rows; return how many."""

    async def upkeep(self) -> int:
        """Background work (embedding new entries for memory_search); returns items handled."""

    def export_records(self) -> AsyncIterator[list[EntryRecord]]:
        """Every id the store knows (live or deleted), in batches."""

    async def import_records(self, records: Sequence[EntryRecord]) -> None:
        """Make each record's id hold exactly that record (indexes and count follow).

        A record with no entry, revision 0 and no history removes every trace of its id."""

    async def ping(self) -> None:
        """Raise StoreUnavailable unless the store can serve requests."""

    async def close(self) -> None:
        """Release connections."""
