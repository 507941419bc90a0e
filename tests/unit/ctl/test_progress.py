"""Long work's progress bars show the count and the rate."""

from __future__ import annotations

import time

from memctl.commands._output import err_console
from memctl.commands._progress import progress_bars


def test_a_bar_shows_its_count_and_rate() -> None:
    with err_console.capture() as captured, progress_bars(enabled=True) as progress:
        progress("re-embedding", 0, 300)
        for _ in range(3):
            time.sleep(0.01)
            progress("re-embedding", 100, None)
    shown = captured.get()
    assert "re-embedding" in shown and "300/300" in shown and "/s" in shown
