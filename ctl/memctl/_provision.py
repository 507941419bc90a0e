"""Provision projects: build or load the inventory, run `site.yml`, summarise per project."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._inventory import Inventory, Project, load_inventory, one_project_inventory
from ._playbook import Event, PlaybookRun, run_playbook

__all__ = [
    "changes",
    "container_changes",
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
) -> tuple[Inventory, PlaybookRun]:
    """Run a playbook over an inventory (or over one project on this machine)."""
    options: dict[str, Any] = {
        "check": check,
        "diff": diff,
        "extra_vars": extra_vars or {},
        "on_event": on_event,
    }
    if isinstance(inventory, Inventory):
        workspaces = [_identity(p.workspace) for m, p in inventory.projects if m.local]
        return inventory, run_playbook(playbook, inventory.path, workspaces=workspaces, **options)
    with tempfile.TemporaryDirectory(prefix="memctl-") as scratch:
        loaded = load_inventory(one_project_inventory(inventory, Path(scratch)))
        run = run_playbook(playbook, loaded.path, workspaces=[_identity(inventory.workspace)], **options)
    return loaded, run


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
