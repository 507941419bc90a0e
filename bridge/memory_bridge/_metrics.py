"""Prometheus metrics: memory-mcp's names, plus per-tool counts and latencies.

The registry is built (and prometheus_client imported) on the first count or scrape, not
when the bridge starts: a stdio client's first tools/list does not wait for it."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import anyio

from ._errors import StoreError
from .stores._base import EntryStore

if TYPE_CHECKING:
    from prometheus_client import Counter, Histogram

    from ._prometheus import Registry

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """All metrics of one bridge, in a registry of their own (built on first use)."""

    @cached_property
    def _registry(self) -> Registry:
        from ._prometheus import Registry

        return Registry()

    @property
    def search_duration(self) -> Histogram:
        return self._registry.search_duration

    @property
    def search_total(self) -> Counter:
        return self._registry.search_total

    @property
    def search_empty_total(self) -> Counter:
        return self._registry.search_empty_total

    @property
    def write_total(self) -> Counter:
        return self._registry.write_total

    @property
    def conflict_total(self) -> Counter:
        return self._registry.conflict_total

    def observe_tool(self, tool: str, outcome: str, seconds: float) -> None:
        self._registry.tool_calls.labels(tool=tool, outcome=outcome).inc()
        self._registry.tool_duration.labels(tool=tool, outcome=outcome).observe(seconds)

    async def render(self, store: EntryStore) -> bytes:
        """Refresh the store gauges (maintained counts, no scan) and render the text format."""
        gauges = self._registry.gauges
        try:
            with anyio.fail_after(2):
                gauges.entries = float(await store.count())
                gauges.hits_zero = float(await store.hits_zero_count())
        except (StoreError, TimeoutError):
            pass  # keep the last values; /health reports the outage
        return self._registry.render()
