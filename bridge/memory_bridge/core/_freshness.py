"""Ranking that knows age and use: a search's hits re-scored by recall stamps, staleness and
lesson-key supersession, after the store has ranked them by relevance.

- **Use**: a document recalled recently and often gains up to `recall_weight`:
  `recall_weight x count / (count + 1) x 0.5 ^ (days since the last recall / half-life)`;
  a document never recalled gains nothing.
- **Age**: a lesson, bug-root-cause, feedback-rule or pattern-gotcha neither recalled nor
  changed within `stale_after_days` loses `stale_penalty` (consolidate_memory's stale rule).
- **Supersession**: of the lessons in one result that share a lesson key
  (project_module|task_type|error_pattern), the older ones lose `superseded_penalty` and
  always rank below the newest, their replacement.

Scores stay within 0..1. With every weight 0 the order is the store's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .._settings import Settings
from ..stores._knowledge import SearchHit

__all__ = ["MONTH_DAYS", "STALE_TYPES", "Freshness", "lesson_key", "rerank"]

STALE_TYPES = ("self-improvement-lesson", "bug-root-cause", "feedback-rule", "pattern-gotcha")
_LESSON = "self-improvement-lesson"
_DAY = 86_400.0
MONTH_DAYS = 30.4375
_MAX_CANDIDATES = 50
_BELOW = 1e-4  # how far below its replacement a superseded lesson ranks


@dataclass(frozen=True, slots=True)
class Freshness:
    """The weights of age and use in search (settings `search_recall_weight`, ...)."""

    recall_weight: float = 0.05
    recall_half_life_days: float = 30.0
    stale_penalty: float = 0.02
    stale_after_days: float = 6 * MONTH_DAYS
    superseded_penalty: float = 0.1

    @property
    def active(self) -> bool:
        return bool(self.recall_weight or self.stale_penalty or self.superseded_penalty)

    def depth(self, wanted: int) -> int:
        """How many hits to ask the store for, so re-ranking can lift one from below the cut."""
        return max(wanted, min(_MAX_CANDIDATES, 2 * wanted)) if self.active else wanted

    @classmethod
    def of(cls, settings: Settings) -> Freshness:
        """The weights a project's settings give."""
        return cls(
            recall_weight=settings.search.recall_weight,
            recall_half_life_days=settings.search.recall_half_life_days,
            stale_penalty=settings.search.stale_penalty,
            stale_after_days=settings.maintain.consolidate_stale_after_months * MONTH_DAYS,
            superseded_penalty=settings.search.superseded_penalty,
        )


def lesson_key(project_module: str, task_type: str, error_pattern: str) -> str | None:
    """`project_module|task_type|error_pattern`, lower-cased; None unless all three are set."""
    parts = [v.strip().lower() for v in (project_module, task_type, error_pattern)]
    return "|".join(parts) if all(parts) else None


def _key(hit: SearchHit) -> str | None:
    meta = hit.metadata
    if meta.atom_type != _LESSON:
        return None
    return lesson_key(meta.project_module, meta.task_type, meta.error_pattern)


def _adjusted(hit: SearchHit, weights: Freshness, now: float) -> float:
    score = hit.score
    if hit.recall_count and hit.last_recalled_at is not None:
        days = max(0.0, now - hit.last_recalled_at) / _DAY
        decay = 0.5 ** (days / weights.recall_half_life_days)
        score += weights.recall_weight * hit.recall_count / (hit.recall_count + 1) * decay
    last_active = max(hit.updated_at, hit.last_recalled_at or 0.0)
    if (
        hit.metadata.atom_type in STALE_TYPES
        and last_active
        and now - last_active > weights.stale_after_days * _DAY
    ):
        score -= weights.stale_penalty
    return score


def rerank(hits: Sequence[SearchHit], weights: Freshness, now: float) -> list[SearchHit]:
    """The hits re-scored for age and use, best first (ties keep the store's order)."""
    if not weights.active:
        return list(hits)
    scores = {hit.document_id: _adjusted(hit, weights, now) for hit in hits}
    newest: dict[str, SearchHit] = {}
    for hit in hits:
        key = _key(hit)
        if key is not None and (key not in newest or hit.updated_at > newest[key].updated_at):
            newest[key] = hit
    for hit in hits:
        key = _key(hit)
        keeper = newest.get(key) if key is not None else None
        if weights.superseded_penalty and keeper is not None and keeper.document_id != hit.document_id:
            scores[hit.document_id] = min(
                scores[hit.document_id] - weights.superseded_penalty, scores[keeper.document_id] - _BELOW
            )
    order = sorted(range(len(hits)), key=lambda i: (-scores[hits[i].document_id], i))
    return [replace(hits[i], score=round(min(1.0, max(0.0, scores[hits[i].document_id])), 4)) for i in order]
