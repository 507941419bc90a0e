"""Background embedding that gives way to the calls being served.

Entry vectors are computed after the write that queued them. That work must not slow the
gets and searches made meanwhile, so it runs on one thread of its own at the lowest CPU
priority (nice 19: a foreground thread wanting the core gets it), one text at a time (no
kernel thread pool), in small batches, and each batch first waits until no request is
in flight (at most `MAX_WAIT_SECONDS`, so a server that is never idle still catches up).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from ._embed import Embedder, LazyEmbedder, Vector

__all__ = ["BACKGROUND_NICE", "MAX_WAIT_SECONDS", "Foreground", "embed_in_background", "foreground"]

BACKGROUND_NICE = 19
MAX_WAIT_SECONDS = 1.0
_POLL_SECONDS = 0.02


class Foreground:
    """How many requests are being served right now."""

    def __init__(self) -> None:
        self.in_flight = 0

    @contextmanager
    def serving(self) -> Iterator[None]:
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1

    async def wait_idle(self, max_wait: float) -> bool:
        """Wait until no request is in flight (True) or `max_wait` seconds pass (False)."""
        deadline = time.monotonic() + max_wait
        while self.in_flight:
            if time.monotonic() >= deadline:
                return False
            await anyio.sleep(_POLL_SECONDS)
        return True


foreground = Foreground()  # the process's requests: the server counts them, upkeep waits on them


def _lower_priority() -> None:
    """Make the calling thread (Linux: priority is per thread) the last to get a core."""
    with contextlib.suppress(AttributeError, OSError):  # none here: the waits still apply
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)


_executor: ThreadPoolExecutor | None = None


def _background_executor() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(1, thread_name_prefix="embed-bg", initializer=_lower_priority)
    return _executor


def _embed_one_by_one(embedder: Embedder | LazyEmbedder, texts: list[str]) -> Vector:
    import numpy as np

    return np.vstack([embedder.embed_documents([text]) for text in texts])


async def embed_in_background(embedder: Embedder | LazyEmbedder, texts: list[str]) -> Vector:
    """`texts`' vectors, computed on the low-priority thread once no request is in flight."""
    await foreground.wait_idle(MAX_WAIT_SECONDS)
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_background_executor(), _embed_one_by_one, embedder, texts)
