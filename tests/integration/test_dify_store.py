"""The Dify knowledge store against the emulator: errors, versions, outbox, onboarding."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from memory_bridge import AccessDenied, InvalidInput, NotFound, StoreFailed, StoreUnavailable
from memory_bridge.stores import DocMetadata, KnowledgeFilter, calibration
from memory_bridge.stores.dify import (
    MAX_REJECTIONS,
    DifyClient,
    DifyKnowledgeStore,
    DurableKnowledgeStore,
    Outbox,
    onboard,
)

from ..emulators.dify.app import create_app

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

BASE = "http://dify.test"
SLOTS = ("knowledge", "self_improvement")


@pytest.fixture
def app() -> Any:
    return create_app(version="1.16.0")


async def store_for(app: Any, **options: Any) -> DifyKnowledgeStore:
    store = DifyKnowledgeStore(
        f"{BASE}/v1",
        app.state.dify.add_api_key(),
        default_slots=SLOTS,
        transport=httpx.ASGITransport(app=app),
        **options,
    )
    for slot in SLOTS:
        await store.create_slot(slot)
    return store


@pytest.fixture
async def store(app: Any) -> AsyncIterator[DifyKnowledgeStore]:
    opened = await store_for(app)
    yield opened
    await opened.close()


def mock_client(handler: Any) -> DifyClient:
    return DifyClient(f"{BASE}/v1", "dataset-key", transport=httpx.MockTransport(handler))


async def test_a_4xx_is_never_an_outage_and_5xx_is_retried() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return {
            "/v1/datasets/bad": httpx.Response(
                400, json={"code": "invalid_param", "message": "nope", "status": 400}
            ),
            "/v1/datasets/gone": httpx.Response(
                404, json={"code": "not_found", "message": "Dataset not found."}
            ),
            "/v1/datasets/locked": httpx.Response(401, json={"code": "unauthorized", "message": "invalid"}),
        }.get(request.url.path, httpx.Response(502, text="<html>Bad Gateway</html>"))

    client = mock_client(handler)
    with pytest.raises(InvalidInput, match="nope"):
        await client.get_dataset("bad")
    with pytest.raises(NotFound, match="Dataset not found"):
        await client.get_dataset("gone")
    with pytest.raises(AccessDenied):
        await client.get_dataset("locked")
    assert len(calls) == 3, "4xx answers are not retried"
    with pytest.raises(StoreUnavailable, match="502"):
        await client.get_dataset("down")
    assert len(calls) == 6, "a 502 is retried before it is reported"
    await client.close()


async def test_a_document_read_while_dify_swaps_its_segments_is_read_again() -> None:
    """Dify 1.14 answers 500 (ZeroDivisionError in average_segment_length) for a document
    whose re-index has just removed its segments; the next read succeeds."""
    answers = iter([500, 500, 200])

    def handler(request: httpx.Request) -> httpx.Response:
        status = next(answers)
        if status == 500:
            return httpx.Response(
                500, json={"message": "Internal Server Error", "code": "internal_server_error"}
            )
        return httpx.Response(200, json={"id": "doc-1", "indexing_status": "indexing"})

    client = mock_client(handler)
    assert (await client.get_document("ds", "doc-1"))["indexing_status"] == "indexing"
    await client.close()

    broken = mock_client(lambda request: httpx.Response(500, text="Internal Server Error"))
    with pytest.raises(StoreFailed, match="get document: Dify answered 500"):
        await broken.get_document("ds", "doc-1")
    await broken.close()


async def test_an_untested_version_is_named_in_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    old = create_app(version="1.13.3")
    client = DifyClient(f"{BASE}/v1", old.state.dify.add_api_key(), transport=httpx.ASGITransport(app=old))
    with caplog.at_level(logging.WARNING, logger="memctl.dify"):
        await client.ping()
    assert client.server_version == "1.13.3"
    assert "Dify 1.13.3 is outside the tested range 1.14 to 1.16" in caplog.text
    await client.close()


async def test_upsert_by_name_updates_in_place_and_keeps_foreign_metadata(
    store: DifyKnowledgeStore, app: Any
) -> None:
    first = await store.upsert(
        "knowledge", "a.md", "Alpha text about caching.", DocMetadata(scope="p"), origin="t"
    )
    dataset = next(d for d in app.state.dify.datasets.values() if d.name == "knowledge")
    field = await store.client.create_metadata_field(dataset.id, "owner_note")  # someone's own field
    await store.client.request(
        "POST",
        f"/datasets/{dataset.id}/documents/metadata",
        "test",
        json={
            "operation_data": [
                {
                    "document_id": first.document_id,
                    "partial_update": True,
                    "metadata_list": [{"id": field, "name": "owner_note", "value": "added in the Dify UI"}],
                }
            ],
        },
    )
    doc = dataset.documents[first.document_id]
    second = await store.upsert(
        "knowledge", "a.md", "Beta text about caching.", DocMetadata(scope="p"), origin="t"
    )
    assert second.document_id == first.document_id and not second.created
    assert len(dataset.documents) == 1, "never create-list-delete"
    assert doc.metadata["owner_note"] == "added in the Dify UI"
    assert doc.metadata["scope"] == "p"


async def test_scores_are_calibrated_relevance_and_thresholds_apply_to_them(
    store: DifyKnowledgeStore,
) -> None:
    await store.upsert("knowledge", "a.md", "Deploys run on Tuesdays.", DocMetadata(scope="p"), origin="t")
    flt = KnowledgeFilter(scope="p")
    page = await store.search(["knowledge"], "Tuesdays deploys", flt, top_k=5, score_threshold=None)
    hit = page.hits[0]
    assert hit.evidence is not None and hit.evidence.store_score is not None  # Dify's own score, kept
    assert hit.score == calibration().score("dify", hit.evidence) and 0 <= hit.score <= 1
    strict = await store.search(["knowledge"], "Tuesdays deploys", flt, top_k=5, score_threshold=0.9999)
    assert strict.hits == [] and strict.total == 0


async def test_economy_datasets_search_keywords_and_say_so(app: Any) -> None:
    store = await store_for(app, technique="economy")
    try:
        await store.upsert(
            "knowledge", "a.md", "Deploys run on Tuesdays.", DocMetadata(scope="p"), origin="t"
        )
        page = await store.search(
            ["knowledge"], "Tuesdays deploys", KnowledgeFilter(scope="p"), top_k=5, score_threshold=None
        )
        assert [h.document_name for h in page.hits] == ["a.md"]
        # Dify scores economy hits 0; memctl scores them by the query words they hold
        assert page.hits[0].score >= calibration().threshold
        assert page.degraded is not None and "economy" in page.degraded
    finally:
        await store.close()


async def test_writes_during_an_outage_wait_in_the_outbox_and_replay_in_order(
    store: DifyKnowledgeStore, app: Any, tmp_path: Path
) -> None:
    durable = DurableKnowledgeStore(store, Outbox(tmp_path / "outbox.db"))
    await durable.upsert(
        "knowledge", "before.md", "Written before the outage.", DocMetadata(scope="p"), origin="t"
    )
    app.state.dify.outage = 502
    queued = [
        await durable.upsert(
            "knowledge", f"during-{n}.md", f"Version {n} of the note.", DocMetadata(scope="p"), origin="t"
        )
        for n in range(3)
    ]
    await durable.upsert(
        "knowledge", "during-0.md", "Final version of note zero.", DocMetadata(scope="p"), origin="t"
    )
    assert all(q.indexing_status == "queued" for q in queued)
    assert (await durable.outbox.status())["pending"] == 4
    assert await durable.upkeep() == 0, "still down: nothing replayed, nothing lost"
    app.state.dify.outage = None
    assert await durable.upkeep() == 4
    assert (await durable.outbox.status())["pending"] == 0
    names = sorted(d.name for d in (await durable.list_documents("knowledge", offset=0, limit=50))[0])
    assert names == ["before.md", "during-0.md", "during-1.md", "during-2.md"]
    final = await durable.find("knowledge", "during-0.md")
    assert final is not None and "Final version" in final.text, "replayed in order: the last write wins"
    await durable.close()


async def test_upkeep_during_an_outage_keeps_waiting_keywords_for_later(app: Any, tmp_path: Path) -> None:
    """Seen on real Dify in CI: Dify stopped while an economy save still waited for its
    indexing, and the background upkeep raised instead of stopping at the outage."""
    app.state.dify.indexing_delay = 0.3
    durable = DurableKnowledgeStore(await store_for(app, technique="economy"), Outbox(tmp_path / "o.db"))
    try:
        saved = await durable.upsert(
            "knowledge", "a.md", "Deploys run on Tuesdays.", DocMetadata(), origin="t"
        )
        assert saved.indexing_status == "waiting"
        app.state.dify.outage = 502
        assert await durable.upkeep() == 0, "still down: nothing keyed, nothing lost"
        app.state.dify.outage = None
        keyed = 0
        with anyio.fail_after(30):
            while not keyed:
                await anyio.sleep(0.1)
                keyed = await durable.upkeep()
        assert keyed == 1
        page = await durable.search(
            ["knowledge"], "tuesdays", KnowledgeFilter(), top_k=5, score_threshold=None
        )
        assert [h.document_name for h in page.hits] == ["a.md"]
    finally:
        await durable.close()


async def test_a_write_dify_rejects_is_retried_a_few_times_then_dead_lettered(
    store: DifyKnowledgeStore, app: Any, tmp_path: Path
) -> None:
    durable = DurableKnowledgeStore(store, Outbox(tmp_path / "outbox.db"))
    app.state.dify.outage = 503
    await durable.upsert("nonexistent-slot", "x.md", "text", DocMetadata(), origin="t")
    app.state.dify.outage = None
    for _ in range(MAX_REJECTIONS - 1):
        await durable.upkeep()
        assert (await durable.outbox.status())["pending"] == 1, "a rejection is retried"
    await durable.upkeep()
    status = await durable.outbox.status()
    assert (status["pending"], status["dead_lettered"]) == (0, 1)
    assert "unknown slot" in status["last_error"]
    await durable.close()


async def test_headless_onboarding_is_idempotent(app: Any) -> None:
    transport = httpx.ASGITransport(app=app)
    report = await onboard(
        BASE, email="admin@example.com", password="Passw0rd123", slots=SLOTS, transport=transport
    )
    assert report.setup == "done now" and report.key_created and report.api_key.startswith("dataset-")
    assert set(report.created_slots) == set(SLOTS)
    again = await onboard(
        BASE,
        email="admin@example.com",
        password="Passw0rd123",
        api_key=report.api_key,
        slots=SLOTS,
        transport=transport,
    )
    assert again.setup == "already done" and not again.key_created and again.created_slots == []
    assert again.slots == report.slots
    store = DifyKnowledgeStore(f"{BASE}/v1", report.api_key, default_slots=SLOTS, transport=transport)
    try:
        fields = await store.client.metadata_fields(report.slots["knowledge"])
        assert {"scope", "tags", "atom_type", "error_pattern"} <= set(fields)
    finally:
        await store.close()


async def test_onboarding_with_a_wrong_password_is_refused(app: Any) -> None:
    transport = httpx.ASGITransport(app=app)
    await onboard(BASE, email="admin@example.com", password="Passw0rd123", transport=transport)
    with pytest.raises(AccessDenied, match="log in"):
        await onboard(BASE, email="admin@example.com", password="wrong-pass1", transport=transport)


async def test_listing_pages_through_every_document(
    store: DifyKnowledgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memory_bridge.stores.dify._client._PAGE", 2)
    for n in range(7):
        await store.upsert(
            "knowledge", f"doc-{n}.md", f"Document number {n}.", DocMetadata(scope="p"), origin="t"
        )
    docs, total = await store.list_documents("knowledge", offset=0, limit=100)
    assert total == 7 and sorted(d.name for d in docs) == [f"doc-{n}.md" for n in range(7)]


@pytest.mark.parametrize("refusal", ["not found", "internal error"])
async def test_a_save_whose_segments_another_save_replaces_keys_them_later(
    app: Any, monkeypatch: pytest.MonkeyPatch, refusal: str
) -> None:
    """Real Dify 1.14.2: setting an economy segment's keywords answers 404 when another save
    of the document has re-indexed it since the segments were listed, and sometimes 500
    (the segment deleted while the write was in flight). The save still succeeds, and
    upkeep keys the new segments."""
    store = await store_for(app, technique="economy")
    other = await store_for(app, technique="economy")
    first = DocMetadata(scope="p")
    await store.upsert("knowledge", "a.md", "Deploys run on Tuesdays.", first, origin="t")
    set_keywords = store.client.set_segment_keywords

    async def after_another_save(*args: Any) -> None:
        monkeypatch.setattr(store.client, "set_segment_keywords", set_keywords)
        await other.upsert("knowledge", "a.md", "Deploys moved to Thursdays.", first, origin="t")
        if refusal == "internal error":
            raise StoreFailed(
                "set keywords: Dify answered 500: Internal Server Error", operation="set keywords"
            )
        await set_keywords(*args)  # the emulator answers 404, as Dify does

    monkeypatch.setattr(store.client, "set_segment_keywords", after_another_save)
    try:
        outcome = await store.upsert("knowledge", "a.md", "Deploys run on Wednesdays.", first, origin="t")
        assert outcome.changed
        assert await store.upkeep() == 1
        page = await store.search(
            ["knowledge"], "thursdays", KnowledgeFilter(scope="p"), top_k=5, score_threshold=None
        )
        assert [h.document_name for h in page.hits] == ["a.md"]
    finally:
        await store.close()
        await other.close()


async def test_a_500_on_a_keyword_write_nothing_raced_is_a_failure(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await store_for(app, technique="economy", wait_indexed=True)

    async def broken(*args: Any) -> None:
        raise StoreFailed("set keywords: Dify answered 500: Internal Server Error", operation="set keywords")

    monkeypatch.setattr(store.client, "set_segment_keywords", broken)
    try:
        with pytest.raises(StoreFailed, match="set keywords"):
            await store.upsert("knowledge", "a.md", "Deploys run on Tuesdays.", DocMetadata(), origin="t")
    finally:
        monkeypatch.undo()
        await store.close()


async def test_a_save_returns_at_once_or_waits_until_indexed(app: Any) -> None:
    app.state.dify.indexing_delay = 0.4
    quick = await store_for(app)
    patient = await store_for(app, wait_indexed=True)
    try:
        first = await quick.upsert(
            "knowledge", "a.md", "Indexing takes a while here.", DocMetadata(), origin="t"
        )
        assert first.indexing_status == "waiting"
        second = await patient.upsert(
            "knowledge", "b.md", "This one waits for it.", DocMetadata(), origin="t"
        )
        assert second.indexing_status == "completed"
    finally:
        await quick.close()
        await patient.close()


@pytest.mark.parametrize("version", ["1.8.0", "1.9.5", "1.16.0"])
async def test_onboarding_logs_in_the_way_each_version_wants(version: str) -> None:
    old = create_app(version=version)
    report = await onboard(
        BASE,
        email="admin@example.com",
        password="Passw0rd123",
        slots=("knowledge",),
        transport=httpx.ASGITransport(app=old),
    )
    assert report.key_created and report.version == version


async def test_a_bridge_started_during_an_outage_still_queues_saves(
    store: DifyKnowledgeStore, app: Any, tmp_path: Path
) -> None:
    first = DurableKnowledgeStore(store, Outbox(tmp_path / "outbox.db"))
    assert {s.name for s in await first.list_slots()} == set(SLOTS)
    await first.close()
    app.state.dify.outage = 502
    fresh = DifyKnowledgeStore(
        f"{BASE}/v1",
        app.state.dify.add_api_key(),
        default_slots=SLOTS,
        transport=httpx.ASGITransport(app=app),
    )
    restarted = DurableKnowledgeStore(fresh, Outbox(tmp_path / "outbox.db"))
    assert {s.name for s in await restarted.list_slots()} == set(SLOTS), "the last known slots, from disk"
    queued = await restarted.upsert(
        "knowledge",
        "late.md",
        "Saved by a bridge started during the outage.",
        DocMetadata(scope="p"),
        origin="t",
    )
    assert queued.indexing_status == "queued"
    app.state.dify.outage = None
    assert await restarted.upkeep() == 1
    assert await restarted.find("knowledge", "late.md") is not None
    await restarted.close()


async def test_recall_stamps_skip_a_dataset_without_the_fields(app: Any) -> None:
    """A slot bound to a dataset memctl did not set up (no recall fields) is not stamped,
    and nothing is created in it behind the user's back."""
    key = app.state.dify.add_api_key()
    store = await store_for(app)
    saved = await store.upsert("knowledge", "a.md", "Retry webhooks.", DocMetadata(scope="app"), origin="t")
    dataset = (await store.client.find_dataset("knowledge")) or {}
    fields = await store.client.metadata_fields(dataset["id"])
    await store.client.request(
        "DELETE", f"/datasets/{dataset['id']}/metadata/{fields['recall_count']}", "delete metadata field"
    )
    await store.close()
    fresh = DifyKnowledgeStore(  # a bridge started since: it finds the slot by name
        f"{BASE}/v1", key, default_slots=SLOTS, transport=httpx.ASGITransport(app=app)
    )
    assert await fresh.stamp_recalls("knowledge", [saved.document_id], now=1.8e9, window=0) == 0
    doc = await fresh.get("knowledge", saved.document_id)
    assert doc is not None and (doc.recall_count, doc.last_recalled_at) == (0, None)
    assert "recall_count" not in await fresh.client.metadata_fields(dataset["id"])
    await fresh.close()


async def test_an_update_overtaken_by_another_writer_waits_and_is_sent_again(
    store: DifyKnowledgeStore, app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen on real Dify in CI under load: two upserts of one name both waited for the
    document to be available, one re-indexed it first, and Dify refused the other's update
    ("Document is not available"); the write failed instead of waiting again."""
    await store.upsert("knowledge", "a.md", "first", DocMetadata(), origin="t")
    app.state.dify.indexing_delay = 0.3
    send = store.client.update_by_text
    overtaken = []

    async def overtaken_once(dataset_id: str, document_id: str, name: str, text: str) -> dict[str, Any]:
        if not overtaken:  # the other writer's update lands between our wait and our request
            overtaken.append(await send(dataset_id, document_id, name, "the other writer's"))
        return await send(dataset_id, document_id, name, text)

    monkeypatch.setattr(store.client, "update_by_text", overtaken_once)
    saved = await store.upsert("knowledge", "a.md", "second", DocMetadata(), origin="t")
    assert overtaken and saved.changed and not saved.created
    with anyio.fail_after(10):  # Dify serves the last indexed text until the new one is
        while not (document := await store.get("knowledge", saved.document_id)) or not document.settled:
            await anyio.sleep(0.1)
    assert document.text == "second"
