"""Item writes beside `save_item`: creating an item a person wrote, and what a save would do.

`create_item` makes a new entry or document only where none is (an entry id that is free or
deleted, a document name unused in its slot), with the same validation and redaction as an
edit; `preview_save` answers what `save_item` would answer for the item as it was read,
writing nothing, so an import can be shown before it is applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .._errors import InvalidInput
from ..stores._knowledge import METADATA_FIELDS
from ._entries import set_entry
from ._fields import EntryId
from ._items import (
    EntryItem,
    Item,
    ItemStores,
    SaveOutcome,
    _checked,
    _differs,
    _document_content,
    _entry_write,
    _unknown_fields,
    content_digest,
)
from ._redact import redact
from ._redact_fields import redact_metadata

__all__ = ["CreateOutcome", "create_item", "preview_save"]

_ENTRY_FIELDS = ("title", "type", "tags", "source", "project", "text")
_DOCUMENT_FIELDS = ("enabled", *METADATA_FIELDS, "text")


@dataclass(frozen=True, slots=True)
class CreateOutcome:
    """What a create did (or would do): `created`, or `conflict` when the item is already
    there (nothing written). `ref` is the new item's reference (`SLOT/NAME` for a document
    not yet made)."""

    status: Literal["created", "conflict"]
    ref: str
    detail: str = ""


def _check_fields(kind: str, content: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    extra = sorted(set(content) - set(allowed))
    if extra:
        raise InvalidInput(extra[0], f"is not a field of an item of kind {kind}")
    missing = [key for key in allowed if key not in content]
    if missing:
        raise InvalidInput(missing[0], "is missing")


async def create_item(
    stores: ItemStores,
    kind: Literal["entry", "document"],
    identity: Mapping[str, str],
    content: Mapping[str, Any],
    *,
    dry_run: bool = False,
    origin: str = "memctl",
) -> CreateOutcome:
    """Create the entry `identity["id"]` or the document `identity["name"]` in the slot
    `identity["slot"]`, holding `content` (every field an edit could change). Invalid
    content is `InvalidInput`; an item already there is a `conflict` and nothing is written.
    With `dry_run`, everything is checked and nothing written."""
    if kind == "entry":
        return await _create_entry(stores, identity.get("id", ""), content, dry_run=dry_run)
    return await _create_document(
        stores, identity.get("slot", ""), identity.get("name", ""), content, dry_run=dry_run, origin=origin
    )


async def _create_entry(
    stores: ItemStores, id: str, content: Mapping[str, Any], *, dry_run: bool
) -> CreateOutcome:
    _check_fields("entry", content, _ENTRY_FIELDS)
    id = _checked(EntryId, "id", id)
    if stores.redact_entries and redact(id) != id:
        raise InvalidInput("id", "looks like it holds a secret; choose another id")
    write = _entry_write(id, content)
    ref = f"entry:{id}"
    newest = await stores.entries.history(id, 1)  # no hit counted, unlike get
    if newest and newest[0].get("operation") != "deleted":
        return CreateOutcome("conflict", ref, f"entry {id} already exists: export again to edit it")
    if dry_run:
        return CreateOutcome("created", ref)
    result = await set_entry(
        stores.entries,
        write,
        ttl=None,
        if_version=int(newest[0].get("rev", 0)) if newest else 0,  # only while the id is free
        operation_id=None,
        max_entries_warn=stores.max_entries_warn,
        redact_secrets=stores.redact_entries,
    )
    if not result.ok:
        return CreateOutcome("conflict", ref, f"entry {id} was created by another writer meanwhile")
    return CreateOutcome("created", ref, f"revision {result.revision}")


async def _create_document(
    stores: ItemStores, slot: str, name: str, content: Mapping[str, Any], *, dry_run: bool, origin: str
) -> CreateOutcome:
    _check_fields("document", content, _DOCUMENT_FIELDS)
    slots = list(await stores.knowledge.slot_ids())
    if slot not in slots:
        known = ", ".join(slots) or "none"
        raise InvalidInput(
            "slot", f"{slot!r} is not a knowledge slot of this project (slots: {known}); make one first"
        )
    name = name.strip()
    if not name:
        raise InvalidInput("name", "must not be empty")
    if redact(name) != name:
        raise InvalidInput("name", "looks like it holds a secret; choose another name")
    text, metadata, enabled = _document_content(content)
    found = await stores.knowledge.find(slot, name)
    if found is not None:
        return CreateOutcome(
            "conflict", f"doc:{found.id}", f"document {slot}/{name} already exists: export again to edit it"
        )
    if dry_run:
        return CreateOutcome("created", f"{slot}/{name}")
    outcome = await stores.knowledge.upsert(
        slot, name, redact(text), redact_metadata(metadata), origin=origin
    )
    if not enabled:
        await stores.knowledge.set_enabled(slot, outcome.document_id, False)
    return CreateOutcome("created", f"doc:{outcome.document_id}")


def preview_save(
    item: Item, content: Mapping[str, Any], *, base_digest: str, base_revision: int | None
) -> SaveOutcome:
    """What `save_item(stores, item, content, ...)` would answer if the store still held
    `item` as read: the same validation errors, `unchanged`, `updated` or `conflict`."""
    _unknown_fields(item, content)
    wanted = dict(content)
    if content_digest(wanted) == base_digest:
        return SaveOutcome("unchanged", item.ref)
    now = item.content()
    if isinstance(item, EntryItem):
        _entry_write(item.entry.id, wanted)
        if item.revision == base_revision:
            return SaveOutcome("updated", item.ref, f"revision {item.revision + 1}")
        if now == wanted:
            return SaveOutcome("unchanged", item.ref)
        return SaveOutcome(
            "conflict",
            item.ref,
            f"entry {item.entry.id} changed after revision {base_revision} (now at revision {item.revision})",
            _differs(now, wanted),
        )
    _document_content(wanted)
    doc = item.document
    if now == wanted:
        return SaveOutcome("unchanged", item.ref)
    if content_digest(now) != base_digest:
        return SaveOutcome(
            "conflict",
            item.ref,
            f"document {doc.slot}/{doc.name} was changed meanwhile",
            _differs(now, wanted),
        )
    return SaveOutcome("updated", item.ref)
