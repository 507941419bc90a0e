"""The second stage of hybrid search: the head of both rankings re-ordered by a fitted model.

The fusion weighs a document's keyword match by BM25 over the best keyword hit, so when the
keyword side's best hits match only a word every passage of a kind carries (the speaker's
name at the head of every chat turn), they take the keyword share in full and push a
paraphrased answer that the dense side ranks first out of the top ten. No fusion constant
fixes that without costing sets whose questions share the answers' words (bench/README.md,
"Long dialogues"). The second stage reads, for each candidate, evidence the fusion does not:

- where it stands in each ranking (fused, dense, keyword), its cosine and how far below the
  query's best cosine it is, its BM25 over the best hit;
- the share of the query's idf its passages match (`match`: a name every turn carries has a
  low idf, a rare word of the answer a high one), and the same for the keyword side's best
  hits (`keyword_trust`: whether the keyword side found the query's rare words at all);

and scores it with a linear model fitted listwise on the tune halves of three eval sets
(engineering notes, long conversations, dialogues; `bench/rerank_fit.py`), shipped as
`rerank.json` beside this module. Candidates are the fused ranking's best `HEAD` and the
dense side's best `HEAD`; the re-ordered head takes the fused head's scores in order, so
scores still fall with rank. No model call: the features come from the two rankings and an
in-memory match of the candidates' passages (~1-2 ms).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

from ._knowledge_hop import Fused
from ._knowledge_matches import QueryMatches
from ._knowledge_ranking import CLOSE_COSINE, WEAK_COSINE

if TYPE_CHECKING:
    import numpy as np

__all__ = ["FEATURES", "HEAD", "Evidence", "Rankings", "evidence", "rerank"]

HEAD = 30  # candidates from each of the fused and the dense ranking
TRUSTED = 5  # the keyword side's best hits whose match says whether to trust that side
_ABSENT = 999  # the rank of a document a ranking did not return

Scored = dict[int, tuple[float, int]]  # document rowid -> (score, best passage rowid)

FEATURES: dict[str, Callable[[dict[str, float]], float]] = {
    "fused_rank": lambda f: 1.0 / f["fused_rank"],
    "dense_rank": lambda f: 1.0 / f["dense_rank"],
    "keyword_rank": lambda f: 1.0 / f["keyword_rank"],
    "cosine": lambda f: f["cosine"],
    "below_best": lambda f: f["cosine"] - f["best_cosine"],
    "keyword": lambda f: f["keyword"],
    "match": lambda f: f["match"],
    "keyword_when_close": lambda f: f["keyword"] * f["closeness"],
    "keyword_when_trusted": lambda f: f["keyword"] * f["keyword_trust"],
    "match_when_trusted": lambda f: f["match"] * f["keyword_trust"],
    "keyword_rank_when_trusted": lambda f: f["keyword_trust"] / f["keyword_rank"],
    "below_best_when_trusted": lambda f: (f["cosine"] - f["best_cosine"]) * f["keyword_trust"],
    "in_keyword": lambda f: float(f["keyword_rank"] < _ABSENT),
    "match_by_keyword_rank": lambda f: f["match"] / f["keyword_rank"],
    "fused": lambda f: f["fused"],
    "fused_when_trusted": lambda f: f["fused"] * f["keyword_trust"],
}  # name -> how it is computed from a candidate's raw evidence


@dataclass(frozen=True)
class Rankings:
    """A hybrid search's three rankings: fused, and each side's own (document -> score, passage)."""

    fused: Fused
    keyword: Scored
    dense: Scored


@dataclass(frozen=True)
class Evidence:
    """The head's candidates (document rowids, in fused order) and their feature rows."""

    documents: list[int]
    rows: np.ndarray  # one row per document, columns in FEATURES order


@dataclass(frozen=True)
class _Model:
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray

    def scores(self, rows: np.ndarray) -> np.ndarray:
        return ((rows - self.mean) / self.scale) @ self.weights  # type: ignore[no-any-return]


@cache
def _model() -> _Model:
    """The model shipped with the package (read once)."""
    import numpy as np  # deferred: a bridge that lists its tools never loads it

    raw = json.loads(resources.files(__package__).joinpath("rerank.json").read_text(encoding="utf-8"))
    if tuple(raw["features"]) != tuple(FEATURES):
        raise ValueError("rerank.json was fitted on other features: refit it with bench/rerank_fit.py")
    return _Model(
        tuple(raw["features"]),
        np.array(raw["mean"], dtype=np.float64),
        np.array(raw["scale"], dtype=np.float64),
        np.array(raw["weights"], dtype=np.float64),
    )


def _ranks(side: Scored) -> dict[int, int]:
    order = sorted(side, key=lambda document: (-side[document][0], document))
    return {document: rank for rank, document in enumerate(order, 1)}


def evidence(conn: sqlite3.Connection, matches: QueryMatches, rankings: Rankings) -> Evidence:
    """The feature rows of the head: the fused ranking's best HEAD, then the dense side's
    best HEAD that are not among them."""
    import numpy as np

    fused, keyword, dense = rankings.fused, rankings.keyword, rankings.dense
    fused_ranks = {document: rank for rank, (_, document, _) in enumerate(fused, 1)}
    fused_scores = {document: score for score, document, _ in fused}
    dense_ranks, keyword_ranks = _ranks(dense), _ranks(keyword)
    documents = [document for _, document, _ in fused[:HEAD]]
    documents += [d for d, rank in dense_ranks.items() if rank <= HEAD and fused_ranks.get(d, 0) > HEAD]
    trusted = [d for d, rank in keyword_ranks.items() if rank <= TRUSTED]
    passages: dict[int, set[int]] = {}
    for document in {*documents, *trusted}:
        passages[document] = {side[document][1] for side in (keyword, dense) if document in side}
    found = matches.found(conn, {p for ps in passages.values() for p in ps})

    def match(document: int) -> float:
        return matches.weight(conn, set().union(*(found[p] for p in passages[document])))

    best_cosine = max((cosine for cosine, _ in dense.values()), default=0.0)
    best_keyword = max((score for score, _ in keyword.values()), default=0.0) or 1.0
    closeness = min(1.0, max(0.0, (best_cosine - WEAK_COSINE) / (CLOSE_COSINE - WEAK_COSINE)))
    keyword_trust = max((match(d) for d in trusted), default=0.0)
    rows = []
    for document in documents:
        raw = {
            "fused_rank": float(fused_ranks[document]),
            "dense_rank": float(dense_ranks.get(document, _ABSENT)),
            "keyword_rank": float(keyword_ranks.get(document, _ABSENT)),
            "cosine": dense[document][0] if document in dense else 0.0,
            "best_cosine": best_cosine,
            "keyword": keyword[document][0] / best_keyword if document in keyword else 0.0,
            "match": match(document),
            "closeness": closeness,
            "keyword_trust": keyword_trust,
            "fused": fused_scores[document],
        }
        rows.append([compute(raw) for compute in FEATURES.values()])
    return Evidence(documents, np.array(rows, dtype=np.float64).reshape(len(documents), len(FEATURES)))


def rerank(conn: sqlite3.Connection, matches: QueryMatches, rankings: Rankings) -> Fused:
    """The fused ranking with its head re-ordered by the shipped model; the head keeps the
    fused head's scores in order, so scores fall with rank, and the rest follows unchanged."""
    fused = rankings.fused
    if not fused or not rankings.dense:
        return fused
    found = evidence(conn, matches, rankings)
    scores = _model().scores(found.rows)
    order = sorted(range(len(found.documents)), key=lambda i: (-scores[i], i))
    head = set(found.documents)
    by_document = {document: (score, passage) for score, document, passage in fused}
    ranked_scores = sorted((by_document[d][0] for d in found.documents), reverse=True)
    head_part = [
        (score, found.documents[i], by_document[found.documents[i]][1])
        for score, i in zip(ranked_scores, order, strict=True)
    ]
    return head_part + [item for item in fused if item[1] not in head]
