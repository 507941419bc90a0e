"""Arguments that do not fit a tool's schema are answered in one sentence per field.

Before issue 33 the answer was the SDK's pydantic text: "1 validation error for
memory_setArguments / tags / Input should be a valid list [type=list_type, ...] / For
further information visit https://errors.pydantic.dev/...".
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memory_bridge import build_server, load_settings, open_state

pytestmark = pytest.mark.anyio

NOTE = {"id": "deploy", "title": "Deploy", "body": "Blue/green.", "type": "pattern", "tags": ["ops"]}


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    project = tmp_path / "shop-api"
    project.mkdir()
    settings = load_settings(project=project, embedding_model="none")
    async with open_state(settings) as state, Client(build_server(state)) as connected:
        yield connected


async def refused(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    """The error a call answers: memory-mcp's in-band `{"error": ...}` object, flagged."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.content[0].text
    reply = json.loads(result.content[0].text)
    assert list(reply) == ["error"]
    assert "validation error" not in reply["error"] and "pydantic" not in reply["error"]
    return str(reply["error"])


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("memory_set", {**NOTE, "tags": "ops"}, "tags: must be a list of strings."),
        ("memory_set", {**NOTE, "tags": [1, 2]}, "tags: must be a list of strings."),
        ("memory_set", {**NOTE, "ttl": -5}, "ttl: must be greater than 0."),
        ("memory_set", {**NOTE, "if_version": "two"}, "if_version: must be an integer or null."),
        ("memory_get", {"id": 5}, "id: must be a string."),
        ("memory_list", {"limit": 10_000}, "limit: must be less than or equal to 500."),
        ("memory_list", {"sort": "newest"}, 'sort: must be one of "hits", "updated".'),
        ("memory_search", {"query": "deploy", "tags": "ops"}, "tags: must be a list of strings or null."),
    ],
)
async def test_a_bad_field_is_named_with_its_problem(
    client: Client, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    assert await refused(client, tool, arguments) == expected


async def test_each_bad_field_gets_one_sentence(client: Client) -> None:
    note = {"id": "-x", "body": "b", "type": "pattern", "tags": ["a,b", "x" * 70]}
    message = await refused(client, "memory_set", note)
    assert message.startswith("id: must match pattern") and "starting with a letter or digit" in message
    assert message.index("). title: is required. tags[0]: must match pattern") > 0
    assert message.count("tags") == 1, "one sentence for the field, its first problem"


async def test_a_valid_call_is_unchanged(client: Client) -> None:
    saved = await client.call_tool("memory_set", NOTE)
    assert not saved.is_error and json.loads(saved.content[0].text)["id"] == "deploy"
