"""Entry calls at c=1 on bridges of several source trees side by side, under the same load.

Each tree (a `git worktree` checkout, or this one) gets its own `memctl serve --http` and
its own store; one SDK client alternates every call between the bridges (in turn, then in
reverse), so a busy machine slows them all alike and their p10 / p50 / p90 and bridge CPU
per call compare where separate runs cannot. The trees run on this virtualenv (the older
tree's `bridge` and `ctl` first on PYTHONPATH).

    git worktree add --detach /tmp/old 1293576
    nice -n 10 uv run --frozen python bench/side_by_side.py --trees old=/tmp/old,new=. --store valkey
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

import anyio

from _mcp import call_tool, open_client
from entries import Corpus, backend, fill_id, http_bridge, insert_id

OPS = ("ping", "get", "set")
FILL = 300


def percentile_ms(seconds: Sequence[float], q: float) -> float:
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def arguments(op: str, corpus: Corpus, number: int) -> dict[str, Any]:
    """memory_get of a random entry; memory_set alternately updating one and inserting one."""
    if op == "get":
        return {"id": corpus.existing_id(FILL)}
    return corpus.entry(insert_id(number) if number % 2 else corpus.existing_id(FILL))


async def run(trees: list[tuple[str, Path]], store_name: str, calls: int, ops: Sequence[str]) -> None:
    corpus = Corpus(7)
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        bridges = []
        for index, (_, tree) in enumerate(trees):
            store = stack.enter_context(backend(store_name))
            before = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = f"{tree / 'bridge'}{os.pathsep}{tree / 'ctl'}"
            try:
                bridges.append(stack.enter_context(http_bridge(Path(tmp) / f"p{index}", store)))
            finally:
                if before is None:
                    os.environ.pop("PYTHONPATH")
                else:
                    os.environ["PYTHONPATH"] = before
        async with AsyncExitStack() as sessions:
            clients = [await open_client(sessions, bridge.mcp_url) for bridge in bridges]
            for number in range(FILL):
                for client in clients:
                    await call_tool(client, "memory_set", corpus.entry(fill_id(number)))
            for op in ops:
                latencies: list[list[float]] = [[] for _ in clients]
                cpu = [bridge.cpu_seconds() for bridge in bridges]
                for number in range(calls):
                    args = arguments(op, corpus, number)
                    order = range(len(clients)) if number % 2 == 0 else reversed(range(len(clients)))
                    for k in order:
                        start = time.perf_counter()
                        if op == "ping":
                            await clients[k].session.send_ping()
                        else:
                            await call_tool(clients[k], f"memory_{op}", args)
                        latencies[k].append(time.perf_counter() - start)
                for k, (label, _) in enumerate(trees):
                    cpu_ms = (bridges[k].cpu_seconds() - cpu[k]) / calls * 1000
                    p10, p50, p90 = (percentile_ms(latencies[k], q) for q in (0.1, 0.5, 0.9))
                    print(
                        f"{op:5} {label:12} p10 {p10:6.2f}  p50 {p50:6.2f}  p90 {p90:6.2f}"
                        f"  bridge cpu {cpu_ms:5.2f} ms"
                    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trees", required=True, help="label=path,... (path: a source tree's root)")
    parser.add_argument("--store", choices=("sqlite", "valkey"), default="sqlite")
    parser.add_argument("--calls", type=int, default=400, help="calls per operation and tree")
    parser.add_argument("--ops", default=",".join(OPS), help=f"some of {','.join(OPS)}")
    args = parser.parse_args(argv)
    pairs = (tree.partition("=") for tree in args.trees.split(","))
    trees = [(label, Path(path).resolve()) for label, _, path in pairs]
    ops = args.ops.split(",")
    if unknown := set(ops) - set(OPS):
        sys.exit(f"unknown operations: {', '.join(sorted(unknown))}")
    anyio.run(run, trees, args.store, args.calls, ops)


if __name__ == "__main__":
    main()
