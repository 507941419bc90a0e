"""Facts about the run that every benchmark report records."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git_commit(repo: Path) -> str | None:
    """The short commit the run measured, or None outside a git checkout."""
    try:
        return subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
