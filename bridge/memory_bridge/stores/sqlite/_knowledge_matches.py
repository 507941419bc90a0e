"""Which of the query's words each passage of a search's head holds, read once per search.

The second stage weighs the words a candidate matches by their idf; the calibration counts
the share it matches (coverage). Both ask about the same head passages, so one search
fetches each passage's text and matches the query's words against it once, here, and both
read the answers. Words are matched whole and stemmed, as the keyword index matches them
(`stores._relevance.matched_terms`); idf is BM25's, from the store's passage counts.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable

from .._relevance import coverage_terms, matched_terms
from ._knowledge_terms import TermFrequencies

__all__ = ["TELLING_SIZE", "QueryMatches"]

TELLING_SIZE = 200  # passages: what a smaller store does not hold says less the smaller it is


class QueryMatches:
    """One search's query words, their idf and the words each passage it was asked about holds."""

    def __init__(self, query: str, frequencies: TermFrequencies) -> None:
        self.terms = coverage_terms(query)
        self._frequencies = frequencies
        self._idf: dict[str, float] | None = None
        self._unheld: set[str] = set()  # words no passage of the store holds
        self._size = 0  # the store's passages (its largest rowid)
        self._found: dict[int, frozenset[str]] = {}

    def idf(self, conn: sqlite3.Connection) -> dict[str, float]:
        """BM25's idf of each query word (a common word's count is capped where the keyword
        side stops counting it)."""
        if self._idf is None:
            size = int(conn.execute("SELECT coalesce(max(rowid), 0) FROM passages").fetchone()[0])
            self._size = size
            self._idf = {}
            for term in self.terms:
                count = min(self._frequencies.passages(conn, term, size), float(size))
                if count == 0:
                    self._unheld.add(term)
                self._idf[term] = math.log((size - count + 0.5) / (count + 0.5) + 1.0)
        return self._idf

    def found(self, conn: sqlite3.Connection, passages: Iterable[int]) -> dict[int, frozenset[str]]:
        """passage rowid -> the query words it (or its document's name) holds."""
        wanted = set(passages)
        missing = sorted(wanted - self._found.keys())
        if missing and self.terms:
            marks = ", ".join("?" for _ in missing)
            texts = {
                int(rowid): (name, content)
                for rowid, name, content in conn.execute(
                    "SELECT p.rowid, d.name, p.content FROM passages AS p"
                    f" JOIN documents AS d ON d.rowid = p.document WHERE p.rowid IN ({marks})",
                    missing,
                )
            }
            order = sorted(texts)
            held = matched_terms(self.terms, [texts[passage] for passage in order])
            self._found.update(zip(order, map(frozenset, held), strict=True))
        return {passage: self._found.get(passage, frozenset()) for passage in wanted}

    def coverage(self, words: Iterable[str]) -> float:
        """The share of the query's words among `words` (0 for a query of stop words only)."""
        return len(set(words)) / len(self.terms) if self.terms else 0.0

    def weight(self, conn: sqlite3.Connection, words: Iterable[str]) -> float:
        """The share of the query's idf that `words` carry."""
        idf = self.idf(conn)
        total = sum(idf.values())
        return sum(idf[word] for word in set(words)) / total if total else 0.0

    def unheld(self, conn: sqlite3.Connection) -> float:
        """The share of the query's idf carried by words no passage of the store holds (a
        question about something the store never mentions); 1 for a query of stop words only,
        which names nothing the store holds."""
        return self.weight(conn, self._unheld) if self.idf(conn) else 1.0

    def telling(self, conn: sqlite3.Connection) -> float:
        """How much what the store does not hold tells, 0..1: a store of a handful of notes
        lacks most words of any question, answerable or not; from TELLING_SIZE passages on,
        a word it never uses says it does not talk about that."""
        self.idf(conn)
        return min(1.0, self._size / TELLING_SIZE)
