"""merge_entry: the archive's version goes on top of the target's, or nothing changes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory_bridge import Conflict, EntryStore, EntryWrite, load_settings, open_entry_store
from memory_bridge.maintenance._entry_merge import merge_entry, seen
from memory_bridge.stores import EntryRecord

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EntryStore]:
    opened = open_entry_store(load_settings(project=tmp_path, embedding_model="none"))
    yield opened
    await opened.close()


async def _write(store: EntryStore, body: str) -> None:
    await store.set(
        EntryWrite("n", "Note", body, "decision", ()), ttl=None, if_version=None, operation_id=None
    )


async def _record(store: EntryStore) -> EntryRecord:
    async for batch in store.export_records():
        return next(r for r in batch if r.id == "n")
    raise AssertionError("no record")


async def test_a_write_that_lands_during_the_merge_is_a_conflict_and_nothing_is_replaced(
    store: EntryStore,
) -> None:
    await _write(store, "archive")
    incoming = await _record(store)  # a record whose current version is "archive"
    await _write(store, "target again")
    stale = seen(await _record(store))
    await _write(store, "written meanwhile")

    with pytest.raises(Conflict, match="changed during the restore"):
        await merge_entry(store, incoming, stale)

    found = await store.get("n")
    assert found is not None and found[0].body == "written meanwhile"
