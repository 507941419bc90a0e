"""The second hop of hybrid search: the other turn of a two-part answer."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from memory_bridge.search import AnnIndex, LazyEmbedder, QueryTokens, VectorIndex, lazy_minilm
from memory_bridge.stores import DocMetadata, KnowledgeFilter
from memory_bridge.stores.sqlite import SqliteKnowledgeStore, _knowledge_hop
from memory_bridge.stores.sqlite._knowledge_hop import (
    Coverage,
    HopPlan,
    bridge_words,
    insert_hops,
    plan_hop,
    score_hops,
)
from memory_bridge.stores.sqlite._knowledge_schema import FTS_TOKENIZER
from memory_bridge.stores.sqlite._knowledge_terms import TermFrequencies
from memory_bridge.stores.sqlite._match import match_expression

from ....bridges import MODEL_CACHE
from ....hop_corpus import COVERED, FIRST, QUESTION, SECOND, turns

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def minilm() -> LazyEmbedder:
    return lazy_minilm(2, int8_cache=MODEL_CACHE)


class Recording:
    """The model, recording the texts embedded for queries; `tokens`: whether it gives a
    query's token states (the bundled model does, an embeddings endpoint does not)."""

    def __init__(self, model: LazyEmbedder, *, tokens: bool) -> None:
        self.name, self.dimension = model.name, model.dimension
        self.model = model
        self.queries: list[str] = []
        if tokens:
            self.embed_query_tokens = self._tokens

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.model.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return self.model.embed_query(text)

    def _tokens(self, text: str) -> QueryTokens | None:
        self.queries.append(text)
        return self.model.embed_query_tokens(text)


async def filled(path: Path, embedder: LazyEmbedder | Recording) -> SqliteKnowledgeStore:
    store = SqliteKnowledgeStore(path, embedder=embedder, default_slots=["knowledge"])
    for name, text in turns().items():
        await store.upsert("knowledge", name, text, DocMetadata(), origin="t")
    await store.upkeep()
    return store


@pytest.fixture
async def store(tmp_path: Path, minilm: LazyEmbedder) -> AsyncIterator[SqliteKnowledgeStore]:
    store = await filled(tmp_path / "k.db", minilm)
    try:
        yield store
    finally:
        await store.close()


@pytest.mark.parametrize("tokens", [True, False], ids=["token states", "endpoint"])
async def test_the_hop_pools_its_words_from_the_question_s_tokens(
    tmp_path: Path, minilm: LazyEmbedder, tokens: bool
) -> None:
    model = Recording(minilm, tokens=tokens)
    store = await filled(tmp_path / "k.db", model)
    try:
        found = await names(store, QUESTION, hop=True)
    finally:
        await store.close()
    assert found[0] == FIRST and SECOND in found[1:3]
    if tokens:  # one model call: the residual words' vector is the mean of their token states
        assert model.queries == [QUESTION]
    else:  # a model without token states embeds the residual words on their own
        assert model.queries[0] == QUESTION and len(model.queries) == 2
        assert "Jonas" not in model.queries[1] and "dish" in model.queries[1]


async def names(store: SqliteKnowledgeStore, query: str, *, hop: bool) -> list[str]:
    store.ranking = replace(store.ranking, second_hop=hop)
    page = await store.search(["knowledge"], query, KnowledgeFilter(), top_k=10, score_threshold=None)
    return [hit.document_name for hit in page.hits]


async def test_the_second_hop_finds_the_turn_that_names_the_bridge(store: SqliteKnowledgeStore) -> None:
    without = await names(store, QUESTION, hop=False)
    found = await names(store, QUESTION, hop=True)
    assert without[0] == found[0] == FIRST
    assert SECOND not in without[:5]  # it shares no word with the question but `the`, `to`
    assert SECOND in found[1:3]  # rank 2 or 3: Tallinn, from the first turn, joined with `dish`, `taste`


async def test_a_question_the_best_hit_answers_whole_is_unchanged(store: SqliteKnowledgeStore) -> None:
    assert await names(store, COVERED, hop=True) == await names(store, COVERED, hop=False)


async def test_a_pasted_text_of_many_words_takes_no_hop(store: SqliteKnowledgeStore) -> None:
    pasted = QUESTION + " " + " ".join(f"word{i}" for i in range(70))
    assert await names(store, pasted, hop=True) == await names(store, pasted, hop=False)


async def test_keyword_search_takes_no_second_hop(store: SqliteKnowledgeStore) -> None:
    page = await store.search(
        ["knowledge"], QUESTION, KnowledgeFilter(), top_k=10, score_threshold=None, mode="keyword"
    )
    assert SECOND not in [hit.document_name for hit in page.hits]


def test_bridge_words_are_names_the_question_does_not_say() -> None:
    text = "[Monday, 3 April 2023] user: My cousin Jonas moved to Tallinn. Tallinn is Cold in May."
    assert bridge_words(text, {"jonas"}) == ["tallinn", "cold"]  # not April, May, Monday, nor `My`


def test_hops_take_fixed_ranks_with_the_score_above_them() -> None:
    fused = [(0.9 - i / 100, i, 100 + i) for i in range(8)]
    out = insert_hops(fused, [(50, 150), (5, 105), (60, 160)])
    assert [document for _, document, _ in out] == [0, 50, 5, 1, 60, 2, 3, 4, 6, 7]
    assert out[1][0] == out[0][0] and out[4][0] == out[3][0]  # core's re-ranking keeps them in place


async def test_the_hop_keeps_to_the_documents_search_may_return(store: SqliteKnowledgeStore) -> None:
    second = await store.find("knowledge", SECOND)
    assert second is not None
    await store.set_enabled("knowledge", second.id, False)
    assert SECOND not in await names(store, QUESTION, hop=True)


async def plan_over(
    path: Path, texts: list[str], query: str, terms: TermFrequencies
) -> tuple[HopPlan | None, dict[int, str]]:
    """plan_hop for `query` over documents doc-000.md, ... holding `texts`, from a best hit
    naming Jonas (top.md): the plan, and the documents' names by rowid."""
    store = SqliteKnowledgeStore(path, embedder=None, default_slots=["knowledge"])
    try:
        for n, text in enumerate(texts):
            await store.upsert("knowledge", f"doc-{n:03}.md", text, DocMetadata(), origin="t")
        await store.upsert("knowledge", "top.md", "Notes on the topic with Jonas.", DocMetadata(), origin="t")
    finally:
        await store.close()
    with sqlite3.connect(path) as conn:
        top, passage = conn.execute("SELECT document, rowid FROM passages ORDER BY rowid DESC").fetchone()
        plan = plan_hop(conn, terms, Coverage(), query, [(1.0, top, passage), (0.5, 1, 1)], "1", [], None)
        named = dict(conn.execute("SELECT rowid, name FROM documents"))
    conn.close()
    return plan, named


async def test_the_hop_s_word_evidence_leaves_out_words_too_common_to_match(tmp_path: Path) -> None:
    """The residual words weigh in as the keyword side matches a query's words: `alpha`,
    in more passages than the limit, is left out while a rarer word remains (at 1M
    passages one such word made FTS5 score tens of thousands of passages a search)."""
    texts = []
    for n in range(400):  # `alpha` in 0-29, Jonas in 10-39, `zeta` in 35 and 36
        words = [f"word{n}"] + ["alpha"] * (n < 30) + ["and Jonas"] * (10 <= n < 40)
        texts.append(" ".join(words + ["zeta"] * (n in (35, 36))))
    terms = TermFrequencies(common=20, count_share=0.1)  # scaled down: 20 of 400 passages match
    plan, named = await plan_over(tmp_path / "knowledge.db", texts, "alpha zeta topic", terms)
    assert plan is not None and plan.residual == "alpha zeta"
    assert sorted(named[d] for d in plan.lexical) == ["doc-035.md", "doc-036.md"]


@pytest.mark.parametrize(("considered", "hops"), [(40, True), (25, False)])
async def test_a_name_in_more_passages_than_the_hop_considers_is_no_bridge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, considered: int, hops: bool
) -> None:
    """Jonas is named in 31 passages. The hop reads at most `CANDIDATE_PASSAGES` of them:
    with 40 it takes every document naming him; with 25 it would take whichever 25 the
    index lists first (at 1M passages a name in up to 20,000 was a bridge), so he is no
    bridge and the hop does not run."""
    monkeypatch.setattr(_knowledge_hop, "CANDIDATE_PASSAGES", considered)
    texts = [f"word{n} and Jonas" if n < 30 else f"word{n}" for n in range(400)]  # under BRIDGE_SHARE
    terms = TermFrequencies(common=1_000, count_share=1.0)
    plan, named = await plan_over(tmp_path / "knowledge.db", texts, "what dish on the topic", terms)
    if hops:  # every document naming him, not whichever the index lists first
        assert plan is not None
        assert sorted(named[d] for d in plan.documents) == [f"doc-{n:03}.md" for n in range(30)]
    else:
        assert plan is None


@pytest.mark.parametrize("prefix_min", [3, None])
def test_coverage_matches_words_as_the_store_index_does(tmp_path: Path, prefix_min: int | None) -> None:
    conn = sqlite3.connect(tmp_path / "fts.db")
    conn.execute(
        f"CREATE VIRTUAL TABLE passages_fts USING fts5 (name, content, tokenize = '{FTS_TOKENIZER}')"
    )
    rows = [("cousin.md", turns()[FIRST]), ("food.md", turns()[SECOND]), ("other.md", "Cousins moving")]
    conn.executemany(
        "INSERT INTO passages_fts (rowid, name, content) VALUES (?, ?, ?)",
        [(i, *r) for i, r in enumerate(rows, 1)],
    )
    words = ["moved", "moving", "cous", "jon", "md", "food", "to", "a", "solar", "tallin", "schnitzel", "xyz"]
    coverage = Coverage()
    try:
        for passage in (1, 2):
            store_index = {
                word: conn.execute(
                    "SELECT 1 FROM passages_fts WHERE passages_fts MATCH ? AND rowid = ?",
                    (match_expression([word], "any", prefix_min), passage),
                ).fetchone()
                is not None
                for word in words
            }
            assert coverage.covered(conn, passage, words, prefix_min) == store_index
        assert coverage.covered(conn, 1, ["moving", "md", "tallin"], prefix_min) == {
            "moving": True,  # stemmed: `moved`
            "md": True,  # the document name counts
            "tallin": prefix_min is not None,
        }
    finally:
        coverage.close()
        conn.close()


def test_the_hop_ranks_the_same_documents_on_the_graph_as_on_the_matrix() -> None:
    """On the ANN index the bridge's documents are ranked from the graph's int8 vectors and
    only a shortlist exactly: the hop picks what exact search over every document picks."""
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((3000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    passages = list(range(1, 3001))
    documents = [1 + i // 2 for i in range(3000)]
    exact = VectorIndex(32)
    exact.load(zip(passages, documents, (v.tobytes() for v in vectors), strict=True), 1)
    ann = AnnIndex(32, lambda wanted: (list(wanted), vectors[np.asarray(wanted, dtype=np.int64) - 1]))
    ann.add_rows(passages, documents, vectors)
    for trial in range(10):
        residual = vectors[trial] + 0.5 * rng.standard_normal(32).astype(np.float32)
        residual /= np.linalg.norm(residual)
        lexical = {int(d): float(rng.random()) for d in rng.choice(1500, 40, replace=False) + 1}
        plan = HopPlan(1 + trial, 1 + 2 * trial, "r", (), frozenset(range(1, 1501)) - {1 + trial}, lexical)
        assert score_hops(plan, ann, residual) == score_hops(plan, exact, residual)
