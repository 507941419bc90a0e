"""Dify's Knowledge (dataset) Service API over httpx: one method per endpoint we use.

Errors come back as one taxonomy: network trouble, timeouts and 502/503/504 are
`StoreUnavailable` (retried here with backoff first); any other 5xx is `StoreFailed`
(Dify took the request and failed on it, e.g. a database constraint: not an outage);
401/403 `AccessDenied`; 404 `NotFound`; 409 `Conflict`; any other 4xx `InvalidInput`.
A status change Dify refuses because the document "is being indexed" is a `Conflict`
once the caller's patience runs out: Dify's flag can outlive the re-index by up to
`STALE_FLAG_SECONDS`. The server's version is read from the `X-Version` header of every reply.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx

from ..._errors import (
    AccessDenied,
    Conflict,
    InvalidInput,
    NotFound,
    StoreError,
    StoreFailed,
    StoreUnavailable,
)

__all__ = [
    "STALE_FLAG_SECONDS",
    "TESTED_RANGE",
    "TESTED_VERSIONS",
    "DifyClient",
    "is_tested_version",
    "version_tuple",
]

log = logging.getLogger("memctl.dify")

TESTED_VERSIONS = ((1, 14, 0), (1, 16, 99))  # inclusive range this client is tested against
TESTED_RANGE = "1.14 to 1.16"
_RETRIES = 3
_BACKOFF = 0.2
_PAGE = 100
_OUTAGE_STATUSES = (502, 503, 504)  # a proxy or gateway without a Dify behind it
_BUSY = ("is being indexed, please try again later", "Another document metadata operation is running")
_BUSY_SECONDS = 60.0
# Dify sets a document's "being indexed" flag (600 s) after it queues a status change's
# task, so a task that ends first leaves the flag behind, and every further status change
# of the document is refused until it expires.
STALE_FLAG_SECONDS = 660.0
_KEYWORD_TABLE_RACE = "dataset_keyword_tables_dataset_id_key"


def version_tuple(text: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(part) for part in text.split("-")[0].split(".")[:3])
    except ValueError:
        return None


def is_tested_version(version: str) -> bool:
    """Whether a Dify version (as its X-Version header names it) is inside TESTED_VERSIONS."""
    parsed = version_tuple(version)
    low, high = TESTED_VERSIONS
    return parsed is not None and low <= parsed <= high


def _message(response: httpx.Response) -> str:
    if "html" in response.headers.get("content-type", ""):
        return response.reason_phrase or "an HTML error page"  # a proxy (nginx) answered, not Dify
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if isinstance(body, dict):
        return str(body.get("message") or body.get("error") or body)
    return str(body)


class DifyClient:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=httpx.Timeout(timeout, connect=min(timeout, 3.0)),
            limits=httpx.Limits(max_connections=16, max_keepalive_connections=8),
            transport=transport,
        )
        self.server_version: str | None = None
        self._warned = False

    async def close(self) -> None:
        await self._http.aclose()

    def _note_version(self, response: httpx.Response) -> None:
        version = response.headers.get("x-version")
        if not version or version == self.server_version:
            return
        self.server_version = version
        if not is_tested_version(version) and not self._warned:
            self._warned = True
            log.warning(
                "Dify %s is outside the tested range %s; memctl may misread its answers",
                version,
                TESTED_RANGE,
            )

    async def request(self, method: str, path: str, operation: str, **kwargs: Any) -> Any:
        """Send one request (retrying outages with backoff) and return its JSON body (None if empty)."""
        for attempt in range(_RETRIES):
            try:
                response = await self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                failure: StoreError = StoreUnavailable(
                    f"{operation}: Dify at {self.base_url} is unavailable: {exc.__class__.__name__}: {exc}",
                    operation=operation,
                )
            else:
                self._note_version(response)
                if response.status_code < 400:
                    return response.json() if response.content and response.content.strip() else None
                failure = self._error(response, operation)
                if not isinstance(failure, StoreUnavailable):
                    raise failure
            if attempt + 1 < _RETRIES:
                await anyio.sleep(_BACKOFF * 2**attempt)
        raise failure

    def _error(self, response: httpx.Response, operation: str) -> StoreError:
        status, message = response.status_code, _message(response)
        text = f"{operation}: Dify answered {status}: {message}"
        if status in _OUTAGE_STATUSES:
            return StoreUnavailable(text, operation=operation)
        if status >= 500:
            return StoreFailed(text, operation=operation)
        if status in (401, 403):
            return AccessDenied(text, operation=operation)
        if status == 404:
            return NotFound(text, operation=operation)
        if status == 409:
            return Conflict(text, operation=operation)
        return InvalidInput("request", text, operation=operation)

    async def pages(self, path: str, operation: str, **params: Any) -> AsyncIterator[dict[str, Any]]:
        """Every item of a paginated list, past any page count (stops on a short page or the total)."""
        page = 1
        while True:
            body = await self.request("GET", path, operation, params={**params, "page": page, "limit": _PAGE})
            items = body.get("data") or []
            for item in items:
                yield item
            if len(items) < _PAGE or page * _PAGE >= int(body.get("total") or 0):
                return
            page += 1

    # -- datasets and metadata fields -----------------------------------------------------------

    async def get_dataset(self, dataset_id: str) -> dict[str, Any]:
        return dict(await self.request("GET", f"/datasets/{dataset_id}", "get dataset"))

    async def find_dataset(self, name: str) -> dict[str, Any] | None:
        async for dataset in self.pages("/datasets", "list datasets", keyword=name):
            if dataset.get("name") == name:
                return dataset
        return None

    async def create_dataset(self, name: str, description: str, technique: str) -> dict[str, Any]:
        body = {
            "name": name,
            "description": description,
            "indexing_technique": technique,
            "permission": "only_me",
        }
        return dict(await self.request("POST", "/datasets", "create dataset", json=body))

    async def metadata_fields(self, dataset_id: str) -> dict[str, str]:
        """Field name -> field id."""
        body = await self.request("GET", f"/datasets/{dataset_id}/metadata", "list metadata fields")
        return {f["name"]: f["id"] for f in body.get("doc_metadata") or [] if f.get("id") != "built-in"}

    async def create_metadata_field(self, dataset_id: str, name: str) -> str:
        body = await self.request(
            "POST",
            f"/datasets/{dataset_id}/metadata",
            "create metadata field",
            json={"type": "string", "name": name},
        )
        return str(body["id"])

    # -- documents ------------------------------------------------------------------------------

    async def find_document(self, dataset_id: str, name: str) -> dict[str, Any] | None:
        async for doc in self.pages(f"/datasets/{dataset_id}/documents", "find document", keyword=name):
            if doc.get("name") == name:
                return doc
        return None

    async def get_document(self, dataset_id: str, document_id: str) -> dict[str, Any]:
        """One document's detail. Dify 1.14 answers 500 for it for a moment while a re-index
        swaps its segments (the average segment length divides by a count that just became
        zero), so an internal error here is retried a few times before it counts."""
        failures = 0
        while True:
            try:
                return dict(
                    await self.request(
                        "GET",
                        f"/datasets/{dataset_id}/documents/{document_id}",
                        "get document",
                        params={"metadata": "all"},
                    )
                )
            except StoreFailed:
                failures += 1
                if failures == _RETRIES:
                    raise
                await anyio.sleep(_BACKOFF * 2 ** (failures - 1))

    async def create_by_text(self, dataset_id: str, name: str, text: str, technique: str) -> dict[str, Any]:
        body = {
            "name": name,
            "text": text,
            "indexing_technique": technique,
            "doc_form": "text_model",
            "process_rule": {"mode": "automatic"},
        }
        return dict(
            await self.request(
                "POST", f"/datasets/{dataset_id}/document/create-by-text", "create document", json=body
            )
        )

    async def update_by_text(self, dataset_id: str, document_id: str, name: str, text: str) -> dict[str, Any]:
        body = {"name": name, "text": text, "doc_form": "text_model"}
        return dict(
            await self.request(
                "POST",
                f"/datasets/{dataset_id}/documents/{document_id}/update-by-text",
                "update document",
                json=body,
            )
        )

    async def delete_document(self, dataset_id: str, document_id: str) -> None:
        await self.request("DELETE", f"/datasets/{dataset_id}/documents/{document_id}", "delete document")

    async def _patiently(
        self, method: str, path: str, operation: str, *, patience: float = _BUSY_SECONDS, **kwargs: Any
    ) -> Any:
        """A request Dify refuses (400) while another operation on the document runs, a
        re-index or a metadata write: the refusal is retried with backoff for up to
        `patience` seconds."""
        delay, waited = _BACKOFF, 0.0
        while True:
            try:
                return await self.request(method, path, operation, **kwargs)
            except InvalidInput as exc:
                if not any(busy in str(exc) for busy in _BUSY) or waited >= patience:
                    raise
            await anyio.sleep(delay)
            waited += delay
            delay = min(delay * 2, 2.0)

    async def set_status(self, dataset_id: str, document_id: str, action: str, *, patience: float) -> None:
        """Enable, disable or archive a document; a refusal while Dify (says it) indexes the
        document is retried for `patience` seconds, then raised as `Conflict`."""
        operation = f"{action} document"
        try:
            await self._patiently(
                "PATCH",
                f"/datasets/{dataset_id}/documents/status/{action}",
                operation,
                patience=patience,
                json={"document_ids": [document_id]},
            )
        except InvalidInput as exc:
            if _BUSY[0] not in str(exc):
                raise
            raise Conflict(
                f"{operation}: Dify still marks document {document_id} as being indexed (the mark can"
                f" outlast the indexing by up to {STALE_FLAG_SECONDS / 60:.0f} minutes)",
                operation=operation,
            ) from exc

    async def set_segment_keywords(
        self, dataset_id: str, document_id: str, segment: dict[str, Any], keywords: list[str]
    ) -> None:
        """Replace one segment's keywords (economy datasets index exactly these)."""
        await self.request(
            "POST",
            f"/datasets/{dataset_id}/documents/{document_id}/segments/{segment['id']}",
            "set keywords",
            json={"segment": {"content": segment["content"], "keywords": keywords}},
        )

    async def set_metadata(self, dataset_id: str, document_id: str, fields: list[dict[str, Any]]) -> None:
        await self.set_metadata_many(dataset_id, [(document_id, fields)])

    async def set_metadata_many(
        self, dataset_id: str, operations: list[tuple[str, list[dict[str, Any]]]]
    ) -> None:
        """Merge each document's fields into its set (`partial_update`), in one request."""
        body = {
            "operation_data": [
                {"document_id": document_id, "metadata_list": fields, "partial_update": True}
                for document_id, fields in operations
            ]
        }
        await self._patiently(
            "POST", f"/datasets/{dataset_id}/documents/metadata", "write metadata", json=body
        )

    async def segments(self, dataset_id: str, document_id: str) -> list[dict[str, Any]]:
        items = [
            s
            async for s in self.pages(f"/datasets/{dataset_id}/documents/{document_id}/segments", "read text")
        ]
        return sorted(items, key=lambda s: int(s.get("position") or 0))

    async def indexing_status(self, dataset_id: str, batch: str) -> list[dict[str, Any]]:
        body = await self.request(
            "GET", f"/datasets/{dataset_id}/documents/{batch}/indexing-status", "indexing status"
        )
        return list(body.get("data") or [])

    async def retrieve(
        self, dataset_id: str, query: str, retrieval_model: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """Search one dataset. The first keyword search of a new economy dataset can race
        Dify's worker creating its keyword table (a 400 naming the constraint): asked again."""
        for attempt in range(2):
            try:
                body = await self.request(
                    "POST",
                    f"/datasets/{dataset_id}/retrieve",
                    "retrieve",
                    json={"query": query, "retrieval_model": retrieval_model},
                )
            except InvalidInput as exc:
                if _KEYWORD_TABLE_RACE not in str(exc) or attempt:
                    raise
                await anyio.sleep(_BACKOFF)
                continue
            break
        return list(body.get("records") or [])

    async def ping(self) -> None:
        await self.request("GET", "/datasets", "health", params={"page": 1, "limit": 1})
