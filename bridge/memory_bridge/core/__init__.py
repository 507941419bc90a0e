"""The operations behind the MCP tools, shared with the memctl CLI and the web view: entries,
knowledge search and writes and lessons, recall stamping, workspace scans and absorb, the
memory audit, items (entries and documents) as a person looks them up, corrects them and
rolls them back, and redaction on every write path.

Maintenance and operations on a whole store (backup, migrations, compaction, the maintenance
passes and their run records) live in `memory_bridge.maintenance`, above this package.

Names load on first use, so a caller that only redacts text does not import the stores."""

import typing as _typing

from .._lazy import lazy_attributes as _lazy_attributes

_LAZY = {
    "AUDIT_CLASSES": "._audit",
    "audit_memory": "._audit",
    "retire": "._audit",
    "Finding": "._results",
    "Freshness": "._freshness",
    "HistoryTarget": "._item_history",
    "deleted_entries": "._item_history",
    "history_of": "._item_history",
    "history_target": "._item_history",
    "rollback_to": "._item_history",
    "deleted_documents": "._document_history",
    "document_history": "._document_history",
    "document_history_with_diffs": "._document_history",
    "locate_document": "._document_history",
    "rollback_document": "._document_history",
    "CUT_MARK": "._items",
    "DocumentItem": "._items",
    "EntryItem": "._items",
    "Item": "._items",
    "ItemStores": "._items",
    "SaveOutcome": "._items",
    "content_digest": "._items",
    "find_item": "._items",
    "forget_item": "._items",
    "item_versions": "._items",
    "iter_items": "._items",
    "list_lessons": "._items",
    "rollback_item": "._items",
    "save_item": "._items",
    "search_items": "._items",
    "DocumentItemVersion": "._item_results",
    "EntryItemVersion": "._item_results",
    "ItemHistory": "._item_results",
    "ItemRollback": "._item_results",
    "ItemSearchResult": "._item_results",
    "Lesson": "._item_results",
    "CreateOutcome": "._item_writes",
    "create_item": "._item_writes",
    "preview_save": "._item_writes",
    "ATOM_TYPES": "._knowledge",
    "KnowledgeContext": "._knowledge",
    "lesson_name": "._knowledge",
    "nothing_found": "._knowledge",
    "save_to_dataset": "._knowledge",
    "slugify": "._knowledge",
    "redact": "._redact",
    "delete_entry": "._entries",
    "entry_history": "._entries",
    "get_entry": "._entries",
    "list_entries": "._entries",
    "prune_candidates": "._entries",
    "rollback_entry": "._entries",
    "search_entries": "._entries",
    "set_entry": "._entries",
    "RecallStamper": "._recall",
}

# mypy sees the names themselves (a misspelt import fails the type check), Python the lazy lookup.
if _typing.TYPE_CHECKING:
    from ._audit import AUDIT_CLASSES, audit_memory, retire
    from ._document_history import (
        deleted_documents,
        document_history,
        document_history_with_diffs,
        locate_document,
        rollback_document,
    )
    from ._entries import (
        delete_entry,
        entry_history,
        get_entry,
        list_entries,
        prune_candidates,
        rollback_entry,
        search_entries,
        set_entry,
    )
    from ._freshness import Freshness
    from ._item_history import HistoryTarget, deleted_entries, history_of, history_target, rollback_to
    from ._item_results import (
        DocumentItemVersion,
        EntryItemVersion,
        ItemHistory,
        ItemRollback,
        ItemSearchResult,
        Lesson,
    )
    from ._item_writes import CreateOutcome, create_item, preview_save
    from ._items import (
        CUT_MARK,
        DocumentItem,
        EntryItem,
        Item,
        ItemStores,
        SaveOutcome,
        content_digest,
        find_item,
        forget_item,
        item_versions,
        iter_items,
        list_lessons,
        rollback_item,
        save_item,
        search_items,
    )
    from ._knowledge import ATOM_TYPES, KnowledgeContext, lesson_name, nothing_found, save_to_dataset, slugify
    from ._recall import RecallStamper
    from ._redact import redact
    from ._results import Finding
else:
    __getattr__ = _lazy_attributes(__name__, _LAZY)

__all__ = [
    "ATOM_TYPES",
    "AUDIT_CLASSES",
    "CUT_MARK",
    "CreateOutcome",
    "DocumentItem",
    "DocumentItemVersion",
    "EntryItem",
    "EntryItemVersion",
    "Finding",
    "Freshness",
    "HistoryTarget",
    "Item",
    "ItemHistory",
    "ItemRollback",
    "ItemSearchResult",
    "ItemStores",
    "KnowledgeContext",
    "Lesson",
    "RecallStamper",
    "SaveOutcome",
    "audit_memory",
    "content_digest",
    "create_item",
    "delete_entry",
    "deleted_documents",
    "deleted_entries",
    "document_history",
    "document_history_with_diffs",
    "entry_history",
    "find_item",
    "forget_item",
    "get_entry",
    "history_of",
    "history_target",
    "item_versions",
    "iter_items",
    "lesson_name",
    "list_entries",
    "list_lessons",
    "locate_document",
    "nothing_found",
    "preview_save",
    "prune_candidates",
    "redact",
    "retire",
    "rollback_document",
    "rollback_entry",
    "rollback_item",
    "rollback_to",
    "save_item",
    "save_to_dataset",
    "search_entries",
    "search_items",
    "set_entry",
    "slugify",
]
