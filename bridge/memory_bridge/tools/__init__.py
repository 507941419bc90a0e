"""The MCP tools: one module-level async function per tool, registered by `_server`.

What code outside the tools needs of them: the names of each tool set, and the state the
server's lifespan hands every tool (`AppState`, which `memory_bridge.open_state` opens).
Names load on first use, so asking for the state does not import every tool."""

import typing as _typing

from .._lazy import lazy_attributes as _lazy_attributes

_LAZY = {
    "ENTRY_TOOLS": "._entries",
    "KNOWLEDGE_TOOLS": "._knowledge",
    "AppState": "._state",
}

# mypy sees the names themselves (a misspelt import fails the type check), Python the lazy lookup.
if _typing.TYPE_CHECKING:
    from ._entries import ENTRY_TOOLS
    from ._knowledge import KNOWLEDGE_TOOLS
    from ._state import AppState
else:
    __getattr__ = _lazy_attributes(__name__, _LAZY)

__all__ = ["ENTRY_TOOLS", "KNOWLEDGE_TOOLS", "AppState"]
