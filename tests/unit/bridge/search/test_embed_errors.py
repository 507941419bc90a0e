"""An embedder that cannot serve raises a memctl error, not a bare RuntimeError."""

from __future__ import annotations

import pytest

from memory_bridge import EmbedderUnavailable, StoreUnavailable
from memory_bridge.search import LazyEmbedder
from memory_bridge.search._openai import EndpointEmbedder

from ....bridges import free_port


def test_a_model_that_cannot_load_is_embedder_unavailable_every_time() -> None:
    def broken() -> LazyEmbedder:
        raise FileNotFoundError("model.onnx is missing")

    model = LazyEmbedder("broken-model", 8, broken)  # type: ignore[arg-type]
    for _ in range(2):  # the first failure is remembered
        with pytest.raises(EmbedderUnavailable, match=r"model\.onnx is missing") as caught:
            model.embed_query("x")
        assert isinstance(caught.value, StoreUnavailable) and caught.value.operation == "embed"


def test_an_endpoint_that_fails_is_embedder_unavailable() -> None:
    endpoint = EndpointEmbedder(f"http://127.0.0.1:{free_port()}/v1", "tiny", 4)
    with pytest.raises(EmbedderUnavailable, match="embeddings endpoint"):
        endpoint.embed_documents(["x"])
