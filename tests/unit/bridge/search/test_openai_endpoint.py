"""Embeddings from an OpenAI-compatible endpoint, served by a small fake on loopback."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from memory_bridge import load_settings
from memory_bridge.stores import DocMetadata, KnowledgeFilter, make_embedder, open_knowledge_store

from ....bridges import free_port

pytestmark = pytest.mark.anyio
VOCABULARY = ("cache", "tenant", "deploy", "token")


async def embeddings(request: Request) -> JSONResponse:
    """A bag-of-words 'model': one dimension per vocabulary word."""
    body = await request.json()
    data = [
        {"index": i, "embedding": [float(word in text.lower()) + 0.01 for word in VOCABULARY]}
        for i, text in enumerate(body["input"])
    ]
    request.app.state.calls.append(body["model"])
    return JSONResponse({"data": data, "model": body["model"]})


@pytest.fixture
def endpoint() -> Iterator[tuple[str, list[str]]]:
    app = Starlette(routes=[Route("/v1/embeddings", embeddings, methods=["POST"])])
    app.state.calls = []
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}/v1", app.state.calls
    server.should_exit = True
    thread.join(timeout=10)


async def test_an_openai_compatible_endpoint_serves_the_vectors(
    endpoint: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, calls = endpoint
    settings = load_settings(project=tmp_path, embedding_url=url, embedding_endpoint_model="tiny-bow")
    store = open_knowledge_store(settings, make_embedder(settings))
    try:
        await store.upsert("knowledge", "a.md", "Deploy on Fridays never.", DocMetadata(), origin="t")
        await store.upsert("knowledge", "b.md", "Keys carry the tenant.", DocMetadata(), origin="t")
        page = await store.search(
            ["knowledge"], "tenant isolation", KnowledgeFilter(), top_k=5, score_threshold=None, mode="dense"
        )
        assert page.degraded is None
        assert page.hits[0].document_name == "b.md"
        assert set(calls) == {"tiny-bow"}
    finally:
        await store.close()


def test_the_adaptive_fusion_of_the_bundled_model_ranks_as_weighted_with_an_endpoint(tmp_path: Path) -> None:
    # adaptive's cosine marks (0.4, 0.7) are MiniLM's scale; another model's cosines sit elsewhere
    for url, fusion in ((None, "adaptive"), ("http://127.0.0.1:9/v1", "weighted")):
        settings = load_settings(project=tmp_path, embedding_url=url, search_fusion="adaptive")
        assert open_knowledge_store(settings).inner.ranking.fusion == fusion  # type: ignore[attr-defined]


async def test_an_unreachable_endpoint_degrades_to_keywords(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    settings = load_settings(project=tmp_path, embedding_url=url)
    store = open_knowledge_store(settings, make_embedder(settings))
    try:
        await store.upsert("knowledge", "a.md", "Keys carry the tenant.", DocMetadata(), origin="t")
        page = await store.search(["knowledge"], "tenant", KnowledgeFilter(), top_k=5, score_threshold=None)
        assert [h.document_name for h in page.hits] == ["a.md"]
        assert page.degraded is not None and "failed" in page.degraded
    finally:
        await store.close()
