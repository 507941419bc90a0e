"""Merging an archived entry into a store that has its own record of the same id.

The target's history is never replaced: where the archive's current version differs from
the target's, it is written as a new revision on top of the target's (a deletion as a
tombstone), so every earlier version stays in `memory_history` and can be rolled back to.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from .._errors import Conflict
from ..stores._base import EntryRecord, EntryStore, EntryWrite
from ._transfer import Fingerprint, fingerprint

__all__ = ["Content", "Seen", "merge_entry", "seen"]

Content = tuple[str, str, str, tuple[str, ...], str, str] | None  # None: the id is deleted


@dataclass(frozen=True)
class Seen:
    """What a restore compares of one record: all of it, its current content, its revision."""

    fingerprint: Fingerprint
    content: Content
    revision: int


def _content(record: EntryRecord) -> Content:
    e = record.entry
    return None if e is None else (e.title, e.body, e.type, e.tags, e.source, e.project)


def seen(record: EntryRecord) -> Seen:
    return Seen(fingerprint(record), _content(record), record.revision)


def _ttl(record: EntryRecord, now: float) -> int | None:
    return None if record.expires_at is None else max(1, math.ceil(record.expires_at - now))


async def merge_entry(store: EntryStore, incoming: EntryRecord, current: Seen) -> bool:
    """Put `incoming`'s version on top of the target's record; False when it already is there.

    Compare-and-set on the target's revision: a write that lands meanwhile is a Conflict,
    and nothing is replaced."""
    content = _content(incoming)
    if content == current.content:
        return False
    if incoming.entry is None:
        outcome = await store.delete(incoming.id)
        if outcome is None:
            raise Conflict(f"{incoming.id} changed during the restore", operation="restore")
        return True
    e = incoming.entry
    write = EntryWrite(e.id, e.title, e.body, e.type, e.tags, e.source, e.project)
    expected = current.revision if current.revision else None
    applied = await store.set(write, ttl=_ttl(incoming, time.time()), if_version=expected, operation_id=None)
    if applied.status != "applied":
        raise Conflict(
            f"{incoming.id} changed during the restore (revision {applied.current_revision}, "
            f"expected {current.revision}); nothing of it was replaced",
            operation="restore",
        )
    return True
