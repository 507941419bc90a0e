"""memctl.stack.docker_container through the Docker SDK, against a real engine and a tiny image."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import docker
import pytest

from ansible_collections.memctl.stack.plugins.modules.docker_container import run

from ..bridges import free_port
from .conftest import FakeModule, ModuleFailed

pytestmark = [pytest.mark.docker]


@pytest.fixture
def names(docker_engine: None) -> Iterator[tuple[str, str, str]]:
    """A container name and two networks, removed afterwards whatever the test left."""
    run_id = time.monotonic_ns()
    name, networks = (
        f"memctl-test-sdk-{run_id}",
        (f"memctl-test-net-a-{run_id}", f"memctl-test-net-b-{run_id}"),
    )
    with closing(docker.from_env()) as client:
        for network in networks:
            client.networks.create(network)
        try:
            yield name, *networks
        finally:
            for container in client.containers.list(all=True, filters={"name": name}):
                container.remove(force=True)
            for network in networks:
                client.networks.get(network).remove()


def params(image: str, name: str, **changes: Any) -> dict[str, Any]:
    return {
        "name": name,
        "state": "started",
        "image": image,
        "command": ["/bin/sleep", "300"],
        "env": {"MEMCTL_LOG_LEVEL": "INFO"},
        "mounts": [],
        "published": [],
        "networks": [],
        "user": None,
        "restart": "unless-stopped",
        "healthcheck": None,
        "labels": {},
        "wait": 0,
    } | changes


def test_a_container_runs_as_specified_and_is_recreated_only_when_its_spec_changes(
    tiny_image: str, names: tuple[str, str, str], tmp_path: Path
) -> None:
    name, first, second = names
    port = free_port()
    spec = params(
        tiny_image,
        name,
        mounts=[f"{tmp_path}:/data:ro"],
        published=[f"127.0.0.1:{port}:3106"],
        networks=[first, second],
        user="1000:1000",
        healthcheck="true",
        labels={"io.memctl.dify-version": "1.16.0"},
        wait=60,
    )
    planned = run(FakeModule(check_mode=True, **spec))
    assert planned["action"] == "created" and planned["container_id"] == ""
    created = run(FakeModule(**spec))
    assert created["action"] == "created" and created["changed"] is True
    with closing(docker.from_env()) as client:
        record = client.containers.get(name).attrs
    host, config = record["HostConfig"], record["Config"]
    assert record["Id"] == created["container_id"] and record["State"]["Health"]["Status"] == "healthy"
    assert host["Binds"] == [f"{tmp_path}:/data:ro"]
    assert host["PortBindings"] == {"3106/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(port)}]}
    assert host["RestartPolicy"]["Name"] == "unless-stopped"
    assert config["User"] == "1000:1000" and "MEMCTL_LOG_LEVEL=INFO" in config["Env"]
    assert config["Cmd"] == ["/bin/sleep", "300"]
    assert config["Healthcheck"] == {"Test": ["CMD-SHELL", "true"], "Interval": 5e9, "StartPeriod": 30e9}
    assert config["Labels"]["io.memctl.dify-version"] == "1.16.0"
    assert set(record["NetworkSettings"]["Networks"]) == {first, second}

    again = run(FakeModule(**spec))
    assert again == {
        "changed": False,
        "name": name,
        "action": "none",
        "container_id": created["container_id"],
    }
    changed = run(FakeModule(**{**spec, "env": {"MEMCTL_LOG_LEVEL": "DEBUG"}}))
    assert changed["action"] == "recreated" and changed["container_id"] != created["container_id"]
    assert changed["diff"]["before"]["env"] == {"MEMCTL_LOG_LEVEL": "INFO"}

    removed = run(FakeModule(name=name, state="absent"))
    assert removed["action"] == "removed" and removed["changed"] is True
    assert run(FakeModule(name=name, state="absent"))["changed"] is False


def test_a_container_that_exits_fails_with_its_output(tiny_image: str, names: tuple[str, str, str]) -> None:
    name, _, _ = names
    command = ["/bin/sh", "-c", "echo cannot start >&2; exit 3"]
    spec = params(tiny_image, name, command=command, restart="no", wait=30)
    with pytest.raises(ModuleFailed, match=f"container {name} exited:\ncannot start"):
        run(FakeModule(**spec))


def test_a_container_that_crashes_a_moment_after_starting_fails_with_its_output(
    tiny_image: str, names: tuple[str, str, str]
) -> None:
    name, _, _ = names
    command = ["/bin/sh", "-c", "sleep 1; echo lost the database >&2; exit 1"]
    spec = params(tiny_image, name, command=command, restart="no", wait=30)
    with pytest.raises(ModuleFailed, match=f"container {name} exited:\nlost the database"):
        run(FakeModule(**spec))


def test_a_container_that_keeps_restarting_is_not_ready_and_says_why(
    tiny_image: str, names: tuple[str, str, str]
) -> None:
    name, _, _ = names
    command = ["/bin/sh", "-c", "echo bad config >&2; exit 2"]
    spec = params(tiny_image, name, command=command, restart="unless-stopped", wait=4)
    with pytest.raises(
        ModuleFailed, match=rf"(?s)container {name} is not ready after 4 s \(status: .*bad config"
    ):
        run(FakeModule(**spec))


def test_a_container_whose_health_check_fails_is_not_ready_and_shows_what_the_check_printed(
    tiny_image: str, names: tuple[str, str, str]
) -> None:
    name, _, _ = names
    spec = params(tiny_image, name, healthcheck="echo store did not answer; exit 1", wait=7)
    with pytest.raises(
        ModuleFailed,
        match=rf"(?s)container {name} is not ready after 7 s .*health: starting.*"
        r"last health checks:\n  \d{4}-\d\d-\d\dT[\d:]{8}: exit 1: store did not answer",
    ):
        run(FakeModule(**spec))


def test_a_missing_image_is_named(names: tuple[str, str, str]) -> None:
    with pytest.raises(ModuleFailed, match="image memctl-test-none:x is not on this machine"):
        run(FakeModule(**params("memctl-test-none:x", names[0])))
