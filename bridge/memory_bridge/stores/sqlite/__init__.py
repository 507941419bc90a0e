"""The embedded SQLite stores: their schema versions, the entry store, the knowledge store and
the knobs of its hybrid ranking (`Ranking`).

Names load on first use."""

import typing as _typing

from ..._lazy import lazy_attributes as _lazy_attributes

_LAZY = {
    "KNOWLEDGE_SCHEMA_VERSION": "._knowledge_schema",
    "SCHEMA_VERSION": "._schema",
    "SqliteKnowledgeStore": "._knowledge",
    "SqliteEntryStore": "._entries",
    "Ranking": "._knowledge_ranking",
}

# mypy sees the names themselves (a misspelt import fails the type check), Python the lazy lookup.
if _typing.TYPE_CHECKING:
    from ._entries import SqliteEntryStore
    from ._knowledge import SqliteKnowledgeStore
    from ._knowledge_ranking import Ranking
    from ._knowledge_schema import KNOWLEDGE_SCHEMA_VERSION
    from ._schema import SCHEMA_VERSION
else:
    __getattr__ = _lazy_attributes(__name__, _LAZY)

__all__ = [
    "KNOWLEDGE_SCHEMA_VERSION",
    "SCHEMA_VERSION",
    "Ranking",
    "SqliteEntryStore",
    "SqliteKnowledgeStore",
]
