"""One search's query words against the store: what each passage holds, what the store
never mentions, read once for the second stage and the calibration."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from memory_bridge.stores.sqlite._knowledge_matches import TELLING_SIZE, QueryMatches
from memory_bridge.stores.sqlite._knowledge_terms import TermFrequencies

PASSAGES = {
    1: ("deploys.md", "Production deploys go out blue/green at noon."),
    2: ("oncall.md", "The on-call engineer rotates weekly."),
    3: ("retries.md", "Webhooks are retried five times before alerting."),
}


@pytest.fixture
def conn() -> Iterator[sqlite3.Connection]:
    """The three tables QueryMatches reads, in the store's shapes."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE documents (rowid INTEGER PRIMARY KEY, name TEXT)")
    db.execute("CREATE TABLE passages (rowid INTEGER PRIMARY KEY, document INTEGER, content TEXT)")
    tokenizer = "porter unicode61 remove_diacritics 2"
    db.execute(f"CREATE VIRTUAL TABLE passages_fts USING fts5 (name, content, tokenize = '{tokenizer}')")
    for rowid, (name, content) in PASSAGES.items():
        db.execute("INSERT INTO documents VALUES (?, ?)", (rowid, name))
        db.execute("INSERT INTO passages VALUES (?, ?, ?)", (rowid, rowid, content))
        db.execute("INSERT INTO passages_fts (rowid, name, content) VALUES (?, ?, ?)", (rowid, name, content))
    yield db
    db.close()


def test_each_passage_holds_the_query_words_it_matches_stemmed(conn: sqlite3.Connection) -> None:
    matches = QueryMatches("how often are webhooks retrying before deploys", TermFrequencies())
    found = matches.found(conn, [1, 2, 3])
    assert found[1] == {"deploys"} and found[2] == frozenset()
    assert {"webhooks", "retrying"} <= found[3]
    assert matches.coverage(found[3]) > matches.coverage(found[1]) > matches.coverage(found[2]) == 0.0


def test_words_no_passage_holds_are_the_unheld_share(conn: sqlite3.Connection) -> None:
    assert QueryMatches("when do production deploys go out", TermFrequencies()).unheld(conn) == 0.0
    partly = QueryMatches("do deploys autoscale kubernetes pods", TermFrequencies()).unheld(conn)
    assert 0.5 < partly < 1.0  # three rare words of four are nowhere in the store
    assert QueryMatches("zqxv florp", TermFrequencies()).unheld(conn) == pytest.approx(1.0)
    assert QueryMatches("the of it", TermFrequencies()).unheld(conn) == 1.0  # names nothing at all


def test_what_a_store_lacks_tells_more_the_larger_it_is(conn: sqlite3.Connection) -> None:
    assert QueryMatches("deploys", TermFrequencies()).telling(conn) == pytest.approx(3 / TELLING_SIZE)
    for rowid in range(4, TELLING_SIZE + 10):
        conn.execute("INSERT INTO passages VALUES (?, 1, 'filler')", (rowid,))
    assert QueryMatches("deploys", TermFrequencies()).telling(conn) == 1.0


def test_a_passage_is_read_once_per_search(conn: sqlite3.Connection) -> None:
    matches = QueryMatches("webhooks", TermFrequencies())
    assert matches.found(conn, [3])[3] == {"webhooks"}
    conn.execute("UPDATE passages SET content = 'changed' WHERE rowid = 3")
    assert matches.found(conn, [3, 1]) == {3: frozenset({"webhooks"}), 1: frozenset()}
