"""Stdio cold start: spawn -> first tools/list answer, memctl's bridge beside the floor.

An agent session spawns its stdio MCP servers before the first tool call, so this is the
wait a user feels. Each run spawns a fresh process through the MCP Python SDK's stdio
client, performs the initialize handshake and times until the tools/list answer arrives.
The floor is a minimal MCP SDK server with one tool, started the same way by the same
Python; the runs alternate between the two so load on the machine hits both alike. Each
server process's CPU time (from spawn to its exit after the answer) is reported beside:
on a loaded machine it varies far less than the wait.

    uv run --frozen python bench/startup.py              # 15 runs each
    uv run --frozen python bench/startup.py --runs 31 --json startup.json
    uv run --frozen python bench/startup.py --baseline /tmp/main   # also memctl from that tree
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from _env import clean_env, git_commit

REPO = Path(__file__).resolve().parent.parent
TARGET_RATIO = 1.2  # issue 20: memctl's median at most 1.2x the floor's

FLOOR_SERVER = '''
from mcp.server.mcpserver import MCPServer

app = MCPServer("floor")


@app.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


app.run()
'''


def memctl_command(project: Path) -> list[str]:
    """What a rendered client config runs: the memctl console script (the launcher's target)."""
    script = Path(sys.executable).with_name("memctl")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "memctl"]
    return [*head, "serve", "--project", str(project)]


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


async def cold_start(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """Seconds from spawning `argv` to its tools/list answer, the CPU seconds the process
    used until it exited (the client closes it right after), and how many tools it listed."""
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(cwd))
    cpu = _children_cpu()
    started = time.perf_counter()
    async with Client(params) as client:
        tools = await client.list_tools()
        elapsed = time.perf_counter() - started
    return elapsed, _children_cpu() - cpu, len(tools.tools)


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_s": statistics.median(ordered),
        "min_s": ordered[0],
        "max_s": ordered[-1],
    }


async def measure(runs: int, baseline: Path | None) -> dict[str, object]:
    env = clean_env(None)
    # An installed memctl starts from bytecode caches (the warm-up below writes them); with
    # this set, every start would compile every module it imports from source again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    envs = {"memctl": env, "floor": env}
    with tempfile.TemporaryDirectory(prefix="memctl-bench-startup-") as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        floor = root / "floor.py"
        floor.write_text(FLOOR_SERVER)
        servers = {
            "memctl": memctl_command(project),
            "floor": [sys.executable, str(floor)],
        }
        if baseline is not None:  # the same console script, importing memctl from that tree
            servers["baseline"] = servers["memctl"]
            envs["baseline"] = {**env, "PYTHONPATH": f"{baseline / 'bridge'}:{baseline / 'ctl'}"}
        samples: dict[str, list[float]] = {name: [] for name in servers}
        cpu: dict[str, list[float]] = {name: [] for name in servers}
        tools: dict[str, int] = {}
        for name, argv in servers.items():  # warm-up: bytecode caches, the project's stores
            await cold_start(argv, project, envs[name])
        for run in range(runs):
            for name, argv in servers.items() if run % 2 == 0 else reversed(servers.items()):
                elapsed, used, tools[name] = await cold_start(argv, project, envs[name])
                samples[name].append(elapsed)
                cpu[name].append(used)
            print(f"run {run + 1}/{runs}", file=sys.stderr)
    results = {
        name: {
            **summary(values),
            "cpu_median_s": statistics.median(cpu[name]),
            "tools": tools[name],
            "samples_s": values,
            "cpu_samples_s": cpu[name],
        }
        for name, values in samples.items()
    }
    ratio = results["memctl"]["median_s"] / results["floor"]["median_s"]
    return {
        "runs": runs,
        "servers": results,
        "ratio": ratio,
        "cpu_ratio": results["memctl"]["cpu_median_s"] / results["floor"]["cpu_median_s"],
        "target_ratio": TARGET_RATIO,
        "commit": git_commit(REPO),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }


def report(result: dict[str, object]) -> str:
    servers = result["servers"]
    assert isinstance(servers, dict)
    lines = [
        f"stdio cold start, spawn -> first tools/list answer, {result['runs']} runs each (alternating)",
        "",
        "| server | tools | median | min | max | CPU, median |",
        "|---|---|---|---|---|---|",
    ]
    labels = {
        "memctl": "memctl serve",
        "baseline": "memctl serve, --baseline tree",
        "floor": "minimal MCP SDK server (floor)",
    }
    for name, label in labels.items():
        if name not in servers:
            continue
        row = servers[name]
        lines.append(
            f"| {label} | {row['tools']} | {row['median_s'] * 1000:.0f} ms | "
            f"{row['min_s'] * 1000:.0f} ms | {row['max_s'] * 1000:.0f} ms | "
            f"{row['cpu_median_s'] * 1000:.0f} ms |"
        )
    ratio = float(result["ratio"])  # type: ignore[arg-type]
    verdict = "meets" if ratio <= TARGET_RATIO else "misses"
    lines += [
        "",
        f"memctl / floor (medians): {ratio:.2f}x; target <= {TARGET_RATIO}x: {verdict}",
        f"memctl / floor (CPU medians): {float(result['cpu_ratio']):.2f}x",  # type: ignore[arg-type]
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed starts of each server (default 15)")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="also time memctl from another source tree (e.g. `git archive main | tar -x -C DIR`)",
    )
    parser.add_argument("--json", type=Path, help="also write every number to this file")
    args = parser.parse_args()
    result = anyio.run(measure, args.runs, args.baseline)
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
