"""`memctl migrate`: bring every store of a project to the current schema, safely re-runnable."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import anyio
import click
from rich.table import Table

from memory_bridge import load_settings
from memory_bridge.maintenance import MigrationStep, migrate, plan_migrations

from .._errors import ExitStatus
from ..provision._inventory import Inventory
from ..provision._project import current_project
from ._options import project_option
from ._output import console, emit_json, json_option
from ._progress import progress_bars
from ._runs import chosen_inventory, run_and_report


async def _run(
    project: Path | None, dry_run: bool, show_progress: bool
) -> tuple[list[MigrationStep], list[MigrationStep]]:
    settings = load_settings(project=current_project(project))
    if dry_run:
        return [], [s for s in await plan_migrations(settings) if s.pending]
    with progress_bars(enabled=show_progress) as progress:
        return await migrate(settings, progress=progress)


def _table(title: str, steps: list[MigrationStep]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("step", "store", "detail"):
        table.add_column(column, overflow="fold")
    for step in steps:
        table.add_row(step.name, step.store, step.detail)
    return table


@click.command("migrate")
@project_option
@click.option(
    "--inventory",
    type=click.Path(path_type=Path),
    help="Every project of this inventory instead, through Ansible (playbooks/migrate.yml).",
)
@click.option("--all", "every", is_flag=True, help="Every project registered with `memctl projects add`.")
@click.option("--dry-run", is_flag=True, help="Only list the pending steps; change nothing.")
@json_option
def migrate_command(
    project: Path | None, inventory: Path | None, every: bool, dry_run: bool, as_json: bool
) -> None:
    """Apply pending migrations to the project's stores, in order, and record them.

    Steps: the embedded stores' schema versions, memory-mcp entries in Valkey that
    lack a revision counter, the metadata fields memctl needs on Dify datasets,
    re-embedding after an embedding-model change (with progress), and the vector index of
    an embedded knowledge store above search_ann_threshold, rebuilt when it is missing,
    damaged or of another model. Each step commits
    in small units and checks the data itself, so an interrupted run completes on the
    next one and a second run changes nothing. Applied steps are appended to
    .memory/migrations.jsonl. --json prints `applied` and `pending` (and `changed`).

    With --inventory or --all, the migrate playbook runs this in every project's
    workspace, on its machine (--dry-run becomes Ansible's check mode), and prints the
    per-project summary of `memctl up`: `changed` counts the projects' migrated stores.

    \b
    Exit codes: 0 nothing left pending, 1 a step is still pending after the run,
    2 bad inventory or settings, 6 a project's migration failed (--inventory, --all),
    5 a store is unreachable.

    \b
    Example:
      memctl migrate --dry-run
      memctl migrate --project ~/src/app --json
      memctl migrate --all --dry-run
    """
    target: Inventory | None = chosen_inventory(project, inventory, every)
    if target is not None:
        run_and_report("memctl migrate", "migrate", target, check=dry_run, show_diff=False, as_json=as_json)
        return
    applied, pending = anyio.run(_run, project, dry_run, not as_json)
    result: dict[str, Any] = {
        "ok": dry_run or not pending,
        "dry_run": dry_run,
        "changed": bool(pending) if dry_run else bool(applied),
        "applied": [asdict(s) for s in applied],
        "pending": [asdict(s) for s in pending],
    }
    if as_json:
        emit_json(result)
    else:
        if applied:
            console.print(_table("applied", applied))
        if pending:
            console.print(_table("pending" if dry_run else "still pending", pending))
        if not applied and not pending:
            console.print("every store is current; nothing to do")
    if not result["ok"]:
        raise SystemExit(ExitStatus.FAILED)
