"""Benchmark the knowledge tools on a real Dify beside the embedded store, in one run.

For each knowledge store (the embedded SQLite store, keyword search only, and a real Dify
API with economy datasets), starts `memctl serve --http` on a fresh project and, through
the MCP SDK's client, calls `save_to_dataset` (new names, then updates of existing names)
and `search_memory`, reporting p50 and p95 latency of each side by side.

The Dify server is the one `../shared/dify/run-dify.sh start DIR --admin` runs: its
origin in --dify-url (or MEMCTL_TEST_DIFY_URL) and DIR/admin.json in --dify-admin (or
MEMCTL_TEST_DIFY_ADMIN). The benchmark creates one dataset API key and revokes it, and
deletes the datasets it made.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path

import anyio
import httpx

from _mcp import call_tool, open_client
from _servers import free_port

WORDS = [
    "cache",
    "deploy",
    "retry",
    "backoff",
    "schema",
    "migration",
    "index",
    "token",
    "rotate",
    "proxy",
    "timeout",
    "queue",
    "worker",
    "lease",
    "shard",
    "replica",
    "snapshot",
    "restore",
    "audit",
    "lesson",
    "plan",
    "module",
    "pipeline",
    "release",
    "canary",
]


@contextmanager
def dify_key(origin: str, admin: Path) -> Iterator[str]:
    """A dataset API key for the run, revoked afterwards."""
    account = json.loads(admin.read_text())
    with httpx.Client(base_url=origin, timeout=30) as console:
        password = base64.b64encode(account["password"].encode()).decode()
        console.post(
            "/console/api/login", json={"email": account["email"], "password": password}
        ).raise_for_status()
        console.headers["X-CSRF-Token"] = console.cookies.get("csrf_token") or ""
        key = console.post("/console/api/datasets/api-keys").json()
        try:
            yield str(key["token"])
        finally:
            console.delete(f"/console/api/datasets/api-keys/{key['id']}")


def delete_datasets(origin: str, key: str, prefix: str) -> None:
    with httpx.Client(base_url=f"{origin}/v1", headers={"Authorization": f"Bearer {key}"}) as api:
        for dataset in api.get("/datasets", params={"keyword": prefix, "limit": 100}).json()["data"]:
            if dataset["name"].startswith(prefix):
                api.delete(f"/datasets/{dataset['id']}")


@contextmanager
def bridge(project: Path, env: dict[str, str]) -> Iterator[str]:
    """`memctl serve --http` on a free loopback port; yields the MCP URL."""
    port = free_port()
    project.mkdir(parents=True, exist_ok=True)
    with (project / "bridge.log").open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memctl",
                "serve",
                "--project",
                str(project),
                "--http",
                "--port",
                str(port),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"bridge did not start: {(project / 'bridge.log').read_text()[-2000:]}")
            time.sleep(0.1)
        yield f"{base}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


def text(n: int, version: int) -> str:
    picked = " ".join(WORDS[(n * 7 + i) % len(WORDS)] for i in range(12))
    return f"Note {n} (version {version}): {picked}. The service named svc{n} owns it."


async def measure(url: str, calls: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {"save (new)": [], "save (update)": [], "search": []}
    async with AsyncExitStack() as stack:
        client = await open_client(stack, url)
        for kind, version in (("save (new)", 1), ("save (update)", 2)):
            for n in range(calls):
                args = {"dataset": "knowledge", "name": f"note-{n}.md", "text": text(n, version)}
                started = time.perf_counter()
                await call_tool(client, "save_to_dataset", args)
                timings[kind].append(time.perf_counter() - started)
        for n in range(calls):
            query = f"{WORDS[n % len(WORDS)]} {WORDS[(n * 3 + 1) % len(WORDS)]}"
            started = time.perf_counter()
            await call_tool(client, "search_memory", {"query": query, "maxResults": 5})
            timings["search"].append(time.perf_counter() - started)
    return timings


def summary(samples: list[float]) -> str:
    cuts = statistics.quantiles(samples, n=20)
    return f"{statistics.median(samples) * 1000:8.1f} {cuts[18] * 1000:8.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dify-url", default=os.environ.get("MEMCTL_TEST_DIFY_URL"))
    parser.add_argument("--dify-admin", type=Path, default=os.environ.get("MEMCTL_TEST_DIFY_ADMIN"))
    parser.add_argument("--calls", type=int, default=40, help="calls per operation and store")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    options = parser.parse_args()
    if not options.dify_url or not options.dify_admin:
        parser.error("needs --dify-url and --dify-admin (or MEMCTL_TEST_DIFY_URL and MEMCTL_TEST_DIFY_ADMIN)")
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "MEMORY_MCP_", "DIFY_"))}
    base_env["MEMCTL_EMBEDDING_MODEL"] = "none"  # both stores search by keyword
    results: dict[str, dict[str, list[float]]] = {}
    prefix = f"bench{uuid.uuid4().hex[:8]}-"
    with tempfile.TemporaryDirectory() as tmp, dify_key(options.dify_url, options.dify_admin) as key:
        key_file = Path(tmp) / "dify-key"
        key_file.write_text(key + "\n")
        key_file.chmod(0o600)
        stores = {
            "embedded": {},
            "dify": {
                "MEMCTL_KNOWLEDGE_STORE": f"dify+{options.dify_url}/v1",
                "MEMCTL_DIFY_API_KEY_FILE": str(key_file),
                "MEMCTL_DIFY_DATASET_PREFIX": prefix,
                "MEMCTL_DIFY_INDEXING_TECHNIQUE": "economy",
            },
        }
        try:
            for name, extra in stores.items():
                print(
                    f"{name}: {options.calls} new saves, {options.calls} updates, {options.calls} searches",
                    file=sys.stderr,
                )
                with bridge(Path(tmp) / name, {**base_env, **extra}) as url:
                    results[name] = anyio.run(measure, url, options.calls)
        finally:
            delete_datasets(options.dify_url, key, prefix)
    print(f"{'operation':<16}{'store':<10}{'p50 ms':>9}{'p95 ms':>9}")
    for operation in ("save (new)", "save (update)", "search"):
        for name in results:
            print(f"{operation:<16}{name:<10}{summary(results[name][operation])}")
    if options.json:
        options.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
