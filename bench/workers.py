"""`memctl serve --http --workers N`: server CPU per call beside one worker, same run.

On a 2-core machine throughput says little (the client shares the cores), so the figure to
judge workers by is the bridge's CPU time per call, summed over all its processes: what
the extra processes cost for the same work. Each configuration gets a fresh project and
bridge, is filled through memory_set, then `--sessions` SDK clients (each its own
connection, which the kernel hands to one worker) call memory_get and memory_search in
turn. The embedding model is off, as in bench/entries.py, so background embedding does not
compete with the measured calls.

    uv run --frozen python bench/workers.py                      # workers 1 and 2
    uv run --frozen python bench/workers.py --workers 1,2,4 --calls 4000 --json workers.json
    uv run --frozen python bench/workers.py --store valkey        # on a valkey-server of its own
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AsyncExitStack, ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from _env import clean_env, git_commit
from _mcp import call_tool
from _proc import ProcStats
from _servers import ValkeyServer, free_port, valkey_server

REPO = Path(__file__).resolve().parent.parent
WORDS = "cache tenant key rotate token schema index queue retry backoff deploy config lock".split()  # noqa: SIM905


@contextmanager
def bridge(project: Path, workers: int, entry_store: str | None) -> Iterator[tuple[str, list[int]]]:
    """`memctl serve --http --workers N` until the block ends: its URL and process ids."""
    port = free_port()
    project.mkdir(parents=True)
    env = clean_env()
    argv = [sys.executable, "-m", "memctl", "serve", "--project", str(project), "--http"]
    argv += [] if entry_store is None else ["--entry-store", entry_store]
    process = subprocess.Popen(
        [*argv, "--port", str(port), "--workers", str(workers)], env=env, stdout=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        seen: set[str] = set()
        deadline = time.monotonic() + 60
        while len(seen) < workers or (workers == 1 and not seen):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"bridge with {workers} workers did not start")
            try:
                answer = httpx.get(f"{base}/health", headers={"Connection": "close"}, timeout=1)
                seen.add(answer.headers.get("memctl-worker", "0"))
            except httpx.TransportError:
                time.sleep(0.1)
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        yield f"{base}/mcp", [process.pid, *map(int, children)]
    finally:
        process.terminate()
        process.wait(timeout=30)


def cpu_seconds(pids: list[int]) -> float:
    return sum(ProcStats(pid).cpu_seconds() for pid in pids)


async def measure(
    workers: int, fill: int, sessions: int, calls: int, root: Path, valkey: ValkeyServer | None, db: int
) -> dict[str, Any]:
    rng = random.Random(20_261_201)
    entry_store = None if valkey is None else valkey.url(db)
    with bridge(root / f"workers-{workers}", workers, entry_store) as (url, pids):
        answered: Counter[str] = Counter()

        async def record(response: httpx2.Response) -> None:
            answered[response.headers.get("memctl-worker", "0")] += 1

        async with AsyncExitStack() as stack:
            clients: list[Client] = []
            for _ in range(sessions):
                http = await stack.enter_async_context(httpx2.AsyncClient(event_hooks={"response": [record]}))
                transport = streamable_http_client(url, http_client=http)
                client = await stack.enter_async_context(Client(transport, mode="legacy"))
                await client.list_tools()
                clients.append(client)
            for n in range(fill):
                body = " ".join(rng.choices(WORDS, k=30))
                await call_tool(
                    clients[n % sessions],
                    "memory_set",
                    {
                        "id": f"e-{n}",
                        "title": f"note {n}",
                        "body": body,
                        "type": "pattern",
                        "tags": rng.sample(WORDS, 2),
                    },
                )
            answered.clear()
            latencies: list[float] = []

            async def session(client: Client, count: int) -> None:
                for n in range(count):
                    started = time.perf_counter()
                    if n % 2:
                        await call_tool(client, "memory_search", {"query": " ".join(rng.sample(WORDS, 2))})
                    else:
                        await call_tool(client, "memory_get", {"id": f"e-{rng.randrange(fill)}"})
                    latencies.append(time.perf_counter() - started)

            store_before = 0.0 if valkey is None else valkey.stats.cpu_seconds()
            cpu_before, wall_before = cpu_seconds(pids), time.perf_counter()
            async with anyio.create_task_group() as tasks:
                for client in clients:
                    tasks.start_soon(session, client, calls // sessions)
            wall = time.perf_counter() - wall_before
            cpu = cpu_seconds(pids) - cpu_before
            store_cpu = None if valkey is None else valkey.stats.cpu_seconds() - store_before
    done = len(latencies)
    ordered = sorted(latencies)
    return {
        "workers": workers,
        "calls": done,
        "server_cpu_ms_per_call": cpu / done * 1000,
        "valkey_cpu_ms_per_call": None if store_cpu is None else store_cpu / done * 1000,
        "calls_per_s": done / wall,
        "p50_ms": statistics.median(ordered) * 1000,
        "p95_ms": ordered[int(0.95 * (done - 1))] * 1000,
        "answers_by_worker": dict(sorted(answered.items())),
    }


def report(rows: list[dict[str, Any]], sessions: int, store: str) -> str:
    base = rows[0]
    lines = [
        f"memctl serve --http --workers N, {store} store: memory_get + memory_search, {sessions} sessions, "
        f"{os.cpu_count()} CPUs; baseline: {base['workers']} worker(s), same run",
        "",
        "| workers | calls | server CPU / call | vs baseline | calls/s | p50 | p95 | answers by worker |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        ratio = row["server_cpu_ms_per_call"] / base["server_cpu_ms_per_call"]
        if row["valkey_cpu_ms_per_call"] is not None:
            spread = f"valkey-server {row['valkey_cpu_ms_per_call']:.2f} ms/call; "
        else:
            spread = ""
        spread += ", ".join(f"{k}: {v}" for k, v in row["answers_by_worker"].items())
        lines.append(
            f"| {row['workers']} | {row['calls']} | {row['server_cpu_ms_per_call']:.2f} ms | {ratio:.2f}x | "
            f"{row['calls_per_s']:.0f} | {row['p50_ms']:.1f} ms | {row['p95_ms']:.1f} ms | {spread} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2", help="worker counts, the first is the baseline (1,2)")
    parser.add_argument("--fill", type=int, default=500, help="entries written before measuring (500)")
    parser.add_argument("--sessions", type=int, default=8, help="concurrent SDK client sessions (8)")
    parser.add_argument(
        "--store", choices=("sqlite", "valkey"), default="sqlite", help="entry store (sqlite)"
    )
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per configuration (2000)")
    parser.add_argument("--json", type=Path, help="also write every number to this file")
    args = parser.parse_args()
    rows = []
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memctl-bench-workers-")))
        valkey = stack.enter_context(valkey_server()) if args.store == "valkey" else None
        for run, count in enumerate(int(w) for w in args.workers.split(",")):
            print(f"{count} worker(s)", file=sys.stderr)
            measured = anyio.run(
                measure, count, args.fill, args.sessions, args.calls, tmp / str(run), valkey, run
            )
            rows.append(measured)
    print(report(rows, args.sessions, args.store))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "commit": git_commit(REPO)}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
