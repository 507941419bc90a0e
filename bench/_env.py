"""Facts about the run that every benchmark report records."""

from __future__ import annotations

import os
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


def clean_env(embedding_model: str | None = "none") -> dict[str, str]:
    """This process's environment without the user's memctl and memory-mcp settings, so a
    benchmark measures the defaults; `embedding_model` set unless None."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "MEMORY_MCP_"))}
    if embedding_model is not None:
        env["MEMCTL_EMBEDDING_MODEL"] = embedding_model
    return env
