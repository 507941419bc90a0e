"""`memctl up`: provision a project's memory on the embedded store and prove it works."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import click
from mcp import Client, StdioServerParameters
from rich.table import Table

from memory_bridge import MemctlError, Settings, StoreUnavailable, load_settings, open_entry_store
from memory_bridge.stores._url import sqlite_path

from .._clients import ALL_CLIENTS, Change, Plan, apply
from .._output import console, emit_json, fail, json_option

SETUP_ENTRY_ID = "memctl/setup"
_SETUP_BODY = (
    "This project's memory is served by memctl over MCP. Before starting a task, call "
    "memory_search with a query (and tags) to find decisions, patterns and incidents recorded "
    "earlier. Record what future sessions need with memory_set (id, title, body, type, tags). "
    "To update an entry, read its revision with memory_get and pass it as if_version."
)


def memctl_command() -> str:
    """`memctl` if clients will find it on PATH, else the absolute path of this one."""
    if shutil.which("memctl"):
        return "memctl"
    beside = Path(sys.executable).with_name("memctl")
    return str(beside) if beside.exists() else "memctl"


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


def _configure_clients(
    settings: Settings, clients: tuple[str, ...], codex_config: Path | None, check: bool
) -> list[Change]:
    plan = Plan(
        project=settings.project,
        clients=frozenset(clients),  # type: ignore[arg-type]
        codex_config=codex_config,
        command=memctl_command(),
    )
    return apply(settings.project, plan, check=check)


@click.command()
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project directory (default: current).",
)
@click.option(
    "--client",
    "clients",
    multiple=True,
    type=click.Choice(sorted(ALL_CLIENTS)),
    help="Client configuration to write (repeatable; default: all of agents, claude, cursor, vscode).",
)
@click.option(
    "--codex-config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also register the server in this Codex config.toml (e.g. ~/.codex/config.toml).",
)
@click.option("--check", is_flag=True, help="Change nothing; report what a run would do.")
@click.option("--diff", "show_diff", is_flag=True, help="Show the changes to each file as a unified diff.")
@json_option
def up(
    project: Path | None,
    clients: tuple[str, ...],
    codex_config: Path | None,
    check: bool,
    show_diff: bool,
    as_json: bool,
) -> None:
    """Provision memory for a project on the embedded store and check it end to end.

    Creates the project's .memory/ stores (SQLite, no server needed) and migrates them,
    starts the bridge with a real MCP client over stdio, saves a setup entry and finds
    it again by search, then registers the server with the project's MCP clients
    (.mcp.json, .claude/settings.json, .cursor/mcp.json, .vscode/mcp.json, .agents/)
    by structural merge: your own entries stay as they are, a second run changes
    nothing, and a file memctl owns that you edited is reported and left alone.
    With --check nothing is written or started.

    \b
    Example:
      memctl up
      memctl up --project ~/src/app --client claude --client cursor --json
      memctl up --check --diff
    """
    codex = codex_config.expanduser().resolve() if codex_config else None
    try:
        settings = load_settings(project=project)
        chosen = clients or tuple(sorted(ALL_CLIENTS))
        report: dict[str, Any] = {}
        if check:
            store_url = (
                settings.entry_store if settings.entry_store != "sqlite" else str(sqlite_path(settings))
            )
            changes = _configure_clients(settings, chosen, codex, check=True)
        else:
            settings.project.mkdir(parents=True, exist_ok=True)
            store = open_entry_store(settings)
            anyio.run(store.close)
            store_url = store.url
            report = anyio.run(_round_trip, settings)
            changes = _configure_clients(settings, chosen, codex, check=False)
    except MemctlError as exc:
        fail(exc, as_json=as_json)
    result = {
        "ok": True,
        "check": check,
        "project": str(settings.project),
        "entry_store": store_url,
        **report,
        "changes": [
            {"path": str(c.path), "action": c.action, **({"diff": c.diff} if show_diff and c.diff else {})}
            for c in changes
        ],
        "changed": sum(1 for c in changes if c.action in ("created", "updated")),
    }
    if as_json:
        emit_json(result)
        return
    _print(result, report, changes, show_diff)


def _print(result: dict[str, Any], report: dict[str, Any], changes: list[Change], show_diff: bool) -> None:
    title = "memctl up" + (" --check" if result["check"] else "")
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("project", result["project"])
    table.add_row("entry store", result["entry_store"])
    if report:
        table.add_row("MCP tools", str(report["tools"]))
        table.add_row("bridge start", f"{report['startup_ms']} ms")
        saved = f"{report['round_trip_ms']} ms ({SETUP_ENTRY_ID}: {report['saved']}, found)"
        table.add_row("save → search", saved)
    console.print(table)
    for change in changes:
        style = {"unchanged": "dim", "edited-left-alone": "yellow"}.get(change.action, "green")
        console.print(f"  [{style}]{change.action:>18}[/] {change.path}")
        if show_diff and change.diff:
            console.print(change.diff, markup=False, highlight=False)
    console.print(f"changed={result['changed']}")
