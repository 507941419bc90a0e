"""Documents: create/update by text, list, delete, batch status and indexing status (spec §4)."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from .datasets import NO_EMBEDDING_MODEL, resolve_embedding_model
from .errors import DifyError, invalid_action, invalid_param, not_found
from .lifecycle import display_status, progress, visible_segments
from .models import Dataset, Document, IndexingJob, Segment, new_id
from .payloads import default_retrieval_model, optional_str, page_params, parse_retrieval_model, required_str
from .process_rule import ProcessRule, parse_process_rule
from .segmenter import IndexingFailure, split_document
from .text import keywords, token_count
from .views import document_view, indexing_status_view

if TYPE_CHECKING:
    from .state import DifyState

__all__ = [
    "create_by_text",
    "delete_document",
    "indexing_status",
    "list_documents",
    "set_status",
    "update_by_text",
]

_DOC_FORMS = ("text_model", "hierarchical_model", "qa_model")
_STATUS_ALIASES = {"active": "available", "enabled": "available"}
_STATUSES = ("queuing", "indexing", "paused", "error", "available", "disabled", "archived")
_ACTIONS = ("enable", "disable", "archive", "un_archive")
_NO_CREDENTIALS = (
    "No valid model provider credentials found. Please go to Settings -> Model Provider to complete your "
    "provider credentials."
)
_CREATE_MODEL = "DocumentTextCreatePayload"
_UPDATE_MODEL = "DocumentTextUpdate"


def _batch(now: float) -> str:
    return time.strftime("%Y%m%d%H%M%S", time.localtime(now)) + f"{random.randint(0, 999999):06d}"


def _segments(
    state: DifyState, dataset: Dataset, text: str, rule: ProcessRule
) -> tuple[list[Segment], str | None]:
    try:
        contents = split_document(text, rule)
    except IndexingFailure as exc:
        return [], str(exc)
    economy = dataset.indexing_technique == "economy"
    segments = [
        Segment(
            id=new_id(),
            position=i,
            content=content,
            word_count=len(content),
            tokens=0 if economy else token_count(content),
            keywords=keywords(content, keep_case=True) if economy else [],
        )
        for i, content in enumerate(contents, start=1)
    ]
    return segments, state.indexing_failure


def _queue(state: DifyState, dataset: Dataset, doc: Document, now: float) -> None:
    """(Re)start indexing: old segments become `re_segment`, a new job is queued."""
    doc.old_segments = [segment for segment, _ in visible_segments(doc, progress(doc, now))]
    doc.segments, failure = _segments(state, dataset, doc.text, doc.process_rule)
    doc.job = IndexingJob(state.indexing_delay, now if state.workers_running else None, failure)


def _doc_form(dataset: Dataset, value: Any) -> str:
    doc_form = value or "text_model"
    if doc_form not in _DOC_FORMS:
        raise invalid_param("Invalid doc_form.")
    if dataset.doc_form is not None and doc_form != dataset.doc_form:
        raise invalid_param("doc_form is different from the dataset doc_form.")
    return str(doc_form)


def _built_in_strings(state: DifyState, name: str, now: float) -> dict[str, Any]:
    """Built-in values of a document created while built-ins are on (spec §5.1: date strings)."""
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d %H:%M:%S")
    return {
        "document_name": name,
        "uploader": state.owner.name,
        "upload_date": stamp,
        "last_update_date": stamp,
        "source": "upload_file",
    }


def create_by_text(state: DifyState, dataset: Dataset, body: dict[str, Any], now: float) -> Document:
    """T1, including Dify's same-name rule: an enabled document with that name is overwritten."""
    name = required_str(body, "name", _CREATE_MODEL)[:200]
    text = required_str(body, "text", _CREATE_MODEL)
    technique = body.get("indexing_technique")
    if technique not in (None, "high_quality", "economy"):
        raise invalid_param("Invalid indexing technique.")
    if dataset.indexing_technique is None and not technique:
        raise invalid_param("indexing_technique is required.")
    doc_form = _doc_form(dataset, body.get("doc_form"))
    given_rule = body.get("process_rule")
    rule = parse_process_rule(given_rule) if given_rule is not None else dataset.process_rule
    if rule is None:  # Dify hits an internal assertion here (spec §4.2)
        raise DifyError(500, "internal_server_error", "Internal Server Error")
    retrieval = (
        None if body.get("retrieval_model") is None else parse_retrieval_model(body["retrieval_model"])
    )
    technique = dataset.indexing_technique or technique
    model: tuple[str | None, str | None] = (dataset.embedding_model, dataset.embedding_model_provider)
    if technique == "high_quality" and dataset.embedding_model is None:
        model = resolve_embedding_model(
            state, body.get("embedding_model"), body.get("embedding_model_provider")
        )
    if technique == "high_quality" and model not in state.embedding_models:
        raise DifyError(400, "provider_not_initialize", _NO_CREDENTIALS)
    dataset.indexing_technique = technique
    dataset.embedding_model, dataset.embedding_model_provider = model
    if dataset.retrieval_model is None:
        dataset.retrieval_model = retrieval or default_retrieval_model(state.quirks.default_top_k)
    dataset.doc_form = doc_form
    dataset.process_rule = rule
    existing = next((d for d in dataset.documents.values() if d.enabled and d.name == name), None)
    if existing is not None:
        existing.text, existing.batch, existing.doc_form, existing.updated_at = (
            text,
            _batch(now),
            doc_form,
            now,
        )
        existing.doc_language = str(body.get("doc_language") or existing.doc_language)
        existing.process_rule, existing.upload_file_id = rule, new_id()
        _queue(state, dataset, existing, now)
        return existing
    doc = Document(
        id=new_id(),
        dataset_id=dataset.id,
        position=dataset.next_position,
        name=name,
        text=text,
        batch=_batch(now),
        created_at=now,
        updated_at=now,
        created_by=state.owner.id,
        doc_form=doc_form,
        doc_language=str(body.get("doc_language") or "English"),
        process_rule=rule,
        job=IndexingJob(0.0, None),
        segments=[],
        metadata=_built_in_strings(state, name, now) if dataset.built_in_field_enabled else None,
    )
    dataset.next_position += 1
    dataset.documents[doc.id] = doc
    _queue(state, dataset, doc, now)
    return doc


def update_by_text(
    state: DifyState, dataset: Dataset, document_id: str, body: dict[str, Any], now: float
) -> Document:
    """T3: only `available` documents; every call re-indexes; the batch stays the original one."""
    name = optional_str(body, "name", _UPDATE_MODEL)
    text = optional_str(body, "text", _UPDATE_MODEL)
    if text is not None and name is None:
        raise invalid_param("name is required when text is provided")
    doc = dataset.documents.get(document_id)
    if doc is None:
        raise not_found("Document not found")
    if display_status(doc, progress(doc, now)) != "available":
        raise invalid_param("Document is not available")
    doc_form = _doc_form(dataset, body.get("doc_form"))
    given_rule = body.get("process_rule")
    rule = (
        parse_process_rule(given_rule) if given_rule is not None else dataset.process_rule or doc.process_rule
    )
    if body.get("retrieval_model") is not None:
        parse_retrieval_model(body["retrieval_model"])
    if dataset.indexing_technique == "high_quality" and not state.embedding_available(dataset):
        raise DifyError(400, "provider_not_initialize", _NO_CREDENTIALS)
    if text is not None:
        doc.text, doc.upload_file_id = text, new_id()
    if name is not None:
        doc.name = name[:200]
    doc.doc_form, doc.process_rule, doc.updated_at = doc_form, rule, now
    doc.doc_language = str(body.get("doc_language") or doc.doc_language)
    dataset.process_rule = rule
    _queue(state, dataset, doc, now)
    return doc


def list_documents(state: DifyState, dataset: Dataset, request: Request, now: float) -> dict[str, Any]:
    """T5: `keyword` is a case-sensitive substring; `status` filters by display status."""
    page, limit = page_params(request)
    keyword = request.query_params.get("keyword") or ""
    status = request.query_params.get("status")
    status = _STATUS_ALIASES.get(status or "", status)
    docs = [d for d in dataset.documents.values() if keyword in d.name]
    if status in _STATUSES:
        docs = [d for d in docs if display_status(d, progress(d, now)) == status]
    docs.sort(key=lambda d: (-d.created_at, -d.position))
    per_page = min(limit, 100)
    data = docs[(page - 1) * per_page : page * per_page]
    return {
        "data": [document_view(state, dataset, d, now) for d in data],
        "has_more": len(data) == limit,
        "limit": limit,
        "total": len(docs),
        "page": page,
    }


def delete_document(dataset: Dataset, document_id: str) -> None:
    doc = dataset.documents.get(document_id)
    if doc is None:
        raise not_found("Document Not Exists.")
    if doc.archived:
        raise DifyError(403, "archived_document_immutable", "The archived document is not editable.")
    del dataset.documents[document_id]


def indexing_status(dataset: Dataset, batch: str, now: float) -> dict[str, Any]:
    docs = [d for d in dataset.documents.values() if d.batch == batch]
    if not docs:
        raise not_found("Documents not found.")
    return {"data": [indexing_status_view(d, now) for d in docs]}


def set_status(state: DifyState, dataset: Dataset, action: str, body: dict[str, Any], now: float) -> None:
    """T9: every document is checked before any changes; unknown ids are skipped."""
    if action not in _ACTIONS:
        raise invalid_action("Invalid action.")
    ids = body.get("document_ids") or []
    if not isinstance(ids, list):
        raise invalid_param("document_ids must be a list")
    if dataset.indexing_technique == "high_quality" and not state.embedding_available(dataset):
        raise invalid_param(NO_EMBEDDING_MODEL)
    docs = [dataset.documents[i] for i in ids if isinstance(i, str) and i in dataset.documents]
    for doc in docs:
        if max(doc.status_marker_until, doc.stale_flag_until) > now:
            raise invalid_action(f"Document:{doc.name} is being indexed, please try again later")
        if action == "disable" and progress(doc, now).status != "completed":
            raise invalid_action(f"Document: {doc.name} is not completed.")
    for doc in docs:
        _apply_status(state, doc, action, now)
        if action == "enable" and dataset.indexing_technique == "economy":
            for segment in doc.segments:  # re-indexing extracts Dify's own keywords again
                segment.keywords = keywords(segment.content, keep_case=True)


def _apply_status(state: DifyState, doc: Document, action: str, now: float) -> None:
    """One document's change; a change that reaches the index marks it for `indexing_delay`
    seconds, or for `stale_status_flag` seconds when set (the flag a fast task leaves)."""
    ready = now + state.indexing_delay
    if action == "enable" and not doc.enabled:
        doc.enabled, doc.disabled_at, doc.disabled_by = True, None, None
        doc.status_marker_until = doc.index_ready_at = doc.segments_switch_at = ready
    elif action == "disable" and doc.enabled:
        doc.enabled, doc.disabled_at, doc.disabled_by = False, now, state.owner.id
        doc.status_marker_until = doc.segments_switch_at = ready
    elif action == "archive" and not doc.archived:
        doc.archived = True
        if doc.enabled:
            doc.status_marker_until = ready
    elif action == "un_archive" and doc.archived:
        doc.archived = False
        if doc.enabled:
            doc.status_marker_until = doc.index_ready_at = ready
    else:
        return
    if doc.status_marker_until == ready and state.stale_status_flag:
        doc.stale_flag_until = now + state.stale_status_flag
    doc.updated_at = now


def set_segment_keywords(doc: Document, segment_id: str, body: dict[str, Any]) -> Segment:
    """S5: the keywords given replace the segment's (no cap, case kept); content must not change."""
    wanted = body.get("segment")
    if not isinstance(wanted, dict) or not isinstance(wanted.get("content"), str):
        raise invalid_param("segment.content is required")
    segment = next((s for s in doc.segments if s.id == segment_id), None)
    if segment is None:
        raise not_found("Segment not found.")
    if wanted["content"] != segment.content:
        raise invalid_param("the emulator only changes a segment's keywords")
    if isinstance(wanted.get("keywords"), list) and wanted["keywords"]:
        segment.keywords = [str(k) for k in wanted["keywords"]]
    return segment
