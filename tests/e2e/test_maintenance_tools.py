"""Recall stamping and consolidate_memory through an MCP client, on the embedded store,
the Dify emulator and the real Dify: searches stamp what they return; the projection per
refine slot, the policy refusals, and that it changes nothing."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memory_bridge import AppState, build_server, load_settings, open_state
from memory_bridge.core import RecallStamper
from memory_bridge.search import LazyEmbedder, lazy_minilm
from memory_bridge.stores import KnowledgeStore
from memory_bridge.tools import _knowledge as knowledge_tools

from ..bridges import MODEL_CACHE
from ..contract.test_knowledge_store import dify_store, real_dify_store
from ..real_dify import RealDify, delete_datasets, unique_prefix

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]
SLOTS = ["knowledge", "self_improvement", "plans"]

YEAR = 365 * 86_400.0
LESSON = {
    "atom_type": "self-improvement-lesson",
    "project_module": "db",
    "task_type": "debugging",
    "error_pattern": "missing-migration",
}


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return dict(json.loads(result.content[0].text))


@pytest.fixture(scope="module")
def embedder() -> LazyEmbedder:
    return lazy_minilm(2, int8_cache=MODEL_CACHE)


@pytest.fixture(params=["sqlite", "dify-emulator", pytest.param("real-dify", marks=pytest.mark.real_dify)])
async def served(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: LazyEmbedder
) -> AsyncIterator[tuple[Client, AppState]]:
    """A client of a bridge whose knowledge store is the parameter's."""
    project = tmp_path / "shop-api"
    project.mkdir()
    prefix = unique_prefix()
    target: RealDify | None = None
    if request.param == "real-dify":
        target = request.getfixturevalue("real_dify")
    async with open_state(
        load_settings(project=project, slots=["knowledge", "self_improvement", "plans"])
    ) as state:
        knowledge: KnowledgeStore = state.knowledge
        if request.param == "dify-emulator":
            knowledge = await dify_store(embedder, "1.14.0")
        elif target is not None:
            knowledge = await real_dify_store(target, prefix)
        recalls = RecallStamper(knowledge, debounce_seconds=86_400)
        served_state = replace(state, knowledge=knowledge, recalls=recalls)
        try:
            async with Client(build_server(served_state)) as client:
                yield client, served_state
        finally:
            if knowledge is not state.knowledge:
                await knowledge.close()
            if target is not None:
                delete_datasets(target, prefix)


async def save(client: Client, slot: str, name: str, text: str, **metadata: str) -> str:
    saved = payload(
        await client.call_tool(
            "save_to_dataset", {"dataset": slot, "name": name, "text": text, "metadata": metadata}
        )
    )
    return str(saved["documentId"])


async def consolidate(client: Client, **arguments: Any) -> dict[str, Any]:
    return payload(await client.call_tool("consolidate_memory", arguments))


async def test_a_search_stamps_what_it_returns_once_per_window(served: tuple[Client, AppState]) -> None:
    client, state = served
    assert state.recalls is not None
    doc = await save(
        client, "knowledge", "deploys.md", "Deploys go blue/green at noon.", atom_type="decision"
    )
    query = {"query": "deploys noon blue green", "datasets": ["knowledge"]}
    found = payload(await client.call_tool("search_memory", query))
    assert [r["documentId"] for r in found["records"]] == [doc]
    assert await state.recalls.flush() == 1
    payload(await client.call_tool("search_memory", query))
    assert await state.recalls.flush() == 0, "debounced"
    stamped = await state.knowledge.get("knowledge", doc)
    assert stamped is not None and stamped.recall_count == 1
    assert stamped.last_recalled_at is not None and abs(stamped.last_recalled_at - time.time()) < 600


async def test_the_projection_per_refine_slot_changes_nothing(
    served: tuple[Client, AppState], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, state = served
    older = await save(
        client, "self_improvement", "lesson-a.md", "Run migrations before the tests.", **LESSON
    )
    newer = await save(client, "self_improvement", "lesson-b.md", "Run make migrate before tests.", **LESSON)
    await save(
        client, "knowledge", "root-cause.md", "The cache key lacked the tenant.", atom_type="bug-root-cause"
    )
    await save(client, "knowledge", "decision.md", "We deploy blue/green.", atom_type="decision")
    retired = await save(client, "knowledge", "old.md", "The old deploy checklist.", atom_type="reference")
    payload(await client.call_tool("disable_document", {"dataset": "knowledge", "documentId": retired}))
    await save(client, "plans", "plan-x.md", "Ship the thing.", atom_type="plan")
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["consolidate_memory"].annotations is not None
    assert tools["consolidate_memory"].annotations.read_only_hint is True
    before = {s.name: s.document_count for s in await state.knowledge.list_slots()}

    now = await consolidate(client)
    assert (now["ok"], now["readOnly"], now["refusals"], now["errors"]) == (True, True, [], [])
    assert now["policies"] == {"knowledge": "refine", "self_improvement": "refine", "plans": "none"}
    assert now["refine"] == now["slotsProjected"] == ["knowledge", "self_improvement"]
    knowledge, lessons = now["perSlot"]["knowledge"], now["perSlot"]["self_improvement"]
    assert (knowledge["workingSetSize"], knowledge["disabledCount"]) == (2, 1)
    assert (knowledge["staleCandidates"], knowledge["compressArchivedCandidatesApprox"]) == (0, 0)
    assert lessons["lessonKeyDuplicateCandidates"] == 1
    [pair] = lessons["candidates"]["lessonKeyDuplicates"]
    assert pair["lessonKey"] == "db|debugging|missing-migration"
    assert {pair["keeper"]["documentId"], pair["loser"]["documentId"]} == {older, newer}

    class InAYear:
        @staticmethod
        def time() -> float:
            return time.time() + YEAR

    monkeypatch.setattr(knowledge_tools, "time", InAYear)
    later = await consolidate(client, slots=["knowledge"])
    assert later["slotsProjected"] == ["knowledge"] and list(later["perSlot"]) == ["knowledge"]
    knowledge = later["perSlot"]["knowledge"]
    assert knowledge["staleCandidates"] == 1, "bug-root-cause goes stale; a decision never does"
    assert [c["name"] for c in knowledge["candidates"]["stale"]] == ["root-cause.md"]
    assert knowledge["compressArchivedCandidatesApprox"] == 1
    assert knowledge["candidates"]["compressArchived"] == [{"documentId": retired, "name": "old.md"}]
    assert {s.name: s.document_count for s in await state.knowledge.list_slots()} == before


async def test_a_slot_without_a_policy_or_with_an_invalid_one_is_refused(
    served: tuple[Client, AppState],
) -> None:
    client, state = served
    payload(await client.call_tool("create_dataset", {"name": "research"}))
    refused = await consolidate(client)
    assert (refused["ok"], refused["slotsProjected"], refused["perSlot"]) == (False, [], {})
    [refusal] = refused["refusals"]
    assert refusal["code"] == "policy-undeclared-slot" and refusal["slot"] == "research"
    assert "research" in refusal["message"] and "consolidate_policies" in refusal["message"]

    maintain = state.settings.maintain.model_copy(update={"consolidate_policies": {"research": "sometimes"}})
    settings = state.settings.model_copy(update={"maintain": maintain})
    async with Client(build_server(replace(state, settings=settings))) as strict:
        invalid = await consolidate(strict)
    assert invalid["ok"] is False and invalid["perSlot"] == {}
    assert [(r["code"], r["slot"]) for r in invalid["refusals"]] == [("policy-invalid", "research")]
    assert "'sometimes'" in invalid["refusals"][0]["message"]

    maintain = state.settings.maintain.model_copy(update={"consolidate_policies": {"research": "none"}})
    settings = state.settings.model_copy(update={"maintain": maintain})
    async with Client(build_server(replace(state, settings=settings))) as declared:
        fine = await consolidate(declared)
    assert fine["ok"] and fine["policies"]["research"] == "none" and "research" not in fine["refine"]
    unknown = await client.call_tool("consolidate_memory", {"slots": ["nope"]})
    assert unknown.is_error and "unknown slot 'nope'" in unknown.content[0].text  # type: ignore[union-attr]
