"""The record `memctl up` keeps of a project in its own `.memory/project.json`: the project as
the inventory that provisioned it describes it (slug, mode, bridge port, clients, ...).

Commands run in a workspace read it, so they know a project whichever inventory provisioned
it, even one that is not in memctl's registry or lives on another machine.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from memory_bridge import ConfigError

from ._inventory import Project

__all__ = ["RECORD", "recorded_project"]

RECORD = Path(".memory/project.json")


def recorded_project(directory: Path) -> Project | None:
    """The record of the project that holds `directory` (the nearest `.memory/` at or above
    it), with the workspace where it is now; None when that project has no record."""
    for root in (directory, *directory.parents):
        if (root / ".memory").is_dir():
            path = root / RECORD
            break
    else:
        return None
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        known = {k: v for k, v in data.items() if k in Project.model_fields}
        return Project.model_validate({**known, "workspace": str(root)})
    except (ValueError, AttributeError, ValidationError) as exc:
        raise ConfigError(f"{path}: not a project record memctl wrote ({exc}); run memctl up") from exc
