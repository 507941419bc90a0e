"""The embedded knowledge store's recall stamps find documents by id: by slot, a stamp read
every document of the slot (144 ms at 1M passages) while searches waited for the store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory_bridge.stores import DocMetadata
from memory_bridge.stores.sqlite import SqliteKnowledgeStore
from memory_bridge.stores.sqlite._knowledge import STAMP_RECALLS

pytestmark = pytest.mark.anyio


async def test_a_recall_stamp_finds_its_documents_by_id(tmp_path: Path) -> None:
    path = tmp_path / "knowledge.db"
    store = SqliteKnowledgeStore(path, embedder=None, default_slots=["knowledge"])
    try:
        for n in range(50):
            await store.upsert("knowledge", f"doc-{n}.md", f"text {n}", DocMetadata(), origin="test")
        found = await store.find("knowledge", "doc-7.md")
        assert found is not None
        assert await store.stamp_recalls("knowledge", [found.id], now=100.0, window=60.0) == 1
        assert (
            await store.stamp_recalls("knowledge", [found.id], now=130.0, window=60.0) == 0
        )  # in the window
        again = await store.find("knowledge", "doc-7.md")
        assert again is not None and again.recall_count == 1 and again.last_recalled_at == 100.0
    finally:
        await store.close()
    with sqlite3.connect(path) as conn:
        plan = " ".join(
            row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {STAMP_RECALLS}", (0, "", "[]", 0))
        )
    conn.close()
    assert "(id=?)" in plan and "documents_by_slot" not in plan, plan
