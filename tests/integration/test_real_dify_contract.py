"""The Knowledge API contract memctl relies on, through the bridge's tools, against a real
Dify. scripts/test runs this module on Dify 1.16.1 beside the suite, which runs the rest
on 1.14.2 (whose contract suite and maintenance tests disable and enable too); the release
each run met is in the report's header.

Datasets, a save, keyword search, upsert by name, lessons, disable then enable (which
meets Dify's stale "being indexed" flag: the change waits in the outbox until Dify
accepts it), and that no answer shows the API key."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from memory_bridge import AppState, build_server, load_settings, open_state
from memory_bridge.stores import unversioned
from memory_bridge.stores.dify import DurableKnowledgeStore

from ..real_dify import RealDify, delete_datasets, unique_prefix

pytestmark = [pytest.mark.anyio, pytest.mark.real_dify]

SLOTS = ["knowledge", "self_improvement", "plans"]
FLAG_SECONDS = 700.0  # Dify's stale "being indexed" flag lasts up to 600 s


@pytest.fixture
async def served(real_dify: RealDify, tmp_path: Path) -> AsyncIterator[tuple[Client, AppState, str]]:
    """An MCP client of a bridge on the real Dify (economy datasets named with a fresh
    prefix, removed afterwards), its state and the API key it was given."""
    project = tmp_path / "shop-api"
    project.mkdir()
    prefix = unique_prefix()
    settings = load_settings(
        project=project,
        slots=SLOTS,
        embedding_model="none",
        knowledge_store=f"dify+{real_dify.url}/v1",
        dify_api_key=real_dify.api_key,
        dify_dataset_prefix=prefix,
        dify_indexing_technique="economy",
    )
    try:
        async with open_state(settings, background=False) as state, Client(build_server(state)) as client:
            yield client, state, real_dify.api_key
    finally:
        delete_datasets(real_dify, prefix)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return dict(json.loads(result.content[0].text))


async def settle(state: AppState, until: Any, *, seconds: float) -> None:
    """Run the bridge's upkeep (replays, keywords) until `until()` holds, at most `seconds`."""
    deadline = time.monotonic() + seconds
    while not await until():
        assert time.monotonic() < deadline, "Dify did not settle in time"
        await state.knowledge.upkeep()
        await anyio.sleep(1.0)


async def found(client: Client, query: str) -> list[str]:
    answer = await call(client, "search_memory", query=query, datasets=["knowledge"], scoreThreshold=0)
    return [r["documentName"] for r in answer["records"]]


async def test_datasets_saves_search_and_upsert_by_name(served: tuple[Client, AppState, str]) -> None:
    client, state, key = served
    listed = await call(client, "list_datasets")
    assert {d["name"] for d in listed["datasets"]} >= set(SLOTS)
    first = await call(
        client,
        "save_to_dataset",
        dataset="knowledge",
        name="deploys.md",
        text="Deploys go green at noon.",
    )
    assert first["ok"] and first["created"] is True
    second = await call(
        client, "save_to_dataset", dataset="knowledge", name="deploys.md", text="Deploys go canary at dawn."
    )
    assert second["documentId"] == first["documentId"] and second["created"] is False
    await settle(state, lambda: _has(client, "canary", "deploys.md"), seconds=120)
    assert await found(client, "noon") == [], "the second save replaced the text"
    config = await call(client, "get_memory_config")
    assert key not in json.dumps([listed, first, second, config])


async def _has(client: Client, query: str, name: str) -> bool:
    return name in await found(client, query)


async def test_a_lesson_is_saved_once_and_recalled(served: tuple[Client, AppState, str]) -> None:
    client, state, _ = served
    lesson = {"project_module": "db", "task_type": "debugging", "error_pattern": "missing-migration"}
    saved = [
        await call(client, "save_lesson", title="Migrate first", body=body, metadata=lesson)
        for body in ("Run migrations before tests.", "Run make migrate before the tests.")
    ]
    assert saved[0]["documentId"] == saved[1]["documentId"], "upserted by its deterministic name"

    async def recalled() -> bool:
        answer = await call(
            client, "recall_lessons", query="migrate", scoreThreshold=0, includeKnowledge=False
        )
        return [r["documentId"] for r in answer["records"]] == [saved[0]["documentId"]]

    await settle(state, recalled, seconds=120)


async def test_disable_then_enable_ends_enabled_and_searchable(served: tuple[Client, AppState, str]) -> None:
    """Dify refuses the enable while it marks the document as being indexed, a mark that
    can outlive the re-index by ten minutes: the enable is queued, says why, and is applied
    once Dify accepts it."""
    client, state, _ = served
    saved = await call(
        client,
        "save_to_dataset",
        dataset="knowledge",
        name="flags.md",
        text="Flags live in flagsmith.",
    )
    doc = {"dataset": "knowledge", "documentId": saved["documentId"]}
    await settle(state, lambda: _has(client, "flagsmith", "flags.md"), seconds=120)
    disabled = await call(client, "disable_document", **doc)
    assert disabled["result"] == "disabled"
    await settle(state, lambda: _gone(client, "flagsmith"), seconds=120)
    enabled = await call(client, "enable_document", **doc)
    assert enabled["result"] == "enabled"
    if enabled["queued"]:  # Dify's flag outlived the disable's re-index
        assert "being indexed" in enabled["reason"]
        durable = unversioned(state.knowledge)
        assert isinstance(durable, DurableKnowledgeStore)
        waiting = await durable.outbox.entries()
        assert [e.summary()["operation"] for e in waiting] == ["enable"]
    await settle(state, lambda: _has(client, "flagsmith", "flags.md"), seconds=FLAG_SECONDS)
    durable = unversioned(state.knowledge)
    assert isinstance(durable, DurableKnowledgeStore)
    assert (await durable.outbox.status())["pending"] == 0
    current = await state.knowledge.get("knowledge", saved["documentId"])
    assert current is not None and current.enabled


async def _gone(client: Client, query: str) -> bool:
    return await found(client, query) == []
