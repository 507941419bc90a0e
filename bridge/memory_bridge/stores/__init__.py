"""The stores: the entry and knowledge store protocols, their value types, opening a store from
its URL, and the calibration that turns a hit's evidence into relevance (`calibration`).
Adapter specifics are in `memory_bridge.stores.sqlite`, `.valkey` and `.dify`.

Names load on first use, so asking for a protocol does not import every adapter."""

import typing as _typing

from .._lazy import lazy_attributes as _lazy_attributes

_LAZY = {
    "Entry": "._base",
    "EntryFilter": "._base",
    "EntryRecord": "._base",
    "EntryStore": "._base",
    "EntryWrite": "._base",
    "DocMetadata": "._knowledge",
    "Document": "._knowledge",
    "KnowledgeFilter": "._knowledge",
    "KnowledgeStore": "._knowledge",
    "SearchMode": "._knowledge",
    "SearchPage": "._knowledge",
    "VersionedKnowledgeStore": "._versioned",
    "unversioned": "._versioned",
    "document_versions_path": "._url",
    "dify_outbox_path": "._url",
    "entry_store_scheme": "._url",
    "make_embedder": "._url",
    "open_entry_store": "._url",
    "open_knowledge_store": "._url",
    "open_stores": "._url",
    "sqlite_path": "._url",
    "EntryPage": "._base",
    "SearchHit": "._knowledge",
    "calibration": "._relevance",
}

# mypy sees the names themselves (a misspelt import fails the type check), Python the lazy lookup.
if _typing.TYPE_CHECKING:
    from ._base import Entry, EntryFilter, EntryPage, EntryRecord, EntryStore, EntryWrite
    from ._knowledge import (
        DocMetadata,
        Document,
        KnowledgeFilter,
        KnowledgeStore,
        SearchHit,
        SearchMode,
        SearchPage,
    )
    from ._relevance import calibration
    from ._url import (
        dify_outbox_path,
        document_versions_path,
        entry_store_scheme,
        make_embedder,
        open_entry_store,
        open_knowledge_store,
        open_stores,
        sqlite_path,
    )
    from ._versioned import VersionedKnowledgeStore, unversioned
else:
    __getattr__ = _lazy_attributes(__name__, _LAZY)

__all__ = [
    "DocMetadata",
    "Document",
    "Entry",
    "EntryFilter",
    "EntryPage",
    "EntryRecord",
    "EntryStore",
    "EntryWrite",
    "KnowledgeFilter",
    "KnowledgeStore",
    "SearchHit",
    "SearchMode",
    "SearchPage",
    "VersionedKnowledgeStore",
    "calibration",
    "dify_outbox_path",
    "document_versions_path",
    "entry_store_scheme",
    "make_embedder",
    "open_entry_store",
    "open_knowledge_store",
    "open_stores",
    "sqlite_path",
    "unversioned",
]
