"""Vectors follow the model: passages written without one are embedded by upkeep."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_bridge.search._embed import LazyEmbedder
from memory_bridge.search._onnx import MINILM_DIMENSION, MINILM_NAME, load_minilm
from memory_bridge.stores._knowledge import DocMetadata, KnowledgeFilter
from memory_bridge.stores.sqlite._knowledge import SqliteKnowledgeStore

pytestmark = pytest.mark.anyio


async def test_a_model_change_reembeds_in_the_background(tmp_path: Path) -> None:
    path = tmp_path / "k.db"
    plain = SqliteKnowledgeStore(path, embedder=None, default_slots=["knowledge"])
    await plain.upsert(
        "knowledge", "tokens.md", "Renew the bearer credential every 30 days.", DocMetadata(), origin="t"
    )
    await plain.close()

    model = LazyEmbedder(MINILM_NAME, MINILM_DIMENSION, lambda: load_minilm(1))
    store = SqliteKnowledgeStore(path, embedder=model, default_slots=["knowledge"])
    try:
        query = "how often must API keys rotate"
        before = await store.search(["knowledge"], query, KnowledgeFilter(), top_k=5, score_threshold=None)
        assert before.hits == [] and await store.stale_passages() == 1
        assert await store.upkeep() == 1
        assert await store.stale_passages() == 0 and await store.upkeep() == 0
        after = await store.search(["knowledge"], query, KnowledgeFilter(), top_k=5, score_threshold=None)
        assert [h.document_name for h in after.hits] == ["tokens.md"]
    finally:
        await store.close()


async def test_a_model_that_cannot_load_degrades_to_keywords(tmp_path: Path) -> None:
    def broken() -> LazyEmbedder:
        raise FileNotFoundError("model.onnx is missing")

    model = LazyEmbedder("broken-model", 8, broken)  # type: ignore[arg-type]
    store = SqliteKnowledgeStore(tmp_path / "k.db", embedder=model, default_slots=["knowledge"])
    try:
        saved = await store.upsert(
            "knowledge", "a.md", "cache keys carry the tenant", DocMetadata(), origin="t"
        )
        assert saved.created
        page = await store.search(
            ["knowledge"], "tenant cache", KnowledgeFilter(), top_k=5, score_threshold=None
        )
        assert [h.document_name for h in page.hits] == ["a.md"]
        assert page.degraded is not None and "model.onnx is missing" in page.degraded
    finally:
        await store.close()
