"""`memctl outbox list|retry|drop`: the knowledge writes that wait for Dify, and the dead ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click
from rich.text import Text

from memory_bridge import NotFound
from memory_bridge.stores import dify_outbox_path
from memory_bridge.stores.dify import Outbox

from .._timefmt import iso_time
from ..provision._project import provisioned_settings
from ._options import project_option
from ._output import console, emit_json, json_option
from ._tables import Column, fitted_table


@click.group()
def outbox() -> None:
    """Inspect and act on the writes that wait for Dify (a Dify knowledge store only)."""


def _open(project: Path | None) -> Outbox:
    settings = provisioned_settings(project)
    path = dify_outbox_path(settings)
    if not path.is_file():
        raise NotFound(f"{settings.project} has no Dify outbox ({path}): nothing was ever queued")
    return Outbox(path)


def _run(project: Path | None, action: Any) -> Any:
    box = _open(project)
    try:
        return anyio.run(action, box)
    finally:
        box.close()


@outbox.command("list")
@project_option
@json_option
def list_command(project: Path | None, as_json: bool) -> None:
    """List queued writes, oldest first: pending ones and dead-lettered ones with their error.

    \b
    Example:
      memctl outbox list
      memctl outbox list --json
    """

    async def entries(box: Outbox) -> list[dict[str, Any]]:
        return [entry.summary() for entry in await box.entries()]

    rows = [{**row, "created_at": iso_time(row["created_at"])} for row in _run(project, entries)]
    if as_json:
        emit_json({"ok": True, "entries": rows})
        return
    if not rows:
        console.print("no writes wait for Dify")
        return
    columns = (
        Column("seq", whole=True),
        Column("operation", drop=2),
        Column("document"),
        Column("queued at", whole=True, drop=1),
        Column("tries", whole=True),
        Column("state"),
        Column("last error"),
    )
    cells = [
        (
            str(row["seq"]),
            row["operation"],
            Text(row["document"]),
            row["created_at"],
            str(row["attempts"]),
            "[red]dead-lettered[/]" if row["dead_lettered"] else "pending",
            Text(row["last_error"]),
        )
        for row in rows
    ]
    console.print(fitted_table("writes waiting for Dify", columns, cells))


@outbox.command("retry")
@project_option
@click.argument("seqs", nargs=-1, type=int)
@json_option
def retry_command(project: Path | None, seqs: tuple[int, ...], as_json: bool) -> None:
    """Make dead-lettered writes (all, or the SEQS given) pending again.

    The bridge replays them on its next pass, with a fresh number of tries.

    \b
    Example:
      memctl outbox retry
      memctl outbox retry 12 14
    """

    async def retry(box: Outbox) -> int:
        return await box.retry(list(seqs) if seqs else None)

    count = _run(project, retry)
    if as_json:
        emit_json({"ok": True, "retried": count})
    else:
        console.print(f"{count} write(s) pending again")


@outbox.command("drop")
@project_option
@click.argument("seqs", nargs=-1, type=int, required=True)
@json_option
def drop_command(project: Path | None, seqs: tuple[int, ...], as_json: bool) -> None:
    """Delete the queued writes SEQS (see `memctl outbox list`); they are never sent.

    \b
    Example:
      memctl outbox drop 12
    """

    async def drop(box: Outbox) -> int:
        return await box.drop(list(seqs))

    count = _run(project, drop)
    if as_json:
        emit_json({"ok": True, "dropped": count})
    else:
        console.print(f"{count} write(s) dropped")
