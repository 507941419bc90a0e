"""The eight entry tools, with memory-mcp's names, arguments and result shapes."""

from __future__ import annotations

import time
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
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
from ..stores._base import EntryWrite
from ._register import DESTRUCTIVE, READ_ONLY, WRITE, ToolResult, tool_registrar
from ._state import AppState

__all__ = ["ENTRY_TOOLS", "register_entry_tools"]

MAX_TTL_SECONDS = 100 * 366 * 86_400  # a century: any larger expiry overflows a store's clock
MAX_INT64 = 2**63 - 1  # the largest integer a store can take

ENTRY_TOOLS = (
    "memory_search",
    "memory_get",
    "memory_set",
    "memory_list",
    "memory_delete",
    "memory_history",
    "memory_rollback",
    "memory_prune_candidates",
)


def register_entry_tools(mcp: MCPServer[Any], state: AppState) -> None:
    """Add the entry tools to `mcp`, serving `state.store`."""
    settings = state.settings
    tool = tool_registrar(mcp, settings.tool_timeout_seconds, state.backends.suspect)

    @tool("Search memory entries", READ_ONLY)
    async def memory_search(
        tags: Annotated[Tags | None, Field(description="Only entries carrying all of these tags.")] = None,
        type: Annotated[EntryType | None, Field(description="Only entries of this type.")] = None,
        project: Annotated[
            ProjectName | None, Field(description='Only entries of this project ("" = cross-project).')
        ] = None,
        query: Annotated[Query | None, Field(description="Words to rank by (title, body, tags, id).")] = None,
        limit: Annotated[int, Field(gt=0, le=200, description="Page size.")] = 20,
        cursor: Annotated[Cursor | None, Field(description="next_cursor of the previous page.")] = None,
    ) -> ToolResult:
        """Search entries by tags, type and project, ranked by a free-text query.

        Without a query, results are ordered by hits, then most recently updated. With
        one, entries containing all its words come first, ranked by relevance; when no
        entry has them all, entries with any of them are returned (`match: "any"`).
        `total` counts every match; pass `next_cursor` back to get the next page.
        """
        started = time.perf_counter()
        state.metrics.search_total.inc()
        try:
            result = await ops.search_entries(
                state.store, tags=tags, type=type, project=project, query=query, limit=limit, cursor=cursor
            )
        finally:
            state.metrics.search_duration.observe(time.perf_counter() - started)
        if not result["count"]:
            state.metrics.search_empty_total.inc()
        return result

    @tool("Get a memory entry", READ_ONLY)
    async def memory_get(id: ExistingId) -> ToolResult:
        """Fetch one entry by id with its current revision; counts a hit.

        Use the returned `revision` as `if_version` in memory_set to update safely.
        """
        return await ops.get_entry(state.store, id)

    @tool("Create or update a memory entry", WRITE)
    async def memory_set(
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
    ) -> ToolResult:
        """Create or replace an entry; every applied write adds a history version.

        Pass `if_version` (the revision from memory_get) to avoid overwriting someone
        else's change: on a mismatch nothing is written and the reply says `conflict`
        with the current revision. Pass a fresh `operation_id` to make retries safe: a
        repeat replays the first outcome instead of writing again. A write without
        `ttl` makes the entry permanent. Secrets (keys, tokens, passwords) in the title
        and body are stored as [REDACTED] markers.
        """
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
            max_entries_warn=settings.max_entries_warn,
            redact_secrets=settings.redact_entries,
        )
        if result.get("error") == "conflict":
            state.metrics.conflict_total.inc()
        elif result["ok"] and not result.get("replayed"):
            state.metrics.write_total.inc()
        return result

    @tool("List memory entries", READ_ONLY)
    async def memory_list(
        type: Annotated[EntryType | None, Field(description="Only entries of this type.")] = None,
        project: Annotated[
            ProjectName | None, Field(description='Only entries of this project ("" = cross-project).')
        ] = None,
        sort: Annotated[Sort, Field(description="hits (then updated) or updated, newest first.")] = "hits",
        limit: Annotated[int, Field(gt=0, le=500, description="Page size.")] = 50,
        cursor: Annotated[Cursor | None, Field(description="next_cursor of the previous page.")] = None,
    ) -> ToolResult:
        """List entries, optionally by type and project; `total` counts all pages."""
        return await ops.list_entries(
            state.store, type=type, project=project, sort=sort, limit=limit, cursor=cursor
        )

    @tool("Delete a memory entry", DESTRUCTIVE)
    async def memory_delete(id: ExistingId) -> ToolResult:
        """Delete an entry. Its history keeps a tombstone, so memory_rollback can restore it."""
        return await ops.delete_entry(state.store, id)

    @tool("Show an entry's history", READ_ONLY)
    async def memory_history(
        id: ExistingId,
        limit: Annotated[int, Field(gt=0, le=1000, description="How many versions, newest first.")] = 10,
    ) -> ToolResult:
        """Past versions of an entry, newest first (index 0), including deletions."""
        return await ops.entry_history(state.store, id, limit)

    @tool("Roll an entry back", DESTRUCTIVE)
    async def memory_rollback(
        id: ExistingId,
        version_index: Annotated[
            int, Field(ge=0, le=MAX_INT64, description="Index in memory_history's versions (0 = newest).")
        ],
    ) -> ToolResult:
        """Restore an entry to a version from its history; also brings back a deleted entry."""
        result = await ops.rollback_entry(state.store, id, version_index)
        state.metrics.write_total.inc()
        return result

    @tool("Find entries to prune", READ_ONLY)
    async def memory_prune_candidates(
        days: Annotated[int, Field(gt=0, le=36_500, description="Not updated for this many days.")] = 30,
        limit: Annotated[int, Field(gt=0, le=500, description="Page size.")] = 100,
        cursor: Annotated[Cursor | None, Field(description="next_cursor of the previous page.")] = None,
    ) -> ToolResult:
        """Entries never read and not updated for `days`, oldest first. Changes nothing."""
        return await ops.prune_candidates(state.store, days=days, limit=limit, cursor=cursor)
