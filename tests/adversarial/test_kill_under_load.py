"""kill -9 under write load: every write the bridge acknowledged is there after a restart,
once, and retrying it with its operation_id replays it instead of writing it again."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ..bridges import http_bridge

pytestmark = pytest.mark.anyio

WRITERS = 4
WRITES_EACH = 400
KILL_AFTER = 60  # acknowledged writes before the kill: the rest are in flight when it lands


def _write(key: str) -> dict[str, Any]:
    body = f"written under load as {key}"
    return {
        "id": key,
        "title": key,
        "body": body,
        "type": "note",
        "tags": ["load"],
        "operation_id": f"op-{key}",
    }


async def test_acknowledged_writes_survive_a_kill_9_under_load(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    acknowledged: dict[str, int] = {}

    with http_bridge(project, MEMCTL_EMBEDDING_MODEL="none") as bridge:

        async def writer(number: int) -> None:
            try:
                async with Client(bridge.mcp_url, mode="legacy") as client:
                    for index in range(WRITES_EACH):
                        key = f"load/w{number}-{index}"
                        result = await client.call_tool("memory_set", _write(key))
                        if result.is_error:
                            return
                        acknowledged[key] = json.loads(result.content[0].text)["revision"]  # type: ignore[union-attr]
            except Exception:  # the bridge died under this writer: its unanswered write is not counted
                return

        with anyio.fail_after(180):
            async with anyio.create_task_group() as group:
                for number in range(WRITERS):
                    group.start_soon(writer, number)
                while len(acknowledged) < KILL_AFTER:
                    await anyio.sleep(0.01)
                os.kill(bridge.process.pid, signal.SIGKILL)
        bridge.process.wait(timeout=30)

    assert len(acknowledged) >= KILL_AFTER
    with http_bridge(project, MEMCTL_EMBEDDING_MODEL="none") as restarted:
        async with Client(restarted.mcp_url, mode="legacy") as client:
            lost = []
            for key, revision in acknowledged.items():
                got = await client.call_tool("memory_get", {"id": key})
                found = json.loads(got.content[0].text)  # type: ignore[union-attr]
                if got.is_error or found.get("revision") != revision:
                    lost.append((key, revision, found))
            assert lost == [], f"{len(lost)} acknowledged writes lost or changed: {lost[:3]}"
            key = next(iter(acknowledged))
            replay = json.loads((await client.call_tool("memory_set", _write(key))).content[0].text)  # type: ignore[union-attr]
            assert replay["revision"] == acknowledged[key], "a retry with its operation_id is a replay"
