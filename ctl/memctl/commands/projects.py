"""`memctl projects`: the projects on this machine that `memctl up --all` provisions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.text import Text

from ..provision._inventory import Inventory
from ..provision._registry import add_project, read_registry, registry_path, remove_project
from ._output import console, emit_json, json_option
from ._project_options import build_project, project_options
from ._tables import Column, fitted_table


def _records(inventory: Inventory | None) -> list[dict[str, Any]]:
    if inventory is None:
        return []
    records = []
    for machine, project in inventory.projects:
        workspace = Path(project.workspace).expanduser()
        provisioned = (workspace / ".memory" / "bridge.token").exists() if machine.local else None
        records.append(
            {**project.model_dump(mode="json"), "machine": machine.name, "provisioned": provisioned}
        )
    return records


@click.group()
def projects() -> None:
    """The projects on this machine that `memctl up --all` provisions.

    They are kept in an ordinary inventory ($MEMCTL_INVENTORY, default
    ~/.config/memctl/inventory.yml), so `memctl up --inventory` runs it too.

    \b
    Example:
      memctl projects add ~/src/app --client claude
      memctl projects list
      memctl up --all
    """


@projects.command("list")
@json_option
def list_projects(as_json: bool) -> None:
    """List the registered projects and whether each is provisioned.

    \b
    Example:
      memctl projects list --json
    """
    records = _records(read_registry())
    if as_json:
        emit_json({"ok": True, "inventory": str(registry_path()), "projects": records})
        return
    if not records:
        console.print(f"no projects yet in {registry_path()}; add one with: memctl projects add DIR")
        return
    columns = (
        Column("slug"),
        Column("mode", whole=True),
        Column("workspace"),
        Column("clients", drop=1),
        Column("provisioned"),
    )
    rows = []
    for record in records:
        provisioned = {True: "yes", False: "[yellow]no[/] (memctl up --all)", None: "?"}[
            record["provisioned"]
        ]
        clients = Text(", ".join(record["clients"]))
        rows.append((Text(record["slug"]), record["mode"], Text(record["workspace"]), clients, provisioned))
    console.print(fitted_table(f"projects ({registry_path()})", columns, rows))


@projects.command("add")
@click.argument("directory", type=click.Path(file_okay=False, exists=True, path_type=Path))
@project_options
@click.option("--bridge-port", type=click.IntRange(1024, 65535), help="HTTP port of the project's bridge.")
@json_option
def add(
    directory: Path,
    slug: str | None,
    mode: str,
    clients: tuple[str, ...],
    bridge_port: int | None,
    as_json: bool,
) -> None:
    """Register a project directory (nothing is provisioned until `memctl up --all`).

    \b
    Example:
      memctl projects add ~/src/app --mode stack --bridge-port 3107
    """
    workspace = directory.expanduser().absolute()
    project = build_project(workspace, slug, clients, mode=mode, bridge_port=bridge_port)
    add_project(project)
    if as_json:
        emit_json({"ok": True, "inventory": str(registry_path()), "project": project.model_dump(mode="json")})
        return
    console.print(
        f"added {project.slug} ({workspace}) to {registry_path()}; provision it with: memctl up --all"
    )


@projects.command("remove")
@click.argument("slug")
@json_option
def remove(slug: str, as_json: bool) -> None:
    """Unregister a project. Its memory and client configs stay; `memctl down` removes those.

    \b
    Example:
      memctl projects remove app
    """
    removed = remove_project(slug)
    if as_json:
        emit_json({"ok": True, "removed": removed})
        return
    console.print(f"removed {slug} from {registry_path()}; its .memory/ in {removed['workspace']} is kept")
