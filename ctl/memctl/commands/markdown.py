"""`memctl export|import --markdown DIR`: memory as markdown files a person edits and applies back."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import click
from rich.table import Table
from rich.text import Text

from memory_bridge import Conflict, InvalidInput, MemctlError

from .._errors import exit_code
from ..operations._lookup import item_stores
from ..provision._project import provisioned_settings
from ..transfer._markdown_export import export_tree
from ..transfer._markdown_import import STATUSES, import_tree
from ._options import project_option
from ._output import console, emit_json, json_option, render_error

_DIR = click.Path(file_okay=False, path_type=Path)


def _links_left(count: int) -> InvalidInput:
    return InvalidInput(
        "files", f"{count} link(s) found where memctl would write were left alone (see the report)"
    )


@click.command()
@click.option("--markdown", "directory", type=_DIR, required=True, help="Folder to write the files into.")
@project_option
@json_option
@click.pass_context
def export(ctx: click.Context, directory: Path, project: Path | None, as_json: bool) -> None:
    """Write every entry and document as a markdown file with YAML front matter.

    Entries go to DIR/entries/TYPE/ID.md, documents to DIR/documents/SLOT/NAME.md (a name
    that is not a safe file name gets a slug and a hash of it, the same on every export).
    The front matter holds the metadata, the ids, the entry revision and a digest of the
    content; `memctl import --markdown DIR` applies the files you edit. Files are 0600,
    each replaced whole. DIR/.memctl-export.json records the files memctl wrote: a file
    an earlier export wrote whose item was deleted since (or now has another file) is
    removed, unless it was edited since (then it is kept and listed); files memctl did not
    write are never touched. A symbolic link inside DIR, where a file or a folder would be
    written or removed, is never followed: it is left alone, listed with the reason, and
    the command exits 7 after doing everything else.

    \b
    Example:
      memctl export --markdown ~/memory-review
    """
    settings = provisioned_settings(project)

    async def run() -> dict[str, Any]:
        async with item_stores(settings) as stores:
            return await export_tree(stores, directory.expanduser().absolute())

    report = anyio.run(run)
    error = _links_left(len(report["links"])) if report["links"] else None
    if as_json:
        if error is not None:
            code = exit_code(error)
            report.update(ok=False, error=type(error).__name__, message=str(error), exit_code=code)
        emit_json(report)
    else:
        wrote = f"wrote {report['entries']} entries and {report['documents']} documents"
        console.print(Text(f"{wrote} to {report['directory']}"))
        for gone in report["removed"]:
            console.print(Text(f"removed: {gone['file']}: {gone['reason']}"))
        for kept in report["kept"]:
            console.print(Text(f"kept: {kept['file']}: {kept['reason']}"))
        for link in report["links"]:
            console.print(Text(f"left alone: {link['file']}: {link['reason']}"))
    if error is not None:
        ctx.exit(exit_code(error) if as_json else render_error(error, as_json=False))


def _outcome(reports: list[dict[str, Any]], *, dry_run: bool) -> MemctlError | None:
    counts = Counter(r["status"] for r in reports)
    note = " (dry run: nothing was written)" if dry_run else ""
    if counts["conflict"]:
        return Conflict(
            f"{counts['conflict']} item(s) changed in the store since the export and were not overwritten: "
            f"export again and redo those edits{note}",
            operation="import",
        )
    if counts["invalid"]:
        return InvalidInput(
            "files", f"{counts['invalid']} file(s) could not be applied (see the report){note}"
        )
    if counts["link"]:
        return _links_left(counts["link"])
    return None


_WOULD = {"updated": "would update", "created": "would create", "deleted": "would delete"}


def _label(status: str, dry_run: bool) -> str:
    return _WOULD.get(status, status) if dry_run else status


@click.command("import")
@click.option(
    "--markdown",
    "directory",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="Folder written by `memctl export --markdown`.",
)
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option("--prune", is_flag=True, help="Delete the items whose files were taken out of the folder.")
@project_option
@json_option
@click.pass_context
def import_(
    ctx: click.Context, directory: Path, dry_run: bool, prune: bool, project: Path | None, as_json: bool
) -> None:
    """Apply what changed in an export folder: edits, new files, removed files.

    Each file is reported as unchanged (not edited, or already so in the store), updated
    (an edit, written through compare-and-set), created (a new file: see below), conflict
    (the item changed in the store since the export, or is already there for a new file:
    nothing is written), invalid (unreadable front matter, a changed id or name, a field
    that fails validation: the detail names it) or link. A file memctl wrote that is no
    longer in the folder is reported as removed and its item kept; with --prune the item
    is deleted (as `memctl forget` deletes), unless it changed in the store since. Updated
    and created files are rewritten from the store (revision, digest), so importing again
    finds them unchanged.

    A new file is one whose front matter has no digest: DIR/documents/SLOT/NAME.md makes a
    document (front matter optional; slot and name come from the place, the metadata
    defaults to empty), DIR/entries/TYPE/ID.md an entry (its front matter needs at least
    `title:`). A new file that cannot make an item is invalid, the detail saying why.
    --dry-run runs every check and writes nothing, neither to the stores nor to DIR. A
    symbolic link in DIR is neither read nor written through: it is reported as link and
    left alone. Exits 4 when there was a conflict, else 7 when a file was invalid or a
    link (with --dry-run: when there would be).

    \b
    Example:
      memctl import --markdown ~/memory-review --dry-run
      memctl import --markdown ~/memory-review --prune
    """
    settings = provisioned_settings(project)

    async def run() -> list[dict[str, Any]]:
        async with item_stores(settings) as stores:
            return await import_tree(stores, directory.expanduser().absolute(), dry_run=dry_run, prune=prune)

    reports = anyio.run(run)
    counts = Counter(r["status"] for r in reports)
    summary = {s: counts[s] for s in STATUSES}
    error = _outcome(reports, dry_run=dry_run)
    if as_json:
        payload: dict[str, Any] = {"ok": error is None, "dry_run": dry_run, **summary, "items": reports}
        if error is not None:
            payload.update(error=type(error).__name__, message=str(error), exit_code=exit_code(error))
        emit_json(payload)
    else:
        shown = ", ".join(f"{n} {_label(s, dry_run)}" for s, n in summary.items() if n) or "no files"
        head = "memctl import --dry-run (nothing written)" if dry_run else "memctl import"
        table = Table(title=f"{head}: {shown}")
        for column in ("status", "file", "ref", "detail"):
            table.add_column(column, overflow="fold")
        for r in reports:
            if r["status"] != "unchanged":
                detail = r["detail"] + (f" (differs in: {', '.join(r['differs'])})" if r["differs"] else "")
                table.add_row(
                    _label(r["status"], dry_run), Text(r["file"]), Text(r["short_ref"]), Text(detail)
                )
        console.print(table)
    if error is not None:
        ctx.exit(exit_code(error) if as_json else render_error(error, as_json=False))
