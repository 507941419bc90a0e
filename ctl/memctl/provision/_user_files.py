"""Which projects use each user-level file memctl writes, such as Codex's `config.toml`.

One user-level file serves every project of its user, so `memctl down` for one project
must not take out what another still needs: each `up` records its project against the
file (and whether memctl created the file), and `down` removes memctl's entry, and a file
memctl created, only when no other project is left.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memory_bridge import ConfigError, write_atomically

from ._playbook import state_dir

__all__ = ["add_user", "created_by_memctl", "files_of", "other_users", "remove_user"]


def _record() -> Path:
    return state_dir() / "user-files.json"


def _load() -> dict[str, dict[str, Any]]:
    path = _record()
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read it ({exc}); delete it to start afresh") from exc
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: expected an object; delete it to start afresh")
    return {
        str(file): {
            "projects": [str(p) for p in entry.get("projects", [])],
            "created": bool(entry.get("created")),
        }
        for file, entry in document.items()
        if isinstance(entry, dict)
    }


def _save(document: dict[str, dict[str, Any]]) -> None:
    path = _record()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomically(path, json.dumps(document, indent=2, sort_keys=True) + "\n", mode=0o600)


def add_user(file: Path, project: Path, *, created: bool) -> None:
    """Record that `project`'s clients use `file` (`created`: memctl is creating it now)."""
    document = _load()
    entry = document.get(str(file), {"projects": [], "created": created})
    if str(project) not in entry["projects"]:
        entry["projects"] = sorted({*entry["projects"], str(project)})
        document[str(file)] = entry
        _save(document)


def other_users(file: Path, project: Path) -> list[str]:
    """The other projects recorded as using `file` whose directories still exist."""
    projects = _load().get(str(file), {}).get("projects", [])
    return [p for p in projects if p != str(project) and Path(p).is_dir()]


def created_by_memctl(file: Path) -> bool:
    """Whether memctl created `file` (so the last project to leave may delete it)."""
    return bool(_load().get(str(file), {}).get("created"))


def files_of(project: Path) -> list[Path]:
    """The user-level files `project`'s clients use."""
    return [Path(file) for file, entry in _load().items() if str(project) in entry["projects"]]


def remove_user(file: Path, project: Path) -> None:
    """Forget that `project` uses `file`."""
    document = _load()
    entry = document.get(str(file))
    if entry is None or str(project) not in entry["projects"]:
        return
    entry["projects"] = [p for p in entry["projects"] if p != str(project)]
    if not entry["projects"]:
        del document[str(file)]
    _save(document)
