"""memory_search ranks by meaning on the embedded store: vectors come from background upkeep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory_bridge import EntryWrite
from memory_bridge import core as ops
from memory_bridge.search import LazyEmbedder, lazy_minilm
from memory_bridge.stores.sqlite import SqliteEntryStore

from ....bridges import MODEL_CACHE

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def minilm() -> LazyEmbedder:
    return lazy_minilm(2, int8_cache=MODEL_CACHE)


async def put(store: SqliteEntryStore, id: str, title: str, body: str) -> None:
    write = EntryWrite(id=id, title=title, body=body, type="note", tags=("t",))
    await store.set(write, ttl=None, if_version=None, operation_id=None)


async def search(store: SqliteEntryStore, query: str) -> dict[str, Any]:
    return (
        await ops.search_entries(
            store, tags=None, type=None, project=None, query=query, limit=10, cursor=None
        )
    ).model_dump()


async def test_no_word_in_common_finds_the_entry_by_meaning(tmp_path: Path, minilm: LazyEmbedder) -> None:
    store = SqliteEntryStore(tmp_path / "e.db", embedder=minilm)
    try:
        await put(store, "tokens", "Renew bearer credentials", "Rotate them every 30 days via the vault.")
        await put(store, "css", "Safari layout bug", "The CSS grid collapses on Safari 16.")
        query = "how often must API keys be changed"
        assert (await search(store, query))["total"] == 0, "not embedded yet: nothing to go on"
        assert await store.upkeep() == 2 and await store.upkeep() == 0
        found = await search(store, query)
        assert found["match"] == "semantic"
        assert [e["id"] for e in found["results"]] == ["tokens"]
    finally:
        await store.close()


async def test_keyword_matches_are_ordered_by_meaning(tmp_path: Path, minilm: LazyEmbedder) -> None:
    store = SqliteEntryStore(tmp_path / "e.db", embedder=minilm)
    try:
        await put(store, "a-unrelated", "Cache the logo", "Cache the company logo in the CDN for a year.")
        await put(store, "b-relevant", "Cache invalidation", "Invalidate the cache when a price changes.")
        await store.upkeep()
        found = await search(store, "stale prices shown after an update, cache")
        assert found["match"] == "any"
        assert found["results"][0]["id"] == "b-relevant"
    finally:
        await store.close()


async def test_a_changed_entry_is_embedded_again(tmp_path: Path, minilm: LazyEmbedder) -> None:
    store = SqliteEntryStore(tmp_path / "e.db", embedder=minilm)
    try:
        await put(store, "x", "Deploy on Fridays", "Never deploy on Fridays.")
        assert await store.upkeep() == 1
        await put(store, "x", "Database backups", "Nightly backups go to cold storage.")
        assert await store.upkeep() == 1
        found = await search(store, "where do snapshots of the data go at night")
        assert [e["id"] for e in found["results"]] == ["x"]
    finally:
        await store.close()


async def test_an_entry_whose_text_did_not_change_is_not_embedded_again(
    tmp_path: Path, minilm: LazyEmbedder
) -> None:
    store = SqliteEntryStore(tmp_path / "e.db", embedder=minilm)
    try:
        await put(store, "x", "Deploy on Fridays", "Never deploy on Fridays.")
        assert await store.upkeep() == 1
        write = EntryWrite(
            id="x", title="Deploy on Fridays", body="Never deploy on Fridays.", type="note", tags=("u",)
        )
        await store.set(write, ttl=None, if_version=None, operation_id=None)  # new tags, same text
        assert await store.stale_vectors() == 1
        assert await store.upkeep() == 0  # the vector stands
        assert await store.stale_vectors() == 0
        found = await search(store, "release at the end of the week")
        assert [e["id"] for e in found["results"]] == ["x"]
    finally:
        await store.close()


async def test_without_a_model_the_search_says_degraded(tmp_path: Path) -> None:
    def broken() -> Any:
        raise FileNotFoundError("no model here")

    store = SqliteEntryStore(tmp_path / "e.db", embedder=LazyEmbedder("broken", 8, broken))
    try:
        await put(store, "x", "Deploy on Fridays", "Never deploy on Fridays.")
        assert await store.upkeep() == 0
        found = await search(store, "deploy")
        assert [e["id"] for e in found["results"]] == ["x"]
        assert "no model here" in found["degraded"]
    finally:
        await store.close()
