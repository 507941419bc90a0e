"""The eight entry operations, shaped exactly as memory-mcp 1.2 answers them.

Each function takes a validated request and an `EntryStore`, makes the store's one
atomic call, and returns memory-mcp's result object as its result model (same keys, same
order), with memctl's additions (`total`, `next_cursor`, `match`) after them.
"""

from __future__ import annotations

import time
from typing import Any

from .._errors import InvalidInput, NotFound
from ..stores._base import EntryFilter, EntryPage, EntryStore, EntryWrite, SortOrder
from ..stores._clock import format_instant
from ._cursor import decode_cursor, encode_cursor
from ._redact import redact
from ._redact_fields import redact_entry
from ._results import (
    DeleteResult,
    EntryModel,
    EntryPageResult,
    GetResult,
    HistoryResult,
    HistoryVersion,
    PruneResult,
    RollbackResult,
    SearchResult,
    SetResult,
)

__all__ = [
    "delete_entry",
    "entry_history",
    "get_entry",
    "list_entries",
    "prune_candidates",
    "rollback_entry",
    "search_entries",
    "set_entry",
    "soft_cap_warning",
]


def soft_cap_warning(count: int, cap: int) -> str | None:
    if count > cap:
        return f"Entry count ({count}) exceeds soft cap of {cap}. Consider running memory_prune_candidates."
    return None


def _not_found(id: str, operation: str) -> NotFound:
    return NotFound(f"Not found: {id}", operation=operation)


def _page(page: EntryPage, offset: int, params: dict[str, Any]) -> tuple[list[EntryModel], str | None]:
    """A page's entries, and the cursor of the next page (None on the last)."""
    returned = len(page.entries)
    has_more = offset + returned < page.total
    cursor = encode_cursor(offset + returned, params) if has_more and returned else None
    return [EntryModel.of(entry) for entry in page.entries], cursor


async def set_entry(
    store: EntryStore,
    write: EntryWrite,
    *,
    ttl: int | None,
    if_version: int | None,
    operation_id: str | None,
    max_entries_warn: int,
    redact_secrets: bool = True,
) -> SetResult:
    """Write one entry; secrets in its title, body, type, tags, source and project are redacted
    first, unless the operator turned that off (`redact_entries = false`, memory-mcp's
    behaviour)."""
    if redact_secrets:
        if redact(write.id) != write.id:  # an id is a key: refused, never rewritten (nor echoed)
            raise InvalidInput("id", "looks like it holds a secret; choose another id")
        write = redact_entry(write)
    outcome = await store.set(write, ttl=ttl, if_version=if_version, operation_id=operation_id)
    if outcome.status == "conflict":
        return SetResult(
            ok=False,
            error="conflict",
            id=outcome.id,
            current_revision=outcome.current_revision,
            expected_version=if_version,
        )
    if outcome.status == "op_mismatch":
        return SetResult(
            ok=False, error="operation_id_mismatch", id=outcome.id, recorded_id=outcome.recorded_id
        )
    count = outcome.entry_count if outcome.entry_count is not None else await store.count()
    result = SetResult(
        ok=True,
        id=outcome.id,
        operation=outcome.operation,
        revision=outcome.revision,
        warning=soft_cap_warning(count, max_entries_warn),
    )
    if outcome.status == "replayed":
        result.replayed = True
    return result


async def get_entry(store: EntryStore, id: str) -> GetResult:
    found = await store.get(id)
    if found is None:
        raise _not_found(id, "memory_get")
    entry, revision = found
    return GetResult.of(entry, revision=revision)


async def search_entries(
    store: EntryStore,
    *,
    tags: list[str] | None,
    type: str | None,
    project: str | None,
    query: str | None,
    limit: int,
    cursor: str | None,
) -> SearchResult:
    flt = EntryFilter(tags=tuple(dict.fromkeys(tags or ())), type=type or None, project=project)
    query = (query or "").strip() or None
    params = {"op": "search", "tags": sorted(flt.tags), "type": flt.type, "project": project, "query": query}
    offset = decode_cursor(cursor, params, operation="memory_search")
    page = await store.search(flt, query, offset=offset, limit=limit)
    entries, next_cursor = _page(page, offset, params)
    result = SearchResult(count=len(entries), results=entries, total=page.total, next_cursor=next_cursor)
    if query is not None:
        result.match = page.match
    if page.extra.get("degraded"):
        result.degraded = page.extra["degraded"]
    return result


async def list_entries(
    store: EntryStore,
    *,
    type: str | None,
    project: str | None,
    sort: SortOrder,
    limit: int,
    cursor: str | None,
) -> EntryPageResult:
    flt = EntryFilter(type=type or None, project=project)
    params = {"op": "list", "type": flt.type, "project": project, "sort": sort}
    offset = decode_cursor(cursor, params, operation="memory_list")
    page = await store.list_entries(flt, sort=sort, offset=offset, limit=limit)
    entries, next_cursor = _page(page, offset, params)
    return EntryPageResult(count=len(entries), results=entries, total=page.total, next_cursor=next_cursor)


async def delete_entry(store: EntryStore, id: str) -> DeleteResult:
    outcome = await store.delete(id)
    if outcome is None:
        raise _not_found(id, "memory_delete")
    return DeleteResult(ok=True, id=outcome.id, operation="deleted", revision=outcome.revision)


async def entry_history(store: EntryStore, id: str, limit: int) -> HistoryResult:
    versions = await store.history(id, limit)
    return HistoryResult(id=id, count=len(versions), versions=[HistoryVersion(**v) for v in versions])


async def rollback_entry(store: EntryStore, id: str, version_index: int) -> RollbackResult:
    outcome = await store.rollback(id, version_index)
    return RollbackResult(
        ok=True,
        id=outcome.id,
        operation=outcome.operation,
        restored_from=outcome.restored_from,
        revision=outcome.revision,
    )


async def prune_candidates(
    store: EntryStore, *, days: int, limit: int, cursor: str | None, now: float | None = None
) -> PruneResult:
    cutoff = format_instant((time.time() if now is None else now) - days * 86_400)
    params = {"op": "prune", "days": days}
    offset = decode_cursor(cursor, params, operation="memory_prune_candidates")
    page = await store.prune_candidates(cutoff, offset=offset, limit=limit)
    entries, next_cursor = _page(page, offset, params)
    return PruneResult(
        count=len(entries),
        threshold_days=days,
        cutoff_date=cutoff,
        candidates=entries,
        total=page.total,
        next_cursor=next_cursor,
    )
