"""Benchmark `memctl maintain`'s passes on a store with planted near-duplicates and stale lessons.

The labelled atoms of `bench/retrieval_data` and filler documents (bench/retrieval's
paragraph pool) up to `--docs` go into one embedded knowledge store (the bundled model).
`--dup` of the documents (10%) get an older near-copy (a light edit: two sentences
swapped, or a few words added), and `--stale` of the lessons, bug-root-causes,
feedback-rules and pattern-gotchas (10%) are backdated eight months. Then every pass runs
in the job's order (memory_bridge.maintenance's run_passes and run_llm_passes, as `memctl
maintain` calls them), timed one by one. The LLM is an oracle judge, so the figures
measure the passes, not a model: it merges a planted pair (the keeper's text) and keeps
every other pair it is asked about; it keeps a stale document as current.

It prints the pairs the merge pass asks about against the planted set (precision,
recall), how many planted copies end archived under their original (by the lesson-key
merge or the LLM one), what each pass did
and took, and retrieval quality on the eval queries before maintenance (the baseline, same
run, same store) and after.

    uv run --frozen python bench/llm_passes.py --docs 2000
    uv run --frozen python bench/llm_passes.py --docs 20000 --json llm-passes.json
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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from _env import git_commit
from memory_bridge.maintenance import (
    LLM_PASSES,
    NO_LLM_PASSES,
    MergeVerdict,
    NearDuplicates,
    RefreshVerdict,
    run_llm_passes,
    run_passes,
)
from memory_bridge.search import lazy_minilm
from memory_bridge.stores import DocMetadata, KnowledgeFilter
from memory_bridge.stores.sqlite import SqliteKnowledgeStore
from retrieval import (
    CUTOFFS,
    DATA,
    ORIGIN,
    REPO,
    SCOPE,
    SLOTS,
    Query,
    filler_metadata,
    filler_name,
    load_atoms,
    load_queries,
    paragraph_pool,
    progress,
    recall_at,
    reciprocal_rank,
    table,
)

SEED = 20_261_202
DAY = 86_400.0
TOP_K = 10
STALE_TYPES = ("self-improvement-lesson", "bug-root-cause", "feedback-rule", "pattern-gotcha")
ORDER = (
    "dedupe-by-sha256",
    "dedupe-by-lesson-key",
    "llm-merge-near-duplicates",
    "staleness-flag",
    "llm-semantic-refresh",
    "compress-archived",
)
ADDED = ("Keep this in mind.", "This still applies.", "Worth remembering.")


def copy_name(name: str) -> str:
    return name.removesuffix(".md") + "-copy.md"


def near_copy(text: str, rng: random.Random) -> str:
    """A light edit of `text`: two adjacent sentences swapped, else a short sentence added."""
    sentences = text.split(". ")
    if len(sentences) >= 3:
        i = rng.randrange(len(sentences) - 2)
        sentences[i], sentences[i + 1] = sentences[i + 1], sentences[i]
        return ". ".join(sentences)
    return f"{text.rstrip()} {rng.choice(ADDED)}"


class Oracle:
    """The Judge: merges exactly the planted pairs, keeps stale documents as current."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []
        self.refreshed = 0

    async def merge(self, keeper: Mapping[str, Any], loser: Mapping[str, Any], score: float) -> MergeVerdict:
        self.asked.append((keeper["name"], loser["name"]))
        planted = copy_name(keeper["name"]) == loser["name"] or copy_name(loser["name"]) == keeper["name"]
        return MergeVerdict(planted, str(keeper["text"]) if planted else "", "oracle")

    async def refresh(
        self, document: Mapping[str, Any], neighbours: Sequence[Mapping[str, Any]]
    ) -> RefreshVerdict:
        self.refreshed += 1
        return RefreshVerdict("keep", stale=False, reason="oracle")


async def quality(
    store: SqliteKnowledgeStore, queries: Sequence[Query], by_name: dict[tuple[str, str], str]
) -> dict[str, float]:
    """recall@k and MRR of the eval queries, as search_memory's store search ranks them."""
    ranked = {}
    for query in queries:
        page = await store.search(
            list(SLOTS), query.query, KnowledgeFilter(scope=SCOPE), top_k=TOP_K, score_threshold=None
        )
        ranked[query.id] = [by_name.get((h.slot, h.document_name)) for h in page.hits]
    scores = {
        f"recall@{k}": statistics.fmean(recall_at(ranked[q.id], q.gold, k) for q in queries) for k in CUTOFFS
    }
    scores["mrr"] = statistics.fmean(reciprocal_rank(ranked[q.id], q.gold) for q in queries)
    return scores


async def resolved(store: SqliteKnowledgeStore, planted: set[frozenset[str]]) -> int:
    """Planted pairs whose copy ends archived as superseded by its original (by any pass)."""
    docs = {}
    for slot in SLOTS:
        page, _ = await store.list_documents(slot, offset=0, limit=1_000_000)
        docs.update({d.name: d for d in page})
    count = 0
    for pair in planted:
        copy = next(n for n in pair if n.endswith("-copy.md"))
        original = docs.get(copy.removesuffix("-copy.md") + ".md")
        doc = docs.get(copy)
        if doc and original and not doc.enabled and doc.marks.get("superseded_by") == original.id:
            count += 1
    return count


async def plant(
    store: SqliteKnowledgeStore, path: Path, args: argparse.Namespace, rng: random.Random
) -> dict[str, Any]:
    """Atoms, filler, near-copies and backdated stale documents; what was planted."""
    atoms = load_atoms(args.atoms)
    docs: list[tuple[str, str, str, DocMetadata]] = [(a.slot, a.name, a.text, a.metadata) for a in atoms]
    pool = paragraph_pool(max(0, args.docs - len(docs)), SEED)
    docs += [("knowledge", filler_name(i), text, filler_metadata(rng)) for i, text in enumerate(pool)]
    copies = rng.sample(docs, int(len(docs) * args.dup))
    progress(f"ingesting {len(docs)} documents and {len(copies)} near-copies")
    for slot, name, text, meta in docs:
        await store.upsert(slot, name, text, meta, origin=ORIGIN)
    for slot, name, text, meta in copies:
        await store.upsert(slot, copy_name(name), near_copy(text, rng), meta, origin=ORIGIN)
    while await store.upkeep():
        pass
    now = time.time()
    typed = [(slot, name) for slot, name, _, meta in docs if meta.atom_type in STALE_TYPES]
    stale = rng.sample(typed, int(len(typed) * args.stale))
    with sqlite3.connect(path) as conn:
        for _, name, _, _ in copies:  # a copy is the older one: the original is the keeper
            conn.execute(
                "UPDATE documents SET created_at = ?, updated_at = ? WHERE name = ?",
                (now - 30 * DAY, now - 30 * DAY, copy_name(name)),
            )
        for _, name in stale:
            when = now - 8 * 30.4375 * DAY
            conn.execute(
                "UPDATE documents SET created_at = ?, updated_at = ? WHERE name IN (?, ?)",
                (when, when, name, copy_name(name)),
            )
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
    return {
        "atoms": atoms,
        "documents": len(docs) + len(copies),
        "planted": {frozenset((name, copy_name(name))) for _, name, _, _ in copies},
        "stale": len(stale),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(SEED)
    results: dict[str, Any] = {"commit": git_commit(REPO)}
    options = NearDuplicates(args.threshold, args.top_k, args.refresh_max)
    with tempfile.TemporaryDirectory(prefix="memctl-llm-passes-") as directory:
        path = Path(directory) / "knowledge.db"
        store = SqliteKnowledgeStore(path, embedder=lazy_minilm(2), default_slots=SLOTS)
        try:
            planted = await plant(store, path, args, rng)
            atoms = planted["atoms"]
            queries = load_queries(args.queries, atoms)
            by_name = {(a.slot, a.name): a.id for a in atoms}
            results |= {k: planted[k] for k in ("documents", "stale")} | {"pairs": len(planted["planted"])}
            progress("baseline: the eval before maintenance")
            results["before"] = await quality(store, queries, by_name)
            oracle = Oracle()
            passes = []
            changes: list[dict[str, Any]] = []
            for name in ORDER:
                progress(name)
                common: dict[str, Any] = {
                    "scope": SCOPE,
                    "policies": {},
                    "stale_after_months": 6.0,
                    "dry_run": False,
                    "changes": changes,
                }
                started = time.perf_counter()
                if name in LLM_PASSES:
                    (report,) = await run_llm_passes(store, [name], oracle, options=options, **common)
                else:
                    assert name in NO_LLM_PASSES
                    (report,) = await run_passes(
                        store, [name], archive_age_days=180.0, now=time.time(), **common
                    )
                passes.append(
                    {"name": name, "seconds": time.perf_counter() - started, "detail": report.detail}
                )
            results["passes"] = passes
            asked = {frozenset(pair) for pair in oracle.asked}
            found = asked & planted["planted"]
            results["asked"] = len(asked)
            results["precision"] = len(found) / len(asked) if asked else 1.0
            results["recall"] = len(found) / len(planted["planted"]) if planted["planted"] else 1.0
            results["resolved"] = await resolved(store, planted["planted"])
            results["refreshed"] = oracle.refreshed
            progress("the eval after maintenance")
            results["after"] = await quality(store, queries, by_name)
            results["queries"] = len(queries)
        finally:
            await store.close()
    results["options"] = {"threshold": args.threshold, "top_k": args.top_k, "refresh_max": args.refresh_max}
    return results


def report(r: dict[str, Any]) -> str:
    passes = r["passes"]
    lines = [
        f"maintain's passes: {r['documents']} documents ({r['pairs']} planted near-copies, {r['stale']} "
        f"backdated stale), commit {r['commit']}",
        f"near-duplicates (cosine >= {r['options']['threshold']}, top-k {r['options']['top_k']}): "
        f"{r['asked']} pairs asked, precision {r['precision']:.3f}, recall {r['recall']:.3f} (of the planted "
        f"pairs, asked);",
        f"{r['resolved']}/{r['pairs']} planted copies archived as superseded by their original (any pass); "
        f"{r['refreshed']} stale documents asked (cap {r['options']['refresh_max']})",
        "",
        table(["pass", "seconds", "did"], [[p["name"], f"{p['seconds']:.2f}", p["detail"]] for p in passes]),
        "",
        table(
            ["eval", *(f"recall@{k}" for k in CUTOFFS), "MRR"],
            [
                [label, *(f"{r[key][f'recall@{k}']:.3f}" for k in CUTOFFS), f"{r[key]['mrr']:.3f}"]
                for label, key in (("before maintain (baseline)", "before"), ("after maintain", "after"))
            ],
        ),
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--docs", type=int, default=2_000, help="documents before the near-copies")
    parser.add_argument("--dup", type=float, default=0.1, help="share of documents given a near-copy")
    parser.add_argument("--stale", type=float, default=0.1, help="share of stale-type documents backdated")
    parser.add_argument("--threshold", type=float, default=0.92, help="consolidate_similarity_threshold")
    parser.add_argument("--top-k", type=int, default=5, help="consolidate_cluster_top_k")
    parser.add_argument("--refresh-max", type=int, default=25, help="consolidate_refresh_max_per_run")
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
