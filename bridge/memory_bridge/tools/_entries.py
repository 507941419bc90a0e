"""The eight entry tools, with memory-mcp's names, arguments and result shapes."""

from __future__ import annotations

import time
from typing import Annotated

from pydantic import Field

from ..core import _entries as ops
from ..core._fields import (
    Body,
    Cursor,
    EntryId,
    EntryType,
    ExistingId,
    OperationId,
    ProjectName,
    Query,
    Sort,
    Source,
    Tags,
    Title,
)
from ..core._results import (
    DeleteResult,
    EntryPageResult,
    GetResult,
    HistoryResult,
    PruneResult,
    RollbackResult,
    SearchResult,
    SetResult,
)
from ..stores._base import EntryWrite
from ._register import DESTRUCTIVE, READ_ONLY, WRITE, ToolSet
from ._state import ToolContext, state_of

__all__ = ["ENTRY_TOOLS", "entry_tools"]

MAX_TTL_SECONDS = 100 * 366 * 86_400  # a century: any larger expiry overflows a store's clock
MAX_INT64 = 2**63 - 1  # the largest integer a store can take

entry_tools = ToolSet()
tool = entry_tools.tool


@tool("Search memory entries", READ_ONLY)
async def memory_search(
    ctx: ToolContext,
    tags: Annotated[Tags | None, Field(description="Only entries carrying all of these tags.")] = None,
    type: Annotated[EntryType | None, Field(description="Only entries of this type.")] = None,
    project: Annotated[
        ProjectName | None, Field(description='Only entries of this project ("" = cross-project).')
    ] = None,
    query: Annotated[Query | None, Field(description="Words to rank by (title, body, tags, id).")] = None,
    limit: Annotated[int, Field(gt=0, le=200, description="Page size.")] = 20,
    cursor: Annotated[Cursor | None, Field(description="next_cursor of the previous page.")] = None,
) -> SearchResult:
    """Search entries by tags, type and project, ranked by a free-text query.

    Without a query, results are ordered by hits, then most recently updated. With
    one, entries containing all its words come first, ranked by relevance; when no
    entry has them all, entries with any of them are returned (`match: "any"`).
    `total` counts every match; pass `next_cursor` back to get the next page.
    """
    state = state_of(ctx)
    started = time.perf_counter()
    state.metrics.search_total.inc()
    try:
        result = await ops.search_entries(
            state.store, tags=tags, type=type, project=project, query=query, limit=limit, cursor=cursor
        )
    finally:
        state.metrics.search_duration.observe(time.perf_counter() - started)
    if not result.count:
        state.metrics.search_empty_total.inc()
    return result


@tool("Get a memory entry", READ_ONLY)
async def memory_get(ctx: ToolContext, id: ExistingId) -> GetResult:
    """Fetch one entry by id with its current revision; counts a hit.

    Use the returned `revision` as `if_version` in memory_set to update safely.
    """
    return await ops.get_entry(state_of(ctx).store, id)


@tool("Create or update a memory entry", WRITE)
async def memory_set(
    ctx: ToolContext,
    id: EntryId,
    title: Title,
    body: Body,
    type: EntryType,
    tags: Tags,
    source: Source = "unknown",
    project: ProjectName = "",
    ttl: Annotated[
        int | None,
        Field(gt=0, le=MAX_TTL_SECONDS, description="Expire the entry after this many seconds."),
    ] = None,
    if_version: Annotated[
        int | None,
        Field(
            ge=0,
            le=MAX_INT64,
            description="Write only if the entry is at this revision (0 = only if it does not exist).",
        ),
    ] = None,
    operation_id: OperationId | None = None,
) -> SetResult:
    """Create or replace an entry; every applied write adds a history version.

    Pass `if_version` (the revision from memory_get) to avoid overwriting someone
    else's change: on a mismatch nothing is written and the reply says `conflict`
    with the current revision. Pass a fresh `operation_id` to make retries safe: a
    repeat replays the first outcome instead of writing again. A write without
    `ttl` makes the entry permanent. Secrets (keys, tokens, passwords) in the title,
    body, type, tags, source and project are stored as [REDACTED] markers; an id holding
    one is refused.
    """
    state = state_of(ctx)
    write = EntryWrite(
        id=id,
        title=title,
        body=body,
        type=type,
        tags=tuple(dict.fromkeys(tags)),
        source=source,
        project=project,
    )
    result = await ops.set_entry(
        state.store,
        write,
        ttl=ttl,
        if_version=if_version,
        operation_id=operation_id,
        max_entries_warn=state.settings.retention.max_entries_warn,
        redact_secrets=state.settings.intake.redact_entries,
    )
    if result.error == "conflict":
        state.metrics.conflict_total.inc()
    elif result.ok and not result.replayed:
        state.metrics.write_total.inc()
    return result


@tool("List memory entries", READ_ONLY)
async def memory_list(
    ctx: ToolContext,
    type: Annotated[EntryType | None, Field(description="Only entries of this type.")] = None,
    project: Annotated[
        ProjectName | None, Field(description='Only entries of this project ("" = cross-project).')
    ] = None,
    sort: Annotated[Sort, Field(description="hits (then updated) or updated, newest first.")] = "hits",
    limit: Annotated[int, Field(gt=0, le=500, description="Page size.")] = 50,
    cursor: Annotated[Cursor | None, Field(description="next_cursor of the previous page.")] = None,
) -> EntryPageResult:
    """List entries, optionally by type and project; `total` counts all pages."""
    return await ops.list_entries(
        state_of(ctx).store, type=type, project=project, sort=sort, limit=limit, cursor=cursor
    )


@tool("Delete a memory entry", DESTRUCTIVE)
async def memory_delete(ctx: ToolContext, id: ExistingId) -> DeleteResult:
    """Delete an entry. Its history keeps a tombstone, so memory_rollback can restore it."""
    return await ops.delete_entry(state_of(ctx).store, id)


@tool("Show an entry's history", READ_ONLY)
async def memory_history(
    ctx: ToolContext,
    id: ExistingId,
    limit: Annotated[int, Field(gt=0, le=1000, description="How many versions, newest first.")] = 10,
) -> HistoryResult:
    """Past versions of an entry, newest first (index 0), including deletions."""
    return await ops.entry_history(state_of(ctx).store, id, limit)


@tool("Roll an entry back", DESTRUCTIVE)
async def memory_rollback(
    ctx: ToolContext,
    id: ExistingId,
    version_index: Annotated[
        int, Field(ge=0, le=MAX_INT64, description="Index in memory_history's versions (0 = newest).")
    ],
) -> RollbackResult:
    """Restore an entry to a version from its history; also brings back a deleted entry."""
    state = state_of(ctx)
    result = await ops.rollback_entry(state.store, id, version_index)
    state.metrics.write_total.inc()
    return result


@tool("Find entries to prune", READ_ONLY)
async def memory_prune_candidates(
    ctx: ToolContext,
    days: Annotated[int, Field(gt=0, le=36_500, description="Not updated for this many days.")] = 30,
    limit: Annotated[int, Field(gt=0, le=500, description="Page size.")] = 100,
    cursor: Annotated[Cursor | None, Field(description="next_cursor of the previous page.")] = None,
) -> PruneResult:
    """Entries never read and not updated for `days`, oldest first. Changes nothing."""
    return await ops.prune_candidates(state_of(ctx).store, days=days, limit=limit, cursor=cursor)


ENTRY_TOOLS = entry_tools.names
