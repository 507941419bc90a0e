"""`memctl migrate-store`: copy a project's entries between stores and verify the copy."""

from __future__ import annotations

from pathlib import Path

import anyio
import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from memory_bridge import load_settings, open_entry_store
from memory_bridge.maintenance import TransferReport, copy_entries

from .._errors import ExitStatus
from ..provision._project import current_project
from ._options import project_option
from ._output import console, emit_json, json_option


async def _migrate(
    project: Path | None, source_url: str | None, target_url: str, merge: bool, show_progress: bool
) -> tuple[str, str, TransferReport]:
    settings = load_settings(project=current_project(project), entry_store=source_url)
    source = open_entry_store(settings)
    try:
        target = open_entry_store(load_settings(project=settings.project, entry_store=target_url))
        try:
            total = await source.count()
            with Progress(
                TextColumn("copying entries"),
                BarColumn(),
                MofNCompleteColumn(),
                console=console,
                disable=not show_progress,
                transient=True,
            ) as bar:
                task = bar.add_task("copy", total=total or None)
                report = await copy_entries(
                    source,
                    target,
                    merge=merge,
                    progress=lambda n: bar.advance(task, n),
                    redact_entries=settings.intake.redact_entries,
                )
            return source.url, target.url, report
        finally:
            await target.close()
    finally:
        await source.close()


@click.command("migrate-store")
@project_option
@click.option("--from", "source_url", help="Store to copy from (default: the project's entry store).")
@click.option("--to", "target_url", required=True, help="Store to copy to, e.g. valkey://127.0.0.1:6379/0.")
@click.option(
    "--merge", is_flag=True, help="Allow a target that already holds entries; same ids are overwritten."
)
@json_option
def migrate_store(
    project: Path | None, source_url: str | None, target_url: str, merge: bool, as_json: bool
) -> None:
    """Copy every entry, with its revision counter and history, to another store.

    Works both ways between the embedded store (sqlite, sqlite:///path) and Valkey
    (valkey://, valkeys://). Deleted entries keep their tombstone history, expiring
    entries keep their expiry. Afterwards both stores are compared record by record;
    any difference fails the command (exit 4). A target that already holds entries is
    refused unless --merge is given.

    \b
    Example:
      memctl migrate-store --to valkey://127.0.0.1:6379/0
      memctl migrate-store --from valkey://10.0.0.5:6379/2 --to sqlite --merge
    """
    source, target, report = anyio.run(_migrate, project, source_url, target_url, merge, not as_json)
    result = {
        "ok": not report.mismatched,
        "from": source,
        "to": target,
        "copied": report.copied,
        "live": report.live,
        "deleted": report.deleted,
        "mismatched": report.mismatched,
    }
    if as_json:
        emit_json(result)
    elif report.mismatched:
        console.print(
            f"[bold red]copy differs[/] for {len(report.mismatched)} id(s): "
            + ", ".join(report.mismatched[:10])
        )
    else:
        console.print(
            f"copied {report.copied} ids ({report.live} live, {report.deleted} deleted) "
            f"from {source} to {target}; verified: every record matches"
        )
    if report.mismatched:
        raise SystemExit(ExitStatus.CONFLICT)
