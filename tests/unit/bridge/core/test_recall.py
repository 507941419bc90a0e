"""Recall stamping: debounced per document, batched per slot, never failing its caller."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import anyio
import pytest

from memory_bridge.core._recall import RecallStamper

pytestmark = pytest.mark.anyio

HOUR = 3600.0


class Recorder:
    """A knowledge store's stamp_recalls, recording each call (or failing, or hanging)."""

    def __init__(self, behaviour: str = "ok") -> None:
        self.calls: list[tuple[str, list[str], float, float]] = []
        self.behaviour = behaviour

    async def stamp_recalls(
        self, slot: str, document_ids: Sequence[str], *, now: float, window: float
    ) -> int:
        self.calls.append((slot, sorted(document_ids), now, window))
        if self.behaviour == "fail":
            raise OSError("disk full")
        if self.behaviour == "hang":
            await anyio.sleep_forever()
        return len(document_ids)


def stamper(store: Recorder, clock: list[float], **options: float) -> RecallStamper:
    return RecallStamper(store, debounce_seconds=24 * HOUR, clock=lambda: clock[0], **options)  # type: ignore[arg-type]


async def test_a_document_is_stamped_once_per_window_in_one_batch_per_slot() -> None:
    store, clock = Recorder(), [1000.0]
    recalls = stamper(store, clock)
    recalls.note([("knowledge", "a"), ("knowledge", "b"), ("self_improvement", "l")])
    recalls.note([("knowledge", "a")])
    assert await recalls.flush() == 3
    assert store.calls == [
        ("knowledge", ["a", "b"], 1000.0, 24 * HOUR),
        ("self_improvement", ["l"], 1000.0, 24 * HOUR),
    ]
    clock[0] += 23 * HOUR
    recalls.note([("knowledge", "a")])
    assert await recalls.flush() == 0 and len(store.calls) == 2, "inside the window: not even asked"
    clock[0] += 2 * HOUR
    recalls.note([("knowledge", "a")])
    assert await recalls.flush() == 1 and store.calls[-1][:2] == ("knowledge", ["a"])


async def test_a_failing_store_only_logs_and_the_stamp_is_tried_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store, clock = Recorder("fail"), [1000.0]
    recalls = stamper(store, clock)
    recalls.note([("knowledge", "a")])
    with caplog.at_level(logging.WARNING, logger="memctl.bridge"):
        assert await recalls.flush() == 0
    assert "recall stamping of 1 document(s) in knowledge failed: disk full" in caplog.text
    store.behaviour = "ok"
    recalls.note([("knowledge", "a")])
    assert await recalls.flush() == 1, "a failed stamp is not remembered as done"


async def test_a_hanging_store_is_given_up_on(caplog: pytest.LogCaptureFixture) -> None:
    store, clock = Recorder("hang"), [1000.0]
    recalls = stamper(store, clock, timeout_seconds=0.05)
    recalls.note([("knowledge", "a")])
    with caplog.at_level(logging.WARNING, logger="memctl.bridge"):
        assert await recalls.flush() == 0
    assert "failed: TimeoutError" in caplog.text


async def test_the_background_task_writes_what_searches_noted() -> None:
    store, clock = Recorder(), [1000.0]
    recalls = stamper(store, clock, batch_seconds=0.0)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(recalls.run)
        recalls.note([("knowledge", "a")])
        while not store.calls:
            await anyio.sleep(0.01)
        tasks.cancel_scope.cancel()
    assert store.calls == [("knowledge", ["a"], 1000.0, 24 * HOUR)]


async def test_stamps_noted_just_before_the_bridge_stops_are_written() -> None:
    store, clock = Recorder(), [1000.0]
    recalls = stamper(store, clock, batch_seconds=3600.0)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(recalls.run)
        await anyio.sleep(0)
        recalls.note([("knowledge", "a")])
        await anyio.sleep(0.01)
        tasks.cancel_scope.cancel()
    assert store.calls == [("knowledge", ["a"], 1000.0, 24 * HOUR)]
