"""Per-stage timers for one embedded knowledge search (bench/hop_latency.py --profile).

Wraps the store's stage functions in timers for the duration of a `with StageTimes()`
block: the query embedding (and the hop's second one, or the pooling of its words' token
states that replaces it), the filter's SQL, the catch-up
check, the keyword and dense rounds, fusion, the hop's plan (with its coverage lookups and
bridge counts inside it), its scoring and the hits' shaping; plus the garbage collector's
pauses. `search()` wraps one search and records its total; `report()` prints each stage's
p50 / p95 / mean over all searches and its mean over the slowest 5%.
"""

from __future__ import annotations

import functools
import gc
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType, TracebackType
from typing import Any

from memory_bridge.search import _embed
from memory_bridge.stores.sqlite import _knowledge, _knowledge_hop, _knowledge_terms, _knowledge_vectors

TOTAL = "total"
OTHER = "other (locks, transactions, glue)"
NESTED = {"hop coverage", "hop bridge counts"}  # inside "plan hop": not added to the sum


class StageTimes:
    """Stage timings (ms) per search, while installed."""

    def __init__(self) -> None:
        self.searches: list[dict[str, float]] = []
        self._current: dict[str, float] | None = None
        self._patches: list[tuple[Any, str, Any]] = []
        self._gc_start = 0.0

    # -- installing -----------------------------------------------------------------------------

    def _wrap(self, owner: ModuleType | type, name: str, stage: str | Callable[[], str]) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self._add(stage() if callable(stage) else stage, start)

        self._patches.append((owner, name, original))
        setattr(owner, name, timed)

    def _embed_stage(self) -> str:
        current = self._current or {}
        return "residual embedding" if "query embedding" in current else "query embedding"

    def __enter__(self) -> StageTimes:
        store = _knowledge.SqliteKnowledgeStore
        self._wrap(store, "_query_embedding", self._embed_stage)
        self._wrap(_embed.QueryTokens, "pooled", "residual pooling")
        self._wrap(store, "_allowed_sql", "filter sql")
        self._wrap(_knowledge_vectors.KnowledgeVectors, "catch_up", "catch up")
        self._wrap(store, "_keyword", "keyword (FTS)")
        self._wrap(store, "_dense", "dense")
        self._wrap(_knowledge, "fuse", "fusion")
        self._wrap(_knowledge, "plan_hop", "plan hop")
        self._wrap(_knowledge_hop.Coverage, "covered", "hop coverage")
        self._wrap(_knowledge_terms.TermFrequencies, "passages", "hop bridge counts")
        self._wrap(_knowledge, "score_hops", "score hops")
        self._wrap(store, "_hit", "hits")
        gc.callbacks.append(self._gc)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        gc.callbacks.remove(self._gc)
        for owner, name, original in reversed(self._patches):
            setattr(owner, name, original)
        self._patches.clear()

    # -- recording ------------------------------------------------------------------------------

    def _add(self, stage: str, start: float) -> None:
        if self._current is not None:
            self._current[stage] = self._current.get(stage, 0.0) + (time.perf_counter() - start) * 1000

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self._add("garbage collector", self._gc_start)

    @contextmanager
    def search(self) -> Iterator[None]:
        """Time one search: its stages and its total."""
        self._current = {}
        start = time.perf_counter()
        try:
            yield
        finally:
            current, self._current = self._current, None
            current[TOTAL] = (time.perf_counter() - start) * 1000
            timed = sum(v for k, v in current.items() if k not in NESTED and k != TOTAL)
            current[OTHER] = max(0.0, current[TOTAL] - timed)
            self.searches.append(current)

    # -- reporting ------------------------------------------------------------------------------

    def report(self) -> str:
        """A table: each stage's p50 / p95 / mean over all searches (0 where it did not run),
        how many searches ran it, and its mean over the slowest 5% of searches."""
        names = {stage for timing in self.searches for stage in timing}
        stages = {stage: [timing.get(stage, 0.0) for timing in self.searches] for stage in names}
        slow = sorted(self.searches, key=lambda t: t[TOTAL])[-max(1, len(self.searches) // 20) :]
        rest = sorted(names - {TOTAL}, key=lambda stage: -statistics.fmean(stages[stage]))
        order = [TOTAL, *rest]
        lines = [f"{'stage':34s}  runs  p50 ms  p95 ms  mean ms  slowest 5%: mean ms"]
        for stage in order:
            values = sorted(stages[stage])
            runs = sum(1 for t in self.searches if stage in t)
            p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
            lines.append(
                f"{stage:34s}  {runs:4d}  {statistics.median(values):6.2f}  {p95:6.2f}"
                f"  {statistics.fmean(values):7.2f}  {statistics.fmean(t.get(stage, 0.0) for t in slow):7.2f}"
            )
        return "\n".join(lines)
