"""The history of any item, live or deleted, as a person asks for it by reference; and
rolling an item back to one of its versions.

Entries keep their versions in the entry store (their revisions), documents in the
knowledge store's version log; both are numbered 1, 2, … per item, one more per change,
so `version` means the same thing for both kinds.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .._errors import Conflict, InvalidInput, NotFound
from ._document_history import (
    deleted_documents,
    document_history_with_diffs,
    rollback_document,
    versioned,
)
from ._item_results import (
    DeletedEntry,
    DocumentItemRollback,
    EntryItemHistory,
    EntryItemRollback,
    EntryItemVersion,
    ItemHistory,
    ItemRollback,
)
from ._items import DocumentItem, EntryItem, ItemStores, find_item, only_one

__all__ = ["HistoryTarget", "deleted_entries", "history_of", "history_target", "rollback_to"]

_ENTRY_DEPTH = 1000  # the most entry versions a store keeps is far below this


@dataclass(frozen=True, slots=True)
class HistoryTarget:
    """An item whose history is asked for: an entry by id, a document by slot and name."""

    kind: Literal["entry", "document"]
    id: str = ""
    slot: str = ""
    name: str = ""

    @property
    def ref(self) -> str:
        return f"entry:{self.id}" if self.kind == "entry" else f"{self.slot}/{self.name}"


async def _deleted_entry(stores: ItemStores, id: str) -> HistoryTarget | None:
    return HistoryTarget("entry", id=id) if id and await stores.entries.history(id, 1) else None


async def _deleted_document(stores: ItemStores, ref: str) -> list[HistoryTarget]:
    log = versioned(stores.knowledge)
    found: list[HistoryTarget] = []
    located = await log.locate(None, ref.removeprefix("doc:"))
    if located is not None:
        found.append(HistoryTarget("document", slot=located[0], name=located[1]))
    if ref.startswith("doc:"):
        return found
    slot, sep, name = ref.partition("/")
    if sep and await log.log.latest(slot, name) is not None:
        found.append(HistoryTarget("document", slot=slot, name=name))
    found += [
        HistoryTarget("document", slot=d.slot, name=d.name)
        for d in await deleted_documents(stores.knowledge)
        if d.name == ref
    ]
    return found


async def history_target(stores: ItemStores, ref: str) -> HistoryTarget:
    """The item `ref` names, as `find_item` reads references, deleted items included."""
    try:
        item = await find_item(stores, ref)
    except NotFound:
        item = None
    if isinstance(item, EntryItem):
        return HistoryTarget("entry", id=item.entry.id)
    if isinstance(item, DocumentItem):
        return HistoryTarget("document", slot=item.document.slot, name=item.document.name)
    ref = ref.strip()
    candidates: list[HistoryTarget] = []
    if not ref.startswith("doc:") and (entry := await _deleted_entry(stores, ref.removeprefix("entry:"))):
        candidates.append(entry)
    if not ref.startswith("entry:"):
        candidates += await _deleted_document(stores, ref)
    return only_one(
        candidates, ref, missing=f"no entry or document {ref!r}, live or deleted", operation="history"
    )


_ENTRY_FIELDS = ("title", "type", "tags", "source", "project")


def _entry_lines(snapshot: Mapping[str, Any] | None) -> list[str]:
    if snapshot is None:
        return []
    head = [f"{key}: {json.dumps(snapshot.get(key), ensure_ascii=False)}" for key in _ENTRY_FIELDS]
    if snapshot.get("operation") == "deleted":
        head.append("(deleted)")
    return [*head, "", *str(snapshot.get("body", "")).splitlines()]


def _entry_version(snapshot: Mapping[str, Any], older: Mapping[str, Any] | None) -> EntryItemVersion:
    before = f"version {older.get('rev')}" if older is not None else "(nothing)"
    diff = difflib.unified_diff(
        _entry_lines(older), _entry_lines(snapshot), before, f"version {snapshot.get('rev')}", lineterm=""
    )
    return EntryItemVersion(
        version=int(snapshot.get("rev") or 0),
        change=str(snapshot.get("operation", "")),
        deleted=snapshot.get("operation") == "deleted",
        at=str(snapshot.get("updated", "")),
        title=snapshot.get("title"),
        type=snapshot.get("type"),
        tags=snapshot.get("tags"),
        source=snapshot.get("source"),
        project=snapshot.get("project"),
        body=str(snapshot.get("body", "")),
        diff="\n".join(diff),
    )


async def history_of(stores: ItemStores, target: HistoryTarget, *, limit: int) -> ItemHistory:
    """The item's versions, newest first, each with its diff from the version before."""
    if target.kind == "document":
        return await document_history_with_diffs(stores.knowledge, target.slot, target.name, limit=limit)
    snapshots = [s for s in await stores.entries.history(target.id, limit + 1) if "rev" in s]
    if not snapshots:
        raise NotFound(f"entry {target.id} has no recorded versions", operation="history")
    versions = [
        _entry_version(s, snapshots[i + 1] if i + 1 < len(snapshots) else None)
        for i, s in enumerate(snapshots[:limit])
    ]
    return EntryItemHistory(
        ref=target.ref,
        kind="entry",
        id=target.id,
        latest_version=versions[0].version,
        deleted=versions[0].deleted,
        count=len(versions),
        versions=versions,
    )


async def rollback_to(
    stores: ItemStores, target: HistoryTarget, version: int, *, expected_version: int | None
) -> ItemRollback:
    """Bring `version` back as the item's newest version (undeleting it if deleted); with
    `expected_version`, only if the newest version is still that one."""
    if target.kind == "document":
        done = await rollback_document(
            stores.knowledge, target.slot, target.name, version, expected_version=expected_version
        )
        return DocumentItemRollback(
            ref=target.ref,
            kind="document",
            ok=done.ok,
            slot=done.slot,
            name=done.name,
            documentId=done.documentId,
            version=done.version,
            restored_from=done.restored_from,
            undeleted=done.undeleted,
        )
    snapshots = [s for s in await stores.entries.history(target.id, _ENTRY_DEPTH) if "rev" in s]
    if not snapshots:
        raise NotFound(f"entry {target.id} has no recorded versions", operation="rollback")
    newest = int(snapshots[0]["rev"])
    if expected_version is not None and newest != expected_version:
        raise Conflict(
            f"entry {target.id} is at version {newest}, not {expected_version}: someone changed it since "
            "you read its history; read it again and retry",
            operation="rollback",
        )
    index = next((i for i, s in enumerate(snapshots) if int(s["rev"]) == version), None)
    if index is None:
        kept = f"{snapshots[-1]['rev']}..{newest}"
        raise NotFound(f"entry {target.id} has no version {version} (kept: {kept})", operation="rollback")
    if snapshots[index].get("operation") == "deleted":
        raise InvalidInput(
            "version", f"version {version} of entry {target.id} is its deletion; pick one before it"
        )
    outcome = await stores.entries.rollback(target.id, index)
    return EntryItemRollback(
        ref=target.ref,
        kind="entry",
        ok=True,
        id=target.id,
        version=outcome.revision,
        restored_from=version,
        undeleted=snapshots[0].get("operation") == "deleted",
    )


async def deleted_entries(stores: ItemStores) -> list[DeletedEntry]:
    """Entries deleted and not brought back, newest deletion first."""
    found: list[DeletedEntry] = []
    async for batch in stores.entries.export_records():
        for record in batch:
            if record.entry is not None or not record.history:
                continue
            newest = json.loads(record.history[0])
            if newest.get("operation") == "deleted" and "rev" in newest:
                found.append(
                    DeletedEntry(
                        id=record.id,
                        title=str(newest.get("title", "")),
                        at=str(newest.get("updated", "")),
                        version=int(newest["rev"]),
                    )
                )
    return sorted(found, key=lambda e: e.at, reverse=True)
