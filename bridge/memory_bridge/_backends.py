"""Backend outages as the bridge's log tells them: one line when a store stops answering, one
when it answers again.

The stores are pinged every `PROBE_SECONDS`, and at once when a request ran into an outage
(`suspect`), so an outage that a client saw is logged even if it ended before the next probe.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio

from ._errors import StoreError

__all__ = ["Backend", "BackendWatch"]

log = logging.getLogger("memctl.bridge")
PROBE_SECONDS = 5.0
PING_TIMEOUT_SECONDS = 2.0


@dataclass
class Backend:
    """One store the bridge depends on, and since when it has been down (None: up)."""

    name: str
    url: str
    ping: Callable[[], Awaitable[None]]
    down_since: float | None = None

    def answered(self) -> None:
        if self.down_since is not None:
            seconds = time.monotonic() - self.down_since
            message = "backend recovered: %s store %s answers again after %.1f s"
            log.warning(message, self.name, self.url, seconds)
            self.down_since = None

    def failed(self, reason: str) -> None:
        if self.down_since is None:
            log.warning("backend outage: %s store %s is unavailable: %s", self.name, self.url, reason)
            self.down_since = time.monotonic()


@dataclass
class BackendWatch:
    """Probes each backend and logs each change between answering and not answering."""

    backends: list[Backend]
    _wake: anyio.Event = field(default_factory=anyio.Event)

    def suspect(self) -> None:
        """A request ran into an outage: probe now instead of at the next interval."""
        self._wake.set()

    async def probe(self) -> None:
        for backend in self.backends:
            try:
                with anyio.fail_after(PING_TIMEOUT_SECONDS):
                    await backend.ping()
            except StoreError as exc:
                backend.failed(str(exc))
            except TimeoutError:
                backend.failed(f"no answer within {PING_TIMEOUT_SECONDS:g} s")
            else:
                backend.answered()

    async def run(self) -> None:
        """Probe until cancelled."""
        while True:
            with anyio.move_on_after(PROBE_SECONDS):
                await self._wake.wait()
            self._wake = anyio.Event()
            await self.probe()
