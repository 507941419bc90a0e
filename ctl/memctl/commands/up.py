"""`memctl up`: provision memory for one project or every project of an inventory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.status import Status
from rich.table import Table

from memory_bridge import MemctlError, NotFound, load_settings
from memory_bridge.stores._url import entry_store_scheme

from .._clients import ALL_CLIENTS
from .._inventory import Inventory, Project, load_inventory
from .._output import console, emit_json, fail, json_option
from .._playbook import Event
from .._provision import project_for, provision, summarise
from .._registry import read_registry, registry_path


class _Progress:
    """A one-line progress display fed by the playbook's events (only on a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self._status: Status | None = console.status("starting ansible-playbook") if enabled else None
        self._counts = {"ok": 0, "changed": 0, "failed": 0}
        self._task = ""

    def __enter__(self) -> _Progress:
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


@click.command()
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project directory (default: current). Created if missing.",
)
@click.option(
    "--inventory",
    type=click.Path(path_type=Path),
    help="Provision every project of this inventory instead (see inventories/).",
)
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Provision every project registered with `memctl projects add`.",
)
@click.option(
    "--mode",
    type=click.Choice(["embedded", "stack"]),
    default="embedded",
    show_default=True,
    help="How the project's memory runs: embedded SQLite, or a Docker stack (Valkey, Dify, bridge).",
)
@click.option(
    "--client",
    "clients",
    multiple=True,
    type=click.Choice(sorted(ALL_CLIENTS)),
    help="Client configuration to write (repeatable; default: all of agents, claude, cursor, vscode).",
)
@click.option(
    "--codex-config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also register the server in this Codex config.toml (e.g. ~/.codex/config.toml).",
)
@click.option("--check", is_flag=True, help="Change nothing; report what a run would do (ansible --check).")
@click.option("--diff", "show_diff", is_flag=True, help="Show each change as a diff (ansible --diff).")
@json_option
def up(
    project: Path | None,
    inventory: Path | None,
    every: bool,
    mode: str,
    clients: tuple[str, ...],
    codex_config: Path | None,
    check: bool,
    show_diff: bool,
    as_json: bool,
) -> None:
    """Provision memory for a project, or for every project of an inventory, with Ansible.

    Runs memctl's site playbook: for each project, a private .memory/ directory with a
    bridge token (mode 0600), the stores created and migrated, a real MCP round trip over
    stdio (the memctl/setup entry saved once and found by search), and the project's MCP
    clients registered by structural merge (.mcp.json, .claude/settings.json,
    .cursor/mcp.json, .vscode/mcp.json, .agents/, skills, a .gitignore block): your own
    entries stay as they are, and a file memctl owns that you edited is reported and left
    alone. A second run changes nothing (changed=0). The inventory is checked before
    anything runs; --check --diff shows what a run would change.

    \b
    Example:
      memctl up
      memctl up --project ~/src/app --client claude --client cursor --json
      memctl up --inventory inventories/local/hosts.yml --check --diff
      memctl up --all           every project of `memctl projects list`
    """
    if sum(bool(x) for x in (project, inventory, every)) > 1:
        raise click.UsageError("give one of --project, --inventory and --all")
    try:
        if every:
            inventory = registry_path()
            if read_registry(inventory) is None:
                raise NotFound(
                    f"no projects registered in {inventory}; add one with: memctl projects add DIR"
                )
        if inventory is not None:
            target: Inventory | Project = load_inventory(inventory)
        else:
            directory = (project or Path.cwd()).expanduser().absolute()
            settings = load_settings(project=directory)  # bad settings stop here, before any change
            entry_store_scheme(settings.entry_store)
            if not check:
                directory.mkdir(parents=True, exist_ok=True)
            codex = str(codex_config.expanduser().absolute()) if codex_config else ""
            target = project_for(
                directory, mode=mode, clients=clients or tuple(sorted(ALL_CLIENTS)), codex_config=codex
            )
        with _Progress(enabled=not as_json and console.is_terminal) as progress:
            loaded, run = provision(target, check=check, diff=show_diff, on_event=progress)
    except MemctlError as exc:
        fail(exc, as_json=as_json)
    projects = summarise(loaded, run)
    result = {
        "ok": True,
        "check": check,
        "inventory": str(inventory) if inventory else None,
        "changed": run.changed(),
        "projects": projects,
        "log": str(run.log),
    }
    if not show_diff:
        for record in projects:
            del record["diffs"]
    if as_json:
        emit_json(result)
        return
    _print(result)


def _smoke_text(record: dict[str, Any]) -> str:
    smoke = record.get("smoke")
    if not smoke:
        return "-"
    return f"{smoke['found']} {smoke['saved']}, {smoke['tools']} tools, {smoke['round_trip_ms']} ms"


def _print(result: dict[str, Any]) -> None:
    table = Table(title="memctl up" + (" --check" if result["check"] else ""), title_justify="left")
    for column in ("project", "mode", "workspace", "changed", "MCP round trip"):
        table.add_column(column)
    for record in result["projects"]:
        changed = str(record["changed"])
        table.add_row(record["slug"], record["mode"], record["workspace"], changed, _smoke_text(record))
    console.print(table)
    for record in result["projects"]:
        for file in record["files"]:
            if file["action"] != "unchanged":
                style = "yellow" if file["action"] == "edited-left-alone" else "green"
                console.print(f"  [{style}]{file['action']:>18}[/] {file['path']}")
        for warning in record["warnings"]:
            console.print(f"  [yellow]warning:[/] {warning}")
        for diff in record.get("diffs", []):
            console.print(diff["diff"], markup=False, highlight=False)
    console.print(f"changed={result['changed']}  [dim](log: {result['log']})[/]")
