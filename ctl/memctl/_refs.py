"""Short references to items for tables: `SLOT/NAME` for a document, `entry:ID` for an entry.

`memctl show` (and every command taking a reference) accepts both; --json keeps the full
`doc:ID`/`entry:ID` refs and ids beside them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory_bridge.core import CUT_MARK

__all__ = ["document_ref", "entry_ref", "short_ref"]

_ID_SHOWN = 24  # longer entry ids (a UUID is 36) are cut in tables: --json has them whole


def document_ref(slot: str, name: str) -> str:
    """`SLOT/NAME`, which names one document as `memctl show` takes it."""
    return f"{slot}/{name}"


def entry_ref(id: str) -> str:
    """`entry:ID`; an id too long for a table is cut after its first characters, marked `…`
    (`memctl show` and the other commands taking a reference accept it so)."""
    return f"entry:{id}" if len(id) <= _ID_SHOWN else f"entry:{id[:12]}{CUT_MARK}"


def short_ref(item: Mapping[str, Any]) -> str:
    """The short reference of a search hit, lesson or item's --json object (`kind`, `slot`,
    `name`, `id`/`document_id` as those objects carry them)."""
    if item.get("kind") == "entry":
        return entry_ref(str(item["id"]))
    if item.get("slot") and item.get("name"):
        return document_ref(str(item["slot"]), str(item["name"]))
    return str(item.get("ref", ""))
