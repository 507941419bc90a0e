"""Hostile workspaces: FIFOs, sockets, devices, symlinks, directories and glob bombs.

absorb_files refuses each such path on its own, with a reason, and the rest of the batch
goes through; scan_documents lists only regular files and a pathological glob costs no
more than an ordinary one; and while these calls run, /health keeps answering.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from ..bridges import HttpBridge, http_bridge
from .judge import BOUND_SECONDS, assert_has_reason
from .traps import LONG_NAME, REDOS_GLOB, hostile_workspace

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture
def bridge(tmp_path: Path) -> Iterator[tuple[HttpBridge, dict[str, str]]]:
    project = tmp_path / "project"
    traps = hostile_workspace(project)
    with http_bridge(project) as running:
        yield running, traps


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return dict(json.loads(result.content[0].text))


async def test_absorb_refuses_each_trap_on_its_own_and_keeps_the_rest(
    bridge: tuple[HttpBridge, dict[str, str]],
) -> None:
    running, traps = bridge
    async with Client(running.mcp_url, mode="legacy") as client:
        with anyio.fail_after(BOUND_SECONDS):
            result = payload(
                await client.call_tool("absorb_files", {"files": [*traps, "docs/real.md"], "dryRun": True})
            )
    by_file = {r["file"]: r for r in result["results"]}
    assert (result["total"], result["succeeded"]) == (len(traps) + 1, 1)
    assert by_file["docs/real.md"]["ok"] is True
    for path, word in traps.items():
        assert by_file[path]["ok"] is False
        assert_has_reason(by_file[path]["error"])
        assert word.lower() in by_file[path]["error"].lower(), (path, by_file[path]["error"])


async def test_scan_lists_regular_files_only_and_a_glob_bomb_is_cheap(
    bridge: tuple[HttpBridge, dict[str, str]],
) -> None:
    running, _ = bridge
    async with Client(running.mcp_url, mode="legacy") as client:
        with anyio.fail_after(BOUND_SECONDS):
            listed = payload(await client.call_tool("scan_documents", {}))
            bombed = payload(
                await client.call_tool("scan_documents", {"include": [REDOS_GLOB, "**/" + REDOS_GLOB]})
            )
            matched = payload(await client.call_tool("scan_documents", {"include": ["docs/*a*a*a*a"]}))
    assert [f["relPath"] for f in listed["files"]] == ["docs/real.md"]
    assert bombed["total"] == 0
    assert [f["relPath"] for f in matched["files"]] == [f"docs/{LONG_NAME}"]


async def test_health_answers_while_hostile_calls_are_in_flight(
    bridge: tuple[HttpBridge, dict[str, str]],
) -> None:
    """The watchdog: with a FIFO read and a glob bomb sent (each froze the event loop before),
    /health still answers every probe. No timing is asserted, only that it answers at all
    within a bounded wait."""
    running, traps = bridge
    outcomes: list[Any] = []
    async with Client(running.mcp_url, mode="legacy") as client, httpx.AsyncClient() as http:

        async def call(name: str, args: dict[str, Any]) -> None:
            outcomes.append(await client.call_tool(name, args))

        with anyio.fail_after(BOUND_SECONDS):
            async with anyio.create_task_group() as calls:
                calls.start_soon(call, "absorb_files", {"files": list(traps)})
                calls.start_soon(call, "scan_documents", {"include": [REDOS_GLOB] * 50})
                calls.start_soon(call, "absorb_files", {"files": ["docs/notes.md"] * 20})
                await anyio.sleep(0.2)  # let the calls reach the bridge first
                for _ in range(20):
                    health = await http.get(f"{running.base_url}/health", timeout=10)
                    assert health.status_code == 200
    assert len(outcomes) == 3
    assert all(not outcome.is_error for outcome in outcomes)
