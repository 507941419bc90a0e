"""Machines memctl reaches over SSH: containers of the ssh-target image (Debian bookworm from
the debootstrap base, sshd and python3, no memctl), each with its own file system, reached by
key on a loopback port, as a team's build hosts are. fleet-a may also run a Docker engine of
its own (memctl's docker role installs and starts it there) for its stack project. Skipped,
saying why, without Docker or an ssh client; required in CI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import testinfra

from .. import yamlfiles
from ..bridges import free_port
from ..stack.conftest import (
    BASE_IMAGE,
    VALKEY_IMAGE,
    base_image,
    docker_engine,
    image_build_lock,
    valkey_image,
)

__all__ = ["Fleet", "Target", "base_image", "docker_engine", "valkey_image"]

HERE = Path(__file__).resolve().parent
SSH_IMAGE = "memctl-test-ssh:bookworm"
RUN = f"{os.getpid()}"
SSH_OPTIONS = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
INDEX_CA = Path("/etc/ssl/certs/ca-certificates.crt")
STACK_WORKSPACE = "/srv/src/stack"
# What a machine needs to run its own Docker engine in a container: every capability but
# CAP_SYS_RESOURCE (`--privileged` asks for that too, which a nested engine such as CI's may
# not grant), no seccomp or AppArmor confinement, writable /proc and /sys, the kernel's
# cgroups (Docker mounts them read-only otherwise), and /var/lib/docker on a volume, where
# overlay2 works (not on the container's own overlay file system).
ENGINE_OPTIONS = (
    "--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE",
    "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
    "--security-opt", "systempaths=unconfined",
    "--volume", "/sys/fs/cgroup:/sys/fs/cgroup", "--volume", "/var/lib/docker",
)  # fmt: skip


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False)


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what}; scripts/test installs it in CI")
    print(f"fleet tests skipped: {what}", file=sys.stderr)
    pytest.skip(what)


@pytest.fixture(scope="session")
def ssh_image(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The target image, built once (its layers stay cached for the next run)."""
    if shutil.which("ssh") is None:
        _missing("no ssh client (apt-get install openssh-client)")
    context = tmp_path_factory.mktemp("ssh-target")
    shutil.copy(HERE / "ssh-target" / "Dockerfile", context)
    (context / "index-ca.pem").write_bytes(INDEX_CA.read_bytes() if INDEX_CA.is_file() else b"")
    with image_build_lock():
        result = _run(
            "docker", "build", "--quiet", "--network", "host", "--build-arg", f"BASE_IMAGE={base_image}",
            "-t", SSH_IMAGE, str(context),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return SSH_IMAGE


@dataclass(frozen=True)
class Target:
    """One machine: its inventory name, container and loopback SSH port."""

    name: str
    container: str
    port: int
    key: Path

    def host(self) -> Any:
        """A testinfra host over SSH, as an operator's checks reach it."""
        return testinfra.get_host(
            f"ssh://root@127.0.0.1:{self.port}", ssh_identity_file=str(self.key), ssh_extra_args=SSH_OPTIONS
        )


def _wait_for_ssh(target: Target) -> None:
    command = ["ssh", *SSH_OPTIONS.split(), "-o", "BatchMode=yes", "-i", str(target.key)]
    command += ["-p", str(target.port), "root@127.0.0.1", "true"]
    deadline = time.monotonic() + 30
    while subprocess.run(command, capture_output=True, check=False).returncode != 0:
        assert time.monotonic() < deadline, f"sshd of {target.container} did not answer"
        time.sleep(0.5)


@pytest.fixture(scope="session")
def ssh_key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The control node's key; every target authorises it."""
    key = tmp_path_factory.mktemp("ssh-key") / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    key.with_name("authorized_keys").write_bytes(key.with_suffix(".pub").read_bytes())
    return key


@contextmanager
def started(ssh_image: str, key: Path, *names: str, engines: tuple[str, ...] = ()) -> Iterator[list[Target]]:
    """The named machines, running until the block ends; those in `engines` may run Docker."""
    machines = [Target(f"fleet-{n}", f"memctl-test-fleet-{RUN}-{n}", free_port(), key) for n in names]
    try:
        for name, target in zip(names, machines, strict=True):
            result = _run(
                "docker", "run", "--detach", "--rm", "--name", target.container, "--hostname", target.name,
                "--publish", f"127.0.0.1:{target.port}:22",
                "--volume", f"{key.with_name('authorized_keys')}:/root/.ssh/authorized_keys:ro",
                "--volume", f"{key.with_name('authorized_keys')}:/home/deploy/.ssh/authorized_keys:ro",
                *(ENGINE_OPTIONS if name in engines else ()),
                ssh_image,
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
        for target in machines:
            _wait_for_ssh(target)
        yield machines
    finally:
        # Killed, then removed by the engine in the background (--rm): deleting a machine's
        # file system, memctl's environment and all, takes tens of seconds.
        for target in machines:
            _run("docker", "kill", target.container)


@pytest.fixture(scope="session")
def targets(ssh_image: str, ssh_key: Path) -> Iterator[list[Target]]:
    """Two SSH machines, fleet-a (which may run Docker) and fleet-b, started for the session."""
    with started(ssh_image, ssh_key, "a", "b", engines=("a",)) as machines:
        yield machines


@pytest.fixture(scope="module")
def new_machine(ssh_image: str, ssh_key: Path) -> Iterator[Target]:
    """fleet-c: a machine memctl has never been installed on."""
    with started(ssh_image, ssh_key, "c") as machines:
        yield machines[0]


@pytest.fixture(scope="session")
def stack_images(base_image: str, valkey_image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The images fleet-a's stack needs, in one archive, as an operator without a registry
    ships them: the base the bridge image builds on, and Valkey's."""
    archive = tmp_path_factory.mktemp("images") / "stack-images.tar"
    result = _run("docker", "save", "--output", str(archive), base_image, valkey_image)
    assert result.returncode == 0, result.stderr
    return archive


@dataclass
class Fleet:
    """A control node's memctl state and the inventory of the targets."""

    root: Path
    targets: list[Target]
    images: Path

    @property
    def inventory(self) -> Path:
        return self.root / "hosts.yml"

    def write_inventory(self, path: Path, extra: dict[str, dict[str, Any]] | None = None) -> Path:
        """The targets, one embedded project each (both at /srv/src/alpha, on its own machine),
        and on fleet-a a stack project, plus `extra` machines."""
        hosts: dict[str, Any] = {
            t.name: {
                "ansible_port": t.port,
                "memctl_projects": [
                    {"slug": f"{t.name}-alpha", "workspace": "/srv/src/alpha", "clients": ["claude"]}
                ],
            }
            for t in self.targets
        }
        a = hosts[self.targets[0].name]
        a["memctl_projects"].append(
            {"slug": "fleet-a-stack", "workspace": STACK_WORKSPACE, "mode": "stack", "clients": ["claude"]}
        )
        a.update(self.stack_vars())
        hosts.update(extra or {})
        machine_vars = {
            "ansible_host": "127.0.0.1",
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(self.targets[0].key),
            "ansible_ssh_common_args": SSH_OPTIONS,
        }
        path.write_text(yamlfiles.dump({"all": {"vars": machine_vars, "hosts": hosts}}))
        return path

    def stack_vars(self) -> dict[str, Any]:
        """fleet-a's stack: no Dify (it cannot run here); the images come from the control
        node's archive; the bridge image builds there on the base image, reaching the package
        index through the machine's network and certificates."""
        return {
            "memctl_stack_dify": False,
            "docker_image_archives": [str(self.images)],
            "valkey_image": VALKEY_IMAGE,
            "bridge_base_image": BASE_IMAGE,
            "bridge_build_network": "host",
            "bridge_build_ca_file": str(INDEX_CA),
        }

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "MEMORY_MCP_"))}
        env.update(MEMCTL_STATE_DIR=str(self.root / "state"))
        return env

    def memctl(self, *args: str, timeout: float = 900) -> tuple[int, dict[str, Any], str]:
        """`memctl ARGS --json` on the control node: exit code, JSON report, the output."""
        result = subprocess.run(
            [sys.executable, "-m", "memctl", *args, "--json"],
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        try:
            report = json.loads(result.stdout)
        except ValueError:
            report = {}
        return result.returncode, report, result.stdout + result.stderr

    def up(self, *args: str, inventory: Path | None = None) -> tuple[int, dict[str, Any], str]:
        return self.memctl("up", "--inventory", str(inventory or self.inventory), *args)


@pytest.fixture(scope="session")
def fleet(targets: list[Target], stack_images: Path, tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    fleet = Fleet(tmp_path_factory.mktemp("fleet"), targets, stack_images)
    fleet.write_inventory(fleet.inventory)
    return fleet
