"""Embeddings from an OpenAI-compatible endpoint (`POST {base}/embeddings`): Ollama,
LM Studio, vLLM, llama.cpp's server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from .._errors import EmbedderUnavailable
from ._embed import LazyEmbedder

if TYPE_CHECKING:
    from ._embed import Vector

__all__ = ["EndpointEmbedder", "endpoint_embedder"]

_TIMEOUT = httpx.Timeout(30.0, connect=2.0)


class EndpointEmbedder:
    def __init__(self, base_url: str, model: str, dimension: int) -> None:
        self.name = f"endpoint:{model}"
        self.dimension = dimension
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model

    def embed_documents(self, texts: list[str]) -> Vector:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            response = httpx.post(self._url, json={"model": self._model, "input": texts}, timeout=_TIMEOUT)
            response.raise_for_status()
            rows: list[dict[str, Any]] = sorted(response.json()["data"], key=lambda r: r["index"])
        except (httpx.HTTPError, KeyError, ValueError) as exc:
            raise EmbedderUnavailable(f"embeddings endpoint {self._url} failed: {exc}") from exc
        vectors = np.array([r["embedding"] for r in rows], dtype=np.float32)
        vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return vectors

    def embed_query(self, text: str) -> Vector:
        vector: Vector = self.embed_documents([text])[0]
        return vector


def _probe(base_url: str, model: str) -> EndpointEmbedder:
    """Ask the endpoint once, to learn the dimension and fail early if it is unusable."""
    dimension = EndpointEmbedder(base_url, model, 0).embed_documents(["dimension probe"]).shape[1]
    return EndpointEmbedder(base_url, model, int(dimension))


def endpoint_embedder(base_url: str, model: str) -> LazyEmbedder:
    return LazyEmbedder(f"endpoint:{model}", 0, lambda: _probe(base_url, model))
