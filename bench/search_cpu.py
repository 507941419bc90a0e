"""Where a text-only memory_search's CPU goes on the Valkey store (issue 20).

Fills a valkey-server of its own with `bench/entries.py`'s entries through a bridge over
HTTP, then runs the same text-only queries three ways and reports, per search, the CPU of
valkey-server, the bridge and this client, and valkey-server's commands (`INFO
commandstats`: calls and the time inside each):

- `mcp`: through the bridge with the MCP SDK client, as `bench/entries.py` does;
- `in-process`: `ValkeyEntryStore.search` called here, no MCP, no HTTP;
- `in-process, caches cold`: the same, writing 64 MiB of memory between two searches, as
  a bridge and a client working between a server's calls evict its data from the caches.

Usage: uv run python bench/search_cpu.py --size 100000 --queries 200
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import valkey

from _mcp import call_tool, open_client
from entries import FILL_CONCURRENCY, Corpus, HttpBench, backend, format_table, http_bridge, progress
from memory_bridge.stores import EntryFilter
from memory_bridge.stores.valkey import ValkeyEntryStore

COLD_BYTES = 64 * 1024 * 1024  # above this machine's 32 MiB L3
TOP = 5  # the slowest searches named per way: a few common words make most of the time


@dataclass
class Way:
    """One way of running the queries: CPU per search (ms) and the server's commands."""

    name: str
    wall_ms: float
    server_ms: float
    bridge_ms: float | None
    client_ms: float
    commands: dict[str, tuple[float, float]]  # command: (calls, microseconds) per search, the
    # commands a script runs counted too (the script's own time includes theirs)
    slowest: list[tuple[float, str]]  # (seconds, query) of the TOP slowest searches
    total_s: float  # all searches' time together


def command_stats(port: int) -> dict[str, tuple[int, int]]:
    with valkey.Valkey(host="127.0.0.1", port=port) as client:
        info: dict[str, Any] = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): (v["calls"], v["usec"]) for name, v in info.items()}


async def timed(
    name: str, queries: list[str], search: Callable[[str], Awaitable[object]], port: int, server: Any,
    bridge: Any = None, between: Callable[[], None] | None = None,
) -> Way:  # fmt: skip
    """Run every query through `search`, with `between` before each; CPU and commands per search."""
    before, server_cpu = command_stats(port), server.cpu_seconds()
    bridge_cpu = bridge.cpu_seconds() if bridge is not None else 0.0
    each: list[tuple[float, str]] = []
    client_cpu, started, aside, aside_cpu = time.process_time(), time.perf_counter(), 0.0, 0.0
    for query in queries:
        if between is not None:  # its own time is left out of the figures
            wall_mark, cpu_mark = time.perf_counter(), time.process_time()
            between()
            aside += time.perf_counter() - wall_mark
            aside_cpu += time.process_time() - cpu_mark
        began = time.perf_counter()
        await search(query)
        each.append((time.perf_counter() - began, query))
    wall = time.perf_counter() - started - aside
    client = time.process_time() - client_cpu - aside_cpu
    after, n = command_stats(port), len(queries)
    added = {
        command: (calls - before.get(command, (0, 0))[0], usec - before.get(command, (0, 0))[1])
        for command, (calls, usec) in after.items()
    }
    commands = {command: (calls / n, usec / n) for command, (calls, usec) in added.items() if calls >= n / 2}
    return Way(
        name,
        1000 * wall / n,
        1000 * (server.cpu_seconds() - server_cpu) / n,
        None if bridge is None else 1000 * (bridge.cpu_seconds() - bridge_cpu) / n,
        1000 * client / n,
        commands,
        sorted(each, reverse=True)[:TOP],
        sum(seconds for seconds, _ in each),
    )


async def run(size: int, count: int, seed: int) -> list[Way]:
    with backend("valkey") as store, tempfile.TemporaryDirectory() as tmp:
        assert store.server is not None and store.http_url is not None
        project = Path(tmp) / "project"
        project.mkdir()
        port, server = store.server.port, store.server.stats
        with http_bridge(project, store) as bridge:
            async with AsyncExitStack() as stack:
                clients = [await open_client(stack, bridge.mcp_url) for _ in range(FILL_CONCURRENCY)]
                bench = HttpBench(bridge, clients, Corpus(seed), count, store, scan=False)
                progress(f"filling {size:,} entries")
                await bench.fill(size)
                corpus = Corpus(seed + 1)
                queries = [corpus.text_search()["query"] for _ in range(count)]
                for query in queries[:10]:  # the bridge's first calls are not timed
                    await call_tool(clients[0], "memory_search", {"query": query})

                async def over_mcp(query: str) -> object:
                    return await call_tool(clients[0], "memory_search", {"query": query})

                progress("over MCP")
                ways = [await timed("mcp", queries, over_mcp, port, server, bridge)]
                direct = ValkeyEntryStore(store.http_url)
                try:

                    async def in_process(query: str) -> object:
                        return await direct.search(EntryFilter(), query, offset=0, limit=20)

                    progress("in-process")
                    ways.append(await timed("in-process", queries, in_process, port, server))
                    junk = np.ones(COLD_BYTES // 8)

                    def evict() -> None:
                        np.add(junk, 1.0, out=junk)

                    progress("in-process, caches cold")
                    ways.append(
                        await timed("in-process, caches cold", queries, in_process, port, server, None, evict)
                    )
                finally:
                    await direct.close()
    return ways


def report(ways: list[Way], size: int, count: int) -> str:
    rows = [
        [
            w.name,
            f"{w.wall_ms:.1f}",
            f"{w.server_ms:.2f}",
            "-" if w.bridge_ms is None else f"{w.bridge_ms:.2f}",
            f"{w.client_ms:.2f}",
            " ".join(
                f"{c} {calls:g}x/{usec / 1000:.2f}ms" for c, (calls, usec) in sorted(w.commands.items())
            ),
        ]
        for w in ways
    ]
    header = [
        "way",
        "wall ms",
        "valkey-server CPU ms",
        "bridge CPU ms",
        "client CPU ms",
        "server commands per search",
    ]
    table = format_table(header, rows)
    slowest = []
    for w in ways:
        share = sum(seconds for seconds, _ in w.slowest) / w.total_s
        named = ", ".join(f"{query!r} {1000 * seconds:.0f} ms" for seconds, query in w.slowest)
        slowest.append(f"{w.name}: the {TOP} slowest of {count} took {share:.0%} of the time: {named}")
    title = f"text-only memory_search at {size:,} entries, {count} queries, per search:"
    return "\n".join([title, table, *slowest])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=10_000, help="entries to fill (default 10,000)")
    parser.add_argument("--queries", type=int, default=200, help="text-only queries per way (default 200)")
    parser.add_argument("--seed", type=int, default=7, help="the corpus's seed (queries use seed + 1)")
    args = parser.parse_args()
    print(report(asyncio.run(run(args.size, args.queries, args.seed)), args.size, args.queries))


if __name__ == "__main__":
    main()
