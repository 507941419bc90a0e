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
from .._lookup import item_stores
from .._markdown import export_tree, import_tree
from .._options import project_option
from .._output import console, emit_json, json_option, render_error
from .._project import provisioned_settings

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
    each replaced whole. A symbolic link inside DIR, where a file or a folder would be
    written, is never written through: it is left alone, listed with the reason, and the
    command exits 7 after writing everything else.

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
        for link in report["links"]:
            console.print(Text(f"left alone: {link['file']}: {link['reason']}"))
    if error is not None:
        ctx.exit(exit_code(error) if as_json else render_error(error, as_json=False))


def _outcome(reports: list[dict[str, Any]]) -> MemctlError | None:
    counts = Counter(r["status"] for r in reports)
    if counts["conflict"]:
        return Conflict(
            f"{counts['conflict']} item(s) changed in the store since the export and were not overwritten: "
            "export again and redo those edits",
            operation="import",
        )
    if counts["invalid"]:
        return InvalidInput("files", f"{counts['invalid']} file(s) could not be applied (see the report)")
    if counts["link"]:
        return _links_left(counts["link"])
    return None


@click.command("import")
@click.option(
    "--markdown",
    "directory",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="Folder written by `memctl export --markdown`.",
)
@project_option
@json_option
@click.pass_context
def import_(ctx: click.Context, directory: Path, project: Path | None, as_json: bool) -> None:
    """Apply the edits made to exported markdown files, through compare-and-set.

    Each file is reported as unchanged (not edited, or already so in the store), updated,
    conflict (the item changed in the store since the export: nothing is written) or
    invalid (unreadable front matter, a changed id or name, a field that fails
    validation). An updated file is rewritten from the store (its new revision and
    digest), so importing again finds it unchanged. Files of items deleted since the
    export are conflicts; deleting a file deletes nothing. A symbolic link in DIR (to a
    file or a folder) is neither read nor written through: it is reported as link and
    left alone. Exits 4 when there was a conflict, else 7 when a file was invalid or a
    link.

    \b
    Example:
      memctl import --markdown ~/memory-review
    """
    settings = provisioned_settings(project)

    async def run() -> list[dict[str, Any]]:
        async with item_stores(settings) as stores:
            return await import_tree(stores, directory.expanduser().absolute())

    reports = anyio.run(run)
    counts = Counter(r["status"] for r in reports)
    summary = {s: counts[s] for s in ("unchanged", "updated", "conflict", "invalid", "link")}
    error = _outcome(reports)
    if as_json:
        payload: dict[str, Any] = {"ok": error is None, **summary, "items": reports}
        if error is not None:
            payload.update(error=type(error).__name__, message=str(error), exit_code=exit_code(error))
        emit_json(payload)
    else:
        table = Table(title="memctl import: " + ", ".join(f"{n} {s}" for s, n in summary.items()))
        for column in ("status", "file", "ref", "detail"):
            table.add_column(column, overflow="fold")
        for r in reports:
            if r["status"] != "unchanged":
                detail = r["detail"] + (f" (differs in: {', '.join(r['differs'])})" if r["differs"] else "")
                table.add_row(r["status"], Text(r["file"]), Text(r["ref"]), Text(detail))
        console.print(table)
    if error is not None:
        ctx.exit(exit_code(error) if as_json else render_error(error, as_json=False))
