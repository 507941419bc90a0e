"""Fusion of the keyword and dense rankings of the embedded knowledge store."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from memory_bridge import load_settings
from memory_bridge.stores import DocMetadata, KnowledgeFilter, open_knowledge_store
from memory_bridge.stores.sqlite import SqliteKnowledgeStore
from memory_bridge.stores.sqlite._knowledge_ranking import Ranking, adaptive_weight, fuse

pytestmark = pytest.mark.anyio

KEYWORD = {1: (9.0, 11), 2: (3.0, 21)}  # document -> (BM25, passage)
DENSE = {2: (0.9, 22), 3: (0.8, 31), 1: (0.1, 12)}  # document -> (cosine, passage)


def test_weighted_fusion_mixes_cosine_and_relative_bm25() -> None:
    fused = fuse(Ranking(fusion="weighted", vector_weight=0.7), KEYWORD, DENSE)
    scores = {document: round(score, 4) for score, document, _ in fused}
    assert scores == {1: round(0.7 * 0.1 + 0.3, 4), 2: round(0.7 * 0.9 + 0.3 / 3, 4), 3: round(0.7 * 0.8, 4)}
    assert [document for _, document, _ in fused] == [2, 3, 1]


def test_the_adaptive_weight_follows_the_best_cosine() -> None:
    assert adaptive_weight({}) == 0.9  # no vectors: as far as can be
    assert adaptive_weight({1: (0.3, 11), 2: (0.2, 21)}) == 0.9  # nothing close: meaning decides
    assert adaptive_weight({1: (0.9, 11), 2: (0.2, 21)}) == 0.5  # a close passage: the words count as much
    assert adaptive_weight({1: (0.55, 11)}) == pytest.approx(0.7)  # linear between 0.4 and 0.7


def test_adaptive_fusion_trusts_meaning_when_no_passage_is_close() -> None:
    keyword = {1: (9.0, 11), 2: (3.0, 21)}  # 1 shares the query's words, 2 a third as much
    dense = {2: (0.35, 22), 1: (0.1, 12)}  # neither is close in meaning; 2 is closer
    assert [d for _, d, _ in fuse(Ranking(fusion="weighted"), keyword, dense)] == [1, 2]
    fused = fuse(Ranking(), keyword, dense)
    assert [d for _, d, _ in fused] == [2, 1]
    assert fused[0][0] == pytest.approx(0.9 * 0.35 + 0.1 / 3)


def test_adaptive_fusion_lets_the_words_decide_among_close_passages() -> None:
    keyword = {1: (10.0, 11), 2: (8.0, 21)}  # 1 matches the query's words best
    dense = {2: (0.85, 22), 1: (0.75, 12)}  # both are close in meaning, 2 a little closer
    assert [d for _, d, _ in fuse(Ranking(fusion="weighted"), keyword, dense)] == [2, 1]
    fused = fuse(Ranking(), keyword, dense)
    assert [d for _, d, _ in fused] == [1, 2]
    assert fused[0][0] == pytest.approx(0.5 * 0.75 + 0.5)


def test_rrf_fuses_ranks_and_a_perfect_hit_scores_one() -> None:
    fused = fuse(Ranking(fusion="rrf", vector_weight=0.5, rrf_k=60), {1: (5.0, 11)}, {1: (0.2, 12)})
    assert fused == [(pytest.approx(1.0), 1, 11)]  # first on both sides; the keyword passage scores higher
    fused = fuse(Ranking(fusion="rrf", vector_weight=0.5, rrf_k=60), KEYWORD, DENSE)
    # 2: dense 1st + keyword 2nd; 1: keyword 1st + dense 3rd; 3: dense 2nd only
    assert [document for _, document, _ in fused] == [2, 1, 3]


def test_the_passage_shown_is_the_side_that_scores_it_higher() -> None:
    fused = {document: passage for _, document, passage in fuse(Ranking(), KEYWORD, DENSE)}
    assert fused == {1: 11, 2: 22, 3: 31}


def test_settings_reach_the_embedded_store(tmp_path: Path) -> None:
    settings = load_settings(
        project=tmp_path,
        search_fusion="rrf",
        search_vector_weight=0.4,
        search_prefix_min=4,
        search_second_hop=False,
    )
    store = open_knowledge_store(settings).inner  # the embedded store under its version log
    assert isinstance(store, SqliteKnowledgeStore)
    assert store.ranking.fusion == "rrf" and store.ranking.vector_weight == 0.4
    assert store.ranking.prefix_min == 4 and not store.ranking.second_hop
    defaults = load_settings(project=tmp_path)
    assert defaults.search.second_hop and defaults.search.fusion == "adaptive"
    anyio.run(store.close)


async def test_feedback_finds_the_other_half_of_a_two_part_answer(tmp_path: Path) -> None:
    notes = {
        "cousin.md": "My cousin Mei just moved to Lisbon for a job at a fintech startup.",
        "visit.md": "When I visit Lisbon in the spring I really want to try the grilled sardines.",
        "other.md": "The fintech newsletter had nothing new this week.",
    }
    found = {}
    for feedback in (0, 1):
        store = SqliteKnowledgeStore(
            tmp_path / f"k{feedback}.db",
            embedder=None,
            default_slots=["knowledge"],
            ranking=Ranking(feedback_docs=feedback),
        )
        try:
            for name, text in notes.items():
                await store.upsert("knowledge", name, text, DocMetadata(), origin="t")
            page = await store.search(
                ["knowledge"], "cousin Mei fintech", KnowledgeFilter(), top_k=5, score_threshold=None
            )
            found[feedback] = [hit.document_name for hit in page.hits]
        finally:
            await store.close()
    assert "visit.md" not in found[0]  # no word of the question
    assert found[1][0] == "cousin.md" and "visit.md" in found[1]  # `Lisbon`, from the best hit
