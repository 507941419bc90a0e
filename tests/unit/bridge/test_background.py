"""The bridge's background loops (the unit test of memory_bridge._serve's loops): a failure
of any kind is logged and the loop goes on, so one bad round never stops the bridge."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import anyio
import pytest

from memory_bridge import StoreUnavailable, _serve


class Flaky:
    """Fails its first two calls (a store error, then a bug), then works."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self) -> int:
        self.calls += 1
        if self.calls == 1:
            raise StoreUnavailable("sweep: the store is down", operation="sweep")
        if self.calls == 2:
            raise RuntimeError("a bug in a background pass")
        return 0


@pytest.mark.anyio
async def test_a_failing_background_round_is_logged_and_the_loops_go_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_serve, "STARTUP_GRACE_SECONDS", 0)
    monkeypatch.setattr(_serve, "ENTRY_EMBED_INTERVAL_SECONDS", 0.01)
    sweep, upkeep, embed = Flaky(), Flaky(), Flaky()
    state = SimpleNamespace(
        store=SimpleNamespace(sweep=sweep, upkeep=embed),
        knowledge=SimpleNamespace(upkeep=upkeep),
        settings=SimpleNamespace(retention=SimpleNamespace(sweep_interval_seconds=0.01)),
    )
    with caplog.at_level(logging.WARNING, logger="memctl.bridge"):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_serve._sweep_forever, state)
            tasks.start_soon(_serve._embed_entries_forever, state)
            with anyio.fail_after(10):
                while min(sweep.calls, upkeep.calls, embed.calls) < 4:
                    await anyio.sleep(0.01)
            tasks.cancel_scope.cancel()
    assert "sweeping expired entries failed: sweep: the store is down" in caplog.text
    assert "knowledge upkeep failed unexpectedly; the bridge keeps serving" in caplog.text
    assert "RuntimeError: a bug in a background pass" in caplog.text  # with its traceback
