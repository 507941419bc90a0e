"""A stack's lifecycle on a real Docker engine: `up` makes the projects known to every command
run in their workspaces, `down` stops what `up` started, and the shared services go with the
last project.

Two projects get a stack of their own (its own network, Valkey and volume; the `stack`
fixture's images), in workspaces whose names are not their slugs.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import valkey

from .. import yamlfiles
from ..bridges import free_port
from .conftest import BRIDGE_IMAGE, RUN, Stack

pytestmark = [pytest.mark.docker]

NETWORK = f"memctl-test-life-{RUN}"
VALKEY = f"memctl-test-life-valkey-{RUN}"
VOLUME = f"memctl-test-life-data-{RUN}"
ALPHA, BETA = f"life-a-{RUN}", f"life-b-{RUN}"
BRIDGES = {slug: f"memctl-bridge-{slug}" for slug in (ALPHA, BETA)}
FILE_CHANGES = ("created", "updated", "removed")


@dataclass
class Run:
    returncode: int
    payload: dict[str, Any]
    output: str


@dataclass
class Engine:
    """What the engine shows of this stack at one moment."""

    containers: set[str]
    network: bool
    volume: bool
    listening: set[int]

    @classmethod
    def now(cls, ports: list[int]) -> Engine:
        names = subprocess.run(
            ["docker", "ps", "--all", "--format", "{{.Names}}"], capture_output=True, text=True, check=True
        ).stdout.split()
        return cls(
            containers={name for name in names if name in (VALKEY, *BRIDGES.values())},
            network=_exists("network", NETWORK),
            volume=_exists("volume", VOLUME),
            listening={port for port in ports if _listening(port)},
        )


@dataclass
class Life:
    root: Path
    workspaces: dict[str, Path]
    ports: dict[str, int]
    valkey_port: int
    runs: dict[str, Run] = field(default_factory=dict)
    engine: dict[str, Engine] = field(default_factory=dict)
    keys: dict[str, int] = field(default_factory=dict)
    memory: dict[str, bool] = field(default_factory=dict)

    def memctl(self, *args: str) -> Run:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "MEMORY_MCP_", "XDG_"))}
        env.update(
            MEMCTL_STATE_DIR=str(self.root / "state"),
            MEMCTL_INVENTORY=str(self.root / "registry.yml"),
            XDG_CONFIG_HOME=str(self.root / "config"),
        )
        result = subprocess.run(
            [sys.executable, "-m", "memctl", *args], cwd=self.root, env=env, capture_output=True, text=True
        )
        try:
            payload = json.loads(result.stdout)
        except ValueError:
            payload = {}
        return Run(result.returncode, payload, result.stdout + result.stderr)

    def snapshot(self, name: str) -> None:
        self.engine[name] = Engine.now([*self.ports.values(), self.valkey_port])
        self.memory[name] = (self.workspaces[ALPHA] / ".memory" / "bridge.token").exists()
        if name != "last down":
            store = valkey.Valkey(host="127.0.0.1", port=self.valkey_port)
            for slug in (ALPHA, BETA):
                self.keys[f"{name} {slug}"] = len(store.keys(f"{slug}:*"))


def _exists(kind: str, name: str) -> bool:
    return subprocess.run(["docker", kind, "inspect", name], capture_output=True).returncode == 0


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _remove() -> None:
    for name in (*BRIDGES.values(), VALKEY):
        subprocess.run(["docker", "rm", "--force", name], capture_output=True)
    subprocess.run(["docker", "network", "rm", NETWORK], capture_output=True)
    subprocess.run(["docker", "volume", "rm", VOLUME], capture_output=True)


def _inventory(life: Life, valkey_image: str, base_image: str, *slugs: str) -> dict[str, Any]:
    machine = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "memctl_stack_dify": False,
        "docker_network": NETWORK,
        "valkey_network": NETWORK,
        "bridge_network": NETWORK,
        "valkey_image": valkey_image,
        "valkey_container_name": VALKEY,
        "valkey_volume": VOLUME,
        "valkey_port": life.valkey_port,
        "bridge_valkey_host": VALKEY,
        "bridge_image": BRIDGE_IMAGE,
        "bridge_base_image": base_image,
        "bridge_build_network": "host",
        "bridge_build_ca_file": "/etc/ssl/certs/ca-certificates.crt",
    }
    projects = [
        {
            "slug": slug,
            "workspace": str(life.workspaces[slug]),
            "mode": "stack",
            "clients": ["claude"],
            "bridge_port": life.ports[slug],
        }
        for slug in slugs
    ]
    return {"all": {"vars": machine, "hosts": {"localhost": {"memctl_projects": projects}}}}


@pytest.fixture(scope="module")
def life(
    stack: Stack, valkey_image: str, base_image: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Life]:
    """`up` of both projects; status, logs, doctor and `down --check` in alpha's workspace;
    `down --stack --check` and `down` of alpha (an inventory of alpha alone); `down --purge`
    of both."""
    assert stack.runs["first"].returncode == 0, "the stack fixture built the images"
    _remove()
    root = tmp_path_factory.mktemp("life")
    life = Life(
        root=root,
        workspaces={ALPHA: root / "work" / "alpha-ws", BETA: root / "work" / "beta-ws"},
        ports={ALPHA: free_port(), BETA: free_port()},
        valkey_port=free_port(),
    )
    for workspace in life.workspaces.values():
        workspace.mkdir(parents=True)
    inventory, alpha_alone = root / "inventory.yml", root / "alpha.yml"
    inventory.write_text(yamlfiles.dump(_inventory(life, valkey_image, base_image, ALPHA, BETA)))
    alpha_alone.write_text(yamlfiles.dump(_inventory(life, valkey_image, base_image, ALPHA)))
    try:
        life.runs["up"] = life.memctl("up", "--inventory", str(inventory), "--json")
        if life.runs["up"].returncode == 0:
            alpha = str(life.workspaces[ALPHA])
            life.snapshot("up")
            for command in ("status", "logs", "doctor"):
                life.runs[command] = life.memctl(command, "--project", alpha, "--json")
            life.runs["check down"] = life.memctl("down", "--project", alpha, "--check", "--json")
            life.runs["check stack down"] = life.memctl(
                "down", "--inventory", str(alpha_alone), "--stack", "--check", "--json"
            )
            life.runs["down"] = life.memctl("down", "--inventory", str(alpha_alone), "--json")
            life.snapshot("down")
            life.runs["last down"] = life.memctl(
                "down", "--inventory", str(inventory), "--purge", "--yes", "--json"
            )
            life.snapshot("last down")
        yield life
    finally:
        _remove()


def _ok(run: Run) -> dict[str, Any]:
    assert run.returncode == 0, run.output[-4000:]
    return run.payload


def test_commands_in_a_workspace_know_the_stack_project_up_provisioned(life: Life) -> None:
    _ok(life.runs["up"])
    status = _ok(life.runs["status"])
    assert (status["slug"], status["mode"]) == (ALPHA, "stack")
    assert status["bridge"]["container"] == BRIDGES[ALPHA] and status["bridge"]["health"] == "healthy"
    sources = {source["source"]: source for source in _ok(life.runs["logs"])["sources"]}
    assert sources["bridge"]["name"] == BRIDGES[ALPHA] and sources["bridge"]["lines"]
    assert Path(sources["runs"]["path"]).name.endswith("-site.log")
    checks = {check["name"]: check for check in life.runs["doctor"].payload["checks"]}
    assert checks["bridge container"]["status"] == "ok" and checks["docker"]["status"] == "ok"


def test_down_of_one_project_removes_its_container_and_keeps_the_shared_stack(life: Life) -> None:
    up, down = life.engine["up"], life.engine["down"]
    assert up == Engine({VALKEY, *BRIDGES.values()}, True, True, {*life.ports.values(), life.valkey_port})
    # One directory: its .memory/project.json says stack, so its container would go.
    check = _ok(life.runs["check down"])
    assert (BRIDGES[ALPHA], "removed") in [(c["container"], c["action"]) for c in check["containers"]]
    report = _ok(life.runs["down"])
    assert [(c["container"], c["action"]) for c in report["containers"]] == [(BRIDGES[ALPHA], "removed")]
    # Beta still uses Valkey, the network and the volume; alpha's memory is kept (no --purge).
    assert down == Engine({VALKEY, BRIDGES[BETA]}, True, True, {life.ports[BETA], life.valkey_port}), report
    assert life.keys[f"down {ALPHA}"] == life.keys[f"up {ALPHA}"] > 0
    assert life.memory["down"], "alpha's .memory/ is kept, its token with it"


def test_down_stack_would_stop_the_shared_stack_and_every_bridge_on_it(life: Life) -> None:
    report = _ok(life.runs["check stack down"])
    removed = {(c["container"], c["action"]) for c in report["containers"]}
    assert removed == {(name, "removed") for name in (*BRIDGES.values(), VALKEY)}
    assert life.engine["down"].containers == {VALKEY, BRIDGES[BETA]}, "check mode changed nothing"


def test_down_counts_every_file_it_changed(life: Life) -> None:
    report = _ok(life.runs["down"])
    files = [f for project in report["projects"] for f in project["files"] if f["action"] in FILE_CHANGES]
    assert len(files) > 1
    assert report["changed"] == len(files) + len(report["containers"]), report
    assert report["projects"][0]["changed"] == report["changed"]


def test_down_of_the_last_project_with_purge_leaves_nothing_memctl_created(life: Life) -> None:
    report = _ok(life.runs["last down"])
    removed = {(c["container"], c["action"]) for c in report["containers"]}
    assert removed == {(BRIDGES[BETA], "removed"), (VALKEY, "removed")}
    last = life.engine["last down"]
    assert last == Engine(containers=set(), network=False, volume=False, listening=set())
    for workspace in life.workspaces.values():
        assert not (workspace / ".memory").exists()
