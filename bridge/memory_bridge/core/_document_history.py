"""Documents' history as the tools, the CLI and the web view show it: every version of a
document (deleted ones included), and rolling a document back to any of them.

A document is named by its slot and name (its id changes when a deleted document is saved
again; the history does not). Times are ISO 8601 in UTC.
"""

from __future__ import annotations

import difflib
import json
from datetime import UTC, datetime
from typing import Any, TypeVar

from .._errors import InvalidInput, NotFound, StoreFailed
from ..stores._knowledge import KnowledgeStore
from ..stores._version_log import DocumentVersion
from ..stores._versioned import VersionedKnowledgeStore
from ._item_results import DeletedDocument, DocumentItemHistory, DocumentItemVersion
from ._knowledge import resolve_slot
from ._results import DocumentHistoryResult, DocumentRollbackResult, DocumentVersionModel, Metadata

__all__ = [
    "deleted_documents",
    "document_history",
    "document_history_with_diffs",
    "locate_document",
    "rollback_document",
    "version_model",
    "versioned",
]


def versioned(store: KnowledgeStore) -> VersionedKnowledgeStore:
    """The store's version log, or an error when it was opened without one."""
    if not isinstance(store, VersionedKnowledgeStore):
        raise StoreFailed(
            "this knowledge store was opened without its version log; open it with open_knowledge_store",
            operation="history",
        )
    return store


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


async def locate_document(
    store: KnowledgeStore, dataset: str | None, *, document_id: str | None = None, name: str | None = None
) -> tuple[str, str]:
    """The slot and name of a document, live or deleted, from its slot (name or id; may be
    left out with a document id) and its id or name."""
    log = versioned(store)
    slot: str | None = None
    if dataset is not None:
        try:
            slot = await resolve_slot(store, dataset)
        except InvalidInput:
            if not await log.log.history(dataset, name or "", limit=1) and document_id is None:
                raise
            slot = dataset  # a slot that is gone: its documents' history is still kept
    if name is not None:
        if slot is None:
            raise InvalidInput("dataset", "is needed to find a document by name")
        return slot, name
    if document_id is None:
        raise InvalidInput("documentId", "give the document's id or its name")
    found = await log.locate(slot, document_id)
    if found is None or (slot is not None and found[0] != slot):
        where = f" in slot {slot}" if slot is not None else ""
        raise NotFound(f"no document {document_id}{where}, live or deleted", operation="history")
    return found


V = TypeVar("V", bound=DocumentVersionModel)


def _version_fields(v: DocumentVersion) -> dict[str, Any]:
    """What every answer about a version says of it, its text aside."""
    return {
        "version": v.version,
        "documentId": v.document_id,
        "change": v.change,
        "deleted": v.deleted,
        "at": iso(v.at),
        "cause": v.cause,
        "operation_id": v.operation_id,
        "restored_from": v.restored_from,
        "enabled": v.state.enabled,
        "metadata": Metadata.of(v.state.metadata),
        "marks": dict(v.state.marks),
    }


def version_model(model: type[V], v: DocumentVersion, **more: Any) -> V:
    """A version as `document_history` answers it (its text not fenced yet), as `model`
    with its `more` fields."""
    return model(**_version_fields(v), text=v.state.text, **more)


def _version_lines(v: DocumentVersion | None) -> list[str]:
    """A version as lines for a diff: its metadata, state and marks, then its text."""
    if v is None:
        return []
    head = [f"{k}: {json.dumps(val, ensure_ascii=False)}" for k, val in v.state.metadata.to_dict().items()]
    head.append(f"enabled: {json.dumps(v.state.enabled)}")
    head += [f"mark {k}: {val}" for k, val in sorted(v.state.marks.items())]
    if v.deleted:
        head.append("(deleted)")
    return [*head, "", *v.state.text.splitlines()]


def diff(older: DocumentVersion | None, newer: DocumentVersion) -> str:
    before = f"version {older.version}" if older is not None else "(nothing)"
    lines = difflib.unified_diff(
        _version_lines(older), _version_lines(newer), before, f"version {newer.version}", lineterm=""
    )
    return "\n".join(lines)


async def _page(
    store: KnowledgeStore, slot: str, name: str, limit: int, before: int | None
) -> tuple[list[DocumentVersion], DocumentVersion, int | None]:
    """The versions a history page reads (one more than `limit` when there is one: the last
    shown version's diff starts from it), the document's newest version, and the `before`
    that asks for the next page (None on the last)."""
    log = versioned(store)
    versions = await log.history(slot, name, limit=limit + 1, before=before)
    if not versions:
        raise NotFound(f"document {slot}/{name} has no recorded versions", operation="history")
    newest = versions[0] if before is None else (await log.log.latest(slot, name) or versions[0])
    return versions, newest, versions[limit - 1].version if len(versions) > limit else None


async def document_history(
    store: KnowledgeStore, slot: str, name: str, *, limit: int, before: int | None = None
) -> DocumentHistoryResult:
    """A document's versions, newest first: `limit` of them, older than `before` if given."""
    versions, newest, next_before = await _page(store, slot, name, limit, before)
    shown = versions[:limit]
    return DocumentHistoryResult(
        slot=slot,
        name=name,
        latest_version=newest.version,
        deleted=newest.deleted,
        count=len(shown),
        versions=[version_model(DocumentVersionModel, v) for v in shown],
        next_before=next_before,
    )


async def document_history_with_diffs(
    store: KnowledgeStore, slot: str, name: str, *, limit: int
) -> DocumentItemHistory:
    """The newest `limit` versions, each with the unified diff from the version before it
    (what `memctl history` and the web view show)."""
    versions, newest, next_before = await _page(store, slot, name, limit, None)
    older = [*versions[1:], None]
    shown = [
        version_model(DocumentItemVersion, v, diff=diff(before, v))
        for v, before in zip(versions[:limit], older, strict=False)
    ]
    return DocumentItemHistory(
        ref=f"{slot}/{name}",
        kind="document",
        slot=slot,
        name=name,
        latest_version=newest.version,
        deleted=newest.deleted,
        count=len(shown),
        versions=shown,
        next_before=next_before,
    )


async def rollback_document(
    store: KnowledgeStore, slot: str, name: str, version: int, *, expected_version: int | None
) -> DocumentRollbackResult:
    """Bring `version` back as the document's newest version (undeleting it if deleted);
    with `expected_version`, only if nobody changed it since that version was the newest."""
    done = await versioned(store).rollback(slot, name, version, expected=expected_version)
    return DocumentRollbackResult(
        ok=True,
        slot=slot,
        name=name,
        documentId=done.version.document_id,
        version=done.version.version,
        restored_from=done.restored_from,
        undeleted=done.undeleted,
    )


async def deleted_documents(store: KnowledgeStore, slot: str | None = None) -> list[DeletedDocument]:
    """Documents deleted and not brought back, newest deletion first."""
    return [
        DeletedDocument(slot=v.slot, name=v.name, **_version_fields(v))
        for v in await versioned(store).deleted(slot)
    ]
