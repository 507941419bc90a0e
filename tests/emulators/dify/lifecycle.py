"""The asynchronous indexing lifecycle (spec §8.1), computed lazily from timestamps.

No background task runs: every read asks `progress(document, now)` where the job stands.
`waiting -> parsing -> splitting -> indexing -> completed` each take a quarter of the job's
duration (`cleaning` is never observed, as in Dify); a failing job turns to `error` when it would
start splitting. With duration 0 the reply to the write itself shows `waiting` and any later read
shows `completed`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .models import Document, IndexingJob, Segment

__all__ = ["Progress", "display_status", "progress", "visible_segments"]

_IN_PROGRESS = ("parsing", "cleaning", "splitting", "indexing")


@dataclass(frozen=True)
class Progress:
    """Where a document's indexing job stands at one instant."""

    status: str
    processing_started_at: float | None = None
    parsing_completed_at: float | None = None
    splitting_completed_at: float | None = None
    completed_at: float | None = None
    stopped_at: float | None = None
    error: str | None = None
    completed_segments: int = 0
    total_segments: int = 0

    @property
    def parsed(self) -> bool:
        return self.parsing_completed_at is not None


def _elapsed(job: IndexingJob, now: float) -> float | None:
    if job.started_at is None:
        return None
    return (job.paused_at if job.paused_at is not None else now) - job.started_at - job.paused_for


def progress(document: Document, now: float) -> Progress:
    job = document.job
    elapsed = _elapsed(job, now)
    if elapsed is None:
        return Progress("waiting")
    assert job.started_at is not None
    origin = job.started_at + job.paused_for
    d = job.duration
    marks = [origin + d * q for q in (0.25, 0.5, 0.75, 1.0)]
    if elapsed <= d * 0.25:
        return Progress("waiting")
    if elapsed <= d * 0.5:
        return Progress("parsing", processing_started_at=marks[0])
    if job.failure is not None:
        return Progress("error", marks[0], marks[1], stopped_at=marks[1], error=job.failure)
    if elapsed <= d * 0.75:
        return Progress("splitting", marks[0], marks[1])
    total = len(document.segments)
    if elapsed <= d:
        done = math.floor(total * (elapsed - d * 0.75) / (d * 0.25)) if d else total
        return Progress(
            "indexing", marks[0], marks[1], marks[2], completed_segments=done, total_segments=total
        )
    return Progress(
        "completed", marks[0], marks[1], marks[2], marks[3], completed_segments=total, total_segments=total
    )


def display_status(document: Document, state: Progress) -> str:
    """The derived `display_status` of spec §4.1."""
    if state.status == "waiting":
        return "queuing"
    if state.status in _IN_PROGRESS:
        return "paused" if document.job.paused_at is not None else "indexing"
    if state.status == "error":
        return "error"
    if document.archived:
        return "archived"
    return "available" if document.enabled else "disabled"


def visible_segments(document: Document, state: Progress) -> list[tuple[Segment, str]]:
    """The document's segment rows and their statuses right now (old rows are `re_segment`)."""
    if state.status == "waiting":
        return [(segment, "re_segment") for segment in document.old_segments]
    if state.status in ("indexing", "completed"):
        return [
            (segment, "completed" if i < state.completed_segments else "indexing")
            for i, segment in enumerate(document.segments)
        ]
    return []
