"""`memctl status`: the health of one project's memory, store by store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click
from rich.table import Table

from memory_bridge import MemctlError, StoreError, load_settings
from memory_bridge.stores._url import open_entry_store, open_knowledge_store
from memory_bridge.stores.dify._outbox import DurableKnowledgeStore

from .._output import console, emit_json, fail, json_option


async def _probe(name: str, url: str, ping: Any, count: Any) -> dict[str, Any]:
    try:
        with anyio.fail_after(5):
            await ping()
            return {"store": name, "url": url, "healthy": True, "documents": await count()}
    except (StoreError, TimeoutError) as exc:
        return {"store": name, "url": url, "healthy": False, "error": str(exc) or "timed out"}


async def collect(project: Path | None) -> dict[str, Any]:
    settings = load_settings(project=project)
    entries = open_entry_store(settings)
    knowledge = open_knowledge_store(settings)
    try:
        report: dict[str, Any] = {
            "project": str(settings.project),
            "scope": settings.project_scope,
            "embedding_model": "none"
            if settings.embedding_model == "none"
            else settings.embedding_url or settings.embedding_model,
            "stores": [
                await _probe("entries", entries.url, entries.ping, entries.count),
                await _probe("knowledge", knowledge.url, knowledge.ping, knowledge.count),
            ],
        }
        report["capture"] = {
            "provider": settings.capture_provider,
            "skipped": settings.capture_provider == "none",
        }
        if isinstance(knowledge, DurableKnowledgeStore):
            report["outbox"] = dict(await knowledge.outbox.status())
        report["ok"] = all(s["healthy"] for s in report["stores"]) and not report.get("outbox", {}).get(
            "failed"
        )
        return report
    finally:
        await entries.close()
        await knowledge.close()


@click.command()
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project directory (default: current).",
)
@json_option
def status(project: Path | None, as_json: bool) -> None:
    """Show a project's memory: each store's health and size, writes waiting for Dify, and
    whether session capture runs (it is skipped while no capture provider is configured).

    Exit code 0 when every store answers and no queued write has failed, 5 otherwise.

    \b
    Example:
      memctl status
      memctl status --project ~/src/app --json
    """
    try:
        report = anyio.run(collect, project)
    except MemctlError as exc:
        fail(exc, as_json=as_json)
    if as_json:
        emit_json(report)
    else:
        table = Table(
            title=f"memctl status: {report['project']} (scope {report['scope']})", title_justify="left"
        )
        for column in ("store", "url", "health", "documents"):
            table.add_column(column)
        for store in report["stores"]:
            health = "[green]ok[/]" if store["healthy"] else f"[red]{store['error']}[/]"
            table.add_row(store["store"], store["url"], health, str(store.get("documents", "-")))
        console.print(table)
        console.print(f"embedding model: {report['embedding_model']}")
        capture = report["capture"]
        console.print(
            "capture: skipped, no capture provider configured (set capture_provider)"
            if capture["skipped"]
            else f"capture: {capture['provider']} (memctl capture status for details)"
        )
        if "outbox" in report:
            box = report["outbox"]
            console.print(
                f"writes waiting for Dify: {box['pending']} pending, {box['failed']} failed"
                + (f" (last error: {box['last_error']})" if box["last_error"] else "")
            )
    if not report["ok"]:
        raise SystemExit(5)
