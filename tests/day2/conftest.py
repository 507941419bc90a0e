"""Fixtures for the day-2 commands: projects on real stores, and the CLI run in-process."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from click.testing import CliRunner

from memctl.cli import cli
from memory_bridge.stores.dify import onboard

from ..bridges import free_port
from ..emulators.dify.app import create_app
from ..servers import RunningServer, run_server, valkey_server_binary


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict[str, Any]:
        return dict(json.loads(self.stdout))


def memctl(*args: str, input: str | None = None) -> Run:
    """Run one memctl command in-process, as a user would type it."""
    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    return Run(result.exit_code, result.stdout, result.stderr)


def configure(project: Path, **settings: str | int) -> Path:
    """Write the project's .memory/config.toml with these settings."""
    memory = project / ".memory"
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "config.toml").write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items()))
    return project


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No MEMCTL_* or seed variables from the calling shell reach the commands."""
    import os

    for name in list(os.environ):
        if name.startswith(("MEMCTL_", "MEMORY_MCP_", "DIFY_")):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def valkey_server() -> Iterator[RunningServer]:
    with run_server(valkey_server_binary()) as server:
        yield server


@pytest.fixture
def valkey_url(valkey_server: RunningServer) -> Iterator[str]:
    """A Valkey database emptied before and after the test."""
    valkey_server.client().flushall()
    yield valkey_server.url
    valkey_server.client().flushall()


@dataclass
class Dify:
    origin: str
    key_file: Path
    app: Any

    @property
    def url(self) -> str:
        return "dify+" + self.origin + "/v1"


@pytest.fixture
def dify(tmp_path: Path) -> Iterator[Dify]:
    """The Dify emulator on a loopback port, onboarded; its API key in a 0600 file."""
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
        lambda: onboard(origin, email="admin@example.com", password="Passw0rd123", slots=("knowledge",))
    )
    key_file = tmp_path / "dify-key"
    key_file.write_text(report.api_key + "\n")
    key_file.chmod(0o600)
    yield Dify(origin, key_file, app)
    server.should_exit = True
    thread.join(timeout=10)
