"""The stdio bridge end to end: `memctl serve` processes driven by the SDK's client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ..bridges import stdio_params

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

NOTE = {
    "title": "Retry policy",
    "body": "Retry idempotent calls three times with jitter.",
    "type": "pattern",
    "tags": ["http", "retry"],
    "project": "svc",
}


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(json.loads(result.content[0].text))


async def test_every_entry_tool_over_stdio(tmp_path: Path) -> None:
    async with Client(stdio_params(tmp_path), mode="legacy") as client:
        created = payload(
            await client.call_tool("memory_set", {"id": "retry", **NOTE, "operation_id": "op-a"})
        )
        assert created == {"ok": True, "id": "retry", "operation": "created", "revision": 1, "warning": None}
        got = payload(await client.call_tool("memory_get", {"id": "retry"}))
        assert (got["hits"], got["revision"], got["tags"]) == (1, 1, ["http", "retry"])
        updated = payload(
            await client.call_tool(
                "memory_set", {"id": "retry", **NOTE, "body": "Retry twice.", "if_version": got["revision"]}
            )
        )
        assert updated["revision"] == 2
        replayed = payload(
            await client.call_tool("memory_set", {"id": "retry", **NOTE, "operation_id": "op-a"})
        )
        assert replayed["replayed"] is True and replayed["revision"] == 1
        found = payload(await client.call_tool("memory_search", {"query": "retry jitter", "project": "svc"}))
        assert [r["id"] for r in found["results"]] == ["retry"]
        listed = payload(await client.call_tool("memory_list", {"type": "pattern"}))
        assert listed["total"] == 1
        history = payload(await client.call_tool("memory_history", {"id": "retry"}))
        assert [v["operation"] for v in history["versions"]] == ["modified", "created"]
        deleted = payload(await client.call_tool("memory_delete", {"id": "retry"}))
        assert deleted["revision"] == 3
        rolled = payload(await client.call_tool("memory_rollback", {"id": "retry", "version_index": 1}))
        assert rolled["operation"] == "rollback_to_1" and rolled["revision"] == 4
        again = payload(await client.call_tool("memory_get", {"id": "retry"}))
        assert again["body"] == "Retry twice."
        prune = payload(await client.call_tool("memory_prune_candidates", {"days": 1}))
        assert prune["count"] == 0 and prune["threshold_days"] == 1
    assert (tmp_path / ".memory" / "entries.db").exists()


async def test_two_stdio_bridges_share_one_project_safely(tmp_path: Path) -> None:
    """Two clients, each with its own bridge process, race on one store."""
    async with (
        Client(stdio_params(tmp_path), mode="legacy") as first,
        Client(stdio_params(tmp_path), mode="legacy") as second,
    ):
        payload(await first.call_tool("memory_set", {"id": "shared", **NOTE}))
        outcomes: list[dict[str, Any]] = []

        async def conditional_write(client: Client, n: int) -> None:
            result = await client.call_tool(
                "memory_set", {"id": "shared", **NOTE, "body": f"w{n}", "if_version": 1}
            )
            outcomes.append(payload(result))

        async def plain_writes(client: Client, prefix: str) -> None:
            for n in range(15):
                payload(await client.call_tool("memory_set", {"id": f"{prefix}-{n}", **NOTE}))

        async with anyio.create_task_group() as tasks:
            for n in range(6):
                tasks.start_soon(conditional_write, first if n % 2 else second, n)
            tasks.start_soon(plain_writes, first, "a")
            tasks.start_soon(plain_writes, second, "b")
        assert sum(1 for o in outcomes if o["ok"]) == 1
        seen_by_first = payload(await first.call_tool("memory_list", {"limit": 100}))
        seen_by_second = payload(await second.call_tool("memory_list", {"limit": 100}))
        assert seen_by_first["total"] == seen_by_second["total"] == 31
        history = payload(await second.call_tool("memory_history", {"id": "shared"}))
        assert [v["rev"] for v in history["versions"]] == [2, 1]
