"""The `/v1` Service API routes (spec §2), behind the dataset-key check of spec §1.4.

Check order: Authorization header -> token -> dataset in the workspace (404) -> `enable_api` (403)
-> rate limit (writes and retrieve only) -> handler. A malformed UUID in the path does not match a
route at all (404 before any auth), as with Flask's `uuid` converter.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from . import datasets, documents, metadata
from .errors import DifyError, forbidden, not_found, unauthorized
from .models import Dataset, Document
from .payloads import json_body, page_params
from .quirks import Quirks
from .retrieve import retrieve
from .state import DifyState
from .views import (
    BUILT_IN_FIELDS,
    dataset_view,
    document_detail,
    document_view,
    visible_segment_views,
)

__all__ = ["service_routes"]


@dataclass
class Call:
    """One authenticated request: the state, its instant, and the path's dataset if any."""

    request: Request
    state: DifyState
    now: float
    _dataset: Dataset | None

    @property
    def dataset(self) -> Dataset:
        assert self._dataset is not None
        return self._dataset

    def param(self, name: str) -> str:
        return str(self.request.path_params[name])

    def document(self, message: str) -> Document:
        doc = self.dataset.documents.get(self.param("document_id"))
        if doc is None:
            raise not_found(message)
        return doc

    async def body(self) -> dict[str, Any]:
        return await json_body(self.request)


Handler = Callable[[Call], Awaitable[Response]]


def _authenticate(request: Request, state: DifyState, now: float) -> None:
    realm = state.quirks.www_authenticate
    header = request.headers.get("authorization")
    if header is None or " " not in header:
        raise unauthorized("Authorization header must be provided and start with 'Bearer'", realm=realm)
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        raise unauthorized("Authorization scheme must be 'Bearer'", realm=realm)
    key = state.key_for(token.strip())
    if key is None or key.type != "dataset":
        raise unauthorized("Access token is invalid", realm=realm)
    key.last_used_at = now


def endpoint(handler: Handler, *, counted: bool = False) -> Callable[[Request], Awaitable[Response]]:
    """Wrap a handler with the auth chain; `counted` endpoints are subject to the rate limit."""

    async def run(request: Request) -> Response:
        state: DifyState = request.app.state.dify
        now = state.now()
        _authenticate(request, state, now)
        dataset = None
        if "dataset_id" in request.path_params:
            dataset = state.datasets.get(str(request.path_params["dataset_id"]))
            if dataset is None:
                raise not_found("Dataset not found.")
            if not dataset.enable_api:
                raise forbidden("Dataset api access is not enabled.")
        if counted:
            state.count_knowledge_request(now)
        return await handler(Call(request, state, now, dataset))

    return run


# -- datasets ------------------------------------------------------------------------------------


async def list_datasets(call: Call) -> Response:
    return JSONResponse(datasets.list_datasets(call.state, call.request, call.now))


async def create_dataset(call: Call) -> Response:
    dataset = datasets.create_dataset(call.state, await call.body(), call.now)
    return JSONResponse(dataset_view(call.state, dataset, call.now))


async def get_dataset(call: Call) -> Response:
    view = dataset_view(call.state, call.dataset, call.now)
    if call.dataset.indexing_technique == "economy":
        view["retrieval_model_dict"]["search_method"] = "keyword_search"
    if call.dataset.permission == "partial_members":
        view["partial_member_list"] = list(call.dataset.partial_member_list)
    return JSONResponse(view)


async def update_dataset(call: Call) -> Response:
    datasets.update_dataset(call.state, call.dataset, await call.body(), call.now)
    view = dataset_view(call.state, call.dataset, call.now)
    view["partial_member_list"] = list(call.dataset.partial_member_list)
    return JSONResponse(view)


async def delete_dataset(call: Call) -> Response:
    datasets.delete_dataset(call.state, call.dataset)
    return Response(status_code=204)


# -- documents -----------------------------------------------------------------------------------


async def create_by_text(call: Call) -> Response:
    doc = documents.create_by_text(call.state, call.dataset, await call.body(), call.now)
    return JSONResponse(
        {"document": document_view(call.state, call.dataset, doc, call.now), "batch": doc.batch}
    )


async def update_by_text(call: Call) -> Response:
    body = await call.body()
    doc = documents.update_by_text(call.state, call.dataset, call.param("document_id"), body, call.now)
    return JSONResponse(
        {"document": document_view(call.state, call.dataset, doc, call.now), "batch": doc.batch}
    )


async def list_documents(call: Call) -> Response:
    return JSONResponse(documents.list_documents(call.state, call.dataset, call.request, call.now))


async def get_document(call: Call) -> Response:
    mode = call.request.query_params.get("metadata", "all")
    if mode not in ("all", "only", "without"):
        raise DifyError(400, "invalid_metadata", f"Invalid metadata value: {mode}")
    doc = call.document("Document not found.")
    return JSONResponse(document_detail(call.state, call.dataset, doc, call.now, mode))


async def delete_document(call: Call) -> Response:
    documents.delete_document(call.dataset, call.param("document_id"))
    reply = call.state.quirks.delete_document_reply
    if reply == "empty":
        return Response(status_code=204)
    return JSONResponse(204 if reply == "json_204" else {"result": "success"})


async def indexing_status(call: Call) -> Response:
    return JSONResponse(documents.indexing_status(call.dataset, call.param("batch"), call.now))


async def set_status(call: Call) -> Response:
    documents.set_status(call.state, call.dataset, call.param("action"), await call.body(), call.now)
    return JSONResponse({"result": "success"})


async def list_segments(call: Call) -> Response:
    doc = call.document("Document not found.")
    page, limit = page_params(call.request)
    statuses = call.request.query_params.getlist("status")
    keyword = (call.request.query_params.get("keyword") or "").lower()
    rows = [
        s
        for s in visible_segment_views(doc, call.now)
        if (not statuses or s["status"] in statuses) and keyword in s["content"].lower()
    ]
    per_page = min(limit, 100)
    data = rows[(page - 1) * per_page : page * per_page]
    return JSONResponse(
        {
            "data": data,
            "doc_form": doc.doc_form,
            "total": len(rows),
            "has_more": len(data) == limit,
            "limit": limit,
            "page": page,
        }
    )


async def get_segment(call: Call) -> Response:
    doc = call.document("Document not found.")
    wanted = call.param("segment_id")
    for row in visible_segment_views(doc, call.now):
        if row["id"] == wanted:
            return JSONResponse({"data": row, "doc_form": doc.doc_form})
    raise not_found("Segment not found.")


async def update_segment(call: Call) -> Response:
    doc = call.document("Document not found.")
    segment = documents.set_segment_keywords(doc, call.param("segment_id"), await call.body())
    row = next(r for r in visible_segment_views(doc, call.now) if r["id"] == segment.id)
    return JSONResponse({"data": row, "doc_form": doc.doc_form})


async def retrieve_records(call: Call) -> Response:
    return JSONResponse(retrieve(call.state, call.dataset, await call.body(), call.now))


# -- metadata ------------------------------------------------------------------------------------


async def list_fields(call: Call) -> Response:
    return JSONResponse(metadata.list_fields(call.dataset))


async def create_field(call: Call) -> Response:
    field = metadata.create_field(call.dataset, await call.body())
    return JSONResponse({"id": field.id, "name": field.name, "type": field.type}, status_code=201)


async def rename_field(call: Call) -> Response:
    body = await call.body()
    return JSONResponse(metadata.rename_field(call.state, call.dataset, call.param("metadata_id"), body))


async def delete_field(call: Call) -> Response:
    metadata.delete_field(call.state, call.dataset, call.param("metadata_id"))
    return Response(status_code=204)


async def built_in_fields(call: Call) -> Response:
    return JSONResponse({"fields": [{"name": name, "type": kind} for name, kind in BUILT_IN_FIELDS]})


async def enable_built_in(call: Call) -> Response:
    metadata.set_built_in(call.state, call.dataset, True, call.now)
    return JSONResponse({"result": "success"})


async def disable_built_in(call: Call) -> Response:
    metadata.set_built_in(call.state, call.dataset, False, call.now)
    return JSONResponse({"result": "success"})


async def write_values(call: Call) -> Response:
    metadata.write_values(call.state, call.dataset, await call.body())
    return JSONResponse({"result": "success"})


def service_routes(quirks: Quirks) -> list[BaseRoute]:
    """Every `/v1` route of the emulated version (hyphen aliases from 1.0)."""
    ds = "/v1/datasets/{dataset_id:uuid}"
    doc = ds + "/documents/{document_id:uuid}"
    table: list[tuple[str, str, Handler, bool]] = [
        ("/v1/datasets", "GET", list_datasets, False),
        ("/v1/datasets", "POST", create_dataset, True),
        (ds, "GET", get_dataset, False),
        (ds, "PATCH", update_dataset, True),
        (ds, "DELETE", delete_dataset, True),
        (ds + "/document/create_by_text", "POST", create_by_text, True),
        (doc + "/update_by_text", "POST", update_by_text, True),
        (ds + "/documents", "GET", list_documents, False),
        (ds + "/documents/metadata", "POST", write_values, True),
        (ds + "/documents/status/{action:str}", "PATCH", set_status, True),
        (doc, "GET", get_document, False),
        (doc, "DELETE", delete_document, True),
        (ds + "/documents/{batch:str}/indexing-status", "GET", indexing_status, False),
        (doc + "/segments", "GET", list_segments, False),
        (doc + "/segments/{segment_id:uuid}", "GET", get_segment, False),
        (doc + "/segments/{segment_id:uuid}", "POST", update_segment, True),
        (ds + "/retrieve", "POST", retrieve_records, True),
        (ds + "/hit-testing", "POST", retrieve_records, True),
        (ds + "/metadata", "GET", list_fields, False),
        (ds + "/metadata", "POST", create_field, True),
        (ds + "/metadata/built-in", "GET", built_in_fields, False),
        (ds + "/metadata/built-in/enable", "POST", enable_built_in, True),
        (ds + "/metadata/built-in/disable", "POST", disable_built_in, True),
        (ds + "/metadata/{metadata_id:uuid}", "PATCH", rename_field, True),
        (ds + "/metadata/{metadata_id:uuid}", "DELETE", delete_field, True),
    ]
    if quirks.hyphen_routes:
        table += [
            (ds + "/document/create-by-text", "POST", create_by_text, True),
            (doc + "/update-by-text", "POST", update_by_text, True),
        ]
    return [
        Route(path, endpoint(handler, counted=counted), methods=[method])
        for path, method, handler, counted in table
    ]
