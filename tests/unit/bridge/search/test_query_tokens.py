"""A query's token states: the second hop pools its unmatched words from them."""

from __future__ import annotations

import numpy as np
import pytest

from memory_bridge.search import LazyEmbedder, TokenEmbedder, lazy_minilm

from ....bridges import MODEL_CACHE

QUESTION = "What dish am I keen to taste on my trip to see Jonas?"


@pytest.fixture(scope="module")
def minilm() -> LazyEmbedder:
    return lazy_minilm(1, int8_cache=MODEL_CACHE)


def test_the_vector_is_the_query_s_and_words_pool_their_own_tokens(minilm: LazyEmbedder) -> None:
    tokens = minilm.embed_query_tokens(QUESTION)
    assert tokens is not None
    np.testing.assert_allclose(tokens.vector, minilm.embed_query(QUESTION), atol=1e-6)
    dish = QUESTION.index("dish")
    alone = tokens.pooled([(dish, dish + 4)])
    assert alone is not None and abs(float(np.linalg.norm(alone)) - 1.0) < 1e-5
    rows = [i for i, (start, _) in enumerate(tokens.spans) if start == dish]
    np.testing.assert_allclose(
        alone, tokens.states[rows[0]] / np.linalg.norm(tokens.states[rows[0]]), atol=1e-6
    )


def test_no_token_in_the_words_pools_nothing(minilm: LazyEmbedder) -> None:
    tokens = minilm.embed_query_tokens(QUESTION)
    assert tokens is not None
    assert tokens.pooled([(len(QUESTION) + 5, len(QUESTION) + 9)]) is None


class Endpoint:
    """A model that gives vectors only (an embeddings endpoint)."""

    name, dimension = "endpoint", 2

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 2), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def test_a_model_without_token_states_gives_none() -> None:
    lazy = LazyEmbedder("endpoint", 2, Endpoint)
    assert isinstance(lazy, TokenEmbedder) and not isinstance(Endpoint(), TokenEmbedder)
    assert lazy.embed_query_tokens(QUESTION) is None
