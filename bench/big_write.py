"""Another session's small calls while one session saves a large document, beside the same
calls on the idle bridge, from the same run.

uv run --frozen python bench/big_write.py                  # a 500,000-character save
uv run --frozen python bench/big_write.py --idle-rounds 40 --chars 200000

One `memctl serve --http` process (embedded stores, the bundled MiniLM model) and two SDK
client sessions over HTTP. Session B makes rounds of three small calls, each timed:
`save_to_dataset` of a one-line document (a new name every round), `search_memory` and
`memory_get`. First `--idle-rounds` rounds on the idle bridge (the baseline), then rounds
for as long as session A's `save_to_dataset` of a `--chars`-character document runs. The
report gives each call's p50/p99 in both phases and how long A's save took.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests.*

from mcp import Client
from tests.adversarial.documents import big_document
from tests.bridges import http_bridge

from _mcp import call_tool, open_client

SMALL_CALLS = ("save_to_dataset", "search_memory", "memory_get")
Samples = dict[str, list[float]]


async def round_of_calls(client: Client, number: int, samples: Samples) -> None:
    """One timed call of each small kind."""
    arguments = {
        "save_to_dataset": {"dataset": "knowledge", "name": f"small-{number}.md", "text": f"Note {number}."},
        "search_memory": {"query": f"note {number} about the build"},
        "memory_get": {"id": "bench/note"},
    }
    for name in SMALL_CALLS:
        started = time.perf_counter()
        await call_tool(client, name, arguments[name])
        samples[name].append(time.perf_counter() - started)


def line(name: str, phase: str, values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return (
        f"| {name} | {phase} | {len(ms)} | {statistics.median(ms):.1f} ms | {p99:.1f} ms | {ms[-1]:.1f} ms |"
    )


async def run(chars: int, idle_rounds: int) -> None:
    text = big_document(chars)
    with tempfile.TemporaryDirectory(prefix="memctl-big-write-") as tmp:
        project = Path(tmp) / "app"
        project.mkdir()
        with http_bridge(project) as bridge:
            async with AsyncExitStack() as stack:
                a = await open_client(stack, bridge.mcp_url)
                b = await open_client(stack, bridge.mcp_url)
                note = {"id": "bench/note", "title": "note", "body": "a note", "type": "note", "tags": []}
                await call_tool(b, "memory_set", note)
                await call_tool(b, "search_memory", {"query": "warm up the model"})
                idle: Samples = {name: [] for name in SMALL_CALLS}
                for number in range(idle_rounds):
                    await round_of_calls(b, number, idle)
                busy: Samples = {name: [] for name in SMALL_CALLS}
                saved: list[float] = []

                async def save_big() -> None:
                    started = time.perf_counter()
                    await call_tool(
                        a, "save_to_dataset", {"dataset": "knowledge", "name": "big.md", "text": text}
                    )
                    saved.append(time.perf_counter() - started)

                async with anyio.create_task_group() as group:
                    group.start_soon(save_big)
                    number = idle_rounds
                    while not saved:
                        await round_of_calls(b, number, busy)
                        number += 1
    load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"session A's save of {chars:,} characters: {saved[0]:.1f} s; load average after: {load}")
    print("| call (session B) | phase | calls | p50 | p99 | worst |")
    print("|---|---|---|---|---|---|")
    for name in SMALL_CALLS:
        print(line(name, "idle bridge", idle[name]))
        print(line(name, "during A's save", busy[name]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--chars", type=int, default=500_000, help="size of session A's document")
    parser.add_argument(
        "--idle-rounds", type=int, default=30, help="rounds of small calls on the idle bridge"
    )
    options = parser.parse_args()
    anyio.run(run, options.chars, options.idle_rounds)
