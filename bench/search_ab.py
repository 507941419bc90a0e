"""The Valkey store's search script against another commit's, on one store (issue 20).

Imports `--size` of `bench/entries.py`'s entries into a valkey-server of its own, then
runs text-only queries (1-2 words) and half as many tag + text queries through
`ValkeyEntryStore.search` in this process (the script and the bridge's Python around it;
no MCP, no HTTP) twice each: once with this tree's script and once with the script of
`--baseline` (a git revision), the two taking turns at going first so that a machine
whose speed drifts favours neither. Both must give the same page, total and match. The
report gives p50, p95 and mean per kind of search, and the slowest queries of each.
The baseline's script must answer as this tree's store asks: from issue 36's store-wide
statistics on (older scripts rank within the filter: compare with `search_trees.py`).

Usage: uv run python bench/search_ab.py --size 100000 --queries 440 --baseline HEAD~1
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

from entries import Corpus, backend, fill_id, format_table, percentile, progress
from memory_bridge.stores import Entry, EntryFilter, EntryRecord
from memory_bridge.stores.valkey import ValkeyEntryStore, _entries

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = "bridge/memory_bridge/stores/valkey/_scripts.py"
STAMP = "2026-12-01T00:00:00.000Z"
IMPORT_BATCH = 2000
TOP = 5

Query = tuple[EntryFilter, str]
KINDS: dict[str, Callable[[EntryFilter, str], bool]] = {
    "text, one word": lambda f, q: not f.tags and len(q.split()) == 1,
    "text, two words": lambda f, q: not f.tags and len(q.split()) == 2,
    "text, all": lambda f, q: not f.tags,
    "tag + text": lambda f, q: bool(f.tags),
}


def baseline_search_script(revision: str) -> str:
    """The SEARCH script as `revision` of this repository has it."""
    source = subprocess.run(
        ["git", "show", f"{revision}:{SCRIPTS}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    namespace: dict[str, object] = {"__name__": "baseline_scripts"}
    exec(compile(source, f"{revision}:{SCRIPTS}", "exec"), namespace)
    script = namespace["SEARCH"]
    assert isinstance(script, str)
    return script


def record(corpus: Corpus, index: int) -> EntryRecord:
    e = corpus.entry(fill_id(index))
    entry = Entry(
        e["id"],
        e["title"],
        e["body"],
        e["type"],
        tuple(e["tags"]),
        e["source"],
        e["project"],
        STAMP,
        STAMP,
        0,
        "",
    )
    return EntryRecord(e["id"], entry, 1, ())


def queries(count: int) -> list[Query]:
    text, tagged = Corpus(99), Corpus(98)
    found: list[Query] = [(EntryFilter(), text.text_search()["query"]) for _ in range(count)]
    for _ in range(count // 2):
        args = tagged.search()
        found.append((EntryFilter(tags=tuple(args["tags"])), args["query"]))
    return found


async def compare(size: int, count: int, baseline: str) -> str:
    old_script = baseline_search_script(baseline)
    with backend("valkey") as store:
        new = ValkeyEntryStore(store.http_url)
        old = ValkeyEntryStore(store.http_url)
        try:
            corpus = Corpus(7)
            for start in range(0, size, IMPORT_BATCH):
                await new.import_records(
                    [record(corpus, i) for i in range(start, min(size, start + IMPORT_BATCH))]
                )
                progress(f"imported {min(size, start + IMPORT_BATCH):,} of {size:,}")
            with mock.patch.object(_entries, "SEARCH", old_script):  # what a store registers on connecting
                await old.count()
            asked = queries(count)
            for flt, query in asked[:10]:  # warm-up: scripts loaded, connections open
                for st in (old, new):
                    await st.search(flt, query, offset=0, limit=20)
            seconds: dict[str, list[tuple[float, Query]]] = {"baseline": [], "this tree": []}
            for n, (flt, query) in enumerate(asked):
                turns = [("baseline", old), ("this tree", new)]
                pages = {}
                for name, st in turns if n % 2 else turns[::-1]:
                    started = time.perf_counter()
                    page = await st.search(flt, query, offset=0, limit=20)
                    seconds[name].append((time.perf_counter() - started, (flt, query)))
                    pages[name] = ([e.id for e in page.entries], page.total, page.match)
                if pages["baseline"] != pages["this tree"]:
                    raise SystemExit(f"the two scripts answer {query!r} ({flt}) differently: {pages}")
                if n % 100 == 99:
                    progress(f"{n + 1} of {len(asked)} queries")
        finally:
            await new.close()
            await old.close()
    return report(seconds, size, baseline)


def report(seconds: dict[str, list[tuple[float, Query]]], size: int, baseline: str) -> str:
    rows = []
    for kind, chosen in KINDS.items():
        row = [kind]
        for name in ("baseline", "this tree"):
            ms = sorted(1000 * s for s, (flt, query) in seconds[name] if chosen(flt, query))
            row.append(f"{percentile(ms, 50):.1f} / {percentile(ms, 95):.1f} / {sum(ms) / len(ms):.1f}")
        rows.append(row)
    headers = ["search", f"baseline ({baseline}): p50 / p95 / mean ms", "this tree: p50 / p95 / mean ms"]
    lines = [f"== {size:,} entries, the same queries with each search script ==", format_table(headers, rows)]
    for name in ("baseline", "this tree"):
        slowest = sorted(seconds[name], key=lambda item: item[0], reverse=True)[:TOP]
        named = ", ".join(
            f"{query!r}{' (tag)' if flt.tags else ''} {1000 * s:.0f} ms" for s, (flt, query) in slowest
        )
        lines.append(f"slowest, {name}: {named}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100_000, help="entries in the store")
    parser.add_argument(
        "--queries", type=int, default=440, help="text-only queries (and half as many tag + text)"
    )
    parser.add_argument("--baseline", default="HEAD", help="git revision whose search script to compare with")
    args = parser.parse_args()
    print(asyncio.run(compare(args.size, args.queries, args.baseline)))


if __name__ == "__main__":
    main()
