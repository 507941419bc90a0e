"""R1 `POST /datasets/{id}/retrieve` (spec §6): settings, metadata filter first, then ranking."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import invalid_param
from .filters import parse_filter
from .lifecycle import progress
from .models import Dataset, Document
from .payloads import default_retrieval_model, parse_retrieval_model
from .ranking import SearchSettings, rank
from .views import record_view

if TYPE_CHECKING:
    from .state import DifyState

__all__ = ["retrieve"]


def _searchable(doc: Document, now: float) -> bool:
    """Completed, enabled, unarchived, and any pending enable has reached the index."""
    return (
        progress(doc, now).status == "completed"
        and doc.enabled
        and not doc.archived
        and doc.index_ready_at <= now
    )


def _settings(state: DifyState, model: dict[str, Any]) -> SearchSettings:
    weights = model.get("weights")
    fused = None
    if model.get("reranking_mode") == "weighted_score" and weights:
        fused = (
            float(weights["vector_setting"]["vector_weight"]),
            float(weights["keyword_setting"]["keyword_weight"]),
        )
    threshold = model.get("score_threshold") if model.get("score_threshold_enabled") else None
    return SearchSettings(
        search_method=str(model["search_method"]),
        top_k=int(model["top_k"] if model.get("top_k") is not None else state.quirks.default_top_k),
        threshold=float(threshold or 0.0),
        weights=fused,
        legacy_hybrid=state.quirks.legacy_hybrid,
    )


def _query(state: DifyState, query: str) -> str | dict[str, str]:
    return {"content": query} if state.quirks.retrieve_query_object else query


def retrieve(state: DifyState, dataset: Dataset, body: dict[str, Any], now: float) -> dict[str, Any]:
    query = body.get("query")
    if not isinstance(query, str) or not query:
        raise invalid_param("Query or attachment_ids is required")
    if len(query) > 250:
        raise invalid_param("Query cannot exceed 250 characters")
    raw = body.get("retrieval_model")
    given = None if raw is None else parse_retrieval_model(raw)
    model = given or dataset.retrieval_model or default_retrieval_model(state.quirks.default_top_k)
    metadata_filter = parse_filter(
        raw.get("metadata_filtering_conditions") if isinstance(raw, dict) else None, state.quirks
    )
    documents = sorted(dataset.documents.values(), key=lambda d: d.position)
    eligible = [
        d for d in documents if progress(d, now).status == "completed" and d.enabled and not d.archived
    ]
    if metadata_filter is not None:
        allowed = metadata_filter.matching(eligible)
        if not allowed:
            return {"query": _query(state, query), "records": []}
        eligible = [d for d in eligible if d.id in allowed]
    candidates = [(segment, doc) for doc in eligible if _searchable(doc, now) for segment in doc.segments]
    hits = rank(
        query,
        candidates,
        _settings(state, model),
        economy=dataset.indexing_technique == "economy",
        embedder=state.embedder,
    )
    null_score = state.quirks.keyword_score_null
    return {
        "query": _query(state, query),
        "records": [record_view(hit, now, null_score=null_score) for hit in hits],
    }
