"""What the item operations answer: the results `memctl search|show|history|rollback|forget|
lessons` and the web view render, built here in core so no edge re-reads a dict.

These are no tool's output schema, but they are results in the same sense as the tools'
(`_results.ToolResult`): a model serialises exactly the keys it was built with, in
declaration order, so `--json` prints each object as it did when core returned dicts. A
field that only one kind of item carries (a document's `slot`, an entry deletion's
`revision`) is optional and left out for the other kind, never `null`.
"""

from __future__ import annotations

from typing import Literal

from ..stores._version_log import Change
from ._results import DocumentVersionModel, Metadata, ToolResult

__all__ = [
    "DeletedDocument",
    "DeletedEntry",
    "DocumentItemHistory",
    "DocumentItemRollback",
    "DocumentItemVersion",
    "EntryItemHistory",
    "EntryItemRollback",
    "EntryItemVersion",
    "EntryRevision",
    "ForgetResult",
    "ItemHistory",
    "ItemHit",
    "ItemRollback",
    "ItemSearchResult",
    "Lesson",
]


# -- searching -------------------------------------------------------------------------------


class ItemHit(ToolResult):
    """An entry or a document a search found."""

    kind: Literal["entry", "document"]
    ref: str
    where: str
    id: str
    slot: str | None = None  # documents only
    name: str
    type: str
    tags: list[str]
    snippet: str
    rank: int
    score: float
    best_effort: bool | None = None  # only when under the threshold, kept because best effort was asked


class ItemSearchResult(ToolResult):
    query: str
    count: int
    threshold: float
    hits: list[ItemHit]
    best_effort: bool | None = None  # only when best effort was asked
    degraded: list[str]


# -- an entry's revisions (`memctl show`, the entry page) --------------------------------------


class EntryRevision(ToolResult):
    """One of an entry's versions, with the unified diff from the one before it. The fields
    are the stored snapshot's, None where it lacks one (an unreadable snapshot)."""

    index: int
    revision: int | None
    operation: str | None
    updated: str | None
    diff: str


# -- history of any item, deleted ones included ----------------------------------------------


class EntryItemVersion(ToolResult):
    """One version of an entry: its whole content then, and the diff from the version before."""

    version: int
    change: str
    deleted: bool
    at: str
    title: str | None
    type: str | None
    tags: list[str] | None
    source: str | None
    project: str | None
    body: str
    diff: str


class EntryItemHistory(ToolResult):
    ref: str
    kind: Literal["entry"]
    id: str
    latest_version: int
    deleted: bool
    count: int
    versions: list[EntryItemVersion]


class DocumentItemVersion(DocumentVersionModel):
    """A document's version as `document_history` answers it, with the diff from the one before."""

    diff: str


class DocumentItemHistory(ToolResult):
    ref: str
    kind: Literal["document"]
    slot: str
    name: str
    latest_version: int
    deleted: bool
    count: int
    versions: list[DocumentItemVersion]
    next_before: int | None


ItemHistory = EntryItemHistory | DocumentItemHistory


class EntryItemRollback(ToolResult):
    ref: str
    kind: Literal["entry"]
    ok: bool
    id: str
    version: int
    restored_from: int
    undeleted: bool


class DocumentItemRollback(ToolResult):
    ref: str
    kind: Literal["document"]
    ok: bool
    slot: str
    name: str
    documentId: str
    version: int
    restored_from: int
    undeleted: bool


ItemRollback = EntryItemRollback | DocumentItemRollback


class DeletedEntry(ToolResult):
    """An entry deleted and not brought back; `version` is its deletion's."""

    id: str
    title: str
    at: str
    version: int


class DeletedDocument(ToolResult):
    """A document deleted and not brought back: where it was and its deletion's version, as
    `DocumentVersionModel` has it, without the text."""

    slot: str
    name: str
    version: int
    documentId: str
    change: Change
    deleted: bool
    at: str
    cause: str
    operation_id: str
    restored_from: int | None
    enabled: bool
    metadata: Metadata
    marks: dict[str, str]


# -- forgetting, lessons ---------------------------------------------------------------------


class ForgetResult(ToolResult):
    ref: str
    action: Literal["deleted", "disabled"]
    revision: int | None = None  # entries: the deletion's revision


class Lesson(ToolResult):
    """A lesson of the self_improvement slot. Times are epoch seconds; `last_recalled` is
    None for a lesson never recalled."""

    ref: str
    name: str
    error_pattern: str
    project_module: str
    enabled: bool
    updated_at: float
    recall_count: int
    last_recalled: float | None
