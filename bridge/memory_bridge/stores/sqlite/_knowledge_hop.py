"""A second hop for two-part questions, without an LLM.

"What dish do I want to taste when I visit Jonas, the cousin with the solar job?" needs two
turns: the one naming Jonas's city, then the one about food in that city, which shares no
word with the question. The first round finds the first; the second hop reaches the other:

1. **Bridge**: the names in the best hit that the question does not say: capitalised words
   past a sentence's first word (not a weekday or month), named in at most `BRIDGE_SHARE`
   of all passages and in at least `MIN_DOCUMENTS` documents (a recurring name: a person, a
   pet, a city; rarer capitalised words, such as product names in engineering notes, made
   the hop misfire there), and in at most `CANDIDATE_PASSAGES` passages: the hop reads no
   more, and of a name in more (at 1M passages a name in up to 20,000 was a bridge) it took
   whichever the index lists first, an arbitrary few, for ~20 ms of a search.
2. **Residual**: the question's words the best hit does not match (as the keyword index
   matches them, stemmed), their vector the mean of their own token states from the
   question's embedding (no second model call; a model that gives no token states, an
   embeddings endpoint, embeds them on their own).
3. Among the documents naming a bridge word (not the best hit, nor its near copies), each
   scores `cosine(residual, passage) + LEXICAL_WEIGHT x BM25 of (bridge AND residual
   words) / best`, the residual words matched whole (stemmed): as prefixes they cost a
   merge of every word they start, several ms at 100k passages, for the same documents;
   and as the keyword side matches a query's words (`TermFrequencies.match`: the rare
   ones, else all of them): one common residual word (`users`, `list`) made FTS5 score
   tens of thousands of passages, 20-50 ms of a search at 1M passages, for a weight its
   idf makes small;
   the best ones go in at fixed ranks (`POSITIONS`), taking the score of the hit above
   them, so nothing else moves more than a few places.

It runs only when the best hit leads the second by `MIN_LEAD` (a confident first hop) and
the question (at most `MAX_QUESTION_WORDS` distinct words) has residual words. Measured in
bench/README.md ("A second hop for two-part questions").
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._query import STOPWORDS
from ._knowledge_terms import TermFrequencies
from ._match import match_expression

if TYPE_CHECKING:
    import numpy as np

    from ...search._ann import AnnIndex
    from ...search._vectors import VectorIndex

__all__ = ["Coverage", "Fused", "HopPlan", "insert_hops", "plan_hop", "score_hops"]

POSITIONS = (2, 3, 5, 7)  # ranks (1-based) the second hop's best documents take
BRIDGE_SHARE = 0.1  # of all passages: a word named more often is no bridge
MIN_DOCUMENTS = 20  # documents naming the bridge words, at least
MIN_LEAD = 0.02  # the best hit's fused score over the second's
LEXICAL_WEIGHT = 0.15
NEAR_COPY = 0.8  # cosine to the best hit above which a document is its near copy
CANDIDATE_PASSAGES = 2_000  # passages naming a bridge word that are considered; a name in more is no bridge
SHORTLIST = 32  # documents of the rough ranking scored again exactly
ROUGH_MARGIN = 0.03  # cosine: a rough one (int8) is off by ~0.01 at most
MAX_QUESTION_WORDS = 64  # distinct words; a longer query is no question (and would cost a lookup each)
CALENDAR = frozenset(
    (
        "january", "february", "march", "april", "may", "june", "july", "august", "september",
        "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
        "saturday", "sunday",
    )
)  # fmt: skip
_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?:;\]])\s+")

Fused = list[tuple[float, int, int]]  # (score, document rowid, passage rowid), best first


@dataclass(frozen=True)
class HopPlan:
    """What the second hop searches: the bridge's documents, scored against the residual."""

    top_document: int
    top_passage: int
    residual: str  # the question without the words the best hit matches: embedded
    residual_words: tuple[tuple[int, int], ...]  # their character spans in the question
    documents: frozenset[int]  # naming a bridge word, the best hit aside
    lexical: dict[int, float]  # document -> BM25 of (bridge AND residual words), relative to the best


def bridge_words(content: str, question: set[str]) -> list[str]:
    """Capitalised words of `content` past each sentence's first word, lower-cased, that
    are not in the question, not stop words, not weekdays or months; in order, distinct."""
    out: dict[str, None] = {}
    for sentence in _SENTENCE.split(content):
        for word in _WORD.findall(sentence)[1:]:
            lower = word.lower()
            if word[0].isupper() and word.isalpha() and lower not in STOPWORDS | CALENDAR | question:
                out[lower] = None
    return list(out)


class Coverage:
    """Which query words one passage matches, as the keyword index matches them.

    Asking the store's index (`MATCH word AND rowid = passage`) reads each word's whole
    posting list, and a prefix query (`"the"*`) merges those of every word it starts: at
    100k passages the question's words cost ~10-80 ms together. Here the passage is copied
    into a one-row index of the same definition in a private in-memory database, where
    each word costs microseconds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._definition = ""

    def _one_row(self, definition: str) -> sqlite3.Connection:
        """The in-memory index, (re)created when the store's index is defined otherwise."""
        if self._conn is None:
            self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        if definition != self._definition:
            self._conn.execute("DROP TABLE IF EXISTS passages_fts")
            self._conn.execute(definition)
            self._definition = definition
        return self._conn

    def covered(
        self, conn: sqlite3.Connection, passage: int, words: Sequence[str], prefix_min: int | None
    ) -> dict[str, bool]:
        """word -> whether `passage` (its document's name or its content) matches it."""
        definition = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'passages_fts'"
        ).fetchone()[0]
        row = conn.execute("SELECT name, content FROM passages_fts WHERE rowid = ?", (passage,)).fetchone()
        with self._lock:
            one = self._one_row(definition)
            one.execute("DELETE FROM passages_fts")
            one.execute("INSERT INTO passages_fts (rowid, name, content) VALUES (1, ?, ?)", row)
            return {
                word: one.execute(
                    "SELECT 1 FROM passages_fts WHERE passages_fts MATCH ?",
                    (match_expression([word], "any", prefix_min),),
                ).fetchone()
                is not None
                for word in words
            }

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
                self._definition = ""


def plan_hop(
    conn: sqlite3.Connection,
    terms: TermFrequencies,
    coverage: Coverage,
    query: str,
    fused: Fused,
    where: str,
    params: Sequence[Any],
    prefix_min: int | None,
) -> HopPlan | None:
    """The second hop from the best hit, or None when it does not apply."""
    if len(fused) < 2 or fused[0][0] - fused[1][0] < MIN_LEAD:
        return None
    _, top_document, top_passage = fused[0]
    tokens = list(_WORD.finditer(query))
    question = {t.group().lower() for t in tokens}
    if len(question) > MAX_QUESTION_WORDS:
        return None
    covered = coverage.covered(conn, top_passage, sorted(question), prefix_min)
    rest = [t for t in tokens if not covered[t.group().lower()]]
    uncovered = list(dict.fromkeys(w for t in rest if (w := t.group().lower()) not in STOPWORDS))
    if not uncovered:
        return None
    content = conn.execute("SELECT content FROM passages WHERE rowid = ?", (top_passage,)).fetchone()[0]
    size = int(conn.execute("SELECT coalesce(max(rowid), 0) FROM passages").fetchone()[0])
    most = min(BRIDGE_SHARE * size, CANDIDATE_PASSAGES)  # more: the candidates would be an arbitrary few
    bridge = [w for w in bridge_words(content, question) if 0 < terms.passages(conn, w, size) <= most]
    if not bridge:
        return None
    named = match_expression(bridge, "any", None)
    documents = {
        int(r[0])
        for r in conn.execute(
            "SELECT p.document FROM passages_fts JOIN passages AS p ON p.rowid = passages_fts.rowid"
            f" JOIN documents AS d ON d.rowid = p.document WHERE passages_fts MATCH ? AND {where} LIMIT ?",
            [named, *params, CANDIDATE_PASSAGES],
        )
    } - {top_document}
    if len(documents) < MIN_DOCUMENTS:
        return None
    lexical: dict[int, float] = {}
    for document, relevance in conn.execute(
        "SELECT p.document, -bm25(passages_fts, 2.0, 1.0) FROM passages_fts"
        " JOIN passages AS p ON p.rowid = passages_fts.rowid JOIN documents AS d ON d.rowid = p.document"
        f" WHERE passages_fts MATCH ? AND {where} ORDER BY 2 DESC LIMIT ?",
        [f"{named} AND {terms.match(conn, uncovered, None)}", *params, CANDIDATE_PASSAGES],
    ):
        lexical[int(document)] = max(lexical.get(int(document), 0.0), float(relevance))
    best = max(lexical.values(), default=0.0) or 1.0
    return HopPlan(
        top_document,
        top_passage,
        " ".join(t.group() for t in rest),
        tuple(t.span() for t in rest),
        frozenset(documents),
        {document: relevance / best for document, relevance in lexical.items()},
    )


def score_hops(plan: HopPlan, index: VectorIndex | AnnIndex, residual: np.ndarray) -> list[tuple[int, int]]:
    """(document, passage) of the bridge's documents, best first, near copies of the best
    hit left out. Every document is ranked roughly first (the ANN graph's own vectors: up
    to 2,000 documents' passages read from the database were most of a slow search at
    100k), then the best `SHORTLIST` exactly."""
    import numpy as np

    top = index.vector_of(plan.top_passage)
    queries = np.vstack([residual, top]) if top is not None else residual[None, :]

    def ranked(best: dict[int, list[tuple[float, int]]], margin: float) -> list[tuple[float, int, int]]:
        scored = [
            (cosine + LEXICAL_WEIGHT * plan.lexical.get(document, 0.0), document, passage)
            for document, [(cosine, passage), *copy] in best.items()
            if not copy or copy[0][0] <= NEAR_COPY + margin
        ]
        scored.sort(key=lambda item: (-item[0], item[1]))
        return scored

    rough = ranked(index.best_among(queries, set(plan.documents), rough=True), ROUGH_MARGIN)
    shortlist = {document for _, document, _ in rough[:SHORTLIST]}
    exact = ranked(index.best_among(queries, shortlist), 0.0)
    return [(document, passage) for _, document, passage in exact[: len(POSITIONS)]]


def insert_hops(fused: Fused, hops: Sequence[tuple[int, int]]) -> Fused:
    """`fused` with the hops at POSITIONS (each with the score of the hit above it)."""
    chosen = {document for document, _ in hops}
    out = [item for item in fused if item[1] not in chosen]
    for position, (document, passage) in zip(POSITIONS, hops, strict=False):
        at = min(position - 1, len(out))
        out.insert(at, (out[at - 1][0], document, passage))
    return out
