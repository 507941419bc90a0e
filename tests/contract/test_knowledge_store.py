"""The knowledge-store contract: slots, in-place upserts, exact filters, hybrid retrieval.

Written against `KnowledgeStore` only, so the Dify store reuses it unchanged.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path

import anyio
import httpx
import pytest

from memory_bridge import InvalidInput
from memory_bridge.search import LazyEmbedder, lazy_minilm
from memory_bridge.stores import DocMetadata, KnowledgeFilter, KnowledgeStore
from memory_bridge.stores.dify import DifyKnowledgeStore
from memory_bridge.stores.sqlite import SqliteKnowledgeStore

from ..bridges import MODEL_CACHE
from ..emulators.dify.app import create_app
from ..real_dify import RealDify, delete_datasets, unique_prefix

pytestmark = pytest.mark.anyio

SLOTS = ("knowledge", "self_improvement", "plans")
KnowledgeFactory = Callable[[], Awaitable[KnowledgeStore]]


@pytest.fixture(scope="session")
def minilm() -> LazyEmbedder:
    """One model for the whole run (loading it takes about a second)."""
    return lazy_minilm(2, int8_cache=MODEL_CACHE)


async def dify_store(embedder: LazyEmbedder, version: str) -> KnowledgeStore:
    """The Dify store against a fresh emulator (in process, over httpx's ASGI transport)."""
    app = create_app(embedder=embedder, version=version)
    key = app.state.dify.add_api_key()
    store = DifyKnowledgeStore(
        "http://dify.test/v1", key, default_slots=SLOTS, transport=httpx.ASGITransport(app=app)
    )
    for slot in SLOTS:
        await store.create_slot(slot)
    return store


async def real_dify_store(target: RealDify, prefix: str) -> KnowledgeStore:
    """The Dify store against the real server: economy datasets named with `prefix`; saves
    wait until Dify has indexed them (it indexes asynchronously)."""
    store = DifyKnowledgeStore(
        f"{target.url}/v1",
        target.api_key,
        default_slots=SLOTS,
        dataset_prefix=prefix,
        technique="economy",
        wait_indexed=True,
    )
    for slot in SLOTS:
        await store.create_slot(slot)
    return store


@pytest.fixture(
    params=[
        "sqlite+minilm",
        "sqlite-keywords",
        "dify-1.16+minilm",
        "dify-1.14+minilm",
        pytest.param("real-dify-1.14.2", marks=pytest.mark.real_dify),
    ]
)
async def make_knowledge(
    request: pytest.FixtureRequest, tmp_path: Path, minilm: LazyEmbedder
) -> AsyncIterator[KnowledgeFactory]:
    opened: list[KnowledgeStore] = []
    prefix = unique_prefix()
    target: RealDify | None = None
    if request.param.startswith("real-dify"):
        target = request.getfixturevalue("real_dify")

    async def factory() -> KnowledgeStore:
        store: KnowledgeStore
        if target is not None:
            store = await real_dify_store(target, f"{prefix}{len(opened)}-")
        elif request.param.startswith("dify-"):
            store = await dify_store(minilm, request.param.removeprefix("dify-").split("+")[0] + ".0")
        else:
            embedder = minilm if request.param == "sqlite+minilm" else None
            store = SqliteKnowledgeStore(
                tmp_path / f"k{len(opened)}.db", embedder=embedder, default_slots=SLOTS
            )
        opened.append(store)
        return store

    yield factory
    for store in opened:
        await store.close()
    if target is not None:
        delete_datasets(target, prefix)


@pytest.fixture
async def kstore(make_knowledge: KnowledgeFactory) -> KnowledgeStore:
    return await make_knowledge()


@pytest.fixture
def dense(request: pytest.FixtureRequest) -> Iterator[bool]:
    yield "minilm" in request.node.callspec.params["make_knowledge"]


def meta(**fields: object) -> DocMetadata:
    fields.setdefault("scope", "app")
    fields["tags"] = tuple(fields.get("tags", ()))  # type: ignore[arg-type]
    return DocMetadata(**fields)  # type: ignore[arg-type]


async def find_names(
    store: KnowledgeStore, query: str, flt: KnowledgeFilter | None = None, **options: object
) -> list[str]:
    page = await store.search(
        list(SLOTS), query, flt or KnowledgeFilter(), top_k=10, score_threshold=None, **options
    )  # type: ignore[arg-type]
    return [hit.document_name for hit in page.hits]


async def test_default_slots_exist_and_create_is_idempotent(kstore: KnowledgeStore) -> None:
    assert {s.name for s in await kstore.list_slots()} == set(SLOTS)
    created, new = await kstore.create_slot("investigations", "open questions")
    again, new_again = await kstore.create_slot("investigations", "ignored")
    assert (new, new_again) == (True, False)
    assert again.id == created.id and again.description == "open questions"


async def test_upsert_updates_in_place_by_name(kstore: KnowledgeStore) -> None:
    first = await kstore.upsert("knowledge", "deploy.md", "Deploy with blue-green.", meta(), origin="test")
    second = await kstore.upsert("knowledge", "deploy.md", "Deploy with canaries now.", meta(), origin="test")
    same = await kstore.upsert("knowledge", "deploy.md", "Deploy with canaries now.", meta(), origin="test")
    assert first.created and not second.created
    assert first.document_id == second.document_id == same.document_id
    assert (second.changed, same.changed) == (True, False)
    doc = await kstore.find("knowledge", "deploy.md")
    assert doc is not None and doc.text == "Deploy with canaries now."
    docs, total = await kstore.list_documents("knowledge", offset=0, limit=10)
    assert total == 1 and docs[0].id == first.document_id


async def test_concurrent_upserts_of_one_name_leave_one_document(kstore: KnowledgeStore) -> None:
    async with anyio.create_task_group() as tasks:
        for n in range(8):
            tasks.start_soon(
                partial(kstore.upsert, origin="test"), "knowledge", "race.md", f"version {n}", meta()
            )
    _, total = await kstore.list_documents("knowledge", offset=0, limit=10)
    assert total == 1


async def test_an_unknown_slot_is_an_error_and_nothing_changes(kstore: KnowledgeStore) -> None:
    with pytest.raises(InvalidInput, match="unknown slot 'knowlege'"):
        await kstore.upsert("knowlege", "x.md", "text", meta(), origin="test")
    assert await kstore.count() == 0
    with pytest.raises(InvalidInput, match="dataset"):
        await kstore.search(["nope"], "x", KnowledgeFilter(), top_k=5, score_threshold=None)


async def test_tags_match_exactly_and_all_of_them(kstore: KnowledgeStore) -> None:
    await kstore.upsert(
        "knowledge", "a.md", "Rate limits for the public API.", meta(tags=["api", "limits"]), origin="t"
    )
    await kstore.upsert(
        "knowledge", "b.md", "Rate limits for the rapid API.", meta(tags=["rapid-api"]), origin="t"
    )
    assert await find_names(kstore, "rate limits", KnowledgeFilter(tags=("api",))) == ["a.md"]
    assert await find_names(kstore, "rate limits", KnowledgeFilter(tags=("api", "limits"))) == ["a.md"]
    assert await find_names(kstore, "rate limits", KnowledgeFilter(tags=("api", "rapid-api"))) == []


async def test_metadata_filters_apply_before_ranking(kstore: KnowledgeStore) -> None:
    await kstore.upsert(
        "knowledge", "mine.md", "Cache invalidation rules.", meta(atom_type="decision"), origin="t"
    )
    await kstore.upsert(
        "knowledge", "theirs.md", "Cache invalidation rules.", meta(scope="other"), origin="t"
    )
    await kstore.upsert(
        "knowledge", "module.md", "Cache invalidation rules.", meta(project_module="auth"), origin="t"
    )
    assert await find_names(kstore, "cache invalidation", KnowledgeFilter(scope="other")) == ["theirs.md"]
    assert await find_names(kstore, "cache invalidation", KnowledgeFilter(atom_type="decision")) == [
        "mine.md"
    ]
    assert await find_names(kstore, "cache", KnowledgeFilter(scope="app", project_module="auth")) == [
        "module.md"
    ]


async def test_disabled_documents_are_not_found_until_enabled(kstore: KnowledgeStore) -> None:
    outcome = await kstore.upsert(
        "knowledge", "flag.md", "Feature flags live in LaunchDarkly.", meta(), origin="t"
    )
    assert await kstore.set_enabled("knowledge", outcome.document_id, False)
    assert await find_names(kstore, "feature flags") == []
    assert await kstore.set_enabled("knowledge", outcome.document_id, True)
    assert await find_names(kstore, "feature flags") == ["flag.md"]
    assert not await kstore.set_enabled("knowledge", "no-such-id", False)


async def test_delete_removes_the_document_from_search(kstore: KnowledgeStore) -> None:
    outcome = await kstore.upsert(
        "knowledge", "gone.md", "Temporary workaround for the proxy.", meta(), origin="t"
    )
    assert await kstore.delete("knowledge", outcome.document_id)
    assert not await kstore.delete("knowledge", outcome.document_id)
    assert await find_names(kstore, "proxy workaround") == []
    assert await kstore.get("knowledge", outcome.document_id) is None


async def test_the_best_passage_of_a_long_document_is_returned(kstore: KnowledgeStore) -> None:
    filler = "\n\n".join(
        f"Paragraph {n} talks about unrelated logging conventions and formats." for n in range(60)
    )
    text = f"{filler}\n\nThe staging database password rotates every Tuesday at noon.\n\n{filler}"
    await kstore.upsert("knowledge", "long.md", text, meta(), origin="t")
    page = await kstore.search(
        list(SLOTS),
        "when does the staging database password rotate",
        KnowledgeFilter(),
        top_k=3,
        score_threshold=None,
    )
    assert page.hits[0].document_name == "long.md"
    assert "rotates every Tuesday" in page.hits[0].content
    assert page.hits[0].position > 0


async def test_top_k_threshold_and_total(kstore: KnowledgeStore) -> None:
    for n in range(6):
        await kstore.upsert(
            "knowledge",
            f"retry-{n}.md",
            f"Retry policy number {n} uses exponential backoff.",
            meta(),
            origin="t",
        )
    page = await kstore.search(list(SLOTS), "retry backoff", KnowledgeFilter(), top_k=2, score_threshold=None)
    assert len(page.hits) == 2 and page.total == 6
    assert page.hits[0].score >= page.hits[1].score
    strict = await kstore.search(
        list(SLOTS), "retry backoff", KnowledgeFilter(), top_k=10, score_threshold=0.99
    )
    assert all(hit.score >= 0.99 for hit in strict.hits)
    assert strict.total == len(strict.hits)


async def test_paraphrases_are_found_only_with_a_model(kstore: KnowledgeStore, dense: bool) -> None:
    await kstore.upsert("knowledge", "css.md", "The CSS grid layout breaks on Safari 16.", meta(), origin="t")
    await kstore.upsert(
        "knowledge", "tokens.md", "Renew the bearer credential every 30 days.", meta(), origin="t"
    )
    page = await kstore.search(
        list(SLOTS), "how often must API keys rotate", KnowledgeFilter(), top_k=5, score_threshold=None
    )
    if dense:
        assert page.degraded is None
        assert page.hits[0].document_name == "tokens.md"
    else:
        assert page.degraded is not None and "keyword search only" in page.degraded
        assert page.hits == []  # no word in common


async def test_keyword_and_substring_modes(kstore: KnowledgeStore) -> None:
    await kstore.upsert("knowledge", "k.md", "Use pg_dump with --no-owner for restores.", meta(), origin="t")
    assert await find_names(kstore, "pg_dump restores", mode="keyword") == ["k.md"]
    assert await find_names(kstore, "--no-owner", mode="substring") == ["k.md"]


async def test_metadata_round_trips(kstore: KnowledgeStore) -> None:
    given = meta(
        atom_type="self-improvement-lesson",
        tags=["db", "tests"],
        project_module="db",
        language="python",
        task_type="debugging",
        error_pattern="missing-migration",
    )
    outcome = await kstore.upsert("self_improvement", "lesson.md", "Run migrations first.", given, origin="t")
    doc = await kstore.get("self_improvement", outcome.document_id)
    assert doc is not None and doc.metadata == given and doc.slot == "self_improvement"


async def test_recall_stamps_count_once_per_window_and_survive_an_update(kstore: KnowledgeStore) -> None:
    first = await kstore.upsert("knowledge", "a.md", "Retry webhooks five times.", meta(), origin="t")
    second = await kstore.upsert("knowledge", "b.md", "Rotate keys monthly.", meta(), origin="t")
    now = float(int(time.time()))
    ids = [first.document_id, second.document_id, "no-such-document"]
    assert await kstore.stamp_recalls("knowledge", ids, now=now, window=3600) == 2
    doc = await kstore.get("knowledge", first.document_id)
    assert doc is not None and doc.recall_count == 1
    assert doc.last_recalled_at == pytest.approx(now, abs=0.01)
    assert await kstore.stamp_recalls("knowledge", ids[:1], now=now + 60, window=3600) == 0, "debounced"
    assert await kstore.stamp_recalls("knowledge", ids[:1], now=now + 3601, window=3600) == 1
    await kstore.upsert("knowledge", "a.md", "Retry webhooks six times.", meta(), origin="t")
    doc = await kstore.find("knowledge", "a.md")
    assert doc is not None and doc.recall_count == 2 and doc.text == "Retry webhooks six times."
    assert doc.last_recalled_at == pytest.approx(now + 3601, abs=0.01)
    never = await kstore.find("knowledge", "b.md")
    assert never is not None and never.recall_count == 1
    listed, _ = await kstore.list_documents("knowledge", offset=0, limit=10)
    assert sorted(d.recall_count for d in listed) == [1, 2]
    assert await kstore.stamp_recalls("knowledge", [], now=now, window=0) == 0


async def test_recall_stamps_are_set_as_given_for_a_restore(kstore: KnowledgeStore) -> None:
    saved = await kstore.upsert("knowledge", "a.md", "Retry webhooks five times.", meta(), origin="t")
    await kstore.set_marks("knowledge", saved.document_id, {"stale": "true"})
    when = float(int(time.time())) - 86_400
    assert await kstore.set_recalls("knowledge", saved.document_id, last_recalled_at=when, recall_count=7)
    doc = await kstore.get("knowledge", saved.document_id)
    assert doc is not None and doc.recall_count == 7 and doc.last_recalled_at == pytest.approx(when, abs=0.01)
    assert doc.marks == {"stale": "true"} and doc.text == "Retry webhooks five times."
    assert await kstore.set_recalls("knowledge", saved.document_id, last_recalled_at=None, recall_count=0)
    doc = await kstore.get("knowledge", saved.document_id)
    assert doc is not None and (doc.recall_count, doc.last_recalled_at) == (0, None)
    missing = await kstore.set_recalls("knowledge", "no-such-document", last_recalled_at=when, recall_count=1)
    assert not missing


async def test_maintenance_marks_merge_unset_and_survive_an_update(kstore: KnowledgeStore) -> None:
    saved = await kstore.upsert("knowledge", "a.md", "Retry webhooks five times.", meta(), origin="t")
    doc_id = saved.document_id
    marks = {"superseded_by": "other", "consolidated_at": "2026-12-01T00:00:00Z"}
    assert await kstore.set_marks("knowledge", doc_id, marks)
    assert await kstore.set_marks("knowledge", doc_id, {"stale": "true", "consolidated_at": ""})
    await kstore.upsert("knowledge", "a.md", "Retry webhooks six times.", meta(), origin="t")
    doc = await kstore.get("knowledge", doc_id)
    assert doc is not None and doc.marks == {"superseded_by": "other", "stale": "true"}
    assert doc.text == "Retry webhooks six times." and doc.metadata == meta()
    [listed], _ = await kstore.list_documents("knowledge", offset=0, limit=10)
    assert listed.marks == doc.marks
    assert not await kstore.set_marks("knowledge", "no-such-document", {"stale": "true"})
