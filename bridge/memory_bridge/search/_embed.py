"""Sentence embeddings: a local ONNX model (no torch, no network) or an
OpenAI-compatible endpoint (Ollama, LM Studio, vLLM); loaded lazily."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from .._errors import EmbedderUnavailable

if TYPE_CHECKING:  # numpy loads with the model, not with the bridge (stdio start stays fast)
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]

__all__ = ["Embedder", "LazyEmbedder"]


class Embedder(Protocol):
    name: str  # recorded with every vector: a different name means re-embedding
    dimension: int

    def embed_documents(self, texts: list[str]) -> Vector:
        """float32 unit vectors, one row per text."""

    def embed_query(self, text: str) -> Vector:
        """One float32 unit vector."""


class LazyEmbedder:
    """Builds the real embedder on first use (so a stdio bridge starts fast) and
    remembers why it could not (`EmbedderUnavailable`), so search can say it is degraded."""

    def __init__(self, name: str, dimension: int, factory: Callable[[], Embedder]) -> None:
        self.name = name
        self.dimension = dimension
        self._factory = factory
        self._lock = threading.Lock()
        self._embedder: Embedder | None = None
        self.failure: str | None = None

    def _get(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                if self.failure is not None:
                    raise EmbedderUnavailable(self.failure)
                try:
                    self._embedder = self._factory()
                except Exception as exc:  # any loader failure means: no dense search
                    self.failure = f"embedding model {self.name} unavailable: {exc}"
                    raise EmbedderUnavailable(self.failure) from exc
            return self._embedder

    def embed_documents(self, texts: list[str]) -> Vector:
        return self._get().embed_documents(texts)

    def embed_query(self, text: str) -> Vector:
        return self._get().embed_query(text)
