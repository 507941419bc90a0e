"""The logs `memctl logs` shows for a project, every line redacted before it leaves here.

Sources: the bridge container's output (stack projects), the capture log and the capture
worker's errors under `.memory/capture/`, and the newest playbook run log that names the
project (`memctl up`, `upgrade`, ... keep them in the state directory's `runs/`).
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memory_bridge.core import redact

from ..capture._paths import CaptureDirs
from ..provision._inventory import Project
from ..provision._playbook import projects_file, state_dir
from ._containers import bridge_name, container_logs, follow_logs

__all__ = ["SOURCES", "follow", "gather"]

SOURCES = ("bridge", "capture", "runs")
_RUN_LOGS_SCANNED = 50
_POLL_SECONDS = 0.5


def _tail(path: Path, lines: int) -> list[str]:
    with path.open(encoding="utf-8", errors="replace") as handle:
        return [line.rstrip("\n") for line in deque(handle, maxlen=lines)]


def _workspaces(log: Path) -> list[str]:
    try:
        record = json.loads(projects_file(log).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []  # a log from before runs named their projects, or someone else's file
    workspaces = record.get("workspaces") if isinstance(record, dict) else None
    return [str(w) for w in workspaces] if isinstance(workspaces, list) else []


def newest_run_log(workspace: Path) -> Path | None:
    """The newest run log about the project in `workspace` (among the last few runs).

    Runs are matched by the project's directory, which no other project on the machine
    has, never by its slug, which several may share."""
    runs = state_dir() / "runs"
    logs = sorted(runs.glob("*.log"), key=lambda p: p.stat().st_mtime, reverse=True) if runs.is_dir() else []
    wanted = str(workspace.expanduser().absolute())
    return next((log for log in logs[:_RUN_LOGS_SCANNED] if wanted in _workspaces(log)), None)


def gather(project: Project, sources: tuple[str, ...], lines: int) -> list[dict[str, Any]]:
    """The last `lines` lines of each chosen source that exists, redacted."""
    found: list[dict[str, Any]] = []
    if "bridge" in sources:
        name = bridge_name(project.slug)
        output = container_logs(name, lines)
        if output is not None:
            found.append({"source": "bridge", "name": name, "lines": output})
        elif project.mode == "stack":
            found.append({"source": "bridge", "name": name, "lines": [], "error": f"no container {name}"})
    dirs = CaptureDirs(Path(project.workspace))
    if "capture" in sources:
        for source, path in (("capture", dirs.log), ("capture-errors", dirs.worker_errors)):
            if path.is_file() and path.stat().st_size > 0:
                found.append({"source": source, "path": str(path), "lines": _tail(path, lines)})
    if "runs" in sources and (log := newest_run_log(Path(project.workspace))) is not None:
        found.append({"source": "runs", "path": str(log), "lines": _tail(log, lines)})
    for record in found:
        record["lines"] = [redact(line) for line in record["lines"]]
    return found


def _follow_file(path: Path, position: int) -> Iterator[str]:
    """Lines appended to the file after `position` (it may not exist yet)."""
    while True:
        if path.exists() and path.stat().st_size < position:  # the capture log was trimmed
            position = 0
        if path.exists() and path.stat().st_size > position:
            with path.open(encoding="utf-8", errors="replace") as handle:
                handle.seek(position)
                chunk = handle.read()
                position = handle.tell()
            yield from chunk.splitlines()
        else:
            time.sleep(_POLL_SECONDS)


def follow(project: Project, with_bridge: bool) -> Iterator[tuple[str, str]]:
    """(source, redacted line) as they are written from now on: the bridge container's, else
    the capture log's. Where the capture log ends is taken now, not at the first read."""
    if with_bridge:
        return _redacted("bridge", follow_logs(bridge_name(project.slug)))
    log = CaptureDirs(Path(project.workspace)).log
    return _redacted("capture", _follow_file(log, log.stat().st_size if log.exists() else 0))


def _redacted(source: str, lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    for line in lines:
        yield source, redact(line)
