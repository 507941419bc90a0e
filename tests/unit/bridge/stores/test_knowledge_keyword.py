"""The embedded knowledge store's keyword side: BM25 over the full-text index, filtered."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_bridge.stores import DocMetadata, KnowledgeFilter
from memory_bridge.stores.sqlite import Ranking, SqliteKnowledgeStore

pytestmark = pytest.mark.anyio

DOCUMENTS = 400


async def _store(path: Path) -> SqliteKnowledgeStore:
    """Every document matches `alpha`: this project's (scope `here`) 60 times down to 21,
    then 20; another project's (documents 300 and up) 10 times down to 6, then once."""
    store = SqliteKnowledgeStore(
        path, embedder=None, default_slots=["knowledge"], ranking=Ranking(keyword_candidates=5)
    )
    for n in range(DOCUMENTS):
        times = max(20, 60 - n) if n < 300 else max(1, 310 - n)
        text = " ".join(["alpha"] * times + [f"word{n}"] * 20)
        scope = "here" if n < 300 else "other"
        await store.upsert("knowledge", f"doc-{n:03}.md", text, DocMetadata(scope=scope), origin="test")
    return store


def _plans(conn: sqlite3.Connection, work: Callable[[], object]) -> list[list[tuple[int, int, str]]]:
    """The query plans (id, parent, detail) of the full-text searches a call runs."""
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        work()
    finally:
        conn.set_trace_callback(None)
    return [
        [(row[0], row[1], row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
        for sql in statements
        if sql.lstrip().upper().startswith("SELECT") and "MATCH" in sql and "bm25" in sql
    ]


def _keyword(
    store: SqliteKnowledgeStore, conn: sqlite3.Connection, flt: KnowledgeFilter, word: str = "alpha"
) -> list[int]:
    where, params = store._allowed_sql(conn, ["knowledge"], flt)
    return list(store._keyword(conn, [word], where, params))


async def test_the_keyword_side_ranks_the_index_alone_before_joining(tmp_path: Path) -> None:
    """Only the best matches are looked up in `passages` and `documents` (at 1M passages
    joining every match of a query cost most of the search: bench/knowledge_scale.py)."""
    store = await _store(tmp_path / "knowledge.db")
    conn = sqlite3.connect(tmp_path / "knowledge.db")
    try:
        found: list[int] = []
        plans = _plans(conn, lambda: found.extend(_keyword(store, conn, KnowledgeFilter(scope="here"))))
        assert len(found) == 5
        assert len(plans) == 1  # enough allowed matches among the best: no second query
        (plan,) = plans
        assert any(detail.startswith("SCAN passages_fts") for _, _, detail in plan)
        assert not any(detail.startswith("SEARCH p ") for _, _, detail in plan)  # ranked alone
    finally:
        conn.close()
        await store.close()


async def test_fewer_matches_than_asked_are_not_matched_twice(tmp_path: Path) -> None:
    """When the index has fewer matches than the ranking reads, the filter's few allowed
    ones are all of them: matching again with every match joined would find nothing more
    (it cost 20-27 ms at 1M passages for a question whose words are all common)."""
    store = await _store(tmp_path / "knowledge.db")
    conn = sqlite3.connect(tmp_path / "knowledge.db")
    try:
        found: list[int] = []
        plans = _plans(
            conn, lambda: found.extend(_keyword(store, conn, KnowledgeFilter(scope="here"), "word299"))
        )
        names = {rowid: name for rowid, name in conn.execute("SELECT rowid, name FROM documents").fetchall()}
        assert [names[d] for d in found] == ["doc-299.md"]
        assert len(plans) == 1
    finally:
        conn.close()
        await store.close()


async def test_a_narrow_filter_still_finds_its_best_matches(tmp_path: Path) -> None:
    store = await _store(tmp_path / "knowledge.db")
    conn = sqlite3.connect(tmp_path / "knowledge.db")
    try:
        here = _keyword(store, conn, KnowledgeFilter(scope="here"))
        other = _keyword(store, conn, KnowledgeFilter(scope="other"))  # far below the best 20 matches
        names = {rowid: name for rowid, name in conn.execute("SELECT rowid, name FROM documents").fetchall()}
        assert [names[d] for d in here] == [f"doc-{n:03}.md" for n in range(5)]
        assert [names[d] for d in other] == [f"doc-{n:03}.md" for n in range(300, 305)]
    finally:
        conn.close()
        await store.close()
