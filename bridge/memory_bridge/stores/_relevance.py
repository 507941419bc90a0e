"""Calibrated relevance: a score in [0, 1] that means the same for every query and store.

A store's own numbers are relative (BM25 over the best hit, fused ranks) or model-specific
(cosines), so a plain cut-off cannot tell an answer from a nonsense query's best guess.
Each hit's evidence is turned into the chance that it answers the query (rather than
being the best guess for a question nothing answers) by a logistic model fitted on a
labelled set (answerable, on-topic unanswerable and nonsense questions, the two classes
weighed alike; `bench/calibrate.py`), shipped as `relevance.json` beside this module:

- `hybrid` (the embedded store with its embedding model): the best passage's cosine to the
  query and the query-term coverage of the passage shown, then a correction by the share of
  the query's idf in words no passage of the store holds (`unheld`: a question about
  something the store never mentions, however close its best guess), weighed by how much
  that tells in a store of this size (`telling`: nothing in a handful of notes, which lack
  most words of any question; fully from a few hundred passages on);
- `lexical` (the embedded store without vectors): coverage, then the same correction;
- `keyword` (a Dify economy dataset, an entry: no store statistics): coverage alone;
- `dify`: Dify's own hybrid score (0.7 x cosine + 0.3 x keyword).

A hit holding every word of the query scores at least what `keyword` gives it. The models
are fitted for the bundled embedding model; another one (embedding_url, Dify's) has its
own cosines, so its threshold wants measuring (bench/README.md says how).

Coverage is the share of the query's words (stop words aside: a query of stop words only
covers nothing) that the document's name or the passage contain, matched whole and
stemmed as the embedded store's keyword index matches them, the same for every store.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

from ._query import STOPWORDS, query_terms

__all__ = [
    "Calibration",
    "Evidence",
    "RelevanceModel",
    "calibration",
    "coverage",
    "coverage_terms",
    "matched_terms",
]

RelevanceModel = Literal["hybrid", "lexical", "keyword", "dify"]
_TOKENIZER = "porter unicode61 remove_diacritics 2"


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a hit's calibrated score is computed from."""

    coverage: float  # share of the query's words the passage (or the document's name) contains
    cosine: float | None = None  # the best passage's cosine to the query (None: no embedding)
    store_score: float | None = None  # the store's own score where the model uses it (Dify's)
    unheld: float | None = None  # share of the query's idf in words no passage of the store holds
    telling: float | None = None  # how much `unheld` tells, 0..1 (by the store's size)

    def feature(self, name: str) -> float:
        """A model's input: a field, or `unheld` weighed by how much it tells."""
        if name == "unheld":
            return (self.unheld or 0.0) * (self.telling or 0.0)
        value = {
            "coverage": self.coverage,
            "cosine": self.cosine,
            "store_score": self.store_score,
            "telling": self.telling,
        }[name]
        return 0.0 if value is None else value


@dataclass(frozen=True)
class _Logistic:
    features: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float

    def __call__(self, evidence: Evidence) -> float:
        z = self.intercept + sum(
            w * evidence.feature(f) for f, w in zip(self.features, self.weights, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


@dataclass(frozen=True)
class Calibration:
    """The shipped models and the threshold measured with them."""

    models: dict[str, _Logistic]
    threshold: float  # the default score threshold chosen by bench/calibrate.py

    def score(self, model: RelevanceModel, evidence: Evidence) -> float:
        """The calibrated relevance of one hit, rounded as hits carry it. A hit holding every
        word of the query scores at least what the `keyword` model gives it (a lookup by a
        name or an identifier, whose meaning a sentence model does not see)."""
        value = self.models[model](evidence)
        if evidence.coverage >= 1.0:
            value = max(value, self.models["keyword"](evidence))
        return round(value, 4)


@cache
def calibration() -> Calibration:
    """The calibration shipped with the package (read once)."""
    raw = json.loads(resources.files(__package__).joinpath("relevance.json").read_text(encoding="utf-8"))
    models = {
        name: _Logistic(tuple(m["features"]), tuple(float(w) for w in m["weights"]), float(m["intercept"]))
        for name, m in raw["models"].items()
    }
    return Calibration(models, float(raw["threshold"]))


class _Matcher:
    """A private in-memory full-text index, stemmed, for coverage (one per process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5 (name, content, tokenize = '{_TOKENIZER}')")

    def matched(self, terms: Sequence[str], passages: Sequence[tuple[str, str]]) -> list[set[str]]:
        """For each (document name, passage) the `terms` it contains (whole words, stemmed)."""
        found: list[set[str]] = [set() for _ in passages]
        if not terms or not passages:
            return found
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN")
            try:
                conn.execute("DELETE FROM t")
                conn.executemany(
                    "INSERT INTO t (rowid, name, content) VALUES (?, ?, ?)",
                    [(i, name, content) for i, (name, content) in enumerate(passages)],
                )
                for term in terms:
                    for (row,) in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (f'"{term}"',)):
                        found[row].add(term)
            finally:
                conn.execute("ROLLBACK")
        return found


_MATCHER: _Matcher | None = None
_MATCHER_LOCK = threading.Lock()


def _matcher() -> _Matcher:
    global _MATCHER
    with _MATCHER_LOCK:
        if _MATCHER is None:
            _MATCHER = _Matcher()
        return _MATCHER


def coverage_terms(query: str) -> list[str]:
    """The query's words that coverage counts: its distinct words, stop words aside."""
    return [term for term in query_terms(query) if term not in STOPWORDS]


def matched_terms(terms: Sequence[str], passages: Sequence[tuple[str, str]]) -> list[set[str]]:
    """For each (document name, passage) which of `terms` it contains, matched whole and
    stemmed as the embedded store's keyword index matches them."""
    return _matcher().matched(terms, passages)


def coverage(query: str, passages: Sequence[tuple[str, str]]) -> list[float]:
    """For each (document name, passage) the share of the query's words it contains."""
    terms = coverage_terms(query)
    if not terms:
        return [0.0] * len(passages)
    return [len(found) / len(terms) for found in matched_terms(terms, passages)]
