"""Issue 14 against a real Dify 1.14.2 API: repeated saves, the outbox and onboarding."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_bridge.stores._knowledge import DocMetadata
from memory_bridge.stores.dify._onboarding import onboard
from memory_bridge.stores.dify._outbox import DurableKnowledgeStore, Outbox
from memory_bridge.stores.dify._store import DifyKnowledgeStore

from ..real_dify import RealDify, console, delete_datasets, unique_prefix

pytestmark = [pytest.mark.anyio, pytest.mark.real_dify]


async def test_saving_twice_under_one_name_updates_in_place(real_dify: RealDify, tmp_path: Path) -> None:
    prefix = unique_prefix()
    store = DifyKnowledgeStore(
        f"{real_dify.url}/v1",
        real_dify.api_key,
        default_slots=("knowledge",),
        dataset_prefix=prefix,
        technique="economy",
    )
    durable = DurableKnowledgeStore(store, Outbox(tmp_path / "outbox.db"))
    try:
        first = await durable.upsert("knowledge", "n.md", "First text.", DocMetadata(scope="p"), origin="t")
        second = await durable.upsert(
            "knowledge", "n.md", "Second text.", DocMetadata(scope="p", tags=("a",)), origin="t"
        )
        third = await durable.upsert(
            "knowledge", "n.md", "Third text.", DocMetadata(scope="p", tags=("b",)), origin="t"
        )
        assert (first.created, second.created, third.created) == (True, False, False)
        assert first.document_id == second.document_id == third.document_id
        assert second.metadata_applied and third.metadata_applied
        assert await durable.outbox.status() == {
            "pending": 0,
            "dead_lettered": 0,
            "oldest": None,
            "last_error": "",
        }
        doc = await durable.find("knowledge", "n.md")
        assert doc is not None and doc.metadata.tags == ("b",) and doc.metadata.scope == "p"
    finally:
        await durable.close()
        delete_datasets(real_dify, prefix)


async def test_onboarding_makes_economy_slots_and_is_idempotent(real_dify: RealDify) -> None:
    """A fresh Dify has no embedding model: onboarding chooses economy, and a rerun changes nothing."""
    prefix = unique_prefix()
    slots = (f"{prefix}knowledge", f"{prefix}plans")
    report = await onboard(real_dify.url, email=real_dify.email, password=real_dify.password, slots=slots)
    try:
        assert report.technique == "economy" and report.key_created
        assert sorted(report.created_slots) == sorted(slots)
        again = await onboard(
            real_dify.url,
            email=real_dify.email,
            password=real_dify.password,
            api_key=report.api_key,
            slots=slots,
        )
        assert (again.key_created, again.created_slots, again.slots) == (False, [], report.slots)
    finally:
        delete_datasets(real_dify, prefix)
        with console(real_dify) as client:
            for key in client.get("/console/api/datasets/api-keys").json()["data"]:
                if key["token"] == report.api_key:
                    client.delete(f"/console/api/datasets/api-keys/{key['id']}")
