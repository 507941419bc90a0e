"""Inputs that used to get no reason (or the wrong one): each now names its problem."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memory_bridge import build_server, load_settings, open_state

from .judge import assert_has_reason

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

NOTE = {"title": "t", "body": "b", "type": "note", "tags": ["x"]}


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    async with open_state(load_settings(project=tmp_path)) as state, Client(build_server(state)) as connected:
        yield connected


def error_text(result: Any) -> str:
    assert result.is_error, result.content[0].text
    text = str(result.content[0].text)
    assert_has_reason(text)
    return text


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("memory_set", {"id": "big-ttl", **NOTE, "ttl": 2**63}, "ttl"),
        ("memory_set", {"id": "huge-ttl", **NOTE, "ttl": 2**80}, "ttl"),
        ("memory_set", {"id": "big-version", **NOTE, "if_version": 2**64}, "if_version"),
        ("memory_rollback", {"id": "kept", "version_index": 2**63}, "version_index"),
    ],
)
async def test_integers_past_64_bits_name_the_field(
    client: Client, tool: str, args: dict[str, Any], field: str
) -> None:
    assert not (await client.call_tool("memory_set", {"id": "kept", **NOTE})).is_error
    assert field in error_text(await client.call_tool(tool, args))


async def test_a_thousand_tag_filters_search_fine(client: Client, tmp_path: Path) -> None:
    saved = await client.call_tool(
        "save_to_dataset",
        {"dataset": "knowledge", "name": "a.md", "text": "alpha beta", "metadata": {"tags": ["t1", "t2"]}},
    )
    assert not saved.is_error
    many = await client.call_tool(
        "search_memory", {"query": "alpha", "filters": {"tags": [f"t{n}" for n in range(1000)]}}
    )
    assert not many.is_error, many.content[0].text
    assert str(tmp_path) not in many.content[0].text
    assert json.loads(many.content[0].text)["records"] == []  # no document has all thousand
    repeated = {"query": "alpha", "filters": {"tags": ["t1", "t2", "t1"]}}
    both = await client.call_tool("search_memory", repeated)
    assert [r["documentName"] for r in json.loads(both.content[0].text)["records"]] == ["a.md"]


async def test_a_call_past_its_deadline_says_so(tmp_path: Path) -> None:
    settings = load_settings(project=tmp_path, tool_timeout_seconds=1e-6)
    async with open_state(settings) as state, Client(build_server(state)) as client:
        read = error_text(await client.call_tool("memory_list", {}))
        write = error_text(await client.call_tool("memory_set", {"id": "w", **NOTE, "operation_id": "op-1"}))
    assert "did not finish within" in read and "retry" in read
    assert "unknown" in write and "operation_id" in write
