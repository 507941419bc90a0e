"""JSON shapes of datasets, documents, segments and retrieve records (spec §3.1, §4.1, §4.6, §4.8,
§4.10, §6.2). Timestamps are integer Unix seconds unless the spec says otherwise."""

from __future__ import annotations

import copy
import hashlib
from typing import TYPE_CHECKING, Any

from .lifecycle import Progress, display_status, progress, visible_segments
from .models import Dataset, Document, Segment
from .payloads import default_retrieval_model

if TYPE_CHECKING:
    from .ranking import Hit
    from .state import DifyState

__all__ = [
    "BUILT_IN_FIELDS",
    "dataset_view",
    "document_detail",
    "document_view",
    "indexing_status_view",
    "record_view",
    "segment_view",
    "ts",
    "visible_segment_views",
]

BUILT_IN_FIELDS = (
    ("document_name", "string"),
    ("uploader", "string"),
    ("upload_date", "time"),
    ("last_update_date", "time"),
    ("source", "string"),
)


def ts(value: float | None) -> int | None:
    return None if value is None else int(value)


def _retrieval_model_dict(state: DifyState, dataset: Dataset) -> dict[str, Any]:
    stored = dataset.retrieval_model or default_retrieval_model(state.quirks.default_top_k)
    return copy.deepcopy(stored)


def dataset_view(state: DifyState, dataset: Dataset, now: float) -> dict[str, Any]:
    documents = list(dataset.documents.values())
    states = [(doc, progress(doc, now)) for doc in documents]
    fields = [{"id": f.id, "name": f.name, "type": f.type} for f in dataset.fields.values()]
    if dataset.built_in_field_enabled:
        fields += [{"id": "built-in", "name": name, "type": kind} for name, kind in BUILT_IN_FIELDS]
    available = sum(1 for doc, p in states if display_status(doc, p) == "available")
    return {
        "id": dataset.id,
        "name": dataset.name,
        "description": dataset.description,
        "provider": dataset.provider,
        "permission": dataset.permission,
        "data_source_type": "upload_file" if documents else None,
        "indexing_technique": dataset.indexing_technique,
        "app_count": 0,
        "document_count": len(documents),
        "word_count": sum(len(doc.text) for doc, p in states if p.parsed),
        "created_by": dataset.created_by,
        "author_name": state.owner.name,
        "created_at": ts(dataset.created_at),
        "updated_by": dataset.created_by,
        "updated_at": ts(dataset.updated_at),
        "embedding_model": dataset.embedding_model,
        "embedding_model_provider": dataset.embedding_model_provider,
        "embedding_available": state.embedding_available(dataset),
        "retrieval_model_dict": _retrieval_model_dict(state, dataset),
        "tags": [],
        "doc_form": dataset.doc_form,
        "external_knowledge_info": None,
        "external_retrieval_model": None,
        "doc_metadata": fields,
        "built_in_field_enabled": dataset.built_in_field_enabled,
        "pipeline_id": None,
        "runtime_mode": None,
        "chunk_structure": None,
        "icon_info": None,
        "summary_index_setting": None,
        "is_published": False,
        "total_documents": len(documents),
        "total_available_documents": available,
        "enable_api": dataset.enable_api,
        "is_multimodal": False,
        **({"maintainer": state.owner.name} if state.quirks.dataset_maintainer else {}),
    }


def _metadata_list(state: DifyState, dataset: Dataset, doc: Document) -> list[dict[str, Any]] | None:
    """Bound custom fields, then the five built-ins; while the stored dict is empty [] (1.16+)
    or null (before)."""
    if not doc.metadata:
        return [] if state.quirks.empty_metadata_list else None
    values = doc.metadata
    bound = [dataset.fields[i] for i in doc.bindings if i in dataset.fields]
    items = [{"id": f.id, "name": f.name, "type": f.type, "value": values.get(f.name)} for f in bound]
    built_in = (doc.name, state.owner.name, str(doc.created_at), str(doc.updated_at), "file_upload")
    items += [
        {"id": "built-in", "name": name, "type": kind, "value": value}
        for (name, kind), value in zip(BUILT_IN_FIELDS, built_in, strict=True)
    ]
    return items


def _tokens(doc: Document, state: Progress) -> int:
    return sum(s.tokens for s in doc.segments) if state.status == "completed" else 0


def document_view(state: DifyState, dataset: Dataset, doc: Document, now: float) -> dict[str, Any]:
    p = progress(doc, now)
    return {
        "id": doc.id,
        "position": doc.position,
        "data_source_type": "upload_file",
        "data_source_info": {"upload_file_id": doc.upload_file_id},
        "data_source_detail_dict": {
            "upload_file": {
                "id": doc.upload_file_id,
                "name": doc.name,
                "size": len(doc.text.encode()),
                "extension": "txt",
                "mime_type": "text/plain",
                "created_by": doc.created_by,
                "created_at": doc.updated_at,
            }
        },
        "dataset_process_rule_id": doc.process_rule.id,
        "name": doc.name,
        "created_from": "api",
        "created_by": doc.created_by,
        "created_at": ts(doc.created_at),
        "tokens": _tokens(doc, p),
        "indexing_status": p.status,
        "error": p.error,
        "enabled": doc.enabled,
        "disabled_at": ts(doc.disabled_at),
        "disabled_by": doc.disabled_by,
        "archived": doc.archived,
        "display_status": display_status(doc, p),
        "word_count": len(doc.text) if p.parsed else 0,
        "hit_count": 0,
        "doc_form": doc.doc_form,
        "doc_metadata": _metadata_list(state, dataset, doc),
        "summary_index_status": None,
        "need_summary": False,
    }


def document_detail(
    state: DifyState, dataset: Dataset, doc: Document, now: float, mode: str
) -> dict[str, Any]:
    """T6 with `metadata=all|only|without`."""
    if mode == "only":
        return {"id": doc.id, "doc_type": None, "doc_metadata": _metadata_list(state, dataset, doc)}
    p = progress(doc, now)
    view = document_view(state, dataset, doc, now)
    segment_count = len(doc.segments) if p.status in ("indexing", "completed") else 0
    view.update(
        data_source_info=view["data_source_detail_dict"],
        dataset_process_rule=(dataset.process_rule or doc.process_rule).view(),
        document_process_rule={
            "id": doc.process_rule.id,
            "dataset_id": dataset.id,
            **doc.process_rule.view(),
        },
        doc_type=None,
        doc_language=doc.doc_language,
        completed_at=ts(p.completed_at),
        updated_at=ts(doc.updated_at),
        indexing_latency=(p.completed_at - p.processing_started_at)
        if p.completed_at is not None and p.processing_started_at is not None
        else None,
        segment_count=segment_count,
        average_segment_length=view["word_count"] // segment_count if segment_count else 0,
    )
    if mode == "without":
        view.pop("doc_type")
        view.pop("doc_metadata")
    return view


def indexing_status_view(doc: Document, now: float) -> dict[str, Any]:
    p = progress(doc, now)
    paused = doc.job.paused_at is not None
    return {
        "id": doc.id,
        "indexing_status": "paused" if paused else p.status,
        "processing_started_at": ts(p.processing_started_at),
        "parsing_completed_at": ts(p.parsing_completed_at),
        "cleaning_completed_at": ts(p.splitting_completed_at),
        "splitting_completed_at": ts(p.splitting_completed_at),
        "completed_at": ts(p.completed_at),
        "paused_at": ts(doc.job.paused_at),
        "error": p.error,
        "stopped_at": ts(p.stopped_at),
        "completed_segments": p.completed_segments,
        "total_segments": p.total_segments,
    }


def _segments_enabled(doc: Document, now: float) -> bool:
    """Segments follow their document once the index task of its last status change ran."""
    return doc.enabled if now >= doc.segments_switch_at else not doc.enabled


def _segment_core(doc: Document, segment: Segment, status: str, p: Progress, now: float) -> dict[str, Any]:
    completed = status == "completed"
    return {
        "id": segment.id,
        "position": segment.position,
        "document_id": doc.id,
        "content": segment.content,
        "sign_content": segment.content,
        "answer": "",
        "word_count": segment.word_count,
        "tokens": segment.tokens,
        "keywords": list(segment.keywords),
        "index_node_id": segment.index_node_id,
        "index_node_hash": hashlib.sha256(segment.content.encode()).hexdigest(),
        "hit_count": 0,
        "enabled": _segments_enabled(doc, now),
        "disabled_at": None,
        "disabled_by": None,
        "status": status,
        "created_by": doc.created_by,
        "created_at": ts(p.splitting_completed_at or doc.updated_at),
        "indexing_at": ts(p.splitting_completed_at),
        "completed_at": ts(p.completed_at) if completed else None,
        "error": None,
        "stopped_at": None,
    }


def segment_view(doc: Document, segment: Segment, status: str, now: float) -> dict[str, Any]:
    """A segment as S2/S3 list it (spec §4.10)."""
    view = _segment_core(doc, segment, status, progress(doc, now), now)
    view.update(
        updated_at=view["created_at"],
        updated_by=None,
        child_chunks=[],
        attachments=[],
        summary=None,
    )
    return view


def record_view(hit: Hit, now: float, *, null_score: bool) -> dict[str, Any]:
    """One retrieve record (spec §6.2); the document's metadata is the raw dict."""
    doc = hit.document
    segment = _segment_core(doc, hit.segment, "completed", progress(doc, now), now)
    segment["document"] = {
        "id": doc.id,
        "data_source_type": "upload_file",
        "name": doc.name,
        "doc_type": None,
        "doc_metadata": copy.deepcopy(doc.metadata),
    }
    return {
        "segment": segment,
        "child_chunks": [],
        "score": None if null_score and hit.score == 0.0 else hit.score,
        "tsne_position": None,
        "files": [],
        "summary": None,
    }


def visible_segment_views(doc: Document, now: float) -> list[dict[str, Any]]:
    """The document's segment rows as S2 lists them right now."""
    return [segment_view(doc, s, status, now) for s, status in visible_segments(doc, progress(doc, now))]
