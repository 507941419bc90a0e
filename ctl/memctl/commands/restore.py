"""`memctl restore`: bring a backup archive into a project's stores, verified item by item."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import click
from rich.table import Table

from memory_bridge import ConfigError, Settings, load_settings, pinned_scope, write_scope
from memory_bridge.maintenance import RestoreMode, RestoreReport
from memory_bridge.maintenance import restore as run_restore
from memory_bridge.stores import open_stores

from .._errors import ExitStatus
from ..provision._project import current_project
from ._options import project_option
from ._output import console, emit_json, json_option
from ._progress import progress_bars


async def _restore(
    settings: Settings, archive: Path, mode: RestoreMode, scope: str | None, show_progress: bool
) -> RestoreReport:
    async with open_stores(settings) as (entries, knowledge):
        with progress_bars(enabled=show_progress) as progress:
            return await run_restore(
                entries,
                knowledge,
                archive,
                mode=mode,
                scope=scope,
                progress=progress,
                redact_entries=settings.intake.redact_entries,
            )


def _restore_into(
    settings: Settings, archive: Path, mode: RestoreMode, scope: str | None, show_progress: bool
) -> RestoreReport:
    """Restore, then pin the project's scope; a failed restore into a project that had no
    memory leaves no `.memory/` behind."""
    existed = settings.memory_dir.exists()
    try:
        report = anyio.run(_restore, settings, archive, mode, scope, show_progress)
    except BaseException:
        if not existed:
            shutil.rmtree(settings.memory_dir, ignore_errors=True)
        raise
    if report.scope and (scope or pinned_scope(settings.project) is None):
        write_scope(settings.project, report.scope)
    return report


def _scope_warning(settings: Settings, report: RestoreReport) -> str | None:
    """Why the restored documents may not be found in this project, if they may not."""
    pinned = pinned_scope(settings.project)
    if report.scope and pinned and pinned != report.scope:
        return (
            f"the archive's documents carry scope {report.scope!r} but this project's scope is {pinned!r}, "
            f"so its searches will not find them; run the restore again with --scope {pinned} to re-home them"
        )
    return None


def _render(report: RestoreReport) -> None:
    table = Table(title="memctl restore", title_justify="left")
    for column in ("store", "target before", "written", "revised", "removed", "differ after"):
        table.add_column(column)
    table.add_row(
        "entries",
        report.entries_state,
        str(report.entries_written),
        str(len(report.entries_revised)),
        str(report.entries_removed),
        str(len(report.mismatched_entries)),
    )
    table.add_row(
        "knowledge",
        report.knowledge_state,
        str(report.documents_written),
        "-",
        str(report.documents_removed),
        str(len(report.mismatched_documents)),
    )
    console.print(table)
    if report.histories_restored or report.histories_kept:
        kept = f"; {report.histories_kept} kept their own" if report.histories_kept else ""
        console.print(f"document histories: {report.histories_restored} restored from the archive{kept}")
    if report.ok:
        console.print("verified: every item of the archive matches the stores")
    else:
        differ = report.mismatched_entries + report.mismatched_documents
        console.print(f"[bold red]restore differs[/] for {len(differ)} item(s): " + ", ".join(differ[:10]))


@click.command()
@project_option
@click.option(
    "--input",
    "-i",
    "archive",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Archive written by `memctl backup`.",
)
@click.option(
    "--merge",
    is_flag=True,
    help="Add to stores that hold other data; an entry both hold gets the archive's version as a new "
    "revision on top of its own history (a document both hold takes the archive's text).",
)
@click.option(
    "--replace", is_flag=True, help="Make the stores hold exactly the archive (removes other items)."
)
@click.option(
    "--scope",
    help="Re-home the archive's documents under this scope (default: keep theirs; a project "
    "without a pinned scope adopts it).",
)
@json_option
def restore(
    project: Path | None, archive: Path, merge: bool, replace: bool, scope: str | None, as_json: bool
) -> None:
    """Restore a backup into the project's entry and knowledge stores.

    The whole archive is read and checked first (manifest, counts, sha256 checksums,
    every record), and both stores are compared with it; a damaged archive, or a store
    that already holds different data without --merge or --replace, stops the command
    before anything is written. Afterwards every item is compared again; any
    difference fails the command (exit 4). Restoring into stores that already match
    the archive writes nothing. Document ids and timestamps are the target's own.

    The archive carries the project's scope (its name in knowledge memory): a project
    with no scope of its own adopts it, so a restore into another directory keeps every
    document findable; --scope re-homes the documents under another scope and pins it.

    Documents' version histories come back too (archives from before they were kept have
    none): a document with no history in the target takes the archive's, one with a
    history of its own keeps it.

    \b
    Exit codes: 0 restored and verified, 2 bad options, 7 unusable archive,
    4 target holds different data (or differs after the restore), 5 a store is down.

    \b
    Example:
      memctl restore --input app.memctl.tar.gz
      memctl restore --project ~/src/app -i app.tar.gz --replace --json
    """
    if merge and replace:
        raise ConfigError("--merge and --replace exclude each other; choose one")
    if scope is not None and not scope.strip():
        raise ConfigError("--scope cannot be empty")
    mode: RestoreMode = "merge" if merge else "replace" if replace else "refuse"
    settings = load_settings(project=current_project(project))
    report = _restore_into(settings, archive, mode, scope, not as_json)
    warning = _scope_warning(settings, report)
    result: dict[str, Any] = {
        "ok": report.ok,
        "input": str(archive),
        "mode": mode,
        "scope": report.scope,
        "warnings": [warning] if warning else [],
        "changed": bool(
            report.entries_written
            or report.entries_removed
            or report.documents_written
            or report.documents_removed
        ),
        "entries": {
            "archived": report.manifest.entry_count,
            "target_before": report.entries_state,
            "written": report.entries_written,
            "removed": report.entries_removed,
            "revised": report.entries_revised,
            "mismatched": report.mismatched_entries,
        },
        "knowledge": {
            "archived": report.manifest.document_count,
            "target_before": report.knowledge_state,
            "written": report.documents_written,
            "removed": report.documents_removed,
            "mismatched": report.mismatched_documents,
            "histories_restored": report.histories_restored,
            "histories_kept": report.histories_kept,
        },
    }
    if as_json:
        emit_json(result)
    else:
        _render(report)
        if warning:
            console.print(f"warning: {warning}", markup=False)
    if not report.ok:
        raise SystemExit(ExitStatus.CONFLICT)
