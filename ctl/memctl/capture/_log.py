"""The capture log: one JSON object a line in `.memory/capture/capture.log`.

Callers pass only text that holds no secrets (reasons, counts, names); the worker
redacts anything derived from a transcript or an LLM answer before it gets here.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from pathlib import Path, PurePath
from typing import Any

from memory_bridge import LinkRefused, open_beneath, private_file, write_atomically

from .._timefmt import iso_time

__all__ = ["log_event", "read_events"]

_MAX_BYTES = 1_000_000


def log_event(path: Path, event: str, **fields: Any) -> None:
    """Append one event; the log is halved once it passes 1 MB. Never raises, and never
    writes through a link: a link in the log's place is left alone, the event dropped."""
    line = json.dumps({"ts": iso_time(time.time()), "event": event, **fields})
    try:
        private_file(path)
        descriptor = open_beneath(path.parent, PurePath(path.name), os.O_WRONLY | os.O_APPEND)
        with open(descriptor, "a", encoding="utf-8") as handle:
            if os.fstat(handle.fileno()).st_size > _MAX_BYTES:
                kept = path.read_text(encoding="utf-8", errors="replace").splitlines()[-2000:]
                write_atomically(path, "\n".join(kept) + "\n" + line + "\n", mode=0o600)
            else:
                handle.write(line + "\n")
    except (OSError, LinkRefused):
        pass


def read_events(path: Path, limit: int = 20) -> list[dict[str, Any]]:
    """The last `limit` events (unparseable lines skipped)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            lines = deque(handle, maxlen=limit)
    except FileNotFoundError:
        return []
    events = []
    for line in lines:
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events
