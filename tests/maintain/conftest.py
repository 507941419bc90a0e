"""Fixtures the maintenance suites share."""

from __future__ import annotations

import time

import pytest

from memctl.operations import _maintain

from .stores import YEAR


@pytest.fixture
def a_year_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """The job's clock a year ahead: every seeded document is a year old to it."""

    class Clock:
        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def time() -> float:
            return time.time() + YEAR

    monkeypatch.setattr(_maintain, "time", Clock)
