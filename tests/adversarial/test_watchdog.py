"""The watchdog: /health answers while a tool call is stuck.

A write waits on the SQLite write lock that another process holds (up to the 5 s busy
timeout). /health must answer while that write is still waiting: no timing is asserted,
only the order in which the two answers arrive.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client

from ..bridges import http_bridge
from .judge import BOUND_SECONDS

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

NOTE = {"title": "t", "body": "b", "type": "note", "tags": ["x"]}


async def test_health_answers_while_a_write_waits_for_the_store(tmp_path: Path) -> None:
    with http_bridge(tmp_path) as bridge:
        async with Client(bridge.mcp_url, mode="legacy") as client, httpx.AsyncClient() as http:
            assert not (await client.call_tool("memory_set", {"id": "first", **NOTE})).is_error
            answered: list[str] = []

            async def stuck_write() -> None:
                await client.call_tool("memory_set", {"id": "blocked", **NOTE})
                answered.append("write")

            holder = sqlite3.connect(tmp_path / ".memory" / "entries.db", isolation_level=None)
            try:
                holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
                with anyio.fail_after(BOUND_SECONDS):
                    async with anyio.create_task_group() as tasks:
                        tasks.start_soon(stuck_write)
                        await anyio.sleep(0.5)  # the write is now waiting for the lock
                        health = await http.get(f"{bridge.base_url}/health", timeout=BOUND_SECONDS)
                        answered.append("health")
                        holder.execute("ROLLBACK")  # let the write through
            finally:
                holder.close()
    assert health.status_code == 200, health.text
    assert answered == ["health", "write"]
