"""`memctl history|rollback`: every version of an entry or document, deleted ones included,
and bringing one back.

Both take a reference as `show` does (`entry:ID`, `doc:ID`, `SLOT/NAME`, a bare id or name)
and also find items that were deleted. A roll-back is itself a new version.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import click
from rich.text import Text

from memory_bridge import ConfigError
from memory_bridge.core import (
    DocumentItemVersion,
    EntryItemVersion,
    HistoryTarget,
    ItemHistory,
    ItemRollback,
    history_of,
    history_target,
    rollback_to,
)

from ..operations._lookup import item_stores
from ..provision._project import provisioned_settings
from ._options import project_option
from ._output import console, emit_json, json_option


def _describe(version: EntryItemVersion | DocumentItemVersion) -> str:
    cause = restored = ""
    if isinstance(version, DocumentItemVersion):  # an entry's versions record no cause
        cause = f" by {version.cause}" if version.cause else ""
        restored = f" (from version {version.restored_from})" if version.restored_from else ""
    return f"version {version.version}: {version.change}{restored} at {version.at}{cause}"


@click.command()
@click.argument("ref", metavar="REF")
@click.option(
    "--limit",
    type=click.IntRange(1, 1000),
    default=20,
    show_default=True,
    help="How many versions, newest first.",
)
@project_option
@json_option
def history(ref: str, limit: int, project: Path | None, as_json: bool) -> None:
    """Every version of an entry or a document, newest first, deleted items included.

    REF is `entry:ID`, `doc:ID`, `SLOT/NAME`, or a bare entry id, document id or name, as
    for `show`. Each version is shown as a diff from the one before, with when and what
    changed it. `--json` lists each version's whole content (`body` for entries, `text`
    for documents) with an integer `version`: 1 for the first, one more per change.

    \b
    Example:
      memctl history knowledge/deploy.md
      memctl history entry:release/process --limit 3 --json
    """
    settings = provisioned_settings(project)

    async def load() -> ItemHistory:
        async with item_stores(settings) as stores:
            return await history_of(stores, await history_target(stores, ref), limit=limit)

    found = anyio.run(load)
    if as_json:
        emit_json(found.model_dump())
        return
    state = "deleted" if found.deleted else "live"
    console.print(Text(f"{found.ref} ({found.kind}, {state}, newest version {found.latest_version})"))
    for version in found.versions:
        console.print(Text(_describe(version), style="bold"))
        console.print(Text(version.diff or "(no change in content)"))
        console.print()


@click.command()
@click.argument("ref", metavar="REF")
@click.option("--to", "version", type=click.IntRange(1), required=True, help="The version to bring back.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@project_option
@json_option
def rollback(ref: str, version: int, yes: bool, project: Path | None, as_json: bool) -> None:
    """Bring an entry or a document back to one of its versions, after confirmation.

    REF is read as for `history`; a deleted item is brought back. The roll-back is a new
    version, so it can be undone the same way. Nothing is written if the item changed
    after the confirmation was asked. Without a terminal to ask on (or with --json),
    --yes is required.

    \b
    Example:
      memctl rollback knowledge/deploy.md --to 3
      memctl rollback entry:release/process --to 1 --yes --json
    """
    settings = provisioned_settings(project)

    async def look() -> tuple[HistoryTarget, ItemHistory]:
        async with item_stores(settings) as stores:
            target = await history_target(stores, ref)
            return target, await history_of(stores, target, limit=1)

    target, newest = anyio.run(look)
    if not yes:
        if as_json or not sys.stdin.isatty():
            raise ConfigError(
                f"not confirmed: pass --yes to roll {target.ref} back to version {version} without a "
                "terminal to ask on"
            )
        state = "deleted" if newest.deleted else f"at version {newest.latest_version}"
        if not click.confirm(f"roll {target.ref} ({state}) back to version {version}?", default=False):
            raise ConfigError(f"not confirmed: {target.ref} was left as it is")

    async def apply() -> ItemRollback:
        async with item_stores(settings) as stores:
            return await rollback_to(stores, target, version, expected_version=newest.latest_version)

    done = anyio.run(apply)
    if as_json:
        emit_json(done.model_dump())
        return
    back = " (it was deleted and is back)" if done.undeleted else ""
    console.print(Text(f"{done.ref}: version {version} restored as version {done.version}{back}"))
