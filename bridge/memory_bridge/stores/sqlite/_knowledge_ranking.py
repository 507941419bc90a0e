"""How the embedded knowledge store ranks: the keyword match, the fusion of the two sides.

`Ranking` holds every knob (the settings model builds one); `fuse` turns the per-document
keyword and dense results into one ordered list. Three fusions:

- `weighted`: `vector_weight x cosine + (1 - vector_weight) x BM25 / best BM25`, Dify's
  hybrid score;
- `adaptive` (the default): `weighted` with a dense share that follows the query's best
  cosine (`adaptive_weight`): 0.9 when no passage is close to the query (the words it shares
  with documents are likely incidental: trust meaning), 0.5 when some passage is close
  (many passages about the same things: the exact words decide), linear in between
  (cosines 0.4 to 0.7);
- `rrf`: reciprocal-rank fusion, `sum of w / (rrf_k + rank)` over the two rankings with the
  same weights, divided by its best possible value so a perfect hit scores 1.0 (and
  `score_threshold` keeps a meaning).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Fusion", "Ranking", "adaptive_weight", "fuse"]

# `adaptive`: the dense share is WEAK_WEIGHT at a best cosine of WEAK_COSINE or less, CLOSE_WEIGHT
# at CLOSE_COSINE or more (MiniLM's cosines; measured in bench/README.md, "Adaptive fusion weight").
WEAK_COSINE, WEAK_WEIGHT = 0.4, 0.9
CLOSE_COSINE, CLOSE_WEIGHT = 0.7, 0.5

Fusion = Literal["adaptive", "weighted", "rrf"]
Scored = dict[int, tuple[float, int]]  # document rowid -> (score, best passage rowid)


@dataclass(frozen=True)
class Ranking:
    """The ranking knobs of hybrid search."""

    fusion: Fusion = "adaptive"
    vector_weight: float = 0.7  # `weighted` and `rrf`: the keyword side gets 1 - vector_weight
    rrf_k: int = 60
    keyword_candidates: int = 200  # passages the keyword side returns
    dense_candidates: int = 500  # passages the dense side returns (plus every keyword candidate)
    prefix_min: int | None = 3  # query words this long match as prefixes; None: whole words
    feedback_docs: int = 0  # pseudo-relevance feedback from this many best documents (0: none)
    feedback_weight: float = 0.2  # the second keyword round's share in the score
    second_hop: bool = True  # hybrid search reaches the other turn of a two-part answer (_knowledge_hop)
    rerank: bool = True  # hybrid search re-orders its head by the fitted second stage (_knowledge_rerank)
    calibrated: bool = True  # scores are calibrated relevance (_knowledge_relevance); False: the fusion's own


def _ranks(side: Scored) -> dict[int, int]:
    order = sorted(side, key=lambda document: (-side[document][0], document))
    return {document: rank for rank, document in enumerate(order, 1)}


def adaptive_weight(dense: Scored) -> float:
    """The dense share of `adaptive` fusion for a query whose nearest passages are `dense`."""
    best = max((cosine for cosine, _ in dense.values()), default=0.0)
    closeness = min(1.0, max(0.0, (best - WEAK_COSINE) / (CLOSE_COSINE - WEAK_COSINE)))
    return WEAK_WEIGHT + (CLOSE_WEIGHT - WEAK_WEIGHT) * closeness


def fuse(ranking: Ranking, keyword: Scored, dense: Scored) -> list[tuple[float, int, int]]:
    """(score, document, passage) for every document either side found, best first.

    The passage shown is the dense side's, unless the keyword side scores the document
    higher (or is the only side that found it)."""
    best_keyword = max((v[0] for v in keyword.values()), default=0.0) or 1.0
    keyword_ranks = _ranks(keyword) if ranking.fusion == "rrf" else {}
    dense_ranks = _ranks(dense) if ranking.fusion == "rrf" else {}
    w_dense = adaptive_weight(dense) if ranking.fusion == "adaptive" else ranking.vector_weight
    w_keyword = 1.0 - w_dense
    perfect = (w_dense + w_keyword) / (ranking.rrf_k + 1)
    scored: list[tuple[float, int, int]] = []
    for document in keyword.keys() | dense.keys():
        kw = keyword[document][0] / best_keyword if document in keyword else 0.0
        vector = max(0.0, dense[document][0]) if document in dense else 0.0
        if ranking.fusion == "rrf":
            score = (
                (w_dense / (ranking.rrf_k + dense_ranks[document]) if document in dense else 0.0)
                + (w_keyword / (ranking.rrf_k + keyword_ranks[document]) if document in keyword else 0.0)
            ) / perfect
        else:
            score = w_dense * vector + w_keyword * kw
        passage = dense[document][1] if document in dense else keyword[document][1]
        if document in keyword and (document not in dense or kw >= vector):
            passage = keyword[document][1]
        scored.append((score, document, passage))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return scored
