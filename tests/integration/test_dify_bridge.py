"""The bridge with knowledge on Dify (the emulator on a loopback port), through a real client."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from mcp import Client

from memory_bridge.stores.dify._onboarding import onboard

from ..bridges import bridge_env, free_port, stdio_params
from ..emulators.dify.app import create_app

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return dict(json.loads(result.content[0].text))


@pytest.fixture
def dify() -> Iterator[tuple[str, Any]]:
    """The emulator served by uvicorn on 127.0.0.1, onboarded with memctl's slots."""
    app = create_app()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    origin = f"http://127.0.0.1:{port}"
    report = anyio.run(
        lambda: onboard(
            origin, email="admin@example.com", password="Passw0rd123", slots=("knowledge", "self_improvement")
        )
    )
    yield origin, (app, report.api_key)
    server.should_exit = True
    thread.join(timeout=10)


def status(project: Path, env: dict[str, str]) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-m", "memctl", "status", "--project", str(project), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return dict(json.loads(run.stdout))


async def test_saves_survive_a_dify_outage_and_land_when_it_returns(
    dify: tuple[str, Any], tmp_path: Path
) -> None:
    origin, (app, key) = dify
    settings = {
        "MEMCTL_KNOWLEDGE_STORE": f"dify+{origin}/v1",
        "MEMCTL_DIFY_API_KEY": key,
        "MEMCTL_SWEEP_INTERVAL_SECONDS": "0.5",
        "MEMCTL_EMBEDDING_MODEL": "none",
    }
    async with Client(stdio_params(tmp_path, **settings), mode="legacy") as client:
        saved = payload(
            await client.call_tool(
                "save_to_dataset",
                {
                    "dataset": "knowledge",
                    "name": "flags.md",
                    "text": "Feature flags live in LaunchDarkly.",
                },
            )
        )
        assert not saved["documentId"].startswith("queued:")
        found = payload(await client.call_tool("search_memory", {"query": "feature flags"}))
        assert [r["documentName"] for r in found["records"]] == ["flags.md"]

        app.state.dify.outage = 502
        queued = payload(
            await client.call_tool(
                "save_to_dataset",
                {
                    "dataset": "knowledge",
                    "name": "outage.md",
                    "text": "Saved while Dify was down: retries are safe.",
                },
            )
        )
        assert queued["indexingStatus"] == "queued" and queued["documentId"].startswith("queued:")
        report = status(tmp_path, bridge_env(**settings))
        assert report["outbox"]["pending"] == 1 and report["ok"] is False

        app.state.dify.outage = None
        deadline = time.monotonic() + 20
        while status(tmp_path, bridge_env(**settings))["outbox"]["pending"] and time.monotonic() < deadline:
            await anyio.sleep(0.5)
        found = payload(await client.call_tool("search_memory", {"query": "saved while down"}))
        assert [r["documentName"] for r in found["records"]] == ["outage.md"]
    assert status(tmp_path, bridge_env(**settings))["ok"] is True
