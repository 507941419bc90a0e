"""The item operations return models whose dump is the object `--json` printed when they
were dicts: the same keys in the same order, a key one kind of item does not carry left out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory_bridge import EntryWrite, load_settings
from memory_bridge.core import (
    ItemStores,
    deleted_documents,
    deleted_entries,
    find_item,
    forget_item,
    history_of,
    history_target,
    list_lessons,
    rollback_to,
    search_items,
)
from memory_bridge.stores import DocMetadata, open_entry_store, open_knowledge_store

pytestmark = pytest.mark.anyio

HIT = ["kind", "ref", "where", "id", "name", "type", "tags", "snippet", "rank", "score"]
VERSION = ["version", "documentId", "change", "deleted", "at", "cause", "operation_id", "restored_from"]
VERSION += ["enabled", "metadata", "marks"]


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[ItemStores]:
    settings = load_settings(project=tmp_path, embedding_model="none")
    entries, knowledge = open_entry_store(settings), open_knowledge_store(settings)
    try:
        for id in ("a", "b"):
            write = EntryWrite(
                id=id,
                title=f"Deploy {id}",
                body="deploy blue green",
                type="decision",
                tags=("ops",),
                source="t",
                project="app",
            )
            await entries.set(write, ttl=None, if_version=None, operation_id=None)
        for name in ("deploy.md", "gone.md"):
            meta = DocMetadata(atom_type="project-lore", scope=settings.project_scope)
            await knowledge.upsert("knowledge", name, "Deploys go blue green.", meta, origin="test")
        meta = DocMetadata(atom_type="self-improvement-lesson", error_pattern="timeout")
        await knowledge.upsert("self_improvement", "lesson.md", "Retry later.", meta, origin="test")
        yield ItemStores(entries, knowledge, scope=settings.project_scope)
    finally:
        await knowledge.close()
        await entries.close()


async def test_search_hits_carry_a_slot_only_for_documents(stores: ItemStores) -> None:
    found = (await search_items(stores, "deploy blue green")).model_dump()
    assert list(found) == ["query", "count", "threshold", "hits", "degraded"]
    shapes = {hit["kind"]: list(hit) for hit in found["hits"]}
    assert shapes == {"entry": HIT, "document": [*HIT[:4], "slot", *HIT[4:]]}
    guessed = (await search_items(stores, "deploy", threshold=1.0, best_effort=True)).model_dump()
    assert list(guessed) == ["query", "count", "threshold", "hits", "best_effort", "degraded"]
    assert all(list(hit)[-1] == "best_effort" for hit in guessed["hits"])


async def test_forget_history_and_rollback_keep_each_kind_s_keys(stores: ItemStores) -> None:
    entry, document = await find_item(stores, "entry:a"), await find_item(stores, "knowledge/gone.md")
    assert (await forget_item(stores, entry)).model_dump() == {
        "ref": "entry:a",
        "action": "deleted",
        "revision": 2,
    }
    assert list((await forget_item(stores, document)).model_dump()) == ["ref", "action"]

    history = (await history_of(stores, await history_target(stores, "entry:a"), limit=5)).model_dump()
    assert list(history) == ["ref", "kind", "id", "latest_version", "deleted", "count", "versions"]
    assert list(history["versions"][0]) == [
        *["version", "change", "deleted", "at", "title", "type", "tags", "source", "project", "body", "diff"]
    ]
    history = (await history_of(stores, await history_target(stores, "gone.md"), limit=1)).model_dump()
    assert list(history) == [
        *["ref", "kind", "slot", "name", "latest_version", "deleted", "count", "versions", "next_before"]
    ]
    assert list(history["versions"][0]) == [*VERSION, "text", "diff"]

    assert [list(e.model_dump()) for e in await deleted_entries(stores)] == [["id", "title", "at", "version"]]
    assert [list(d.model_dump()) for d in await deleted_documents(stores.knowledge)] == [
        ["slot", "name", *VERSION]
    ]

    back = await rollback_to(stores, await history_target(stores, "entry:a"), 1, expected_version=2)
    assert list(back.model_dump()) == ["ref", "kind", "ok", "id", "version", "restored_from", "undeleted"]
    back = await rollback_to(
        stores, await history_target(stores, "knowledge/gone.md"), 1, expected_version=None
    )
    assert list(back.model_dump()) == [
        *["ref", "kind", "ok", "slot", "name", "documentId", "version", "restored_from", "undeleted"]
    ]


async def test_lessons_list_as_they_did(stores: ItemStores) -> None:
    [lesson] = await list_lessons(stores)
    assert list(lesson.model_dump()) == [
        *["ref", "name", "error_pattern", "project_module", "enabled", "updated_at", "recall_count"],
        "last_recalled",
    ]
    assert lesson.last_recalled is None and lesson.error_pattern == "timeout"
