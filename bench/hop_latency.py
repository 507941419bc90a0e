"""Search latency of the default ranking at scale (issue 16's budget: p95 <= 50 ms).

The conversation eval set (its two-part questions are the ones that take the hop) plus
engineering-notes filler up to `--size` documents, in one embedded store; every question
runs once per ranking and round, the first ranking rotating, query embedding included:
the default without the second hop, the default, and with `--baseline` the default of
another checkout (its `bridge/memory_bridge` imported under another name, its store
opening the same file: main before a change, in the same run). Filler vectors are cached
by text as in bench/retrieval.py (only its 2,000 pool paragraphs run through the model).
Prints p50 / p95 / max of each, how many questions the hop changed, and R@5 / R@10 /
MRR@10 of each with the filler as distractors, overall and per question type; the load
average beside every timing. `--profile` times each stage of the default instead.

    uv run --frozen python bench/hop_latency.py                 # 100,000 documents
    uv run --frozen python bench/hop_latency.py --size 20000
    uv run --frozen python bench/hop_latency.py --store /tmp/hop100k   # fill once, reuse after
    git archive main | tar -x -C /tmp/main-tree
    uv run --frozen python bench/hop_latency.py --store /tmp/hop100k --baseline /tmp/main-tree --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _stages import TOTAL, StageTimes
from memory_bridge.search import lazy_minilm
from memory_bridge.stores import KnowledgeFilter
from memory_bridge.stores.sqlite import Ranking, SqliteKnowledgeStore
from retrieval import (
    CONVERSATIONS,
    EMBED_THREADS,
    POOL_SIZE,
    SCOPE,
    SEED,
    SLOTS,
    TOP_K,
    Atom,
    CachingEmbedder,
    IngestTiming,
    Query,
    atom_writes,
    fill,
    ingest,
    latency_summary,
    load_atoms,
    load_queries,
    open_store,
    paragraph_pool,
    progress,
    recall_at,
    reciprocal_rank,
    search,
    warm_up,
)

NO_HOP, DEFAULT, BASELINE = "default without the hop", "default (this tree)", "default (baseline tree)"
BASELINE_PACKAGE = "memory_bridge_baseline"


@dataclass
class Row:
    """One ranking: a store (this tree's, or the baseline tree's on the same file) and its knobs."""

    name: str
    store: Any
    ranking: Any
    latency: list[float]
    cpu: list[float]  # the process's CPU time per search (all threads): less bent by other load
    ranked: list[list[str | None]]


def load() -> str:
    """The load averages (1, 5, 15 minutes), to print beside timings."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def baseline_store(tree: Path, path: Path, embedder: CachingEmbedder) -> Any:
    """The knowledge store class of another checkout's bridge, opened on `path`."""
    package = tree / "bridge" / "memory_bridge"
    spec = importlib.util.spec_from_file_location(
        BASELINE_PACKAGE, package / "__init__.py", submodule_search_locations=[str(package)]
    )
    if spec is None or spec.loader is None:
        raise SystemExit(f"{package}: no memory_bridge package there")
    module = importlib.util.module_from_spec(spec)
    sys.modules[BASELINE_PACKAGE] = module
    spec.loader.exec_module(module)
    store_class = importlib.import_module(f"{BASELINE_PACKAGE}.stores.sqlite").SqliteKnowledgeStore
    return store_class(path, embedder=embedder, default_slots=SLOTS)


async def filled(
    store: SqliteKnowledgeStore, atoms: list[Atom], size: int, embedder: CachingEmbedder
) -> None:
    """Fill an empty store with the turns and filler up to `size` documents; a store kept
    from an earlier run (`--store`) must hold exactly that many already."""
    documents = await store.count()
    if documents == size:
        progress(f"reusing the {documents} documents of {store.path}")
        return
    if documents:
        raise SystemExit(f"{store.path} holds {documents} documents, not {size}: remove it or change --size")
    progress(f"{len(atoms)} turns + {size - len(atoms)} filler")
    await ingest(store, atom_writes(atoms), IngestTiming())
    await fill(store, size - len(atoms), paragraph_pool(POOL_SIZE, SEED), embedder)


async def profiled(store: SqliteKnowledgeStore, queries: list[Query]) -> None:
    """Every question once with the default ranking, each stage timed (bench/_stages.py);
    prints the stage table and the slowest searches."""
    store.ranking = Ranking()
    times = StageTimes()
    before = load()
    with times:
        for query in queries:
            with times.search():
                await search(store, query.query, "hybrid")
    print(
        f"## Stages of the default ranking ({len(queries)} questions; load average {before}, then {load()})\n"
    )
    print(times.report())
    print("\nThe slowest searches (ms):")
    slowest = sorted(zip(times.searches, queries, strict=True), key=lambda pair: -pair[0][TOTAL])
    for timing, query in slowest[: max(1, len(queries) // 20)]:
        stages = ", ".join(f"{k} {v:.1f}" for k, v in sorted(timing.items(), key=lambda kv: -kv[1]) if v >= 1)
        print(f"- [{query.kind}, {len(query.query.split())} words] {stages}")


async def timed(
    rows: list[Row], queries: list[Query], by_name: dict[tuple[str, str], str], rounds: int
) -> None:
    """Every question on every row, `rounds` times, the first row rotating."""
    flt = KnowledgeFilter(scope=SCOPE)
    for round_ in range(rounds):
        for number, query in enumerate(queries):
            shift = (number + round_) % len(rows)
            for row in rows[shift:] + rows[:shift]:
                row.store.ranking = row.ranking
                start, cpu = time.perf_counter(), time.process_time()
                page = await row.store.search(
                    list(SLOTS), query.query, flt, top_k=TOP_K, score_threshold=None, mode="hybrid"
                )
                row.latency.append((time.perf_counter() - start) * 1000)
                row.cpu.append((time.process_time() - cpu) * 1000)
                if round_ == 0:
                    row.ranked.append([by_name.get((h.slot, h.document_name)) for h in page.hits])


def quality(ranked: Sequence[list[str | None]], queries: Sequence[Query]) -> str:
    pairs = list(zip(ranked, queries, strict=True))
    r5 = statistics.fmean(recall_at(x, q.gold, 5) for x, q in pairs)
    r10 = statistics.fmean(recall_at(x, q.gold, 10) for x, q in pairs)
    mrr = statistics.fmean(reciprocal_rank(x, q.gold) for x, q in pairs)
    return f"{r5:.3f} / {r10:.3f} / {mrr:.3f}"


def report(
    rows: list[Row], queries: list[Query], documents: int, rounds: int, loads: tuple[str, str]
) -> None:
    print(
        f"## Rankings at {documents} documents ({len(queries)} conversation questions x {rounds} rounds,"
        f" hybrid, top 10; load average {loads[0]} before, {loads[1]} after)\n"
    )
    print(
        "| ranking | p50 ms | p95 ms | max ms | CPU p50 / p95 ms | R@5 / R@10 / MRR@10 |\n"
        "|---|---|---|---|---|---|"
    )
    for row in rows:
        s, c = latency_summary(row.latency), latency_summary(row.cpu)
        cells = [f"{s['p50']:.1f}", f"{s['p95']:.1f}", f"{s['max']:.1f}", f"{c['p50']:.1f} / {c['p95']:.1f}"]
        cells.append(quality(row.ranked, queries))
        print(f"| {row.name} | " + " | ".join(cells) + " |")
    kinds = sorted({q.kind for q in queries})
    print("\nPer question type, R@5 / R@10 / MRR@10:\n")
    print("| type | " + " | ".join(row.name for row in rows) + " |\n|---|" + "---|" * len(rows))
    for kind in kinds:
        chosen = [i for i, q in enumerate(queries) if q.kind == kind]
        cells = [quality([row.ranked[i] for i in chosen], [queries[i] for i in chosen]) for row in rows]
        print(f"| {kind} ({len(chosen)}) | " + " | ".join(cells) + " |")
    hop, no_hop = rows[1].ranked, rows[0].ranked
    changed = sum(a != b for a, b in zip(hop, no_hop, strict=True))
    print(f"\nThe hop changed the results of {changed} of {len(queries)} questions (this tree).")
    if len(rows) > 2:
        differ = sum(a != b for a, b in zip(rows[1].ranked, rows[2].ranked, strict=True))
        print(f"This tree's default and the baseline's differ on {differ} of {len(queries)} questions.")


async def run(size: int, kept: Path | None, profile: bool, baseline: Path | None, rounds: int) -> None:
    atoms = load_atoms(CONVERSATIONS / "atoms.jsonl")
    queries = load_queries(CONVERSATIONS / "queries.jsonl", atoms)
    by_name = {(a.slot, a.name): a.id for a in atoms}
    embedder = CachingEmbedder(lazy_minilm(EMBED_THREADS))
    embedder.embed_query("warm up")
    with contextlib.ExitStack() as stack:
        directory = kept or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memctl-hop-")))
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        store = open_store(directory, embedder)
        other = None
        try:
            await filled(store, atoms, size, embedder)
            await warm_up(store, queries[0].query)
            if profile:
                await profiled(store, queries)
                return
            rows = [
                Row(NO_HOP, store, Ranking(second_hop=False), [], [], []),
                Row(DEFAULT, store, Ranking(), [], [], []),
            ]
            if baseline is not None:
                other = baseline_store(baseline, store.path, embedder)
                rows.append(Row(BASELINE, other, type(other.ranking)(), [], [], []))
                await other.search(
                    list(SLOTS),
                    queries[0].query,
                    KnowledgeFilter(scope=SCOPE),
                    top_k=TOP_K,
                    score_threshold=None,
                )
            before = load()
            await timed(rows, queries, by_name, rounds)
            loads = (before, load())
            documents = await store.count()
        finally:
            if other is not None:
                await other.close()
            await store.close()
    report(rows, queries, documents, rounds, loads)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100_000, help="documents in the store (turns + filler)")
    parser.add_argument(
        "--store", type=Path, help="keep the store in this directory, and reuse it if it is filled already"
    )
    parser.add_argument(
        "--baseline", type=Path, help="a checkout (git archive) whose default ranking runs beside this tree's"
    )
    parser.add_argument("--rounds", type=int, default=1, help="times each question runs per ranking")
    parser.add_argument("--profile", action="store_true", help="time each stage of the default ranking")
    args = parser.parse_args()
    asyncio.run(run(args.size, args.store, args.profile, args.baseline, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
