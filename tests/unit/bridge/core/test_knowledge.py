"""Knowledge search resolves slots by name without counting documents: at 1M passages the
embedded store's per-slot count cost 50 ms of every search (bench/knowledge_scale.py)."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import pytest

from memory_bridge.core import _knowledge as kn
from memory_bridge.stores import DocMetadata
from memory_bridge.stores.sqlite import SqliteKnowledgeStore

pytestmark = pytest.mark.anyio


class NoCounting(SqliteKnowledgeStore):
    """The embedded store, refusing the slot listing that counts every slot's documents."""

    async def list_slots(self) -> NoReturn:
        raise AssertionError("a search counted every slot's documents")


async def test_a_search_names_its_slots_without_counting_documents(tmp_path: Path) -> None:
    store = NoCounting(tmp_path / "knowledge.db", embedder=None, default_slots=["knowledge", "plans"])
    try:
        await store.upsert("plans", "rollout.md", "the canary rollout plan", DocMetadata(), origin="test")
        ctx = kn.KnowledgeContext(store, "", 8)
        found = await kn.search_memory(
            ctx, query="canary rollout", datasets=["plans"], filters=None, score_threshold=0.0, max_results=5
        )
        assert [r.documentName for r in found.records] == ["rollout.md"]
        assert found.datasetsSearched == ["plans"]
        with pytest.raises(kn.InvalidInput, match="unknown slot 'nope' \\(known: knowledge, plans\\)"):
            await kn.resolve_slot(store, "nope")
    finally:
        await store.close()


async def test_slot_ids_are_the_listed_slots_in_their_order(tmp_path: Path) -> None:
    store = SqliteKnowledgeStore(
        tmp_path / "knowledge.db", embedder=None, default_slots=["knowledge", "daily"]
    )
    try:
        await store.create_slot("zeta")
        await store.create_slot("alpha")
        listed = {slot.name: slot.id for slot in await store.list_slots()}
        assert await store.slot_ids() == listed
        assert list(await store.slot_ids()) == list(listed) and set(listed) == {
            "daily",
            "knowledge",
            "zeta",
            "alpha",
        }
    finally:
        await store.close()
