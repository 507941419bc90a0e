"""Sentence embeddings: a local ONNX model (no torch, no network) or an
OpenAI-compatible endpoint (Ollama, LM Studio, vLLM); loaded lazily."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .._errors import EmbedderUnavailable

if TYPE_CHECKING:  # numpy loads with the model, not with the bridge (stdio start stays fast)
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]

__all__ = ["Embedder", "LazyEmbedder", "QueryTokens", "TokenEmbedder"]


class Embedder(Protocol):
    name: str  # recorded with every vector: a different name means re-embedding
    dimension: int

    def embed_documents(self, texts: list[str]) -> Vector:
        """float32 unit vectors, one row per text."""

    def embed_query(self, text: str) -> Vector:
        """One float32 unit vector."""


@dataclass(frozen=True)
class QueryTokens:
    """A query's unit vector and the hidden states it was pooled from, one row per token
    (special tokens left out), with each token's character span in the query."""

    vector: Vector
    states: Vector
    spans: tuple[tuple[int, int], ...]

    def pooled(self, words: Sequence[tuple[int, int]]) -> Vector | None:
        """The unit mean of the tokens inside `words` (character spans of the query): what
        the query says in those words, read in its context, without another model call.
        None when no token lies there (cut off by the model's length limit)."""
        import numpy as np

        rows = [
            i for i, (lo, hi) in enumerate(self.spans) if any(lo < end and start < hi for start, end in words)
        ]
        if not rows:
            return None
        mean = self.states[rows].mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return None if norm == 0.0 else np.asarray(mean / norm, dtype=np.float32)


@runtime_checkable
class TokenEmbedder(Protocol):
    """An embedder that can also return a query's token states (the bundled model)."""

    def embed_query_tokens(self, text: str) -> QueryTokens | None:
        """The query's vector with its token states; None if this model cannot give them."""


class LazyEmbedder:
    """Builds the real embedder on first use (so a stdio bridge starts fast) and
    remembers why it could not (`EmbedderUnavailable`), so search can say it is degraded.
    `threads`: calls of one text each that it runs at once at full speed (the bundled
    model: one per core); an embedder that takes whole batches (an endpoint) keeps 1."""

    def __init__(
        self, name: str, dimension: int, factory: Callable[[], Embedder], *, threads: int = 1
    ) -> None:
        self.name = name
        self.dimension = dimension
        self.threads = threads
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

    def embed_query_tokens(self, text: str) -> QueryTokens | None:
        embedder = self._get()
        return embedder.embed_query_tokens(text) if isinstance(embedder, TokenEmbedder) else None
