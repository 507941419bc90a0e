"""memory_bridge: memctl's MCP server (the data plane) and its public API.

Code outside the bridge (memctl, the Ansible collection, bench/, scripts/) imports only the
names exported here and by `memory_bridge.core` (operations shared with the CLI),
`memory_bridge.maintenance` (backup, migrations, compaction, the maintenance passes),
`memory_bridge.stores` (with `stores.sqlite`, `stores.valkey` and `stores.dify`) and `memory_bridge.search`;
an import-linter contract in pyproject.toml keeps it so. The errors import eagerly; everything
else loads on first use, so a command that only needs an error class or one store (a hook, an
Ansible module) does not pay for the MCP server.
"""

import typing as _typing

from ._errors import (
    AccessDenied,
    ConfigError,
    Conflict,
    EmbedderUnavailable,
    InvalidInput,
    LinkRefused,
    MemctlError,
    MetadataPending,
    NotFound,
    StoreError,
    StoreFailed,
    StoreUnavailable,
)
from ._lazy import lazy_attributes as _lazy_attributes

_LAZY = {
    "one_blas_thread": "._blas",
    "bound_socket": "._sockets",
    "caused_by": "._cause",
    "name_cause": "._cause",
    "check_workspace": "._workspace_root",
    "find_project": "._settings",
    "pin_scope": "._identity",
    "pinned_scope": "._identity",
    "write_scope": "._identity",
    "private_dir": "._files",
    "private_file": "._files",
    "replacing": "._files",
    "write_atomically": "._files",
    "open_beneath": "._links",
    "remove_beneath": "._links",
    "set_mode": "._links",
    "open_state": "._serve",
    "run_bridge": "._serve",
    "serve_http": "._serve",
    "serve_stdio": "._serve",
    "build_server": "._server",
    "Settings": "._settings",
    "load_settings": "._settings",
    "read_token_file": "._settings",
    "new_token": "._tokens",
    "rotate_token": "._tokens",
    "Entry": ".stores",
    "EntryStore": ".stores",
    "EntryWrite": ".stores",
    "open_entry_store": ".stores",
    "AppState": ".tools",
    "ENTRY_TOOLS": ".tools",
    "KNOWLEDGE_TOOLS": ".tools",
}

# mypy sees the names themselves (a misspelt import fails the type check), Python the lazy lookup.
if _typing.TYPE_CHECKING:
    from ._blas import one_blas_thread
    from ._cause import caused_by, name_cause
    from ._files import private_dir, private_file, replacing, write_atomically
    from ._identity import pin_scope, pinned_scope, write_scope
    from ._links import open_beneath, remove_beneath, set_mode
    from ._serve import open_state, run_bridge, serve_http, serve_stdio
    from ._server import build_server
    from ._settings import Settings, find_project, load_settings, read_token_file
    from ._sockets import bound_socket
    from ._tokens import new_token, rotate_token
    from ._workspace_root import check_workspace
    from .stores import Entry, EntryStore, EntryWrite, open_entry_store
    from .tools import ENTRY_TOOLS, KNOWLEDGE_TOOLS, AppState
else:
    __getattr__ = _lazy_attributes(__name__, _LAZY)

__all__ = [
    "ENTRY_TOOLS",
    "KNOWLEDGE_TOOLS",
    "AccessDenied",
    "AppState",
    "ConfigError",
    "Conflict",
    "EmbedderUnavailable",
    "Entry",
    "EntryStore",
    "EntryWrite",
    "InvalidInput",
    "LinkRefused",
    "MemctlError",
    "MetadataPending",
    "NotFound",
    "Settings",
    "StoreError",
    "StoreFailed",
    "StoreUnavailable",
    "bound_socket",
    "build_server",
    "caused_by",
    "check_workspace",
    "find_project",
    "load_settings",
    "name_cause",
    "new_token",
    "one_blas_thread",
    "open_beneath",
    "open_entry_store",
    "open_state",
    "pin_scope",
    "pinned_scope",
    "private_dir",
    "private_file",
    "read_token_file",
    "remove_beneath",
    "replacing",
    "rotate_token",
    "run_bridge",
    "serve_http",
    "serve_stdio",
    "set_mode",
    "write_atomically",
    "write_scope",
]
