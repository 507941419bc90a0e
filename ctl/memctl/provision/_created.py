"""What `memctl up` created in a project's client files, so `memctl down` takes exactly that out.

Taking memctl's entries out of a file leaves what held them: an empty `"mcpServers": {}`, an
empty `"enabledMcpjsonServers": []`, a file that is now `{}`, a folder with nothing in it.
Whether the user had those before memctl came cannot be told from the file, so `up` records
what it created (files, folders, and JSON members that hold other values) in
`.memory/created.json`, and `down` removes each of them once it is empty again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_bridge import write_atomically

__all__ = ["RECORD", "Created", "new_containers", "new_dirs", "without_empty"]

RECORD = Path(".memory/created.json")
JSONPath = tuple[str, ...]


@dataclass
class Created:
    """Files and folders memctl created (by label: relative to the workspace when inside
    it), per JSON file the members holding objects or arrays that it added, and the text
    files whose last line had no line break before memctl added its block."""

    files: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)
    containers: dict[str, set[JSONPath]] = field(default_factory=dict)
    unterminated: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, workspace: Path) -> Created:
        try:
            data = json.loads((workspace / RECORD).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls()  # none yet (or unreadable: down then leaves empty containers alone)
        containers = {
            str(label): {tuple(str(key) for key in path) for path in paths}
            for label, paths in dict(data.get("containers", {})).items()
        }
        return cls(
            set(map(str, data.get("files", []))),
            set(map(str, data.get("dirs", []))),
            containers,
            set(map(str, data.get("unterminated", []))),
        )

    def to_json(self) -> str:
        document = {
            "files": sorted(self.files),
            "dirs": sorted(self.dirs),
            "containers": {
                label: sorted(list(path) for path in paths)
                for label, paths in sorted(self.containers.items())
                if paths
            },
            "unterminated": sorted(self.unterminated),
        }
        return json.dumps(document, indent=2) + "\n"

    def save(self, workspace: Path) -> None:
        """Write the record if it changed; remove it once it records nothing."""
        path = workspace / RECORD
        empty = not (self.files or self.dirs or self.unterminated or any(self.containers.values()))
        if empty:
            path.unlink(missing_ok=True)
            return
        text = self.to_json()
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_atomically(path, text, mode=0o600)


def new_containers(before: Any, after: Any, prefix: JSONPath = (), depth: int = 2) -> set[JSONPath]:
    """Members (down to `depth`) holding an object or array in `after` but absent in `before`."""
    found: set[JSONPath] = set()
    if not isinstance(after, dict) or depth == 0:
        return found
    for key, value in after.items():
        if not isinstance(value, dict | list):
            continue
        if not isinstance(before, dict) or key not in before:
            found.add((*prefix, key))
        else:
            found |= new_containers(before[key], value, (*prefix, key), depth - 1)
    return found


def new_dirs(workspace: Path, path: Path) -> set[str]:
    """The folders between the workspace and `path` that do not exist yet."""
    missing = set()
    for parent in path.parents:
        if parent == workspace or not parent.is_relative_to(workspace):
            break
        if not parent.exists():
            missing.add(parent.relative_to(workspace).as_posix())
    return missing


def without_empty(document: dict[str, Any], paths: set[JSONPath]) -> dict[str, Any]:
    """`document` without those of `paths` that hold an empty object or array (deepest first)."""
    result = json.loads(json.dumps(document))
    for path in sorted(paths, key=len, reverse=True):
        parent: Any = result
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if isinstance(parent, dict) and parent.get(path[-1]) in ({}, []):
            del parent[path[-1]]
    return dict(result)
