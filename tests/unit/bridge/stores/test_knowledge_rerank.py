"""The second stage of hybrid search: a paraphrased answer is not buried under turns that
share only the speaker's name with the question."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from memory_bridge.search import LazyEmbedder, lazy_minilm
from memory_bridge.stores import DocMetadata, KnowledgeFilter
from memory_bridge.stores.sqlite import SqliteKnowledgeStore

from ....bridges import MODEL_CACHE

pytestmark = pytest.mark.anyio

CHATTER = (
    "The gym was packed tonight.",
    "Did you ever finish that series we talked about?",
    "I might take a class in something this year.",
    "The new cafe on the corner is great.",
    "Work was exhausting again, so many meetings.",
    "We ordered pizza and watched old films.",
    "My brother never calls me back.",
    "The traffic this morning was unreal.",
    "My plants are all dying.",
    "I really need a holiday.",
    "Coffee first, then I'm a person.",
    "The office moved to the fourth floor.",
    "I burned the toast twice this morning.",
    "The landlord still hasn't fixed the heating.",
    "I went to the market and bought too much fruit.",
    "We watched a documentary about octopuses.",
    "I finally cleaned out the garage.",
    "My back is sore from sitting all day.",
    "I keep meaning to get outdoors more.",
    "What are you up to this weekend?",
)
OPENERS = ("Hey!", "Right,", "Ha, same.", "Oh man,", "Honestly,", "Wait,", "So,", "Ugh,")
CAR_TALK = "I'm thinking about getting a new car eventually."
ANSWER = "Maya: Ha, same. Traded the old car in for a grey pickup truck yesterday."
QUESTION = "What kind of vehicle did Maya get?"


def turns() -> dict[str, str]:
    """Twelve sessions of two friends' small talk, one turn about getting a car one day, and
    one turn that answers the question in other words."""
    out: dict[str, str] = {}
    lines = itertools.cycle(CHATTER)
    openers = itertools.cycle(OPENERS)
    for session in range(12):
        for turn in range(16):
            speaker = "Maya" if turn % 2 == 0 else "Leo"
            text = f"{speaker}: {next(openers)} {next(lines)}"
            if session == 6 and turn == 4:
                text = f"Maya: {next(openers)} {CAR_TALK}"
            out[f"s{session:02d}-t{turn:02d}"] = text
    out["s12-t00"] = ANSWER
    return out


@pytest.fixture(scope="module")
def minilm() -> LazyEmbedder:
    return lazy_minilm(2, int8_cache=MODEL_CACHE)


@pytest.fixture
async def store(tmp_path: Path, minilm: LazyEmbedder) -> AsyncIterator[SqliteKnowledgeStore]:
    store = SqliteKnowledgeStore(tmp_path / "k.db", embedder=minilm, default_slots=["knowledge"])
    try:
        for name, text in turns().items():
            await store.upsert("knowledge", name, text, DocMetadata(), origin="t")
        await store.upkeep()
        yield store
    finally:
        await store.close()


async def top(store: SqliteKnowledgeStore, query: str, k: int = 3) -> list[str]:
    page = await store.search(["knowledge"], query, KnowledgeFilter(), top_k=k, score_threshold=None)
    return [hit.document_name for hit in page.hits]


async def test_a_paraphrased_answer_is_found_past_turns_sharing_only_the_name(
    store: SqliteKnowledgeStore,
) -> None:
    assert "s12-t00" in await top(store, QUESTION)


async def test_without_the_second_stage_the_name_buries_the_answer(store: SqliteKnowledgeStore) -> None:
    store.ranking = replace(store.ranking, rerank=False)
    assert "s12-t00" not in await top(store, QUESTION, 5)


async def test_scores_still_fall_with_rank(store: SqliteKnowledgeStore) -> None:
    store.ranking = replace(store.ranking, calibrated=False)
    page = await store.search(["knowledge"], QUESTION, KnowledgeFilter(), top_k=20, score_threshold=None)
    scores = [hit.score for hit in page.hits]
    assert "s12-t00" in [hit.document_name for hit in page.hits[:3]]
    assert scores == sorted(scores, reverse=True)


async def test_a_question_in_the_answer_s_own_words_keeps_it_first(store: SqliteKnowledgeStore) -> None:
    assert (await top(store, "grey pickup truck", 1)) == ["s12-t00"]
