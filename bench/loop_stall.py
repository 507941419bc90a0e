"""The event loop's worst stall while every tool is fuzzed, and /health's latency, beside
an idle baseline.

uv run --frozen python bench/loop_stall.py                 # 12 fuzzed calls per tool
uv run --frozen python bench/loop_stall.py --per-tool 40 --idle-seconds 10

The bridge runs in this process (embedded stores, uvloop, a workspace full of traps: a
FIFO, a socket, a device node, symlinks, a 200-character file name), driven through the
SDK's in-memory client. A probe task sleeps 2 ms at a time and records how late it wakes:
that lateness is how long something else held the event loop. The same probe runs first
on the idle bridge (the baseline), then while the fuzz run calls every tool with the
arguments tests/adversarial draws from its schema, plus the calls that used to freeze the
loop (absorbing a FIFO, a glob bomb). Then the same calls go over HTTP to a `memctl serve
--http` process while a probe GETs /health every 20 ms, idle first, then during the fuzz run.
The report puts each phase beside its baseline; the exit status is 0 unless a call went
unanswered.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from hypothesis import HealthCheck, given, settings
from mcp import Client, MCPError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests.adversarial

from tests.adversarial.strategies import arguments
from tests.adversarial.traps import REDOS_GLOB, hostile_workspace
from tests.bridges import http_bridge

from memory_bridge import build_server, load_settings, open_state

PROBE_SECONDS = 0.002
Call = tuple[str, dict[str, Any]]


def draw_calls(schemas: dict[str, dict[str, Any]], per_tool: int) -> list[Call]:
    """`per_tool` argument sets per tool, drawn (derandomized) before anything is timed."""
    calls: list[Call] = []
    for name, schema in schemas.items():
        drawn: list[dict[str, Any]] = []

        @settings(
            max_examples=per_tool,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(args=arguments(schema))
        def collect(args: dict[str, Any]) -> None:
            drawn.append(args)  # noqa: B023 - run at once, inside this iteration

        collect()
        calls += [(name, args) for args in drawn]
    return calls


def summary(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return (
        f"{len(ms):>7} samples   p50 {statistics.median(ms):7.2f} ms   p99 {p99:7.2f} ms   "
        f"worst {ms[-1]:8.2f} ms"
    )


class Probe:
    """How late a 2 ms sleep wakes up, sample by sample."""

    def __init__(self) -> None:
        self.samples: list[float] = []

    async def run(self) -> None:
        while True:
            started = time.perf_counter()
            await anyio.sleep(PROBE_SECONDS)
            self.samples.append(max(0.0, time.perf_counter() - started - PROBE_SECONDS))


class HealthProbe(Probe):
    """How long GET /health takes, every 20 ms."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        super().__init__()
        self.http, self.url = http, url

    async def run(self) -> None:
        while True:
            started = time.perf_counter()
            (await self.http.get(self.url, timeout=30)).raise_for_status()
            self.samples.append(time.perf_counter() - started)
            await anyio.sleep(0.02)


async def probed(probe: Probe, phase: Any, *args: Any) -> tuple[Probe, Any]:
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(probe.run)
        outcome = await phase(*args)
        tasks.cancel_scope.cancel()
    return probe, outcome


async def fuzz(client: Client, calls: list[Call]) -> tuple[int, int]:
    """Make every call; return (answered, errors). An unanswered call ends the run."""
    errors = 0
    for name, args in calls:
        try:
            with anyio.fail_after(60):
                result = await client.call_tool(name, args)
            errors += result.is_error
        except MCPError:
            errors += 1
    return len(calls), errors


def fuzz_calls(schemas: dict[str, dict[str, Any]], per_tool: int, traps: dict[str, str]) -> list[Call]:
    hostile: list[Call] = [
        ("absorb_files", {"files": list(traps)}),
        ("scan_documents", {"include": [REDOS_GLOB] * 50}),
    ]
    return draw_calls(schemas, per_tool) + hostile * 5


async def in_process(root: Path, per_tool: int, idle_seconds: float) -> None:
    project = root / "in-process"
    traps = hostile_workspace(project)
    async with open_state(load_settings(project=project)) as state, Client(build_server(state)) as client:
        schemas = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
        calls = fuzz_calls(schemas, per_tool, traps)
        await client.call_tool("search_memory", {"query": "warm up"})  # load the model untimed
        idle, _ = await probed(Probe(), anyio.sleep, idle_seconds)
        busy, (answered, errors) = await probed(Probe(), fuzz, client, calls)
    print(f"event loop stall (in-process bridge), {answered} fuzzed calls ({errors} errors), same run:")
    print(f"  idle baseline  {summary(idle.samples)}")
    print(f"  fuzz run       {summary(busy.samples)}")


async def over_http(root: Path, per_tool: int, idle_seconds: float) -> None:
    project = root / "http"
    traps = hostile_workspace(project)
    with http_bridge(project) as bridge:
        async with Client(bridge.mcp_url, mode="legacy") as client, httpx.AsyncClient() as http:
            schemas = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
            calls = fuzz_calls(schemas, per_tool, traps)
            await client.call_tool("search_memory", {"query": "warm up"})
            health = f"{bridge.base_url}/health"
            idle, _ = await probed(HealthProbe(http, health), anyio.sleep, idle_seconds)
            busy, (answered, errors) = await probed(HealthProbe(http, health), fuzz, client, calls)
    print(f"GET /health latency (memctl serve --http), {answered} fuzzed calls ({errors} errors), same run:")
    print(f"  idle baseline  {summary(idle.samples)}")
    print(f"  fuzz run       {summary(busy.samples)}")


async def main(per_tool: int, idle_seconds: float) -> None:
    with tempfile.TemporaryDirectory(prefix="memctl-stall-") as tmp:
        await in_process(Path(tmp), per_tool, idle_seconds)
        await over_http(Path(tmp), per_tool, idle_seconds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--per-tool", type=int, default=12, help="fuzzed calls per tool")
    parser.add_argument("--idle-seconds", type=float, default=5.0, help="length of the idle baseline")
    options = parser.parse_args()
    anyio.run(main, options.per_tool, options.idle_seconds, backend_options={"use_uvloop": True})
