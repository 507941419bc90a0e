"""`memctl migrate-store` between the embedded store and a real Valkey, both ways."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ..bridges import bridge_env, stdio_params
from ..servers import RunningServer, run_server, valkey_server_binary

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

NOTE = {"title": "Release steps", "body": "Tag, build, publish.", "type": "reference", "tags": ["release"]}


@pytest.fixture
def server() -> Iterator[RunningServer]:
    with run_server(valkey_server_binary()) as running:
        yield running


def migrate(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memctl", "migrate-store", "--project", str(project), "--json", *args],
        env=bridge_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def payload(result: Any) -> dict[str, Any]:
    return dict(json.loads(result.content[0].text))


async def test_embedded_to_valkey_and_back_keeps_revisions_and_history(
    server: RunningServer, tmp_path: Path
) -> None:
    async with Client(stdio_params(tmp_path), mode="legacy") as client:
        for n in range(30):
            await client.call_tool("memory_set", {"id": f"note-{n}", **NOTE})
        await client.call_tool("memory_set", {"id": "note-0", **NOTE, "body": "v2"})
        await client.call_tool("memory_delete", {"id": "note-1"})
    to_valkey = migrate(tmp_path, "--to", server.url)
    assert to_valkey.returncode == 0, to_valkey.stderr
    report = json.loads(to_valkey.stdout)
    assert (report["copied"], report["live"], report["deleted"], report["mismatched"]) == (30, 29, 1, [])
    assert server.client().get("memcount") == b"29"

    async with Client(stdio_params(tmp_path, MEMCTL_ENTRY_STORE=server.url), mode="legacy") as client:
        got = payload(await client.call_tool("memory_get", {"id": "note-0"}))
        assert (got["body"], got["revision"]) == ("v2", 2)
        history = payload(await client.call_tool("memory_history", {"id": "note-1"}))
        assert history["versions"][0]["operation"] == "deleted"
        await client.call_tool("memory_set", {"id": "written-on-valkey", **NOTE})

    back_project = tmp_path / "back"
    back_project.mkdir()
    back = migrate(back_project, "--from", server.url, "--to", "sqlite")
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["copied"] == 31
    async with Client(stdio_params(back_project), mode="legacy") as client:
        listed = payload(await client.call_tool("memory_list", {"limit": 100}))
        assert listed["total"] == 30
        rolled = payload(await client.call_tool("memory_rollback", {"id": "note-1", "version_index": 0}))
        assert rolled["revision"] == 3


async def test_a_target_with_entries_is_refused_unless_merging(server: RunningServer, tmp_path: Path) -> None:
    async with Client(stdio_params(tmp_path), mode="legacy") as client:
        await client.call_tool("memory_set", {"id": "mine", **NOTE})
    server.client().hset(
        "mem:theirs", mapping={"title": "t", "body": "b", "type": "x", "tags": "", "hits": "0"}
    )
    refused = migrate(tmp_path, "--to", server.url)
    assert refused.returncode == 4 and json.loads(refused.stdout)["error"] == "Conflict"
    assert "--merge" in json.loads(refused.stdout)["message"]
    assert server.client().exists("mem:mine") == 0, "nothing was written"
    merged = migrate(tmp_path, "--to", server.url, "--merge")
    assert merged.returncode == 0
    assert server.client().exists("mem:mine", "mem:theirs") == 2
