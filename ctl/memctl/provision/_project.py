"""Which project a command works on: `--project`, else the nearest provisioned one above.

Like git with `.git`, memctl walks up from the current directory to the nearest directory
holding a `.memory/` directory, so a command run in `app/src/pkg` works on `app`. A
command that only reads never creates a store: in a directory memctl never provisioned
it says so and changes nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from memory_bridge import NotFound, Settings, check_workspace, find_project, load_settings

__all__ = ["current_project", "project_to_provision", "provisioned_settings"]


def current_project(flag: Path | None) -> Path:
    """--project as given, else the nearest project at or above the current directory, else
    the current directory."""
    if flag is not None:
        return flag.expanduser().absolute()
    cwd = Path.cwd()
    return find_project(cwd) or cwd


def _git_root(directory: Path) -> Path | None:
    try:
        run = subprocess.run(
            ["git", "-C", str(directory), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    top = run.stdout.strip()
    return Path(top) if run.returncode == 0 and top else None


def project_to_provision(flag: Path | None) -> Path:
    """The directory `memctl up` provisions: --project, else the nearest provisioned project,
    else the top of the git work tree, else the current directory; never `/` or the home
    directory itself (ConfigError)."""
    if flag is not None:
        chosen = flag.expanduser().absolute()
    else:
        cwd = Path.cwd()
        chosen = find_project(cwd) or _git_root(cwd) or cwd
    check_workspace(chosen)
    return chosen


def provisioned_settings(flag: Path | None, **flags: Any) -> Settings:
    """The settings of the chosen project, which must have memory to read.

    Raises `NotFound` (exit 3) for a directory without `.memory/` whose stores would be
    the embedded ones, before anything is created there.
    """
    settings = load_settings(project=current_project(flag), **flags)
    embedded = "sqlite" in (settings.stores.entry_store, settings.stores.knowledge_store)
    if embedded and not settings.memory_dir.is_dir():
        where = "" if flag is not None else " or above"
        raise NotFound(
            f"no memctl memory at{where} {settings.project} (no .memory/ directory): "
            "run `memctl up` in the project first, or pass --project DIR"
        )
    return settings
