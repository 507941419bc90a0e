"""What the playbook commands (up, down, upgrade, migrate) share: choosing projects, running, reporting."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.markup import escape
from rich.status import Status
from rich.table import Table

from memory_bridge import NotFound

from ..provision._inventory import Inventory, Project, load_inventory
from ..provision._playbook import Event
from ..provision._provision import changes, container_changes, project_for, provision, summarise
from ..provision._record import recorded_project
from ..provision._registry import read_registry, registry_path
from ._options import project_option
from ._output import console, emit_json

F = TypeVar("F", bound=Callable[..., Any])


def target_options(function: F) -> F:
    """--project, --inventory and --all: which projects a run is about."""
    for option in reversed(
        [
            project_option,
            click.option(
                "--inventory",
                type=click.Path(path_type=Path),
                help="Every project of this inventory instead (see docs/provisioning.md).",
            ),
            click.option(
                "--all",
                "every",
                is_flag=True,
                help="Every project registered with `memctl projects add`.",
            ),
            click.option("--check", is_flag=True, help="Change nothing; report what a run would do."),
            click.option("--diff", "show_diff", is_flag=True, help="Show each change as a diff."),
        ]
    ):
        function = option(function)
    return function


limit_option = click.option(
    "--limit",
    multiple=True,
    metavar="MACHINE",
    help="With --inventory: only this machine and its projects (repeatable).",
)


def chosen_inventory(project: Path | None, inventory: Path | None, every: bool) -> Inventory | None:
    """The inventory named by --inventory or --all; None when the run is about one directory."""
    if sum(bool(x) for x in (project, inventory, every)) > 1:
        raise click.UsageError("give one of --project, --inventory and --all")
    if every:
        inventory = registry_path()
        if read_registry(inventory) is None:
            raise NotFound(f"no projects in {inventory}; add one with: memctl projects add DIR")
    return load_inventory(inventory) if inventory is not None else None


def registered_project(directory: Path) -> Project:
    """The project of this directory as `memctl up` last provisioned it (its own record), else
    as the registry lists it, else an embedded project (mode, slug, clients, port)."""
    recorded = recorded_project(directory)
    if recorded is not None:
        return recorded
    registry = read_registry(registry_path()) if registry_path().exists() else None
    for _, project in registry.projects if registry is not None else []:
        if Path(project.workspace).expanduser().absolute() == directory:
            return project
    return project_for(directory)


class Progress:
    """A one-line progress display fed by the playbook's events (only on a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self._status: Status | None = console.status("starting ansible-playbook") if enabled else None
        self._counts = {"ok": 0, "changed": 0, "failed": 0}
        self._task = ""

    def __enter__(self) -> Progress:
        if self._status is not None:
            self._status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.stop()

    def __call__(self, event: Event) -> None:
        if event["event"] == "task":
            self._task = event["name"]
        elif event["event"] == "result":
            status = "changed" if event["changed"] else event["status"]
            if status in self._counts:
                self._counts[status] += 1
        if self._status is not None:
            counts = " ".join(f"{k}={v}" for k, v in self._counts.items())
            self._status.update(f"{self._task}  [dim]{counts}[/]")


def run_and_report(
    title: str,
    playbook: str,
    target: Inventory | Project,
    *,
    check: bool,
    show_diff: bool,
    as_json: bool,
    extra_vars: dict[str, Any] | None = None,
    limit: tuple[str, ...] = (),
) -> None:
    """Run the playbook over the target and print the per-project summary (or JSON)."""
    if limit and not isinstance(target, Inventory):
        raise click.UsageError("--limit needs --inventory (or --all)")
    with Progress(enabled=not as_json and console.is_terminal) as progress:
        loaded, run = provision(
            target,
            playbook=playbook,
            check=check,
            diff=show_diff,
            extra_vars=extra_vars,
            on_event=progress,
            limit=limit,
        )
    projects = summarise(loaded, run)
    if not show_diff:
        for record in projects:
            del record["diffs"]
    result = {
        "ok": True,
        "check": check,
        "inventory": str(target.path) if isinstance(target, Inventory) else None,
        "changed": changes(run.results),
        "projects": projects,
        "containers": container_changes(run),
        "log": str(run.log),
    }
    if as_json:
        emit_json(result)
    else:
        _print(title + (" --check" if check else ""), result)


def _smoke_text(record: dict[str, Any]) -> str:
    smoke = record.get("smoke")
    if not smoke:
        return "-"
    return f"{smoke['found']} {smoke['saved']}, {smoke['tools']} tools, {smoke['round_trip_ms']} ms"


def _print(title: str, result: dict[str, Any]) -> None:
    table = Table(title=title, title_justify="left")
    for column in ("project", "mode", "workspace", "changed", "MCP round trip"):
        table.add_column(column)
    for record in result["projects"]:
        changed = str(record["changed"])
        table.add_row(record["slug"], record["mode"], record["workspace"], changed, _smoke_text(record))
    console.print(table)
    for record in result["projects"]:
        for file in record["files"]:
            if file["action"] != "unchanged":
                style = "yellow" if file["action"].endswith("-left-alone") else "green"
                console.print(f"  [{style}]{file['action']:>18}[/] {escape(file['path'])}")
        if "schedule" in record:
            console.print(f"  maintenance timer: {record['schedule']}")
        for warning in record["warnings"]:
            console.print(f"  [yellow]warning:[/] {escape(warning)}")
        for diff in record.get("diffs", []):
            console.print(diff["diff"], markup=False, highlight=False)
    for change in result["containers"]:
        action, name = change["action"], change["container"]
        console.print(f"  [green]{action:>18}[/] container {name} ({change['host']})")
    console.print(f"changed={result['changed']}  [dim](log: {escape(result['log'])})[/]")
