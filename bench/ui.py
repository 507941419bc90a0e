"""Benchmark `memctl ui`'s pages at 100k entries beside memory_search over MCP, same run.

Fills an embedded project with N entries (through the store's import) and a few knowledge
documents, then starts, as real subprocesses on loopback, `memctl ui` (logged in with its
one-time link) and `memctl serve --http`, and times, one request at a time:

  ui /entries         the entries list page (newest 50)
  ui /search?q=WORD   a search page: entries and knowledge ranked together (memctl search)
  mcp memory_search   the same words, 50 hits, through the MCP Python SDK client (the baseline)

For each: the app's own time from the page's Server-Timing header (the server time: the
store calls and the template) and the round trip the client saw, p50 and p95. MCP has no
Server-Timing: its round trip is the baseline for the pages' round trips. Both servers run
with MEMCTL_EMBEDDING_MODEL=none (lexical ranking), so neither loads a model.

    nice -n 10 uv run --frozen python bench/ui.py                  # 100k entries, 200 calls each
    nice -n 10 uv run --frozen python bench/ui.py --entries 2000 --calls 50
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx

from _env import clean_env, git_commit
from _fill import import_entries
from _mcp import call_tool, open_client
from _servers import free_port

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("deploy", "timeout", "cache", "retry", "schema", "token", "index", "backup", "queue", "shard")


def _records(n: int) -> Iterator[Any]:
    from memory_bridge.stores import Entry, EntryRecord

    stamp = "2026-01-01T00:00:00.000Z"
    rng = random.Random(19)
    for i in range(n):
        id = f"e-{i:06}"
        words = " ".join(rng.choices(WORDS, k=6))
        body = f"Entry {i} is about {words}. " * 4
        snapshot = {
            "title": f"Entry {i}: {words[:40]}",
            "body": body,
            "type": "decision",
            "tags": ["bench", f"t{i % 50}"],
            "source": "bench",
            "project": "",
            "updated": stamp,
            "operation": "created",
            "rev": 1,
        }
        entry = Entry(
            id, snapshot["title"], body, "decision", ("bench", f"t{i % 50}"), "bench", "", stamp, stamp, 0, ""
        )  # fmt: skip
        yield EntryRecord(id, entry, 1, (json.dumps(snapshot),), None)


async def _fill(project: Path, n: int) -> None:
    from memory_bridge import load_settings
    from memory_bridge.stores import DocMetadata, open_knowledge_store

    settings = load_settings(project=project, embedding_model="none")
    await import_entries(project, _records(n))
    knowledge = open_knowledge_store(settings)
    try:
        await knowledge.create_slot("knowledge")
        for word in WORDS:
            meta = DocMetadata(scope=settings.project_scope, atom_type="project-lore")
            await knowledge.upsert(
                "knowledge", f"{word}.md", f"What we know about {word}.", meta, origin="bench"
            )
    finally:
        await knowledge.close()


def _percentile(ordered: Sequence[float], q: float) -> float:
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": _percentile(ordered, 50), "p95_ms": _percentile(ordered, 95), "n": len(values)}


@contextmanager
def _process(args: list[str], log: Path) -> Iterator[subprocess.Popen[str]]:
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "memctl", *args],
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _wait(url: str, process: subprocess.Popen[str], log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the server exited: {log.read_text()[-2000:]}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not answer in 60 s: {log.read_text()[-2000:]}") from None
            time.sleep(0.1)


@contextmanager
def _ui(project: Path, log: Path) -> Iterator[httpx.Client]:
    """`memctl ui` started, and a client logged in through its one-time link."""
    with _process(["ui", "--project", str(project), "--json"], log) as process:
        assert process.stdout is not None
        text = ""
        while not text.rstrip().endswith("}"):
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"memctl ui printed no address: {log.read_text()[-2000:]}")
            text += line
        printed = json.loads(text)
        _wait(printed["url"] + "login", process, log)
        with httpx.Client(base_url=printed["url"], timeout=60, follow_redirects=True) as client:
            client.get(printed["login_url"]).raise_for_status()
            yield client


def _page(client: httpx.Client, path: str) -> tuple[float, float]:
    """Server-Timing and round trip of one page, in ms."""
    started = time.perf_counter()
    answer = client.get(path)
    elapsed = (time.perf_counter() - started) * 1000
    answer.raise_for_status()
    found = re.search(r"app;dur=([\d.]+)", answer.headers.get("server-timing", ""))
    if found is None or "<!doctype html>" not in answer.text:
        raise RuntimeError(f"{path}: not a page of memctl ui")
    return float(found.group(1)), elapsed


async def _mcp_searches(url: str, queries: list[str], warmup: int) -> list[float]:
    async with AsyncExitStack() as stack:
        client = await open_client(stack, url)
        times: list[float] = []
        for index, query in enumerate(queries):
            started = time.perf_counter()
            result = await call_tool(client, "memory_search", {"query": query, "limit": 50})
            elapsed = (time.perf_counter() - started) * 1000
            if not result.get("count"):
                raise RuntimeError(f"memory_search found nothing for {query!r}")
            if index >= warmup:
                times.append(elapsed)
        return times


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=200, help="timed requests per operation")
    parser.add_argument("--json", type=Path, help="also write every number to this file")
    options = parser.parse_args()
    n, calls, warmup = options.entries, options.calls, 10
    rng = random.Random(7)
    queries = [rng.choice(WORDS) for _ in range(calls + warmup)]
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="memctl-bench-ui-") as tmp:
        project = Path(tmp) / "project"
        print(f"filling {n} entries and {len(WORDS)} documents ...", file=sys.stderr, flush=True)
        fill = time.perf_counter()
        anyio.run(_fill, project, n)
        print(f"  filled in {time.perf_counter() - fill:.1f} s", file=sys.stderr, flush=True)
        # the baseline first: the token memctl ui needs would switch the bridge's auth on
        port = free_port()
        log = Path(tmp) / "bridge.log"
        with _process(["serve", "--project", str(project), "--http", "--port", str(port)], log) as bridge:
            _wait(f"http://127.0.0.1:{port}/health", bridge, log)
            print("mcp memory_search ...", file=sys.stderr, flush=True)
            times = anyio.run(_mcp_searches, f"http://127.0.0.1:{port}/mcp", queries, warmup)
            results["mcp memory_search (baseline)"] = {"round trip": _stats(times)}

        rotated = subprocess.run(
            [sys.executable, "-m", "memctl", "token", "rotate", "--project", str(project), "--json"],
            env=clean_env(),
            capture_output=True,
            text=True,
        )
        if rotated.returncode != 0:
            raise RuntimeError(f"memctl token rotate failed: {rotated.stdout}{rotated.stderr}")

        with _ui(project, Path(tmp) / "ui.log") as client:
            for name, paths in (
                ("ui /entries", ["/entries"] * (calls + warmup)),
                ("ui /search?q=WORD", [f"/search?q={q}" for q in queries]),
            ):
                print(f"{name} ...", file=sys.stderr, flush=True)
                timed = [_page(client, path) for path in paths][warmup:]
                results[name] = {
                    "server": _stats([server for server, _ in timed]),
                    "round trip": _stats([trip for _, trip in timed]),
                }

    print(
        f"\nmemctl ui at {n} entries, {calls} requests each, one at a time; commit {git_commit(ROOT)}, "
        f"Python {platform.python_version()}\n"
    )
    print(f"{'operation':<32} {'server p50':>11} {'server p95':>11} {'trip p50':>9} {'trip p95':>9}  (ms)")
    print(f"{'-' * 32} {'-' * 11} {'-' * 11} {'-' * 9} {'-' * 9}")
    for name, figures in results.items():
        server = figures.get("server")
        trip = figures["round trip"]
        cells = [f"{server['p50_ms']:.2f}", f"{server['p95_ms']:.2f}"] if server else ["-", "-"]
        print(f"{name:<32} {cells[0]:>11} {cells[1]:>11} {trip['p50_ms']:>9.2f} {trip['p95_ms']:>9.2f}")
    print(
        "\nserver: the page's Server-Timing (store calls and template); trip: as the client saw it. "
        "The search page also ranks knowledge documents; memory_search ranks entries only."
    )
    if options.json:
        report = {"entries": n, "calls": calls, "commit": git_commit(ROOT), "results": results}
        options.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
