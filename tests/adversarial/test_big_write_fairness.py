"""One large write never starves the others (issue 32, finding 5): while session A saves a
500,000-character document over a real HTTP bridge with the bundled embedding model,
session B's small calls are answered; a document over max_document_chars is refused with
an error naming both sizes, and nothing stored changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from memory_bridge import build_server, load_settings, open_state

from ..bridges import http_bridge
from .documents import MARKERS, big_document

pytestmark = pytest.mark.anyio

SMALL_SAVES = 24  # B's saves: more than the queue a write may leave (BACKLOG, 16)


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return dict(json.loads(result.content[0].text))


async def found(client: Client, query: str) -> list[str]:
    """The names of the documents search_memory returns for `query`."""
    result = payload(await client.call_tool("search_memory", {"query": query}))
    return [record["documentName"] for record in result["records"]]


async def test_small_calls_are_answered_while_a_large_document_is_saved(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    events: list[str] = []
    text = big_document()

    with http_bridge(project) as bridge:
        async with Client(bridge.mcp_url, mode="legacy") as a, Client(bridge.mcp_url, mode="legacy") as b:
            entry = {"id": "notes/b", "title": "B's note", "body": "kept by B", "type": "note", "tags": []}
            payload(await b.call_tool("memory_set", entry))
            await found(b, "warm up the model")

            async def save_big() -> None:
                saved = await a.call_tool(
                    "save_to_dataset", {"dataset": "knowledge", "name": "big.md", "text": text}
                )
                events.append("A saved")
                payload(saved)

            with anyio.fail_after(600):  # a hang fails the test; no assertion depends on time
                async with anyio.create_task_group() as group:
                    group.start_soon(save_big)
                    while "big.md" not in await found(
                        b, MARKERS[0]
                    ):  # A's document is stored, its save runs on
                        assert not events, "A's save returned before B saw its document"
                        await anyio.sleep(0.05)
                    events.append("B saw A's document")
                    for n in range(SMALL_SAVES):  # more than a write may leave queued
                        small = {
                            "dataset": "knowledge",
                            "name": f"small-{n}.md",
                            "text": f"B's note {n} on kiwis.",
                        }
                        payload(await b.call_tool("save_to_dataset", small))
                    events.append("B saved")
                    assert "small-0.md" in await found(b, "kiwis")
                    events.append("B searched")
                    assert payload(await b.call_tool("memory_get", {"id": "notes/b"}))["body"] == "kept by B"
                    events.append("B got")

            assert events == ["B saw A's document", "B saved", "B searched", "B got", "A saved"]
            for marker in MARKERS:  # every part of A's document is searchable once its save returned
                assert "big.md" in await found(a, marker), marker


async def test_a_document_over_the_limit_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    settings = load_settings(project=project, embedding_model="none", max_document_chars=1000)
    async with open_state(settings) as state, Client(build_server(state)) as client:
        kept = payload(
            await client.call_tool(
                "save_to_dataset", {"dataset": "knowledge", "name": "a.md", "text": "x" * 1000}
            )
        )
        before = await state.knowledge.list_documents("knowledge", offset=0, limit=10)

        for name in ("a.md", "b.md"):  # replacing one, and adding one
            refused = await client.call_tool(
                "save_to_dataset", {"dataset": "knowledge", "name": name, "text": "y" * 1001}
            )
            assert refused.is_error
            message = refused.content[0].text  # type: ignore[union-attr]
            for part in ("1,001 characters", "1,000-character limit", "max_document_chars", "split it"):
                assert part in message, message

        assert await state.knowledge.list_documents("knowledge", offset=0, limit=10) == before
        document = await state.knowledge.get("knowledge", kept["documentId"])
        assert document is not None and document.text == "x" * 1000
