"""Search latency of three rankings at scale (issue 16's budget: p95 <= 50 ms).

The conversation eval set (its two-part questions are the ones that take the hop) plus
engineering-notes filler up to `--size` documents, in one embedded store; every question
runs once per ranking, the first ranking rotating, query embedding included: weighted 0.7
without the second hop (main before it), weighted 0.7 with it (main now) and the default
(adaptive weight, second hop). Filler vectors are cached by text as in bench/retrieval.py
(only its 2,000 pool paragraphs run through the model). Prints p50 / p95 / max of each, how
many questions the hop changed, and R@5 / R@10 / MRR@10 of each with the filler as
distractors.

    uv run --frozen python bench/hop_latency.py                 # 100,000 documents
    uv run --frozen python bench/hop_latency.py --size 20000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from memory_bridge.search import lazy_minilm
from memory_bridge.stores.sqlite._knowledge_ranking import Ranking
from retrieval import (
    CONVERSATIONS,
    EMBED_THREADS,
    POOL_SIZE,
    SEED,
    CachingEmbedder,
    IngestTiming,
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

NO_HOP, MAIN, DEFAULT = "weighted 0.7, no hop", "weighted 0.7, hop (main)", "adaptive, hop (default)"
RANKINGS = {
    NO_HOP: Ranking(fusion="weighted", second_hop=False),
    MAIN: Ranking(fusion="weighted"),
    DEFAULT: Ranking(),
}
WIDTH = max(map(len, RANKINGS))


async def run(size: int) -> None:
    atoms = load_atoms(CONVERSATIONS / "atoms.jsonl")
    queries = load_queries(CONVERSATIONS / "queries.jsonl", atoms)
    by_name = {(a.slot, a.name): a.id for a in atoms}
    embedder = CachingEmbedder(lazy_minilm(EMBED_THREADS))
    embedder.embed_query("warm up")
    with tempfile.TemporaryDirectory(prefix="memctl-hop-") as directory:
        store = open_store(Path(directory), embedder)
        try:
            progress(f"{len(atoms)} turns + {size - len(atoms)} filler")
            await ingest(store, atom_writes(atoms), IngestTiming())
            await fill(store, size - len(atoms), paragraph_pool(POOL_SIZE, SEED), embedder)
            await warm_up(store, queries[0].query)
            names = list(RANKINGS)
            latency: dict[str, list[float]] = {name: [] for name in names}
            ranked: dict[str, list[list[str | None]]] = {name: [] for name in names}
            for number, query in enumerate(queries):
                shift = number % len(names)  # rotate which goes first
                for name in names[shift:] + names[:shift]:
                    store.ranking = RANKINGS[name]
                    start = time.perf_counter()
                    page = await search(store, query.query, "hybrid")
                    latency[name].append((time.perf_counter() - start) * 1000)
                    ranked[name].append([by_name.get((h.slot, h.document_name)) for h in page.hits])
            documents = await store.count()
        finally:
            await store.close()
    changed = sum(a != b for a, b in zip(ranked[MAIN], ranked[NO_HOP], strict=True))
    print(f"## Rankings at {documents} documents ({len(queries)} conversation questions, hybrid, top 10)\n")
    print(f"{'ranking':{WIDTH}s}  p50 ms  p95 ms  max ms    R@5   R@10  MRR@10")
    for name in RANKINGS:
        s = latency_summary(latency[name])
        r = ranked[name]
        r5 = statistics.fmean(recall_at(x, q.gold, 5) for x, q in zip(r, queries, strict=True))
        r10 = statistics.fmean(recall_at(x, q.gold, 10) for x, q in zip(r, queries, strict=True))
        mrr = statistics.fmean(reciprocal_rank(x, q.gold) for x, q in zip(r, queries, strict=True))
        print(
            f"{name:{WIDTH}s}  {s['p50']:6.1f}  {s['p95']:6.1f}  {s['max']:6.1f}"
            f"  {r5:.3f}  {r10:.3f}  {mrr:.3f}"
        )
    print(f"\nThe hop changed the results of {changed} of {len(queries)} questions (weighted 0.7).")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100_000, help="documents in the store (turns + filler)")
    args = parser.parse_args()
    asyncio.run(run(args.size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
