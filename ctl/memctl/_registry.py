"""The user's own inventory of projects on this machine, kept by `memctl projects`.

It is an ordinary memctl inventory (`memctl up --all` runs it), at $MEMCTL_INVENTORY or
$XDG_CONFIG_HOME/memctl/inventory.yml. Each change is validated as a whole inventory and
written atomically, so a bad `projects add` leaves the file as it was.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from memory_bridge import ConfigError, NotFound, replacing

from ._inventory import Inventory, Project, load_inventory, local_inventory

__all__ = ["add_project", "read_registry", "registry_path", "remove_project"]

_HEADER = (
    "# memctl's projects on this machine, kept by `memctl projects add|remove`.\n"
    "# An Ansible inventory: `memctl up --all` provisions every project listed here.\n"
)


def registry_path() -> Path:
    """Where the registry lives: $MEMCTL_INVENTORY, else $XDG_CONFIG_HOME/memctl/inventory.yml."""
    if explicit := os.environ.get("MEMCTL_INVENTORY"):
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "memctl" / "inventory.yml"


def _empty() -> dict[str, Any]:
    return local_inventory([])


def _document(path: Path) -> dict[str, Any]:
    if not path.exists():
        return _empty()
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or _empty()
    except yaml.YAMLError as exc:
        raise ConfigError(f"inventory {path}: not valid YAML ({exc})") from exc
    try:
        document["all"]["hosts"]["localhost"].setdefault("memctl_projects", [])
    except (KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"inventory {path}: expected all.hosts.localhost (edit it by hand)") from exc
    return document


def _projects(document: dict[str, Any]) -> list[dict[str, Any]]:
    projects: list[dict[str, Any]] = document["all"]["hosts"]["localhost"]["memctl_projects"]
    return projects


def _write_validated(path: Path, document: dict[str, Any]) -> Inventory | None:
    """Validate the document as an inventory, then replace the file atomically."""
    text = _HEADER + yaml.safe_dump(document, sort_keys=False)
    with replacing(path, mode=0o600, suffix=".yml") as handle:
        handle.write(text.encode("utf-8"))
        handle.flush()
        return load_inventory(Path(handle.name)) if _projects(document) else None


def read_registry(path: Path | None = None) -> Inventory | None:
    """The registry's projects, or None when it lists none yet."""
    path = path or registry_path()
    if not path.exists() or not _projects(_document(path)):
        return None
    return load_inventory(path)


def add_project(project: Project, path: Path | None = None) -> Inventory:
    """Add (or, for the same slug and workspace, update) a project; the new registry."""
    path = path or registry_path()
    document = _document(path)
    projects = _projects(document)
    record = project.model_dump(exclude_defaults=True, mode="json") | {
        "slug": project.slug,
        "workspace": project.workspace,
    }
    for index, existing in enumerate(projects):
        if existing.get("slug") == project.slug:
            if existing.get("workspace") != project.workspace:
                raise ConfigError(
                    f"slug {project.slug!r} already names {existing.get('workspace')}; "
                    "pick another with --slug"
                )
            projects[index] = record
            break
    else:
        projects.append(record)
    inventory = _write_validated(path, document)
    assert inventory is not None
    return inventory


def remove_project(slug: str, path: Path | None = None) -> dict[str, Any]:
    """Remove a project from the registry (its memory stays on disk); the removed record."""
    path = path or registry_path()
    document = _document(path)
    projects = _projects(document)
    for index, existing in enumerate(projects):
        if existing.get("slug") == slug:
            removed = projects.pop(index)
            _write_validated(path, document)
            return removed
    raise NotFound(f"no project {slug!r} in {path}")
