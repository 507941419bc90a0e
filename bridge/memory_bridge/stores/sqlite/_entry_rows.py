"""Entry rows: the columns read and how a row becomes an `Entry`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._base import Entry

__all__ = ["ENTRY_COLUMNS", "LIVE", "RANK", "RETURNING", "entry_of"]

COLUMNS = ("id", "title", "body", "type", "tags", "source", "project", "created", "updated", "hits", "ttl")
ENTRY_COLUMNS = ", ".join(f"e.{c}" for c in COLUMNS)
RETURNING = ", ".join(COLUMNS)
LIVE = "(e.expires_at IS NULL OR e.expires_at > ?)"
# bm25 weights per FTS column: id, title, body, tags
RANK = "bm25(entries_fts, 4.0, 6.0, 1.0, 4.0)"


def entry_of(row: Sequence[Any]) -> Entry:
    return Entry(
        id=row[0],
        title=row[1],
        body=row[2],
        type=row[3],
        tags=tuple(json.loads(row[4])),
        source=row[5],
        project=row[6],
        created=row[7],
        updated=row[8],
        hits=int(row[9]),
        ttl="" if row[10] is None else str(row[10]),
    )
