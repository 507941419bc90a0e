"""The store under test: every entry-store backend runs the same contract cases."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from memory_bridge import EntryStore
from memory_bridge.stores.sqlite._entries import SqliteEntryStore

StoreFactory = Callable[..., Awaitable[EntryStore]]


@pytest.fixture(params=["sqlite"])
async def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """Build stores of one backend; `max_versions` and `operation_ttl` as the tests need."""
    opened: list[EntryStore] = []

    async def factory(*, max_versions: int = 20, operation_ttl: int = 604_800) -> EntryStore:
        store = SqliteEntryStore(
            tmp_path / f"entries-{len(opened)}.db", max_versions=max_versions, operation_ttl=operation_ttl
        )
        opened.append(store)
        return store

    yield factory
    for store in opened:
        await store.close()


@pytest.fixture
async def store(make_store: StoreFactory) -> EntryStore:
    return await make_store()
