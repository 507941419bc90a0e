"""Running hooks as a client does (a shell command line), and reading what capture did."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from memctl.capture._log import read_events
from memctl.capture._paths import CaptureDirs
from memory_bridge import load_settings
from memory_bridge.stores import Document, open_knowledge_store

FIXTURES = Path(__file__).parent / "fixtures"
SIGNATURE = "# memctl-hook-v1"


def run_hook(project: Path, event: str, payload: str | dict[str, Any], env: dict[str, str]) -> Any:
    """`memctl hook <event> # memctl-hook-v1`, as rendered into the client's settings, via a shell."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        ["bash", "-c", f"memctl hook {event} {SIGNATURE}"],
        input=text,
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def memctl(project: Path, env: dict[str, str], *args: str) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "memctl", *args, "--project", str(project), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def wait_event(
    project: Path, match: Callable[[dict[str, Any]], bool], timeout: float = 120
) -> dict[str, Any]:
    """The first capture-log event `match` accepts, waiting for the worker to write it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in read_events(CaptureDirs(project).log, 1000):
            if match(event):
                return event
        time.sleep(0.2)
    raise AssertionError(f"no matching capture event; log: {read_events(CaptureDirs(project).log, 20)}")


def documents(project: Path, slot: str) -> list[Document]:
    async def run() -> list[Document]:
        store = open_knowledge_store(load_settings(project=project, embedding_model="none"))
        try:
            docs, _ = await store.list_documents(slot, offset=0, limit=1000)
            return docs
        finally:
            await store.close()

    return anyio.run(run)
