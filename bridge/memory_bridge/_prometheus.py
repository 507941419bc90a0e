"""The Prometheus registry behind `_metrics.Metrics`, built on first use."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["Registry"]

_SEARCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
_TOOL_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class _StoreGauges(Collector):
    """memory_entries_total and memory_hits_zero_count, read from the store at scrape time."""

    def __init__(self) -> None:
        self.entries = 0.0
        self.hits_zero = 0.0

    def collect(self) -> Iterable[GaugeMetricFamily]:
        yield GaugeMetricFamily("memory_entries_total", "Number of stored entries.", value=self.entries)
        yield GaugeMetricFamily(
            "memory_hits_zero_count", "Entries that were never read.", value=self.hits_zero
        )


class Registry:
    """All metrics of one bridge, in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.gauges = _StoreGauges()
        self.registry.register(self.gauges)
        self.search_duration = Histogram(
            "memory_search_duration_seconds",
            "memory_search latency.",
            buckets=_SEARCH_BUCKETS,
            registry=self.registry,
        )
        self.search_total = Counter("memory_search", "memory_search calls.", registry=self.registry)
        self.search_empty_total = Counter(
            "memory_search_empty", "memory_search calls that returned nothing.", registry=self.registry
        )
        self.write_total = Counter(
            "memory_write", "Applied writes (set and rollback).", registry=self.registry
        )
        self.conflict_total = Counter(
            "memory_conflict", "Writes rejected by if_version.", registry=self.registry
        )
        self.tool_calls = Counter(
            "memctl_tool_calls",
            "MCP tool calls by tool and outcome.",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self.tool_duration = Histogram(
            "memctl_tool_duration_seconds",
            "MCP tool call latency by tool and outcome.",
            ["tool", "outcome"],
            buckets=_TOOL_BUCKETS,
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
