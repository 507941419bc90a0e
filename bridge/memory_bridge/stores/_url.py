"""Choosing and opening a store from its URL."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from .._errors import ConfigError
from .._settings import Settings
from ._base import EntryStore

__all__ = ["open_entry_store", "sqlite_path"]

_ENTRY_DB = "entries.db"


def sqlite_path(settings: Settings) -> Path:
    """Where the embedded entry store of these settings lives."""
    url = settings.entry_store
    if url == "sqlite":
        return settings.memory_dir / _ENTRY_DB
    parts = urlsplit(url)
    if parts.scheme != "sqlite" or parts.netloc or not parts.path:
        raise ConfigError(f"entry store {url!r}: expected `sqlite` or `sqlite:///absolute/path`")
    return Path(parts.path)


_VALKEY_SCHEMES = ("valkey", "valkeys", "redis", "rediss")


def open_entry_store(settings: Settings) -> EntryStore:
    """Open the entry store the settings name (creating and migrating it if needed)."""
    scheme = urlsplit(settings.entry_store).scheme or settings.entry_store
    if scheme in _VALKEY_SCHEMES:
        from .valkey._entries import ValkeyEntryStore

        return ValkeyEntryStore(
            settings.entry_store,
            max_versions=settings.max_versions_per_entry,
            operation_ttl=settings.operation_id_ttl_seconds,
        )
    if scheme != "sqlite":
        raise ConfigError(
            f"entry store scheme {scheme!r} is not supported; use sqlite, sqlite:///path, "
            "valkey://host:port/db or valkeys://host:port/db"
        )
    from .sqlite._entries import SqliteEntryStore

    return SqliteEntryStore(
        sqlite_path(settings),
        max_versions=settings.max_versions_per_entry,
        operation_ttl=settings.operation_id_ttl_seconds,
    )
