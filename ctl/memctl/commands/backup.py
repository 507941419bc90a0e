"""`memctl backup`: one portable archive of a project's entries and knowledge documents."""

from __future__ import annotations

from pathlib import Path

import anyio
import click

from memory_bridge.maintenance import Manifest
from memory_bridge.maintenance import backup as write_backup
from memory_bridge.stores import open_stores

from ..provision._project import provisioned_settings
from ._options import project_option
from ._output import console, emit_json, json_option
from ._progress import progress_bars


async def _backup(project: Path | None, output: Path, show_progress: bool) -> Manifest:
    settings = provisioned_settings(project)
    async with open_stores(settings) as (entries, knowledge):
        with progress_bars(enabled=show_progress) as progress:
            return await write_backup(
                entries, knowledge, output, scope=settings.project_scope, progress=progress
            )


@click.command()
@project_option
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Archive to write (mode 0600); an existing file is replaced only once the new one is complete.",
)
@json_option
def backup(project: Path | None, output: Path, as_json: bool) -> None:
    """Write every entry (with revisions and history) and every knowledge document
    (with its slot, metadata and enabled state) to one archive.

    The archive is a gzip'd tar of JSON Lines files and a manifest with counts and
    sha256 checksums (see docs/backup.md). It can be restored into any store:
    entries into the embedded store or Valkey, knowledge into the embedded store or Dify.

    \b
    Example:
      memctl backup --output ~/backups/app-$(date +%F).memctl.tar.gz
      memctl backup --project ~/src/app -o app.tar.gz --json
    """
    manifest = anyio.run(_backup, project, output, not as_json)
    result = {
        "ok": True,
        "output": str(output),
        "entries": manifest.entry_count,  # records: deleted entries' histories included
        "live_entries": manifest.live_entry_count,
        "documents": manifest.document_count,
        "document_versions": manifest.version_count,
        "slots": [s["name"] for s in manifest.slots],
        "manifest": manifest.to_dict(),
    }
    if as_json:
        emit_json(result)
        return
    deleted = manifest.entry_count - manifest.live_entry_count
    histories = f" (and the histories of {deleted} deleted)" if deleted else ""
    console.print(
        f"wrote {output}: {manifest.live_entry_count} entries{histories}, {manifest.document_count} "
        f"documents with {manifest.version_count} versions, in {len(manifest.slots)} slots"
    )
