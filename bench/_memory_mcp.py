"""memory-mcp (the Node server memctl's entry tools reproduce) as a peer in a side-by-side run.

The benchmark does not ship memory-mcp: the user gives a checkout with its dependencies
installed (see the docstring of bench/side_by_side.py), and this module runs `node
DIR/server.js` on a loopback port against a valkey-server of the benchmark's own, fills that
Valkey with exactly the keys memory-mcp's memory_set writes, and waits out the gauge refresh
it runs at start.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import valkey

from _proc import ProcStats
from _servers import free_port, stop

FILL_BATCH = 1000
# Its settings besides PORT and VALKEY_URL: left unset so it runs on its defaults.
SETTINGS = ("AUTH_TOKEN", "MAX_ENTRIES_WARN", "MAX_VERSIONS_PER_ENTRY", "MAX_BODY_BYTES")


class MemoryMcpError(RuntimeError):
    """The checkout is unusable, or the server did not come up."""


def server_script(checkout: Path) -> Path:
    """DIR/server.js, once DIR looks like a memory-mcp checkout with its dependencies."""
    script = checkout / "server.js"
    if not script.is_file():
        raise MemoryMcpError(f"no server.js in {checkout}: --memory-mcp takes a memory-mcp checkout")
    if not (checkout / "node_modules").is_dir():
        raise MemoryMcpError(f"no node_modules in {checkout}: run `npm ci` there first")
    return script


def command(
    checkout: Path, port: int, valkey_url: str, environ: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run memory-mcp on `port` against `valkey_url`, auth off.

    The caller's memory-mcp and memctl settings are dropped, so the server runs on its defaults.
    """
    env = {
        k: v for k, v in environ.items() if k not in SETTINGS and not k.startswith(("MEMCTL_", "MEMORY_MCP_"))
    }
    env |= {"PORT": str(port), "VALKEY_URL": valkey_url}
    return ["node", str(checkout / "server.js")], env


def node_version() -> str:
    return subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()


@dataclass
class MemoryMcp:
    """A running memory-mcp: its process and loopback URL."""

    process: subprocess.Popen[bytes]
    base_url: str
    log: Path

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    @property
    def stats(self) -> ProcStats:
        return ProcStats(self.process.pid)

    def gauge(self, name: str) -> float | None:
        """A gauge's value from GET /metrics, None if absent."""
        text = httpx.get(f"{self.base_url}/metrics", timeout=5).text
        match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
        return None if match is None else float(match.group(1))

    def wait_gauges(self, entries: int, timeout: float = 600) -> float:
        """Wait until the gauge refresh it starts on listen (a SCAN, then one HGET per entry) has
        counted every entry; return how long that took. It repeats every 60 s while it runs."""
        start = time.monotonic()
        while (self.gauge("memory_hits_zero_count") or 0) < entries:
            if self.process.poll() is not None:
                raise MemoryMcpError(f"memory-mcp exited: {self.log.read_text()[-2000:]}")
            if time.monotonic() - start > timeout:
                raise MemoryMcpError(f"memory-mcp's gauge refresh did not finish within {timeout:.0f} s")
            time.sleep(0.2)
        return time.monotonic() - start


@contextmanager
def memory_mcp(checkout: Path, valkey_url: str, log: Path) -> Iterator[MemoryMcp]:
    """`node DIR/server.js` on a free port (it listens on every interface; the benchmark talks
    to it over loopback), stdout and stderr to `log`; stopped afterwards."""
    from entries import wait_healthy

    server_script(checkout)
    port = free_port()
    argv, env = command(checkout, port, valkey_url, os.environ)
    with log.open("wb") as out:
        process = subprocess.Popen(argv, env=env, cwd=checkout, stdout=out, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(process, base_url, log)
        yield MemoryMcp(process, base_url, log)
    finally:
        stop(process)


def today() -> str:
    """memory-mcp's `created` / `updated`: the UTC date alone."""
    return datetime.now(UTC).strftime("%Y-%m-%d")


def write_entry(pipe: Any, entry: Mapping[str, Any], day: str) -> None:
    """Queue the keys memory-mcp's memory_set writes for a new entry (no ttl): the hash, the
    type / project / tag index sets, and the `created` snapshot in its history list."""
    id = entry["id"]
    member = f"mem:{id}"
    tags = [t for t in entry["tags"] if t]
    pipe.hset(
        member,
        mapping={
            "title": entry["title"],
            "body": entry["body"],
            "type": entry["type"],
            "source": entry.get("source") or "unknown",
            "project": entry.get("project") or "",
            "updated": day,
            "hits": "0",
            "ttl": "",
            "tags": ",".join(entry["tags"]),
            "created": day,
        },
    )
    if entry["type"]:
        pipe.sadd(f"type:{entry['type']}", member)
    pipe.sadd(f"project:{entry.get('project') or ''}", member)
    for tag in tags:
        pipe.sadd(f"tag:{tag}", member)
    snapshot = {
        "title": entry["title"],
        "body": entry["body"],
        "type": entry["type"],
        "tags": tags,
        "source": entry.get("source") or "unknown",
        "project": entry.get("project") or "",
        "updated": day,
        "operation": "created",
    }
    pipe.lpush(f"memver:{id}", json.dumps(snapshot, separators=(",", ":"), ensure_ascii=False))
    pipe.ltrim(f"memver:{id}", 0, 19)


def fill(port: int, entries: Iterable[Mapping[str, Any]]) -> int:
    """Write `entries` (memory_set arguments) into the Valkey on `port` as memory-mcp would,
    pipelined FILL_BATCH at a time; return how many."""
    day = today()
    count = 0
    with valkey.Valkey(host="127.0.0.1", port=port) as client:
        pipe = client.pipeline(transaction=False)
        for entry in entries:
            write_entry(pipe, entry, day)
            count += 1
            if count % FILL_BATCH == 0:
                pipe.execute()
        pipe.execute()
    return count
