"""`memctl down`: take memctl back out of a project's clients (and, asked twice, its memory)."""

from __future__ import annotations

from pathlib import Path

import click

from ..provision._clients import ALL_CLIENTS
from ..provision._inventory import Inventory, Project
from ..provision._project import current_project
from ._output import json_option
from ._runs import chosen_inventory, registered_project, run_and_report, target_options


@click.command()
@target_options
@click.option(
    "--codex-config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also take the server out of this Codex config.toml.",
)
@click.option(
    "--purge",
    is_flag=True,
    help="Also delete each project's memory: its .memory/ and, in stack mode, its keys in Valkey.",
)
@click.option(
    "--stack",
    "stack_down",
    is_flag=True,
    help="Also stop the machine's shared stack (Valkey, Dify, the network) and every bridge on it, "
    "even while other stack projects use it.",
)
@click.option("--yes", is_flag=True, help="Do not ask before --purge deletes memory.")
@json_option
def down(
    project: Path | None,
    inventory: Path | None,
    every: bool,
    check: bool,
    show_diff: bool,
    codex_config: Path | None,
    purge: bool,
    stack_down: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Unregister memory from a project's MCP clients (or every project of an inventory).

    Runs memctl's teardown playbook: memctl's server entries and hooks leave the client
    configs (your own entries stay), and the skills and rules memctl wrote are deleted
    unless you edited them. A stack project's bridge container is stopped and removed;
    the machine's shared Valkey, Dify and network stop with the last stack project on it
    (or with --stack). The memory (.memory/, and a stack project's keys in Valkey) is
    kept, and so is memctl's .gitignore block, which keeps .memory/ out of git; --purge
    deletes the memory and takes the block out of .gitignore too, after asking (or with
    --yes).

    \b
    Example:
      memctl down --check --diff
      memctl down --project ~/src/app --purge --yes
      memctl down --all --stack
    """
    target: Inventory | Project | None = chosen_inventory(project, inventory, every)
    if target is None:
        directory = current_project(project)
        codex = str(codex_config.expanduser().absolute()) if codex_config else ""
        every_client = {"clients": tuple(sorted(ALL_CLIENTS)), "codex_config": codex}
        target = registered_project(directory).model_copy(update=every_client)
    if purge and not check and not yes:
        names = (
            ", ".join(p.workspace for _, p in target.projects)
            if isinstance(target, Inventory)
            else target.workspace
        )
        if as_json or not click.confirm(f"Delete all memory of {names}?"):
            raise click.UsageError("--purge deletes memory: confirm at the prompt, or pass --yes")
    extra = {"memctl_purge": purge, "memctl_stack_down": stack_down}
    run_and_report(
        "memctl down", "teardown", target, check=check, show_diff=show_diff, as_json=as_json, extra_vars=extra
    )
