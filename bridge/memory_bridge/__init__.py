"""memory_bridge: memctl's MCP server (the data plane).

The errors import eagerly; everything else loads on first use, so a command that only needs
an error class or one store (a hook, an Ansible module) does not pay for the MCP server.
"""

import importlib as _importlib
import typing as _typing

from ._errors import (
    AccessDenied,
    ConfigError,
    Conflict,
    InvalidInput,
    MemctlError,
    NotFound,
    StoreError,
    StoreFailed,
    StoreUnavailable,
)

if _typing.TYPE_CHECKING:
    from ._files import private_dir, private_file, replacing, write_atomically
    from ._identity import pin_scope, pinned_scope, write_scope
    from ._serve import open_state, run_bridge, serve_http, serve_stdio
    from ._server import build_server
    from ._settings import Settings, find_project, load_settings
    from ._tokens import new_token
    from .core._knowledge import ATOM_TYPES, AtomType
    from .stores._base import Entry, EntryStore, EntryWrite
    from .stores._url import open_entry_store

_LAZY = {
    "find_project": "._settings",
    "pin_scope": "._identity",
    "pinned_scope": "._identity",
    "write_scope": "._identity",
    "private_dir": "._files",
    "private_file": "._files",
    "replacing": "._files",
    "write_atomically": "._files",
    "new_token": "._tokens",
    "ATOM_TYPES": ".core._knowledge",
    "AtomType": ".core._knowledge",
    "open_state": "._serve",
    "run_bridge": "._serve",
    "serve_http": "._serve",
    "serve_stdio": "._serve",
    "build_server": "._server",
    "Settings": "._settings",
    "load_settings": "._settings",
    "Entry": ".stores._base",
    "EntryStore": ".stores._base",
    "EntryWrite": ".stores._base",
    "open_entry_store": ".stores._url",
}


def __getattr__(name: str) -> _typing.Any:
    if name in _LAZY:
        return getattr(_importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ATOM_TYPES",
    "AccessDenied",
    "AtomType",
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
    "StoreFailed",
    "StoreUnavailable",
    "build_server",
    "find_project",
    "load_settings",
    "new_token",
    "open_entry_store",
    "open_state",
    "pin_scope",
    "pinned_scope",
    "private_dir",
    "private_file",
    "replacing",
    "run_bridge",
    "serve_http",
    "serve_stdio",
    "write_atomically",
    "write_scope",
]
