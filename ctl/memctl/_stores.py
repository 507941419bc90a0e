"""Create and migrate a project's stores, reporting what changed (for `memctl up` and Ansible)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import anyio

from memory_bridge import Settings, open_entry_store
from memory_bridge.stores._url import open_knowledge_store, sqlite_path
from memory_bridge.stores.sqlite._knowledge_schema import KNOWLEDGE_SCHEMA_VERSION
from memory_bridge.stores.sqlite._schema import SCHEMA_VERSION

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


def _version(path: Path) -> int | None:
    if not path.exists():
        return None
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def embedded_states(settings: Settings) -> list[StoreState]:
    """The embedded stores the settings use, as they are on disk now (read-only)."""
    states = []
    if settings.entry_store.startswith("sqlite"):
        path = sqlite_path(settings)
        states.append(StoreState("entries", path, _version(path), SCHEMA_VERSION))
    if settings.knowledge_store.startswith("sqlite"):
        path = sqlite_path(settings, settings.knowledge_store, "knowledge.db")
        states.append(StoreState("knowledge", path, _version(path), KNOWLEDGE_SCHEMA_VERSION))
    return states


def prepare_stores(settings: Settings) -> tuple[str, list[StoreState]]:
    """Create and migrate both stores; the entry store's URL and the states before the run."""
    before = embedded_states(settings)
    settings.memory_dir.mkdir(parents=True, exist_ok=True)
    entries = open_entry_store(settings)
    anyio.run(entries.close)
    if settings.knowledge_store.startswith("sqlite"):
        knowledge = open_knowledge_store(settings)
        anyio.run(knowledge.close)
    return entries.url, before
