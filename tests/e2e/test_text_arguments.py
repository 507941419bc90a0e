"""A string sent for a text parameter is that string, even when it reads as JSON.

The MCP SDK parses string arguments as JSON unless the parameter is plain `str`: before
the fix, `memory_search(query="null")` arrived as no query and listed every entry, and
`save_lesson(evidence='["a"]')` was refused as "not a valid string". Lists sent as JSON
text (a habit of some clients) still parse.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memory_bridge import AppState, build_server, load_settings, open_state

pytestmark = pytest.mark.anyio


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return dict(json.loads(result.content[0].text))


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[tuple[Client, AppState]]:
    project = tmp_path / "shop-api"
    project.mkdir()
    settings = load_settings(project=project, embedding_model="none")
    async with open_state(settings) as state, Client(build_server(state)) as client:
        yield client, state


async def save(client: Client, entry_id: str, body: str) -> None:
    note = {"id": entry_id, "title": entry_id.title(), "body": body, "type": "pattern", "tags": ["db"]}
    payload(await client.call_tool("memory_set", note))


@pytest.mark.parametrize("word", ["null", "true"])
async def test_a_query_that_reads_as_json_searches_for_that_word(
    session: tuple[Client, AppState], word: str
) -> None:
    client, _ = session
    await save(client, "nullable", f"A column that allows {word} must say so in the migration.")
    await save(client, "retries", "Retry idempotent calls with backoff.")
    found = payload(await client.call_tool("memory_search", {"query": word}))
    assert [entry["id"] for entry in found["results"]] == ["nullable"]
    assert found["match"] == "all"


async def test_text_that_reads_as_a_json_list_is_saved_verbatim(session: tuple[Client, AppState]) -> None:
    client, state = session
    lesson = {
        "title": "Quote JSON in shell",
        "body": "Single-quote JSON arguments in shell commands.",
        "metadata": {"project_module": "cli", "task_type": "bugfix", "error_pattern": "json-quoting"},
        "evidence": '["--data", "{}"]',
    }
    saved = payload(await client.call_tool("save_lesson", lesson))
    doc = await state.knowledge.get("self_improvement", saved["documentId"])
    assert 'evidence: ["--data", "{}"]' in doc.text


async def test_a_list_sent_as_json_text_still_parses(session: tuple[Client, AppState]) -> None:
    client, _ = session
    await save(client, "nullable", "Columns that allow null.")
    found = payload(await client.call_tool("memory_search", {"tags": '["db"]'}))
    assert [entry["id"] for entry in found["results"]] == ["nullable"]
