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

from memory_bridge.stores.dify import onboard

from ..bridges import bridge_env, free_port, stdio_params
from ..emulators.dify.app import create_app

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return dict(json.loads(result.content[0].text))


@pytest.fixture
def served() -> Iterator[tuple[str, Any]]:
    """A fresh emulator served by uvicorn on 127.0.0.1."""
    app = create_app()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}", app
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def dify(served: tuple[str, Any]) -> tuple[str, Any]:
    """The served emulator, onboarded with memctl's slots."""
    origin, app = served
    slots = ("knowledge", "self_improvement")
    report = anyio.run(
        lambda: onboard(origin, email="admin@example.com", password="Passw0rd123", slots=slots)
    )
    return origin, (app, report.api_key)


def test_memctl_dify_onboard_is_idempotent_and_keeps_secrets_in_files(
    served: tuple[str, Any], tmp_path: Path
) -> None:
    origin, app = served
    password = tmp_path / "admin-password"
    password.write_text("Passw0rd123\n")
    password.chmod(0o600)
    key_file = tmp_path / ".memory" / "dify-key"
    command = [
        sys.executable,
        "-m",
        "memctl",
        "dify",
        "onboard",
        "--url",
        origin,
        "--email",
        "admin@example.com",
        "--password-file",
        str(password),
        "--key-file",
        str(key_file),
        "--project",
        str(tmp_path),
        "--json",
    ]
    first = subprocess.run(command, env=bridge_env(), capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["setup"] == "done now" and report["key_created"]
    assert set(report["created_slots"]) == {
        "daily",
        "knowledge",
        "plans",
        "investigations",
        "self_improvement",
    }
    assert key_file.stat().st_mode & 0o777 == 0o600
    key = key_file.read_text().strip()
    assert key.startswith("dataset-") and key not in first.stdout + first.stderr
    again = json.loads(
        subprocess.run(command, env=bridge_env(), capture_output=True, text=True, timeout=60).stdout
    )
    assert (again["setup"], again["key_created"], again["created_slots"]) == ("already done", False, [])
    assert key_file.read_text().strip() == key
    assert len(app.state.dify.api_keys) == 1


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
        again = payload(
            await client.call_tool(
                "save_to_dataset",
                {
                    "dataset": "knowledge",
                    "name": "flags.md",
                    "text": "Feature flags live in LaunchDarkly now.",
                },
            )
        )
        assert (again["documentId"], again["created"]) == (saved["documentId"], False)
        assert again["documentOk"] and again["metadataOk"] and again["indexingStatus"] != "queued"
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
        assert (queued["created"], queued["documentOk"], queued["metadataOk"]) == (None, False, False)
        report = status(tmp_path, bridge_env(**settings))
        assert report["outbox"]["pending"] == 1 and report["ok"] is False

        app.state.dify.outage = None
        deadline = time.monotonic() + 20
        while status(tmp_path, bridge_env(**settings))["outbox"]["pending"] and time.monotonic() < deadline:
            await anyio.sleep(0.5)
        found = payload(await client.call_tool("search_memory", {"query": "saved while down"}))
        assert [r["documentName"] for r in found["records"]] == ["outage.md"]
    assert status(tmp_path, bridge_env(**settings))["ok"] is True
