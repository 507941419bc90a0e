"""A Valkey that hangs (SIGSTOP): every call, bulk or single-key, fails soon with a reason,
a write says its outcome is unknown, and after SIGCONT the same operation_id settles it."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ..bridges import HttpBridge, http_bridge
from ..servers import RunningServer, run_server, valkey_server_binary
from .judge import assert_has_reason

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

STUCK_BOUND_SECONDS = 20.0
"""How long a call against a stopped server may take to fail: an order of magnitude under
the 60-105 s memory_list took, and well over the bridge's 2 s per-answer deadline."""
NOTE = {"title": "t", "body": "b", "type": "note", "tags": ["x"], "project": "p"}


@pytest.fixture
def stopped(tmp_path: Path) -> Iterator[tuple[RunningServer, HttpBridge]]:
    with (
        run_server(valkey_server_binary()) as server,
        http_bridge(tmp_path, "--entry-store", server.url) as bridge,
    ):
        try:
            yield server, bridge
        finally:
            os.kill(server.process.pid, signal.SIGCONT)  # a stopped server cannot be terminated


def text(result: Any) -> str:
    return str(result.content[0].text)


async def test_bulk_and_single_calls_fail_soon_and_a_write_says_its_outcome_is_unknown(
    stopped: tuple[RunningServer, HttpBridge],
) -> None:
    server, bridge = stopped
    async with Client(bridge.mcp_url, mode="legacy") as client:
        for n in range(30):
            assert not (await client.call_tool("memory_set", {"id": f"e{n}", **NOTE})).is_error
        os.kill(server.process.pid, signal.SIGSTOP)
        for name, args in [
            ("memory_list", {}),
            ("memory_search", {"query": "t"}),
            ("memory_prune_candidates", {}),
            ("memory_get", {"id": "e1"}),
        ]:
            with anyio.fail_after(STUCK_BOUND_SECONDS):
                result = await client.call_tool(name, args)
            assert result.is_error, name
            assert_has_reason(text(result))
            assert "Valkey" in text(result), text(result)
        with anyio.fail_after(STUCK_BOUND_SECONDS):
            write = await client.call_tool("memory_set", {"id": "late", **NOTE, "operation_id": "op-late"})
        assert write.is_error
        assert "unknown" in text(write) and "operation_id" in text(write), text(write)

        os.kill(server.process.pid, signal.SIGCONT)
        again = await client.call_tool("memory_set", {"id": "late", **NOTE, "operation_id": "op-late"})
        assert not again.is_error, text(again)
        history = json.loads(text(await client.call_tool("memory_history", {"id": "late"})))
        assert len(history["versions"]) == 1  # applied once, whether by the first try or the retry
        listed = json.loads(text(await client.call_tool("memory_list", {"limit": 100})))
        assert listed["total"] == 31
