"""Opening the project's knowledge store for capture, and the outbox around every run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from memory_bridge import Settings, StoreUnavailable
from memory_bridge.core import KnowledgeContext
from memory_bridge.stores import make_embedder, open_knowledge_store

from ._outbox import Delivery, deliver, queued
from ._paths import CaptureDirs

__all__ = ["knowledge", "open_and_deliver"]


@asynccontextmanager
async def knowledge(settings: Settings) -> AsyncIterator[KnowledgeContext]:
    """The knowledge store the settings name (with their embedder), closed afterwards."""
    store = open_knowledge_store(settings, make_embedder(settings))
    try:
        yield KnowledgeContext(
            store,
            settings.project_scope,
            settings.search.max_results,
            max_document_chars=settings.intake.max_document_chars,
        )
    finally:
        await store.close()


async def open_and_deliver(settings: Settings) -> Delivery:
    """Deliver whatever capture has queued; an unusable store leaves it queued."""
    dirs = CaptureDirs(settings.project)
    try:
        async with knowledge(settings) as ctx:
            return await deliver(dirs, ctx)
    except StoreUnavailable as exc:
        return Delivery([], queued(dirs)[0], [], str(exc))
