"""Vectors follow the text and the model, off the write path: writes commit without
waiting for the model, searches embed what is still queued, upkeep embeds the rest."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import numpy.typing as npt
import pytest

from memory_bridge.search import MINILM_NAME, LazyEmbedder, lazy_minilm
from memory_bridge.stores import DocMetadata, KnowledgeFilter, SearchPage
from memory_bridge.stores.sqlite import SqliteKnowledgeStore
from memory_bridge.stores.sqlite._knowledge_vectors import SEARCH_CATCH_UP, SEARCH_CATCH_UP_CHARS

from ....bridges import MODEL_CACHE

pytestmark = pytest.mark.anyio

PARAPHRASE = "how often must API keys rotate"


class Recording:
    """The real model, counting the texts it embeds; `hold()` makes document embedding
    wait until released (a model busy with a long batch)."""

    def __init__(self, inner: LazyEmbedder, name: str = MINILM_NAME) -> None:
        self.name = name
        self.dimension = inner.dimension
        self._inner = inner
        self.texts: list[str] = []
        self.gate = threading.Event()
        self.gate.set()

    def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        self.gate.wait()
        self.texts += texts
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._inner.embed_query(text)


@pytest.fixture(scope="module")
def minilm() -> LazyEmbedder:
    return lazy_minilm(1, int8_cache=MODEL_CACHE)


@pytest.fixture
def recording(minilm: LazyEmbedder) -> Iterator[Recording]:
    model = Recording(minilm)
    yield model
    model.gate.set()


async def search(store: SqliteKnowledgeStore, query: str) -> SearchPage:
    return await store.search(["knowledge"], query, KnowledgeFilter(), top_k=5, score_threshold=None)


async def test_a_write_commits_while_the_model_is_busy(tmp_path: Path, recording: Recording) -> None:
    store = SqliteKnowledgeStore(tmp_path / "k.db", embedder=recording, default_slots=["knowledge"])
    try:
        recording.gate.clear()
        saved = await store.upsert(
            "knowledge", "tokens.md", "Renew the bearer credential every 30 days.", DocMetadata(), origin="t"
        )
        assert saved.created and saved.indexing_status == "indexing"
        found = await store.search(
            ["knowledge"],
            "bearer credential",
            KnowledgeFilter(),
            top_k=5,
            score_threshold=None,
            mode="keyword",
        )
        assert [h.document_name for h in found.hits] == ["tokens.md"]
        recording.gate.set()
        await store.upkeep()
        assert await store.stale_passages() == 0
        assert [h.document_name for h in (await search(store, PARAPHRASE)).hits] == ["tokens.md"]
    finally:
        recording.gate.set()
        await store.close()


async def test_a_search_right_after_a_write_finds_it_by_meaning(tmp_path: Path, recording: Recording) -> None:
    store = SqliteKnowledgeStore(tmp_path / "k.db", embedder=recording, default_slots=["knowledge"])
    try:
        await store.upsert(
            "knowledge", "tokens.md", "Renew the bearer credential every 30 days.", DocMetadata(), origin="t"
        )
        page = await search(store, PARAPHRASE)  # no word in common: only the vector can find it
        assert [h.document_name for h in page.hits] == ["tokens.md"] and page.degraded is None
    finally:
        await store.close()


async def test_an_unchanged_passage_keeps_its_vector(tmp_path: Path, recording: Recording) -> None:
    store = SqliteKnowledgeStore(tmp_path / "k.db", embedder=recording, default_slots=["knowledge"])
    first = "The staging database password rotates every Tuesday at noon. " * 12
    second = "Deploys freeze on Fridays after three in the afternoon. " * 12
    try:
        await store.upsert("knowledge", "ops.md", f"{first}\n\n{second}", DocMetadata(), origin="t")
        await store.upkeep()
        assert len(recording.texts) == 2  # two passages
        changed = second.replace("Fridays", "Thursdays")
        await store.upsert("knowledge", "ops.md", f"{first}\n\n{changed}", DocMetadata(), origin="t")
        await store.upkeep()
        assert len(recording.texts) == 3 and "Thursdays" in recording.texts[-1]
        page = await search(store, "when do deploys stop before the weekend")
        assert page.hits[0].document_name == "ops.md" and "Thursdays" in page.hits[0].content
    finally:
        await store.close()


async def test_a_model_change_reembeds_in_the_background(tmp_path: Path, minilm: LazyEmbedder) -> None:
    path = tmp_path / "k.db"
    old = SqliteKnowledgeStore(path, embedder=Recording(minilm, "old-model"), default_slots=["knowledge"])
    await old.upsert(
        "knowledge", "tokens.md", "Renew the bearer credential every 30 days.", DocMetadata(), origin="t"
    )
    await old.upkeep()
    await old.close()

    store = SqliteKnowledgeStore(path, embedder=minilm, default_slots=["knowledge"])
    try:
        assert await store.stale_passages() == 1
        assert await store.upkeep() == 1
        assert await store.stale_passages() == 0 and await store.upkeep() == 0
        assert [h.document_name for h in (await search(store, PARAPHRASE)).hits] == ["tokens.md"]
    finally:
        await store.close()


async def test_a_search_during_a_bulk_import_says_it_is_partial(tmp_path: Path, minilm: LazyEmbedder) -> None:
    path = tmp_path / "k.db"
    plain = SqliteKnowledgeStore(path, embedder=None, default_slots=["knowledge"])
    for n in range(SEARCH_CATCH_UP + 1):
        await plain.upsert(
            "knowledge", f"n{n}.md", f"Runbook note {n} about the proxy.", DocMetadata(), origin="t"
        )
    await plain.close()

    store = SqliteKnowledgeStore(path, embedder=minilm, default_slots=["knowledge"])
    try:
        partial = await search(store, "proxy runbook")
        assert len(partial.hits) == 5, "keywords still find the queued documents"
        assert (
            partial.degraded is not None
            and f"{SEARCH_CATCH_UP + 1} passages are still waiting" in partial.degraded
        )
        await store.upkeep()
        assert (await search(store, "proxy runbook")).degraded is None
    finally:
        await store.close()


async def test_a_search_leaves_a_large_document_s_queue_to_the_background(
    tmp_path: Path, recording: Recording
) -> None:
    """Few passages, much text (a large document's last passages): a search that embedded
    them itself waited for the model (63 such passages: 820 ms in bench/big_write.py).
    It answers at once, by keywords for those passages, and says so."""
    path = tmp_path / "k.db"
    plain = SqliteKnowledgeStore(path, embedder=None, default_slots=["knowledge"])
    runbook = " ".join(f"Step {n}: restart the proxy sidecar and check its runbook." for n in range(200))
    await plain.upsert("knowledge", "runbook.md", runbook, DocMetadata(), origin="t")
    await plain.upsert("knowledge", "other.md", "Rotate the signing keys yearly.", DocMetadata(), origin="t")
    await plain.close()
    assert len(runbook) > SEARCH_CATCH_UP_CHARS

    store = SqliteKnowledgeStore(path, embedder=recording, default_slots=["knowledge"])
    try:
        page = await search(store, "proxy runbook")
        assert page.hits[0].document_name == "runbook.md"
        assert page.degraded is not None and "passages are still waiting" in page.degraded
        assert recording.texts == []  # nothing embedded on the search's path
        assert await store.upkeep() > 0 and (await search(store, "proxy runbook")).degraded is None
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
        page = await search(store, "tenant cache")
        assert [h.document_name for h in page.hits] == ["a.md"]
        assert page.degraded is not None and "model.onnx is missing" in page.degraded
        assert await store.upkeep() == 0
    finally:
        await store.close()


async def test_a_search_right_after_a_burst_of_saves_is_not_degraded(
    tmp_path: Path, minilm: LazyEmbedder
) -> None:
    store = SqliteKnowledgeStore(tmp_path / "k.db", embedder=minilm, default_slots=["knowledge"])
    dog = "Our puppy sleeps on a soft cushion by the kitchen radiator."
    try:
        for n in range(300):  # a capture flush: many saves, one after the other, no upkeep
            name, text = (
                ("home-notes.md", dog)
                if n == 150
                else (f"build-{n}.md", f"Build step {n} compiles module {n}.")
            )
            await store.upsert("knowledge", name, text, DocMetadata(), origin="t")
        query = "where does the young dog rest at night"  # no word in common with home-notes.md
        keyword = await store.search(
            ["knowledge"], query, KnowledgeFilter(), top_k=5, score_threshold=None, mode="keyword"
        )
        assert "home-notes.md" not in [h.document_name for h in keyword.hits]
        page = await search(store, query)
        assert page.degraded is None
        assert page.hits[0].document_name == "home-notes.md"
    finally:
        await store.close()


async def test_the_model_sees_the_passage_without_the_document_name(
    tmp_path: Path, recording: Recording
) -> None:
    store = SqliteKnowledgeStore(tmp_path / "k.db", embedder=recording, default_slots=["knowledge"])
    try:
        await store.upsert(
            "knowledge", "tokens.md", "Renew the bearer credential.", DocMetadata(), origin="t"
        )
        await store.upkeep()
        assert recording.texts == ["Renew the bearer credential."]
    finally:
        await store.close()


def stored_vectors(store: SqliteKnowledgeStore) -> dict[str, list[npt.NDArray[np.float32]]]:
    """Every passage's vector by its text (a list: one per passage row, none when queued)."""
    rows = store.database.run(
        "test",
        lambda conn, now: conn.execute("SELECT content, vector FROM passages ORDER BY rowid").fetchall(),
        False,
    )
    found: dict[str, list[npt.NDArray[np.float32]]] = {}
    for content, blob in rows:
        found.setdefault(content, [])
        if blob is not None:
            found[content].append(np.frombuffer(blob, dtype=np.float32))
    return found


def turns(count: int) -> list[str]:
    return [f"Turn {n}: the user asked about build step {n} and its {n % 7} retries." for n in range(count)]


async def write_without_vectors(path: Path, texts: list[str]) -> None:
    """What a crash before any embedding leaves: passages committed, no vectors."""
    plain = SqliteKnowledgeStore(path, embedder=None, default_slots=["knowledge"])
    for n, text in enumerate(texts):
        await plain.upsert("knowledge", f"turn-{n}.md", text, DocMetadata(), origin="t")
    await plain.close()


async def test_passages_written_in_bulk_get_the_vectors_of_one_by_one_embedding(tmp_path: Path) -> None:
    model = lazy_minilm(2, int8_cache=MODEL_CACHE)  # two threads: the pipeline's one-text calls
    texts = turns(60)
    store = SqliteKnowledgeStore(tmp_path / "k.db", embedder=model, default_slots=["knowledge"])
    try:
        for n, text in enumerate(texts):
            await store.upsert("knowledge", f"turn-{n}.md", text, DocMetadata(), origin="t")
        await store.upkeep()
        found = stored_vectors(store)
        assert sorted(found) == sorted(texts) and all(len(v) == 1 for v in found.values())
        for text in texts:
            np.testing.assert_allclose(found[text][0], model.embed_documents([text])[0], atol=1e-6)
    finally:
        await store.close()


async def test_an_intake_cut_short_resumes_on_the_next_start_without_duplicates(
    tmp_path: Path, minilm: LazyEmbedder
) -> None:
    path, texts = tmp_path / "k.db", turns(300)
    await write_without_vectors(path, texts)
    store = SqliteKnowledgeStore(path, embedder=minilm, default_slots=["knowledge"])
    first = 0
    async with anyio.create_task_group() as tasks:

        async def intake() -> None:
            nonlocal first
            first = await store.upkeep()

        tasks.start_soon(intake)
        while await store.stale_passages() == len(texts):  # the first vectors are stored
            await anyio.sleep(0.01)
        await store.close()  # mid-intake: what is in flight is stored, the rest stays queued
    assert 0 < first < len(texts)

    store = SqliteKnowledgeStore(path, embedder=minilm, default_slots=["knowledge"])
    try:
        assert await store.stale_passages() == len(texts) - first
        assert await store.upkeep() == len(texts) - first
        found = stored_vectors(store)
        assert sorted(found) == sorted(texts) and all(len(v) == 1 for v in found.values())
    finally:
        await store.close()


async def test_other_calls_are_answered_while_an_intake_runs(tmp_path: Path, minilm: LazyEmbedder) -> None:
    path, texts = tmp_path / "k.db", turns(400)
    await write_without_vectors(path, texts)
    store = SqliteKnowledgeStore(path, embedder=minilm, default_slots=["knowledge"])
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(store.upkeep)
            while await store.stale_passages() == len(texts):
                await anyio.sleep(0.01)
            document = await store.find("knowledge", "turn-7.md")
            page = await store.search(
                ["knowledge"],
                "build step 7",
                KnowledgeFilter(),
                top_k=5,
                score_threshold=None,
                mode="keyword",
            )
            assert await store.stale_passages() > 0, "answered while the intake still runs"
        assert document is not None and document.text == texts[7]
        assert "turn-7.md" in [h.document_name for h in page.hits]
        assert await store.stale_passages() == 0
    finally:
        await store.close()
