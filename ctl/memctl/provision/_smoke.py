"""The end-to-end proof of a provisioned project: a real MCP client saves and finds an entry."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from mcp import Client, StdioServerParameters

from memory_bridge import Settings, StoreUnavailable

__all__ = ["SETUP_ENTRY_ID", "round_trip"]

SETUP_ENTRY_ID = "memctl/setup"
_SETUP_BODY = (
    "This project's memory is served by memctl over MCP. Before starting a task, call "
    "memory_search with a query (and tags) to find decisions, patterns and incidents recorded "
    "earlier. Record what future sessions need with memory_set (id, title, body, type, tags). "
    "To update an entry, read its revision with memory_get and pass it as if_version."
)


async def round_trip(settings: Settings) -> dict[str, Any]:
    """Start `memctl serve` on stdio with a real MCP client, then save and search.

    The setup entry is saved with `if_version=0`, so a re-run finds it already present and
    changes nothing (`saved` is then "already present").
    """
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memctl", "serve", "--project", str(settings.project)],
        cwd=str(settings.project),
    )
    started = time.perf_counter()
    async with Client(params, mode="legacy") as client:
        ready = time.perf_counter()
        tools = await client.list_tools()
        saved = await client.call_tool(
            "memory_set",
            {
                "id": SETUP_ENTRY_ID,
                "title": "How this project's memory works",
                "body": _SETUP_BODY,
                "type": "reference",
                "tags": ["memctl", "setup"],
                "source": "memctl up",
                "if_version": 0,
            },
        )
        # By tags: proves the indexes without loading the embedding model (doctor checks that).
        found = await client.call_tool("memory_search", {"tags": ["memctl", "setup"]})
        finished = time.perf_counter()
    for result in (saved, found):
        if result.is_error:
            raise StoreUnavailable(f"round trip through the bridge failed: {_text(result)}")
    save_result = json.loads(_text(saved))
    hit_ids = [r["id"] for r in json.loads(_text(found))["results"]]
    if SETUP_ENTRY_ID not in hit_ids:
        raise StoreUnavailable(f"round trip through the bridge failed: search did not find {SETUP_ENTRY_ID}")
    return {
        "tools": len(tools.tools),
        "saved": "created" if save_result.get("ok") else "already present",
        "found": SETUP_ENTRY_ID,
        "startup_ms": round((ready - started) * 1000, 1),
        "round_trip_ms": round((finished - ready) * 1000, 1),
    }


def _text(result: Any) -> str:
    return str(getattr(result.content[0], "text", result.content[0]))
