"""Filling a benchmark's embedded project fast: entry records through the store's import.

Also a script, so that a side-by-side run fills each source tree's store with that tree's
own code (run with the tree's `bridge` and `ctl` first on PYTHONPATH):

    python bench/_fill.py --project DIR [--entry-store URL] --entries N --seed S
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

BATCH = 1000


async def import_entries(project: Path, records: Iterable[Any], entry_store: str | None = None) -> None:
    """Import `records` (`EntryRecord`s) into `project`'s entry store (or the one at
    `entry_store`), BATCH at a time."""
    from memory_bridge import load_settings, open_entry_store

    settings = load_settings(project=project, embedding_model="none", entry_store=entry_store)
    store = open_entry_store(settings)
    try:
        batch = []
        for record in records:
            batch.append(record)
            if len(batch) == BATCH:
                await store.import_records(batch)
                batch = []
        if batch:
            await store.import_records(batch)
    finally:
        await store.close()


def corpus_records(entries: Iterable[dict[str, Any]]) -> Iterator[Any]:
    """EntryRecords of new entries (memory_set arguments) as memctl's memory_set stores them:
    revision 1, hits 0, no ttl, one `created` snapshot, created = updated = now."""
    from memory_bridge.stores import Entry, EntryRecord

    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    for args in entries:
        tags = tuple(args["tags"])
        entry = Entry(
            args["id"], args["title"], args["body"], args["type"], tags, args["source"],
            args["project"], stamp, stamp, 0, "",
        )  # fmt: skip
        snapshot = {
            "title": args["title"],
            "body": args["body"],
            "type": args["type"],
            "tags": list(tags),
            "source": args["source"],
            "project": args["project"],
            "updated": stamp,
            "operation": "created",
            "rev": 1,
        }
        yield EntryRecord(args["id"], entry, 1, (json.dumps(snapshot),))


def main(argv: Sequence[str] | None = None) -> None:
    from entries import Corpus, fill_id

    parser = argparse.ArgumentParser(description="Fill a memctl entry store with the bench corpus.")
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--entry-store", default=None, help="a store URL; default the project's SQLite")
    parser.add_argument("--entries", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    args = parser.parse_args(argv)
    corpus = Corpus(args.seed)
    entries = (corpus.entry(fill_id(i)) for i in range(args.entries))
    anyio.run(import_entries, args.project, corpus_records(entries), args.entry_store)


if __name__ == "__main__":
    main()
