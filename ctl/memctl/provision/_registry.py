"""The user's own inventory of projects on this machine, kept by `memctl projects`.

It is an ordinary memctl inventory (`memctl up --all` runs it), at $MEMCTL_INVENTORY or
$XDG_CONFIG_HOME/memctl/inventory.yml. Each change is validated as a whole inventory and
written atomically, so a bad `projects add` leaves the file as it was. The file is edited as
a round trip (ruamel.yaml): the user's comments, key order, quoting and indentation stay.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

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


def _indents(text: str) -> tuple[int, int, int]:
    """(mapping, sequence, dash offset) as `text` indents its first nested mapping and block
    sequence, in ruamel.yaml's terms; (2, 2, 0) for what it does not show. ruamel.yaml's own
    guess (`load_yaml_guess_indent`) gives one indent for both, so it would re-indent a file
    that indents them differently."""
    mapping = sequence = offset = None
    parent: int | None = None  # the indent of the key-only line just before
    for line in text.splitlines():
        body = line.lstrip(" ")
        if not body or body.startswith("#"):
            continue
        here = len(line) - len(body)
        if parent is not None and body.startswith("- ") and sequence is None:
            offset = here - parent
            sequence = offset + 2 + len(body[2:]) - len(body[2:].lstrip(" "))
        elif parent is not None and here > parent and mapping is None:
            mapping = here - parent
        parent = here if body.split("#")[0].rstrip().endswith(":") and not body.startswith("-") else None
    return mapping or 2, sequence or 2, offset or 0


def _yaml(text: str) -> YAML:
    """A round-trip YAML (comments, order and quoting kept) that indents as `text` does."""
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 1 << 16  # a long path stays on its key's line
    mapping, sequence, offset = _indents(text)
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def _document(path: Path) -> tuple[YAML, Any]:
    """The registry's round-trip YAML and document (a new inventory's when there is none)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        yaml = _yaml(text)
        document = yaml.load(text) if text.strip() else None
    except YAMLError as exc:
        raise ConfigError(f"inventory {path}: not valid YAML ({exc})") from exc
    if document is None:
        document = yaml.load(_HEADER + _dump(yaml, local_inventory([])))
    try:
        document["all"]["hosts"]["localhost"].setdefault("memctl_projects", [])
    except (KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"inventory {path}: expected all.hosts.localhost (edit it by hand)") from exc
    return yaml, document


def _dump(yaml: YAML, document: Any) -> str:
    stream = io.StringIO()
    yaml.dump(document, stream)
    return stream.getvalue()


def _projects(document: Any) -> list[dict[str, Any]]:
    projects: list[dict[str, Any]] = document["all"]["hosts"]["localhost"]["memctl_projects"]
    return projects


def _write_validated(path: Path, yaml: YAML, document: Any) -> Inventory | None:
    """Validate the document as an inventory, then replace the file atomically."""
    with replacing(path, mode=0o600, suffix=".yml") as handle:
        handle.write(_dump(yaml, document).encode("utf-8"))
        handle.flush()
        return load_inventory(Path(handle.name)) if _projects(document) else None


def read_registry(path: Path | None = None) -> Inventory | None:
    """The registry's projects, or None when it lists none yet."""
    path = path or registry_path()
    if not path.exists() or not _projects(_document(path)[1]):
        return None
    return load_inventory(path)


def add_project(project: Project, path: Path | None = None) -> Inventory:
    """Add (or, for the same slug and workspace, update) a project; the new registry."""
    path = path or registry_path()
    yaml, document = _document(path)
    projects = _projects(document)
    record = project.model_dump(exclude_defaults=True, mode="json") | {
        "slug": project.slug,
        "workspace": project.workspace,
    }
    for existing in projects:
        if existing.get("slug") == project.slug:
            if existing.get("workspace") != project.workspace:
                raise ConfigError(
                    f"slug {project.slug!r} already names {existing.get('workspace')}; "
                    "pick another with --slug"
                )
            for key in [key for key in existing if key not in record]:
                del existing[key]
            existing.update(record)  # in place, so the record's comments stay
            break
    else:
        projects.append(record)
    inventory = _write_validated(path, yaml, document)
    assert inventory is not None
    return inventory


def remove_project(slug: str, path: Path | None = None) -> dict[str, Any]:
    """Remove a project from the registry (its memory stays on disk); the removed record."""
    path = path or registry_path()
    yaml, document = _document(path)
    projects = _projects(document)
    for index, existing in enumerate(projects):
        if existing.get("slug") == slug:
            removed = dict(projects.pop(index))
            _write_validated(path, yaml, document)
            return removed
    raise NotFound(f"no project {slug!r} in {path}")
