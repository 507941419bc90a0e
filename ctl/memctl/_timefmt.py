"""The one way memctl writes a moment for people and parsers: ISO 8601, UTC, with its offset."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload

__all__ = ["iso_time"]


@overload
def iso_time(value: float | str) -> str: ...
@overload
def iso_time(value: float | str | None) -> str | None: ...
def iso_time(value: float | str | None) -> str | None:
    """`value` (epoch seconds, or an ISO 8601 string as a store keeps it) to the second in
    UTC with its offset, e.g. `2026-12-04T19:05:00+00:00`; None (it never happened) stays
    None. A date alone stays a date, and text that is no time at all is returned as it is."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        if len(value) == len("2026-12-04"):
            return value  # a date (the entry stores' created/updated): no time to invent
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return value
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)  # the stores write UTC without saying so
    else:
        moment = datetime.fromtimestamp(value, UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds")
