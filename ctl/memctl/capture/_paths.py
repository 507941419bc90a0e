"""Where capture keeps its files inside a project's `.memory/` directory."""

from __future__ import annotations

import re
from pathlib import Path

from memory_bridge import write_atomically

__all__ = ["CaptureDirs", "atomic_write", "safe_id"]


def safe_id(text: str) -> str:
    """A session id as a file-name component: at most 80 of [A-Za-z0-9._-]."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)[:80].lstrip(".") or "manual"


class CaptureDirs:
    """`<project>/.memory/capture/`: jobs, session marks, queued writes, state and log.

    A plain class, not a dataclass: the hook front imports this, and dataclasses costs
    it the import of `inspect`."""

    __slots__ = ("project",)

    def __init__(self, project: Path) -> None:
        self.project = project

    @property
    def root(self) -> Path:
        return self.project / ".memory" / "capture"

    @property
    def jobs(self) -> Path:
        return self.root / "jobs"

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def outbox(self) -> Path:
        return self.root / "outbox"

    @property
    def failed(self) -> Path:
        return self.root / "failed"

    @property
    def log(self) -> Path:
        return self.root / "capture.log"

    @property
    def worker_errors(self) -> Path:
        return self.root / "worker.err"

    @property
    def compile_state(self) -> Path:
        return self.root / "compile-state.json"

    @property
    def compile_lock(self) -> Path:
        return self.root / "compile.lock"

    def session_lock(self, session_id: str) -> Path:
        return self.sessions / f"{safe_id(session_id)}.lock"

    def session_mark(self, session_id: str) -> Path:
        return self.sessions / f"{safe_id(session_id)}.json"


def atomic_write(path: Path, text: str) -> None:
    """Write a file whole, readable by its owner only."""
    write_atomically(path, text, mode=0o600)
