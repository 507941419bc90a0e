"""`memctl up`: provision memory for one project or every project of an inventory."""

from __future__ import annotations

from pathlib import Path

import click

from memory_bridge import load_settings
from memory_bridge.stores import entry_store_scheme

from ..provision._clients import ALL_CLIENTS
from ..provision._inventory import Inventory, Project
from ..provision._project import project_to_provision
from ..provision._provision import project_for
from ..provision._record import recorded_project
from ._output import json_option
from ._runs import chosen_inventory, limit_option, run_and_report, target_options


@click.command()
@target_options
@click.option(
    "--mode",
    type=click.Choice(["embedded", "stack"]),
    default="embedded",
    show_default=True,
    help="With --project: embedded SQLite, or a Docker stack (Valkey, Dify, bridge).",
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
@click.option(
    "--hooks/--no-hooks",
    default=True,
    show_default=True,
    help="Wire the capture hooks (memctl hook <event>) into Claude Code and .agents/.",
)
@click.option(
    "--schedule",
    type=click.Choice(["daily", "hourly", "off"]),
    help="Install the project's maintenance timer (memctl maintain --if-due), daily or hourly, or "
    "remove it (off); default: keep what the last up installed. In an inventory: each project's schedule.",
)
@limit_option
@json_option
def up(
    project: Path | None,
    inventory: Path | None,
    every: bool,
    check: bool,
    show_diff: bool,
    mode: str,
    clients: tuple[str, ...],
    codex_config: Path | None,
    hooks: bool,
    schedule: str | None,
    limit: tuple[str, ...],
    as_json: bool,
) -> None:
    """Provision memory for a project, or for every project of an inventory, with Ansible.

    Runs memctl's site playbook: for each project, a private .memory/ directory with a
    bridge token (mode 0600), the stores created and migrated, a real MCP round trip over
    stdio (the memctl/setup entry saved once and found by search), and the project's MCP
    clients registered by structural merge (.mcp.json, .claude/settings.json,
    .cursor/mcp.json, .vscode/mcp.json, .agents/, skills, the capture hooks, a
    .gitignore block): your own
    entries stay as they are, and a file memctl owns that you edited is reported and left
    alone. A second run changes nothing (changed=0). The inventory is checked before
    anything runs; --check --diff shows what a run would change.

    --schedule daily (or hourly) installs one timer for the project that runs
    `memctl maintain --if-due`: a systemd user timer when `systemctl --user` answers,
    else a line in your crontab tagged with the project (docs/maintenance.md); off
    removes it, and so does `memctl down`.

    Without --project, the project is the nearest directory at or above the current one
    that memctl provisioned (it holds .memory/), else the top of the git work tree, else
    the current directory.

    Exit codes: 2 bad inventory or settings, 3 nothing to provision, 6 a task failed.

    \b
    Example:
      memctl up
      memctl up --project ~/src/app --client claude --client cursor --json
      memctl up --schedule daily
      memctl up --inventory inventories/local/hosts.yml --check --diff
      memctl up --all           every project of `memctl projects list`
    """
    if schedule is not None and (inventory or every):
        raise click.UsageError("--schedule is for one project; in an inventory, set each project's schedule")
    target: Inventory | Project | None = chosen_inventory(project, inventory, every)
    if target is None:
        directory = project_to_provision(project)
        settings = load_settings(project=directory)  # bad settings stop here, before any change
        entry_store_scheme(settings.stores.entry_store)
        codex = str(codex_config.expanduser().absolute()) if codex_config else ""
        chosen = clients or tuple(sorted(ALL_CLIENTS))
        recorded = recorded_project(directory) if schedule is None else None
        schedule = schedule or (recorded.schedule if recorded is not None else None)
        target = project_for(
            directory, mode=mode, clients=chosen, codex_config=codex, hooks=hooks, schedule=schedule
        )
    run_and_report(
        "memctl up", "site", target, check=check, show_diff=show_diff, as_json=as_json, limit=limit
    )
