"""The entry-store contract: memory-mcp 1.2 semantics every backend must keep.

Written against `EntryStore` and the core operations only, never a backend's tables
or keys, so a new store passes these cases unchanged.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from memory_bridge import EntryStore, EntryWrite, NotFound, StoreError
from memory_bridge import core as ops
from memory_bridge.stores import EntryRecord

from .conftest import StoreFactory

pytestmark = pytest.mark.anyio


def entry(id: str = "auth-decision", **overrides: Any) -> EntryWrite:
    fields: dict[str, Any] = {
        "id": id,
        "title": "Use short-lived tokens",
        "body": "Access tokens live 15 minutes; refresh tokens rotate on use.",
        "type": "decision",
        "tags": ("auth", "security"),
        "source": "test",
        "project": "app",
    }
    fields.update(overrides)
    fields["tags"] = tuple(fields["tags"])
    return EntryWrite(**fields)


async def put(store: EntryStore, write: EntryWrite | None = None, **options: Any) -> dict[str, Any]:
    options.setdefault("ttl", None)
    options.setdefault("if_version", None)
    options.setdefault("operation_id", None)
    return (await ops.set_entry(store, write or entry(), max_entries_warn=1000, **options)).model_dump()


async def search(store: EntryStore, **filters: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "tags": None,
        "type": None,
        "project": None,
        "query": None,
        "limit": 20,
        "cursor": None,
    }
    args.update(filters)
    return (await ops.search_entries(store, **args)).model_dump()


async def snapshot_of(store: EntryStore, id: str) -> dict[str, Any]:
    """Everything observable about one entry without counting a hit."""
    listed = (
        await ops.list_entries(store, type=None, project=None, sort="updated", limit=500, cursor=None)
    ).model_dump()
    current = [e for e in listed["results"] if e["id"] == id]
    history = (await ops.entry_history(store, id, 100)).model_dump()
    return {"entry": current, "history": history, "count": await store.count()}


# -- create, read, revisions -----------------------------------------------------------------


async def test_set_creates_then_modifies_with_revisions_from_one(store: EntryStore) -> None:
    created = await put(store)
    assert created == {
        "ok": True,
        "id": "auth-decision",
        "operation": "created",
        "revision": 1,
        "warning": None,
    }
    modified = await put(store, entry(body="Tokens live 10 minutes."))
    assert modified["operation"] == "modified"
    assert modified["revision"] == 2


async def test_get_returns_the_entry_counts_hits_and_never_moves_the_revision(store: EntryStore) -> None:
    await put(store)
    first = (await ops.get_entry(store, "auth-decision")).model_dump()
    second = (await ops.get_entry(store, "auth-decision")).model_dump()
    assert list(first) == [
        "id",
        "title",
        "body",
        "type",
        "tags",
        "source",
        "project",
        "created",
        "updated",
        "hits",
        "ttl",
        "revision",
    ]
    assert first["tags"] == ["auth", "security"]
    assert (first["hits"], second["hits"]) == (1, 2)
    assert first["revision"] == second["revision"] == 1
    assert first["ttl"] == ""


async def test_timestamps_are_full_instants_and_created_survives_updates(store: EntryStore) -> None:
    await put(store)
    before = (await ops.get_entry(store, "auth-decision")).model_dump()
    await anyio.sleep(0.01)
    await put(store, entry(body="changed"))
    after = (await ops.get_entry(store, "auth-decision")).model_dump()
    assert "T" in before["created"] and before["created"].endswith("Z")
    assert after["created"] == before["created"]
    assert after["updated"] > before["updated"]
    assert after["hits"] == 2, "an update keeps the hit count"


async def test_get_of_unknown_id_is_not_found(store: EntryStore) -> None:
    with pytest.raises(NotFound, match="Not found: nope"):
        await ops.get_entry(store, "nope")


# -- compare-and-set and operation ids ----------------------------------------------------------


async def test_if_version_match_writes_and_mismatch_changes_nothing(store: EntryStore) -> None:
    await put(store)
    await ops.get_entry(store, "auth-decision")
    assert (await put(store, entry(body="v2"), if_version=1))["revision"] == 2
    before = await snapshot_of(store, "auth-decision")
    conflict = await put(store, entry(body="stale", tags=("other",)), if_version=1, ttl=60)
    assert conflict == {
        "ok": False,
        "error": "conflict",
        "id": "auth-decision",
        "current_revision": 2,
        "expected_version": 1,
    }
    assert await snapshot_of(store, "auth-decision") == before
    assert (await search(store, tags=["other"]))["count"] == 0


async def test_if_version_zero_creates_only_when_absent(store: EntryStore) -> None:
    assert (await put(store, if_version=0))["operation"] == "created"
    again = await put(store, if_version=0)
    assert again["error"] == "conflict"
    assert again["current_revision"] == 1


async def test_parallel_conditional_writers_have_exactly_one_winner(store: EntryStore) -> None:
    await put(store)
    results: list[dict[str, Any]] = []

    async def writer(n: int) -> None:
        results.append(await put(store, entry(body=f"writer {n}"), if_version=1))

    async with anyio.create_task_group() as tasks:
        for n in range(8):
            tasks.start_soon(writer, n)
    winners = [r for r in results if r["ok"]]
    assert len(winners) == 1
    assert winners[0]["revision"] == 2
    assert all(r["current_revision"] == 2 for r in results if not r["ok"])


async def test_operation_id_replays_the_first_outcome_and_writes_nothing(store: EntryStore) -> None:
    first = await put(store, operation_id="op-1")
    before = await snapshot_of(store, "auth-decision")
    replay = await put(store, entry(body="different body"), operation_id="op-1")
    assert replay == {
        "ok": True,
        "id": "auth-decision",
        "operation": "created",
        "revision": first["revision"],
        "replayed": True,
        "warning": None,
    }
    assert await snapshot_of(store, "auth-decision") == before


async def test_replay_beats_a_stale_if_version(store: EntryStore) -> None:
    await put(store)
    applied = await put(store, entry(body="v2"), if_version=1, operation_id="retry-me")
    retried = await put(store, entry(body="v2"), if_version=1, operation_id="retry-me")
    assert retried["replayed"] is True
    assert retried["revision"] == applied["revision"] == 2


async def test_operation_id_reused_on_another_id_is_a_mismatch(store: EntryStore) -> None:
    await put(store, operation_id="op-x")
    mismatch = await put(store, entry("another-id"), operation_id="op-x")
    assert mismatch == {
        "ok": False,
        "error": "operation_id_mismatch",
        "id": "another-id",
        "recorded_id": "auth-decision",
    }
    with pytest.raises(NotFound):
        await ops.get_entry(store, "another-id")


async def test_operation_ids_are_forgotten_after_their_ttl(make_store: StoreFactory) -> None:
    store = await make_store(operation_ttl=1)
    await put(store, operation_id="short")
    await anyio.sleep(1.1)
    again = await put(store, entry(body="new"), operation_id="short")
    assert again.get("replayed") is None
    assert again["revision"] == 2


# -- delete, history, rollback -----------------------------------------------------------------


async def test_delete_tombstones_and_the_revision_survives(store: EntryStore) -> None:
    await put(store)
    deleted = (await ops.delete_entry(store, "auth-decision")).model_dump()
    assert deleted == {"ok": True, "id": "auth-decision", "operation": "deleted", "revision": 2}
    with pytest.raises(NotFound):
        await ops.get_entry(store, "auth-decision")
    history = (await ops.entry_history(store, "auth-decision", 10)).model_dump()
    assert history["versions"][0]["operation"] == "deleted"
    assert history["versions"][0]["body"] == entry().body
    stale = await put(store, if_version=0)
    assert stale["error"] == "conflict" and stale["current_revision"] == 2
    recreated = await put(store, if_version=2)
    assert (recreated["operation"], recreated["revision"]) == ("created", 3)


async def test_delete_of_unknown_id_is_not_found_and_moves_nothing(store: EntryStore) -> None:
    with pytest.raises(NotFound, match="Not found: ghost"):
        await ops.delete_entry(store, "ghost")
    assert (await put(store, entry("ghost"), if_version=0))["revision"] == 1


async def test_history_is_newest_first_and_capped(make_store: StoreFactory) -> None:
    store = await make_store(max_versions=3)
    for n in range(5):
        await put(store, entry(body=f"version {n}"))
    history = (await ops.entry_history(store, "auth-decision", 10)).model_dump()
    assert history["count"] == 3
    assert [v["index"] for v in history["versions"]] == [0, 1, 2]
    assert [v["body"] for v in history["versions"]] == ["version 4", "version 3", "version 2"]
    assert [v["rev"] for v in history["versions"]] == [5, 4, 3]
    assert list(history["versions"][0]) == [
        "index",
        "title",
        "body",
        "type",
        "tags",
        "source",
        "project",
        "updated",
        "operation",
        "rev",
    ]


async def test_history_of_unknown_id_is_empty(store: EntryStore) -> None:
    assert (await ops.entry_history(store, "nobody", 10)).model_dump() == {
        "id": "nobody",
        "count": 0,
        "versions": [],
    }


async def test_rollback_restores_a_version_as_a_new_revision(store: EntryStore) -> None:
    await put(store, entry(body="original", tags=("a",)))
    await put(store, entry(body="edited", tags=("b",)))
    rolled = (await ops.rollback_entry(store, "auth-decision", 1)).model_dump()
    assert rolled["operation"] == "rollback_to_1"
    assert rolled["revision"] == 3
    assert rolled["restored_from"].endswith("Z")
    current = (await ops.get_entry(store, "auth-decision")).model_dump()
    assert (current["body"], current["tags"]) == ("original", ["a"])
    assert (await search(store, tags=["b"]))["count"] == 0, "rollback moves the tag index too"


async def test_rollback_resurrects_a_deleted_entry(store: EntryStore) -> None:
    await put(store)
    await ops.delete_entry(store, "auth-decision")
    rolled = (await ops.rollback_entry(store, "auth-decision", 0)).model_dump()
    assert rolled["revision"] == 3
    back = (await ops.get_entry(store, "auth-decision")).model_dump()
    assert back["body"] == entry().body
    assert back["hits"] == 1


async def test_rollback_to_a_missing_version_is_not_found(store: EntryStore) -> None:
    await put(store)
    with pytest.raises(NotFound, match="Version 5 not found for auth-decision"):
        await ops.rollback_entry(store, "auth-decision", 5)
    assert (await ops.get_entry(store, "auth-decision")).revision == 1


# -- TTL --------------------------------------------------------------------------------------


async def test_ttl_expires_entry_history_and_revision_together(store: EntryStore) -> None:
    await put(store, ttl=1)
    assert (await ops.get_entry(store, "auth-decision")).ttl == "1"
    await anyio.sleep(1.2)
    with pytest.raises(NotFound):
        await ops.get_entry(store, "auth-decision")
    assert (await ops.entry_history(store, "auth-decision", 10)).count == 0
    assert (await search(store, tags=["auth"]))["total"] == 0
    again = await put(store, if_version=0)
    assert (again["operation"], again["revision"]) == ("created", 1), "an expired id is a clean slate"


async def test_a_write_without_ttl_makes_an_entry_permanent(store: EntryStore) -> None:
    await put(store, ttl=1)
    await put(store, entry(body="keep me"))
    await anyio.sleep(1.2)
    assert (await ops.get_entry(store, "auth-decision")).ttl == ""


async def test_sweep_drops_expired_entries_from_every_index(store: EntryStore) -> None:
    await put(store, ttl=1)
    await put(store, entry("stays"))
    assert await store.count() == 2
    await anyio.sleep(1.2)
    assert await store.sweep() == 1
    assert await store.count() == 1
    assert [e["id"] for e in (await search(store, tags=["auth"]))["results"]] == ["stays"]


# -- indexes, search, list ----------------------------------------------------------------------


async def test_tag_type_and_project_indexes_follow_updates(store: EntryStore) -> None:
    await put(store, entry(tags=("old",), type="pattern", project="one"))
    await put(store, entry(tags=("new",), type="decision", project="two"))
    assert (await search(store, tags=["old"]))["count"] == 0
    assert (await search(store, type="pattern"))["count"] == 0
    assert (await search(store, project="one"))["count"] == 0
    hits = await search(store, tags=["new"], type="decision", project="two")
    assert [e["id"] for e in hits["results"]] == ["auth-decision"]


async def test_tags_are_and_matched_and_exact(store: EntryStore) -> None:
    await put(store, entry("both", tags=("api", "auth")))
    await put(store, entry("one", tags=("api",)))
    await put(store, entry("lookalike", tags=("rapid-api",)))
    assert [e["id"] for e in (await search(store, tags=["api", "auth"]))["results"]] == ["both"]
    assert sorted(e["id"] for e in (await search(store, tags=["api"]))["results"]) == ["both", "one"]


async def test_empty_project_selects_cross_project_entries(store: EntryStore) -> None:
    await put(store, entry("global", project=""))
    await put(store, entry("local", project="app"))
    assert [e["id"] for e in (await search(store, project=""))["results"]] == ["global"]
    assert (await search(store))["total"] == 2


async def test_query_ranks_title_over_body_and_matches_tags_and_id(store: EntryStore) -> None:
    await put(store, entry("in-body", title="Deploy notes", body="remember the valkey cluster slots"))
    await put(
        store, entry("in-title", title="Valkey cluster layout", body="hash tags keep scripts in one slot")
    )
    await put(store, entry("by-tag", title="Cache", body="eviction policy", tags=("valkey",)))
    await put(store, entry("valkey-by-id", title="Other", body="nothing here"))
    ranked = await search(store, query="valkey")
    ids = [e["id"] for e in ranked["results"]]
    assert set(ids) == {"in-body", "in-title", "by-tag", "valkey-by-id"}
    assert ids.index("in-title") < ids.index("in-body")
    assert ranked["match"] == "all"


async def test_query_prefers_entries_with_every_word_and_falls_back_to_any(store: EntryStore) -> None:
    await put(store, entry("both-words", title="Token rotation", body="rotate the bridge token"))
    await put(store, entry("one-word", title="Token format", body="opaque strings"))
    all_words = await search(store, query="token rotation")
    assert [e["id"] for e in all_words["results"]] == ["both-words"]
    any_word = await search(store, query="token nonexistentword")
    assert any_word["match"] == "any"
    assert {e["id"] for e in any_word["results"]} == {"both-words", "one-word"}


async def test_a_rarer_word_weighs_more_over_the_whole_store(store: EntryStore) -> None:
    """Word frequencies are the store's, wherever its entries are kept (a cluster's shards)."""
    for n in range(24):
        await put(store, entry(f"filler-{n}", title=f"Filler {n}", body="a common word"))
    await put(store, entry("more-common", title="One", body="common common common rare"))
    await put(store, entry("more-rare", title="Two", body="common rare rare rare"))
    await put(store, entry("unique", title="Three", body="a unique word"))
    both = await search(store, query="common rare")
    assert [e["id"] for e in both["results"]] == ["more-rare", "more-common"]
    assert (both["total"], both["match"]) == (2, "all")
    either = await search(store, query="rare unique")
    assert either["match"] == "any"
    assert {e["id"] for e in either["results"]} == {"more-rare", "more-common", "unique"}


async def test_search_never_counts_hits_or_moves_revisions(store: EntryStore) -> None:
    await put(store)
    await search(store, query="tokens")
    current = (await ops.get_entry(store, "auth-decision")).model_dump()
    assert (current["hits"], current["revision"]) == (1, 1)


async def test_unfiltered_search_orders_by_hits_then_recency(store: EntryStore) -> None:
    for id in ("a", "b", "c"):
        await put(store, entry(id))
        await anyio.sleep(0.005)
    await ops.get_entry(store, "a")
    assert [e["id"] for e in (await search(store))["results"]] == ["a", "c", "b"]


async def test_search_and_list_paginate_with_a_total(store: EntryStore) -> None:
    for n in range(7):
        await put(store, entry(f"e{n}", tags=("paged",)))
    seen: list[str] = []
    cursor = None
    while True:
        page = await search(store, tags=["paged"], limit=3, cursor=cursor)
        assert page["total"] == 7
        seen += [e["id"] for e in page["results"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == [f"e{n}" for n in range(7)]
    listed = (
        await ops.list_entries(store, type=None, project=None, sort="updated", limit=5, cursor=None)
    ).model_dump()
    assert (listed["count"], listed["total"]) == (5, 7)
    rest = (
        await ops.list_entries(
            store, type=None, project=None, sort="updated", limit=5, cursor=listed["next_cursor"]
        )
    ).model_dump()
    assert (rest["count"], rest["next_cursor"]) == (2, None)


async def test_a_cursor_from_another_query_is_refused(store: EntryStore) -> None:
    for n in range(3):
        await put(store, entry(f"e{n}"))
    page = await search(store, limit=1)
    with pytest.raises(StoreError, match="cursor: belongs to a different query"):
        await search(store, limit=1, tags=["auth"], cursor=page["next_cursor"])


async def test_list_filters_by_type_and_project_and_sorts(store: EntryStore) -> None:
    await put(store, entry("p1", type="pattern", project="x"))
    await anyio.sleep(0.005)
    await put(store, entry("p2", type="pattern", project="y"))
    await put(store, entry("d1", type="decision", project="x"))
    by_type = (
        await ops.list_entries(store, type="pattern", project=None, sort="updated", limit=10, cursor=None)
    ).model_dump()
    assert [e["id"] for e in by_type["results"]] == ["p2", "p1"]
    both = (
        await ops.list_entries(store, type="pattern", project="x", sort="hits", limit=10, cursor=None)
    ).model_dump()
    assert [e["id"] for e in both["results"]] == ["p1"]


# -- prune, counts -------------------------------------------------------------------------------


async def test_prune_candidates_are_unread_and_old_oldest_first(store: EntryStore) -> None:
    await put(store, entry("old-unread"))
    await anyio.sleep(0.005)
    await put(store, entry("older-read"))
    await ops.get_entry(store, "older-read")
    future = time.time() + 31 * 86_400
    result = (await ops.prune_candidates(store, days=30, limit=100, cursor=None, now=future)).model_dump()
    assert [e["id"] for e in result["candidates"]] == ["old-unread"]
    assert result["threshold_days"] == 30
    assert result["cutoff_date"].endswith("Z")
    recent = (await ops.prune_candidates(store, days=30, limit=100, cursor=None)).model_dump()
    assert recent["candidates"] == []


async def test_count_and_soft_cap_warning_come_from_a_maintained_count(store: EntryStore) -> None:
    for n in range(3):
        await put(store, entry(f"e{n}"))
    await ops.delete_entry(store, "e0")
    assert await store.count() == 2
    warned = (
        await ops.set_entry(
            store, entry("e9"), ttl=None, if_version=None, operation_id=None, max_entries_warn=2
        )
    ).model_dump()
    assert (
        warned["warning"]
        == "Entry count (3) exceeds soft cap of 2. Consider running memory_prune_candidates."
    )
    assert await store.hits_zero_count() == 3


# -- export and import --------------------------------------------------------------------------


async def test_export_then_import_reproduces_every_record(make_store: StoreFactory) -> None:
    source, target = await make_store(), await make_store()
    await put(source, entry("live", tags=("x", "y")))
    await put(source, entry("live", body="second version", tags=("y",)))
    await ops.get_entry(source, "live")
    await put(source, entry("gone"))
    await ops.delete_entry(source, "gone")
    await put(source, entry("expiring"), ttl=3600)
    await put(target, entry("live", body="stale copy in the target"))
    exported = [r async for batch in source.export_records() for r in batch]
    await target.import_records(exported)
    assert [r.id for r in exported] == ["expiring", "gone", "live"]
    reimported = {r.id: r for batch in [b async for b in target.export_records()] for r in batch}
    for record in exported:
        copy = reimported[record.id]
        assert (copy.entry, copy.revision, copy.history) == (record.entry, record.revision, record.history)
    assert reimported["gone"].entry is None and reimported["gone"].revision == 2
    assert reimported["expiring"].expires_at is not None
    assert await target.count() == 2
    assert [e["id"] for e in (await search(target, tags=["y"]))["results"]] == ["live"]
    assert (await search(target, tags=["x"]))["total"] == 0
    assert (await put(target, entry("gone"), if_version=2))["revision"] == 3


async def test_importing_an_empty_record_removes_every_trace_of_the_id(store: EntryStore) -> None:
    await put(store, entry("kept"))
    await put(store, entry("dropped", tags=("x",)))
    await put(store, entry("dropped", body="second"))
    await store.import_records([EntryRecord(id="dropped", entry=None, revision=0, history=())])
    remaining = [r.id async for batch in store.export_records() for r in batch]
    assert remaining == ["kept"]
    assert await store.count() == 1
    assert (await search(store, tags=["x"]))["total"] == 0
    assert (await put(store, entry("dropped")))["revision"] == 1
