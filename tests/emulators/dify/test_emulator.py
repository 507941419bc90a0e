"""The Dify Knowledge API emulator against the contract in /work/shared/specs/dify-knowledge-api.md."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest
from starlette.applications import Starlette

from tests.emulators.dify import DifyState, create_app
from tests.emulators.dify.process_rule import parse_process_rule
from tests.emulators.dify.segmenter import IndexingFailure, split_document
from tests.emulators.dify.text import terms

pytestmark = pytest.mark.anyio

BASE = "http://dify.local"
ECONOMY_KEYWORDS = {"search_method": "keyword_search", "reranking_enable": False, "top_k": 10}
NO_THRESHOLD = {"score_threshold_enabled": False}


class HashEmbedder:
    """Deterministic unit vectors: hashed bag of terms (cosine = term overlap)."""

    def _vector(self, text: str) -> npt.NDArray[np.float32]:
        vector = np.zeros(64, dtype=np.float32)
        for term in terms(text):
            vector[int(hashlib.sha256(term.encode()).hexdigest(), 16) % 64] += 1.0
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._vector(text)


def _client(app: Starlette, key: str | None = None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE, headers=headers)


@pytest.fixture
def app() -> Starlette:
    return create_app()


@pytest.fixture
def state(app: Starlette) -> DifyState:
    dify: DifyState = app.state.dify
    return dify


@pytest.fixture
async def client(app: Starlette, state: DifyState) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(app, state.add_api_key()) as c:
        yield c


async def _dataset(client: httpx.AsyncClient, name: str = "kb", **fields: Any) -> str:
    response = await client.post(
        "/v1/datasets", json={"name": name, "indexing_technique": "economy", **fields}
    )
    assert response.status_code == 200, response.text
    return str(response.json()["id"])


async def _document(
    client: httpx.AsyncClient, dataset_id: str, name: str, text: str, **fields: Any
) -> dict[str, Any]:
    body = {
        "name": name,
        "text": text,
        "indexing_technique": "economy",
        "process_rule": {"mode": "automatic"},
    }
    response = await client.post(
        f"/v1/datasets/{dataset_id}/document/create-by-text", json={**body, **fields}
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def _retrieve(client: httpx.AsyncClient, dataset_id: str, query: str, **model: Any) -> httpx.Response:
    body: dict[str, Any] = {"query": query}
    if model:
        body["retrieval_model"] = model
    return await client.post(f"/v1/datasets/{dataset_id}/retrieve", json=body)


def _names(response: httpx.Response) -> set[str]:
    assert response.status_code == 200, response.text
    return {r["segment"]["document"]["name"] for r in response.json()["records"]}


# -- conventions: auth, errors, headers, outages ------------------------------------------------------


async def test_auth_failures_answer_the_exact_401_bodies(app: Starlette, state: DifyState) -> None:
    app_key = state.add_api_key(type="app")
    cases = {
        None: "Authorization header must be provided and start with 'Bearer'",
        "Bearer": "Authorization header must be provided and start with 'Bearer'",
        "Basic abc": "Authorization scheme must be 'Bearer'",
        "Bearer dataset-wrong": "Access token is invalid",
        f"Bearer {app_key}": "Access token is invalid",
    }
    async with _client(app) as c:
        for header, message in cases.items():
            response = await c.get("/v1/datasets", headers={"Authorization": header} if header else {})
            assert response.status_code == 401
            assert response.json() == {"code": "unauthorized", "message": message, "status": 401}
            assert response.headers["www-authenticate"] == 'Bearer realm="api"'


async def test_scheme_is_case_insensitive(app: Starlette, state: DifyState) -> None:
    key = state.add_api_key()
    async with _client(app) as c:
        response = await c.get("/v1/datasets", headers={"Authorization": f"bearer {key}"})
    assert response.status_code == 200


async def test_every_reply_carries_the_version_headers(client: httpx.AsyncClient) -> None:
    ok = await client.get("/v1/datasets")
    missing = await client.get(f"/v1/datasets/{'0' * 8}-0000-4000-8000-{'0' * 12}")
    console = await client.get("/console/api/setup")
    for response in (ok, missing, console):
        assert response.headers["x-version"] == "1.16.0"
        assert response.headers["x-env"] == "PRODUCTION"
    assert missing.json() == {"code": "not_found", "message": "Dataset not found.", "status": 404}


async def test_version_header_follows_the_emulated_version() -> None:
    app = create_app(version="1.13.3")
    async with _client(app, app.state.dify.add_api_key()) as c:
        assert (await c.get("/v1/datasets")).headers["x-version"] == "1.13.3"


async def test_unknown_routes_and_malformed_ids_are_404_before_auth(app: Starlette) -> None:
    async with _client(app) as c:
        for path in ("/v1/datasets/not-a-uuid", "/v1/nothing-here"):
            response = await c.get(path)
            assert response.status_code == 404
            assert response.json()["code"] == "not_found"
            assert response.json()["message"].startswith("The requested URL was not found on the server.")
        response = await c.put("/v1/datasets")
    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"


async def test_outage_answers_nginx_pages_without_version(
    client: httpx.AsyncClient, state: DifyState
) -> None:
    for status, title in ((502, "502 Bad Gateway"), (503, "503 Service Temporarily Unavailable")):
        state.outage = status
        response = await client.get("/v1/datasets")
        assert response.status_code == status
        assert title in response.text
        assert response.headers["content-type"].startswith("text/html")
        assert "x-version" not in response.headers
    state.outage = None
    assert (await client.get("/v1/datasets")).status_code == 200


async def test_bad_json_and_rate_limit(client: httpx.AsyncClient, state: DifyState) -> None:
    response = await client.post(
        "/v1/datasets", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "bad_request"
    state.knowledge_rate_limit = 1
    assert (await client.post("/v1/datasets", json={"name": "one"})).status_code == 200
    limited = await client.post("/v1/datasets", json={"name": "two"})
    assert limited.status_code == 403
    assert limited.json() == {
        "code": "forbidden",
        "message": "Sorry, you have reached the knowledge base request rate limit of your subscription.",
        "status": 403,
    }
    assert (await client.get("/v1/datasets")).status_code == 200  # reads are not counted
    state.advance(61)
    assert (await client.post("/v1/datasets", json={"name": "two"})).status_code == 200


# -- datasets ---------------------------------------------------------------------------------------------


async def test_create_dataset_shape_and_errors(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/datasets", json={"name": "kb", "indexing_technique": "high_quality"})
    assert response.status_code == 200
    body = response.json()
    assert body["document_count"] == 0 and body["doc_form"] is None and body["permission"] == "only_me"
    assert body["embedding_model"] == "text-embedding-3-small"
    assert body["embedding_model_provider"] == "langgenius/openai/openai"
    assert body["retrieval_model_dict"]["search_method"] == "semantic_search"
    assert body["retrieval_model_dict"]["top_k"] == 4
    for key in (
        "enable_api",
        "maintainer",
        "total_available_documents",
        "is_multimodal",
        "summary_index_setting",
    ):
        assert key in body
    duplicate = await client.post("/v1/datasets", json={"name": "kb"})
    assert duplicate.status_code == 409
    assert duplicate.json() == {
        "code": "dataset_name_duplicate",
        "message": "The dataset name already exists. Please modify your dataset name.",
        "status": 409,
    }
    too_long = await client.post("/v1/datasets", json={"name": "x" * 41})
    assert too_long.status_code == 400
    assert too_long.json()["code"] == "invalid_param"
    partial = await client.post(
        "/v1/datasets", json={"name": "rm", "retrieval_model": {"search_method": "semantic_search"}}
    )
    assert partial.status_code == 400 and "reranking_enable" in partial.json()["message"]


async def test_high_quality_needs_an_embedding_model(client: httpx.AsyncClient, state: DifyState) -> None:
    state.embedding_models = []
    response = await client.post("/v1/datasets", json={"name": "kb", "indexing_technique": "high_quality"})
    assert response.status_code == 400
    assert response.json()["message"].startswith("No Embedding Model available.")
    assert (
        await client.post("/v1/datasets", json={"name": "kb", "indexing_technique": "economy"})
    ).status_code == 200


async def test_list_datasets_pagination_and_filters(client: httpx.AsyncClient) -> None:
    for i in range(5):
        await _dataset(client, f"Set-{i}")
    first = (await client.get("/v1/datasets", params={"page": 1, "limit": 2})).json()
    assert [d["name"] for d in first["data"]] == ["Set-4", "Set-3"]
    assert (first["has_more"], first["total"], first["limit"], first["page"]) == (True, 5, 2, 1)
    last = (await client.get("/v1/datasets", params={"page": 3, "limit": 2})).json()
    assert [d["name"] for d in last["data"]] == ["Set-0"] and last["has_more"] is False
    big = (await client.get("/v1/datasets", params={"limit": 500})).json()
    assert big["limit"] == 500 and len(big["data"]) == 5 and big["has_more"] is False
    found = (await client.get("/v1/datasets", params={"keyword": "set-3"})).json()
    assert [d["name"] for d in found["data"]] == ["Set-3"]
    tagged = (
        await client.get("/v1/datasets", params={"tag_ids": "00000000-0000-4000-8000-000000000000"})
    ).json()
    assert tagged["data"] == [] and tagged["total"] == 0


async def test_has_more_on_a_full_last_page_differs_by_version() -> None:
    for version, expected in (("1.16.0", False), ("1.13.3", True)):
        app = create_app(version=version)
        async with _client(app, app.state.dify.add_api_key()) as c:
            for i in range(4):
                await _dataset(c, f"kb-{i}")
            page = (await c.get("/v1/datasets", params={"page": 2, "limit": 2})).json()
        assert len(page["data"]) == 2 and page["has_more"] is expected


async def test_get_update_and_delete_dataset(client: httpx.AsyncClient) -> None:
    dataset_id = await _dataset(client)
    await _dataset(client, "other")
    got = (await client.get(f"/v1/datasets/{dataset_id}")).json()
    assert got["retrieval_model_dict"]["search_method"] == "keyword_search"  # economy rewrite (§3.1)
    clash = await client.patch(f"/v1/datasets/{dataset_id}", json={"name": "other"})
    assert clash.status_code == 400
    assert clash.json() == {"code": "invalid_param", "message": "Dataset name already exists", "status": 400}
    patched = await client.patch(f"/v1/datasets/{dataset_id}", json={"description": "notes"})
    assert patched.status_code == 200
    assert patched.json()["description"] == "notes" and patched.json()["partial_member_list"] == []
    deleted = await client.delete(f"/v1/datasets/{dataset_id}")
    assert deleted.status_code == 204 and deleted.content == b""
    assert (await client.get(f"/v1/datasets/{dataset_id}")).status_code == 404


async def test_dataset_api_access_switched_off_is_403(client: httpx.AsyncClient, state: DifyState) -> None:
    dataset = state.create_dataset("locked", indexing_technique="economy")
    doc = state.create_document(dataset.id, "direct.md", "made without HTTP")
    listed = (await client.get(f"/v1/datasets/{dataset.id}/documents")).json()
    assert [d["id"] for d in listed["data"]] == [doc.id]
    dataset.enable_api = False
    response = await client.get(f"/v1/datasets/{dataset.id}")
    assert response.status_code == 403
    assert response.json() == {
        "code": "forbidden",
        "message": "Dataset api access is not enabled.",
        "status": 403,
    }


# -- documents and the indexing lifecycle ---------------------------------------------------------------


async def test_create_by_text_runs_the_indexing_lifecycle() -> None:
    app = create_app(indexing_delay=4.0)
    state: DifyState = app.state.dify
    async with _client(app, state.add_api_key()) as c:
        dataset_id = await _dataset(c)
        text = "\n\n".join(f"Paragraph {i} about password resets. " * 60 for i in range(3))
        created = await _document(c, dataset_id, "faq.md", text)
        assert created["document"]["indexing_status"] == "waiting"
        assert created["document"]["display_status"] == "queuing"
        assert len(created["batch"]) == 20 and created["batch"].isdigit()
        status_url = f"/v1/datasets/{dataset_id}/documents/{created['batch']}/indexing-status"
        seen = []
        for _ in range(5):
            entry = (await c.get(status_url)).json()["data"][0]
            seen.append(entry["indexing_status"])
            if entry["indexing_status"] == "indexing":
                assert entry["total_segments"] >= 2
                assert entry["completed_segments"] < entry["total_segments"]
            if seen[-1] != "completed":
                assert (await _retrieve(c, dataset_id, "password")).json()["records"] == []
            state.advance(1.0 if seen[-1] != "waiting" else 1.5)
        assert seen == ["waiting", "parsing", "splitting", "indexing", "completed"]
        done = (await c.get(status_url)).json()["data"][0]
        assert done["completed_segments"] == done["total_segments"]
        assert done["processing_started_at"] <= done["parsing_completed_at"] <= done["completed_at"]
        assert _names(await _retrieve(c, dataset_id, "password")) == {"faq.md"}
        detail = (await c.get(f"/v1/datasets/{dataset_id}/documents/{created['document']['id']}")).json()
        assert detail["display_status"] == "available" and detail["word_count"] == len(text)
        assert detail["segment_count"] == done["total_segments"]
        missing = await c.get(f"/v1/datasets/{dataset_id}/documents/20990101000000000000/indexing-status")
        assert missing.json() == {"code": "not_found", "message": "Documents not found.", "status": 404}


async def test_zero_delay_completes_on_the_next_read(client: httpx.AsyncClient) -> None:
    dataset_id = await _dataset(client)
    created = await _document(client, dataset_id, "a.md", "alpha beta")
    assert created["document"]["indexing_status"] == "waiting"
    doc = (await client.get(f"/v1/datasets/{dataset_id}/documents/{created['document']['id']}")).json()
    assert doc["indexing_status"] == "completed"


async def test_no_worker_keeps_documents_queued(client: httpx.AsyncClient, state: DifyState) -> None:
    dataset_id = await _dataset(client)
    state.stop_workers()
    created = await _document(client, dataset_id, "a.md", "alpha beta")
    state.advance(3600)
    url = f"/v1/datasets/{dataset_id}/documents/{created['document']['id']}"
    assert (await client.get(url)).json()["display_status"] == "queuing"
    assert state.progress(state.document(created["document"]["id"])).status == "waiting"
    state.start_workers()
    assert (await client.get(url)).json()["display_status"] == "available"


async def test_paused_documents_and_finish_indexing() -> None:
    app = create_app(indexing_delay=8.0)
    state: DifyState = app.state.dify
    async with _client(app, state.add_api_key()) as c:
        dataset_id = await _dataset(c)
        created = await _document(c, dataset_id, "a.md", "alpha beta")
        state.advance(3)
        state.pause_document(created["document"]["id"])
        state.advance(100)
        url = f"/v1/datasets/{dataset_id}/documents/{created['document']['id']}"
        assert (await c.get(url)).json()["display_status"] == "paused"
        entry = (
            await c.get(f"/v1/datasets/{dataset_id}/documents/{created['batch']}/indexing-status")
        ).json()
        assert entry["data"][0]["indexing_status"] == "paused" and entry["data"][0]["paused_at"] is not None
        state.finish_indexing()
        assert (await c.get(url)).json()["display_status"] == "available"


async def test_bad_max_tokens_fails_asynchronously(client: httpx.AsyncClient, state: DifyState) -> None:
    dataset_id = await _dataset(client)
    rule = {
        "mode": "custom",
        "rules": {
            "pre_processing_rules": [{"id": "remove_extra_spaces", "enabled": True}],
            "segmentation": {"separator": "\n", "max_tokens": 5000},
        },
    }
    created = await _document(client, dataset_id, "a.md", "alpha", process_rule=rule)
    assert created["document"]["indexing_status"] == "waiting"
    doc = (await client.get(f"/v1/datasets/{dataset_id}/documents/{created['document']['id']}")).json()
    assert doc["indexing_status"] == "error" and doc["display_status"] == "error"
    assert doc["error"] == "Custom segment length should be between 50 and 4000."
    state.indexing_failure = "credentials rejected"
    failed = await _document(client, dataset_id, "b.md", "beta")
    doc = (await client.get(f"/v1/datasets/{dataset_id}/documents/{failed['document']['id']}")).json()
    assert doc["error"] == "credentials rejected"


async def test_create_by_text_validation_errors(client: httpx.AsyncClient) -> None:
    dataset_id = await _dataset(client, indexing_technique=None)
    url = f"/v1/datasets/{dataset_id}/document/create-by-text"
    no_technique = await client.post(
        url, json={"name": "a", "text": "b", "process_rule": {"mode": "automatic"}}
    )
    assert no_technique.json() == {
        "code": "invalid_param",
        "message": "indexing_technique is required.",
        "status": 400,
    }
    no_rule = await client.post(url, json={"name": "a", "text": "b", "indexing_technique": "economy"})
    assert no_rule.status_code == 500  # the first document must carry a process rule (§4.2)
    bad_rule = await client.post(
        url,
        json={"name": "a", "text": "b", "indexing_technique": "economy", "process_rule": {"mode": "custom"}},
    )
    assert bad_rule.json()["message"] == "Process rule rules is required"
    await _document(client, dataset_id, "a", "b")
    other_form = await client.post(
        url, json={"name": "c", "text": "d", "doc_form": "qa_model", "process_rule": {"mode": "automatic"}}
    )
    assert other_form.json()["message"] == "doc_form is different from the dataset doc_form."
    missing_text = await client.post(url, json={"name": "c"})
    assert missing_text.status_code == 400 and missing_text.json()["code"] == "invalid_param"
    reused_rule = await client.post(url, json={"name": "later", "text": "no rule needed now"})
    assert reused_rule.status_code == 200


async def test_same_name_overwrites_the_enabled_document(client: httpx.AsyncClient, state: DifyState) -> None:
    dataset_id = await _dataset(client)
    first = await _document(client, dataset_id, "notes.md", "apples are red")
    second = await _document(client, dataset_id, "notes.md", "bananas are yellow")
    assert second["document"]["id"] == first["document"]["id"]
    assert second["batch"] != first["batch"]
    assert second["document"]["indexing_status"] == "waiting"
    listed = (await client.get(f"/v1/datasets/{dataset_id}/documents")).json()
    assert listed["total"] == 1
    assert _names(await _retrieve(client, dataset_id, "bananas")) == {"notes.md"}
    assert _names(await _retrieve(client, dataset_id, "apples")) == set()
    await client.patch(
        f"/v1/datasets/{dataset_id}/documents/status/disable",
        json={"document_ids": [first["document"]["id"]]},
    )
    third = await _document(client, dataset_id, "notes.md", "cherries")
    assert third["document"]["id"] != first["document"]["id"]
    assert len(state.documents(dataset_id)) == 2


async def test_update_by_text(client: httpx.AsyncClient, state: DifyState) -> None:
    dataset_id = await _dataset(client)
    created = await _document(client, dataset_id, "a.md", "apples are red")
    doc_id = created["document"]["id"]
    url = f"/v1/datasets/{dataset_id}/documents/{doc_id}/update-by-text"
    no_name = await client.post(url, json={"text": "x"})
    assert no_name.json() == {
        "code": "invalid_param",
        "message": "name is required when text is provided",
        "status": 400,
    }
    updated = await client.post(url, json={"name": "b.md", "text": "bananas are yellow"})
    assert updated.status_code == 200
    body = updated.json()
    assert body["document"]["id"] == doc_id and body["batch"] == created["batch"]
    assert body["document"]["indexing_status"] == "waiting" and body["document"]["name"] == "b.md"
    assert _names(await _retrieve(client, dataset_id, "bananas")) == {"b.md"}
    state.indexing_delay = 10
    renamed = await client.post(url, json={"name": "c.md"})
    assert renamed.json()["document"]["indexing_status"] == "waiting"  # a pure rename re-indexes too
    busy = await client.post(url, json={"name": "d.md"})
    assert busy.json() == {"code": "invalid_param", "message": "Document is not available", "status": 400}
    unknown = await client.post(
        f"/v1/datasets/{dataset_id}/documents/{'1' * 8}-1111-4111-8111-{'1' * 12}/update_by_text", json={}
    )
    assert unknown.json() == {"code": "not_found", "message": "Document not found", "status": 404}


async def test_list_documents_filters_and_pagination(client: httpx.AsyncClient, state: DifyState) -> None:
    dataset_id = await _dataset(client)
    for name in ("Alpha.md", "beta.md", "gamma.md"):
        await _document(client, dataset_id, name, f"text of {name}")
    url = f"/v1/datasets/{dataset_id}/documents"
    page = (await client.get(url, params={"limit": 2})).json()
    assert [d["name"] for d in page["data"]] == ["gamma.md", "beta.md"]
    assert (page["has_more"], page["total"]) == (True, 3)
    assert [d["name"] for d in (await client.get(url, params={"keyword": "alpha"})).json()["data"]] == []
    assert [d["name"] for d in (await client.get(url, params={"keyword": "Alpha"})).json()["data"]] == [
        "Alpha.md"
    ]
    beta = state.documents(dataset_id)[1]
    await client.patch(f"{url}/status/disable", json={"document_ids": [beta.id]})
    disabled = (await client.get(url, params={"status": "disabled"})).json()["data"]
    assert [d["name"] for d in disabled] == ["beta.md"]
    active = (await client.get(url, params={"status": "active"})).json()["data"]
    assert {d["name"] for d in active} == {"Alpha.md", "gamma.md"}
    assert (await client.get(url, params={"status": "bogus"})).json()["total"] == 3


async def test_get_document_metadata_views_and_segments(client: httpx.AsyncClient) -> None:
    dataset_id = await _dataset(client)
    created = await _document(client, dataset_id, "a.md", "first paragraph\n\nsecond paragraph")
    url = f"/v1/datasets/{dataset_id}/documents/{created['document']['id']}"
    only = (await client.get(url, params={"metadata": "only"})).json()
    assert set(only) == {"id", "doc_type", "doc_metadata"}
    without = (await client.get(url, params={"metadata": "without"})).json()
    assert "doc_metadata" not in without and "dataset_process_rule" in without
    bad = await client.get(url, params={"metadata": "x"})
    assert bad.json() == {"code": "invalid_metadata", "message": "Invalid metadata value: x", "status": 400}
    segments = (await client.get(f"{url}/segments")).json()
    assert segments["doc_form"] == "text_model" and segments["total"] == 1
    segment = segments["data"][0]
    assert segment["content"] == "first paragraph\n\nsecond paragraph" and segment["status"] == "completed"
    assert (await client.get(f"{url}/segments/{segment['id']}")).json()["data"]["id"] == segment["id"]
    missing = await client.get(f"/v1/datasets/{dataset_id}/documents/{'2' * 8}-2222-4222-8222-{'2' * 12}")
    assert missing.json() == {"code": "not_found", "message": "Document not found.", "status": 404}


# -- status changes and deletion -------------------------------------------------------------------------


async def test_enable_disable_archive_and_delete(client: httpx.AsyncClient) -> None:
    dataset_id = await _dataset(client)
    doc_id = (await _document(client, dataset_id, "a.md", "apples"))["document"]["id"]
    status = f"/v1/datasets/{dataset_id}/documents/status"
    doc_url = f"/v1/datasets/{dataset_id}/documents/{doc_id}"
    assert (await client.patch(f"{status}/disable", json={"document_ids": [doc_id]})).json() == {
        "result": "success"
    }
    assert (await client.get(doc_url)).json()["display_status"] == "disabled"
    assert _names(await _retrieve(client, dataset_id, "apples")) == set()
    await client.patch(f"{status}/enable", json={"document_ids": [doc_id, "not-a-document"]})
    assert _names(await _retrieve(client, dataset_id, "apples")) == {"a.md"}
    bad = await client.patch(f"{status}/explode", json={"document_ids": [doc_id]})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_action"
    assert (await client.patch(f"{status}/archive", json={"document_ids": []})).status_code == 200
    await client.patch(f"{status}/archive", json={"document_ids": [doc_id]})
    assert (await client.get(doc_url)).json()["display_status"] == "archived"
    immutable = await client.delete(doc_url)
    assert immutable.json() == {
        "code": "archived_document_immutable",
        "message": "The archived document is not editable.",
        "status": 403,
    }
    await client.patch(f"{status}/un_archive", json={"document_ids": [doc_id]})
    deleted = await client.delete(doc_url)
    assert deleted.status_code == 204 and deleted.content == b""
    gone = await client.delete(doc_url)
    assert gone.json() == {"code": "not_found", "message": "Document Not Exists.", "status": 404}


async def test_status_changes_are_asynchronous() -> None:
    app = create_app(indexing_delay=2.0)
    state: DifyState = app.state.dify
    async with _client(app, state.add_api_key()) as c:
        dataset_id = await _dataset(c)
        created = await _document(c, dataset_id, "a.md", "apples")
        status = f"/v1/datasets/{dataset_id}/documents/status"
        ids = {"document_ids": [created["document"]["id"]]}
        not_done = await c.patch(f"{status}/disable", json=ids)
        assert not_done.json() == {
            "code": "invalid_action",
            "message": "Document: a.md is not completed.",
            "status": 400,
        }
        state.advance(3)
        assert (await c.patch(f"{status}/disable", json=ids)).status_code == 200
        busy = await c.patch(f"{status}/enable", json=ids)
        assert busy.json()["message"] == "Document:a.md is being indexed, please try again later"
        state.advance(3)
        assert (await c.patch(f"{status}/enable", json=ids)).status_code == 200
        assert _names(await _retrieve(c, dataset_id, "apples")) == set()  # not yet back in the index
        state.advance(3)
        assert _names(await _retrieve(c, dataset_id, "apples")) == {"a.md"}


async def test_a_fast_index_task_leaves_the_being_indexed_flag_behind() -> None:
    """Dify sets the flag after queueing the task: a task that ends first leaves it for 600 s."""
    app = create_app(indexing_delay=1.0)
    state: DifyState = app.state.dify
    state.stale_status_flag = 600
    async with _client(app, state.add_api_key()) as c:
        dataset_id = await _dataset(c)
        created = await _document(c, dataset_id, "a.md", "apples")
        state.finish_indexing()
        doc_url = f"/v1/datasets/{dataset_id}/documents/{created['document']['id']}"
        status = f"/v1/datasets/{dataset_id}/documents/status"
        ids = {"document_ids": [created["document"]["id"]]}
        assert (await c.patch(f"{status}/disable", json=ids)).status_code == 200
        assert [s["enabled"] for s in (await c.get(f"{doc_url}/segments")).json()["data"]] == [True]
        state.finish_indexing()
        assert [s["enabled"] for s in (await c.get(f"{doc_url}/segments")).json()["data"]] == [False]
        busy = await c.patch(f"{status}/enable", json=ids)
        assert busy.json()["message"] == "Document:a.md is being indexed, please try again later"
        state.advance(601)
        assert (await c.patch(f"{status}/enable", json=ids)).status_code == 200
        state.advance(2)
        assert [s["enabled"] for s in (await c.get(f"{doc_url}/segments")).json()["data"]] == [True]
        assert _names(await _retrieve(c, dataset_id, "apples")) == {"a.md"}


@pytest.mark.parametrize("version", ["1.14.2", "1.16.1"])
async def test_the_fields_that_changed_in_1_16(version: str) -> None:
    """1.16: datasets gain `maintainer`, a document without metadata lists `[]` (not null),
    and `/retrieve` answers `query` as an object."""
    app = create_app(version=version)
    state: DifyState = app.state.dify
    new = version.startswith("1.16")
    async with _client(app, state.add_api_key()) as c:
        dataset_id = await _dataset(c)
        dataset = (await c.get(f"/v1/datasets/{dataset_id}")).json()
        assert ("maintainer" in dataset) is new
        created = await _document(c, dataset_id, "a.md", "apples")
        doc = (await c.get(f"/v1/datasets/{dataset_id}/documents/{created['document']['id']}")).json()
        assert doc["doc_metadata"] == ([] if new else None)
        listed = (await c.get(f"/v1/datasets/{dataset_id}/documents")).json()["data"]
        assert listed[0]["doc_metadata"] == ([] if new else None)
        found = (await _retrieve(c, dataset_id, "apples")).json()
        assert found["query"] == ({"content": "apples"} if new else "apples")


async def test_delete_document_reply_by_version() -> None:
    app = create_app(version="1.13.3")
    async with _client(app, app.state.dify.add_api_key()) as c:
        dataset_id = await _dataset(c)
        doc_id = (await _document(c, dataset_id, "a.md", "x"))["document"]["id"]
        response = await c.delete(f"/v1/datasets/{dataset_id}/documents/{doc_id}")
    assert response.status_code == 200 and response.json() == 204


# -- metadata ---------------------------------------------------------------------------------------------


async def test_metadata_fields(client: httpx.AsyncClient) -> None:
    dataset_id = await _dataset(client)
    url = f"/v1/datasets/{dataset_id}/metadata"
    created = await client.post(url, json={"type": "string", "name": "author"})
    assert created.status_code == 201
    field = created.json()
    assert set(field) == {"id", "name", "type"} and field["type"] == "string"
    duplicate = await client.post(url, json={"type": "string", "name": "author"})
    assert duplicate.json() == {
        "code": "invalid_param",
        "message": "Metadata name already exists.",
        "status": 400,
    }
    built_in = await client.post(url, json={"type": "string", "name": "document_name"})
    assert built_in.json()["message"] == "Metadata name already exists in Built-in fields."
    assert (await client.post(url, json={"type": "string", "name": "x" * 256})).json()["message"] == (
        "Metadata name cannot exceed 255 characters."
    )
    listed = (await client.get(url)).json()
    assert listed == {
        "doc_metadata": [{"id": field["id"], "name": "author", "type": "string", "count": 0}],
        "built_in_field_enabled": False,
    }
    renamed = await client.patch(f"{url}/{field['id']}", json={"name": "writer"})
    assert renamed.json() == {"id": field["id"], "name": "writer", "type": "string"}
    built_ins = (await client.get(f"{url}/built-in")).json()["fields"]
    assert [f["name"] for f in built_ins] == [
        "document_name",
        "uploader",
        "upload_date",
        "last_update_date",
        "source",
    ]
    assert (await client.delete(f"{url}/{field['id']}")).status_code == 204
    assert (await client.get(url)).json()["doc_metadata"] == []
    unknown = await client.patch(f"{url}/{field['id']}", json={"name": "again"})
    assert unknown.json() == {"code": "invalid_param", "message": "Metadata not found.", "status": 400}


async def test_document_metadata_replace_and_merge(client: httpx.AsyncClient) -> None:
    dataset_id = await _dataset(client)
    author = (
        await client.post(f"/v1/datasets/{dataset_id}/metadata", json={"type": "string", "name": "author"})
    ).json()
    year = (
        await client.post(f"/v1/datasets/{dataset_id}/metadata", json={"type": "number", "name": "year"})
    ).json()
    doc_id = (await _document(client, dataset_id, "a.md", "text"))["document"]["id"]
    url = f"/v1/datasets/{dataset_id}/documents/metadata"

    async def write(items: list[dict[str, Any]], partial: bool = False) -> httpx.Response:
        op = {"document_id": doc_id, "metadata_list": items, "partial_update": partial}
        return await client.post(url, json={"operation_data": [op]})

    both = [{**author, "value": "Alice"}, {**year, "value": 2024}]
    assert (await write(both)).json() == {"result": "success"}
    await write([{**author, "value": "Bob"}])
    records = (await _retrieve(client, dataset_id, "text")).json()["records"]
    assert records[0]["segment"]["document"]["doc_metadata"] == {"author": "Bob"}  # year wiped
    counts = {
        f["name"]: f["count"]
        for f in (await client.get(f"/v1/datasets/{dataset_id}/metadata")).json()["doc_metadata"]
    }
    assert counts == {"author": 1, "year": 0}
    await write([{**year, "value": 2025}], partial=True)
    doc = (await client.get(f"/v1/datasets/{dataset_id}/documents/{doc_id}")).json()
    values = {item["name"]: item["value"] for item in doc["doc_metadata"]}
    assert values["author"] == "Bob" and values["year"] == 2025 and values["document_name"] == "a.md"
    assert [item["id"] for item in doc["doc_metadata"]][-5:] == ["built-in"] * 5
    await client.patch(f"/v1/datasets/{dataset_id}/metadata/{author['id']}", json={"name": "writer"})
    records = (await _retrieve(client, dataset_id, "text")).json()["records"]
    assert records[0]["segment"]["document"]["doc_metadata"] == {"writer": "Bob", "year": 2025}
    missing = await client.post(
        url, json={"operation_data": [{"document_id": "nope", "metadata_list": [], "partial_update": False}]}
    )
    assert missing.json() == {"code": "invalid_param", "message": "Document not found.", "status": 400}


async def test_old_builds_swallow_metadata_errors_and_always_replace() -> None:
    app = create_app(version="1.13.3")
    async with _client(app, app.state.dify.add_api_key()) as c:
        dataset_id = await _dataset(c)
        doc_id = (await _document(c, dataset_id, "a.md", "text"))["document"]["id"]
        url = f"/v1/datasets/{dataset_id}/documents/metadata"
        missing = await c.post(url, json={"operation_data": [{"document_id": "nope", "metadata_list": []}]})
        assert missing.json() == {"result": "success"}
        for item, partial in (
            ({"id": "1", "name": "a", "value": 1}, False),
            ({"id": "2", "name": "b", "value": 2}, True),
        ):
            await c.post(
                url,
                json={
                    "operation_data": [
                        {"document_id": doc_id, "metadata_list": [item], "partial_update": partial}
                    ]
                },
            )
        assert app.state.dify.document(doc_id).metadata == {"b": 2}


async def test_built_in_fields_have_two_encodings(client: httpx.AsyncClient, state: DifyState) -> None:
    dataset_id = await _dataset(client)
    before = (await _document(client, dataset_id, "before.md", "text"))["document"]["id"]
    await client.get(f"/v1/datasets/{dataset_id}/documents")  # let it complete
    assert (await client.post(f"/v1/datasets/{dataset_id}/metadata/built-in/enable")).json() == {
        "result": "success"
    }
    after = (await _document(client, dataset_id, "after.md", "text"))["document"]["id"]
    enabled_later = state.document(before).metadata or {}
    created_while_on = state.document(after).metadata or {}
    assert isinstance(enabled_later["upload_date"], float) and enabled_later["source"] == "file_upload"
    assert isinstance(created_while_on["upload_date"], str) and created_while_on["source"] == "upload_file"
    assert len(created_while_on["upload_date"]) == len("2026-01-01 00:00:00")
    dataset = (await client.get(f"/v1/datasets/{dataset_id}")).json()
    assert dataset["built_in_field_enabled"] is True
    assert sum(1 for f in dataset["doc_metadata"] if f["id"] == "built-in") == 5
    await client.post(f"/v1/datasets/{dataset_id}/metadata/built-in/disable")
    assert state.document(before).metadata == {}


# -- retrieval: metadata filters ------------------------------------------------------------------------


@pytest.fixture
async def filtered(client: httpx.AsyncClient) -> str:
    """Four documents mentioning "guide", with metadata A..D of the operator table below."""
    dataset_id = await _dataset(client, "filtered")
    metadata: dict[str, dict[str, Any]] = {
        "A": {"product": "billing", "year": 2024, "tags": "faq", "note": None},
        "B": {"product": "auth", "year": 2022, "tags": "howto", "note": ""},
        "C": {"product": "billing-v2", "year": "2023"},
        "D": {},
    }
    ops = []
    for name, values in metadata.items():
        doc_id = (await _document(client, dataset_id, name, f"user guide {name}"))["document"]["id"]
        items = [{"id": key, "name": key, "value": value} for key, value in values.items()]
        ops.append({"document_id": doc_id, "metadata_list": items})
    await client.post(f"/v1/datasets/{dataset_id}/documents/metadata", json={"operation_data": ops})
    return dataset_id


def _filter(*conditions: tuple[str, str, Any], logical: str = "and") -> dict[str, Any]:
    return {
        **ECONOMY_KEYWORDS,
        **NO_THRESHOLD,
        "metadata_filtering_conditions": {
            "logical_operator": logical,
            "conditions": [{"name": n, "comparison_operator": op, "value": v} for n, op, v in conditions],
        },
    }


OPERATOR_CASES = [
    (("product", "contains", "bill"), "AC"),
    (("product", "not contains", "bill"), "B"),
    (("product", "start with", "billing"), "AC"),
    (("product", "end with", "v2"), "C"),
    (("product", "is", "billing"), "A"),
    (("product", "is not", "billing"), "BC"),
    (("year", "=", 2024), "A"),
    (("year", "≠", 2024), "BC"),
    (("year", "is", "2024"), "A"),
    (("note", "empty", None), "CD"),
    (("note", "not empty", None), "AB"),
    (("tags", "in", ["faq", "howto"]), "AB"),
    (("tags", "in", "faq, howto"), "AB"),
    (("tags", "not in", ["faq"]), "B"),
    (("tags", "not in", []), "ABCD"),
    (("year", ">", 2023), "A"),
    (("year", "after", 2023), "A"),
    (("year", "<", 2023), "B"),
    (("year", "before", 2023), "B"),
    (("year", "≥", 2023), "AC"),
    (("year", "≤", 2023), "BC"),
    (("product", "is", None), "ABCD"),
]


@pytest.mark.parametrize(
    ("condition", "expected"), OPERATOR_CASES, ids=[f"{c[0][1]}-{c[1]}" for c in OPERATOR_CASES]
)
async def test_each_filter_operator(
    client: httpx.AsyncClient, filtered: str, condition: tuple[str, str, Any], expected: str
) -> None:
    assert _names(await _retrieve(client, filtered, "guide", **_filter(condition))) == set(expected)


async def test_filter_combinations_and_errors(client: httpx.AsyncClient, filtered: str) -> None:
    either = _filter(("product", "is", "auth"), ("year", "≥", 2024), logical="or")
    assert _names(await _retrieve(client, filtered, "guide", **either)) == {"A", "B"}
    both = _filter(("product", "contains", "bill"), ("year", "≤", 2023))
    assert _names(await _retrieve(client, filtered, "guide", **both)) == {"C"}
    nothing = await _retrieve(client, filtered, "guide", **_filter(("tags", "in", [])))
    assert nothing.json() == {"query": {"content": "guide"}, "records": []}
    ascii_operator = await _retrieve(client, filtered, "guide", **_filter(("year", ">=", 2023)))
    assert ascii_operator.status_code == 400 and ascii_operator.json()["code"] == "invalid_param"
    cast = await _retrieve(client, filtered, "guide", **_filter(("product", ">", 1)))
    assert cast.status_code == 500


async def test_filters_are_ignored_where_the_version_drops_them() -> None:
    for version in ("1.13.3", "1.3.0"):
        app = create_app(version=version)
        async with _client(app, app.state.dify.add_api_key()) as c:
            dataset_id = await _dataset(c)
            await _document(c, dataset_id, "a", "guide")
            response = await _retrieve(c, dataset_id, "guide", **_filter(("missing", "is", "x")))
        assert _names(response) == {"a"}, version
    app = create_app(version="1.6.0")
    async with _client(app, app.state.dify.add_api_key()) as c:
        dataset_id = await _dataset(c)
        await _document(c, dataset_id, "a", "guide")
        unknown = _filter(("tags", "in", ["zzz"]), ("year", ">=", 1))  # both dropped silently before 1.7
        assert _names(await _retrieve(c, dataset_id, "guide", **unknown)) == {"a"}


# -- retrieval: scoring ------------------------------------------------------------------------------------


async def test_economy_is_keyword_search_with_zero_scores(client: httpx.AsyncClient) -> None:
    dataset_id = await _dataset(client)
    await _document(client, dataset_id, "pets.md", "cats purr and cats sleep")
    await _document(client, dataset_id, "dogs.md", "dogs bark at cats")
    await _document(client, dataset_id, "other.md", "nothing relevant here")
    semantic = {
        "search_method": "semantic_search",
        "reranking_enable": False,
        "top_k": 5,
        "score_threshold_enabled": True,
        "score_threshold": 0.9,
    }
    response = await _retrieve(client, dataset_id, "cats", **semantic)
    records = response.json()["records"]
    assert {r["segment"]["document"]["name"] for r in records} == {"pets.md", "dogs.md"}
    assert all(r["score"] == 0.0 for r in records)
    assert records[0]["segment"]["keywords"]
    assert set(records[0]) == {"segment", "child_chunks", "score", "tsne_position", "files", "summary"}


async def test_old_builds_report_null_keyword_scores() -> None:
    app = create_app(version="0.15.3")
    async with _client(app, app.state.dify.add_api_key()) as c:
        dataset_id = await _dataset(c)
        body = {"name": "a.md", "text": "cats", "process_rule": {"mode": "automatic"}}
        assert (
            await c.post(f"/v1/datasets/{dataset_id}/document/create-by-text", json=body)
        ).status_code == 404
        assert (
            await c.post(f"/v1/datasets/{dataset_id}/document/create_by_text", json=body)
        ).status_code == 200
        records = (await _retrieve(c, dataset_id, "cats")).json()["records"]
    assert records[0]["score"] is None


@pytest.fixture
async def scored() -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """A high-quality dataset scored by HashEmbedder."""
    app = create_app(embedder=HashEmbedder())
    async with _client(app, app.state.dify.add_api_key()) as c:
        dataset_id = await _dataset(c, "hq", indexing_technique="high_quality")
        for name, text in (
            ("cats.md", "cats purr softly"),
            ("mixed.md", "cats bark loudly at night"),
            ("dogs.md", "dogs bark loudly"),
        ):
            await _document(c, dataset_id, name, text)
        yield c, dataset_id


def _model(method: str, threshold: float | None = None, top_k: int = 5, **extra: Any) -> dict[str, Any]:
    return {
        "search_method": method,
        "reranking_enable": False,
        "top_k": top_k,
        "score_threshold_enabled": threshold is not None,
        "score_threshold": threshold,
        **extra,
    }


async def test_semantic_search_and_score_threshold(scored: tuple[httpx.AsyncClient, str]) -> None:
    client, dataset_id = scored
    everything = (await _retrieve(client, dataset_id, "cats purr", **_model("semantic_search"))).json()[
        "records"
    ]
    scores = [r["score"] for r in everything]
    assert everything[0]["segment"]["document"]["name"] == "cats.md"
    assert scores == sorted(scores, reverse=True) and 0 < scores[0] <= 1
    assert "dogs.md" not in {r["segment"]["document"]["name"] for r in everything}  # cosine 0 is not > 0
    cut = _model("semantic_search", threshold=scores[0] - 1e-6)
    assert _names(await _retrieve(client, dataset_id, "cats purr", **cut)) == {"cats.md"}
    ignored = _model("semantic_search", top_k=1)
    assert len((await _retrieve(client, dataset_id, "cats purr", **ignored)).json()["records"]) == 1


async def test_full_text_scores_zero_and_ignores_threshold(scored: tuple[httpx.AsyncClient, str]) -> None:
    client, dataset_id = scored
    records = (await _retrieve(client, dataset_id, "bark", **_model("full_text_search", 0.99))).json()[
        "records"
    ]
    assert {r["segment"]["document"]["name"] for r in records} == {"mixed.md", "dogs.md"}
    assert all(r["score"] == 0.0 for r in records)
    assert (await _retrieve(client, dataset_id, "bark", **_model("keyword_search"))).json()["records"] == []


async def test_hybrid_weighted_score(scored: tuple[httpx.AsyncClient, str]) -> None:
    client, dataset_id = scored
    weights = {
        "weight_type": "customized",
        "vector_setting": {"vector_weight": 0.7, "embedding_provider_name": "", "embedding_model_name": ""},
        "keyword_setting": {"keyword_weight": 0.3},
    }
    model = _model("hybrid_search", reranking_mode="weighted_score", weights=weights)
    records = (await _retrieve(client, dataset_id, "cats bark", **model)).json()["records"]
    assert [r["segment"]["document"]["name"] for r in records][:1] == ["mixed.md"]
    assert all(0 < r["score"] <= 1 for r in records)
    best = records[0]["score"]
    strict = _model("hybrid_search", threshold=best - 1e-6, reranking_mode="weighted_score", weights=weights)
    assert _names(await _retrieve(client, dataset_id, "cats bark", **strict)) == {"mixed.md"}
    unfused = (await _retrieve(client, dataset_id, "cats bark", **_model("hybrid_search", top_k=1))).json()
    assert len(unfused["records"]) == 3  # no fusion: not cut to top_k


async def test_semantic_without_embedder_falls_back_to_keywords(client: httpx.AsyncClient) -> None:
    dataset_id = await _dataset(client, "hq", indexing_technique="high_quality")
    await _document(client, dataset_id, "cats.md", "cats purr softly")
    await _document(client, dataset_id, "dogs.md", "dogs bark loudly")
    records = (await _retrieve(client, dataset_id, "cats", **_model("semantic_search"))).json()["records"]
    assert [(r["segment"]["document"]["name"], r["score"]) for r in records] == [("cats.md", 1.0)]


async def test_retrieve_request_validation(client: httpx.AsyncClient) -> None:
    dataset_id = await _dataset(client)
    too_long = await _retrieve(client, dataset_id, "q" * 251)
    assert too_long.json() == {
        "code": "invalid_param",
        "message": "Query cannot exceed 250 characters",
        "status": 400,
    }
    partial = await _retrieve(client, dataset_id, "q", search_method="keyword_search")
    assert partial.status_code == 400 and "reranking_enable" in partial.json()["message"]
    assert (await _retrieve(client, dataset_id, "nothing")).json()["records"] == []


# -- console: headless onboarding ----------------------------------------------------------------------


async def test_headless_onboarding(app: Starlette, state: DifyState) -> None:
    state.init_password = "init-pass-1"
    async with _client(app) as c:
        assert (await c.get("/console/api/setup")).json() == {"step": "not_started"}
        assert (await c.get("/console/api/init")).json() == {"status": "not_started"}
        early = await c.post(
            "/console/api/setup", json={"email": "a@b.co", "name": "a", "password": "Passw0rd123"}
        )
        assert early.status_code == 401 and early.json()["code"] == "not_init_validated"
        wrong = await c.post("/console/api/init", json={"password": "nope"})
        assert wrong.status_code == 401 and wrong.json()["code"] == "init_validate_failed"
        assert (await c.post("/console/api/init", json={"password": "init-pass-1"})).status_code == 201
        weak = await c.post(
            "/console/api/setup", json={"email": "admin@example.com", "name": "admin", "password": "short"}
        )
        assert weak.status_code == 400 and weak.json()["code"] == "invalid_param"
        account = {
            "email": "admin@example.com",
            "name": "admin",
            "password": "Passw0rd123",
            "language": "en-US",
        }
        setup = await c.post("/console/api/setup", json=account)
        assert (setup.status_code, setup.json()) == (201, {"result": "success"})
        again = await c.post("/console/api/setup", json=account)
        assert again.status_code == 403 and again.json()["code"] == "already_setup"
        assert (await c.get("/console/api/setup")).json()["step"] == "finished"

        login = {"email": "admin@example.com", "remember_me": True}
        plain = await c.post("/console/api/login", json={**login, "password": "Passw0rd123"})
        assert plain.json() == {
            "code": "authentication_failed",
            "message": "Invalid encrypted data",
            "status": 401,
        }
        encoded = base64.b64encode(b"Wrong999").decode()
        bad = await c.post("/console/api/login", json={**login, "password": encoded})
        assert bad.json()["message"] == "Invalid email or password."
        good = await c.post(
            "/console/api/login", json={**login, "password": base64.b64encode(b"Passw0rd123").decode()}
        )
        assert good.json() == {"result": "success"}
        assert {"access_token", "refresh_token", "csrf_token"} <= set(c.cookies)

        no_csrf = await c.post("/console/api/datasets/api-keys")
        assert no_csrf.json() == {
            "code": "unauthorized",
            "message": "CSRF token is missing or invalid.",
            "status": 401,
        }
        csrf = {"X-CSRF-Token": c.cookies["csrf_token"]}
        created = await c.post("/console/api/datasets/api-keys", headers=csrf)
        key = created.json()
        assert created.status_code == 200 and key["type"] == "dataset" and key["last_used_at"] is None
        assert key["token"].startswith("dataset-") and len(key["token"]) == len("dataset-") + 24
        listed = (await c.get("/console/api/datasets/api-keys", headers=csrf)).json()
        assert [k["id"] for k in listed["data"]] == [key["id"]]
        base = (await c.get("/console/api/datasets/api-base-info", headers=csrf)).json()
        assert base == {"api_base_url": "http://dify.local/v1"}

        service = {"Authorization": f"Bearer {key['token']}"}
        dataset_id = (await c.post("/v1/datasets", headers=service, json={"name": "kb"})).json()["id"]
        await c.post(f"/console/api/datasets/{dataset_id}/api-keys/disable", headers=csrf)
        assert (await c.get(f"/v1/datasets/{dataset_id}", headers=service)).status_code == 403
        await c.post(f"/console/api/datasets/{dataset_id}/api-keys/enable", headers=csrf)
        assert (await c.get(f"/v1/datasets/{dataset_id}", headers=service)).status_code == 200

        for _ in range(9):
            assert (await c.post("/console/api/datasets/api-keys", headers=csrf)).status_code == 200
        too_many = await c.post("/console/api/datasets/api-keys", headers=csrf)
        assert too_many.json() == {
            "code": "max_keys_exceeded",
            "message": "Cannot create more than 10 API keys for this resource type.",
            "status": 400,
        }
        deleted = await c.delete(f"/console/api/datasets/api-keys/{key['id']}", headers=csrf)
        assert deleted.status_code == 204
        assert (await c.get("/v1/datasets", headers=service)).status_code == 401

        refreshed = await c.post("/console/api/refresh-token")
        assert refreshed.json() == {"result": "success"}
        assert (await c.get("/console/api/datasets/api-keys", headers=csrf)).status_code == 401  # old tokens
        fresh = {"X-CSRF-Token": c.cookies["csrf_token"]}
        assert (await c.get("/console/api/datasets/api-keys", headers=fresh)).status_code == 200


async def test_console_before_setup_and_old_login(app: Starlette) -> None:
    async with _client(app) as c:
        early = await c.post("/console/api/login", json={"email": "a@b.co", "password": "x"})
        assert early.status_code == 401 and early.json()["code"] == "not_setup"
    old = create_app(version="1.8.0")
    async with _client(old) as c:
        account = {"email": "admin@example.com", "name": "admin", "password": "Passw0rd123"}
        assert (await c.post("/console/api/setup", json=account)).status_code == 201
        login = await c.post(
            "/console/api/login", json={"email": "admin@example.com", "password": "Passw0rd123"}
        )
        tokens = login.json()["data"]
        assert login.json()["result"] == "success" and not c.cookies
        created = await c.post(
            "/console/api/datasets/api-keys", headers={"Authorization": f"Bearer {tokens['access_token']}"}
        )
        assert created.status_code == 200


# -- segmentation ---------------------------------------------------------------------------------------


def test_automatic_segmentation_merges_paragraphs_up_to_500_tokens() -> None:
    rule = parse_process_rule({"mode": "automatic"})
    assert split_document("# Title\n\nshort one\n\n\n\nshort   two", rule) == [
        "Title\n\nshort one\n\nshort two"
    ]
    long = "\n\n".join(" ".join(f"w{p}x{i}" for i in range(200)) for p in range(4))
    segments = split_document(long, rule)
    assert len(segments) == 2 and all(len(s.split()) <= 500 for s in segments)


def test_custom_segmentation_splits_on_the_separator() -> None:
    rule = parse_process_rule(
        {
            "mode": "custom",
            "rules": {
                "pre_processing_rules": [{"id": "remove_urls_emails", "enabled": True}],
                "segmentation": {"separator": "\\n", "max_tokens": 50, "chunk_overlap": 0},
            },
        }
    )
    assert split_document("one a@b.co\ntwo https://x.io\n\nthree", rule) == ["one", "two", "three"]
    too_big = parse_process_rule(
        {
            "mode": "custom",
            "rules": {"pre_processing_rules": [], "segmentation": {"separator": "\n", "max_tokens": 10}},
        }
    )
    with pytest.raises(IndexingFailure, match="between 50 and 4000"):
        split_document("x", too_big)
