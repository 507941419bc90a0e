"""Which query words are worth matching: words in a large share of all passages are left
out of the keyword match, as Lucene's common-terms query does.

BM25 gives such a word little weight (its idf is low), yet matching it means scoring a
large part of the store: at 100k passages one common word costs more than everything else
in a search. Ranking by the rarer words of the query finds the same best documents; when
every word is common, all of them must match (an AND is far narrower than an OR).
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Literal

from ._match import match_expression

__all__ = ["COMMON_FLOOR", "COMMON_SHARE", "TermFrequencies"]

COMMON_SHARE = 0.1  # of all passages: a word matching more is too common to discriminate
COMMON_FLOOR = 2_000  # passages; below this, matching a word is cheap whatever its share
_CACHE = 4_096
_DRIFT = 1.1  # a cached count is reused until the store grows or shrinks by this factor


def _limit(size: int) -> int:
    """Passages a word may match and still count as discriminating, of `size`."""
    return max(COMMON_FLOOR, int(COMMON_SHARE * size))


class TermFrequencies:
    """Passage counts of query words (as the full-text index matches them), cached."""

    def __init__(self) -> None:
        # (word, prefix rule) -> (passages matched, store size then)
        self._counts: dict[tuple[str, int | None], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def _matches(
        self, conn: sqlite3.Connection, term: str, prefix_min: int | None, size: int, cap: int
    ) -> float:
        """How many passages the word matches, counted up to `cap` (infinity beyond)."""
        with self._lock:
            cached = self._counts.get((term, prefix_min))
        if cached is not None and cached[1] / _DRIFT <= size <= cached[1] * _DRIFT:
            return cached[0]
        count: float = int(
            conn.execute(
                "SELECT count(*) FROM (SELECT rowid FROM passages_fts WHERE passages_fts MATCH ? LIMIT ?)",
                (match_expression([term], "any", prefix_min), cap),
            ).fetchone()[0]
        )
        if count >= cap:
            count = float("inf")
        with self._lock:
            if len(self._counts) >= _CACHE:
                self._counts.clear()
            self._counts[(term, prefix_min)] = (count, size)
        return count

    def passages(self, conn: sqlite3.Connection, term: str, size: int) -> float:
        """How many of the `size` passages the whole word matches (stemmed), counted up to
        the common-word limit (infinity beyond)."""
        return self._matches(conn, term, None, size, _limit(size) + 1)

    def match(self, conn: sqlite3.Connection, terms: list[str], prefix_min: int | None) -> str:
        """The FTS5 match expression for a query's words: any of the discriminating ones,
        else all of them (`prefix_min`: see `match_expression`)."""
        mode: Literal["all", "any"] = "any"
        size = int(conn.execute("SELECT coalesce(max(rowid), 0) FROM passages").fetchone()[0])
        limit = _limit(size)
        if size > limit:  # otherwise no word can be common
            rare = [t for t in terms if self._matches(conn, t, prefix_min, size, limit + 1) <= limit]
            terms, mode = (rare, "any") if rare else (terms, "all")
        return match_expression(terms, mode, prefix_min)
