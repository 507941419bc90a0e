"""Replacing a file whole: readers see the old text or the new, never part of either."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write `text` to a temporary file beside `path` (mode 0600 from its first byte), fsync
    it, give it `mode` (default: the mode the file has, 0644 for a new one), and rename it
    over `path`. A symlink is followed, so the file it points to is replaced and the link stays.
    """
    real = path.resolve()
    real.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        mode = stat.S_IMODE(real.stat().st_mode) if real.exists() else 0o644
    fd, temp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, real)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
