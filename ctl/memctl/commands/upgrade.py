"""`memctl upgrade`: move projects to the versions they pin, one service at a time."""

from __future__ import annotations

from pathlib import Path

import click

from ..provision._inventory import Inventory, Project
from ..provision._project import current_project
from ._output import json_option
from ._runs import chosen_inventory, limit_option, registered_project, run_and_report, target_options


@click.command()
@target_options
@limit_option
@json_option
def upgrade(
    project: Path | None,
    inventory: Path | None,
    every: bool,
    check: bool,
    show_diff: bool,
    limit: tuple[str, ...],
    as_json: bool,
) -> None:
    """Upgrade a project, or every project of an inventory, to the versions it pins.

    Runs memctl's upgrade playbook. The versions come from the inventory (valkey_image,
    bridge_image, dify_version), else memctl's defaults: set the new ones there, then
    run this. Machines reached over SSH get the control node's memctl first, one at a
    time, each machine's projects checked healthy with it (as memctl status does) before
    the next starts; the first that fails stops the run, naming the machines checked and
    those not touched. Then every machine is checked (a dify_version memctl has not been
    tested with stops the run before any service changes); then, one machine at a time, Valkey is
    replaced if its image changed and must answer PING, Dify moves to its release and the
    bridge image is rebuilt if its sources changed; then the bridge containers are
    replaced one at a time, each answering /health before the next moves; last, every
    project's settings and client configs are re-rendered and its migrations applied.
    Upgrading to the versions already running changes nothing (changed=0). --json lists
    the containers replaced, in order.

    With --project, the directory's entry in `memctl projects` gives its mode (embedded
    when it has none).

    Exit codes: 2 bad inventory or settings, 3 nothing to upgrade, 6 a check or task failed.

    \b
    Example:
      memctl upgrade --inventory inventories/local/hosts.yml --check --diff
      memctl upgrade --all --json
      memctl upgrade --project ~/src/app
    """
    target: Inventory | Project | None = chosen_inventory(project, inventory, every)
    if target is None:
        target = registered_project(current_project(project))
    run_and_report(
        "memctl upgrade", "upgrade", target, check=check, show_diff=show_diff, as_json=as_json, limit=limit
    )
