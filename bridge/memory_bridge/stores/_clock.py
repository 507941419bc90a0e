"""Timestamps: full UTC instants with milliseconds, never bare dates."""

from __future__ import annotations

import time
from datetime import UTC, datetime

__all__ = ["format_instant", "now_instant"]


def format_instant(epoch_seconds: float) -> str:
    """`2026-11-30T03:39:48.123Z` for an epoch time."""
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_instant() -> str:
    """The current time as `format_instant` writes it."""
    return format_instant(time.time())
