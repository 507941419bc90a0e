"""Benchmark ranking that knows age and use: retrieval quality with and without it, same run.

The labelled atoms of `bench/retrieval_data` go into one embedded knowledge store (the
bundled model); every query is searched once, as search_memory does (twice the
candidates, re-ranked, cut to 10), with the age-and-use weights off (the baseline: the
store's relevance order) and on (the settings' defaults), on three states of the store:

- `fresh`: no recall stamps, every document new (the weights should change nothing);
- `random age and use`: every document last changed 0-24 months ago and 40% of them
  recalled 1-10 times in the last 0-180 days, at random (seeded), unrelated to the
  queries: the worst case, where age and use carry no information about relevance;
- `planted supersession`: every lesson also has an older copy with the same lesson key
  (`... (superseded)`), which is not gold: how often the replacement ranks above its
  older copy, and what the copies cost recall.

    uv run --frozen python bench/freshness.py
    uv run --frozen python bench/freshness.py --json freshness-results.json
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from _env import git_commit
from memory_bridge.core import Freshness
from memory_bridge.core._freshness import rerank
from memory_bridge.search import lazy_minilm
from memory_bridge.stores import KnowledgeFilter
from memory_bridge.stores.sqlite import SqliteKnowledgeStore
from retrieval import (
    CUTOFFS,
    DATA,
    ORIGIN,
    REPO,
    SCOPE,
    SLOTS,
    Atom,
    Query,
    load_atoms,
    load_queries,
    progress,
    recall_at,
    reciprocal_rank,
    table,
)

TOP_K = 10
CANDIDATES = 2 * TOP_K  # as search_memory asks the store when the weights are on
SEED = 20_261_201
DAY = 86_400.0
OFF = Freshness(recall_weight=0.0, stale_penalty=0.0, superseded_penalty=0.0)
ON = Freshness()  # the settings' defaults
LESSON = "self-improvement-lesson"


async def ranked(
    store: SqliteKnowledgeStore, query: str, weights: Freshness, now: float
) -> list[tuple[str, str]]:
    """(slot, name) of the best TOP_K documents, as search_memory ranks them."""
    page = await store.search(
        list(SLOTS), query, KnowledgeFilter(scope=SCOPE), top_k=CANDIDATES, score_threshold=None
    )
    return [(hit.slot, hit.document_name) for hit in rerank(page.hits, weights, now)[:TOP_K]]


def quality(results: dict[str, list[str | None]], queries: Sequence[Query]) -> dict[str, float]:
    scores = {
        f"recall@{k}": statistics.fmean(recall_at(results[q.id], q.gold, k) for q in queries) for k in CUTOFFS
    }
    scores["mrr"] = statistics.fmean(reciprocal_rank(results[q.id], q.gold) for q in queries)
    return scores


async def measure(
    store: SqliteKnowledgeStore, queries: Sequence[Query], by_name: dict[tuple[str, str], str], now: float
) -> dict[str, dict[str, Any]]:
    """Quality with the weights off and on; the per-query rankings (names) too."""
    out: dict[str, dict[str, Any]] = {}
    for label, weights in (("off", OFF), ("on", ON)):
        names = {q.id: await ranked(store, q.query, weights, now) for q in queries}
        ids = {qid: [by_name.get(n) for n in found] for qid, found in names.items()}
        out[label] = {**quality(ids, queries), "rankings": names}
    return out


def age_and_use(path: Path, rng: random.Random, now: float) -> list[tuple[str, str, float, int]]:
    """Backdate every document 0-24 months; choose 40% to have been recalled (slot, id, when, count)."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT d.rowid, s.name, d.id FROM documents AS d JOIN slots AS s ON s.id = d.slot_id"
        ).fetchall()
        for rowid, _, _ in rows:
            when = now - rng.uniform(0, 730) * DAY
            conn.execute(
                "UPDATE documents SET created_at = ?, updated_at = ? WHERE rowid = ?", (when, when, rowid)
            )
    return [
        (slot, doc_id, now - rng.uniform(0, 180) * DAY, rng.randint(1, 10))
        for _, slot, doc_id in rows
        if rng.random() < 0.4
    ]


def superseded_name(name: str) -> str:
    return name.removesuffix(".md") + "-superseded.md"


async def plant_superseded(store: SqliteKnowledgeStore, atoms: Sequence[Atom], path: Path, now: float) -> int:
    """An older copy of every lesson with a lesson key, 30 days older than it."""
    lessons = [
        a
        for a in atoms
        if a.metadata.atom_type == LESSON
        and a.metadata.project_module
        and a.metadata.task_type
        and a.metadata.error_pattern
    ]
    for atom in lessons:
        text = atom.text.replace(". ", ". Earlier advice: ", 1) + " (superseded)"
        await store.upsert(atom.slot, superseded_name(atom.name), text, atom.metadata, origin=ORIGIN)
    await store.upkeep()
    with sqlite3.connect(path) as conn:
        for atom in lessons:
            conn.execute(
                "UPDATE documents SET created_at = ?, updated_at = ? WHERE name = ?",
                (now - 30 * DAY, now - 30 * DAY, superseded_name(atom.name)),
            )
            conn.execute("UPDATE documents SET updated_at = ? WHERE name = ?", (now - DAY, atom.name))
    return len(lessons)


def replacement_first(
    rankings: dict[str, list[tuple[str, str]]], queries: Sequence[Query], atoms: Sequence[Atom]
) -> tuple[int, int]:
    """Of the queries whose results show both a gold lesson and its superseded copy, how
    many rank the lesson first; and how many show both."""
    by_id = {a.id: a for a in atoms}
    first = both = 0
    for query in queries:
        names = [name for _, name in rankings[query.id]]
        for gold in query.gold:
            atom = by_id[gold]
            copy = superseded_name(atom.name)
            if atom.name in names and copy in names:
                both += 1
                first += names.index(atom.name) < names.index(copy)
    return first, both


async def run(args: argparse.Namespace) -> dict[str, Any]:
    atoms = load_atoms(args.atoms)
    queries = load_queries(args.queries, atoms)
    by_name = {(a.slot, a.name): a.id for a in atoms}
    embedder = lazy_minilm(2)
    rng = random.Random(SEED)
    results: dict[str, Any] = {
        "commit": git_commit(REPO),
        "weights_on": ON.__repr__(),
        "queries": len(queries),
    }
    with tempfile.TemporaryDirectory(prefix="memctl-freshness-") as directory:
        path = Path(directory) / "knowledge.db"
        store = SqliteKnowledgeStore(path, embedder=embedder, default_slots=SLOTS)
        try:
            progress(f"ingesting {len(atoms)} atoms")
            for atom in atoms:
                await store.upsert(atom.slot, atom.name, atom.text, atom.metadata, origin=ORIGIN)
            await store.upkeep()
            now = time.time()
            progress("fresh")
            results["fresh"] = await measure(store, queries, by_name, now)
            progress("random age and use")
            for slot, doc_id, when, count in age_and_use(path, rng, now):
                for step in range(count):
                    await store.stamp_recalls(slot, [doc_id], now=when - (count - step) * DAY, window=0)
            results["random age and use"] = await measure(store, queries, by_name, now)
            progress("planted supersession")
            results["planted"] = await plant_superseded(store, atoms, path, now)
            results["planted supersession"] = await measure(store, queries, by_name, now)
            for label in ("off", "on"):
                first, both = replacement_first(
                    results["planted supersession"][label]["rankings"], queries, atoms
                )
                results["planted supersession"][label]["replacement_first"] = [first, both]
        finally:
            await store.close()
    return results


def report(results: dict[str, Any]) -> str:
    rows = []
    for state in ("fresh", "random age and use", "planted supersession"):
        for label in ("off", "on"):
            scores = results[state][label]
            extra = ""
            if "replacement_first" in scores:
                first, both = scores["replacement_first"]
                extra = f"{first}/{both}"
            rows.append(
                [
                    state,
                    "baseline (weights off)" if label == "off" else "age and use (defaults)",
                    *(f"{scores[f'recall@{k}']:.3f}" for k in CUTOFFS),
                    f"{scores['mrr']:.3f}",
                    extra,
                ]
            )
    headers = ["store state", "ranking", *(f"recall@{k}" for k in CUTOFFS), "MRR", "replacement first"]
    return (
        f"Age and use in ranking: {results['queries']} queries, commit {results['commit']}\n"
        f"weights on: {results['weights_on']}; {results['planted']} superseded lesson copies planted\n\n"
        + table(headers, rows)
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--atoms", type=Path, default=DATA / "atoms.jsonl", help="labelled atoms (JSONL)")
    parser.add_argument("--queries", type=Path, default=DATA / "queries.jsonl", help="queries with gold ids")
    parser.add_argument("--json", type=Path, default=None, help="also write every number to this file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results = anyio.run(run, args)
    print(report(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
