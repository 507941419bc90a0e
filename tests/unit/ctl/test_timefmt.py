"""iso_time: the one way memctl writes a moment (issue 33)."""

from __future__ import annotations

import pytest

from memctl._timefmt import iso_time


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (1_790_000_000.5, "2026-09-21T14:13:20+00:00"),  # epoch seconds, as the stores keep them
        ("2026-09-21T14:13:20Z", "2026-09-21T14:13:20+00:00"),  # the bridge's records
        ("2026-09-21T14:13:20.123Z", "2026-09-21T14:13:20+00:00"),  # the entry store's
        ("2026-09-21T14:13:20.123456789Z", "2026-09-21T14:13:20+00:00"),  # Docker's
        ("2026-09-21T16:13:20+02:00", "2026-09-21T14:13:20+00:00"),
        ("2026-09-21T14:13:20", "2026-09-21T14:13:20+00:00"),  # naive: written in UTC
        ("2026-09-21", "2026-09-21"),  # a date alone stays a date
        ("not a time", "not a time"),
        (None, None),
        ("", None),
    ],
)
def test_a_moment_is_iso_8601_in_utc_with_offset(value: float | str | None, shown: str | None) -> None:
    assert iso_time(value) == shown
