"""The embedded store's calibrated relevance: the head of the ranking re-scored by the
shipped calibration (`stores._relevance`), its order kept.

Each document of the head (the fusion's best `window`, with the second hop's) is scored
from its best passage's cosine to the query, the query-term coverage of the passage shown
and the share of the query's idf in words no passage of the store holds, weighed by how
much that tells at the store's size (`hybrid` model), or without the cosine when the
search had no vectors (`lexical` model); the words are the search's `QueryMatches`, read
once. The ranking orders better than the calibration does (it weighs every candidate;
measured in bench/README.md), so the order stays and a hit's score is the best calibrated
relevance at its rank or below: scores fall with rank, and a threshold cuts the ranking
after the last hit relevant enough. Documents past the head are left out.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

from .._relevance import Evidence, RelevanceModel, calibration
from ._knowledge_hop import Fused
from ._knowledge_matches import QueryMatches

__all__ = ["WINDOW", "calibrate"]

WINDOW = 20  # documents scored, at least (more when more are asked for)

Scored = dict[int, tuple[float, int]]  # document rowid -> (cosine, best passage rowid)


def calibrate(
    conn: sqlite3.Connection,
    matches: QueryMatches,
    ranked: Fused,
    dense: Scored,
    hopped: Collection[int] = (),
) -> tuple[Fused, dict[int, Evidence]]:
    """`ranked` in its order with calibrated scores, and each document's evidence. A
    document of `hopped` (the second hop's, reached through the hit above it, sharing no
    words with the question by design) takes the relevance of the hit above it."""
    if not ranked:
        return [], {}
    found = matches.found(conn, [passage for _, _, passage in ranked])
    model: RelevanceModel = "hybrid" if dense else "lexical"
    shipped = calibration()
    evidence: dict[int, Evidence] = {}
    unheld, telling = matches.unheld(conn), matches.telling(conn)
    for _, document, passage in ranked:
        cosine = max(0.0, dense[document][0]) if document in dense else 0.0
        evidence[document] = Evidence(
            matches.coverage(found[passage]),
            cosine if dense else None,
            unheld=unheld,
            telling=telling,
        )
    own = [shipped.score(model, evidence[document]) for _, document, _ in ranked]
    for rank in range(1, len(ranked)):
        if ranked[rank][1] in hopped:
            own[rank] = own[rank - 1]
    scored: Fused = []
    best = 0.0
    for (_, document, passage), relevance in zip(reversed(ranked), reversed(own), strict=True):
        best = max(best, relevance)
        scored.append((best, document, passage))
    return scored[::-1], evidence
