"""Which query words the keyword side matches: a word in more than a fixed number of
passages is left out whatever the store's size (so a search scores at most that many
passages a word, at 100k or 1M), yet still counted further for its idf."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory_bridge.stores import DocMetadata
from memory_bridge.stores.sqlite import SqliteKnowledgeStore
from memory_bridge.stores.sqlite._knowledge_terms import TermFrequencies

pytestmark = pytest.mark.anyio

DOCUMENTS = 400
COMMON = 20  # passages, scaled down from the default 2,000


async def write_store(path: Path, documents: int = DOCUMENTS) -> None:
    """One passage a document: `alpha` in 30 (7.5% of 400), `beta` in 80, `zeta` in 3."""
    store = SqliteKnowledgeStore(path, embedder=None, default_slots=["knowledge"])
    try:
        for n in range(documents):
            words = [f"word{n}"] + ["alpha"] * (n < 30) + ["beta"] * (n % 5 == 0)
            words += ["zeta"] * (n in (7, 8, 9))
            await store.upsert("knowledge", f"doc-{n:03}.md", " ".join(words), DocMetadata(), origin="test")
    finally:
        await store.close()


def matched(conn: sqlite3.Connection, expression: str) -> int:
    sql = "SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?"
    return int(conn.execute(sql, (expression,)).fetchone()[0])


async def test_a_word_in_more_passages_than_the_limit_is_not_matched(tmp_path: Path) -> None:
    """`alpha` is in 7.5% of the passages: under the former rule (10% of the store) it was
    matched, and at 1M passages such words made FTS5 score ~150,000 passages a query."""
    await write_store(tmp_path / "knowledge.db")
    with sqlite3.connect(tmp_path / "knowledge.db") as conn:
        terms = TermFrequencies(common=COMMON)
        assert matched(conn, terms.match(conn, ["alpha", "zeta"], None)) == 3  # zeta's passages only
        assert matched(conn, terms.match(conn, ["zeta", "word100"], None)) == 4  # both rare: either


async def test_a_query_of_common_words_only_must_match_all_of_them(tmp_path: Path) -> None:
    await write_store(tmp_path / "knowledge.db")
    with sqlite3.connect(tmp_path / "knowledge.db") as conn:
        expression = TermFrequencies(common=COMMON).match(conn, ["alpha", "beta"], None)
        assert matched(conn, expression) == 6  # documents 0, 5, ... 25: alpha and beta


async def test_common_words_are_still_counted_for_their_idf(tmp_path: Path) -> None:
    await write_store(tmp_path / "knowledge.db")
    with sqlite3.connect(tmp_path / "knowledge.db") as conn:
        terms = TermFrequencies(common=COMMON, count_share=0.1)  # scaled down: 40 of 400
        terms.match(conn, ["alpha"], None)  # counted (and cached) while matching
        assert terms.passages(conn, "alpha", DOCUMENTS) == 30
        assert terms.passages(conn, "beta", DOCUMENTS) == float("inf")  # past 10% of the store
        default = TermFrequencies(common=COMMON)  # 2% of 400 is under 20: counted as far as matched
        assert default.passages(conn, "alpha", DOCUMENTS) == float("inf")
        assert default.passages(conn, "zeta", DOCUMENTS) == 3
        assert terms.passages(conn, "word3", DOCUMENTS) == 1


async def test_in_a_store_no_larger_than_the_limit_every_word_is_matched(tmp_path: Path) -> None:
    await write_store(tmp_path / "knowledge.db", documents=COMMON)
    with sqlite3.connect(tmp_path / "knowledge.db") as conn:
        expression = TermFrequencies(common=COMMON).match(conn, ["alpha", "zeta"], None)
        assert matched(conn, expression) == COMMON  # alpha is in all 20: an OR with zeta


async def test_a_prefix_whose_whole_word_is_common_is_not_counted(tmp_path: Path) -> None:
    """`alpha`* matches every passage `alpha` does, so `alpha` in more passages than the
    limit settles it: the prefix, whose count makes FTS5 merge every word it starts (15 ms
    for `file`* at 1M passages), is not counted; the match is the same."""
    await write_store(tmp_path / "knowledge.db")
    with sqlite3.connect(tmp_path / "knowledge.db") as conn:
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        expression = TermFrequencies(common=COMMON).match(conn, ["alpha", "zeta"], 3)
        conn.set_trace_callback(None)
        assert matched(conn, expression) == 3  # zeta's passages only, as before
        assert not [sql for sql in statements if '"alpha"*' in sql]
        assert [sql for sql in statements if '"zeta"*' in sql]  # a rare whole word: its prefix counted
