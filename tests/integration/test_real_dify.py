"""Issue 14 against a real Dify 1.14.2 API: repeated saves, the outbox and onboarding."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from memory_bridge.stores import DocMetadata
from memory_bridge.stores.dify import DifyKnowledgeStore, DurableKnowledgeStore, Outbox, onboard

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


def restartable(target: RealDify) -> tuple[Path, Path]:
    """run-dify.sh and the instance's directory, or a skip naming what is missing."""
    script = os.environ.get("MEMCTL_TEST_DIFY_SCRIPT", "")
    if not script:
        pytest.skip("set MEMCTL_TEST_DIFY_SCRIPT (run-dify.sh) to stop and restart the real Dify API")
    return Path(script), Path(os.environ["MEMCTL_TEST_DIFY_ADMIN"]).parent


def stop_api(directory: Path) -> None:
    """End the instance's API process (by its PID file, gunicorn's quick shutdown, so open
    connections end too) and wait until it has exited."""
    pid = int((directory / "pids" / "api.pid").read_text())
    os.kill(pid, signal.SIGQUIT)
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)


async def test_writes_while_the_api_is_down_replay_when_it_is_back(
    real_dify: RealDify, tmp_path: Path
) -> None:
    script, directory = restartable(real_dify)
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
        await durable.upsert("knowledge", "before.md", "Saved before.", DocMetadata(), origin="t")
        stop_api(directory)
        try:
            queued = [
                await durable.upsert("knowledge", "a.md", "A, first.", DocMetadata(), origin="t"),
                await durable.upsert("knowledge", "b.md", "B, only.", DocMetadata(), origin="t"),
                await durable.upsert("knowledge", "a.md", "A, last.", DocMetadata(), origin="t"),
            ]
            assert all(q.indexing_status == "queued" and q.created is None for q in queued)
            assert await durable.upkeep() == 0, "still down: nothing replayed, nothing lost"
        finally:
            port = str(httpx.URL(real_dify.url).port)
            subprocess.run([str(script), "start", str(directory), "--port", port], check=True)
        assert await durable.upkeep() >= 3  # the replays, and keywords set on what Dify indexed
        assert (await durable.outbox.status())["pending"] == 0
        docs, total = await durable.list_documents("knowledge", offset=0, limit=10)
        assert total == 3 and sorted(d.name for d in docs) == ["a.md", "b.md", "before.md"]
        last = await durable.find("knowledge", "a.md")
        assert last is not None and last.text == "A, last.", "per-document order held"
    finally:
        await durable.close()
        delete_datasets(real_dify, prefix)
