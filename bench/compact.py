"""Benchmark entry compaction (`memctl maintain`'s compact-entries) on both entry stores.

Each store is filled with N entries (ids `topic-<k>:note-<i>`); 10% of them name another
entry in their body and 1% link a missing id as `[[...]]` (a stub each). Then, timed in the
same run on the same store:

- `census` (the baseline): one pass of `export_records` over the store, what any
  compaction must read;
- `first`: compaction writing every backlink block and stub;
- `second`: compaction again, which finds nothing to write (census and graph only).

    uv run --frozen python bench/compact.py --quick
    nice -n 10 uv run --frozen python bench/compact.py --sizes 1000,20000
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from _env import git_commit
from _servers import valkey_server
from memory_bridge.maintenance import compact_entries
from memory_bridge.stores import EntryStore, EntryWrite
from memory_bridge.stores.sqlite import SqliteEntryStore
from memory_bridge.stores.valkey import ValkeyEntryStore

REPO = Path(__file__).resolve().parent.parent


def _entries(n: int, rng: random.Random) -> list[EntryWrite]:
    ids = [f"topic-{i % 50}:note-{i}" for i in range(n)]
    writes = []
    for i, id in enumerate(ids):
        body = f"Note {i} about topic {i % 50}: " + "some words of the note " * 8
        roll = rng.random()
        if roll < 0.10:
            body += f" See {ids[rng.randrange(n)]}."
        elif roll < 0.11:
            body += f" Follow up in [[todo:item-{i}]]."
        writes.append(EntryWrite(id, f"Note {i}", body, "reference", ("bench",), "bench", "bench"))
    return writes


async def _fill(store: EntryStore, writes: list[EntryWrite]) -> float:
    started = time.perf_counter()
    for write in writes:
        await store.set(write, ttl=None, if_version=None, operation_id=None)
    return time.perf_counter() - started


async def _census(store: EntryStore) -> float:
    started = time.perf_counter()
    count = 0
    async for batch in store.export_records():
        count += len(batch)
    return time.perf_counter() - started


async def _measure(store: EntryStore, n: int) -> dict[str, Any]:
    fill = await _fill(store, _entries(n, random.Random(n)))
    row: dict[str, Any] = {"entries": n, "fill_s": round(fill, 2), "census_s": round(await _census(store), 3)}
    for name in ("first", "second"):
        started = time.perf_counter()
        report = await compact_entries(store, budget=3600, max_entries=10 * n, dry_run=False, changes=[])
        row[f"{name}_s"] = round(time.perf_counter() - started, 3)
        row[f"{name}_writes"] = len(report.actions)
        row[f"{name}_outcome"] = report.outcome
        row["links"] = report.links
    return row


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stores", default="sqlite,valkey")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--quick", action="store_true", help="sizes 500,2000")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    sizes = [500, 2000] if args.quick else [int(s) for s in args.sizes.split(",")]
    rows = []
    for kind in args.stores.split(","):
        for db, n in enumerate(sizes):
            print(f"{kind}: {n} entries", file=sys.stderr)
            if kind == "sqlite":
                with tempfile.TemporaryDirectory() as tmp:
                    store: EntryStore = SqliteEntryStore(Path(tmp) / "entries.db")
                    rows.append({"store": kind, **anyio.run(_run, store, n)})
            else:
                with valkey_server() as server:
                    store = ValkeyEntryStore(server.url(db))
                    rows.append({"store": kind, **anyio.run(_run, store, n)})
    header = (
        f"{'store':<8}{'entries':>9}{'links':>8}{'census s':>10}{'first s':>9}{'writes':>8}{'second s':>10}"
    )
    print(f"compact-entries, commit {git_commit(REPO)}\n{header}")
    for r in rows:
        print(
            f"{r['store']:<8}{r['entries']:>9}{r['links']:>8}{r['census_s']:>10}{r['first_s']:>9}"
            f"{r['first_writes']:>8}{r['second_s']:>10}"
        )
    if args.json:
        args.json.write_text(json.dumps({"commit": git_commit(REPO), "rows": rows}, indent=2))
    broken = [r for r in rows if r["first_outcome"] != "ok" or r["second_writes"] != 0]
    return 1 if broken else 0


async def _run(store: EntryStore, n: int) -> dict[str, Any]:
    try:
        return await _measure(store, n)
    finally:
        await store.close()


if __name__ == "__main__":
    raise SystemExit(main())
