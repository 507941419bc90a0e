"""Capture's own outbox: documents wait in `.memory/capture/outbox/` until a store takes them.

Every capture write (a daily, a plan) is first written here, whole, then delivered.
A store that cannot be reached (the embedded database busy or unusable, Dify down with
no slot list cached) leaves it queued; the next capture run (a hook's worker, `memctl
flush`, `memctl compile`) delivers it, oldest first. A document the store rejects for
good moves to `failed/` with its reason, for `memctl capture status` to show.
On Dify, a delivered write may still wait in the Dify outbox; that one replays it.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_bridge import StoreError, StoreUnavailable, private_dir
from memory_bridge.core import KnowledgeContext, save_to_dataset

from ._paths import CaptureDirs, atomic_write

__all__ = ["Delivery", "deliver", "enqueue", "queued"]


@dataclass(frozen=True)
class Delivery:
    delivered: list[dict[str, Any]]
    pending: int
    failed: list[dict[str, str]]
    error: str | None = None  # why delivery stopped (the store is unreachable)


def enqueue(dirs: CaptureDirs, slot: str, name: str, text: str, metadata: dict[str, Any]) -> Path:
    """Queue one document for `slot` (written whole before this returns)."""
    path = dirs.outbox / f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.json"
    atomic_write(path, json.dumps({"slot": slot, "name": name, "text": text, "metadata": metadata}))
    return path


def queued(dirs: CaptureDirs) -> tuple[int, int]:
    """(pending, failed) document counts."""
    return (
        len(list(dirs.outbox.glob("*.json"))) if dirs.outbox.is_dir() else 0,
        len(list(dirs.failed.glob("*.json"))) if dirs.failed.is_dir() else 0,
    )


async def deliver(dirs: CaptureDirs, ctx: KnowledgeContext) -> Delivery:
    """Hand queued documents to the store, oldest first, until done or it is unreachable."""
    delivered: list[dict[str, Any]] = []
    failed: list[dict[str, str]] = []
    paths = sorted(dirs.outbox.glob("*.json")) if dirs.outbox.is_dir() else []
    for index, path in enumerate(paths):
        doc = json.loads(path.read_text(encoding="utf-8"))
        try:
            result = await save_to_dataset(
                ctx, dataset=doc["slot"], name=doc["name"], text=doc["text"], metadata=doc["metadata"]
            )
        except StoreUnavailable as exc:
            return Delivery(delivered, len(paths) - index, failed, str(exc))
        except StoreError as exc:
            private_dir(dirs.failed)
            atomic_write(dirs.failed / path.name, json.dumps({**doc, "error": str(exc)}))
            path.unlink()
            failed.append({"name": doc["name"], "error": str(exc)})
            continue
        path.unlink()
        delivered.append({"slot": result.slot, "name": result.name, "documentId": result.documentId})
    return Delivery(delivered, 0, failed)
