"""What the second stage of hybrid search costs per search (issue 34).

Three dialogues of the dialogue eval set go into one embedded store with the bundled
model; the set's first questions are searched in interleaved rounds with the second stage
on and off (the same store, the same warm caches), and the stage's own time is taken
around each call. Prints p50 / p95 of each.

    nice -n 10 uv run --frozen python bench/rerank_cost.py [--dialogues 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from memory_bridge.stores.sqlite import _knowledge
from retrieval import DATA, EMBED_THREADS, CachingEmbedder, atom_metadata, lazy_minilm, open_store, search

QUESTIONS = 90


def _percentiles(values: Sequence[float]) -> str:
    ordered = sorted(values)
    return f"p50 {ordered[len(ordered) // 2]:.1f} / p95 {ordered[int(len(ordered) * 0.95)]:.1f} ms"


async def run(args: argparse.Namespace) -> None:
    directory = DATA / "dialogues"
    prefixes = tuple(f"d{i}-" for i in range(args.dialogues))
    turns = [json.loads(line) for line in (directory / "atoms.jsonl").read_text().splitlines() if line]
    turns = [t for t in turns if t["id"].startswith(prefixes)]
    questions = [json.loads(line)["query"] for line in (directory / "queries.jsonl").read_text().splitlines()]
    stage: list[float] = []
    original = _knowledge.rerank

    def timed(*arguments: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*arguments)
        finally:
            stage.append((time.perf_counter() - start) * 1000)

    _knowledge.rerank = timed  # type: ignore[assignment]
    embedder = CachingEmbedder(lazy_minilm(EMBED_THREADS))
    embedder.embed_query("warm up")
    latencies: dict[bool, list[float]] = {True: [], False: []}
    try:
        with tempfile.TemporaryDirectory(prefix="memctl-rerank-cost-") as scratch:
            store = open_store(Path(scratch), embedder)
            try:
                for turn in turns:
                    await store.upsert(
                        turn["slot"], turn["name"], turn["text"], atom_metadata(turn), origin="b"
                    )
                await store.upkeep()
                for _ in range(args.rounds):
                    for on in (True, False):
                        store.ranking = replace(store.ranking, rerank=on)
                        for question in questions[:QUESTIONS]:
                            start = time.perf_counter()
                            await search(store, question, "hybrid")
                            latencies[on].append((time.perf_counter() - start) * 1000)
            finally:
                await store.close()
    finally:
        _knowledge.rerank = original  # type: ignore[assignment]
    print(f"{len(turns)} turns, {min(QUESTIONS, len(questions))} questions x {args.rounds} rounds")
    print(f"hybrid search, second stage on:  {_percentiles(latencies[True])}")
    print(f"hybrid search, second stage off: {_percentiles(latencies[False])}")
    print(f"the second stage itself:         {_percentiles(stage)}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dialogues", type=int, default=3, help="dialogues of the eval set to ingest")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of each")
    anyio.run(run, parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
