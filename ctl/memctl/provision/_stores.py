"""Create and migrate a project's stores, reporting what changed (for `memctl up` and Ansible)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import anyio

from memory_bridge import Settings, open_entry_store, private_dir
from memory_bridge.maintenance import user_version
from memory_bridge.stores import open_knowledge_store, sqlite_path
from memory_bridge.stores.sqlite import KNOWLEDGE_SCHEMA_VERSION, SCHEMA_VERSION

__all__ = ["StoreState", "embedded_states", "prepare_stores"]


@dataclass(frozen=True)
class StoreState:
    """An embedded store's file and schema version (None: the file does not exist yet)."""

    kind: str
    path: Path
    version: int | None
    latest: int

    @property
    def current(self) -> bool:
        return self.version == self.latest


def embedded_states(settings: Settings) -> list[StoreState]:
    """The embedded stores the settings use, as they are on disk now (read-only)."""
    states = []
    if settings.stores.entry_store.startswith("sqlite"):
        path = sqlite_path(settings)
        states.append(StoreState("entries", path, user_version(path), SCHEMA_VERSION))
    if settings.stores.knowledge_store.startswith("sqlite"):
        path = sqlite_path(settings, settings.stores.knowledge_store, "knowledge.db")
        states.append(StoreState("knowledge", path, user_version(path), KNOWLEDGE_SCHEMA_VERSION))
    return states


def prepare_stores(settings: Settings) -> str:
    """Create and migrate both stores; the entry store's URL."""
    private_dir(settings.memory_dir)
    entries = open_entry_store(settings)
    anyio.run(entries.close)
    if settings.stores.knowledge_store.startswith("sqlite"):
        knowledge = open_knowledge_store(settings)
        anyio.run(knowledge.close)
    return entries.url
