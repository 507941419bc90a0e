"""Benchmark memctl's entry tools through a real MCP client over streamable HTTP.

Starts `memctl serve --http` as a subprocess on a fresh project, fills the store through
memory_set up to each size (1k, 10k, 100k by default), and at each size measures
memory_get, memory_set and memory_search (tag + query) at concurrency 1 and 8, next to an
MCP ping (the protocol floor). Also reports fill-write latency at the start against the
end of the fill, the stdio cold start against a minimal SDK server, the bridge's peak
RSS, and PASS/FAIL against the project's targets.

    uv run --frozen python bench/entries.py --quick
    uv run --frozen python bench/entries.py --json bench-results.json

See bench/README.md for what every number means.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
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
from typing import Any, TypeVar

import anyio
import httpx
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (200, 1_000)
CONCURRENCY = (1, 8)
FILL_CONCURRENCY = 8
FILL_WINDOW = 1_000
COLD_START_RUNS = 5
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bridge_env() -> dict[str, str]:
    """Our environment minus any MEMCTL_* / MEMORY_MCP_* settings, so the bridge runs on defaults."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "MEMORY_MCP_"))}


def serve_args(project: Path) -> list[str]:
    return ["-m", "memctl", "serve", "--project", str(project)]


@dataclass
class HttpBridge:
    process: subprocess.Popen[bytes]
    base_url: str

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    def peak_rss_kib(self) -> int:
        """VmHWM, the resident set's high-water mark, from /proc."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise RuntimeError("no VmHWM in /proc/<pid>/status")

    def cpu_seconds(self) -> float:
        """User + system CPU time the bridge has used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_healthy(process: subprocess.Popen[bytes], base_url: str, log: Path, timeout: float = 30) -> None:
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
def http_bridge(project: Path) -> Iterator[HttpBridge]:
    """Run `memctl serve --http` on a free loopback port; its stderr goes to project/bridge.log."""
    port = free_port()
    project.mkdir(parents=True, exist_ok=True)
    log = project / "bridge.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, *serve_args(project), "--http", "--port", str(port)],
            env=bridge_env(),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(process, base_url, log)
        yield HttpBridge(process, base_url)
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


class BenchError(RuntimeError):
    """A call failed: the numbers would be meaningless."""


async def open_client(stack: AsyncExitStack, url: str) -> Client:
    """An SDK client session (initialize handshake) that has listed the tools once.

    The SDK lists tools on a session's first call_tool to learn the output schemas it
    validates results against; listing up front keeps that round trip out of the numbers.
    """
    client = await stack.enter_async_context(Client(url, mode="legacy"))
    await client.list_tools()
    return client


async def call_tool(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call an entry tool and return its structured result; raise on an error result."""
    result = await client.call_tool(name, arguments)
    if result.is_error:
        text = getattr(result.content[0], "text", "") if result.content else ""
        raise BenchError(f"{name} {json.dumps(arguments)[:200]} failed: {text}")
    return dict(result.structured_content or {})


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

    def summary(self) -> Summary:
        summary = Summary.of(self.latencies, self.wall_s)
        summary.bridge_cpu_ms_per_call = 1000 * self.bridge_cpu_s / len(self.latencies)
        summary.client_cpu_ms_per_call = 1000 * self.client_cpu_s / len(self.latencies)
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
            await call(session, number)
            latencies[number] = time.perf_counter() - started

    bridge_cpu, client_cpu = bridge.cpu_seconds(), time.process_time()
    started = time.perf_counter()
    async with anyio.create_task_group() as tasks:
        for session in sessions:
            tasks.start_soon(worker, session)
    wall = time.perf_counter() - started
    return Run(latencies, wall, bridge.cpu_seconds() - bridge_cpu, time.process_time() - client_cpu)


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


def searcher(corpus: Corpus) -> Call[Client]:
    async def call(client: Client, _: int) -> None:
        await call_tool(client, "memory_search", corpus.search())

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
    seed: int = SEED


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class HttpBench:
    """One bridge, its client sessions, and what the run has written so far."""

    bridge: HttpBridge
    clients: list[Client]
    corpus: Corpus
    calls: int
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


async def http_benchmark(config: Config, project: Path) -> dict[str, Any]:
    """Fill and measure at every size over HTTP; the bridge's peak RSS at the end."""
    sizes: list[dict[str, Any]] = []
    sessions = max(*CONCURRENCY, FILL_CONCURRENCY)
    with http_bridge(project) as bridge:
        async with AsyncExitStack() as stack:
            clients = [await open_client(stack, bridge.mcp_url) for _ in range(sessions)]
            bench = HttpBench(bridge, clients, Corpus(config.seed), config.calls)
            await bench.warm_up()
            for n in config.sizes:
                progress(f"N = {n:,}")
                await bench.fill(n)
                ops = await bench.measure_size()
                sizes.append(
                    {"n": n, "ops": {op: {c: asdict(s) for c, s in by.items()} for op, by in ops.items()}}
                )
        rss = bridge.peak_rss_kib()
    return {"sizes": sizes, "fill": bench.fill_drift(), "bridge_peak_rss_kib": rss}


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


async def stdio_benchmark(project: Path) -> dict[str, Any]:
    """memctl's stdio cold start (the first run creates the store) and the SDK's floor."""
    script = project.parent / "minimal_server.py"
    script.write_text(MINIMAL_SERVER)
    env = bridge_env()
    memctl = StdioServerParameters(command=sys.executable, args=serve_args(project), env=env, cwd=project)
    minimal = StdioServerParameters(command=sys.executable, args=[str(script)], env=env, cwd=project)
    progress("stdio cold start")
    return {
        "memctl": await cold_starts(memctl, COLD_START_RUNS),
        "sdk_minimal": await cold_starts(minimal, COLD_START_RUNS),
    }


# --- targets and report ---------------------------------------------------------------------


@dataclass
class Target:
    name: str
    value: float
    limit: float
    unit: str

    @property
    def passed(self) -> bool:
        return self.value <= self.limit


def op_stat(results: dict[str, Any], n_index: int, op: str, stat: str, concurrency: int = 1) -> float:
    return float(results["sizes"][n_index]["ops"][op][str(concurrency)][stat])


def targets(results: dict[str, Any]) -> list[Target]:
    """The issue's targets (defined at 100k entries; checked at the largest size run)."""
    sizes = [s["n"] for s in results["sizes"]]
    top, base = f"{sizes[-1]:,}", f"{sizes[0]:,}"
    set_top = op_stat(results, -1, "memory_set", "p50_ms")
    set_base = op_stat(results, 0, "memory_set", "p50_ms")
    return [
        Target(f"memory_get p50 at {top}, c=1", op_stat(results, -1, "memory_get", "p50_ms"), 3, "ms"),
        Target(f"memory_set p50 at {top}, c=1", set_top, 3, "ms"),
        Target(f"memory_search p95 at {top}, c=1", op_stat(results, -1, "memory_search", "p95_ms"), 20, "ms"),
        Target(f"memory_set p50 at {top} / at {base}, c=1", set_top / set_base, 1.2, "x"),
        Target("fill write p50, last window / first window", results["fill"]["p50_ratio"], 1.2, "x"),
        Target("stdio cold start, median", results["stdio"]["memctl"]["median_s"] * 1000, 1000, "ms"),
    ]


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Plain text, first column left-aligned, the rest right-aligned."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        first, *rest = cells
        return "  ".join(
            [first.ljust(widths[0]), *(c.rjust(w) for c, w in zip(rest, widths[1:], strict=True))]
        )

    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def size_table(size: dict[str, Any]) -> str:
    headers = [
        "op",
        "conc",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "p50/ping",
        "calls/s",
        "bridge cpu ms",
        "client cpu ms",
    ]
    rows = []
    for op, by_concurrency in size["ops"].items():
        for concurrency, s in by_concurrency.items():
            ping = size["ops"]["ping"][concurrency]["p50_ms"]
            optional = [s["calls_per_s"], s["bridge_cpu_ms_per_call"], s["client_cpu_ms_per_call"]]
            rows.append(
                [
                    op,
                    concurrency,
                    f"{s['p50_ms']:.2f}",
                    f"{s['p95_ms']:.2f}",
                    f"{s['p99_ms']:.2f}",
                    f"{s['p50_ms'] / ping:.2f}x",
                    *("-" if v is None else f"{v:,.2f}" for v in optional),
                ]
            )
    return format_table(headers, rows)


def report(results: dict[str, Any], checked: Sequence[Target]) -> str:
    parts = []
    for size in results["sizes"]:
        parts += [f"\n== {size['n']:,} entries ==", size_table(size)]
    fill, stdio = results["fill"], results["stdio"]
    parts += [
        f"\n== fill ({fill['writes']:,} memory_set of new entries at concurrency {FILL_CONCURRENCY}) ==",
        format_table(
            ["writes", "p50 ms", "p95 ms", "p99 ms"],
            [
                [
                    f"first {fill['window']:,}",
                    *(f"{fill['start'][k]:.2f}" for k in ("p50_ms", "p95_ms", "p99_ms")),
                ],
                [
                    f"last {fill['window']:,}",
                    *(f"{fill['end'][k]:.2f}" for k in ("p50_ms", "p95_ms", "p99_ms")),
                ],
            ],
        ),
        f"p50 last / first: {fill['p50_ratio']:.2f}x",
        f"\n== stdio cold start (spawn -> initialize answered, {COLD_START_RUNS} runs) ==",
        format_table(
            ["server", "median ms", "min ms", "max ms"],
            [
                [name, *(f"{stdio[key][k] * 1000:.0f}" for k in ("median_s", "min_s", "max_s"))]
                for name, key in (
                    ("memctl serve", "memctl"),
                    ("minimal MCPServer (SDK floor)", "sdk_minimal"),
                )
            ],
        ),
        f"\nbridge peak RSS (VmHWM): {results['bridge_peak_rss_kib'] / 1024:.1f} MiB",
        "\n== targets ==",
        format_table(
            ["target", "measured", "limit", "result"],
            [
                [
                    t.name,
                    f"{t.value:.2f} {t.unit}",
                    f"<= {t.limit:g} {t.unit}",
                    "PASS" if t.passed else "FAIL",
                ]
                for t in checked
            ],
        ),
    ]
    return "\n".join(parts)


def environment() -> dict[str, Any]:
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "mcp": version("mcp"),
        "memctl": version("memctl"),
        "commit": commit,
    }


async def run_benchmark(config: Config) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memctl-bench-") as tmp:
        results = await http_benchmark(config, Path(tmp) / "http-project")
        (stdio_project := Path(tmp) / "stdio-project").mkdir()
        results["stdio"] = await stdio_benchmark(stdio_project)
    return results


def parse_args(argv: Sequence[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="entry counts, ascending")
    parser.add_argument("--calls", type=int, default=2000, help="calls per operation and concurrency")
    parser.add_argument("--quick", action="store_true", help="smoke run: sizes 200,1000 and 200 calls")
    parser.add_argument("--json", type=Path, dest="json_path", help="also write every number to this file")
    args = parser.parse_args(argv)
    if args.quick:
        return Config(QUICK_SIZES, 200, args.json_path)
    sizes = tuple(int(s) for s in args.sizes.split(","))
    if list(sizes) != sorted(set(sizes)) or sizes[0] <= 0 or args.calls <= 0:
        parser.error("--sizes must be positive and ascending, --calls positive")
    return Config(sizes, args.calls, args.json_path)


def leaf_errors(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, as raised by the task groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaf_errors(inner)]
    return [exc]


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    started = time.perf_counter()
    try:
        results = anyio.run(run_benchmark, config)
    except (Exception, BaseExceptionGroup) as exc:  # unwrap the task groups' nested exception groups
        for error in leaf_errors(exc):
            if isinstance(error, BenchError | RuntimeError):
                print(f"bench failed: {error}", file=sys.stderr)
            else:
                traceback.print_exception(error)
        return 1
    checked = targets(results)
    results["targets"] = [{**asdict(t), "passed": t.passed} for t in checked]
    results["config"] = {"sizes": config.sizes, "calls": config.calls, "seed": config.seed}
    results["environment"] = environment()
    results["elapsed_s"] = time.perf_counter() - started
    print(report(results, checked))
    if config.json_path is not None:
        config.json_path.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
