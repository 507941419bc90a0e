"""Ranking that knows age and use: recall stamps lift, staleness and supersession lower."""

from __future__ import annotations

from memory_bridge.core._freshness import Freshness, rerank
from memory_bridge.stores import DocMetadata, SearchHit

NOW = 1_800_000_000.0
DAY = 86_400.0
LESSON = {"atom_type": "self-improvement-lesson", "project_module": "db", "task_type": "debugging"}


def hit(doc: str, score: float, *, updated: float = NOW - DAY, **extra: object) -> SearchHit:
    metadata = DocMetadata(**extra.pop("meta", {}))  # type: ignore[arg-type]
    return SearchHit(
        document_id=doc,
        document_name=f"{doc}.md",
        slot="knowledge",
        score=score,
        content="text",
        position=0,
        enabled=True,
        metadata=metadata,
        word_count=1,
        updated_at=updated,
        **extra,  # type: ignore[arg-type]
    )


DEFAULTS = Freshness()


def order(hits: list[SearchHit], weights: Freshness = DEFAULTS) -> list[str]:
    return [h.document_id for h in rerank(hits, weights, NOW)]


def test_a_recently_recalled_document_ranks_above_a_never_recalled_one() -> None:
    never = hit("never", 0.62)
    recalled = hit("recalled", 0.60, last_recalled_at=NOW - DAY, recall_count=4)
    long_ago = hit("long-ago", 0.60, last_recalled_at=NOW - 400 * DAY, recall_count=4)
    assert order([never, recalled, long_ago]) == ["recalled", "never", "long-ago"]
    assert order([never, recalled], Freshness(recall_weight=0)) == ["never", "recalled"]
    far_better = hit("far-better", 0.9)
    assert order([far_better, recalled])[0] == "far-better", "use never outweighs a clear relevance gap"


def test_a_stale_lesson_ranks_below_a_fresh_one() -> None:
    stale = hit("stale", 0.61, updated=NOW - 400 * DAY, meta={"atom_type": "bug-root-cause"})
    fresh = hit("fresh", 0.60, meta={"atom_type": "bug-root-cause"})
    old_decision = hit("decision", 0.61, updated=NOW - 400 * DAY, meta={"atom_type": "decision"})
    assert order([stale, old_decision, fresh]) == ["decision", "fresh", "stale"], "decisions do not go stale"
    kept_alive = hit(
        "kept",
        0.62,
        updated=NOW - 400 * DAY,
        last_recalled_at=NOW - 10 * DAY,
        recall_count=1,
        meta={"atom_type": "bug-root-cause"},
    )
    assert order([kept_alive, fresh])[0] == "kept", "a recall keeps a document from going stale"


def test_a_superseded_lesson_ranks_below_its_replacement_however_relevant() -> None:
    old = hit("old", 0.95, updated=NOW - 30 * DAY, meta={**LESSON, "error_pattern": "missing-migration"})
    new = hit("new", 0.40, meta={**LESSON, "error_pattern": "Missing-Migration "})
    other = hit("other", 0.5, meta={**LESSON, "error_pattern": "flaky-test"})
    ranked = rerank([old, other, new], Freshness(), NOW)
    assert [h.document_id for h in ranked] == ["other", "new", "old"]
    assert all(0.0 <= h.score <= 1.0 for h in ranked)
    assert ranked[2].score < ranked[1].score


def test_without_weights_the_order_and_scores_are_the_stores() -> None:
    hits = [hit("a", 0.5), hit("b", 0.7, last_recalled_at=NOW, recall_count=9)]
    assert rerank(hits, Freshness(0, 30, 0, 180, 0), NOW) == hits
