"""A lock file holding its owner's pid: taken atomically, reclaimed when its owner died."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from memory_bridge import private_dir

__all__ = ["FileLock", "lock_owner"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lock_owner(path: Path) -> dict[str, Any] | None:
    """The live owner recorded in a lock file, or None if it is free (absent, dead, unreadable)."""
    try:
        owner = json.loads(path.read_text(encoding="utf-8"))
        pid = int(owner["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return owner if isinstance(owner, dict) and _alive(pid) else None


class FileLock:
    """`acquire()` creates the file exclusively; a lock whose pid is gone is taken over."""

    def __init__(self, path: Path, label: str) -> None:
        self.path = path
        self.label = label
        self._held = False

    def acquire(self, *, wait: float = 0.0, poll: float = 0.2) -> bool:
        private_dir(self.path.parent)
        deadline = time.monotonic() + wait
        while True:
            if self._try():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)

    def _try(self) -> bool:
        record = json.dumps({"pid": os.getpid(), "label": self.label, "since": time.time()})
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            if lock_owner(self.path) is not None:
                return False
            self.path.unlink(missing_ok=True)  # its owner died: reclaim it (the retry is exclusive)
            return False if self.path.exists() else self._try()
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(record)
        self._held = True
        return True

    def release(self) -> None:
        if self._held:
            owner = lock_owner(self.path)
            if owner is not None and owner.get("pid") == os.getpid():
                self.path.unlink(missing_ok=True)
            self._held = False
