"""`memctl serve --http --workers N`: real processes sharing one port, a real MCP client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memctl.cli import cli

from ..bridges import HttpBridge, bridge_env, free_port, http_bridge
from ..servers import run_server, valkey_server_binary

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

NOTE = {"title": "Cache keys", "body": "Prefix keys with the tenant.", "type": "pattern", "tags": ["cache"]}


def payload(result: Any) -> dict[str, Any]:
    return dict(json.loads(result.content[0].text))


def every_worker_answers(running: HttpBridge, workers: int = 2, timeout: float = 30) -> HttpBridge:
    """`running` once each worker has answered /health: the bridge is healthy as soon as its
    first worker listens, and on a busy machine the second came up after a test's requests
    had all gone to the first."""
    deadline = time.monotonic() + timeout
    seen: set[str] = set()
    while len(seen) < workers:
        response = httpx.get(f"{running.base_url}/health", headers={"Connection": "close"})
        seen.add(response.headers["memctl-worker"])
        if time.monotonic() > deadline:
            raise RuntimeError(f"only workers {sorted(seen)} answered within {timeout:.0f} s")
    return running


@pytest.fixture(scope="module", params=["sqlite", "valkey"])
def bridge(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpBridge]:
    """Two workers on the project's embedded store, or on a valkey-server of their own."""
    project = tmp_path_factory.mktemp("workers")
    if request.param == "sqlite":
        with http_bridge(project, "--workers", "2") as running:
            yield every_worker_answers(running)
        return
    with (
        run_server(valkey_server_binary()) as server,
        http_bridge(project, "--workers", "2", "--entry-store", server.url) as running,
    ):
        yield every_worker_answers(running)


@asynccontextmanager
async def spread_client(bridge: HttpBridge, answered_by: list[str]) -> AsyncIterator[Client]:
    """An SDK client opening a new connection per request (the kernel picks a worker for
    each), recording which worker answered every one."""

    async def record(response: httpx2.Response) -> None:
        answered_by.append(response.headers.get("memctl-worker", "none"))

    limits = httpx2.Limits(max_keepalive_connections=0)
    async with (
        httpx2.AsyncClient(limits=limits, event_hooks={"response": [record]}) as http,
        Client(streamable_http_client(bridge.mcp_url, http_client=http), mode="legacy") as client,
    ):
        yield client


async def test_one_session_is_served_by_every_worker(bridge: HttpBridge) -> None:
    answered_by: list[str] = []
    async with spread_client(bridge, answered_by) as client:
        tools = await client.list_tools()
        assert "memory_set" in {tool.name for tool in tools.tools}
        saved = payload(await client.call_tool("memory_set", {"id": "spread", **NOTE}))
        assert saved["ok"], saved
        for _ in range(24):
            got = payload(await client.call_tool("memory_get", {"id": "spread"}))
            assert got["body"] == NOTE["body"]
    assert set(answered_by) == {"0", "1"}, answered_by


async def test_compare_and_set_holds_across_workers(bridge: HttpBridge) -> None:
    answered_by: list[str] = []
    async with spread_client(bridge, answered_by) as client:
        first = payload(await client.call_tool("memory_set", {"id": "contested", **NOTE}))
        revision = first["revision"]
    outcomes: list[dict[str, Any]] = []

    async def update(n: int) -> None:
        async with spread_client(bridge, answered_by) as client:
            arguments = {"id": "contested", **NOTE, "body": f"writer {n}", "if_version": revision}
            outcomes.append(payload(await client.call_tool("memory_set", arguments)))

    async with anyio.create_task_group() as tasks:
        for n in range(8):
            tasks.start_soon(update, n)
    winners = [o for o in outcomes if o["ok"]]
    assert len(winners) == 1, outcomes
    assert {o.get("error") for o in outcomes if not o["ok"]} == {"conflict"}
    assert set(answered_by) == {"0", "1"}, answered_by
    async with spread_client(bridge, []) as client:
        final = payload(await client.call_tool("memory_get", {"id": "contested"}))
    assert final["revision"] == winners[0]["revision"]
    assert final["body"].startswith("writer ")


def test_health_and_one_process_per_worker(bridge: HttpBridge) -> None:
    seen = set()
    for _ in range(30):
        response = httpx.get(f"{bridge.base_url}/health", headers={"Connection": "close"})
        assert response.json() == {"ok": True}
        seen.add(response.headers["memctl-worker"])
    assert seen == {"0", "1"}


def test_a_single_worker_keeps_sessions_and_names_no_worker(tmp_path: Path) -> None:
    with http_bridge(tmp_path) as running:
        response = httpx.get(f"{running.base_url}/health")
    assert "memctl-worker" not in response.headers


def test_workers_out_of_range_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", "--project", str(tmp_path), "--http", "--workers", "0"])
    assert result.exit_code == 2
    assert "--workers" in result.output


def test_stopping_the_bridge_stops_its_workers(tmp_path: Path) -> None:
    with http_bridge(tmp_path, "--workers", "2") as running:
        pid = running.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        assert len(children) == 2
    assert running.process.returncode == 0
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()]


def test_a_store_that_cannot_open_fails_start_up_before_any_worker(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "memctl", "serve", "--project", str(tmp_path), "--http", "--workers", "2"]
    done = subprocess.run(
        [*argv, "--port", str(free_port()), "--entry-store", "nosuch://x"],
        capture_output=True,
        text=True,
        timeout=60,
        env=bridge_env(),
    )
    assert done.returncode != 0
    assert "entry store scheme 'nosuch' is not supported" in done.stderr
    assert "worker" not in done.stderr


def test_workers_without_http_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", "--project", str(tmp_path), "--workers", "2"])
    assert result.exit_code == 2, result.output
    assert "--workers needs --http: on stdio one process serves its one client" in result.output


def test_a_worker_that_dies_takes_the_bridge_down_for_its_supervisor(tmp_path: Path) -> None:
    with http_bridge(tmp_path, "--workers", "2") as running:
        pid = running.process.pid
        first, second = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        os.kill(int(first), signal.SIGKILL)
        assert running.process.wait(timeout=30) == 128 + signal.SIGKILL
    assert not Path(f"/proc/{second}").exists()
