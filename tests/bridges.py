"""Starting real bridge processes for end-to-end tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from mcp import StdioServerParameters

MODEL_CACHE = Path(tempfile.gettempdir()) / "memctl-test-model-cache"  # the int8 model, built once

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
"""The headers a streamable-HTTP client sends with a JSON-RPC POST."""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
"""A raw `initialize` request, for tests of the HTTP layer (auth, headers)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bridge_env(**extra: str) -> dict[str, str]:
    """The environment for a bridge process: ours, minus any MEMCTL_* leaking in, with
    the tests' model cache (not the user's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "MEMORY_MCP_"))}
    env["MEMCTL_MODEL_CACHE_DIR"] = str(MODEL_CACHE)
    env.update(extra)
    return env


def stdio_params(project: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memctl", "serve", "--project", str(project)],
        env=bridge_env(**env),
        cwd=str(project),
    )


@dataclass
class HttpBridge:
    process: subprocess.Popen[bytes]
    base_url: str
    project: Path

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"


@contextmanager
def serving(
    argv: list[str], env: dict[str, str], base_url: str, *, cwd: Path | None = None, timeout: float = 30
) -> Iterator[subprocess.Popen[bytes]]:
    """Run a bridge process until the block ends, once its /health answers 200."""
    process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                assert process.stderr is not None
                raise RuntimeError(f"bridge exited: {process.stderr.read().decode()}")
            try:
                if httpx.get(f"{base_url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"bridge did not become healthy within {timeout:.0f} s")
            time.sleep(0.1)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


@contextmanager
def http_bridge(project: Path, *args: str, **env: str) -> Iterator[HttpBridge]:
    """Run `memctl serve --http` on a free loopback port until the block ends."""
    port = free_port()
    argv = [sys.executable, "-m", "memctl", "serve", "--project", str(project), "--http", "--port", str(port)]
    base_url = f"http://127.0.0.1:{port}"
    with serving([*argv, *args], bridge_env(**env), base_url) as process:
        yield HttpBridge(process, base_url, project)
