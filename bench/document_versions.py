"""What keeping every version of a knowledge document costs: a document write with its
version recorded against the same write without, from the same run, and the version log's
size after many edits.

uv run --frozen python bench/document_versions.py                 # 300 timed writes, 10,000 edits
uv run --frozen python bench/document_versions.py --writes 100 --edits 2000 --model none

The embedded knowledge store with the bundled MiniLM model (`--model none`: no embedding,
the worst case for the ratio). Each timed write replaces one ~2 kB document's text (a new
paragraph each time, so every write changes it); writes alternate between the bare store
and the same store behind its version log, so machine load falls on both alike. The size
run edits 20 documents 10,000 times in all, without embedding, and reports the log's
pages in the store's database (where each version is written in the change's own
transaction) beside the whole file's size.
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from memory_bridge import load_settings
from memory_bridge.stores import DocMetadata, document_versions_path, make_embedder, open_knowledge_store
from memory_bridge.stores.sqlite import SqliteKnowledgeStore

PARAGRAPH = (
    "Deploys go through the blue/green switch; the health check must pass for five minutes "
    "before traffic moves, and a failed check rolls back on its own. "
)


def text(n: int) -> str:
    return f"Revision {n}.\n\n" + PARAGRAPH * 12 + f"\n\nChange {n}: step {n % 7} now waits {n % 13} s."


def disk(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def log_bytes(path: Path) -> int:
    """The version log's pages in the store's database (SQLite's dbstat table)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        (size,) = db.execute("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'versions%'").fetchone()
    return int(size or 0)


async def timed_writes(project: Path, model: str, writes: int) -> tuple[list[float], list[float]]:
    settings = load_settings(project=project, embedding_model=model)
    embedder = make_embedder(settings)
    store = open_knowledge_store(settings, embedder)
    # The same store in a file of its own with no log: what a write costs without versions.
    bare = SqliteKnowledgeStore(project / "bare.db", embedder=embedder)
    meta = DocMetadata(atom_type="project-lore", scope="bench")
    try:
        for target in (store, bare):
            await target.create_slot("knowledge")
            await target.upsert("knowledge", "warm-up.md", text(0), meta, origin="bench")  # loads the model
        with_log: list[float] = []
        without: list[float] = []
        for n in range(1, writes + 1):
            for target, samples, name in ((store, with_log, "kept.md"), (bare, without, "bare.md")):
                started = time.perf_counter()
                await target.upsert("knowledge", name, text(n), meta, origin="bench")
                samples.append(time.perf_counter() - started)
        return with_log, without
    finally:
        await store.close()
        await bare.close()


async def edits(project: Path, count: int) -> tuple[int, int, int]:
    settings = load_settings(project=project, embedding_model="none")
    store = open_knowledge_store(settings)
    meta = DocMetadata(atom_type="project-lore", scope="bench")
    try:
        await store.create_slot("knowledge")
        for n in range(count):
            await store.upsert("knowledge", f"doc-{n % 20}.md", text(n), meta, origin="bench")
        versions, _ = await store.log.size()
    finally:
        await store.close()
    knowledge = document_versions_path(settings)  # the embedded store's log is in its database
    return versions, log_bytes(knowledge), disk(knowledge)


def ms(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=100)[int(q) - 1] * 1000 if q < 100 else max(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--edits", type=int, default=10_000)
    parser.add_argument("--model", default="minilm", help="embedding model (none: no embedding)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        with_log, without = anyio.run(timed_writes, Path(a), args.model, args.writes)
        versions, log_bytes, store_bytes = anyio.run(edits, Path(b), args.edits)
    p50_with, p50_without = ms(with_log, 50), ms(without, 50)
    print(f"document write, model {args.model}, {args.writes} writes each, interleaved")
    print(f"  {'':24} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    for label, samples in (("without versions", without), ("with versions", with_log)):
        mean = statistics.fmean(samples) * 1000
        print(f"  {label:24} {ms(samples, 50):8.2f} {ms(samples, 95):8.2f} {mean:8.2f}")
    ratio = p50_with / p50_without
    print(f"  ratio (p50): {ratio:.2f}x  (goal <= 1.2x)")
    print(f"after {args.edits} edits of 20 documents: {versions} versions kept")
    print(f"  version log {log_bytes / 1e6:.2f} MB on disk ({log_bytes / max(versions, 1):.0f} B a version)")
    print(f"  knowledge store {store_bytes / 1e6:.2f} MB on disk, the log included")


if __name__ == "__main__":
    main()
