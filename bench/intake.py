"""Bulk intake of knowledge passages: the model alone, the path before issue 36 and the
intake pipeline, with another caller's small reads timed meanwhile, all in one run.

uv run --frozen python bench/intake.py                      # 1,000 turns, 2 rounds
uv run --frozen python bench/intake.py --texts 3000 --rounds 3

Texts are distinct turns of the conversation eval set (bench/retrieval_data/conversations,
20-52 tokens). (a) The bundled model alone (int8 kernels) embeds `--model-texts` of them
in each way worth trying on this machine: one text per call on 2 threads (at this
process's priority and at nice 19, where the pipeline runs), and length-sorted padded
batches of 8/16/32 on 2 threads and of 16 on one; docs/s, CPU ms/doc and the least cosine
to the one-per-call vectors. (b) Before issue 36: one `upsert` per turn into a fresh
embedded store, then `upkeep()`, with the background embedding as it was (batches of 8 on
the model's own threads); (c) the same calls with the intake pipeline. Both are timed
until every passage has its vector (searchable), in rounds that alternate (b) and (c).
(d) Meanwhile another caller reads one entry of an entry store (`memory_get`'s store call)
and one document of the knowledge store in a loop; their p50/p99 beside the same loop on
the idle process. (e) `upkeep()` of a store written without a model (its whole queue at
once: a model change, `migrate`'s re-embedding), before issue 36 and with the pipeline.
Load average beside every rate: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from memory_bridge.search import lazy_minilm, load_minilm
from memory_bridge.search._background import _lower_priority
from memory_bridge.stores import DocMetadata, EntryWrite
from memory_bridge.stores.sqlite import SqliteEntryStore, SqliteKnowledgeStore
from memory_bridge.stores.sqlite._knowledge_vectors import BATCH, KnowledgeVectors

TURNS = Path(__file__).resolve().parent / "retrieval_data" / "conversations" / "atoms.jsonl"
CACHE = Path(tempfile.gettempdir()) / "memctl-bench-model"
READ_PAUSE = 0.005  # seconds between the other caller's reads


def load() -> str:
    return " / ".join(f"{v:.2f}" for v in os.getloadavg())


def distinct_turns(count: int) -> list[str]:
    texts = dict.fromkeys(json.loads(line)["text"] for line in TURNS.read_text().splitlines())
    return list(texts)[:count]


# -- (a) the model alone ---------------------------------------------------------------------


def per_text(model: Any, texts: list[str], *, nice: bool) -> np.ndarray:
    with ThreadPoolExecutor(2, initializer=_lower_priority if nice else None) as pool:
        return np.vstack(list(pool.map(lambda t: model.embed_documents([t]), texts)))


def batched(model: Any, texts: list[str], size: int, threads: int) -> np.ndarray:
    """Length-sorted batches of `size`, padded to their longest text, mean-pooled under the mask."""
    ids = [e.ids for e in model._tokenizer.encode_batch(texts)]
    order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
    groups = [order[i : i + size] for i in range(0, len(order), size)]

    def run(group: list[int]) -> tuple[list[int], np.ndarray]:
        width = max(len(ids[i]) for i in group)
        tokens = np.zeros((len(group), width), dtype=np.int64)
        mask = np.zeros_like(tokens)
        for row, i in enumerate(group):
            tokens[row, : len(ids[i])], mask[row, : len(ids[i])] = ids[i], 1
        feeds = {"input_ids": tokens, "attention_mask": mask, "token_type_ids": np.zeros_like(tokens)}
        hidden = model._session.run(["last_hidden_state"], feeds)[0]
        return group, (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)

    out = np.zeros((len(texts), model.dimension), dtype=np.float32)
    with ThreadPoolExecutor(threads) as pool:
        for group, vectors in pool.map(run, groups):
            out[group] = vectors
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


ROUND_WAY = "batches of 16, 2 threads"  # the model's batched throughput, measured again every round
PIPELINE_WAY = "one text per call, 2 threads at nice 19"  # how the pipeline runs the model


def model_alone(texts: list[str], only: str | None = None) -> list[dict[str, Any]]:
    model = load_minilm(1, int8_cache=CACHE)
    model.embed_documents(texts[:16])
    ways: list[tuple[str, Callable[[], np.ndarray]]] = [
        ("one text per call, 2 threads", lambda: per_text(model, texts, nice=False)),
        ("one text per call, 2 threads at nice 19", lambda: per_text(model, texts, nice=True)),
        ("batches of 8, 2 threads", lambda: batched(model, texts, 8, 2)),
        ("batches of 16, 2 threads", lambda: batched(model, texts, 16, 2)),
        ("batches of 32, 2 threads", lambda: batched(model, texts, 32, 2)),
        ("batches of 16, 1 thread", lambda: batched(model, texts, 16, 1)),
    ]
    rows, reference = [], None
    for name, way in [(n, w) for n, w in ways if only in (None, n)]:
        wall, cpu = time.perf_counter(), time.process_time()
        vectors = way()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        reference = vectors if reference is None else reference
        cosine = float((vectors * reference).sum(axis=1).min())
        rows.append(
            {"way": name, "docs_s": len(texts) / wall, "cpu_ms": cpu / len(texts) * 1000, "cos": cosine}
        )
        rows[-1]["load"] = load()
    return rows


# -- (b), (c) intake until searchable, with (d) another caller's reads ------------------------


@contextlib.contextmanager
def before_36() -> Iterator[None]:
    """Background embedding and upkeep as before issue 36: batches of `BATCH` passages, each
    one `embed_documents` call on the model's own threads, one batch after the other."""
    original = KnowledgeVectors.drain

    def drain(self: KnowledgeVectors, limit: int | None = None) -> int:
        done = 0
        while (limit is None or done < limit) and (batch := self.embed_queued(BATCH)):
            done += batch
        return done

    KnowledgeVectors.drain = drain  # type: ignore[method-assign]
    try:
        yield
    finally:
        KnowledgeVectors.drain = original  # type: ignore[method-assign]


async def reads(
    entries: SqliteEntryStore,
    knowledge: SqliteKnowledgeStore,
    doc: str,
    stop: asyncio.Event,
    samples: dict[str, list[float]],
) -> None:
    while not stop.is_set():
        for name, call in (
            ("entry get", entries.get("bench/note")),
            ("knowledge get", knowledge.get("knowledge", doc)),
        ):
            started = time.perf_counter()
            await call
            samples[name].append(time.perf_counter() - started)
        await asyncio.sleep(READ_PAUSE)


async def intake(texts: list[str], folder: Path, *, idle_seconds: float) -> dict[str, Any]:
    model = lazy_minilm(2, int8_cache=CACHE)
    model.embed_documents(["warm up"])
    entries = SqliteEntryStore(folder / "entries.db", embedder=None)
    note = EntryWrite("bench/note", "note", "a note another session reads", "note", ())
    await entries.set(note, ttl=None, if_version=None, operation_id=None)
    knowledge = SqliteKnowledgeStore(folder / "knowledge.db", embedder=model, default_slots=["knowledge"])
    metadata = DocMetadata(atom_type="project-lore", tags=("conversation",))
    first = await knowledge.upsert(
        "knowledge", "turn-first", "[Monday] user: hello", metadata, origin="bench"
    )
    await knowledge.upkeep()
    idle: dict[str, list[float]] = {"entry get": [], "knowledge get": []}
    busy: dict[str, list[float]] = {"entry get": [], "knowledge get": []}
    stop = asyncio.Event()
    reader = asyncio.create_task(reads(entries, knowledge, first.document_id, stop, idle))
    await asyncio.sleep(idle_seconds)
    stop.set()
    await reader
    stop = asyncio.Event()
    reader = asyncio.create_task(reads(entries, knowledge, first.document_id, stop, busy))
    wall, cpu = time.perf_counter(), time.process_time()
    for number, text in enumerate(texts):
        await knowledge.upsert("knowledge", f"turn-{number}", text, metadata, origin="bench")
    written = time.perf_counter() - wall
    await knowledge.upkeep()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stop.set()
    await reader
    assert await knowledge.stale_passages() == 0
    await knowledge.close()
    await entries.close()
    return {
        "docs_s": len(texts) / wall,
        "upserts_s": len(texts) / written,
        "cpu_ms": cpu / len(texts) * 1000,
        "seconds": wall,
        "load": load(),
        "idle": idle,
        "busy": busy,
    }


async def upkeep_only(texts: list[str], folder: Path) -> dict[str, Any]:
    """A store written without a model (a restore, a model change), then `upkeep()` alone."""
    plain = SqliteKnowledgeStore(folder / "knowledge.db", embedder=None, default_slots=["knowledge"])
    metadata = DocMetadata(atom_type="project-lore", tags=("conversation",))
    cpu = time.process_time()
    for number, text in enumerate(texts):
        await plain.upsert("knowledge", f"turn-{number}", text, metadata, origin="bench")
    write_cpu = time.process_time() - cpu
    await plain.close()
    model = lazy_minilm(2, int8_cache=CACHE)
    model.embed_documents(["warm up"])
    knowledge = SqliteKnowledgeStore(folder / "knowledge.db", embedder=model, default_slots=["knowledge"])
    wall, cpu = time.perf_counter(), time.process_time()
    done = await knowledge.upkeep()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert done == len(texts) and await knowledge.stale_passages() == 0
    await knowledge.close()
    return {
        "docs_s": len(texts) / wall,
        "cpu_ms": cpu / len(texts) * 1000,
        "write_cpu_ms": write_cpu / len(texts) * 1000,
        "load": load(),
    }


def percentile(values: list[float], q: float) -> float:
    ms = sorted(v * 1000 for v in values)
    return ms[min(len(ms) - 1, int(len(ms) * q))]


def table(header: list[str], rows: list[list[str]]) -> None:
    """A plain-text table, numbers right-aligned."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    for row in [header, ["-" * w for w in widths], *rows]:
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )


def report(
    args: argparse.Namespace, alone: list[dict[str, Any]], runs: dict[str, list[dict[str, Any]]]
) -> None:
    print("## (a) The model alone (all-MiniLM-L6-v2, int8 kernels)\n")
    table(
        ["way", "docs/s", "cpu ms/doc", "least cosine", "load average"],
        [[r["way"], f"{r['docs_s']:.1f}", f"{r['cpu_ms']:.2f}", f"{r['cos']:.4f}", r["load"]] for r in alone],
    )
    print("\n## (b) before issue 36, (c) the intake pipeline: one upsert per turn, then upkeep()\n")
    table(
        ["path", "round", "searchable docs/s", "upserts docs/s", "cpu ms/doc", "load average"],
        [
            [name, str(n), f"{r['docs_s']:.1f}", f"{r['upserts_s']:.1f}", f"{r['cpu_ms']:.2f}", r["load"]]
            for name, results in ((n, runs[n]) for n in ("before 36", "pipeline"))
            for n, r in enumerate(results)
        ],
    )
    print("\n## (e) upkeep() of a store written without a model (a restore's or a model change's queue)\n")
    table(
        ["path", "round", "searchable docs/s", "cpu ms/doc", "load average"],
        [
            [name, str(n), f"{u['docs_s']:.1f}", f"{u['cpu_ms']:.2f}", u["load"]]
            for name, results in ((n, runs[n]) for n in ("before 36", "pipeline"))
            for n, u in ((n, r["upkeep"]) for n, r in enumerate(results))
        ],
    )
    print("\n## (d) Another caller's reads (ms), the idle process vs during intake, same run\n")
    rows, ratios = [], {}
    for name, results in [(n, runs[n]) for n in ("before 36", "pipeline")]:
        for read in ("entry get", "knowledge get"):
            idle = [v for r in results for v in r["idle"][read]]
            busy = [v for r in results for v in r["busy"][read]]
            ratios[name, read] = percentile(busy, 0.99) / percentile(idle, 0.99)
            rows.append(
                [name, read]
                + [f"{percentile(values, q):.2f}" for values in (idle, busy) for q in (0.5, 0.99)]
                + [f"{ratios[name, read]:.2f}", str(len(busy))]
            )
    table(["path", "read", "idle p50", "idle p99", "during p50", "during p99", "p99 ratio", "calls"], rows)
    model = [r["docs_s"] for r in runs["model"]]
    print(f"\n## The model alone ({ROUND_WAY}) in each round, docs/s\n")
    print(", ".join(f"{m:.1f} (load {r['load']})" for m, r in zip(model, runs["model"], strict=True)))
    new, old = ([r["docs_s"] for r in runs[name]] for name in ("pipeline", "before 36"))
    up_new, up_old = ([r["upkeep"]["docs_s"] for r in runs[name]] for name in ("pipeline", "before 36"))
    worst = max(v for (name, _), v in ratios.items() if name == "pipeline")

    def median_ratio(a: list[float], b: list[float]) -> float:
        return statistics.median(x / y for x, y in zip(a, b, strict=True))

    print("\n## Targets (per round, the median)\n")
    print(f"searchable: {median_ratio(new, model):.0%} of the model alone's batched throughput (>= 80%)")
    print(f"searchable: {median_ratio(new, old):.2f}x the path before issue 36 (>= 3x)")
    upkeep = (median_ratio(up_new, model), median_ratio(up_new, up_old))
    print(f"upkeep alone: {upkeep[0]:.0%} of the model, {upkeep[1]:.2f}x before")
    # what a stream could reach with no overhead at all: every core busy with the model's
    # cheapest unbatched calls and the writes' own CPU, nothing else
    cores = len(os.sched_getaffinity(0))
    per_call = next(r["cpu_ms"] for r in alone if r["way"] == PIPELINE_WAY)
    writes = statistics.median(r["upkeep"]["write_cpu_ms"] for r in runs["pipeline"])
    ceiling = cores * 1000 / (per_call + writes)
    print(
        f"a stream's ceiling here: {cores} cores / ({per_call:.2f} ms the model one text per call"
        f" + {writes:.2f} ms the write alone) = {ceiling:.0f} docs/s,"
        f" {ceiling / statistics.median(model):.0%} of the model's batched throughput"
    )
    print(f"reads' p99 during intake {worst:.2f}x idle at worst (<= 3x); load average now {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=1000, help="turns written per intake run")
    parser.add_argument("--model-texts", type=int, default=1000, help="turns per way of running the model")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs of (b) and (c)")
    parser.add_argument("--idle-seconds", type=float, default=3.0, help="reads timed before each intake")
    args = parser.parse_args()
    texts = distinct_turns(max(args.texts, args.model_texts))
    print(
        f"# Bulk intake ({args.texts} turns; the model alone on {args.model_texts}); load average {load()}\n"
    )
    alone = model_alone(texts[: args.model_texts])
    runs: dict[str, list[dict[str, Any]]] = {"before 36": [], "pipeline": [], "model": []}
    with tempfile.TemporaryDirectory() as scratch:
        for number in range(args.rounds):
            runs["model"] += model_alone(texts[: args.model_texts], only=ROUND_WAY)
            for name in ["before 36", "pipeline"][:: 1 if number % 2 == 0 else -1]:
                folder = Path(scratch) / f"{name.replace(' ', '-')}-{number}"
                folder.mkdir()
                with before_36() if name == "before 36" else contextlib.nullcontext():
                    result = asyncio.run(intake(texts[: args.texts], folder, idle_seconds=args.idle_seconds))
                    (folder / "upkeep").mkdir()
                    result["upkeep"] = asyncio.run(upkeep_only(texts[: args.texts], folder / "upkeep"))
                runs[name].append(result)
    report(args, alone, runs)


if __name__ == "__main__":
    main()
