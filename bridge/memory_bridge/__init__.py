"""memory_bridge: memctl's MCP server (the data plane)."""

from ._errors import (
    AccessDenied,
    ConfigError,
    Conflict,
    InvalidInput,
    MemctlError,
    NotFound,
    StoreError,
    StoreUnavailable,
)
from ._serve import open_state, run_bridge, serve_http, serve_stdio
from ._server import build_server
from ._settings import Settings, load_settings
from .stores._base import Entry, EntryStore, EntryWrite
from .stores._url import open_entry_store

__all__ = [
    "AccessDenied",
    "ConfigError",
    "Conflict",
    "Entry",
    "EntryStore",
    "EntryWrite",
    "InvalidInput",
    "MemctlError",
    "NotFound",
    "Settings",
    "StoreError",
    "StoreUnavailable",
    "build_server",
    "load_settings",
    "open_entry_store",
    "open_state",
    "run_bridge",
    "serve_http",
    "serve_stdio",
]
