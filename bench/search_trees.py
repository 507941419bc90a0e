"""`memory_search` on Valkey: this source tree's store against another tree's, same data (issue 36).

Imports `--size` of `bench/entries.py`'s entries (with this tree's code) into a
valkey-server, or a three-node Valkey Cluster, the benchmark starts, then runs text-only
queries (1-2 words) and half as many tag + text queries through `ValkeyEntryStore.search`
in two worker processes, one per tree (the other tree's `bridge` and `ctl` first on
PYTHONPATH, this virtualenv), taking turns query by query (in turn, then in reverse), so
a machine whose load drifts favours neither. Unlike `search_ab.py` (one script against
another) the trees may rank differently: the report counts the queries whose pages agree.
Per tree and kind of search: wall p50 / p95 and the worker's CPU p50 (its process time
over the call: the bridge's share of a search, without MCP).

    git worktree add --detach /tmp/base <commit>
    nice -n 10 uv run --frozen python bench/search_trees.py --baseline /tmp/base --size 100000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from entries import Corpus, backend, format_table, percentile, progress
from memory_bridge.stores import EntryFilter
from memory_bridge.stores.valkey import ValkeyEntryStore
from search_ab import IMPORT_BATCH, queries, record

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("text", "tag + text")
WARM_UP = 10


async def serve(url: str) -> None:
    """The worker: a query per stdin line ([tags, query]), a line back per query
    ([wall ms, cpu ms, page ids])."""
    store = ValkeyEntryStore(url)
    loop = asyncio.get_running_loop()
    try:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            tags, query = json.loads(line)
            cpu, wall = time.process_time(), time.perf_counter()
            page = await store.search(EntryFilter(tags=tuple(tags)), query, offset=0, limit=20)
            took = [1000 * (time.perf_counter() - wall), 1000 * (time.process_time() - cpu)]
            print(json.dumps([*took, [e.id for e in page.entries]]), flush=True)
    finally:
        await store.close()


class Worker:
    def __init__(self, tree: Path, url: str) -> None:
        # this script, on the tree's code
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(tree / part) for part in ("bridge", "ctl")))
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def ask(self, tags: list[str], query: str) -> list[Any]:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps([tags, query]) + "\n")
        stdin.flush()
        answer: list[Any] = json.loads(stdout.readline())
        return answer

    def stop(self) -> None:
        stdin: IO[str] | None = self.process.stdin
        if stdin is not None:
            stdin.close()
        self.process.wait(timeout=30)


async def fill(url: str, size: int) -> None:
    store = ValkeyEntryStore(url)
    corpus = Corpus(7)
    try:
        for start in range(0, size, IMPORT_BATCH):
            await store.import_records(
                [record(corpus, i) for i in range(start, min(size, start + IMPORT_BATCH))]
            )
            progress(f"imported {min(size, start + IMPORT_BATCH):,} of {size:,}")
    finally:
        await store.close()


def compare(store_name: str, size: int, count: int, baseline: Path) -> str:
    trees = {"baseline": baseline, "this tree": ROOT}
    with backend(store_name) as store:
        assert store.http_url is not None
        asyncio.run(fill(store.http_url, size))
        workers = {name: Worker(tree, store.http_url) for name, tree in trees.items()}
        try:
            asked = [(list(flt.tags), query) for flt, query in queries(count)]
            for tags, query in asked[:WARM_UP]:
                for worker in workers.values():
                    worker.ask(tags, query)
            taken: dict[tuple[str, str], list[tuple[float, float]]] = {}
            agree = 0
            for n, (tags, query) in enumerate(asked):
                names = list(workers) if n % 2 else list(workers)[::-1]
                answers = {name: workers[name].ask(tags, query) for name in names}
                for name, (wall, cpu, _) in answers.items():
                    taken.setdefault((name, KINDS[bool(tags)]), []).append((wall, cpu))
                agree += answers["baseline"][2] == answers["this tree"][2]
        finally:
            for worker in workers.values():
                worker.stop()
    rows = []
    for kind in KINDS:
        row = [kind]
        for name in trees:
            walls = sorted(wall for wall, _ in taken[(name, kind)])
            cpus = sorted(cpu for _, cpu in taken[(name, kind)])
            row.append(
                f"{percentile(walls, 50):.2f} / {percentile(walls, 95):.2f} / {percentile(cpus, 50):.2f}"
            )
        rows.append(row)
    headers = [
        "search",
        f"baseline ({baseline}): p50 / p95 / cpu p50 ms",
        "this tree: p50 / p95 / cpu p50 ms",
    ]
    title = f"== {store_name}, {size:,} entries, the same queries on both trees =="
    agreed = f"the same page on both trees: {agree} of {len(asked)} queries"
    return "\n".join([title, format_table(headers, rows), agreed])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", type=Path, help="the other source tree's root (a git worktree)")
    parser.add_argument("--stores", default="valkey,valkey-cluster")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument(
        "--queries", type=int, default=300, help="text-only queries (tag + text: half as many)"
    )
    parser.add_argument("--serve", metavar="URL", help=argparse.SUPPRESS)  # a worker
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve))
        return
    if args.baseline is None:
        parser.error("--baseline is required")
    for name in args.stores.split(","):
        print(compare(name, args.size, args.queries, args.baseline.resolve()), flush=True)


if __name__ == "__main__":
    main()
