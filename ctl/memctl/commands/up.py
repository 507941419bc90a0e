"""`memctl up`: provision a project's memory on the embedded store and prove it works."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import click
from mcp import Client, StdioServerParameters
from rich.table import Table

from memory_bridge import MemctlError, Settings, StoreUnavailable, load_settings, open_entry_store

from .._output import console, emit_json, fail, json_option

SETUP_ENTRY_ID = "memctl/setup"
_SETUP_BODY = (
    "This project's memory is served by memctl over MCP. Before starting a task, call "
    "memory_search with a query (and tags) to find decisions, patterns and incidents recorded "
    "earlier. Record what future sessions need with memory_set (id, title, body, type, tags). "
    "To update an entry, read its revision with memory_get and pass it as if_version."
)


def client_entry(settings: Settings) -> dict[str, Any]:
    """The `.mcp.json` server entry that starts this project's bridge on stdio."""
    return {"command": "memctl", "args": ["serve", "--project", str(settings.project)]}


async def _round_trip(settings: Settings) -> dict[str, Any]:
    """Start `memctl serve` on stdio with a real MCP client, then save and search."""
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
        found = await client.call_tool("memory_search", {"query": "memctl memory setup", "tags": ["memctl"]})
        finished = time.perf_counter()
    if saved.is_error or found.is_error:
        text = (saved if saved.is_error else found).content[0]
        raise StoreUnavailable(f"round trip through the bridge failed: {getattr(text, 'text', text)}")
    save_result = json.loads(saved.content[0].text)  # type: ignore[union-attr]
    search_result = json.loads(found.content[0].text)  # type: ignore[union-attr]
    hit_ids = [r["id"] for r in search_result["results"]]
    if SETUP_ENTRY_ID not in hit_ids:
        raise StoreUnavailable(f"round trip through the bridge failed: search did not find {SETUP_ENTRY_ID}")
    return {
        "tools": len(tools.tools),
        "saved": "created" if save_result.get("ok") else "already present",
        "found": SETUP_ENTRY_ID,
        "startup_ms": round((ready - started) * 1000, 1),
        "round_trip_ms": round((finished - ready) * 1000, 1),
    }


@click.command()
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project directory (default: current).",
)
@json_option
def up(project: Path | None, as_json: bool) -> None:
    """Provision memory for a project on the embedded store and check it end to end.

    Creates the project's .memory/ store (SQLite, no server needed), migrates it,
    then starts the bridge with a real MCP client over stdio, saves a setup entry and
    finds it again by search. Prints the MCP client entry to add to .mcp.json.

    \b
    Example:
      memctl up
      memctl up --project ~/src/app --json
    """
    try:
        settings = load_settings(project=project)
        settings.project.mkdir(parents=True, exist_ok=True)
        store = open_entry_store(settings)
        anyio.run(store.close)
        report = anyio.run(_round_trip, settings)
    except MemctlError as exc:
        fail(exc, as_json=as_json)
    result = {
        "ok": True,
        "project": str(settings.project),
        "entry_store": store.url,
        **report,
        "mcp_json": {"mcpServers": {"memory": client_entry(settings)}},
    }
    if as_json:
        emit_json(result)
        return
    table = Table(title="memctl up", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("project", result["project"])
    table.add_row("entry store", result["entry_store"])
    table.add_row("MCP tools", str(report["tools"]))
    table.add_row("bridge start", f"{report['startup_ms']} ms")
    table.add_row(
        "save → search", f"{report['round_trip_ms']} ms ({SETUP_ENTRY_ID}: {report['saved']}, found)"
    )
    console.print(table)
    console.print("Add this to the project's .mcp.json to give your agent this memory:")
    console.print_json(json.dumps(result["mcp_json"]))
