"""Ranking segments for retrieve (spec §9).

* `keyword_search` (economy datasets): Dify's keyword table: segments ranked by how many of the
  query's keywords are among their (at most 10, case kept) keywords; every score 0.0.
  High-quality datasets build no keyword table, so there it finds nothing.
* `full_text_search`: BM25 (k1 1.2, b 0.75) over the segments' terms; scores reported as 0.0 and the
  threshold is not applied.
* `semantic_search`: cosine of the injected embedder's unit vectors, kept when `> threshold`. Without an
  embedder the "vector" score is the BM25 score divided by the best BM25 score of the query.
* `hybrid_search`: both channels recall `clamp(top_k, 50, 200)` candidates each (only `top_k`, with the
  threshold applied to vector hits, up to 1.13). With `reranking_mode: "weighted_score"` and `weights`:
  `vector_weight * vector score + keyword_weight * TF-IDF cosine of the keywords` (IDF over the
  candidates, `ln((1+N)/(1+df)) + 1`), dropped below the threshold, top_k kept. Without weights: no
  fusion, BM25-only hits score 0.0, 1.14+ drops scores below the threshold, and the list is not cut
  to top_k. Rerank models are not emulated (a rerank request ranks as if reranking were off).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from .models import Document, Segment
from .text import STOPWORDS, keywords, terms

__all__ = ["Embedder", "Hit", "SearchSettings", "rank"]

_K1 = 1.2
_B = 0.75


class Embedder(Protocol):
    """What `create_app(embedder=...)` accepts: unit vectors, one row per text."""

    def embed_documents(self, texts: list[str]) -> npt.NDArray[Any]: ...

    def embed_query(self, text: str) -> npt.NDArray[Any]: ...


@dataclass(frozen=True)
class SearchSettings:
    search_method: str
    top_k: int
    threshold: float  # 0.0 unless score_threshold_enabled
    weights: tuple[float, float] | None  # (vector_weight, keyword_weight) for weighted_score fusion
    legacy_hybrid: bool


@dataclass(frozen=True)
class Hit:
    segment: Segment
    document: Document
    score: float


Candidate = tuple[Segment, Document]


def _bm25(query: str, candidates: list[Candidate]) -> list[float]:
    wanted = [t for t in dict.fromkeys(terms(query)) if t not in STOPWORDS]
    bags = [Counter(t for t in terms(segment.content) if t not in STOPWORDS) for segment, _ in candidates]
    if not bags or not wanted:
        return [0.0] * len(bags)
    average = sum(sum(bag.values()) for bag in bags) / len(bags) or 1.0
    df = {t: sum(1 for bag in bags if t in bag) for t in wanted}
    scores = []
    for bag in bags:
        length, score = sum(bag.values()), 0.0
        for t in wanted:
            if tf := bag.get(t, 0):
                idf = math.log(1 + (len(bags) - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / average))
        scores.append(score)
    return scores


def _tfidf(query: str, candidates: list[Candidate]) -> list[float]:
    """Dify's weighted-score keyword channel (keyword sets, so every tf is 1)."""
    query_words = set(keywords(query, None))
    doc_words = [set(keywords(segment.content, None)) for segment, _ in candidates]
    n = len(doc_words)
    idf = {
        w: math.log((1 + n) / (1 + sum(1 for words in doc_words if w in words))) + 1
        for w in set().union(*doc_words)
    }
    query_vec = {w: idf.get(w, 0.0) for w in query_words}
    query_norm = math.sqrt(sum(v * v for v in query_vec.values()))
    scores = []
    for words in doc_words:
        doc_norm = math.sqrt(sum(idf[w] ** 2 for w in words))
        dot = sum(query_vec[w] * idf[w] for w in words & query_words)
        scores.append(dot / (query_norm * doc_norm) if query_norm and doc_norm else 0.0)
    return scores


def _semantic(query: str, candidates: list[Candidate], embedder: Embedder | None) -> list[float]:
    if embedder is None:
        bm25 = _bm25(query, candidates)
        best = max(bm25, default=0.0)
        return [s / best if best else 0.0 for s in bm25]
    missing = [segment for segment, _ in candidates if segment.vector is None]
    if missing:
        vectors = np.asarray(embedder.embed_documents([s.content for s in missing]), dtype=np.float32)
        for segment, vector in zip(missing, vectors, strict=True):
            segment.vector = vector / (np.linalg.norm(vector) or 1.0)
    q = np.asarray(embedder.embed_query(query), dtype=np.float32)
    q = q / (np.linalg.norm(q) or 1.0)
    return [
        float(np.dot(segment.vector, q)) if segment.vector is not None else 0.0 for segment, _ in candidates
    ]


def _top(scores: list[float], limit: int, above: float) -> list[int]:
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    return [i for i in order if scores[i] > above][:limit]


def _keyword_table(query: str, candidates: list[Candidate], top_k: int) -> list[int]:
    wanted = set(keywords(query, keep_case=True))
    counts = {i: len(wanted & set(segment.keywords)) for i, (segment, _) in enumerate(candidates)}
    hits = [i for i, count in counts.items() if count]
    return sorted(hits, key=lambda i: -counts[i])[:top_k]


def _hybrid(
    query: str, candidates: list[Candidate], settings: SearchSettings, embedder: Embedder | None
) -> list[tuple[int, float]]:
    recall = settings.top_k if settings.legacy_hybrid else min(max(settings.top_k, 50), 200)
    semantic = _semantic(query, candidates, embedder)
    vector_hits = _top(semantic, recall, settings.threshold if settings.legacy_hybrid else 0.0)
    text_hits = _top(_bm25(query, candidates), recall, 0.0)
    union = list(dict.fromkeys(vector_hits + text_hits))
    if settings.weights is not None:
        vector_weight, keyword_weight = settings.weights
        keyword = _tfidf(query, [candidates[i] for i in union])
        fused = [
            (i, vector_weight * semantic[i] + keyword_weight * kw)
            for i, kw in zip(union, keyword, strict=True)
        ]
        kept = [(i, s) for i, s in fused if not (settings.threshold > 0 and s < settings.threshold)]
        return sorted(kept, key=lambda pair: -pair[1])[: settings.top_k]
    from_vector = set(vector_hits)
    scored = [(i, semantic[i] if i in from_vector else 0.0) for i in union]
    if not settings.legacy_hybrid and settings.threshold > 0:
        scored = [(i, s) for i, s in scored if s >= settings.threshold]
    return sorted(scored, key=lambda pair: -pair[1])


def rank(
    query: str,
    candidates: list[Candidate],
    settings: SearchSettings,
    *,
    economy: bool,
    embedder: Embedder | None,
) -> list[Hit]:
    """The records of a retrieve, best first."""
    method = "keyword_search" if economy else settings.search_method
    if not candidates:
        return []
    if method == "keyword_search":
        picked = [(i, 0.0) for i in _keyword_table(query, candidates, settings.top_k)] if economy else []
    elif method == "full_text_search":
        picked = [(i, 0.0) for i in _top(_bm25(query, candidates), settings.top_k, 0.0)]
    elif method == "semantic_search":
        scores = _semantic(query, candidates, embedder)
        picked = [(i, scores[i]) for i in _top(scores, settings.top_k, settings.threshold)]
    else:
        picked = _hybrid(query, candidates, settings, embedder)
    return [Hit(candidates[i][0], candidates[i][1], score) for i, score in picked]
