"""The tools' listing cached on disk: a later server answers tools/list from it, identically,
and still serves every tool; a listing of other code, or a damaged one, is never served."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memory_bridge import _listing as listing
from memory_bridge import build_server, load_settings, open_state

pytestmark = pytest.mark.anyio


async def _listed(project: Path, cache: Path, call: str | None = None) -> list[dict[str, Any]]:
    """tools/list of a fresh server for `project` with `cache`, as the client received it,
    after `call` (a tool called with no arguments) if given."""
    settings = load_settings(project=project, embedding_model="none", model_cache_dir=cache)
    async with open_state(settings) as state, Client(build_server(state)) as client:
        tools = [tool.model_dump(mode="json") for tool in (await client.list_tools()).tools]
        if call is not None:
            result = await client.call_tool(call, {})
            assert not result.is_error, result
    return tools


def _cached(cache: Path) -> Path:
    [path] = cache.glob("tools-*.json")
    return path


async def test_a_later_server_lists_the_same_tools_from_the_cache_and_serves_them(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    built = await _listed(tmp_path, cache)
    assert len(built) > 20
    path = _cached(cache)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert path.name == f"tools-{listing.listing_key()}.json"

    assert await _listed(tmp_path, cache, call="memory_list") == built


async def test_the_cache_is_what_a_later_server_answers(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    built = await _listed(tmp_path, cache)
    path = _cached(cache)
    items = json.loads(path.read_text())
    items[0]["description"] = "from the cache"
    path.write_text(json.dumps(items))

    served = await _listed(tmp_path, cache)
    assert served[0]["description"] == "from the cache"
    assert served[1:] == built[1:]

    settings = load_settings(project=tmp_path, embedding_model="none", model_cache_dir=cache)
    async with open_state(settings) as state, Client(build_server(state)) as client:
        await client.call_tool("memory_list", {})
        relisted = [tool.model_dump(mode="json") for tool in (await client.list_tools()).tools]
    assert relisted == built  # once the tools are added, they answer, and the cache is left alone
    assert json.loads(path.read_text()) == items


async def test_a_listing_of_other_code_is_never_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    built = await _listed(tmp_path, cache)
    path = _cached(cache)
    path.write_text(json.dumps([{"name": "stale", "inputSchema": {"type": "object"}}]))
    monkeypatch.setattr("memory_bridge._server.listing_key", lambda: "0" * 32)

    assert await _listed(tmp_path, cache) == built
    assert (cache / f"tools-{'0' * 32}.json").is_file()


@pytest.mark.parametrize("damage", ["{", '{"name": "x"}', '[{"name": 3}]'])
async def test_a_damaged_listing_is_rebuilt(tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    built = await _listed(tmp_path, cache)
    path = _cached(cache)
    path.write_text(damage)

    assert await _listed(tmp_path, cache) == built
    assert json.loads(path.read_text())[0]["name"] == built[0]["name"]


async def test_a_cache_that_cannot_be_written_still_serves(tmp_path: Path) -> None:
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache directory would be")
    listed = await _listed(tmp_path, blocked, call="memory_list")
    assert "memory_set" in {tool["name"] for tool in listed}


async def test_only_the_newest_listings_are_kept(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    for age in range(6):
        old = cache / f"tools-old{age}.json"
        old.write_text("[]")
        stamp = 1_000_000 + age
        os.utime(old, (stamp, stamp))
    await _listed(tmp_path, cache)
    kept = sorted(path.name for path in cache.glob("tools-*.json"))
    assert kept == sorted(
        [f"tools-{listing.listing_key()}.json", "tools-old3.json", "tools-old4.json", "tools-old5.json"]
    )


def test_the_key_changes_with_any_source_of_the_bridge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "memory_bridge"
    shutil.copytree(Path(listing.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(listing, "_PACKAGE", package)
    key = listing.listing_key.__wrapped__()
    assert key == listing.listing_key()

    tool_module = package / "core" / "_results.py"
    tool_module.write_text(tool_module.read_text() + "\n# changed\n")
    assert listing.listing_key.__wrapped__() != key
