"""Filling a benchmark's embedded project fast: entry records through the store's import."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

BATCH = 1000


async def import_entries(project: Path, records: Iterable[Any]) -> None:
    """Import `records` (`EntryRecord`s) into `project`'s entry store, BATCH at a time."""
    from memory_bridge import load_settings, open_entry_store

    store = open_entry_store(load_settings(project=project, embedding_model="none"))
    try:
        batch = []
        for record in records:
            batch.append(record)
            if len(batch) == BATCH:
                await store.import_records(batch)
                batch = []
        if batch:
            await store.import_records(batch)
    finally:
        await store.close()
