"""Finding memctl's files and directories that other local users can read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["loose_modes"]


def loose_modes(root: Path) -> list[tuple[Path, int]]:
    """(path, mode) of `root` and everything under it that group or others may access.

    Symlinks are neither followed nor reported (their own mode means nothing)."""
    paths = [root]
    for directory, subdirs, files in os.walk(root):
        paths += [Path(directory, name) for name in (*subdirs, *files)]
    found = []
    for path in paths:
        try:
            mode = path.lstat().st_mode
        except OSError:
            continue  # removed meanwhile
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append((path, stat.S_IMODE(mode)))
    return found
