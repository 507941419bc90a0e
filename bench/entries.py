"""Benchmark memctl's entry tools through a real MCP client over streamable HTTP.

For each entry store (the embedded SQLite store, Valkey on a valkey-server the benchmark
starts itself, and Valkey on a three-node Valkey Cluster it starts), starts `memctl serve
--http` as a subprocess on a fresh project, fills the store through memory_set up to each
size (1k, 10k, 100k by default), and at each size measures memory_get, memory_set and
memory_search (tag + query, and query alone) at concurrency 1 and 8, next to an MCP ping
(the protocol floor); on Valkey both searches again with the word index switched off,
i.e. the scan every search made before it. Also reports the throughput scaling from 1 to 8
sessions, lost updates under 32 sessions doing read-modify-write on one entry, fill-write
latency at the start against the end of the fill, the stdio cold start against a minimal
SDK server, the bridge's peak RSS, how long each store took, and
PASS/FAIL against the project's targets, per store.

    uv run --frozen python bench/entries.py --quick
    uv run --frozen python bench/entries.py --stores valkey --json bench-results.json

See bench/README.md for what every number means.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import httpx
import valkey
from mcp import Client, StdioServerParameters
from valkey.cluster import ClusterNode, ValkeyCluster

from _env import git_commit
from _mcp import BenchError, call_tool, open_client
from _proc import ProcStats
from _rmw import lost_updates
from _servers import ValkeyClusterServer, ValkeyServer, free_port, valkey_cluster, valkey_server

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (200, 1_000)
CONCURRENCY = (1, 8)
FILL_CONCURRENCY = 8
FILL_WINDOW = 1_000
COLD_START_RUNS = 5
STORES = ("sqlite", "valkey", "valkey-cluster")
CLUSTER_SHARDS = 16  # memory_bridge.stores.valkey._keys.SHARDS: each shard has its own `memidx`
SCALING_OPS = ("ping", "memory_get", "memory_search", "memory_set")
SCALING_TARGET_OPS = ("memory_get", "memory_set")
RMW_SESSIONS = 32
RMW_WRITES = 300
RMW_CAP_S = 120.0
RMW_QUICK_CAP_S = 30.0
DRAIN_CAP_S = 1800.0  # --drain-seconds: how long the run waits for the entries to be embedded
SEED = 20_240_601
ZIPF_EXPONENT = 0.8

# --- the corpus -----------------------------------------------------------------------------


def word_list(text: str) -> tuple[str, ...]:
    return tuple(text.split())


VOCABULARY = word_list(
    """
    access account action adapter address agent alert alias allocation analysis api archive
    argument array assertion async attribute audit auth backend backoff backup batch benchmark
    binary block body boolean boundary branch breaking bridge broker buffer build bundle cache
    callback canary capacity certificate change channel checkpoint checksum chunk cipher circuit
    claim class cleanup cli client clock cluster codec column command commit compaction compiler
    component config conflict connection consensus constraint consumer container context contract
    cookie coordinator coverage crash cron cursor daemon dashboard data database deadline deadlock
    debug decoder default delete dependency deploy deprecation diff digest directory disk dispatch
    dns docker document domain download draft driver duration edge encoder endpoint entry enum
    environment error event eviction exception executor expiry export extension failover feature
    fetch field file filter firewall fixture flag flaky fork format frame function gateway
    generator git gradient graph grpc handler hash header health heap hook host hotfix http
    identity image import incident index ingress init inline input insert instance integration
    interface interval invariant iterator job join json kernel key lambda latency layer lease
    library limit linter listener load lock log lookup loop manifest mapping marker memory merge
    message metadata method metric middleware migration mock module monitor mount mutex namespace
    network node notification null object offset oncall operator optimizer option origin outage
    output overflow owner package page pagination panic parser partition patch path payload peer
    permission pipeline plugin pod policy pool port postgres prefetch primary priority probe
    process profile prompt protocol proxy publisher query queue quota race rate reader rebase
    record recovery redis refactor region registry release replica report repository request
    resolver resource response retry revision role rollback rollout route router runtime sandbox
    scaling schema scheduler scope script secret segment selector semaphore serializer server
    service session shard signal snapshot socket source span spec sqlite stack staging state
    storage stream string subscriber suite swap sync syntax table tag task template tenant test
    thread throttle ticket timeout timestamp token topic trace transaction transport trigger tuple
    type upgrade upload uptime user validation value variable vector vendor version volume wal
    warning webhook worker workflow write yaml zone
"""
)

TAGS = word_list(
    """
    api auth backend billing build cache ci cli config database debugging deploy docs frontend
    gotcha http infra ingest k8s latency logging memory migration ml mobile monitoring networking oncall
    onboarding ops performance postgres python queue redis refactor release reliability rust
    search security sqlite storage style testing tooling typescript ui upgrade workflow
"""
)

TYPES = ("pattern", "decision", "reference", "feedback", "incident")
PROJECTS = ("atlas", "beacon", "cobalt")


class Corpus:
    """Deterministic, realistic-looking entries, lookups and queries from a seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        # Zipf-like word frequencies, as in real text: a few words are everywhere, most are rare.
        self.by_rank = self.rng.sample(VOCABULARY, len(VOCABULARY))
        self.weights = [1 / (rank + 1) ** ZIPF_EXPONENT for rank in range(len(self.by_rank))]

    def words(self, count: int) -> str:
        return " ".join(self.rng.choices(self.by_rank, self.weights, k=count))

    def entry(self, entry_id: str) -> dict[str, Any]:
        """A memory_set argument set: 3-8 word title, 20-120 word body, 1-4 tags."""
        return {
            "id": entry_id,
            "title": self.words(self.rng.randint(3, 8)).capitalize(),
            "body": self.words(self.rng.randint(20, 120)) + ".",
            "type": self.rng.choice(TYPES),
            "tags": self.rng.sample(TAGS, self.rng.randint(1, 4)),
            "project": self.rng.choice(PROJECTS),
            "source": "bench",
        }

    def existing_id(self, count: int) -> str:
        return fill_id(self.rng.randrange(count))

    def search(self) -> dict[str, Any]:
        """memory_search arguments: one tag and a 1-2 word query (words drawn uniformly)."""
        query = " ".join(self.rng.sample(VOCABULARY, self.rng.randint(1, 2)))
        return {"tags": [self.rng.choice(TAGS)], "query": query}

    def text_search(self) -> dict[str, Any]:
        """memory_search arguments: a 1-2 word query alone, over every entry."""
        return {"query": " ".join(self.rng.sample(VOCABULARY, self.rng.randint(1, 2)))}


def fill_id(index: int) -> str:
    return f"e-{index:06d}"


def insert_id(index: int) -> str:
    """Ids of entries inserted while measuring memory_set; deleted again afterwards."""
    return f"x-{index:06d}"


# --- statistics -----------------------------------------------------------------------------


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of sorted data, linearly interpolated."""
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass
class Summary:
    """Latencies (ms) of a batch of calls, its throughput and CPU cost per call."""

    calls: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    calls_per_s: float | None = None
    bridge_cpu_ms_per_call: float | None = None
    store_cpu_ms_per_call: float | None = None  # the valkey-server's; None for SQLite (in-process)
    client_cpu_ms_per_call: float | None = None

    @classmethod
    def of(cls, seconds: Sequence[float], wall_s: float | None = None) -> Summary:
        """Summarize call durations (s); throughput only when they ran alone for `wall_s`."""
        ordered = sorted(s * 1000 for s in seconds)
        return cls(
            calls=len(ordered),
            p50_ms=percentile(ordered, 50),
            p95_ms=percentile(ordered, 95),
            p99_ms=percentile(ordered, 99),
            mean_ms=statistics.fmean(ordered),
            calls_per_s=len(ordered) / wall_s if wall_s else None,
        )


# --- the bridge process ---------------------------------------------------------------------


def bridge_env(embedding_model: str = "none") -> dict[str, str]:
    """Our environment minus any MEMCTL_* / MEMORY_MCP_* settings, so the bridge runs on defaults,
    except the embedding model: background embedding of the filled entries would compete with
    the measured calls for the two cores (memory_search's ranking by meaning is measured by
    bench/retrieval.py; the default model's own cost by `--embedding`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "MEMORY_MCP_"))}
    env["MEMCTL_EMBEDDING_MODEL"] = embedding_model
    return env


def serve_args(project: Path) -> list[str]:
    return ["-m", "memctl", "serve", "--project", str(project)]


@dataclass
class Backend:
    """An entry store to benchmark: the --entry-store URLs to give the bridge, and its server."""

    name: str
    http_url: str | None = None  # None: the default, the project's embedded SQLite store
    stdio_url: str | None = None  # a fresh, empty store for the stdio cold start
    server: ValkeyServer | ValkeyClusterServer | None = None

    def entry_store_args(self, url: str | None) -> list[str]:
        return [] if url is None else ["--entry-store", url]

    @property
    def has_word_index(self) -> bool:
        return self.server is not None

    def word_index(self, on: bool) -> None:
        """Switch the Valkey store's word index off (searches scan every entry, as before it
        existed) or back on: the store reads its `memidx` marker on every search (on a
        cluster, every shard's)."""
        source, target = ("memidx-bench-off", "memidx") if on else ("memidx", "memidx-bench-off")
        if isinstance(self.server, ValkeyServer):
            with valkey.Valkey(host="127.0.0.1", port=self.server.port, db=0) as client:
                client.rename(source, target)
            return
        assert self.server is not None
        nodes = [ClusterNode("127.0.0.1", n.port) for n in self.server.nodes]
        with ValkeyCluster(startup_nodes=nodes) as client:
            for shard in range(CLUSTER_SHARDS):
                tag = f"{{memctl-{shard:02d}}}"
                client.rename(tag + source, tag + target)

    @property
    def server_stats(self) -> ProcStats | None:
        return None if self.server is None else self.server.stats


@contextmanager
def backend(name: str) -> Iterator[Backend]:
    """The store named by --stores; for valkey, a valkey-server of our own, stopped afterwards."""
    if name == "sqlite":
        yield Backend(name)
        return
    if name == "valkey-cluster":
        with valkey_cluster() as cluster:
            yield Backend(name, http_url=cluster.url(0), stdio_url=cluster.url(1), server=cluster)
        return
    with valkey_server() as server:
        yield Backend(name, http_url=server.url(0), stdio_url=server.url(1), server=server)


@dataclass
class HttpBridge:
    process: subprocess.Popen[bytes]
    base_url: str
    store_server: ProcStats | None = None  # the store's own server process, if it has one

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    def peak_rss_kib(self) -> int:
        """VmHWM, the bridge's resident set high-water mark, from /proc."""
        return ProcStats(self.process.pid).peak_rss_kib()

    def cpu_seconds(self) -> float:
        """User + system CPU time the bridge has used so far."""
        return ProcStats(self.process.pid).cpu_seconds()

    def store_cpu_seconds(self) -> float | None:
        """CPU time the store's server has used so far; None when the store is in-process."""
        return None if self.store_server is None else self.store_server.cpu_seconds()


def wait_healthy(process: subprocess.Popen[bytes], base_url: str, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"bridge exited ({process.returncode}): {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{base_url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"bridge not healthy within {timeout:.0f} s: {log.read_text()[-2000:]}")
        time.sleep(0.05)


@contextmanager
def http_bridge(project: Path, store: Backend, embedding_model: str = "none") -> Iterator[HttpBridge]:
    """Run `memctl serve --http` on a free loopback port; its stderr goes to project/bridge.log."""
    port = free_port()
    project.mkdir(parents=True, exist_ok=True)
    log = project / "bridge.log"
    store_args = store.entry_store_args(store.http_url)
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, *serve_args(project), "--http", "--port", str(port), *store_args],
            env=bridge_env(embedding_model),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(process, base_url, log)
        yield HttpBridge(process, base_url, store.server_stats)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- MCP sessions ---------------------------------------------------------------------------

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LEGACY_PROTOCOL = "2025-11-25"


@dataclass
class RawSession:
    """An MCP session spoken with bare httpx POSTs, no SDK client: the transport's own floor."""

    http: httpx.AsyncClient
    url: str
    headers: dict[str, str]

    @classmethod
    async def open(cls, stack: AsyncExitStack, url: str) -> RawSession:
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=30))
        initialize = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY_PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "memctl-bench", "version": "1"},
            },
        }
        response = await http.post(url, headers=MCP_HEADERS, json=initialize)
        response.raise_for_status()
        session = cls(http, url, {**MCP_HEADERS, "Mcp-Session-Id": response.headers["mcp-session-id"]})
        session.headers["Mcp-Protocol-Version"] = LEGACY_PROTOCOL
        await session.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return session

    async def post(self, message: dict[str, Any]) -> str:
        response = await self.http.post(self.url, headers=self.headers, json=message)
        response.raise_for_status()
        return response.text

    async def ping(self) -> None:
        answer = await self.post({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        if '"result"' not in answer:
            raise BenchError(f"raw ping failed: {answer}")


# --- driving calls --------------------------------------------------------------------------

S = TypeVar("S")
Call = Callable[[S, int], Awaitable[None]]


@dataclass
class Run:
    """Per-call latencies (s, indexed by call number), wall time and CPU time of one batch."""

    latencies: list[float]
    wall_s: float
    bridge_cpu_s: float
    client_cpu_s: float
    store_cpu_s: float | None = None

    def summary(self) -> Summary:
        summary = Summary.of(self.latencies, self.wall_s)
        calls = len(self.latencies)
        summary.bridge_cpu_ms_per_call = 1000 * self.bridge_cpu_s / calls
        summary.client_cpu_ms_per_call = 1000 * self.client_cpu_s / calls
        if self.store_cpu_s is not None:
            summary.store_cpu_ms_per_call = 1000 * self.store_cpu_s / calls
        return summary

    def latency_of(self, numbers: range) -> Summary:
        """Latency of some of the calls (throughput and CPU are only known for the batch)."""
        return Summary.of([self.latencies[n] for n in numbers])


async def drive(bridge: HttpBridge, sessions: Sequence[S], call: Call[S], total: int) -> Run:
    """Make `total` calls, numbered 0..total-1, spread over `sessions` (one task each)."""
    latencies = [0.0] * total
    numbers = iter(range(total))  # shared: each task takes the next number

    async def worker(session: S) -> None:
        for number in numbers:
            started = time.perf_counter()
            try:
                await call(session, number)
            except Exception as error:  # said now: closing the sessions can raise another on top
                progress(f"  call {number} failed: {error!r}")
                raise
            latencies[number] = time.perf_counter() - started

    bridge_cpu, store_cpu, client_cpu = bridge.cpu_seconds(), bridge.store_cpu_seconds(), time.process_time()
    started = time.perf_counter()
    async with anyio.create_task_group() as tasks:
        for session in sessions:
            tasks.start_soon(worker, session)
    wall = time.perf_counter() - started
    run = Run(latencies, wall, bridge.cpu_seconds() - bridge_cpu, time.process_time() - client_cpu)
    if store_cpu is not None and (store_cpu_after := bridge.store_cpu_seconds()) is not None:
        run.store_cpu_s = store_cpu_after - store_cpu
    return run


def writer(corpus: Corpus, id_of: Callable[[int], str], first: int) -> Call[Client]:
    """memory_set of new entries id_of(first), id_of(first + 1), ..."""

    async def call(client: Client, number: int) -> None:
        await call_tool(client, "memory_set", corpus.entry(id_of(first + number)))

    return call


def mixed_writer(corpus: Corpus, count: int, first_insert: int) -> Call[Client]:
    """memory_set: even calls update a random existing entry, odd calls insert a new one."""

    async def call(client: Client, number: int) -> None:
        entry_id = insert_id(first_insert + number // 2) if number % 2 else corpus.existing_id(count)
        await call_tool(client, "memory_set", corpus.entry(entry_id))

    return call


def deleter(first_insert: int) -> Call[Client]:
    async def call(client: Client, number: int) -> None:
        await call_tool(client, "memory_delete", {"id": insert_id(first_insert + number)})

    return call


def getter(corpus: Corpus, count: int) -> Call[Client]:
    async def call(client: Client, _: int) -> None:
        await call_tool(client, "memory_get", {"id": corpus.existing_id(count)})

    return call


def searcher(corpus: Corpus, text_only: bool = False) -> Call[Client]:
    async def call(client: Client, _: int) -> None:
        await call_tool(client, "memory_search", corpus.text_search() if text_only else corpus.search())

    return call


async def sdk_ping(client: Client, _: int) -> None:
    # ClientSession.send_ping: Client.send_ping warns (ping is gone from the 2026-07-28 protocol).
    await client.session.send_ping()


async def raw_ping(session: RawSession, _: int) -> None:
    await session.ping()


# --- the benchmark --------------------------------------------------------------------------


@dataclass
class Config:
    sizes: tuple[int, ...]
    calls: int
    json_path: Path | None
    stores: tuple[str, ...] = STORES
    rmw_writes: int = RMW_WRITES
    rmw_cap_s: float = RMW_CAP_S
    seed: int = SEED
    embedding: bool = False
    drain_s: float = DRAIN_CAP_S
    scan: bool = True


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class HttpBench:
    """One bridge, its client sessions, and what the run has written so far."""

    bridge: HttpBridge
    clients: list[Client]
    corpus: Corpus
    calls: int
    store: Backend
    scan: bool = True
    entries: int = 0
    inserted: int = 0
    fill_latencies: list[float] = field(default_factory=list)
    fill_segments: list[dict[str, Any]] = field(default_factory=list)

    @property
    def warmup(self) -> int:
        return min(100, max(self.calls // 10, 8))

    async def entry_count(self) -> int:
        return int((await call_tool(self.clients[0], "memory_list", {"limit": 1}))["total"])

    async def check_count(self) -> None:
        if (actual := await self.entry_count()) != self.entries:
            raise BenchError(f"the store holds {actual} entries, expected {self.entries}")

    async def insert_and_delete(self, sessions: Sequence[Client], call: Call[Client], count: int) -> Run:
        """Run `count` calls that insert count // 2 (or count) x- entries, then delete those."""
        first = self.inserted
        run = await drive(self.bridge, sessions, call, count)
        self.inserted += (await self.entry_count()) - self.entries
        await drive(self.bridge, self.clients, deleter(first), self.inserted - first)
        await self.check_count()
        return run

    async def warm_up(self) -> None:
        """Exercise the write path once before the fill, so its first window is not a cold start."""
        clients = self.clients[:FILL_CONCURRENCY]
        await self.insert_and_delete(clients, writer(self.corpus, insert_id, self.inserted), 100)

    async def fill(self, to: int) -> None:
        """memory_set new entries until the store holds `to`, at FILL_CONCURRENCY."""
        if to <= self.entries:
            return
        count = to - self.entries
        clients = self.clients[:FILL_CONCURRENCY]
        run = await drive(self.bridge, clients, writer(self.corpus, fill_id, self.entries), count)
        self.fill_latencies.extend(run.latencies)
        self.fill_segments.append(
            {"from": self.entries, "to": to, "wall_s": run.wall_s, **asdict(run.summary())}
        )
        progress(f"  filled {self.entries:,} -> {to:,} in {run.wall_s:.1f} s ({count / run.wall_s:,.0f}/s)")
        self.entries = to
        await self.check_count()

    async def measure(self, sessions: Sequence[S], make_call: Callable[[], Call[S]]) -> dict[str, Summary]:
        """Warm up, then make `calls` calls at each concurrency."""
        results = {}
        for concurrency in CONCURRENCY:
            await drive(self.bridge, sessions[:concurrency], make_call(), self.warmup)
            run = await drive(self.bridge, sessions[:concurrency], make_call(), self.calls)
            results[str(concurrency)] = run.summary()
        return results

    async def measure_writes(self) -> dict[str, dict[str, Summary]]:
        """memory_set, half updates and half inserts, at each concurrency; inserts deleted after."""
        ops: dict[str, dict[str, Summary]] = {
            "memory_set": {},
            "memory_set update": {},
            "memory_set insert": {},
        }
        for concurrency in CONCURRENCY:
            clients = self.clients[:concurrency]
            for count in (self.warmup, self.calls):
                call = mixed_writer(self.corpus, self.entries, self.inserted)
                run = await self.insert_and_delete(clients, call, count)
            key = str(concurrency)
            ops["memory_set"][key] = run.summary()
            ops["memory_set update"][key] = run.latency_of(range(0, self.calls, 2))
            ops["memory_set insert"][key] = run.latency_of(range(1, self.calls, 2))
        return ops

    async def measure_size(self) -> dict[str, dict[str, Summary]]:
        """Every operation at the current size, at concurrency 1 and 8."""
        n = self.entries
        progress("  ping")
        async with AsyncExitStack() as stack:  # fresh: a session idle for 30 min is closed
            raw = [await RawSession.open(stack, self.bridge.mcp_url) for _ in range(max(CONCURRENCY))]
            ops = {
                "ping": await self.measure(self.clients, lambda: sdk_ping),
                "ping (raw HTTP)": await self.measure(raw, lambda: raw_ping),
            }
        progress("  memory_get")
        ops["memory_get"] = await self.measure(self.clients, lambda: getter(self.corpus, n))
        progress("  memory_search")
        ops["memory_search"] = await self.measure(self.clients, lambda: searcher(self.corpus))
        ops["memory_search text"] = await self.measure(self.clients, lambda: searcher(self.corpus, True))
        if self.store.has_word_index and self.scan:
            progress("  memory_search, word index off (scan)")
            self.store.word_index(False)
            try:
                ops["memory_search (scan)"] = await self.measure(self.clients, lambda: searcher(self.corpus))
                ops["memory_search text (scan)"] = await self.measure(
                    self.clients, lambda: searcher(self.corpus, True)
                )
            finally:
                self.store.word_index(True)
        progress("  memory_set")
        ops.update(await self.measure_writes())
        return ops

    def fill_drift(self) -> dict[str, Any]:
        """Fill-write latency over the first window of writes against the last one."""
        latencies = self.fill_latencies
        window = min(FILL_WINDOW, max(1, len(latencies) // 10))
        start = Summary.of(latencies[:window])
        end = Summary.of(latencies[-window:])
        return {
            "window": window,
            "writes": len(latencies),
            "start": asdict(start),
            "end": asdict(end),
            "p50_ratio": end.p50_ms / start.p50_ms,
            "segments": self.fill_segments,
        }


async def http_benchmark(config: Config, project: Path, store: Backend) -> dict[str, Any]:
    """Fill and measure at every size over HTTP, then the lost-updates run; the bridge's peak RSS."""
    sizes: list[dict[str, Any]] = []
    sessions = max(*CONCURRENCY, FILL_CONCURRENCY)
    with http_bridge(project, store) as bridge:
        async with AsyncExitStack() as stack:
            clients = [await open_client(stack, bridge.mcp_url) for _ in range(sessions)]
            bench = HttpBench(bridge, clients, Corpus(config.seed), config.calls, store, config.scan)
            await bench.warm_up()
            for n in config.sizes:
                progress(f"N = {n:,}")
                await bench.fill(n)
                ops = await bench.measure_size()
                sizes.append(
                    {"n": n, "ops": {op: {c: asdict(s) for c, s in by.items()} for op, by in ops.items()}}
                )
        progress(f"lost updates ({RMW_SESSIONS} sessions, read-modify-write on one entry)")
        rmw = await lost_updates(bridge.mcp_url, RMW_SESSIONS, config.rmw_writes, config.rmw_cap_s)
        rss = bridge.peak_rss_kib()
    return {"sizes": sizes, "fill": bench.fill_drift(), "lost_updates": rmw, "bridge_peak_rss_kib": rss}


# --- the default embedding model's cost ------------------------------------------------------

EMBEDDING_MODELS = ("none", "minilm")  # the baseline first, then the default


def pending_vectors(project: Path) -> int:
    """Entries the bridge has yet to embed, read from its database (0 before it exists)."""
    import sqlite3

    path = next(project.rglob("entries.db"), None)
    if path is None:
        return 0
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as conn:
        try:
            return int(conn.execute("SELECT count(*) FROM pending_vectors").fetchone()[0])
        except sqlite3.OperationalError:  # no table yet
            return 0


async def embedding_run(config: Config, project: Path, model: str) -> dict[str, Any]:
    """Fill the embedded store with `model` as the bridge's embedding model; memory_get right
    after the fill (while the entries are being embedded); the bridge CPU per write including
    embedding them all; the bridge's peak RSS."""
    n = config.sizes[-1]
    with http_bridge(project, Backend("sqlite"), model) as bridge:
        async with AsyncExitStack() as stack:
            clients = [await open_client(stack, bridge.mcp_url) for _ in range(FILL_CONCURRENCY)]
            bench = HttpBench(bridge, clients, Corpus(config.seed), config.calls, Backend("sqlite"))
            await bench.warm_up()
            started_cpu, started = bridge.cpu_seconds(), time.perf_counter()
            await bench.fill(n)
            fill_cpu = bridge.cpu_seconds() - started_cpu
            get = await drive(bridge, clients[:1], getter(bench.corpus, n), config.calls)
            while (
                model != "none" and pending_vectors(project) and time.perf_counter() - started < DRAIN_CAP_S
            ):
                await anyio.sleep(0.5)
            drained_s = time.perf_counter() - started
            total_cpu = bridge.cpu_seconds() - started_cpu - get.bridge_cpu_s
            left = pending_vectors(project) if model != "none" else 0
        rss = bridge.peak_rss_kib()
    return {
        "model": model,
        "n": n,
        "fill_cpu_ms_per_write": 1000 * fill_cpu / n,
        "cpu_ms_per_write": 1000 * total_cpu / n,
        "memory_get_after_fill": asdict(get.summary()),
        "embedded_s": drained_s,
        "left_unembedded": left,
        "bridge_peak_rss_kib": rss,
    }


async def embedding_benchmark(config: Config) -> dict[str, Any]:
    """The embedded store with no embedding model (the baseline) and with the default one."""
    runs = {}
    with tempfile.TemporaryDirectory(prefix="memctl-bench-") as tmp:
        for model in EMBEDDING_MODELS:
            progress(f"--- sqlite store, embedding_model = {model} ---")
            runs[model] = await embedding_run(config, Path(tmp) / model, model)
    return runs


def embedding_report(runs: dict[str, dict[str, Any]]) -> str:
    """One row per model; the default's figures as a ratio of the baseline's."""
    rows = [
        [
            model,
            f"{r['n']:,}",
            mib(r["bridge_peak_rss_kib"]),
            f"{r['cpu_ms_per_write']:.2f}",
            f"{r['fill_cpu_ms_per_write']:.2f}",
            f"{r['memory_get_after_fill']['p50_ms']:.2f}",
            f"{r['memory_get_after_fill']['p95_ms']:.2f}",
            f"{r['embedded_s']:.0f}",
            str(r["left_unembedded"]),
        ]
        for model, r in runs.items()
    ]
    base, default = runs["none"], runs["minilm"]
    ratio = default["memory_get_after_fill"]["p50_ms"] / base["memory_get_after_fill"]["p50_ms"]
    return "\n".join(
        [
            "\n== the default embedding model's cost (embedded store, same run) ==",
            format_table(
                [
                    "embedding_model",
                    "N",
                    "peak RSS MiB",
                    "bridge cpu ms/write (all embedded)",
                    "during fill",
                    "memory_get p50 after fill",
                    "p95",
                    "fill+embed s",
                    "left",
                ],
                rows,
            ),
            f"targets: peak RSS {mib(default['bridge_peak_rss_kib'])} MiB (<= 200), "
            f"cpu/write {default['cpu_ms_per_write']:.2f} ms (<= 5), memory_get p50 {ratio:.2f}x the "
            "no-embedding figure (<= 1.2x)",
        ]
    )


# --- throughput scaling ---------------------------------------------------------------------


def usable_cores() -> int:
    """CPUs this process may run on (the bridge and the store server inherit the same set)."""
    return len(os.sched_getaffinity(0))


def cpu_ceiling(summary: dict[str, Any], cores: int) -> float:
    """The calls/s the CPU allows, from a batch's CPU cost per call.

    The client, the bridge and valkey-server each run one event loop, so each is held to
    about one core (SQLite's work in the bridge's threads aside); together they share `cores`.
    """
    per_process: list[float] = [
        float(summary[key])
        for key in ("client_cpu_ms_per_call", "bridge_cpu_ms_per_call", "store_cpu_ms_per_call")
        if summary[key]
    ]
    return min(cores * 1000 / sum(per_process), *(1000 / ms for ms in per_process))


def scaling(size: dict[str, Any], cores: int) -> dict[str, dict[str, float]]:
    """calls/s at concurrency 8 over calls/s at concurrency 1, per operation, at one size."""
    low, high = (str(c) for c in CONCURRENCY)
    result = {}
    for op in SCALING_OPS:
        one, many = size["ops"][op][low], size["ops"][op][high]
        ceiling = cpu_ceiling(many, cores)
        result[op] = {
            "c1_calls_per_s": one["calls_per_s"],
            "c8_calls_per_s": many["calls_per_s"],
            "ratio": many["calls_per_s"] / one["calls_per_s"],
            "cpu_ceiling_calls_per_s": ceiling,
            "cpu_ceiling_ratio": ceiling / one["calls_per_s"],
        }
    return result


# --- stdio cold start -----------------------------------------------------------------------

MINIMAL_SERVER = textwrap.dedent(
    """
    from mcp.server.mcpserver import MCPServer

    mcp = MCPServer("x")


    @mcp.tool()
    def echo(text: str) -> str:
        return text


    mcp.run()
    """
)


async def time_stdio_start(params: StdioServerParameters) -> float:
    """Seconds from spawning the server to its answer to initialize."""
    started = time.perf_counter()
    async with Client(params, mode="legacy"):
        elapsed = time.perf_counter() - started
    return elapsed


async def cold_starts(params: StdioServerParameters, runs: int) -> dict[str, Any]:
    times = [await time_stdio_start(params) for _ in range(runs)]
    return {"runs_s": times, "median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


async def memctl_cold_start(project: Path, store: Backend) -> dict[str, Any]:
    """memctl's stdio cold start on a fresh store (the first run creates it)."""
    project.mkdir(parents=True)
    args = [*serve_args(project), *store.entry_store_args(store.stdio_url)]
    params = StdioServerParameters(command=sys.executable, args=args, env=bridge_env(), cwd=project)
    progress("stdio cold start")
    return await cold_starts(params, COLD_START_RUNS)


async def sdk_cold_start(workdir: Path) -> dict[str, Any]:
    """The stdio cold start of a minimal SDK server: the floor memctl's is read against."""
    script = workdir / "minimal_server.py"
    script.write_text(MINIMAL_SERVER)
    params = StdioServerParameters(command=sys.executable, args=[str(script)], env=bridge_env(), cwd=workdir)
    progress("stdio cold start, minimal SDK server")
    return await cold_starts(params, COLD_START_RUNS)


# --- one store, all stores ------------------------------------------------------------------


async def store_benchmark(config: Config, workdir: Path, store: Backend) -> dict[str, Any]:
    """Everything measured for one entry store: HTTP sizes, scaling, lost updates, stdio, RSS."""
    progress(f"--- {store.name} store ---")
    results = await http_benchmark(config, workdir / "http-project", store)
    results["scaling"] = scaling(results["sizes"][-1], usable_cores())
    results["stdio"] = await memctl_cold_start(workdir / "stdio-project", store)
    if store.server is not None:
        results["server"] = store.server.describe()
        results["store_server_peak_rss_kib"] = store.server.stats.peak_rss_kib()
    return results


async def run_benchmark(config: Config) -> dict[str, Any]:
    """Each store in turn (its own bridge and, for valkey, its own server), then the SDK floor."""
    results: dict[str, Any] = {"stores": {}}
    with tempfile.TemporaryDirectory(prefix="memctl-bench-") as tmp:
        for name in config.stores:
            started = time.perf_counter()
            with backend(name) as store:
                workdir = Path(tmp) / name
                workdir.mkdir()
                results["stores"][name] = await store_benchmark(config, workdir, store)
            results["stores"][name]["elapsed_s"] = time.perf_counter() - started
        results["stdio_sdk_minimal"] = await sdk_cold_start(Path(tmp))
    return results


# --- targets --------------------------------------------------------------------------------


@dataclass
class Target:
    name: str
    value: float
    limit: float
    unit: str
    comparison: Literal["<=", ">=", "=="] = "<="
    digits: int = 2

    @property
    def passed(self) -> bool:
        if self.comparison == "==":
            return self.value == self.limit
        return self.value <= self.limit if self.comparison == "<=" else self.value >= self.limit

    def measured(self) -> str:
        return f"{self.value:.{self.digits}f} {self.unit}".strip()

    def bound(self) -> str:
        return f"{self.comparison} {self.limit:g} {self.unit}".strip()


def op_stat(results: dict[str, Any], n_index: int, op: str, stat: str, concurrency: int = 1) -> float:
    return float(results["sizes"][n_index]["ops"][op][str(concurrency)][stat])


def targets(results: dict[str, Any]) -> list[Target]:
    """The issue's targets for one store (defined at 100k entries; checked at the largest size run)."""
    sizes = [s["n"] for s in results["sizes"]]
    top, base = f"{sizes[-1]:,}", f"{sizes[0]:,}"
    set_top = op_stat(results, -1, "memory_set", "p50_ms")
    set_base = op_stat(results, 0, "memory_set", "p50_ms")
    low, high = CONCURRENCY
    scaled = [
        Target(f"{op} calls/s at {top}, c={high} / c={low}", results["scaling"][op]["ratio"], 3, "x", ">=")
        for op in SCALING_TARGET_OPS
    ]
    return [
        Target(f"memory_get p50 at {top}, c=1", op_stat(results, -1, "memory_get", "p50_ms"), 3, "ms"),
        Target(f"memory_set p50 at {top}, c=1", set_top, 3, "ms"),
        Target(f"memory_search p95 at {top}, c=1", op_stat(results, -1, "memory_search", "p95_ms"), 20, "ms"),
        Target(f"memory_set p50 at {top} / at {base}, c=1", set_top / set_base, 1.2, "x"),
        Target("fill write p50, last window / first window", results["fill"]["p50_ratio"], 1.2, "x"),
        Target("stdio cold start, median", results["stdio"]["median_s"] * 1000, 1000, "ms"),
        *scaled,
        Target(
            f"lost updates, {RMW_SESSIONS} sessions read-modify-write",
            results["lost_updates"]["lost_updates"],
            0,
            "",
            "==",  # below 0 would be as wrong: a write counted twice, or applied unreported
            digits=0,
        ),
    ]


VALKEY_STORES = ("valkey", "valkey-cluster")


def valkey_targets(stores: dict[str, Any]) -> list[Target]:
    """Issue 36's Valkey targets at the largest size run: text-only search p95 on each Valkey
    store run, and (both run) the cluster's search p50 against the single node's."""
    checked = [
        Target(
            f"{name}: memory_search text p95 at {stores[name]['sizes'][-1]['n']:,}, c=1",
            op_stat(stores[name], -1, "memory_search text", "p95_ms"),
            40,
            "ms",
        )
        for name in VALKEY_STORES
        if name in stores
    ]
    if all(name in stores for name in VALKEY_STORES):
        single, cluster = (stores[name] for name in VALKEY_STORES)
        checked += [
            Target(
                f"valkey-cluster {op} p50 / valkey's, c=1",
                op_stat(cluster, -1, op, "p50_ms") / op_stat(single, -1, op, "p50_ms"),
                1.5,
                "x",
            )
            for op in ("memory_search", "memory_search text")
        ]
    return checked


# --- the report -----------------------------------------------------------------------------


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Plain text, first column left-aligned, the rest right-aligned."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        first, *rest = cells
        return "  ".join(
            [first.ljust(widths[0]), *(c.rjust(w) for c, w in zip(rest, widths[1:], strict=True))]
        )

    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def optional(value: float | None, spec: str = ",.2f") -> str:
    return "-" if value is None else format(value, spec)


def op_row(op: str, concurrency: str, store: str, size: dict[str, Any]) -> list[str]:
    """One operation at one concurrency on one store: latency, throughput, CPU per call."""
    s = size["ops"][op][concurrency]
    ping = size["ops"]["ping"][concurrency]["p50_ms"]
    cpu = ("bridge_cpu_ms_per_call", "store_cpu_ms_per_call", "client_cpu_ms_per_call")
    return [
        op,
        concurrency,
        store,
        *(f"{s[k]:.2f}" for k in ("p50_ms", "p95_ms", "p99_ms")),
        f"{s['p50_ms'] / ping:.2f}x",
        optional(s["calls_per_s"]),
        *(optional(s[k]) for k in cpu),
    ]


def size_table(by_store: dict[str, dict[str, Any]]) -> str:
    """One size: a row per operation, concurrency and store, the stores next to each other."""
    headers = ["op", "conc", "store", "p50 ms", "p95 ms", "p99 ms", "p50/ping", "calls/s"]
    headers += ["bridge cpu ms", "store cpu ms", "client cpu ms"]
    first = next(iter(by_store.values()))
    ops = list(dict.fromkeys(op for size in by_store.values() for op in size["ops"]))
    rows = [
        op_row(op, concurrency, store, size)
        for op in ops
        for concurrency in first["ops"]["ping"]
        for store, size in by_store.items()
        if op in size["ops"]
    ]
    return format_table(headers, rows)


def size_sections(stores: dict[str, dict[str, Any]]) -> list[str]:
    first = next(iter(stores.values()))
    parts = []
    for index, size in enumerate(first["sizes"]):
        by_store = {name: results["sizes"][index] for name, results in stores.items()}
        parts += [f"\n== {size['n']:,} entries ==", size_table(by_store)]
    return parts


def fill_section(stores: dict[str, dict[str, Any]]) -> list[str]:
    first = next(iter(stores.values()))["fill"]
    rows = []
    for name, results in stores.items():
        fill = results["fill"]
        for label, key, ratio in (("first", "start", ""), ("last", "end", f"{fill['p50_ratio']:.2f}x")):
            stats = (f"{fill[key][k]:.2f}" for k in ("p50_ms", "p95_ms", "p99_ms"))
            rows.append([name, f"{label} {fill['window']:,}", *stats, ratio])
    return [
        f"\n== fill ({first['writes']:,} memory_set of new entries at concurrency {FILL_CONCURRENCY}) ==",
        format_table(["store", "writes", "p50 ms", "p95 ms", "p99 ms", "p50 last/first"], rows),
    ]


def scaling_section(stores: dict[str, dict[str, Any]]) -> list[str]:
    first = next(iter(stores.values()))
    low, high = CONCURRENCY
    headers = ["op", "store", f"c={low} calls/s", f"c={high} calls/s", f"c={high}/c={low}"]
    headers += ["cpu ceiling calls/s", "ceiling/c=1", "target"]
    rows = []
    for op in SCALING_OPS:
        for name, results in stores.items():
            s = results["scaling"][op]
            ratio = s["ratio"]
            target = "(floor)" if op == "ping" else "-"
            if op in SCALING_TARGET_OPS:
                target = f">= 3x {'PASS' if ratio >= 3 else 'FAIL'}"
            numbers = [s["c1_calls_per_s"], s["c8_calls_per_s"]]
            rows.append(
                [
                    op,
                    name,
                    *(f"{v:,.0f}" for v in numbers),
                    f"{ratio:.2f}x",
                    f"{s['cpu_ceiling_calls_per_s']:,.0f}",
                    f"{s['cpu_ceiling_ratio']:.2f}x",
                    target,
                ]
            )
    return [
        f"\n== throughput scaling at {first['sizes'][-1]['n']:,} entries "
        f"(calls/s at concurrency {high} / at {low}; {usable_cores()} cores) ==",
        format_table(headers, rows),
    ]


def lost_updates_section(stores: dict[str, dict[str, Any]]) -> list[str]:
    headers = ["store", "sessions", "applied", "conflicts", "max retries", "final counter", "lost updates"]
    headers += ["revisions", "elapsed s", "writes/s", "attempts/write"]
    rows, notes = [], []
    for name, results in stores.items():
        r = results["lost_updates"]
        counts = (r[k] for k in ("sessions", "applied", "conflicts", "max_retries", "final_counter"))
        rows.append(
            [
                name,
                *(f"{v:,}" for v in counts),
                f"{r['lost_updates']:,}",
                f"{r['revisions']:,}",
                f"{r['elapsed_s']:.1f}",
                f"{r['writes_per_s']:,.1f}",
                f"{r['attempts_per_write']:.1f}",
            ]
        )
        if r["capped"]:
            notes.append(f"{name}: stopped by the {r['cap_s']:g} s cap before {r['goal']:,} writes")
    goal = next(iter(stores.values()))["lost_updates"]["goal"]
    return [
        f"\n== lost updates (read-modify-write of one counter with if_version, until {goal:,} applied) ==",
        format_table(headers, rows),
        "lost updates = applied - final counter (must be 0)",
        *notes,
    ]


def stdio_section(stores: dict[str, dict[str, Any]], sdk_minimal: dict[str, Any]) -> list[str]:
    runs = [(f"memctl serve ({name})", results["stdio"]) for name, results in stores.items()]
    runs.append(("minimal MCPServer (SDK floor)", sdk_minimal))
    rows = [[label, *(f"{r[k] * 1000:.0f}" for k in ("median_s", "min_s", "max_s"))] for label, r in runs]
    return [
        f"\n== stdio cold start (spawn -> initialize answered, {COLD_START_RUNS} runs) ==",
        format_table(["server", "median ms", "min ms", "max ms"], rows),
    ]


def mib(kib: int | None) -> str:
    return "-" if kib is None else f"{kib / 1024:.1f}"


def rss_section(stores: dict[str, dict[str, Any]]) -> list[str]:
    rows = [
        [name, mib(results["bridge_peak_rss_kib"]), mib(results.get("store_server_peak_rss_kib"))]
        for name, results in stores.items()
    ]
    return [
        "\n== peak RSS (VmHWM) at the end of the run ==",
        format_table(["store", "bridge MiB", "valkey-server MiB"], rows),
    ]


def targets_section(checked: dict[str, list[Target]]) -> list[str]:
    """One row per target, a measured and a result column per store."""
    names = list(checked)
    headers = ["target", "limit"]
    for name in names:
        headers += [name, "result"]
    rows = []
    for index, target in enumerate(checked[names[0]]):
        row = [target.name, target.bound()]
        for name in names:
            mine = checked[name][index]
            row += [mine.measured(), "PASS" if mine.passed else "FAIL"]
        rows.append(row)
    return ["\n== targets ==", format_table(headers, rows)]


def valkey_targets_section(checked: list[Target]) -> list[str]:
    if not checked:
        return []
    rows = [[t.name, t.bound(), t.measured(), "PASS" if t.passed else "FAIL"] for t in checked]
    table = format_table(["target", "limit", "measured", "result"], rows)
    return ["\n== Valkey targets (issue 36) ==", table]


def report(results: dict[str, Any], checked: dict[str, list[Target]]) -> str:
    stores = results["stores"]
    return "\n".join(
        [
            *size_sections(stores),
            *fill_section(stores),
            *scaling_section(stores),
            *lost_updates_section(stores),
            *stdio_section(stores, results["stdio_sdk_minimal"]),
            *rss_section(stores),
            *targets_section(checked),
            *valkey_targets_section(valkey_targets(stores)),
            "\n== time taken ==",
            *(f"{name}: {r['elapsed_s']:,.0f} s" for name, r in stores.items()),
            f"in all: {results['elapsed_s']:,.0f} s",
        ]
    )


# --- main -----------------------------------------------------------------------------------


def environment() -> dict[str, Any]:
    commit = git_commit(REPO)
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "usable_cores": usable_cores(),
        "mcp": version("mcp"),
        "memctl": version("memctl"),
        "commit": commit,
    }


def parse_stores(text: str) -> tuple[str, ...]:
    """`sqlite,valkey` -> ("sqlite", "valkey"); raise ValueError on an unknown or repeated name."""
    stores = tuple(name.strip() for name in text.split(",") if name.strip())
    if not stores or len(set(stores)) != len(stores) or not set(stores) <= set(STORES):
        raise ValueError(f"--stores: a comma-separated selection of {', '.join(STORES)}")
    return stores


def parse_args(argv: Sequence[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="entry counts, ascending")
    parser.add_argument("--calls", type=int, default=2000, help="calls per operation and concurrency")
    parser.add_argument("--stores", default=",".join(STORES), help="entry stores, comma-separated")
    parser.add_argument(
        "--rmw-writes", type=int, default=RMW_WRITES, help="applied writes that end the lost-updates run"
    )
    parser.add_argument(
        "--rmw-seconds",
        type=float,
        help=f"lost-updates time cap per store (default {RMW_CAP_S:g}, --quick {RMW_QUICK_CAP_S:g})",
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: sizes 200,1000 and 200 calls")
    parser.add_argument("--json", type=Path, dest="json_path", help="also write every number to this file")
    parser.add_argument(
        "--embedding",
        action="store_true",
        help="only the default embedding model's cost on the embedded store, beside embedding_model = none,"
        " at the largest size",
    )
    parser.add_argument(
        "--no-scan",
        dest="scan",
        action="store_false",
        help="leave out the Valkey searches with the word index off (on a loaded machine eight"
        " concurrent scans at 10k can miss the store's 2 s deadline)",
    )
    parser.add_argument(
        "--drain-seconds",
        type=float,
        default=DRAIN_CAP_S,
        help="--embedding: the longest wait, from the fill's start, for every entry to be embedded"
        " (`left` counts those still waiting; their CPU is not in the figure)",
    )
    args = parser.parse_args(argv)
    try:
        stores = parse_stores(args.stores)
    except ValueError as exc:
        parser.error(str(exc))
    cap = args.rmw_seconds if args.rmw_seconds is not None else RMW_QUICK_CAP_S if args.quick else RMW_CAP_S
    if args.rmw_writes <= 0 or cap <= 0:
        parser.error("--rmw-writes and --rmw-seconds must be positive")
    if args.quick:
        return Config(
            QUICK_SIZES,
            200,
            args.json_path,
            stores,
            args.rmw_writes,
            cap,
            embedding=args.embedding,
            scan=args.scan,
        )
    sizes = tuple(int(s) for s in args.sizes.split(","))
    if list(sizes) != sorted(set(sizes)) or sizes[0] <= 0 or args.calls <= 0:
        parser.error("--sizes must be positive and ascending, --calls positive")
    return Config(
        sizes,
        args.calls,
        args.json_path,
        stores,
        args.rmw_writes,
        cap,
        embedding=args.embedding,
        drain_s=args.drain_seconds,
        scan=args.scan,
    )


def leaf_errors(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, as raised by the task groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaf_errors(inner)]
    return [exc]


def check_targets(results: dict[str, Any]) -> dict[str, list[Target]]:
    """Evaluate the targets per store and record them in that store's results."""
    checked = {}
    for name, store in results["stores"].items():
        checked[name] = targets(store)
        store["targets"] = [{**asdict(t), "passed": t.passed} for t in checked[name]]
    results["valkey_targets"] = [{**asdict(t), "passed": t.passed} for t in valkey_targets(results["stores"])]
    return checked


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    started = time.perf_counter()
    if config.embedding:
        runs = anyio.run(embedding_benchmark, config)
        print(embedding_report(runs))
        if config.json_path is not None:
            config.json_path.write_text(
                json.dumps({"embedding": runs, "environment": environment()}, indent=2) + "\n"
            )
        return 0
    try:
        results = anyio.run(run_benchmark, config)
    except (Exception, BaseExceptionGroup) as exc:  # unwrap the task groups' nested exception groups
        for error in leaf_errors(exc):
            if isinstance(error, BenchError | RuntimeError):
                print(f"bench failed: {error}", file=sys.stderr)
            else:
                traceback.print_exception(error)
        return 1
    checked = check_targets(results)
    results["config"] = {
        "sizes": config.sizes,
        "calls": config.calls,
        "stores": config.stores,
        "rmw_sessions": RMW_SESSIONS,
        "rmw_writes": config.rmw_writes,
        "rmw_cap_s": config.rmw_cap_s,
        "seed": config.seed,
    }
    results["environment"] = environment()
    results["elapsed_s"] = time.perf_counter() - started
    print(report(results, checked))
    if config.json_path is not None:
        config.json_path.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
