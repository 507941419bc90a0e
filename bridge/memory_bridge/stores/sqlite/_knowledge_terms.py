"""Which query words are worth matching: words in a large share of all passages are left
out of the keyword match, as Lucene's common-terms query does.

BM25 gives such a word little weight (its idf is low), yet matching it means scoring a
large part of the store: at 100k passages one common word costs more than everything else
in a search. Ranking by the rarer words of the query finds the same best documents; when
every word is common, all of them must match (an AND is far narrower than an OR).

"Common" is a number of passages, not a share of the store: FTS5 scores every passage the
match names, so the keyword side costs the same at 100k or 1M passages. Counts go further
(up to `COUNT_SHARE` of the store, 2%) for the idf the second stage, the second hop and the
calibration read; a word past that counts as in every passage (idf 0). Counting to 10%
cost a 1M-passage store ~20 ms a query and ranked its answers no better (answer@10 0.638
against 0.650 at 2%; 100k: 0.683 against 0.704). Up to 100k passages both limits are
2,000 passages. Measured in bench/README.md ("The keyword side at a fixed cost").
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Literal

from ._match import match_expression

__all__ = ["COMMON_PASSAGES", "COUNT_SHARE", "TermFrequencies"]

COMMON_PASSAGES = 2_000  # a word matching more passages is too common to match (any store size)
COUNT_SHARE = 0.02  # of all passages: words are counted this far (infinity beyond), for their idf
_CACHE = 4_096
_DRIFT = 1.1  # a cached count is reused until the store grows or shrinks by this factor


def _counted(size: int, common: int, share: float) -> int:
    """Passages a word's count goes up to, of `size` (beyond: infinity)."""
    return max(common, int(share * size))


class TermFrequencies:
    """Passage counts of query words (as the full-text index matches them), cached."""

    def __init__(self, common: int = COMMON_PASSAGES, count_share: float = COUNT_SHARE) -> None:
        self.common = common  # passages a word may match and still be matched
        self.count_share = count_share  # of all passages: counted this far
        # (word, prefix rule) -> (passages matched, store size then)
        self._counts: dict[tuple[str, int | None], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def _matches(self, conn: sqlite3.Connection, term: str, prefix_min: int | None, size: int) -> float:
        """How many passages the word matches, counted up to `_counted` (infinity beyond)."""
        with self._lock:
            cached = self._counts.get((term, prefix_min))
        if cached is not None and cached[1] / _DRIFT <= size <= cached[1] * _DRIFT:
            return cached[0]
        cap = _counted(size, self.common, self.count_share) + 1
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
        `COUNT_SHARE` of them (infinity beyond)."""
        return self._matches(conn, term, None, size)

    def _common(self, conn: sqlite3.Connection, term: str, prefix_min: int | None, size: int) -> bool:
        """Whether the word (as `match_expression` matches it) is in more than `common`
        passages. A prefix matches every passage its whole word does, so a common whole
        word settles it without the prefix's count, for which FTS5 first merges the lists
        of every word the prefix starts (`file`*: 15 ms at 1M passages, against 0.6)."""
        if (
            prefix_min is not None
            and len(term) >= prefix_min
            and self._matches(conn, term, None, size) > self.common
        ):
            return True
        return self._matches(conn, term, prefix_min, size) > self.common

    def match(self, conn: sqlite3.Connection, terms: list[str], prefix_min: int | None) -> str:
        """The FTS5 match expression for a query's words: any of the discriminating ones,
        else all of them (`prefix_min`: see `match_expression`)."""
        mode: Literal["all", "any"] = "any"
        size = int(conn.execute("SELECT coalesce(max(rowid), 0) FROM passages").fetchone()[0])
        if size > self.common:  # otherwise no word can be common
            rare = [t for t in terms if not self._common(conn, t, prefix_min, size)]
            terms, mode = (rare, "any") if rare else (terms, "all")
        return match_expression(terms, mode, prefix_min)
