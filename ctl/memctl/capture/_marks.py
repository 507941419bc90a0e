"""Per-session high-water marks: how far into its transcript a session was distilled."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ._paths import CaptureDirs, atomic_write

__all__ = ["Mark", "load_mark", "save_mark"]


@dataclass(frozen=True)
class Mark:
    transcript: str
    offset: int  # bytes of the transcript already distilled
    turns: int  # turns distilled so far
    updated_at: float


def load_mark(dirs: CaptureDirs, session_id: str, transcript: Path) -> Mark:
    """The session's mark for this transcript; a fresh one for a new or a shrunken file."""
    fresh = Mark(str(transcript), 0, 0, 0.0)
    try:
        mark = Mark(**json.loads(dirs.session_mark(session_id).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return fresh
    if mark.transcript != str(transcript):
        return fresh
    try:
        if transcript.stat().st_size < mark.offset:
            return fresh  # the file was replaced, not appended to: start over
    except OSError:
        return fresh
    return mark


def save_mark(dirs: CaptureDirs, session_id: str, transcript: Path, offset: int, turns: int) -> None:
    mark = Mark(str(transcript), offset, turns, time.time())
    atomic_write(dirs.session_mark(session_id), json.dumps(asdict(mark)))
