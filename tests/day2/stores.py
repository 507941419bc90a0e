"""Seeding and reading a project's stores directly, to check what the commands did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from memory_bridge import EntryWrite, load_settings
from memory_bridge import core as ops
from memory_bridge.stores import DocMetadata, Document, open_entry_store, open_knowledge_store


def note(id: str, **overrides: Any) -> EntryWrite:
    fields: dict[str, Any] = {
        "id": id,
        "title": f"Note {id}",
        "body": f"What we learned about {id}.",
        "type": "decision",
        "tags": ("ops", "release"),
        "source": "test",
        "project": "app",
    }
    fields.update(overrides)
    fields["tags"] = tuple(fields["tags"])
    return EntryWrite(**fields)


def seed_entries(project: Path, count: int = 20) -> None:
    """Entries with history: created, modified, one deleted, one expiring, one read."""

    async def run() -> None:
        store = open_entry_store(load_settings(project=project))
        try:
            for n in range(count):
                await ops.set_entry(
                    store,
                    note(f"n-{n:03}"),
                    ttl=None,
                    if_version=None,
                    operation_id=None,
                    max_entries_warn=10**6,
                )
            await ops.set_entry(
                store,
                note("n-000", body="v2"),
                ttl=None,
                if_version=None,
                operation_id=None,
                max_entries_warn=10**6,
            )
            await ops.set_entry(
                store, note("temp"), ttl=3600, if_version=None, operation_id=None, max_entries_warn=10**6
            )
            await ops.delete_entry(store, "n-001")
            await ops.get_entry(store, "n-002")
        finally:
            await store.close()

    anyio.run(run)


DOCS = [
    (
        "knowledge",
        "deploy.md",
        "Deploys go through the blue/green switch.",
        {"atom_type": "project-lore"},
        True,
    ),
    (
        "knowledge",
        "bug-auth.md",
        "The auth bug was a clock skew.",
        {"atom_type": "bug-root-cause", "tags": ("auth", "clock")},
        False,
    ),
    ("plans", "plan-release.md", "1. tag 2. build 3. publish", {"atom_type": "plan"}, True),
]


def seed_documents(project: Path, docs: list[tuple[str, str, str, dict[str, Any], bool]] = DOCS) -> None:
    async def run() -> None:
        settings = load_settings(project=project)
        store = open_knowledge_store(settings)
        try:
            existing = {s.name for s in await store.list_slots()}
            for slot, name, text, meta, enabled in docs:
                if slot not in existing:
                    await store.create_slot(slot)
                    existing.add(slot)
                outcome = await store.upsert(
                    slot, name, text, DocMetadata(scope=settings.project_scope, **meta), origin="test"
                )
                if not enabled:
                    await store.set_enabled(slot, outcome.document_id, False)
        finally:
            await store.close()

    anyio.run(run)


def entry_records(project: Path) -> dict[str, Any]:
    """Every entry record of the project's entry store, as plain data (expiry to the minute)."""

    async def run() -> dict[str, Any]:
        store = open_entry_store(load_settings(project=project))
        try:
            found = {}
            async for batch in store.export_records():
                for r in batch:
                    data = r.to_dict()
                    data["expires_at"] = None if r.expires_at is None else int(r.expires_at) // 60
                    found[r.id] = data
            return found
        finally:
            await store.close()

    return anyio.run(run)


def _all_documents(project: Path) -> list[Document]:
    async def run() -> list[Document]:
        store = open_knowledge_store(load_settings(project=project))
        try:
            found = []
            for slot in await store.list_slots():
                found += (await store.list_documents(slot.name, offset=0, limit=100))[0]
            return found
        finally:
            await store.close()

    return anyio.run(run)


def documents(project: Path) -> dict[tuple[str, str], tuple[str, dict[str, object], bool]]:
    """Every document of the project's knowledge store: (slot, name) -> (text, metadata, enabled)."""
    return {(d.slot, d.name): (d.text, d.metadata.to_dict(), d.enabled) for d in _all_documents(project)}


def stamp_recall(project: Path, slot: str, name: str, when: float) -> None:
    """Record a recall of one document, as the bridge does after a search returned it."""

    async def run() -> None:
        store = open_knowledge_store(load_settings(project=project))
        try:
            doc = await store.find(slot, name)
            assert doc is not None
            await store.stamp_recalls(slot, [doc.id], now=when, window=0)
        finally:
            await store.close()

    anyio.run(run)


def set_marks(project: Path, slot: str, name: str, marks: dict[str, str]) -> None:
    """Mark one document as a maintenance pass does."""

    async def run() -> None:
        store = open_knowledge_store(load_settings(project=project))
        try:
            doc = await store.find(slot, name)
            assert doc is not None
            await store.set_marks(slot, doc.id, marks)
        finally:
            await store.close()

    anyio.run(run)


def upkeep(project: Path) -> dict[tuple[str, str], tuple[dict[str, str], int, int | None]]:
    """Every document's maintenance state: (slot, name) -> (marks, recall count, last
    recalled to the second)."""
    return {
        (d.slot, d.name): (
            d.marks,
            d.recall_count,
            None if d.last_recalled_at is None else round(d.last_recalled_at),
        )
        for d in _all_documents(project)
    }
