"""The Valkey entry store (memory-mcp's store on Valkey, standalone or a cluster).

Names load on first use, so a caller that never talks to Valkey does not import its client."""

import typing as _typing

from ..._lazy import lazy_attributes as _lazy_attributes

_LAZY = {
    "ValkeyEntryStore": "._entries",
}

# mypy sees the names themselves (a misspelt import fails the type check), Python the lazy lookup.
if _typing.TYPE_CHECKING:
    from ._entries import ValkeyEntryStore
else:
    __getattr__ = _lazy_attributes(__name__, _LAZY)

__all__ = ["ValkeyEntryStore"]
