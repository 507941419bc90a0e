"""Provision projects: build or load the inventory, run `site.yml`, summarise per project."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from memory_bridge import ConfigError

from .._errors import PlaybookFailed
from ._inventory import Inventory, Machine, Project, load_inventory, one_project_inventory
from ._playbook import Event, PlaybookRun, run_playbook
from ._wheel import control_wheel

__all__ = [
    "changes",
    "container_changes",
    "failed_projects",
    "limited",
    "project_for",
    "provision",
    "slug_for",
    "summarise",
]

_FILE_CHANGES = frozenset({"created", "updated", "removed"})


def slug_for(directory: Path) -> str:
    """A project slug from a directory name: lower case letters, digits, '-' and '_'."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", directory.name.lower()).strip("-_")
    return slug[:63] or "project"


def project_for(directory: Path, **fields: Any) -> Project:
    """The project of one directory, with the options given on the command line."""
    return Project(slug=slug_for(directory), workspace=str(directory), **fields)


def provision(
    inventory: Inventory | Project,
    *,
    playbook: str = "site",
    check: bool,
    diff: bool,
    extra_vars: dict[str, Any] | None = None,
    on_event: Callable[[Event], None] | None = None,
    limit: tuple[str, ...] = (),
) -> tuple[Inventory, PlaybookRun]:
    """Run a playbook over an inventory (or over one project on this machine).

    Machines reached over SSH get this memctl's wheel (site and upgrade install it there);
    `limit` keeps the run to those machines. When a machine fails, `PlaybookFailed` says which
    projects failed and why, and which finished."""
    options: dict[str, Any] = {
        "check": check,
        "diff": diff,
        "extra_vars": dict(extra_vars or {}),
        "on_event": on_event,
    }
    if isinstance(inventory, Inventory):
        inventory = limited(inventory, limit)
        options["extra_vars"]["memctl_checked_projects"] = inventory.checked_projects()
        if playbook in _INSTALLING and not all(machine.local for machine in inventory.machines):
            options["extra_vars"]["memctl_control_wheel"] = str(control_wheel())
        workspaces = [_identity(p.workspace) for m, p in inventory.projects if m.local]
        try:
            run = run_playbook(playbook, inventory.path, workspaces=workspaces, limit=limit, **options)
        except PlaybookFailed as failed:
            raise PlaybookFailed(_per_project(inventory, failed, playbook), failed.run) from failed
        return inventory, run
    with tempfile.TemporaryDirectory(prefix="memctl-") as scratch:
        loaded = load_inventory(one_project_inventory(inventory, Path(scratch)))
        options["extra_vars"]["memctl_checked_projects"] = loaded.checked_projects()
        run = run_playbook(playbook, loaded.path, workspaces=[_identity(inventory.workspace)], **options)
    return loaded, run


_PENDING = "memctl_install : Leave the projects out of a --check run on a machine without memctl yet"
"""The task that marks a machine whose projects a --check run leaves out (memctl not there)."""

_INSTALLING = frozenset({"site", "upgrade"})
"""The playbooks that install memctl on the machines reached over SSH (memctl_install)."""


def limited(inventory: Inventory, limit: tuple[str, ...]) -> Inventory:
    """The inventory with only the named machines; `ConfigError` naming one it does not have."""
    if not limit:
        return inventory
    names = {machine.name for machine in inventory.machines}
    unknown = [name for name in limit if name not in names]
    if unknown:
        raise ConfigError(
            f"--limit: {', '.join(unknown)} is not a machine of {inventory.path} "
            f"(its machines: {', '.join(sorted(names))})"
        )
    return replace(inventory, machines=tuple(m for m in inventory.machines if m.name in limit))


def failed_projects(inventory: Inventory, run: PlaybookRun) -> dict[str, str]:
    """Each project that failed, and why: its own task's failure, else its machine's (a machine
    that was unreachable or failed to install memctl fails all its projects, and only them)."""
    first: dict[str, str] = {}
    for result in run.failures:
        detail = result.get("msg") or result.get("stderr") or result["status"]
        first.setdefault(result["host"], f"{result['status']} at {result['task']}: {detail}")
    failed: dict[str, str] = {}
    for machine, project in inventory.projects:
        if project.slug in first:
            failed[project.slug] = first[project.slug]
        elif machine.name in first:
            failed[project.slug] = f"{machine.name} {first[machine.name]}"
    return failed


def _per_project(inventory: Inventory, failed: PlaybookFailed, playbook: str) -> str:
    """Which projects failed and why, which finished, and which the run never reached; for a
    rolling upgrade, which machines were upgraded before it stopped and which it never touched."""
    which = failed_projects(inventory, failed.run)
    if not which:
        return str(failed)
    lines = [f"{len(which)} of {len(inventory.projects)} projects failed:"]
    lines += [f"  {slug}: {reason}" for slug, reason in which.items()]
    if playbook == "upgrade":
        lines += _roll(inventory, failed.run, which)
    else:
        rest = [p.slug for _, p in inventory.projects if p.slug not in which]
        finished = [slug for slug in rest if slug in failed.run.recap]
        lines.append(f"finished: {', '.join(finished) or 'none'}")
        if len(finished) < len(rest):
            lines.append(f"not run: {', '.join(slug for slug in rest if slug not in finished)}")
    lines.append(f"full log: {failed.run.log}")
    return "\n".join(lines)


def _roll(inventory: Inventory, run: PlaybookRun, failed: dict[str, str]) -> list[str]:
    """Where a stopped upgrade left each machine: upgraded (every project re-rendered and
    migrated), memctl installed and checked but its services and settings not moved yet
    (the run stopped before its last plays), or never touched; each with its projects."""

    def named(machines: list[Machine]) -> str:
        slugs = [", ".join(p.slug for p in m.projects) or "no projects" for m in machines]
        return ", ".join(f"{m.name} ({projects})" for m, projects in zip(machines, slugs, strict=True))

    rendered = {r["host"] for r in run.results if r["task"].startswith(_RENDERED) and r["status"] == "ok"}
    reached = [m for m in inventory.machines if m.name in run.recap]
    healthy = [m for m in reached if not any(p.slug in failed for p in m.projects)]
    upgraded = [m for m in healthy if all(p.slug in rendered for p in m.projects)]
    checked = [m for m in healthy if m not in upgraded]
    untouched = [m for m in inventory.machines if m.name not in run.recap]
    lines = [f"upgraded: {named(upgraded) or 'none'}"]
    if checked:
        lines.append(f"memctl installed and checked, services and settings not moved yet: {named(checked)}")
    if untouched:
        lines.append(f"not touched: {named(untouched)}")
    return lines


_RENDERED = "client_config : "
"""The tasks of upgrade's last play: a project with one of them ok was re-rendered and migrated."""


def _identity(workspace: str) -> str:
    """A workspace as run logs record it: absolute, with `~` expanded."""
    return str(Path(workspace).expanduser().absolute())


def changes(results: list[Event]) -> int:
    """What the results changed: each file a module of memctl's reports as changed (a task that
    rewrote seven client files counts seven), and each other changed task once."""
    total = 0
    for result in results:
        if result["status"] == "ok" and result["changed"]:
            files = (result.get("report") or {}).get("files") or []
            total += max(1, sum(file["action"] in _FILE_CHANGES for file in files))
    return total


def summarise(inventory: Inventory, run: PlaybookRun) -> list[dict[str, Any]]:
    """One record per project: recap counts and what memctl's own modules reported.

    `changed` counts every file created, updated or removed, and every other changed task;
    `schedule` says whether the maintenance timer changed, when the run looked at it."""
    pending = {r["host"] for r in run.results if r["task"] == _PENDING and r["status"] == "ok"}
    projects = []
    for machine, project in inventory.projects:
        results = [r for r in run.results if r["host"] == project.slug]
        record: dict[str, Any] = {
            "slug": project.slug,
            "machine": machine.name,
            "workspace": project.workspace,
            "mode": project.mode,
            **{key: run.recap.get(project.slug, {}).get(key, 0) for key in ("ok", "failed")},
            "changed": changes(results),
            "files": [],
            "warnings": [w for r in results for w in r["warnings"]],
            "diffs": [{"task": r["task"], "diff": r["diff"]} for r in results if r["diff"]],
        }
        if machine.name in pending:
            record["warnings"].append(
                f"memctl is not installed on {machine.name} yet: a run without --check installs it, "
                "then provisions this project (what that changes cannot be predicted before)"
            )
        timer = [r for r in results if r["task"].startswith("schedule : ") and r["status"] == "ok"]
        if timer:  # the project's maintenance timer: installed, updated or removed, or as it was
            record["schedule"] = "changed" if any(r["changed"] for r in timer) else "unchanged"
        for result in results:
            report = result.get("report") or {}
            record["files"] += report.get("files", [])
            for key in ("entry_store", "smoke", "stores", "proof"):
                if key in report:
                    record[key] = report[key]
        projects.append(record)
    return projects


def container_changes(run: PlaybookRun) -> list[dict[str, str]]:
    """The containers a run created, replaced, started or removed, in the order it did so."""
    changes = []
    for result in run.results:
        report = result.get("report") or {}
        if result["status"] == "ok" and report.get("name") and report.get("action", "none") != "none":
            changes.append({"host": result["host"], "container": report["name"], "action": report["action"]})
    return changes
