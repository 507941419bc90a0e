"""Copying entries, with their revisions and history, from one store to another, verified."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from .._errors import Conflict
from ..core._redact_fields import redact_record
from ..stores._base import EntryRecord, EntryStore

__all__ = ["Fingerprint", "TransferReport", "copy_entries", "fingerprint", "same_fingerprint", "verify_copy"]

_EXPIRY_TOLERANCE_SECONDS = 5.0


@dataclass
class TransferReport:
    copied: int = 0
    live: int = 0
    deleted: int = 0
    mismatched: list[str] = field(default_factory=list)


async def _has_records(store: EntryStore) -> bool:
    async for batch in store.export_records():
        if batch:
            return True
    return False


Fingerprint = tuple[bytes, float | None]


def fingerprint(record: EntryRecord) -> Fingerprint:
    """A compact stand-in for a record: a digest of its content plus its expiry."""
    content = [None if record.entry is None else record.entry.to_dict(), record.revision, record.history]
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).digest(), record.expires_at


def same_fingerprint(a: Fingerprint, b: Fingerprint) -> bool:
    """Equal content, and expiries equal within the tolerance two stores' clocks need."""
    if a[0] != b[0] or (a[1] is None) != (b[1] is None):
        return False
    return a[1] is None or abs(a[1] - (b[1] or 0)) <= _EXPIRY_TOLERANCE_SECONDS


def _copied(record: EntryRecord, redact_entries: bool) -> EntryRecord:
    return redact_record(record) if redact_entries else record


async def verify_copy(source: EntryStore, target: EntryStore, *, redact_entries: bool = True) -> list[str]:
    """Ids whose record in `target` differs from `source`'s (redacted if `redact_entries`,
    as the copy was) or is missing there."""
    expected: dict[str, Fingerprint] = {}
    async for batch in source.export_records():
        expected.update((r.id, fingerprint(_copied(r, redact_entries))) for r in batch)
    async for batch in target.export_records():
        for record in batch:
            wanted = expected.get(record.id)
            if wanted is not None and same_fingerprint(wanted, fingerprint(record)):
                del expected[record.id]
    return sorted(expected)


async def copy_entries(
    source: EntryStore,
    target: EntryStore,
    *,
    merge: bool,
    progress: Callable[[int], None] = lambda n: None,
    redact_entries: bool = True,
) -> TransferReport:
    """Copy every record of `source` into `target`, then compare both record by record.

    Refuses a target that already holds entries unless `merge` is set, in which case
    ids present in both take the source's record and the target's other ids stay.
    Secrets are redacted on the way unless `redact_entries` is off (the setting).
    """
    if not merge and await _has_records(target):
        raise Conflict(
            f"target: {target.url} already holds entries; pass --merge to overwrite the ids both stores have",
            operation="migrate-store",
        )
    report = TransferReport()
    async for batch in source.export_records():
        await target.import_records([_copied(r, redact_entries) for r in batch])
        report.copied += len(batch)
        report.live += sum(1 for r in batch if r.entry is not None)
        report.deleted += sum(1 for r in batch if r.entry is None)
        progress(len(batch))
    report.mismatched = await verify_copy(source, target, redact_entries=redact_entries)
    return report
