"""Opening a project's two stores as one `ItemStores`, for the commands that look memory up."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from memory_bridge import Settings
from memory_bridge.core import Freshness, ItemStores
from memory_bridge.stores import make_embedder, open_entry_store, open_knowledge_store

__all__ = ["item_stores"]


@asynccontextmanager
async def item_stores(settings: Settings, *, embed: bool = False) -> AsyncIterator[ItemStores]:
    """Both stores of the project, closed when the block ends. With `embed`, searches rank
    by meaning too (the embedding model loads on the first query)."""
    embedder = make_embedder(settings) if embed else None
    entries = open_entry_store(settings, embedder)
    try:
        knowledge = open_knowledge_store(settings, embedder)
        try:
            yield ItemStores(
                entries,
                knowledge,
                scope=settings.project_scope,
                redact_entries=settings.intake.redact_entries,
                max_entries_warn=settings.retention.max_entries_warn,
                freshness=Freshness.of(settings),
                threshold=settings.search.score_threshold,
            )
        finally:
            await knowledge.close()
    finally:
        await entries.close()
