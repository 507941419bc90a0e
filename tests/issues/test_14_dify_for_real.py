"""Issue 14: what a real Dify 1.14.2 showed that the emulator hid (here against the corrected emulator)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from memory_bridge import InvalidInput, StoreFailed
from memory_bridge.stores import DocMetadata, KnowledgeFilter
from memory_bridge.stores.dify import (
    MAX_REJECTIONS,
    DifyClient,
    DifyKnowledgeStore,
    DurableKnowledgeStore,
    Outbox,
    onboard,
)

from ..emulators.dify.app import create_app

pytestmark = pytest.mark.anyio

BASE = "http://dify.test"


@pytest.fixture
def app() -> Any:
    return create_app(version="1.14.2")


async def open_store(app: Any) -> DifyKnowledgeStore:
    store = DifyKnowledgeStore(
        f"{BASE}/v1",
        app.state.dify.add_api_key(),
        default_slots=("knowledge",),
        transport=httpx.ASGITransport(app=app),
    )
    await store.create_slot("knowledge")
    return store


async def test_a_second_save_under_a_name_sends_only_memctls_own_fields(app: Any, tmp_path: Path) -> None:
    """Finding 1: built-in fields (`id: "built-in"`) were echoed back with id "" and refused."""
    durable = DurableKnowledgeStore(await open_store(app), Outbox(tmp_path / "outbox.db"))
    first = await durable.upsert("knowledge", "n.md", "First text.", DocMetadata(scope="p"), origin="t")
    second = await durable.upsert("knowledge", "n.md", "Second text.", DocMetadata(scope="p"), origin="t")
    assert (first.created, second.created) == (True, False)
    assert second.document_id == first.document_id and second.metadata_applied
    assert (await durable.outbox.status())["pending"] == 0
    doc = await durable.find("knowledge", "n.md")
    assert doc is not None and doc.text == "Second text." and doc.metadata.scope == "p"
    await durable.close()


async def test_a_500_is_a_failure_not_an_outage_and_is_not_retried_by_the_client() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        return httpx.Response(500, json={"code": "internal_server_error", "message": "boom"})

    client = DifyClient(f"{BASE}/v1", "dataset-key", transport=httpx.MockTransport(handler))
    with pytest.raises(StoreFailed, match="500"):
        await client.get_dataset("x")
    assert len(calls) == 1
    await client.close()


async def test_a_dead_write_never_blocks_later_writes_and_order_holds_per_document(
    app: Any, tmp_path: Path
) -> None:
    """Finding 1: one write the server keeps refusing queued every later write behind it."""
    durable = DurableKnowledgeStore(await open_store(app), Outbox(tmp_path / "outbox.db"))
    app.state.dify.outage = 503
    await durable.upsert("gone-slot", "bad.md", "Refused for good.", DocMetadata(), origin="t")
    await durable.upsert("knowledge", "a.md", "A, first version.", DocMetadata(), origin="t")
    await durable.upsert("knowledge", "a.md", "A, second version.", DocMetadata(), origin="t")
    app.state.dify.outage = None
    for _ in range(MAX_REJECTIONS):
        await durable.upkeep()
    status = await durable.outbox.status()
    assert (status["pending"], status["dead_lettered"]) == (0, 1)
    doc = await durable.find("knowledge", "a.md")
    assert doc is not None and doc.text == "A, second version."
    later = await durable.upsert(
        "knowledge", "b.md", "Written after the dead one.", DocMetadata(), origin="t"
    )
    assert later.text_applied and later.created
    [dead] = await durable.outbox.entries()
    assert dead.dead and "unknown slot" in dead.last_error
    assert await durable.outbox.retry() == 1
    assert await durable.outbox.drop([dead.seq]) == 1
    assert await durable.outbox.entries() == []
    await durable.close()


async def test_a_queued_save_does_not_claim_to_have_created_anything(app: Any, tmp_path: Path) -> None:
    durable = DurableKnowledgeStore(await open_store(app), Outbox(tmp_path / "outbox.db"))
    app.state.dify.outage = 503
    outcome = await durable.upsert("knowledge", "q.md", "Queued.", DocMetadata(), origin="t")
    assert outcome.created is None
    assert (outcome.text_applied, outcome.metadata_applied, outcome.indexing_status) == (
        False,
        False,
        "queued",
    )
    await durable.close()


async def economy_store(app: Any, **options: Any) -> DifyKnowledgeStore:
    store = DifyKnowledgeStore(
        f"{BASE}/v1",
        app.state.dify.add_api_key(),
        default_slots=("knowledge",),
        technique="economy",
        transport=httpx.ASGITransport(app=app),
        **options,
    )
    await store.create_slot("knowledge")
    return store


async def names(store: DifyKnowledgeStore, query: str, threshold: float | None = None) -> list[str]:
    page = await store.search(["knowledge"], query, KnowledgeFilter(), top_k=5, score_threshold=threshold)
    return [hit.document_name for hit in page.hits]


async def test_economy_keywords_ignore_case(app: Any) -> None:
    """Finding 4: economy keywords are case-sensitive in Dify ("cache" missed "Cache ...")."""
    store = await economy_store(app)
    await store.upsert("knowledge", "c.md", "Cache invalidation rules.", DocMetadata(), origin="t")
    assert await names(store, "cache") == ["c.md"]
    assert await names(store, "INVALIDATION") == ["c.md"]
    await store.close()


async def test_economy_finds_words_beyond_difys_ten_keywords(app: Any) -> None:
    """Finding 4: Dify keeps 10 keywords per passage, so most words of a passage were unsearchable."""
    store = await economy_store(app)
    words = " ".join(f"alpha{n} beta{n}" for n in range(12))
    await store.upsert("knowledge", "many.md", f"{words} zebrafish.", DocMetadata(), origin="t")
    assert await names(store, "zebrafish") == ["many.md"]
    await store.close()


async def test_a_score_threshold_holds_on_economy_datasets(app: Any) -> None:
    """Finding 4: Dify returns keyword hits with score 0 whatever the threshold; memctl scores
    them by the query words they hold (issue 34) and applies the threshold to that."""
    store = await economy_store(app)
    await store.upsert("knowledge", "r.md", "Retry with backoff.", DocMetadata(), origin="t")
    assert await names(store, "backoff") == ["r.md"]
    assert await names(store, "backoff", threshold=0.5) == ["r.md"]  # every query word: 0.89
    assert await names(store, "backoff jitter", threshold=0.7) == []  # half of them: 0.65
    assert await names(store, "backoff", threshold=0.95) == []
    await store.close()


async def test_enable_right_after_disable_waits_for_the_reindex(app: Any) -> None:
    """Finding 4: Dify refuses a status change while it re-indexes ("is being indexed")."""
    app.state.dify.indexing_delay = 0.3
    store = await economy_store(app, wait_indexed=True)
    outcome = await store.upsert("knowledge", "f.md", "Feature flags.", DocMetadata(), origin="t")
    assert await store.set_enabled("knowledge", outcome.document_id, False)
    assert await store.set_enabled("knowledge", outcome.document_id, True)
    assert await names(store, "feature") == ["f.md"], "keywords set again after Dify's re-index"
    await store.close()


async def test_onboarding_a_dify_without_embedding_model_makes_economy_datasets() -> None:
    """Finding 2: onboarding always asked for high_quality datasets and failed on a fresh Dify."""
    fresh = create_app(version="1.14.2")
    fresh.state.dify.embedding_models = []
    transport = httpx.ASGITransport(app=fresh)
    report = await onboard(
        BASE, email="admin@example.com", password="Passw0rd123", slots=("knowledge",), transport=transport
    )
    assert report.technique == "economy" and report.created_slots == ["knowledge"]
    again = await onboard(
        BASE,
        email="admin@example.com",
        password="Passw0rd123",
        api_key=report.api_key,
        slots=("knowledge",),
        transport=transport,
    )
    assert (again.key_created, again.created_slots, again.slots) == (False, [], report.slots)


async def test_a_failed_onboarding_revokes_the_key_it_created() -> None:
    """Finding 2: every failed run leaked a dataset API key (Dify allows ten)."""
    fresh = create_app(version="1.14.2")
    fresh.state.dify.embedding_models = []
    transport = httpx.ASGITransport(app=fresh)
    with pytest.raises(InvalidInput, match="create dataset"):
        await onboard(
            BASE,
            email="admin@example.com",
            password="Passw0rd123",
            slots=("knowledge",),
            technique="high_quality",
            transport=transport,
        )
    assert [k for k in fresh.state.dify.api_keys.values() if k.type == "dataset"] == []


async def test_slots_are_created_on_first_use(app: Any) -> None:
    """Finding 3: "unknown slot 'knowledge' (known: )" on a Dify where the slot did not exist yet."""
    store = DifyKnowledgeStore(
        f"{BASE}/v1",
        app.state.dify.add_api_key(),
        default_slots=("knowledge",),
        transport=httpx.ASGITransport(app=app),
    )
    assert [s.name for s in await store.list_slots()] == ["knowledge"]  # tools resolve slots by listing
    outcome = await store.upsert("knowledge", "a.md", "First save.", DocMetadata(), origin="t")
    assert outcome.created
    await store.close()


async def test_a_metadata_write_refused_while_another_runs_is_retried() -> None:
    """Concurrent saves of one name on the real server: "Another document metadata operation is running"."""
    answers = [
        httpx.Response(
            400,
            json={
                "code": "invalid_param",
                "message": "Another document metadata operation is running, please wait a moment.",
            },
        ),
        httpx.Response(200, json={"result": "success"}),
    ]
    client = DifyClient(f"{BASE}/v1", "dataset-key", transport=httpx.MockTransport(lambda _: answers.pop(0)))
    await client.set_metadata("ds", "doc", [{"id": "f", "name": "scope", "value": "p"}])
    assert answers == []
    await client.close()


async def test_keywords_are_set_before_a_one_shot_command_closes_the_store() -> None:
    """A command that saves and exits runs no upkeep: the keywords are set on close."""
    slow = create_app(version="1.14.2", indexing_delay=0.3)
    store = await economy_store(slow)
    outcome = await store.upsert("knowledge", "c.md", "Cache invalidation rules.", DocMetadata(), origin="t")
    await store.close()
    [segment] = slow.state.dify.document(outcome.document_id).segments
    assert "cache" in segment.keywords


async def test_keywords_are_set_again_once_the_reindex_after_enable_is_over() -> None:
    """Without waiting saves: Dify's re-index after enable (not shown in the document's
    status) replaces the keywords, so they are set once it is over, in upkeep."""
    slow = create_app(version="1.14.2", indexing_delay=0.3)
    store = await economy_store(slow)
    outcome = await store.upsert("knowledge", "f.md", "Feature flags.", DocMetadata(), origin="t")
    assert await store.set_enabled("knowledge", outcome.document_id, False)
    assert await store.set_enabled("knowledge", outcome.document_id, True)
    while not await store.upkeep():
        await anyio.sleep(0.05)
    assert await names(store, "feature") == ["f.md"]
    await store.close()
